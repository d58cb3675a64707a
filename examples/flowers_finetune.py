"""Fine-tuning a pretrained MobileNetV2 on flower photos stored as TFRecord shards: two epochs
on the frozen backbone, then its last blocks train too, at a tenth of the rate.

The classic transfer-learning recipe of the Keras guide: the backbone's BatchNormalization
layers stay in inference mode throughout. The JPEG images are decoded only when a batch picks
them. Write the shards with tf.io.TFRecordWriter (an `image` bytes feature and an int64
`label`), e.g. from TFDS's tf_flowers.
"""

from loopgen.dsl import (
    Adam,
    Backbone,
    Checkpoint,
    Data,
    Dense,
    Dropout,
    Export,
    Feature,
    FineTune,
    Graph,
    Input,
    Loop,
    Node,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    TFRecord,
)

IMAGES = {"image": Feature(dtype="string", image=(160, 160)), "label": Feature(dtype="int64")}

spec = Spec(
    name="flowers_finetune",
    description="Classify flower photos by fine-tuning an ImageNet MobileNetV2.",
    seed=9,
    data=Data(
        train=TFRecord(files="data/flowers/train-*.tfrecord", features=IMAGES),
        validation=TFRecord(files="data/flowers/validation-*.tfrecord", features=IMAGES),
        batch_size=32,
        shuffle_buffer=1000,
    ),
    model=Graph(
        inputs={"image": Input(shape=(160, 160, 3))},
        nodes=[
            Node(
                name="features",
                layer=Backbone(application="MobileNetV2", weights="imagenet"),
                inputs="image",
            ),
            Node(name="dropout", layer=Dropout(0.2), inputs="features"),
            Node(name="logits", layer=Dense(5), inputs="dropout"),
        ],
        outputs="logits",
    ),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=6, log_every_steps=20),
    checkpoint=Checkpoint(every_epochs=1),
    export=Export(saved_model=True),
    fine_tune=FineTune(
        backbone="features", at_epoch=3, from_layer="block_13_expand", learning_rate=1e-4
    ),
)

"""Sentiment of short reviews with a pretrained BERT from KerasHub, fine-tuned by LoRA: the
backbone's weights stay as pretrained and rank-4 adapters on its attention train, with the
classifier's head. The preset's preprocessor tokenizes the raw strings in the input pipeline.

Exported, the model takes strings and the adapters are merged into the kernels. Needs the
`lm` extra (keras-hub, tensorflow-text); the preset downloads once into KerasHub's cache, or
set model.preset to a local preset directory.
"""

from loopgen.dsl import (
    Adam,
    Checkpoint,
    Data,
    Export,
    KerasHub,
    Loop,
    SparseCategoricalAccuracy,
    SparseCategoricalCrossentropy,
    Spec,
    Split,
    Text,
)

spec = Spec(
    name="reviews_bert_lora",
    description="Classify reviews as positive or negative with BERT fine-tuned by LoRA.",
    seed=4,
    data=Data(
        train=Text(path="data/reviews.tsv", delimiter="\t", text_column=0, label_column=1),
        validation=Split(fraction=0.1),
        batch_size=16,
    ),
    model=KerasHub(preset="bert_tiny_en_uncased", num_classes=2, sequence_length=64, lora_rank=4),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    # LoRA takes a higher rate than full fine-tuning (KerasHub's Gemma guide: 5e-5 full, 5e-4
    # LoRA at its sizes).
    optimizer=Adam(learning_rate=1e-3),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=3, log_every_steps=20),
    checkpoint=Checkpoint(every_epochs=1),
    export=Export(saved_model=True),
)

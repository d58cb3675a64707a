# Mistake: early stopping given to the Loop, not to the Spec
from loopgen.dsl import *

spec = Spec(
    name="bad",
    data=Data(train=Npz(path="train.npz"), validation=Split(fraction=0.2), batch_size=32),
    model=Sequential(input_shape=(8,), layers=[Dense(units=16, activation="relu"), Dense(2)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(),
    loop=Loop(epochs=20, early_stopping=EarlyStopping(monitor="val_loss", patience=3)),
)

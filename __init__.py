"""loopgen: a validated training spec in, a standalone TensorFlow training script out."""

__version__ = "0.1.0"

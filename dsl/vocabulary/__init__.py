"""The Keras vocabulary as Python names for spec files: `from loopgen.dsl import Conv1D` (or
`metrics.MeanSquaredError` where a loss has the same name). Generated from the catalog."""

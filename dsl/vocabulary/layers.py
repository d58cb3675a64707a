"""Every layer of `keras.layers` as a spec layer: one function per class, with Keras' signature (Keras 3.15.1).

Generated from dsl/catalog/keras.json by `python -m loopgen.dsl.catalog.api`; do not edit."""

# ruff: noqa: E501
from __future__ import annotations

from typing import Any

from ..layers import KerasLayer
from ._build import REQUIRED, build

__all__ = [
    "ELU",
    "GRU",
    "LSTM",
    "RNN",
    "Activation",
    "ActivityRegularization",
    "AdaptiveAveragePooling1D",
    "AdaptiveAveragePooling2D",
    "AdaptiveAveragePooling3D",
    "AdaptiveMaxPooling1D",
    "AdaptiveMaxPooling2D",
    "AdaptiveMaxPooling3D",
    "Add",
    "AdditiveAttention",
    "AlphaDropout",
    "Attention",
    "AugMix",
    "AutoContrast",
    "Average",
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "AvgPool1D",
    "AvgPool2D",
    "AvgPool3D",
    "BatchNormalization",
    "Bidirectional",
    "CategoryEncoding",
    "CenterCrop",
    "Concatenate",
    "ContrastLimitedAdaptiveHistogramEqualization",
    "Conv1D",
    "Conv1DTranspose",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "ConvLSTM1D",
    "ConvLSTM2D",
    "ConvLSTM3D",
    "Convolution1D",
    "Convolution1DTranspose",
    "Convolution2D",
    "Convolution2DTranspose",
    "Convolution3D",
    "Convolution3DTranspose",
    "Cropping1D",
    "Cropping2D",
    "Cropping3D",
    "CutMix",
    "Dense",
    "DepthwiseConv1D",
    "DepthwiseConv2D",
    "Discretization",
    "Dot",
    "Dropout",
    "EinsumDense",
    "Embedding",
    "Equalization",
    "Flatten",
    "GRUCell",
    "GaussianDropout",
    "GaussianNoise",
    "GlobalAveragePooling1D",
    "GlobalAveragePooling2D",
    "GlobalAveragePooling3D",
    "GlobalAvgPool1D",
    "GlobalAvgPool2D",
    "GlobalAvgPool3D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "GlobalMaxPool3D",
    "GlobalMaxPooling1D",
    "GlobalMaxPooling2D",
    "GlobalMaxPooling3D",
    "GroupNormalization",
    "GroupQueryAttention",
    "HashedCrossing",
    "Hashing",
    "Identity",
    "IntegerLookup",
    "LSTMCell",
    "LayerNormalization",
    "LeakyReLU",
    "Masking",
    "MaxPool1D",
    "MaxPool2D",
    "MaxPool3D",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "Maximum",
    "MelSpectrogram",
    "Minimum",
    "MixUp",
    "MultiHeadAttention",
    "Multiply",
    "Normalization",
    "PReLU",
    "Permute",
    "RMSNormalization",
    "RandAugment",
    "RandomBrightness",
    "RandomColorDegeneration",
    "RandomColorJitter",
    "RandomContrast",
    "RandomCrop",
    "RandomElasticTransform",
    "RandomErasing",
    "RandomFlip",
    "RandomGaussianBlur",
    "RandomGrayscale",
    "RandomHue",
    "RandomInvert",
    "RandomPerspective",
    "RandomPosterization",
    "RandomRotation",
    "RandomSaturation",
    "RandomSharpness",
    "RandomShear",
    "RandomTranslation",
    "RandomZoom",
    "ReLU",
    "RepeatVector",
    "Rescaling",
    "Reshape",
    "Resizing",
    "ReversibleEmbedding",
    "SeparableConv1D",
    "SeparableConv2D",
    "SeparableConvolution1D",
    "SeparableConvolution2D",
    "SimpleRNN",
    "SimpleRNNCell",
    "Softmax",
    "Solarization",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "SpectralNormalization",
    "StringLookup",
    "Subtract",
    "TextVectorization",
    "TimeDistributed",
    "UnitNormalization",
    "UpSampling1D",
    "UpSampling2D",
    "UpSampling3D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
]


def Activation(activation=REQUIRED, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Activation`: Applies an activation function to an output."""
    return build(KerasLayer, "activation", locals())


def ActivityRegularization(l1=0.0, l2=0.0, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.ActivityRegularization`: Layer that applies an update to the cost function based input activity."""
    return build(KerasLayer, "activity_regularization", locals())


def AdaptiveAveragePooling1D(
    output_size=REQUIRED, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AdaptiveAveragePooling1D`: Adaptive average pooling operation for 1D temporal or spatial data."""
    return build(KerasLayer, "adaptive_average_pooling1d", locals())


def AdaptiveAveragePooling2D(
    output_size=REQUIRED, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AdaptiveAveragePooling2D`: Adaptive average pooling operation for 2D spatial data."""
    return build(KerasLayer, "adaptive_average_pooling2d", locals())


def AdaptiveAveragePooling3D(
    output_size=REQUIRED, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AdaptiveAveragePooling3D`: Adaptive average pooling operation for 3D volumetric data."""
    return build(KerasLayer, "adaptive_average_pooling3d", locals())


def AdaptiveMaxPooling1D(
    output_size=REQUIRED, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AdaptiveMaxPooling1D`: Adaptive max pooling operation for 1D temporal or spatial data."""
    return build(KerasLayer, "adaptive_max_pooling1d", locals())


def AdaptiveMaxPooling2D(
    output_size=REQUIRED, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AdaptiveMaxPooling2D`: Adaptive max pooling operation for 2D spatial data."""
    return build(KerasLayer, "adaptive_max_pooling2d", locals())


def AdaptiveMaxPooling3D(
    output_size=REQUIRED, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AdaptiveMaxPooling3D`: Adaptive max pooling operation for 3D volumetric data."""
    return build(KerasLayer, "adaptive_max_pooling3d", locals())


def Add(name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Add`: Performs elementwise addition operation."""
    return build(KerasLayer, "add", locals())


def AdditiveAttention(use_scale=True, dropout=0.0, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.AdditiveAttention`: Additive attention layer, a.k.a. Bahdanau-style attention."""
    return build(KerasLayer, "additive_attention", locals())


def AlphaDropout(
    rate=REQUIRED, noise_shape=None, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AlphaDropout`: Applies Alpha Dropout to the input."""
    return build(KerasLayer, "alpha_dropout", locals())


def Attention(
    use_scale=False, score_mode="dot", dropout=0.0, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.Attention`: Dot-product attention layer, a.k.a. Luong-style attention."""
    return build(KerasLayer, "attention", locals())


def AugMix(
    value_range=(0, 255),
    num_chains=3,
    chain_depth=3,
    factor=0.3,
    alpha=1.0,
    all_ops=True,
    interpolation="bilinear",
    seed=None,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.AugMix`: Performs the AugMix data augmentation technique."""
    return build(KerasLayer, "aug_mix", locals())


def AutoContrast(value_range=(0, 255), name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.AutoContrast`: Performs the auto-contrast operation on an image."""
    return build(KerasLayer, "auto_contrast", locals())


def Average(name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Average`: Averages a list of inputs element-wise.."""
    return build(KerasLayer, "average", locals())


def AveragePooling1D(
    pool_size=REQUIRED, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AveragePooling1D`: Average pooling for temporal data."""
    return build(KerasLayer, "average_pooling1d", locals())


def AveragePooling2D(
    pool_size=REQUIRED, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AveragePooling2D`: Average pooling operation for 2D spatial data."""
    return build(KerasLayer, "average_pooling2d", locals())


def AveragePooling3D(
    pool_size=REQUIRED, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AveragePooling3D`: Average pooling operation for 3D data (spatial or spatio-temporal)."""
    return build(KerasLayer, "average_pooling3d", locals())


def AvgPool1D(
    pool_size=REQUIRED, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AvgPool1D`: Average pooling for temporal data."""
    return build(KerasLayer, "average_pooling1d", locals())


def AvgPool2D(
    pool_size=REQUIRED, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AvgPool2D`: Average pooling operation for 2D spatial data."""
    return build(KerasLayer, "average_pooling2d", locals())


def AvgPool3D(
    pool_size=REQUIRED, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.AvgPool3D`: Average pooling operation for 3D data (spatial or spatio-temporal)."""
    return build(KerasLayer, "average_pooling3d", locals())


def BatchNormalization(
    axis=-1,
    momentum=0.99,
    epsilon=0.001,
    center=True,
    scale=True,
    beta_initializer="zeros",
    gamma_initializer="ones",
    moving_mean_initializer="zeros",
    moving_variance_initializer="ones",
    beta_regularizer=None,
    gamma_regularizer=None,
    beta_constraint=None,
    gamma_constraint=None,
    renorm=False,
    renorm_clipping=None,
    renorm_momentum=0.99,
    synchronized=False,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.BatchNormalization`: Layer that normalizes its inputs."""
    return build(KerasLayer, "batch_normalization", locals())


def Bidirectional(
    layer=REQUIRED, merge_mode="concat", weights=None, backward_layer=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.Bidirectional`: Bidirectional wrapper for RNNs."""
    return build(KerasLayer, "bidirectional", locals())


def CategoryEncoding(
    num_tokens=None, output_mode="multi_hot", sparse=False, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.CategoryEncoding`: A preprocessing layer which encodes integer features."""
    return build(KerasLayer, "category_encoding", locals())


def CenterCrop(
    height=REQUIRED, width=REQUIRED, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.CenterCrop`: A preprocessing layer which crops images."""
    return build(KerasLayer, "center_crop", locals())


def Concatenate(axis=-1, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Concatenate`: Concatenates a list of inputs."""
    return build(KerasLayer, "concatenate", locals())


def ContrastLimitedAdaptiveHistogramEqualization(
    value_range=(0, 255),
    clip_limit=4.0,
    tile_grid_size=(8, 8),
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.ContrastLimitedAdaptiveHistogramEqualization`: Contrast Limited Adaptive Histogram Equalization (CLAHE) layer."""
    return build(KerasLayer, "contrast_limited_adaptive_histogram_equalization", locals())


def Conv1D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    data_format=None,
    dilation_rate=1,
    groups=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Conv1D`: 1D convolution layer (e.g. temporal convolution)."""
    return build(KerasLayer, "conv1d", locals())


def Conv1DTranspose(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    output_padding=None,
    data_format=None,
    dilation_rate=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Conv1DTranspose`: 1D transposed convolution layer."""
    return build(KerasLayer, "conv1d_transpose", locals())


def Conv2D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1),
    padding="valid",
    data_format=None,
    dilation_rate=(1, 1),
    groups=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Conv2D`: 2D convolution layer."""
    return build(KerasLayer, "conv2d", locals())


def Conv2DTranspose(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1),
    padding="valid",
    output_padding=None,
    data_format=None,
    dilation_rate=(1, 1),
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Conv2DTranspose`: 2D transposed convolution layer."""
    return build(KerasLayer, "conv2d_transpose", locals())


def Conv3D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1, 1),
    padding="valid",
    data_format=None,
    dilation_rate=(1, 1, 1),
    groups=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Conv3D`: 3D convolution layer."""
    return build(KerasLayer, "conv3d", locals())


def Conv3DTranspose(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1, 1),
    padding="valid",
    data_format=None,
    output_padding=None,
    dilation_rate=(1, 1, 1),
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Conv3DTranspose`: 3D transposed convolution layer."""
    return build(KerasLayer, "conv3d_transpose", locals())


def ConvLSTM1D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    data_format=None,
    dilation_rate=1,
    activation="tanh",
    recurrent_activation="sigmoid",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    unit_forget_bias=True,
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    seed=None,
    return_sequences=False,
    return_state=False,
    go_backwards=False,
    stateful=False,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.ConvLSTM1D`: 1D Convolutional LSTM."""
    return build(KerasLayer, "conv_lstm1d", locals())


def ConvLSTM2D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    data_format=None,
    dilation_rate=1,
    activation="tanh",
    recurrent_activation="sigmoid",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    unit_forget_bias=True,
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    seed=None,
    return_sequences=False,
    return_state=False,
    go_backwards=False,
    stateful=False,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.ConvLSTM2D`: 2D Convolutional LSTM."""
    return build(KerasLayer, "conv_lstm2d", locals())


def ConvLSTM3D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    data_format=None,
    dilation_rate=1,
    activation="tanh",
    recurrent_activation="sigmoid",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    unit_forget_bias=True,
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    seed=None,
    return_sequences=False,
    return_state=False,
    go_backwards=False,
    stateful=False,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.ConvLSTM3D`: 3D Convolutional LSTM."""
    return build(KerasLayer, "conv_lstm3d", locals())


def Convolution1D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    data_format=None,
    dilation_rate=1,
    groups=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Convolution1D`: 1D convolution layer (e.g. temporal convolution)."""
    return build(KerasLayer, "conv1d", locals())


def Convolution1DTranspose(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    output_padding=None,
    data_format=None,
    dilation_rate=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Convolution1DTranspose`: 1D transposed convolution layer."""
    return build(KerasLayer, "conv1d_transpose", locals())


def Convolution2D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1),
    padding="valid",
    data_format=None,
    dilation_rate=(1, 1),
    groups=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Convolution2D`: 2D convolution layer."""
    return build(KerasLayer, "conv2d", locals())


def Convolution2DTranspose(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1),
    padding="valid",
    output_padding=None,
    data_format=None,
    dilation_rate=(1, 1),
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Convolution2DTranspose`: 2D transposed convolution layer."""
    return build(KerasLayer, "conv2d_transpose", locals())


def Convolution3D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1, 1),
    padding="valid",
    data_format=None,
    dilation_rate=(1, 1, 1),
    groups=1,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Convolution3D`: 3D convolution layer."""
    return build(KerasLayer, "conv3d", locals())


def Convolution3DTranspose(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1, 1),
    padding="valid",
    data_format=None,
    output_padding=None,
    dilation_rate=(1, 1, 1),
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Convolution3DTranspose`: 3D transposed convolution layer."""
    return build(KerasLayer, "conv3d_transpose", locals())


def Cropping1D(cropping=(1, 1), name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Cropping1D`: Cropping layer for 1D input (e.g. temporal sequence)."""
    return build(KerasLayer, "cropping1d", locals())


def Cropping2D(cropping=([0, 0], [0, 0]), data_format=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Cropping2D`: Cropping layer for 2D input (e.g. picture)."""
    return build(KerasLayer, "cropping2d", locals())


def Cropping3D(
    cropping=([1, 1], [1, 1], [1, 1]), data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.Cropping3D`: Cropping layer for 3D data (e.g. spatial or spatio-temporal)."""
    return build(KerasLayer, "cropping3d", locals())


def CutMix(factor=1.0, seed=None, data_format=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.CutMix`: CutMix data augmentation technique."""
    return build(KerasLayer, "cut_mix", locals())


def Dense(
    units=REQUIRED,
    activation=None,
    use_bias=True,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    lora_rank=None,
    lora_alpha=None,
    quantization_config=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Dense`: Just your regular densely-connected NN layer."""
    return build(KerasLayer, "dense", locals())


def DepthwiseConv1D(
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    depth_multiplier=1,
    data_format=None,
    dilation_rate=1,
    activation=None,
    use_bias=True,
    depthwise_initializer="glorot_uniform",
    bias_initializer="zeros",
    depthwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.DepthwiseConv1D`: 1D depthwise convolution layer."""
    return build(KerasLayer, "depthwise_conv1d", locals())


def DepthwiseConv2D(
    kernel_size=REQUIRED,
    strides=(1, 1),
    padding="valid",
    depth_multiplier=1,
    data_format=None,
    dilation_rate=(1, 1),
    activation=None,
    use_bias=True,
    depthwise_initializer="glorot_uniform",
    bias_initializer="zeros",
    depthwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.DepthwiseConv2D`: 2D depthwise convolution layer."""
    return build(KerasLayer, "depthwise_conv2d", locals())


def Discretization(
    bin_boundaries=None,
    num_bins=None,
    epsilon=0.01,
    output_mode="int",
    sparse=False,
    dtype=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Discretization`: A preprocessing layer which buckets continuous features by ranges."""
    return build(KerasLayer, "discretization", locals())


def Dot(axes=REQUIRED, normalize=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Dot`: Computes element-wise dot product of two tensors."""
    return build(KerasLayer, "dot", locals())


def Dropout(rate=REQUIRED, noise_shape=None, seed=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Dropout`: Applies dropout to the input."""
    return build(KerasLayer, "dropout", locals())


def ELU(alpha=1.0, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.ELU`: Applies an Exponential Linear Unit function to an output."""
    return build(KerasLayer, "elu", locals())


def EinsumDense(
    equation=REQUIRED,
    output_shape=REQUIRED,
    activation=None,
    bias_axes=None,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    lora_rank=None,
    lora_alpha=None,
    gptq_unpacked_column_size=None,
    quantization_config=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.EinsumDense`: A layer that uses `einsum` as the backing computation."""
    return build(KerasLayer, "einsum_dense", locals())


def Embedding(
    input_dim=REQUIRED,
    output_dim=REQUIRED,
    embeddings_initializer="uniform",
    embeddings_regularizer=None,
    embeddings_constraint=None,
    mask_zero=False,
    weights=None,
    lora_rank=None,
    lora_alpha=None,
    quantization_config=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Embedding`: Turns nonnegative integers (indexes) into dense vectors of fixed size."""
    return build(KerasLayer, "embedding", locals())


def Equalization(
    value_range=(0, 255), bins=256, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.Equalization`: Preprocessing layer for histogram equalization on image channels."""
    return build(KerasLayer, "equalization", locals())


def Flatten(data_format=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Flatten`: Flattens the input. Does not affect the batch size."""
    return build(KerasLayer, "flatten", locals())


def GRU(
    units=REQUIRED,
    activation="tanh",
    recurrent_activation="sigmoid",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    seed=None,
    return_sequences=False,
    return_state=False,
    go_backwards=False,
    stateful=False,
    unroll=False,
    reset_after=True,
    use_cudnn="auto",
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.GRU`: Gated Recurrent Unit - Cho et al. 2014."""
    return build(KerasLayer, "gru", locals())


def GRUCell(
    units=REQUIRED,
    activation="tanh",
    recurrent_activation="sigmoid",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    reset_after=True,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.GRUCell`: Cell class for the GRU layer."""
    return build(KerasLayer, "gru_cell", locals())


def GaussianDropout(rate=REQUIRED, seed=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GaussianDropout`: Apply multiplicative 1-centered Gaussian noise."""
    return build(KerasLayer, "gaussian_dropout", locals())


def GaussianNoise(stddev=REQUIRED, seed=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GaussianNoise`: Apply additive zero-centered Gaussian noise."""
    return build(KerasLayer, "gaussian_noise", locals())


def GlobalAveragePooling1D(
    data_format=None, keepdims=False, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.GlobalAveragePooling1D`: Global average pooling operation for temporal data."""
    return build(KerasLayer, "global_average_pooling1d", locals())


def GlobalAveragePooling2D(
    data_format=None, keepdims=False, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.GlobalAveragePooling2D`: Global average pooling operation for 2D data."""
    return build(KerasLayer, "global_average_pooling2d", locals())


def GlobalAveragePooling3D(
    data_format=None, keepdims=False, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.GlobalAveragePooling3D`: Global average pooling operation for 3D data."""
    return build(KerasLayer, "global_average_pooling3d", locals())


def GlobalAvgPool1D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalAvgPool1D`: Global average pooling operation for temporal data."""
    return build(KerasLayer, "global_average_pooling1d", locals())


def GlobalAvgPool2D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalAvgPool2D`: Global average pooling operation for 2D data."""
    return build(KerasLayer, "global_average_pooling2d", locals())


def GlobalAvgPool3D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalAvgPool3D`: Global average pooling operation for 3D data."""
    return build(KerasLayer, "global_average_pooling3d", locals())


def GlobalMaxPool1D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalMaxPool1D`: Global max pooling operation for temporal data."""
    return build(KerasLayer, "global_max_pooling1d", locals())


def GlobalMaxPool2D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalMaxPool2D`: Global max pooling operation for 2D data."""
    return build(KerasLayer, "global_max_pooling2d", locals())


def GlobalMaxPool3D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalMaxPool3D`: Global max pooling operation for 3D data."""
    return build(KerasLayer, "global_max_pooling3d", locals())


def GlobalMaxPooling1D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalMaxPooling1D`: Global max pooling operation for temporal data."""
    return build(KerasLayer, "global_max_pooling1d", locals())


def GlobalMaxPooling2D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalMaxPooling2D`: Global max pooling operation for 2D data."""
    return build(KerasLayer, "global_max_pooling2d", locals())


def GlobalMaxPooling3D(data_format=None, keepdims=False, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.GlobalMaxPooling3D`: Global max pooling operation for 3D data."""
    return build(KerasLayer, "global_max_pooling3d", locals())


def GroupNormalization(
    groups=32,
    axis=-1,
    epsilon=0.001,
    center=True,
    scale=True,
    beta_initializer="zeros",
    gamma_initializer="ones",
    beta_regularizer=None,
    gamma_regularizer=None,
    beta_constraint=None,
    gamma_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.GroupNormalization`: Group normalization layer."""
    return build(KerasLayer, "group_normalization", locals())


def GroupQueryAttention(
    head_dim=REQUIRED,
    num_query_heads=REQUIRED,
    num_key_value_heads=REQUIRED,
    dropout=0.0,
    use_bias=True,
    sliding_window=None,
    flash_attention=None,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    use_gate=False,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.GroupQueryAttention`: Grouped Query Attention layer."""
    return build(KerasLayer, "group_query_attention", locals())


def HashedCrossing(
    num_bins=REQUIRED, output_mode="int", sparse=False, dtype=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.HashedCrossing`: A preprocessing layer which crosses features using the "hashing trick"."""
    return build(KerasLayer, "hashed_crossing", locals())


def Hashing(
    num_bins=REQUIRED,
    mask_value=None,
    salt=None,
    output_mode="int",
    sparse=False,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Hashing`: A preprocessing layer which hashes and bins categorical features."""
    return build(KerasLayer, "hashing", locals())


def Identity(name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Identity`: Identity layer."""
    return build(KerasLayer, "identity", locals())


def IntegerLookup(
    max_tokens=None,
    num_oov_indices=1,
    mask_token=None,
    oov_token=-1,
    vocabulary=None,
    vocabulary_dtype="int64",
    idf_weights=None,
    invert=False,
    output_mode="int",
    sparse=False,
    pad_to_max_tokens=False,
    oov_method="floormod",
    salt=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.IntegerLookup`: A preprocessing layer that maps integers to (possibly encoded) indices."""
    return build(KerasLayer, "integer_lookup", locals())


def LSTM(
    units=REQUIRED,
    activation="tanh",
    recurrent_activation="sigmoid",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    unit_forget_bias=True,
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    seed=None,
    return_sequences=False,
    return_state=False,
    go_backwards=False,
    stateful=False,
    unroll=False,
    use_cudnn="auto",
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.LSTM`: Long Short-Term Memory layer - Hochreiter 1997."""
    return build(KerasLayer, "lstm", locals())


def LSTMCell(
    units=REQUIRED,
    activation="tanh",
    recurrent_activation="sigmoid",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    unit_forget_bias=True,
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.LSTMCell`: Cell class for the LSTM layer."""
    return build(KerasLayer, "lstm_cell", locals())


def LayerNormalization(
    axis=-1,
    epsilon=0.001,
    center=True,
    scale=True,
    beta_initializer="zeros",
    gamma_initializer="ones",
    beta_regularizer=None,
    gamma_regularizer=None,
    beta_constraint=None,
    gamma_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.LayerNormalization`: Layer normalization layer (Ba et al., 2016)."""
    return build(KerasLayer, "layer_normalization", locals())


def LeakyReLU(negative_slope=0.3, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.LeakyReLU`: Leaky version of a Rectified Linear Unit activation layer."""
    return build(KerasLayer, "leaky_re_lu", locals())


def Masking(mask_value=0.0, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Masking`: Masks a sequence by using a mask value to skip timesteps."""
    return build(KerasLayer, "masking", locals())


def MaxPool1D(
    pool_size=2, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.MaxPool1D`: Max pooling operation for 1D temporal data."""
    return build(KerasLayer, "max_pooling1d", locals())


def MaxPool2D(
    pool_size=(2, 2), strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.MaxPool2D`: Max pooling operation for 2D spatial data."""
    return build(KerasLayer, "max_pooling2d", locals())


def MaxPool3D(
    pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.MaxPool3D`: Max pooling operation for 3D data (spatial or spatio-temporal)."""
    return build(KerasLayer, "max_pooling3d", locals())


def MaxPooling1D(
    pool_size=2, strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.MaxPooling1D`: Max pooling operation for 1D temporal data."""
    return build(KerasLayer, "max_pooling1d", locals())


def MaxPooling2D(
    pool_size=(2, 2), strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.MaxPooling2D`: Max pooling operation for 2D spatial data."""
    return build(KerasLayer, "max_pooling2d", locals())


def MaxPooling3D(
    pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.MaxPooling3D`: Max pooling operation for 3D data (spatial or spatio-temporal)."""
    return build(KerasLayer, "max_pooling3d", locals())


def Maximum(name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Maximum`: Computes element-wise maximum on a list of inputs."""
    return build(KerasLayer, "maximum", locals())


def MelSpectrogram(
    fft_length=2048,
    sequence_stride=512,
    sequence_length=None,
    window="hann",
    sampling_rate=16000,
    num_mel_bins=128,
    min_freq=20.0,
    max_freq=None,
    power_to_db=True,
    top_db=80.0,
    mag_exp=2.0,
    min_power=1e-10,
    ref_power=1.0,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.MelSpectrogram`: A preprocessing layer to convert raw audio signals to Mel spectrograms."""
    return build(KerasLayer, "mel_spectrogram", locals())


def Minimum(name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Minimum`: Computes elementwise minimum on a list of inputs."""
    return build(KerasLayer, "minimum", locals())


def MixUp(alpha=0.2, data_format=None, seed=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.MixUp`: MixUp implements the MixUp data augmentation technique."""
    return build(KerasLayer, "mix_up", locals())


def MultiHeadAttention(
    num_heads=REQUIRED,
    key_dim=REQUIRED,
    value_dim=None,
    dropout=0.0,
    use_bias=True,
    output_shape=None,
    attention_axes=None,
    sliding_window=None,
    flash_attention=None,
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    use_gate=False,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.MultiHeadAttention`: MultiHeadAttention layer."""
    return build(KerasLayer, "multi_head_attention", locals())


def Multiply(name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Multiply`: Performs elementwise multiplication."""
    return build(KerasLayer, "multiply", locals())


def Normalization(
    axis=-1, mean=None, variance=None, invert=False, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.Normalization`: A preprocessing layer that normalizes continuous features."""
    return build(KerasLayer, "normalization", locals())


def PReLU(
    alpha_initializer="Zeros",
    alpha_regularizer=None,
    alpha_constraint=None,
    shared_axes=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.PReLU`: Parametric Rectified Linear Unit activation layer."""
    return build(KerasLayer, "p_re_lu", locals())


def Permute(dims=REQUIRED, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Permute`: Permutes the dimensions of the input according to a given pattern."""
    return build(KerasLayer, "permute", locals())


def RMSNormalization(axis=-1, epsilon=1e-06, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.RMSNormalization`: Root Mean Square (RMS) Normalization layer."""
    return build(KerasLayer, "rms_normalization", locals())


def RNN(
    cell=REQUIRED,
    return_sequences=False,
    return_state=False,
    go_backwards=False,
    stateful=False,
    unroll=False,
    zero_output_for_mask=False,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RNN`: Base class for recurrent layers."""
    return build(KerasLayer, "rnn", locals())


def RandAugment(
    value_range=(0, 255),
    num_ops=2,
    factor=0.5,
    interpolation="bilinear",
    seed=None,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandAugment`: RandAugment performs the Rand Augment operation on input images."""
    return build(KerasLayer, "rand_augment", locals())


def RandomBrightness(
    factor=REQUIRED, value_range=(0, 255), seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomBrightness`: A preprocessing layer which randomly adjusts brightness during training."""
    return build(KerasLayer, "random_brightness", locals())


def RandomColorDegeneration(
    factor=REQUIRED, value_range=(0, 255), data_format=None, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomColorDegeneration`: Randomly performs the color degeneration operation on given images."""
    return build(KerasLayer, "random_color_degeneration", locals())


def RandomColorJitter(
    value_range=(0, 255),
    brightness_factor=None,
    contrast_factor=None,
    saturation_factor=None,
    hue_factor=None,
    seed=None,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomColorJitter`: RandomColorJitter class randomly apply brightness, contrast, saturation     and hue image processing operation sequentially and randomly on the     input."""
    return build(KerasLayer, "random_color_jitter", locals())


def RandomContrast(
    factor=REQUIRED, value_range=(0, 255), seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomContrast`: A preprocessing layer which randomly adjusts contrast during training."""
    return build(KerasLayer, "random_contrast", locals())


def RandomCrop(
    height=REQUIRED, width=REQUIRED, seed=None, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomCrop`: A preprocessing layer which randomly crops images during training."""
    return build(KerasLayer, "random_crop", locals())


def RandomElasticTransform(
    factor=1.0,
    scale=1.0,
    interpolation="bilinear",
    fill_mode="reflect",
    fill_value=0.0,
    value_range=(0, 255),
    seed=None,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomElasticTransform`: A preprocessing layer that applies random elastic transformations."""
    return build(KerasLayer, "random_elastic_transform", locals())


def RandomErasing(
    factor=1.0,
    scale=(0.02, 0.33),
    fill_value=None,
    value_range=(0, 255),
    seed=None,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomErasing`: Random Erasing data augmentation technique."""
    return build(KerasLayer, "random_erasing", locals())


def RandomFlip(
    mode="horizontal_and_vertical", seed=None, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomFlip`: A preprocessing layer which randomly flips images during training."""
    return build(KerasLayer, "random_flip", locals())


def RandomGaussianBlur(
    factor=1.0,
    kernel_size=3,
    sigma=1.0,
    value_range=(0, 255),
    data_format=None,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomGaussianBlur`: Applies random Gaussian blur to images for data augmentation."""
    return build(KerasLayer, "random_gaussian_blur", locals())


def RandomGrayscale(
    factor=0.5, data_format=None, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomGrayscale`: Preprocessing layer for random conversion of RGB images to grayscale."""
    return build(KerasLayer, "random_grayscale", locals())


def RandomHue(
    factor=REQUIRED, value_range=(0, 255), data_format=None, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomHue`: Randomly adjusts the hue on given images."""
    return build(KerasLayer, "random_hue", locals())


def RandomInvert(
    factor=1.0, value_range=(0, 255), seed=None, data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomInvert`: Preprocessing layer for random inversion of image colors."""
    return build(KerasLayer, "random_invert", locals())


def RandomPerspective(
    factor=1.0,
    scale=1.0,
    interpolation="bilinear",
    fill_value=0.0,
    seed=None,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomPerspective`: A preprocessing layer that applies random perspective transformations."""
    return build(KerasLayer, "random_perspective", locals())


def RandomPosterization(
    factor=REQUIRED, value_range=(0, 255), data_format=None, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomPosterization`: Reduces the number of bits for each color channel."""
    return build(KerasLayer, "random_posterization", locals())


def RandomRotation(
    factor=REQUIRED,
    fill_mode="reflect",
    interpolation="bilinear",
    seed=None,
    fill_value=0.0,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomRotation`: A preprocessing layer which randomly rotates images during training."""
    return build(KerasLayer, "random_rotation", locals())


def RandomSaturation(
    factor=REQUIRED, value_range=(0, 255), data_format=None, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomSaturation`: Randomly adjusts the saturation on given images."""
    return build(KerasLayer, "random_saturation", locals())


def RandomSharpness(
    factor=REQUIRED, value_range=(0, 255), data_format=None, seed=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.RandomSharpness`: Randomly performs the sharpness operation on given images."""
    return build(KerasLayer, "random_sharpness", locals())


def RandomShear(
    x_factor=0.0,
    y_factor=0.0,
    interpolation="bilinear",
    fill_mode="reflect",
    fill_value=0.0,
    data_format=None,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomShear`: A preprocessing layer that randomly applies shear transformations to     images."""
    return build(KerasLayer, "random_shear", locals())


def RandomTranslation(
    height_factor=REQUIRED,
    width_factor=REQUIRED,
    fill_mode="reflect",
    interpolation="bilinear",
    seed=None,
    fill_value=0.0,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomTranslation`: A preprocessing layer which randomly translates images during training."""
    return build(KerasLayer, "random_translation", locals())


def RandomZoom(
    height_factor=REQUIRED,
    width_factor=None,
    fill_mode="reflect",
    interpolation="bilinear",
    seed=None,
    fill_value=0.0,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.RandomZoom`: A preprocessing layer which randomly zooms images during training."""
    return build(KerasLayer, "random_zoom", locals())


def ReLU(max_value=None, negative_slope=0.0, threshold=0.0, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.ReLU`: Rectified Linear Unit activation function layer."""
    return build(KerasLayer, "re_lu", locals())


def RepeatVector(n=REQUIRED, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.RepeatVector`: Repeats the input n times."""
    return build(KerasLayer, "repeat_vector", locals())


def Rescaling(scale=REQUIRED, offset=0.0, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Rescaling`: A preprocessing layer which rescales input values to a new range."""
    return build(KerasLayer, "rescaling", locals())


def Reshape(target_shape=REQUIRED, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Reshape`: Layer that reshapes inputs into the given shape."""
    return build(KerasLayer, "reshape", locals())


def Resizing(
    height=REQUIRED,
    width=REQUIRED,
    interpolation="bilinear",
    crop_to_aspect_ratio=False,
    pad_to_aspect_ratio=False,
    fill_mode="constant",
    fill_value=0.0,
    antialias=False,
    data_format=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Resizing`: A preprocessing layer which resizes images."""
    return build(KerasLayer, "resizing", locals())


def ReversibleEmbedding(
    input_dim=REQUIRED,
    output_dim=REQUIRED,
    tie_weights=True,
    embeddings_initializer="uniform",
    embeddings_regularizer=None,
    embeddings_constraint=None,
    mask_zero=False,
    reverse_dtype=None,
    logit_soft_cap=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.ReversibleEmbedding`: An embedding layer which can project backwards to the input dim."""
    return build(KerasLayer, "reversible_embedding", locals())


def SeparableConv1D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    data_format=None,
    dilation_rate=1,
    depth_multiplier=1,
    activation=None,
    use_bias=True,
    depthwise_initializer="glorot_uniform",
    pointwise_initializer="glorot_uniform",
    bias_initializer="zeros",
    depthwise_regularizer=None,
    pointwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    pointwise_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.SeparableConv1D`: 1D separable convolution layer."""
    return build(KerasLayer, "separable_conv1d", locals())


def SeparableConv2D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1),
    padding="valid",
    data_format=None,
    dilation_rate=(1, 1),
    depth_multiplier=1,
    activation=None,
    use_bias=True,
    depthwise_initializer="glorot_uniform",
    pointwise_initializer="glorot_uniform",
    bias_initializer="zeros",
    depthwise_regularizer=None,
    pointwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    pointwise_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.SeparableConv2D`: 2D separable convolution layer."""
    return build(KerasLayer, "separable_conv2d", locals())


def SeparableConvolution1D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=1,
    padding="valid",
    data_format=None,
    dilation_rate=1,
    depth_multiplier=1,
    activation=None,
    use_bias=True,
    depthwise_initializer="glorot_uniform",
    pointwise_initializer="glorot_uniform",
    bias_initializer="zeros",
    depthwise_regularizer=None,
    pointwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    pointwise_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.SeparableConvolution1D`: 1D separable convolution layer."""
    return build(KerasLayer, "separable_conv1d", locals())


def SeparableConvolution2D(
    filters=REQUIRED,
    kernel_size=REQUIRED,
    strides=(1, 1),
    padding="valid",
    data_format=None,
    dilation_rate=(1, 1),
    depth_multiplier=1,
    activation=None,
    use_bias=True,
    depthwise_initializer="glorot_uniform",
    pointwise_initializer="glorot_uniform",
    bias_initializer="zeros",
    depthwise_regularizer=None,
    pointwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    pointwise_constraint=None,
    bias_constraint=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.SeparableConvolution2D`: 2D separable convolution layer."""
    return build(KerasLayer, "separable_conv2d", locals())


def SimpleRNN(
    units=REQUIRED,
    activation="tanh",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    return_sequences=False,
    return_state=False,
    go_backwards=False,
    stateful=False,
    unroll=False,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.SimpleRNN`: Fully-connected RNN where the output is to be fed back as the new input."""
    return build(KerasLayer, "simple_rnn", locals())


def SimpleRNNCell(
    units=REQUIRED,
    activation="tanh",
    use_bias=True,
    kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal",
    bias_initializer="zeros",
    kernel_regularizer=None,
    recurrent_regularizer=None,
    bias_regularizer=None,
    kernel_constraint=None,
    recurrent_constraint=None,
    bias_constraint=None,
    dropout=0.0,
    recurrent_dropout=0.0,
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.SimpleRNNCell`: Cell class for SimpleRNN."""
    return build(KerasLayer, "simple_rnn_cell", locals())


def Softmax(axis=-1, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Softmax`: Softmax activation layer."""
    return build(KerasLayer, "softmax", locals())


def Solarization(
    addition_factor=0.0,
    threshold_factor=0.0,
    value_range=(0, 255),
    seed=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.Solarization`: Applies `(max_value - pixel + min_value)` for each pixel in the image."""
    return build(KerasLayer, "solarization", locals())


def SpatialDropout1D(rate=REQUIRED, seed=None, dtype=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.SpatialDropout1D`: Spatial 1D version of Dropout."""
    return build(KerasLayer, "spatial_dropout1d", locals())


def SpatialDropout2D(
    rate=REQUIRED, data_format=None, seed=None, dtype=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.SpatialDropout2D`: Spatial 2D version of Dropout."""
    return build(KerasLayer, "spatial_dropout2d", locals())


def SpatialDropout3D(
    rate=REQUIRED, data_format=None, seed=None, dtype=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.SpatialDropout3D`: Spatial 3D version of Dropout."""
    return build(KerasLayer, "spatial_dropout3d", locals())


def SpectralNormalization(
    layer=REQUIRED, power_iterations=1, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.SpectralNormalization`: Performs spectral normalization on the weights of a target layer."""
    return build(KerasLayer, "spectral_normalization", locals())


def StringLookup(
    max_tokens=None,
    num_oov_indices=1,
    mask_token=None,
    oov_token="[UNK]",
    vocabulary=None,
    idf_weights=None,
    invert=False,
    output_mode="int",
    pad_to_max_tokens=False,
    sparse=False,
    encoding="utf-8",
    salt=None,
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.StringLookup`: A preprocessing layer that maps strings to (possibly encoded) indices."""
    return build(KerasLayer, "string_lookup", locals())


def Subtract(name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.Subtract`: Performs elementwise subtraction."""
    return build(KerasLayer, "subtract", locals())


def TextVectorization(
    max_tokens=None,
    standardize="lower_and_strip_punctuation",
    split="whitespace",
    ngrams=None,
    output_mode="int",
    output_sequence_length=None,
    pad_to_max_tokens=False,
    vocabulary=None,
    idf_weights=None,
    sparse=False,
    ragged=False,
    encoding="utf-8",
    name=None,
    **kwargs: Any,
) -> KerasLayer:
    """`keras.layers.TextVectorization`: A preprocessing layer which maps text features to integer sequences."""
    return build(KerasLayer, "text_vectorization", locals())


def TimeDistributed(layer=REQUIRED, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.TimeDistributed`: This wrapper allows to apply a layer to every temporal slice of an input."""
    return build(KerasLayer, "time_distributed", locals())


def UnitNormalization(axis=-1, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.UnitNormalization`: Unit normalization layer."""
    return build(KerasLayer, "unit_normalization", locals())


def UpSampling1D(size=2, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.UpSampling1D`: Upsampling layer for 1D inputs."""
    return build(KerasLayer, "up_sampling1d", locals())


def UpSampling2D(
    size=(2, 2), data_format=None, interpolation="nearest", name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.UpSampling2D`: Upsampling layer for 2D inputs."""
    return build(KerasLayer, "up_sampling2d", locals())


def UpSampling3D(size=(2, 2, 2), data_format=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.UpSampling3D`: Upsampling layer for 3D inputs."""
    return build(KerasLayer, "up_sampling3d", locals())


def ZeroPadding1D(padding=1, data_format=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.ZeroPadding1D`: Zero-padding layer for 1D input (e.g. temporal sequence)."""
    return build(KerasLayer, "zero_padding1d", locals())


def ZeroPadding2D(padding=(1, 1), data_format=None, name=None, **kwargs: Any) -> KerasLayer:
    """`keras.layers.ZeroPadding2D`: Zero-padding layer for 2D input (e.g. picture)."""
    return build(KerasLayer, "zero_padding2d", locals())


def ZeroPadding3D(
    padding=([1, 1], [1, 1], [1, 1]), data_format=None, name=None, **kwargs: Any
) -> KerasLayer:
    """`keras.layers.ZeroPadding3D`: Zero-padding layer for 3D data (spatial or spatio-temporal)."""
    return build(KerasLayer, "zero_padding3d", locals())

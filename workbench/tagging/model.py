"""The EfficientAT MobileNetV3 "mn" family (Schmid et al., 2023) for AudioSet tagging.

This is an independent implementation whose module tree, parameter names and
forward computation match the reference (fschmid56/EfficientAT, ``models/mn``)
in the configuration its official AudioSet checkpoints use: channel-wise
squeeze-excitation (the reference's "concurrent" SE with one channel branch),
``head_type="mlp"``, strides (2, 2, 2, 2), no dilation, 527 classes, one input
channel (a log-mel spectrogram shaped (batch, 1, 128, frames)). Official state
dicts therefore load with ``strict=True``.

The width multiplier scales every channel count with ``make_divisible(c * width, 8)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

N_CLASSES = 527
N_MELS = 128

# torchvision MobileNetV3-Large bottlenecks as adapted by EfficientAT:
# (input channels, kernel, expanded channels, output channels, squeeze-excitation,
#  hard-swish activation, downsamples)
_BOTTLENECKS: tuple[tuple[int, int, int, int, bool, bool, bool], ...] = (
    (16, 3, 16, 16, False, False, False),
    (16, 3, 64, 24, False, False, True),
    (24, 3, 72, 24, False, False, False),
    (24, 5, 72, 40, True, False, True),
    (40, 5, 120, 40, True, False, False),
    (40, 5, 120, 40, True, False, False),
    (40, 3, 240, 80, False, True, True),
    (80, 3, 200, 80, False, True, False),
    (80, 3, 184, 80, False, True, False),
    (80, 3, 184, 80, False, True, False),
    (80, 3, 480, 112, True, True, False),
    (112, 3, 672, 112, True, True, False),
    (112, 5, 672, 160, True, True, True),
    (160, 5, 960, 160, True, True, False),
    (160, 5, 960, 160, True, True, False),
)
_LAST_CHANNEL = 1280
_SE_REDUCTION = 4
_DROPOUT = 0.2
# BatchNorm settings of the reference; eps changes inference outputs, so it must match.
_BN = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)

ARCH_WIDTHS: dict[str, float] = {
    "mn01": 0.1,
    "mn02": 0.2,
    "mn04": 0.4,
    "mn05": 0.5,
    "mn10": 1.0,
    "mn20": 2.0,
    "mn30": 3.0,
    "mn40": 4.0,
}


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of ``divisor`` without going more than 10 % below it.

    Parameters
    ----------
    value
        The scaled channel count.
    divisor
        The multiple to round to.
    min_value
        Lower bound (default: ``divisor``).

    Returns
    -------
    int
        The rounded channel count.
    """
    floor = divisor if min_value is None else min_value
    rounded = max(floor, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded


def width_of_arch(arch: str) -> float:
    """The width multiplier of an architecture name such as ``mn04`` or ``mn10``.

    Raises
    ------
    ValueError
        The name is not ``mnXX`` with a known width.
    """
    name = arch.strip().lower()
    if name in ARCH_WIDTHS:
        return ARCH_WIDTHS[name]
    match = re.fullmatch(r"mn(\d\d)", name)
    if match is None:
        raise ValueError(f"unknown architecture {arch!r}; use one of {', '.join(ARCH_WIDTHS)}")
    width = int(match.group(1)) / 10
    if not 0.1 <= width <= 4.0:
        raise ValueError(f"architecture {arch!r}: width {width} is outside 0.1–4.0")
    return width


class ConvNormActivation(nn.Sequential):
    """Conv2d (no bias) → BatchNorm → optional activation, "same" padding (children 0, 1, 2)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        groups: int = 1,
        activation: type[nn.Module] | None = None,
    ) -> None:
        layers: list[nn.Module] = [
            nn.Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride=stride,
                padding=(kernel_size - 1) // 2,
                groups=groups,
                bias=False,
            ),
            _BN(out_channels),
        ]
        if activation is not None:
            layers.append(activation())
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    """Channel squeeze-excitation: mean over frequency and time, ReLU MLP, sigmoid gate."""

    def __init__(self, channels: int, squeeze_channels: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(channels, squeeze_channels)
        self.fc2 = nn.Linear(squeeze_channels, channels)
        self.activation = nn.ReLU()
        self.gate = nn.Sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = x.mean(dim=(2, 3))
        scale = self.gate(self.fc2(self.activation(self.fc1(pooled))))
        return x * scale[:, :, None, None]


class ConcurrentSqueezeExcitation(nn.Module):
    """The reference's concurrent SE container, here with its single channel-wise branch.

    The official checkpoints use only the channel branch (``conc_se_layers.0``), for which the
    reference's max-aggregation over branches is the identity.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        squeeze = make_divisible(channels // _SE_REDUCTION, 8)
        self.conc_se_layers = nn.ModuleList([SqueezeExcitation(channels, squeeze)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conc_se_layers[0](x)


@dataclass(frozen=True)
class BottleneckConfig:
    """One inverted-residual block after width scaling."""

    input_channels: int
    kernel: int
    expanded_channels: int
    out_channels: int
    use_se: bool
    use_hardswish: bool
    stride: int


class InvertedResidual(nn.Module):
    """MobileNetV3 block: [1×1 expand] → depthwise k×k → [SE] → 1×1 project, residual when shapes allow."""

    def __init__(self, config: BottleneckConfig) -> None:
        super().__init__()
        activation = nn.Hardswish if config.use_hardswish else nn.ReLU
        layers: list[nn.Module] = []
        if config.expanded_channels != config.input_channels:
            layers.append(
                ConvNormActivation(config.input_channels, config.expanded_channels, 1, activation=activation)
            )
        layers.append(
            ConvNormActivation(
                config.expanded_channels,
                config.expanded_channels,
                config.kernel,
                stride=config.stride,
                groups=config.expanded_channels,
                activation=activation,
            )
        )
        if config.use_se:
            layers.append(ConcurrentSqueezeExcitation(config.expanded_channels))
        layers.append(ConvNormActivation(config.expanded_channels, config.out_channels, 1))
        self.block = nn.Sequential(*layers)
        self.use_residual = config.stride == 1 and config.input_channels == config.out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.block(x)
        return out + x if self.use_residual else out


def bottleneck_configs(width: float) -> list[BottleneckConfig]:
    """The 15 scaled inverted-residual configurations of width ``width``."""
    return [
        BottleneckConfig(
            input_channels=make_divisible(cin * width),
            kernel=kernel,
            expanded_channels=make_divisible(cexp * width),
            out_channels=make_divisible(cout * width),
            use_se=se,
            use_hardswish=hs,
            stride=2 if down else 1,
        )
        for cin, kernel, cexp, cout, se, hs, down in _BOTTLENECKS
    ]


class MobileNetAudioTagger(nn.Module):
    """EfficientAT "mn" model: log-mel (batch, 1, 128, frames) → (logits (batch, 527), embedding).

    Parameters
    ----------
    width
        Width multiplier (0.1 for mn01 … 4.0 for mn40).
    n_classes
        Output classes (527 for AudioSet).
    """

    def __init__(self, width: float = 1.0, n_classes: int = N_CLASSES) -> None:
        super().__init__()
        if not 0.0 < width <= 8.0:
            raise ValueError(f"width multiplier must be in (0, 8], got {width}")
        self.width = width
        configs = bottleneck_configs(width)
        layers: list[nn.Module] = [
            ConvNormActivation(1, configs[0].input_channels, 3, stride=2, activation=nn.Hardswish)
        ]
        layers.extend(InvertedResidual(config) for config in configs)
        last_conv_in = configs[-1].out_channels
        self.embedding_dim = 6 * last_conv_in
        layers.append(ConvNormActivation(last_conv_in, self.embedding_dim, 1, activation=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        hidden = make_divisible(_LAST_CHANNEL * width)
        self.classifier = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Flatten(start_dim=1),
            nn.Linear(self.embedding_dim, hidden),
            nn.Hardswish(),
            nn.Dropout(p=_DROPOUT),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, mel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (batch, n_classes) and the pooled embedding (batch, embedding_dim)."""
        feature_map = self.features(mel)
        embedding = feature_map.mean(dim=(2, 3))
        return self.classifier(feature_map), embedding


def build_model(arch: str | float) -> MobileNetAudioTagger:
    """Construct an untrained model of an architecture name (``mn10``) or width (1.0)."""
    width = arch if isinstance(arch, (int, float)) else width_of_arch(arch)
    return MobileNetAudioTagger(width=float(width))


def expected_manifest(arch: str | float) -> dict[str, tuple[int, ...]]:
    """State-dict key → shape of an architecture, computed from the module definition.

    Built on the meta device, so even mn40 costs no memory or time.
    """
    with torch.device("meta"):
        model = build_model(arch)
    return {key: tuple(value.shape) for key, value in model.state_dict().items()}


def parameter_count(arch: str | float) -> int:
    """Number of trainable parameters of an architecture (from the real module, on the meta device)."""
    with torch.device("meta"):
        model = build_model(arch)
    return sum(p.numel() for p in model.parameters())

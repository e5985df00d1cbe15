"""The additive model of runs made on several devices: value = device + variant + noise.

Runs of V variants on D devices (boards of one model, which differ by a few percent), on
the working scale (the log of positive runs, where a board's offset and a variant's change
are both factors): y = α_device + β_variant + ε, ε independent with one variance, β of
the first variant (the baseline) 0. Fitted by least squares for E rows at once that share
one layout (which device and variant each run is), as the simulations need; a layout is
all a comparison or a spread needs to know about the runs.

For two variants the estimate of β is the weighted mean of the boards' own differences
of means, each board weighted by n_a·n_b/(n_a + n_b) (its inverse variance under one
noise level), and its variance σ²/Σ weights; the residual variance pools every board's
spread within variants and what is left of the boards' differences (df = N − D − V + 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perflab.stats.arrays import FloatArray, IntArray


@dataclass(frozen=True)
class Layout:
    """Which device and variant each of N runs is.

    devices:  the device labels, in order of first appearance (code d is ``devices[d]``).
    device:   (N,) the device code of each run.
    variant:  (N,) the variant code of each run (0 is the baseline).
    variants: V, the number of variants.
    """

    devices: tuple[str, ...]
    device: IntArray
    variant: IntArray
    variants: int

    @property
    def size(self) -> int:
        return int(self.device.size)

    def counts(self) -> IntArray:
        """(D, V) runs per device and variant."""
        out: IntArray = np.zeros((len(self.devices), self.variants), dtype=np.intp)
        np.add.at(out, (self.device, self.variant), 1)
        return out


def make_layout(devices_of_variants: Sequence[Sequence[str]]) -> Layout:
    """The layout of runs given as each variant's device labels, one per run, the
    variants' runs concatenated in that order (the baseline first)."""
    names: dict[str, int] = {}
    device: list[int] = []
    variant: list[int] = []
    for v, labels in enumerate(devices_of_variants):
        for label in labels:
            device.append(names.setdefault(str(label), len(names)))
            variant.append(v)
    return Layout(
        tuple(names),
        np.array(device, dtype=np.intp),
        np.array(variant, dtype=np.intp),
        len(devices_of_variants),
    )


@dataclass(frozen=True)
class AdditiveFit:
    """Least-squares fit of y = α_device + β_variant + ε for E rows of one layout.

    device_effect:  (E, D) α, in the working unit.
    variant_effect: (E, V) β, the baseline's 0.
    s2:             (E,) residual variance (NaN when df = 0).
    df:             residual degrees of freedom, N − D − V + 1.
    residuals:      (E, N).
    unscaled:       (P, P) (XᵀX)⁻¹ over the parameters (α_0…α_{D−1}, β_1…β_{V−1}).
    """

    device_effect: FloatArray
    variant_effect: FloatArray
    s2: FloatArray
    df: int
    residuals: FloatArray
    unscaled: FloatArray

    def estimate(self, c: FloatArray) -> FloatArray:
        """(E,) cᵀθ for a contrast c over the parameters (P,)."""
        theta = np.concatenate([self.device_effect, self.variant_effect[:, 1:]], axis=1)
        out: FloatArray = theta @ c
        return out

    def se(self, c: FloatArray) -> FloatArray:
        """(E,) standard error of cᵀθ."""
        v = float(c @ self.unscaled @ c)
        out: FloatArray = np.sqrt(self.s2 * max(v, 0.0))
        return out


def design(layout: Layout) -> FloatArray:
    """(N, P) design matrix: one column per device, then one per variant but the baseline."""
    n, d = layout.size, len(layout.devices)
    x = np.zeros((n, d + layout.variants - 1))
    x[np.arange(n), layout.device] = 1.0
    rows = layout.variant > 0
    x[np.flatnonzero(rows), d + layout.variant[rows] - 1] = 1.0
    return x


def connected(layout: Layout) -> bool:
    """Every variant is linked to the baseline through devices that ran both (else its
    change cannot be told from the devices' differences)."""
    reached = {0}
    counts = layout.counts() > 0
    grew = True
    while grew:
        boards = counts[:, sorted(reached)].any(axis=1)
        now = set(np.flatnonzero(counts[boards].any(axis=0)).tolist()) | reached
        grew = now != reached
        reached = now
    return len(reached) == layout.variants


def fit_additive(y: FloatArray, layout: Layout) -> AdditiveFit:
    """Fit the additive model to (E, N) values; raises ValueError when a variant is not
    linked to the baseline through a device that ran both (see `connected`)."""
    if not connected(layout):
        raise ValueError(
            "no device ran both the baseline and this variant, so the change cannot be told "
            "from the devices' differences: run both on at least one device"
        )
    x = design(layout)
    pinv = np.linalg.pinv(x)
    theta = y @ pinv.T
    residuals = y - theta @ x.T
    df = layout.size - x.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = np.einsum("ij,ij->i", residuals, residuals) / df if df > 0 else np.full(len(y), np.nan)
    d = len(layout.devices)
    beta = np.concatenate([np.zeros((len(y), 1)), theta[:, d:]], axis=1)
    return AdditiveFit(theta[:, :d], beta, s2, df, residuals, pinv @ pinv.T)


def variant_contrast(layout: Layout, v: int) -> FloatArray:
    """The contrast β_v − β_0 (variant v against the baseline)."""
    c = np.zeros(len(layout.devices) + layout.variants - 1)
    c[len(layout.devices) + v - 1] = 1.0
    return c


def fleet_contrast(layout: Layout, v: int = 0) -> FloatArray:
    """The contrast of variant v's fleet mean: the mean of α over the devices, plus β_v
    (every device weighted equally, however many runs it made)."""
    d = len(layout.devices)
    c = np.zeros(d + layout.variants - 1)
    c[:d] = 1.0 / d
    if v > 0:
        c[d + v - 1] = 1.0
    return c

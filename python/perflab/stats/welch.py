"""Welch's t interval for the difference of means, relative to the baseline mean.

Assumption: each sample's mean is approximately normal (runs independent, n not
tiny or the runs themselves near-normal); variances may differ. Chosen as the
default because benchmark runs of two variants rarely have equal variance, and
it is what seed 000's TLDR uses: CI(μ_b − μ_a) / mean(a).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats as sps

from perflab.stats.summary import Summary, as_sample, summarize
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning


class Welch:
    name = "welch"
    description = "Welch's t interval of the difference of means, over the baseline mean"

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        return summarize(sample, confidence)

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison:
        a = as_sample(baseline)
        b = as_sample(candidate)
        ma, mb = float(a.mean()), float(b.mean())
        warnings: list[StatWarning] = []
        if ma == 0:
            raise ValueError("baseline mean is zero: a relative change is undefined")
        est = mb / ma - 1.0
        if a.size < 2 or b.size < 2:
            warnings.append(
                StatWarning(
                    "too_few_runs",
                    "need ≥ 2 runs per variant for an interval (≥ 5 for a trustworthy one)",
                    {"n_baseline": int(a.size), "n_candidate": int(b.size)},
                )
            )
            return Comparison(self.name, confidence, int(a.size), int(b.size), ma, mb, est,
                              math.nan, math.nan, math.nan, tuple(warnings))
        va = float(a.var(ddof=1)) / a.size
        vb = float(b.var(ddof=1)) / b.size
        se = math.sqrt(va + vb)
        diff = mb - ma
        if se == 0:
            # Both samples constant: the difference is known exactly.
            lo = hi = diff
            p = 1.0 if diff == 0 else 0.0
        else:
            df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
            t = float(sps.t.ppf(0.5 + confidence / 2, df))
            lo, hi = diff - t * se, diff + t * se
            p = float(2 * sps.t.sf(abs(diff) / se, df))
        scale = abs(ma)
        return Comparison(
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            baseline_location=ma,
            candidate_location=mb,
            estimate=est,
            low=lo / scale,
            high=hi / scale,
            p_value=p,
            warnings=tuple(warnings),
        )



"""Bootstrap of merged-histogram percentiles (latency metrics stored as histograms)."""

from __future__ import annotations

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram
from perflab.stats import HistogramBootstrap, histogram_bootstrap, merged_percentile

EDGES = np.exp(np.arange(np.log(0.01), np.log(200.0), 0.004))  # 0.4% buckets, in ms


def _runs(rng, n, scale, requests=2000, run_noise=0.05):
    """n runs' histograms over EDGES: log-normal latencies, each run's scale varying by 5%."""
    out = np.zeros((n, EDGES.size))
    for i in range(n):
        x = scale * np.exp(run_noise * rng.standard_normal()) * rng.lognormal(0, 0.5, requests)
        out[i] = np.bincount(np.searchsorted(EDGES, x), minlength=EDGES.size + 1)[: EDGES.size]
    return out


def test_merged_percentile_matches_hdrhistogram():
    """Counts exported from HdrHistograms, merged here, give HdrHistogram's own percentiles."""
    rng = np.random.default_rng(1)
    runs = []
    merged = HdrHistogram(1, 10_000_000, 2)
    for _ in range(6):
        h = HdrHistogram(1, 10_000_000, 2)
        for v in rng.lognormal(8, 1, 3000).astype(int) + 1:
            h.record_value(int(v))
        runs.append(
            {
                it.value_iterated_to: it.count_added_in_this_iter_step
                for it in h.get_recorded_iterator()
            }
        )
        merged.add(h)
    values = np.array(sorted(set().union(*runs)), dtype=float)
    counts = np.array([[r.get(int(v), 0) for v in values] for r in runs], dtype=float)
    for p in (50, 90, 99, 99.9, 100):
        assert merged_percentile(values, counts.sum(axis=0), p) == merged.get_value_at_percentile(p)


def test_equal_variants_rarely_differ_and_a_real_change_is_covered():
    """200 A/A experiments and 200 with p99 +10% (10 runs each, 2,000 requests per run)."""
    rng = np.random.default_rng(2)
    false_pos = covered = 0
    for _ in range(200):
        r = histogram_bootstrap(
            EDGES, _runs(rng, 10, 1.0), _runs(rng, 10, 1.0), 99, resamples=2000, seed=rng
        )
        false_pos += bool(r.significant[0])
        r = histogram_bootstrap(
            EDGES, _runs(rng, 10, 1.0), _runs(rng, 10, 1.1), 99, resamples=2000, seed=rng
        )
        covered += bool(r.covers(0.1)[0])
    assert false_pos / 200 <= 0.08  # 95% binomial margin above 5% at 200 experiments
    assert covered / 200 >= 0.91


def test_resampling_runs_not_requests():
    """Run-to-run variation dominates: the interval is far wider than one that treated the
    40,000 requests as independent (which would be ±~1.5% for a p99)."""
    rng = np.random.default_rng(3)
    c = HistogramBootstrap(99).compare(
        EDGES, _runs(rng, 10, 1.0, run_noise=0.1), _runs(rng, 10, 1.0, run_noise=0.1)
    )
    assert c.high - c.low > 0.06
    assert c.statistic == "p99" and c.method == "histogram-bootstrap"


def test_too_few_runs_and_bad_shapes():
    rng = np.random.default_rng(4)
    c = HistogramBootstrap().compare(EDGES, _runs(rng, 3, 1.0), _runs(rng, 8, 1.0))
    assert not c.defined and c.warnings[0].code == "too_few_runs"
    with pytest.raises(ValueError, match="shape"):
        histogram_bootstrap(EDGES[:-1], _runs(rng, 5, 1.0), _runs(rng, 5, 1.0))
    with pytest.raises(ValueError, match="increasing"):
        histogram_bootstrap(EDGES[::-1], _runs(rng, 5, 1.0), _runs(rng, 5, 1.0))
    empty = _runs(rng, 5, 1.0)
    empty[2] = 0
    with pytest.raises(ValueError, match="empty"):
        histogram_bootstrap(EDGES, empty, _runs(rng, 5, 1.0))


def test_a_zero_bucket_value_makes_the_change_a_difference():
    """Bucket values reaching 0 (a percentile can be 0): no ratio; the difference over the
    baseline's percentile, or in the unit when that is within noise of zero."""
    rng = np.random.default_rng(5)
    values = np.arange(0.0, 50.0)  # bucket 0 holds requests
    base = np.array(
        [np.bincount(np.clip(rng.poisson(2, 500), 0, 49), minlength=50) for _ in range(8)]
    )
    cand = np.array(
        [np.bincount(np.clip(rng.poisson(3, 500), 0, 49), minlength=50) for _ in range(8)]
    )
    r = histogram_bootstrap(values, base, cand, 90, resamples=2000)
    assert r.scale[0] == "relative" and r.low[0] <= r.estimate[0] <= r.high[0]
    assert bool(r.significant[0]) == bool(r.p_value[0] <= 0.05)

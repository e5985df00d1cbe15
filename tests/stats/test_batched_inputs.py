"""The shortcuts of the bulk path give what the one-by-one functions give: `as_samples` is
`as_sample` of each sample (values, copies, errors), `replace_comparison` is
`dataclasses.replace`, and `load_dataset` groups the store's values as before."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from perflab.stats.summary import as_sample, as_samples
from perflab.stats.types import Comparison, replace_comparison


@pytest.mark.parametrize(
    "samples",
    [
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.5]],
        [[1, 2, 3], (4.0, 5.0, 6.5), np.array([1.5, 2.5, 3.5])],
        [np.arange(6.0).reshape(2, 3), [1.0, 2.0]],  # 2-D: ravelled, as as_sample does
        [[1e-300, 1e300], [5.0, -5.0]],
        [],
    ],
)
def test_as_samples_is_as_sample_of_each(samples):
    got = as_samples(samples)
    want = [as_sample(s) for s in samples]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


def test_as_samples_copies():
    x = np.array([1.0, 2.0, 3.0])
    got = as_samples([x, [4.0, 5.0, 6.0]])
    got[0][0] = 99.0
    assert x[0] == 1.0


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ([[1.0, 2.0], []], "empty sample"),
        ([[1.0, math.nan], [1.0, 2.0]], "NaN or infinite"),
        ([[1.0, 2.0], [math.inf, 2.0]], "NaN or infinite"),
    ],
)
def test_as_samples_raises_what_as_sample_raises(samples, message):
    with pytest.raises(ValueError, match=message):
        as_samples(samples)


def _comparison(**kw):
    base = {
        "method": "welch",
        "confidence": 0.95,
        "n_baseline": 10,
        "n_candidate": 10,
        "baseline_location": 1.0,
        "candidate_location": 1.1,
        "estimate": 0.1,
        "low": 0.05,
        "high": 0.15,
        "p_value": 0.01,
    }
    return Comparison(**(base | kw))


@pytest.mark.parametrize(
    "changes",
    [
        {"p_value": 0.04, "p_raw": 0.01, "confidence": 0.99, "correction": "holm"},
        {"choice": "clean"},
        {"low": -0.2, "high": 0.3, "confidence": 0.999},
        {"p_raw": math.nan, "correction": "none", "p_value": 0.2},  # __post_init__ fills p_raw
    ],
)
def test_replace_comparison_is_dataclasses_replace(changes):
    c = _comparison()
    assert replace_comparison(c, **changes) == dataclasses.replace(c, **changes)


def test_replace_comparison_checks_like_dataclasses_replace():
    c = _comparison()
    with pytest.raises(ValueError, match="scale"):
        replace_comparison(c, scale="bogus")
    with pytest.raises(TypeError):
        replace_comparison(c, nonsense=1)


def test_load_dataset_groups_as_before(tmp_path):
    """Values and blocks per (cell, variant, metric), in run order, samples in order of first
    appearance — checked against a grouping of the store's rows read one by one."""
    from perflab.analysis.dataset import load_dataset
    from perflab.store import Database

    path = tmp_path / "s.db"
    csv = tmp_path / "runs.csv"
    rng = np.random.default_rng(1)
    rows = ["variant,size,latency,ops"]
    for _r in range(6):
        for size in ("1", "2"):
            for v in ("a", "b"):
                rows.append(f"{v},{size},{rng.normal(10, 1)},{rng.normal(1000, 10)}")
    csv.write_text("\n".join(rows) + "\n")
    import subprocess
    import sys

    subprocess.run(
        [
            sys.executable,
            "-m",
            "perflab",
            "import",
            str(csv),
            "--store",
            str(path),
            "--variant",
            "variant",
            "--param",
            "size",
            "--metric",
            "latency:lower",
            "--metric",
            "ops:higher",
            "--baseline",
            "a",
        ],
        check=True,
        capture_output=True,
    )
    with Database(path, write=False) as store:
        data = load_dataset(store, 1)
        want: dict[tuple[str, str, str], tuple[list[float], list[int]]] = {}
        sql = (
            "SELECT r.cell_key AS k, r.variant AS v, r.block AS b, m.name AS n, m.value AS x"
            " FROM runs r JOIN metrics m ON m.run_id = r.id WHERE r.experiment_id=1"
            " AND r.status='ok' AND r.warmup=0 ORDER BY r.order_index, m.name"
        )
        for row in store.db.execute(sql):
            vals, blocks = want.setdefault((row["k"], row["v"], row["n"]), ([], []))
            vals.append(row["x"])
            blocks.append(row["b"])
    assert list(data.samples) == list(want)
    assert data.samples == {k: v for k, (v, _) in want.items()}
    assert data.blocks == {k: b for k, (_, b) in want.items()}

"""The store's hot read (`Database.measured_values`, in Rust through a second connection):
the same groups, values and order as SQL read and grouped here, on real stores; its errors
are one StoreError line like every other read."""

from __future__ import annotations

import dataclasses
import random
import sqlite3

import pytest
from perflab.errors import StoreError
from perflab.store import Database, MetricDef, NewRun

METRICS = [MetricDef("t", "s", "lower"), MetricDef("u", "ops/s", "higher")]


def _runs(rng: random.Random, n: int) -> list[NewRun]:
    """Shuffled cells and variants, some failed or warm-up runs, values across the range."""
    out = []
    for i in range(n):
        status = rng.choice(["ok"] * 8 + ["failed", "timeout"])
        values = {"t": rng.choice([1e-300, -2.5, 0.0, 7.0, 1e300]) * rng.random()}
        if rng.random() < 0.7:  # not every run has every metric
            values["u"] = float(rng.randint(-5, 5))
        cell = rng.choice(["n=1", "n=10", "n=100"])
        out.append(
            NewRun(
                order_index=i,
                block=i // 6,
                cell_key=cell,
                cell={"n": cell[2:]},
                variant=rng.choice(["base", "new", "other"]),
                repetition=i,
                warmup=rng.random() < 0.1,
                status=status,
                metrics=values if status == "ok" else None,
            )
        )
    return out


def _expected(path, eid):
    """The same read in SQL and Python, grouped here."""
    db = sqlite3.connect(path)
    samples: dict = {}
    blocks: dict = {}
    for cell, variant, block, name, value in db.execute(
        "SELECT r.cell_key, r.variant, r.block, m.name, m.value FROM runs r JOIN metrics m"
        " ON m.run_id = r.id WHERE r.experiment_id=? AND r.status='ok' AND r.warmup=0"
        " ORDER BY r.order_index",
        (eid,),
    ):
        samples.setdefault((cell, variant, name), []).append(value)
        blocks.setdefault((cell, variant, name), []).append(block)
    db.close()
    return samples, blocks


def _store(path, seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    with Database(path) as s:
        return [
            s.create_experiment(
                name=f"e{k}",
                description="",
                source="import",
                baseline="base",
                metrics=METRICS,
                settings={},
                runs=_runs(rng, n),
                status="complete",
            )
            for k in range(2)
        ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_groups_match_sql_read_and_grouped_in_python(tmp_path, seed):
    path = tmp_path / "a b?c#d.db"  # quoted into the URI the second connection opens
    eids = _store(path, seed, 400)
    with Database(path, write=False) as s:
        for eid in eids:
            samples, blocks = s.measured_values(eid)
            want_samples, want_blocks = _expected(path, eid)
            assert samples == want_samples and blocks == want_blocks
            assert list(samples) == list(want_samples)  # groups in order of first run
            assert all(type(v) is float for vs in samples.values() for v in vs)
            assert all(type(b) is int for bs in blocks.values() for b in bs)
    assert len(want_samples) >= 6  # the data exercised many groups


@pytest.mark.parametrize("seed", [1, 5])
def test_arrays_from_the_read_buffer_are_the_samples_as_arrays(tmp_path, seed):
    """`Dataset.arrays` of a loaded experiment (from the read's buffer, samples of unequal
    sizes here) equals the arrays made from the samples' lists, in the same order; they
    are the caller's (writable, not a view of the buffer), and no list is made for them."""
    import numpy as np
    from perflab.analysis.dataset import Dataset, load_dataset

    path = tmp_path / "a.db"
    eids = _store(path, seed, 300)
    with Database(path, write=False) as s:
        data = load_dataset(s, eids[0])
    fast = data.arrays
    assert not data.samples._lists  # type: ignore[attr-defined]  # no list made
    plain = Dataset.arrays.func(dataclasses.replace(data, samples=dict(data.samples)))  # type: ignore[attr-defined]
    assert list(fast) == list(plain) and len({len(v) for v in plain.values()}) > 1
    for key, row in fast.items():
        assert row.dtype == np.float64 and row.flags.writeable
        assert row.tolist() == plain[key].tolist() == data.samples[key]
    assert all(data.measured(k) for k in fast) and not data.measured(("x", "y", "z"))


def test_runs_overview_has_the_cells_and_the_status_counts_sql_gives(tmp_path):
    """One pass over the runs (in Rust) gives every (cell, variant) in order of first
    appearance and the runs per status, as the store's SQL reads count them."""
    path = tmp_path / "o.db"
    eids = _store(path, 4, 300)
    with Database(path, write=False) as s:
        for eid in eids:
            cells, counts = s.runs_overview(eid)
            assert counts == s.status_counts(eid)
            assert list(counts) == sorted(counts)  # by status, as GROUP BY gives them
            assert {"ok", "failed", "timeout"} <= counts.keys()
            order = [(r.cell_key, r.variant) for r in s.runs(eid)]
            assert [(k, v) for k, _, v in cells] == list(dict.fromkeys(order))
            assert all(labels == {"n": k[2:]} for k, labels, _ in cells)


def test_an_experiment_without_measured_runs_reads_empty(tmp_path):
    path = tmp_path / "p.db"
    with Database(path) as s:
        eid = s.create_experiment(
            name="e", description="", source="import", baseline="base",
            metrics=METRICS, settings={}, runs=[],
        )  # fmt: skip
        assert s.measured_values(eid) == ({}, {})
        assert s.measured_values(eid + 1) == ({}, {})


def test_a_store_damaged_after_it_was_opened_is_one_store_error(tmp_path):
    path = tmp_path / "p.db"
    (eid,) = _store(path, 4, 3000)[:1]
    with Database(path, write=False) as s:
        size = path.stat().st_size
        with open(path, "r+b") as f:  # pages of the runs and metrics, after the header page
            f.seek(4096)
            f.write(b"\xa5" * (size - 4096))
        with pytest.raises(StoreError) as e:
            s.measured_values(eid)
    msg = str(e.value)
    assert msg.startswith(f"cannot read store {path}: ") and "\n" not in msg
    assert msg.endswith("it is damaged (database disk image is malformed)"), msg


def test_one_sqlite_library_serves_both_connections():
    """Two copies of SQLite in one process would each keep their own per-file locks (and
    closing one's file would drop the other's POSIX locks): the Rust reader must link the
    library Python's sqlite3 module loaded."""
    import _sqlite3

    from perflab import _native

    assert _native.__file__ and _sqlite3.__file__
    maps = open("/proc/self/maps").read().splitlines()
    libraries = {line.split()[-1] for line in maps if "libsqlite3" in line.split()[-1]}
    assert len(libraries) == 1, libraries


def test_prefetched_reads_are_the_reads_and_their_errors_are_store_errors(tmp_path):
    """`Database.prefetch` reads in threads while the caller goes on; the reads hand over what
    the threads read (once: a second read reads again) or raise what they raised, worded."""
    path = tmp_path / "p.db"
    (eid,) = _store(path, 5, 500)[:1]
    with Database(path, write=False) as s:
        plain = s.measured_values(eid), s.cells_and_variants(eid)
        s.prefetch(eid)
        assert (s.measured_values(eid), s.cells_and_variants(eid)) == plain
        assert s.measured_values(eid) == plain[0]  # read again
        size = path.stat().st_size
        with open(path, "r+b") as f:
            f.seek(4096)
            f.write(b"\xa5" * (size - 4096))
        s.prefetch(eid)
        for read in (s.measured_values, s.cells_and_variants):
            with pytest.raises(StoreError) as e:
                read(eid)
            assert str(e.value) == (
                f"cannot read store {path}: it is damaged (database disk image is malformed)"
            )


def test_datasets_arrays_are_its_samples_as_float64(tmp_path):
    """`Dataset.arrays`, what the statistics read: each sample's values, in run order, as
    float64 arrays of its own length (mixed lengths, signs and magnitudes), made once."""
    import numpy as np
    from perflab.analysis.dataset import load_dataset

    path = tmp_path / "d.db"
    eid = _store(path, 5, 400)[0]
    with Database(path, write=False) as s:
        data = load_dataset(s, eid)
    assert data.arrays.keys() == data.samples.keys()
    assert len({len(v) for v in data.samples.values()}) >= 3  # blocks of several sizes
    for key, values in data.samples.items():
        arr = data.arrays[key]
        assert arr.dtype == np.float64 and arr.tolist() == values
    assert data.arrays is data.arrays


def _one_size_store(path, cells: int, runs: int) -> int:
    """An experiment whose samples all have ``runs`` values: clean, outlying, skewed and
    tied runs of a throughput and a latency, a change in some cells."""
    rng = random.Random(11)
    new_runs = []
    for c in range(cells):
        for v, variant in enumerate(["base", "new", "other"]):
            for r in range(runs):
                t = rng.lognormvariate(0, 0.1 if c % 3 else 1.0) * (1 + 0.05 * v * (c % 2))
                u = float(rng.randint(1, 4)) if c % 4 == 0 else rng.gauss(100 + 10 * v, 2)
                if c % 5 == 0 and r == 0:
                    t *= 8  # an outlier
                new_runs.append(
                    NewRun(
                        order_index=len(new_runs),
                        block=r,
                        cell_key=f"n={c}",
                        cell={"n": str(c)},
                        variant=variant,
                        repetition=r,
                        warmup=False,
                        status="ok",
                        metrics={"t": t, "u": u},
                    )
                )
    with Database(path) as s:
        return s.create_experiment(
            name="one size",
            description="",
            source="import",
            baseline="base",
            metrics=METRICS,
            settings={
                "cells": [
                    {"key": f"n={c}", "labels": {"n": str(c)}, "values": {}} for c in range(cells)
                ]
            },
            runs=new_runs,
            status="complete",
        )


def test_samples_of_one_size_are_one_block_and_gathered_by_key(tmp_path):
    """`Dataset.value_block`: the samples of an experiment whose samples have one size, as
    the rows of one array (read from the buffer, or made from lists alike); `Dataset.rows`
    gathers any of them in the order asked, and says None where it cannot."""
    import numpy as np
    from perflab.analysis.dataset import load_dataset

    path = tmp_path / "one.db"
    eid = _one_size_store(path, 12, 7)
    with Database(path, write=False) as s:
        data = load_dataset(s, eid)
    block, row = data.value_block
    assert block.shape == (12 * 3 * 2, 7) and list(row) == list(data.arrays)
    plain = dataclasses.replace(data, samples=dict(data.samples))
    assert np.array_equal(plain.value_block[0], block) and plain.value_block[1] == row
    keys = list(reversed(row))[::3]
    assert data.rows(keys).tolist() == [data.samples[k] for k in keys]
    assert data.rows([*keys, ("n=99", "base", "t")]) is None  # a key with no sample
    shorter = {**data.samples, keys[0]: data.samples[keys[0]][:-1]}
    assert dataclasses.replace(data, samples=shorter).rows(keys) is None  # two sizes
    infinite = {**data.samples, keys[0]: [float("inf")] * 7}
    assert dataclasses.replace(data, samples=infinite).value_block is None


@pytest.mark.parametrize("method", ["auto", "welch", "mannwhitney"])
def test_a_comparison_from_one_block_is_the_one_from_the_samples(tmp_path, method, monkeypatch):
    """`compare_dataset` gathers the rows of one block where the samples make one
    (`Dataset.rows`): every comparison, summary and note is the one it makes sample by
    sample, under every correction."""
    from perflab.analysis.against_baseline import compare_dataset
    from perflab.analysis.dataset import Dataset, load_dataset

    path = tmp_path / "one.db"
    eid = _one_size_store(path, 30, 6)
    with Database(path, write=False) as s:
        data = load_dataset(s, eid)
    for correction in ("holm", "bh", "none"):
        fast = compare_dataset(data, method=method, correction=correction)
        with monkeypatch.context() as m:
            m.setattr(Dataset, "rows", lambda self, keys: None)
            slow = compare_dataset(data, method=method, correction=correction)
        assert repr(fast) == repr(slow)
        changes = {c.verdict for c in fast.comparisons}
        assert len(changes) >= 2  # changes and no changes both present

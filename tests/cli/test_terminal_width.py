"""`perflab compare` fits the terminal: every line within COLUMNS (80, 100, 120) on real
stores, nothing left out without a line saying how to see it; warnings one line per kind
with a count, every one in full with --verbose and `perflab show ID --warnings`; each n/a
of the TLDR footnoted; the scaling table readable at any magnitude."""

from __future__ import annotations

import csv
import random
import re

import numpy as np
import pytest
from cli_helpers import perflab
from perflab.analysis.against_baseline import compare_dataset
from perflab.analysis.dataset import load_dataset
from perflab.report.warning_groups import full_lines, group_notes
from perflab.store import Database
from rich.cells import cell_len
from testdata import MGLRU_RUNS, mglru_import

WIDTHS = (80, 100, 120)


def _width_of(line: str) -> int:
    """Terminal columns (wcwidth-like: box drawing, arrows, µ and † are one column each)."""
    return cell_len(line)


def _fits(out: str, width: int) -> None:
    wide = [(_width_of(line), line) for line in out.splitlines() if _width_of(line) > width]
    assert not wide, f"{len(wide)} lines wider than {width}: {wide[:3]}"


@pytest.fixture(scope="module")
def mglru(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("mglru") / "t.db")
    r = perflab(
        "import",
        str(MGLRU_RUNS),
        "--store",
        db,
        *mglru_import("ops_per_sec:higher", "p99_latency_ms:lower"),
    )
    assert r.code == 0, r.err
    return db


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    """Two parameters, three variants with long names, three metrics (one in bytes ~3e9),
    outlying runs in the small cells, one run of a variant in the largest cells (n/a)."""
    tmp = tmp_path_factory.mktemp("messy")
    rng = random.Random(3)
    path = tmp / "runs.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "clients", "persistence_mode", "ops", "p99", "resident"])
        for clients in (1, 4, 16, 64):
            for mode in ("no-aof", "aof-everysec"):
                for variant, k in (
                    ("baseline", 1.0),
                    ("io-threads-4", 1.08),
                    ("io-uring-experimental", 0.97),
                ):
                    runs = 1 if (variant == "io-uring-experimental" and clients == 64) else 8
                    for r in range(runs):
                        spike = 3.0 if (r in (5, 6) and clients < 16) else 1.0
                        w.writerow(
                            [
                                variant,
                                clients,
                                mode,
                                1e5 * clients**0.5 * k * rng.gauss(1, 0.02) / spike,
                                0.2 * clients / k * rng.gauss(1, 0.03) * spike,
                                3e9 * rng.gauss(1, 0.01),
                            ]
                        )
    db = str(tmp / "m.db")
    r = perflab(
        "import", str(path), "--store", db, "--variant", "variant",
        "--param", "clients", "--param", "persistence_mode", "--baseline", "baseline",
        "--metric", "ops:higher:ops/s", "--metric", "p99:lower:ms",
        "--metric", "resident:lower:B",
    )  # fmt: skip
    assert r.code == 0, r.err
    return db


def _compare(monkeypatch, width: int, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    r = perflab("compare", *argv)
    assert r.code == 0, r.err
    return r.out


@pytest.mark.parametrize("width", WIDTHS)
def test_every_line_fits(monkeypatch, mglru, messy, width):
    for db in (mglru, messy):
        for extra in ((), ("--verbose",), ("--no-summary",)):
            _fits(_compare(monkeypatch, width, "1", "--store", db, *extra), width)
        monkeypatch.setenv("COLUMNS", str(width))
        _fits(perflab("show", "1", "--store", db, "--warnings").out, width)


def test_a_pipe_without_columns_is_80_wide(monkeypatch, messy):
    monkeypatch.delenv("COLUMNS", raising=False)
    _fits(perflab("compare", "1", "--store", messy).out, 80)


def test_nothing_is_cut_and_what_is_left_out_is_said(monkeypatch, mglru, messy):
    out = _compare(monkeypatch, 80, "1", "--store", mglru)
    assert "…" not in out  # no cell or header ellipsized
    for text in ("+[12.2, 16.2]%†", "-[20.0, 23.0]%", "48,573", "0.008363", "(geometric"):
        assert text in out
    # median, min and max are left out at 80 columns, and one line says how to see them
    said = " ".join(out.split())
    assert "median, min and max left out to fit 80 columns" in said
    assert "COLUMNS=120" in said and "--format markdown" in said
    wide = _compare(monkeypatch, 120, "1", "--store", mglru)
    assert "left out" not in wide and "median" in wide and "48,656" in wide
    # the messy store's metric columns are split over tables rather than cut
    out = _compare(monkeypatch, 80, "1", "--store", messy)
    assert "…" not in out.replace("; …", "")  # only the grouped warnings' "…"
    for header in ("ops_per_sec", "p99", "resident"):
        assert header.split("_")[0] in out


def _notes(db: str):
    with Database(db) as store:
        return compare_dataset(load_dataset(store, 1)).notes


def test_every_warning_in_full_with_verbose_and_show(monkeypatch, messy):
    notes = _notes(messy)
    lines = full_lines(notes)
    assert len(lines) > 20
    verbose = " ".join(_compare(monkeypatch, 100, "1", "--store", messy, "--verbose").split())
    monkeypatch.setenv("COLUMNS", "100")
    shown = " ".join(perflab("show", "1", "--store", messy, "--warnings").out.split())
    for n in notes:
        message = " ".join(n.warning.message.split())
        assert message in verbose and message in shown, message
    for line in lines:
        assert " ".join(line.split()) in shown
    assert shown.count("warning: ") == len(lines) == verbose.count("warning: ")


def test_grouped_warnings_count_each_kind(monkeypatch, messy):
    """The warnings that change the reading, one line per kind with its count; those
    that explain what perflab did (outlying runs, here) are left to --verbose."""
    from perflab.report.warning_groups import reading

    notes = _notes(messy)
    out = _compare(monkeypatch, 100, "1", "--store", messy)
    text = " ".join(out.split())
    warnings = text.split("warning: ")[1:]
    groups = group_notes(reading(notes))
    big = [g for g in groups if len({n.warning.message for n in g.notes}) > 2]
    assert big, "the messy store has kinds with many warnings"
    for g in big:
        counts = [int(m) for w in warnings for m in re.findall(r" × (\d+)", w.split(":")[0])]
        assert g.count in counts
        assert sum(1 for w in warnings if f" × {g.count}" in w.split(":")[0]) >= 1
    assert "too few runs × 30" in text and "outlying runs ×" not in text
    assert "° caveats perflab dealt with here: outlying runs" in text
    # fewer lines than warnings, and one line says how to see them all
    assert len(warnings) < len(full_lines(notes))
    assert f"{len(full_lines(notes))} warnings in all, each in full: add --verbose" in text
    assert "perflab show 1 --warnings" in text


def test_a_few_warnings_are_said_in_full(monkeypatch, mglru):
    """Those that change the reading; the others are marks and a line (--verbose)."""
    from perflab.report.warning_groups import reading

    text = " ".join(_compare(monkeypatch, 80, "1", "--store", mglru).split())
    for line in full_lines(reading(_notes(mglru))):
        assert " ".join(line.split()) in text
    assert "warnings in all" not in text
    verbose = " ".join(_compare(monkeypatch, 80, "1", "--store", mglru, "--verbose").split())
    for line in full_lines(_notes(mglru)):
        assert " ".join(line.split()) in verbose


def test_each_na_has_its_footnote(monkeypatch, messy):
    for width in WIDTHS:
        out = _compare(monkeypatch, width, "1", "--store", messy, "--no-summary")
        marks = set(re.findall(r"n/a([¹²³⁴⁵⁶⁷⁸⁹])", out))
        assert marks, out
        text = " ".join(out.split())
        for mark in marks:
            assert f"{mark} n/a: " in text
        assert (
            "¹ n/a: need ≥ 2 runs per variant for an interval (≥ 5 for a trustworthy one) "
            "(8 runs of baseline, 1 of io-uring-experimental)" in text
        )
    md = perflab("compare", "1", "--store", messy, "--format", "markdown").out
    assert "n/a¹" in md and "¹ n/a: need ≥ 2 runs per variant" in md


def _scaling_store(tmp_path, b: float, unit: str):
    """cost = a + b·keys (a = 1000·b) over 1K … 1G keys, 10 runs per size and variant."""
    rng = np.random.default_rng(5)
    path = tmp_path / "s.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "keys", "cost"])
        for label, n in {"1K": 1e3, "1M": 1e6, "100M": 1e8, "1G": 1e9}.items():
            for variant, k in (("old", 1.0), ("new", 1.05)):
                for _ in range(10):
                    w.writerow([variant, label, repr((1000 + k * n) * b * rng.normal(1, 0.005))])
    db = str(tmp_path / "s.db")
    r = perflab(
        "import", str(path), "--store", db, "--variant", "variant", "--param", "keys",
        "--baseline", "old", "--metric", f"cost:lower:{unit}" if unit else "cost:lower",
    )  # fmt: skip
    assert r.code == 0, r.err
    return db


@pytest.mark.parametrize(
    ("b", "unit", "expect"),
    [
        (1e-18, "s", "ps per key"),  # below ps: scientific notation in ps
        (2e-9, "s", "ns per key"),
        (3e3, "B", "kB per key"),
        (1e12, "", "per key"),
        (1e12, "widgets", "widgets per key"),
    ],
)
def test_scaling_table_reads_at_any_magnitude(tmp_path, monkeypatch, b, unit, expect):
    db = _scaling_store(tmp_path, b, unit)
    for width in (80, 120):
        out = _compare(monkeypatch, width, "1", "--store", db, "--scaling", "keys")
        _fits(out, width)
        numbers = re.findall(r"[-+]?\d[\d,.]*(?:e-?\d+)?", out)
        assert numbers and max(len(x) for x in numbers) <= 14, out  # no 100-digit values
        assert "nan" not in out.lower().replace("nano", "")
        assert " inf" not in out
        rows = [line for line in out.splitlines() if line.startswith("│")]
        assert rows and all("││" not in line for line in rows)  # no zero-width column
    wide = " ".join(_compare(monkeypatch, 200, "1", "--store", db, "--scaling", "keys").split())
    assert expect in wide, wide


def test_ls_never_elides_an_id_at_80_columns(tmp_path, monkeypatch):
    """Long names fold onto more lines; the id, the date, the status and the counts stay
    whole (an id was shrunk to '…' in every row of a team's store)."""
    from testdata import MGLRU_RUNS, mglru_import

    db = tmp_path / "ls.db"
    for k in range(12):
        name = f"kernel-bisect-router-bisect-step-{k}-a-long-name"
        r = perflab("import", str(MGLRU_RUNS), "--store", str(db), "--name", name,
                    *mglru_import("ops_per_sec:higher"))  # fmt: skip
        assert r.code == 0, r.err
    monkeypatch.setenv("COLUMNS", "80")
    out = perflab("ls", "--store", str(db)).out
    assert "…" not in out, out
    assert all(_width_of(line) <= 80 for line in out.splitlines()), out
    ids = {line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")}
    assert {str(i) for i in range(1, 13)} <= ids, ids
    # the name keeps room to be read (it was cut into 4-character pieces)
    pieces = [line.split("│")[2] for line in out.splitlines() if line.startswith("│")]
    assert min(len(p.strip()) for p in pieces if "kernel" in p) >= 12, out


def test_show_runs_never_hides_a_value_at_80_columns(tmp_path, monkeypatch):
    """Six metrics and the run's columns do not fit 80 columns in one table: the metrics
    go to a second table below (the run's columns again); no column shrinks to nothing,
    no value is elided."""
    from testdata import MGLRU_RUNS, mglru_import

    db = tmp_path / "runs.db"
    metrics = ("ops_per_sec:higher", "avg_latency_ms:lower", "p50_latency_ms:lower",
               "p99_latency_ms:lower", "p999_latency_ms:lower", "kb_per_sec:higher")  # fmt: skip
    r = perflab("import", str(MGLRU_RUNS), "--store", str(db), *mglru_import(*metrics))
    assert r.code == 0, r.err
    monkeypatch.setenv("COLUMNS", "80")
    out = perflab("show", "1", "--runs", "--store", str(db)).out
    assert "…" not in out, out
    assert all(_width_of(line) <= 80 for line in out.splitlines()), out
    for name in ("ops_per_sec", "kb_per_sec", "p999_latency_ms"):
        assert name in out.replace("\n", "").replace("│", "").replace(" ", ""), name
    runs = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert {str(i) for i in range(1, 41)} <= set(runs)


def test_show_runs_gives_a_failed_runs_reason_whole_under_the_table(tmp_path, monkeypatch):
    """A reason is a sentence: in a column beside the metrics it folded a character a
    line (and was cropped); it is a line of its own under the table, whole."""
    spec = tmp_path / "fails.toml"
    spec.write_text(
        'name = "fails"\nbaseline = "a"\nrepetitions = 2\n'
        '[[variant]]\nname = "a"\nparams = { code = 0 }\n'
        '[[variant]]\nname = "b"\nparams = { code = 3 }\n'
        '[[phase]]\nname = "work"\n'
        'command = "echo 1.5; echo the server at 127.0.0.1:11312 refused the connection '
        'of the load generator >&2; exit {code}"\n'
        '[[metric]]\nname = "t"\nregex = "([0-9.]+)"\nunit = "ms"\nbetter = "lower"\n'
    )
    db = tmp_path / "p.db"
    assert perflab("run", str(spec), "--store", str(db), "--no-compare").code in (0, 1)
    monkeypatch.setenv("COLUMNS", "80")
    out = perflab("show", "1", "--runs", "--store", str(db)).out
    assert all(_width_of(line) <= 80 for line in out.splitlines()), out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert rows and all("││" not in line for line in rows)
    tail = " ".join(out.split("└")[-1].split())
    for run in (line.split("│")[1].strip() for line in rows if "failed" in line):
        assert f"run {run}: phase:work: exited with status 3" in tail, tail
    assert "refused the connection of the load generator" in tail, tail


def test_ls_dates_are_as_ls_l_gives_them():
    """12 characters: the time within half a year of now, the year beyond (the room it
    leaves goes to the experiment's name)."""
    import datetime as dt

    from perflab.cli.ls import _created

    now = dt.datetime(2026, 11, 28, 22, 0).timestamp()
    recent = dt.datetime(2026, 11, 28, 21, 1).timestamp()
    old = dt.datetime(2025, 3, 2, 9, 5).timestamp()
    assert _created(recent, now) == "Nov 28 21:01"
    assert _created(old, now) == "Mar  2  2025"
    assert len(_created(old, now)) == len(_created(recent, now)) == 12

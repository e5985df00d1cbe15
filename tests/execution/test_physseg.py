"""The lookup-structure experiment's program (examples/physseg/physseg.c), compiled with gcc -O2
into a tmp dir: array and rbtree must find the same pages for the same seed, the checksum must
match an independent model driven by the same libc random(), and bad arguments must fail with
one line and exit 2."""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import json
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "examples" / "physseg" / "physseg.c"
MASK53 = (1 << 53) - 1
FNV_PRIME = 1099511628211
MAX_TOTAL_PAGES = 1 << 24


@pytest.fixture(scope="module")
def physseg(tmp_path_factory) -> Path:
    binary = tmp_path_factory.mktemp("physseg") / "physseg"
    build = subprocess.run(
        ["gcc", "-O2", "-std=c11", "-Wall", "-Wextra", "-o", str(binary), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    assert build.stderr == ""  # no warnings
    return binary


def run(binary: Path, *args: str) -> dict:
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


@pytest.mark.parametrize(("segments", "seed"), [(1, 1), (16, 1), (16, 42), (1000, 7), (100000, 3)])
def test_array_and_rbtree_find_the_same_pages(physseg, segments, seed):
    args = ["--lookups", "20000", "--segments", str(segments), "--seed", str(seed)]
    array = run(physseg, "--impl", "array", *args)
    rbtree = run(physseg, "--impl", "rbtree", *args)
    assert array["checksum"] == rbtree["checksum"]
    assert array["hits"] == rbtree["hits"] > 0
    for result, impl in ((array, "array"), (rbtree, "rbtree")):
        assert result["impl"] == impl
        assert (result["lookups"], result["segments"], result["seed"]) == (20000, segments, seed)
        assert result["pages"] >= segments and result["pfn_span"] > result["pages"]
        assert result["seconds"] > 0
        assert result["ns_per_lookup"] == pytest.approx(
            result["seconds"] * 1e9 / 20000, rel=1e-3, abs=1e-3
        )


def test_checksum_depends_on_seed_and_is_deterministic(physseg):
    a = run(physseg, "--impl", "array", "--lookups", "5000", "--seed", "1")
    again = run(physseg, "--impl", "array", "--lookups", "5000", "--seed", "1")
    other = run(physseg, "--impl", "array", "--lookups", "5000", "--seed", "2")
    assert a["checksum"] == again["checksum"] and a["hits"] == again["hits"]
    assert a["checksum"] != other["checksum"]


def test_overhead_draws_the_same_frames_without_lookups(physseg):
    overhead = run(physseg, "--impl", "overhead", "--lookups", "5000", "--seed", "9")
    array = run(physseg, "--impl", "array", "--lookups", "5000", "--seed", "9")
    assert overhead["impl"] == "overhead" and overhead["hits"] == 0
    assert overhead["pfn_span"] == array["pfn_span"]
    assert overhead["checksum"] != array["checksum"]


def _libc_random():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.random.restype = ctypes.c_long
    libc.srandom.argtypes = [ctypes.c_uint]
    return libc


def model(libc, lookups: int, k: int, seed: int, impl: str) -> dict:
    """The program's segment layout and lookup loop, re-done in Python on libc's random()."""
    libc.srandom(seed)
    avg = min(4096, MAX_TOTAL_PAGES // k)
    sizes = [1 + libc.random() % (2 * avg) for _ in range(k)]
    pfn = 16 + libc.random() % 256
    starts, ends, first = [], [], []
    before = 0
    for size in sizes:
        starts.append(pfn)
        ends.append(pfn + size)
        first.append(before)
        before += size
        pfn = pfn + size + libc.random() % (avg // 16 + 1)
    span = pfn
    libc.srandom((seed * 2654435761 + 1) & 0xFFFFFFFF)
    checksum = hits = 0
    for _ in range(lookups):
        frame = libc.random() % span
        if impl == "overhead":
            value = frame
        else:
            i = bisect.bisect_right(starts, frame) - 1
            if i >= 0 and frame < ends[i]:
                value = first[i] + (frame - starts[i]) + 1
                hits += 1
            else:
                value = 0
        checksum = (checksum * FNV_PRIME + value) & 0xFFFFFFFFFFFFFFFF
    return {
        "pages": before,
        "pfn_span": span,
        "hits": hits if impl != "overhead" else 0,
        "checksum": checksum & MASK53,
    }


@pytest.mark.parametrize(
    ("impl", "segments", "seed"),
    [("array", 5, 11), ("rbtree", 5, 11), ("rbtree", 300, 4), ("overhead", 8, 2)],
)
def test_checksum_matches_an_independent_model(physseg, impl, segments, seed):
    got = run(
        physseg,
        "--impl",
        impl,
        "--lookups",
        "3000",
        "--segments",
        str(segments),
        "--seed",
        str(seed),
    )
    expected = model(_libc_random(), 3000, segments, seed, impl)
    assert {k: got[k] for k in expected} == expected


def test_lookups_are_uniform_over_the_frame_range(physseg):
    """Frames are drawn over the span holes included: the hit rate is pages / span."""
    r = run(physseg, "--impl", "array", "--lookups", "200000", "--segments", "64", "--seed", "5")
    assert r["hits"] / r["lookups"] == pytest.approx(r["pages"] / r["pfn_span"], abs=0.01)
    assert r["hits"] < r["lookups"]  # some frames fall into holes


def test_equals_form_and_defaults(physseg):
    r = run(physseg, "--impl=rbtree", "--lookups=100")
    assert (r["segments"], r["seed"], r["lookups"]) == (16, 1, 100)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--lookups", "10"],
        ["--impl", "array"],
        ["--impl", "hash", "--lookups", "10"],
        ["--impl", "array", "--lookups", "-5"],
        ["--impl", "array", "--lookups", "0"],
        ["--impl", "array", "--lookups", "10x"],
        ["--impl", "array", "--lookups", ""],
        ["--impl", "array", "--lookups", "99999999999999999999999"],
        ["--impl", "array", "--lookups", "10", "--segments", "0"],
        ["--impl", "array", "--lookups", "10", "--segments", "2000000"],
        ["--impl", "array", "--lookups", "10", "--seed", "4294967296"],
        ["--impl", "array", "--lookups"],
        ["--impl", "array", "--lookups", "10", "--verbose"],
        ["--impl", "array", "--lookups", "10", "extra"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(physseg, args):
    proc = subprocess.run([str(physseg), *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("physseg: error: ")


def test_help(physseg):
    proc = subprocess.run([str(physseg), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: physseg --impl")

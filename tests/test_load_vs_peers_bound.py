"""The bound of benchmarks/load_vs_peers is fair only if its minimal client runs the row's
load: keys drawn as the row's are (memtier's G in the rows of memtier's flags), spread over
the key range as a load that draws every key afresh spreads them. It once cycled 8,192
uniform keys in every row, so the server found its items in cache and did less per
request under it than under the clients it is compared with, which lifted the bound.
The minimal client is compiled from the script and asked for its pre-built requests."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "load_vs_peers"

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None and shutil.which("cc") is None, reason="needs gcc"
)


@pytest.fixture(scope="module")
def lvp():
    loader = importlib.machinery.SourceFileLoader("load_vs_peers", str(SCRIPT))
    spec = importlib.util.spec_from_loader("load_vs_peers", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exe(lvp, tmp_path_factory):
    return lvp.build_minimal_client(tmp_path_factory.mktemp("minimal"))


def requests(exe, pattern: str, n: int, keymax: int = 100_000, ratio=(0, 1)) -> list[tuple]:
    """The minimal client's pre-built requests: (command, key number)."""
    argv = [str(exe), "127.0.0.1", "1", "memcache_binary", "0", "8", "1"]
    argv += [str(ratio[0]), str(ratio[1]), str(keymax), "100", "memtier-", pattern, str(n)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    out = [line.split() for line in done.stdout.splitlines()]
    return [(cmd, int(key.removeprefix("memtier-"))) for cmd, key in out]


def test_the_rows_of_memtiers_flags_draw_gaussian_keys(lvp):
    assert lvp.get_key_pattern(lvp.MEMTIER_FLAGS) == "G"
    assert lvp.get_key_pattern(["--key-pattern", "S:G"]) == "G"
    assert lvp.get_key_pattern(["--ratio", "1:10"]) == "R"  # memtier's default


def test_gaussian_keys_are_memtiers_g(lvp, exe):
    reqs = requests(exe, "G", lvp.MINIMAL_REQUESTS)
    keys = [k for _, k in reqs]
    assert len(keys) == lvp.MINIMAL_REQUESTS >= 2 * lvp.KEYS
    assert {c for c, _ in reqs} == {"get"}
    assert min(keys) >= 1 and max(keys) <= 100_000
    # memtier: median 99,999 / 2 + 1.5, sd 99,999 / 6 truncated at ±3 sd (0.9866 sd),
    # truncated to integers; the standard error of either is below 40 at 262,144 draws
    assert statistics.fmean(keys) == pytest.approx(50_000.5, abs=250)
    assert statistics.pstdev(keys) == pytest.approx(0.9866 * 99_999 / 6, abs=250)
    within_one_sd = sum(abs(k - 50_000.5) <= 99_999 / 6 for k in keys) / len(keys)
    assert within_one_sd == pytest.approx(0.683, abs=0.01)  # uniform keys: 0.333
    # spread as a load that draws afresh: the keys a load's first 262,144 requests touch
    assert len(set(keys)) > 60_000


def test_uniform_keys_stay_uniform_over_the_whole_range(lvp, exe):
    reqs = requests(exe, "R", lvp.MINIMAL_REQUESTS, ratio=(1, 10))
    keys = [k for _, k in reqs]
    assert min(keys) >= 1 and max(keys) <= 100_000
    assert statistics.fmean(keys) == pytest.approx(50_000.5, abs=250)
    assert statistics.pstdev(keys) == pytest.approx(100_000 / 12**0.5, abs=250)
    # 262,144 uniform draws over 100,000 keys leave e^-2.6 of them out: ~92,700 touched
    assert len(set(keys)) > 90_000
    sets = sum(c == "set" for c, _ in reqs) / len(reqs)
    assert sets == pytest.approx(1 / 11, abs=0.01)

"""Profiles with real perf: a small C program whose hot function is known per variant
(a: spin_common ×2 then spin_alpha; b: spin_common then spin_beta ×3), run under
`profile = true`. Its folded stacks are stored per run, the right names land in the right
variant's flame graph, spin_beta is the top mover (in the report and in compare --json),
the differential graph exists, and the HTML report's graphs run their search/zoom script
in headless Chromium under the page's policy.

perf must be able to sample here (cpu-clock at least): when it cannot, these tests fail
and say why — never skip.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import perflab as perflab_api
import pytest
from cli_helpers import perflab, write_spec
from perflab.observe.folded import parse_folded, shares
from perflab.observe.profile import ProfileError, phase_mode, read_host_perf
from perflab.report.browser import Browser
from perflab.store import Database

PROGRAM = r"""
#include <string.h>
volatile unsigned long sink;
__attribute__((noinline)) void spin_common(long n) { for (long i = 0; i < n; i++) sink += i * 3; }
__attribute__((noinline)) void spin_alpha(long n) { for (long i = 0; i < n; i++) sink += i ^ 5; }
__attribute__((noinline)) void spin_beta(long n) { for (long i = 0; i < n; i++) sink += i | 9; }
int main(int argc, char **argv) {
    long unit = 30000000;
    if (argc > 1 && strcmp(argv[1], "b") == 0) { spin_common(unit); spin_beta(3 * unit); }
    else { spin_common(2 * unit); spin_alpha(unit); }
    return 0;
}
"""

SPEC = """\
name = "spin-profiles"
baseline = "a"
repetitions = 3
profile = true

[[variant]]
name = "a"
env = { WHICH = "a" }
[[variant]]
name = "b"
env = { WHICH = "b" }

[[phase]]
name = "work"
command = "{spin} $WHICH"

[[metric]]
name = "wall_time"
better = "lower"
"""


def _perf_samples(tmp: Path) -> None:
    """Fail (never skip) when perf cannot sample on this machine."""
    perf = shutil.which("perf")
    if perf is None:
        pytest.fail("perf not found: install Debian's linux-perf (scripts/setup does)")
    data = tmp / "check.data"
    r = subprocess.run(
        [perf, "record", "-q", "-e", "cpu-clock", "-g", "-o", str(data), "--", "sleep", "0.1"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0 or not data.exists():
        pytest.fail(f"perf cannot sample here (perf record -e cpu-clock failed): {r.stderr[-500:]}")


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("profiles")
    _perf_samples(tmp)
    (tmp / "spin.c").write_text(PROGRAM)
    subprocess.run(
        ["gcc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", "spin", "spin.c"],
        cwd=tmp,
        check=True,
    )
    spec = write_spec(tmp, SPEC.replace("{spin}", str(tmp / "spin")))
    store = tmp / "s.db"
    r = perflab("run", str(spec), "--store", str(store), "--no-compare")
    assert r.code == 0, r.err
    return tmp, store


def _runs(store: Path) -> list[tuple[str, dict[str, int], dict[str, object]]]:
    with Database(store) as s:
        out = []
        for run in s.runs(1):
            blob = s.artifact(1, "profile:work", run.id)
            info = s.artifact(1, "profile-info:work", run.id)
            assert blob is not None and info is not None, f"run {run.id} has no profile"
            out.append(
                (run.variant, parse_folded(gzip.decompress(blob).decode()), json.loads(info))
            )
        return out


def test_each_run_keeps_its_folded_stacks_with_its_hot_function(experiment):
    _tmp, store = experiment
    runs = _runs(store)
    assert len(runs) == 6
    pmu = any(Path("/sys/bus/event_source/devices").glob("*/events/cpu[-_]cycles"))
    for variant, stacks, info in runs:
        assert info["event"] == ("cycles" if pmu else "cpu-clock")
        assert info["mode"] == "process" and info["samples"] == sum(stacks.values())
        own = shares(stacks).self_share
        hot, cold = ("spin_alpha", "spin_beta") if variant == "a" else ("spin_beta", "spin_alpha")
        assert own.get(hot, 0) > 0.15, (variant, own)
        assert cold not in own, (variant, own)


def test_spin_beta_is_the_top_mover_in_compare_json(experiment):
    _tmp, store = experiment
    r = perflab("compare", "1", "--store", str(store), "--json")
    assert r.code == 0, r.err
    movers = json.loads(r.out)["profile_movers"]
    top = movers[0]
    assert (top["function"], top["candidate"], top["phase"]) == ("spin_beta", "b", "work")
    assert top["significant"] and 0 < top["low"] <= top["change"] <= top["high"]
    alpha = next(m for m in movers if m["function"] == "spin_alpha")
    assert alpha["change"] < 0 and alpha["high"] < 0
    # the Python API answers the same question through the same use case
    frame = perflab_api.open(store).profile_movers(1)
    assert frame.to_dict("records") == movers


def test_markdown_report_writes_the_flame_graphs_beside_it(experiment):
    tmp, store = experiment
    md = tmp / "report.md"
    r = perflab("report", "1", "--store", str(store), "-o", str(md))
    assert r.code == 0, r.err
    text = md.read_text()
    files = {p.name: p.read_text() for p in (tmp / "report_files").glob("90-*.svg")}
    assert set(files) == {"90-flame-work-a.svg", "90-flame-work-b.svg", "90-diff-work-b.svg"}
    for name in files:
        assert f"report_files/{name}" in text
    assert "spin_alpha" in files["90-flame-work-a.svg"]
    assert "spin_beta" not in files["90-flame-work-a.svg"]
    assert "spin_beta" in files["90-flame-work-b.svg"]
    assert "spin_beta" in text.split("Top movers")[1].split("\n\n")[1].splitlines()[2]


def test_html_report_flame_graphs_are_searchable_and_zoomable_in_chromium(experiment):
    tmp, store = experiment
    html = tmp / "report.html"
    r = perflab("report", "1", "--store", str(store), "-o", str(html))
    assert r.code == 0, r.err
    with Browser() as b:
        page = b.open(html)
        assert page.clean, (page.console_errors, page.exceptions, page.failed_requests)
        assert b.evaluate("document.querySelectorAll('#profiles iframe').length") == 3
        first_mover = b.evaluate(
            "document.querySelector('#profiles table tbody tr td:nth-child(3)').textContent"
        )
        assert first_mover == "spin_beta"
        frames = [t for t in b.call("Target.getTargets")["targetInfos"] if t["type"] == "iframe"]
        assert len(frames) == 3
        seen = {}
        main = b._session
        try:
            for t in frames:
                b._session = b.call(
                    "Target.attachToTarget", {"targetId": t["targetId"], "flatten": True}
                )["sessionId"]
                title = b.evaluate("document.querySelector('#title').textContent")
                names = b.evaluate(
                    "[...document.querySelectorAll('#frames > g title')].map(t => t.textContent)"
                )
                # inferno's script ran (the page's policy allowed it) and a click zooms
                assert b.evaluate("typeof init") == "function"
                assert "hide" in b.evaluate(
                    "document.getElementById('unzoom').getAttribute('class')"
                )
                zoomed = b.evaluate(
                    "(() => { const g = [...document.querySelectorAll('#frames > g')]"
                    ".find(g => g.querySelector('title').textContent.startsWith('spin_common'));"
                    "g.dispatchEvent(new MouseEvent('click', {bubbles: true}));"
                    "return document.getElementById('unzoom').getAttribute('class'); })()"
                )
                assert "hide" not in (zoomed or "")
                seen[title] = " ".join(names)
        finally:
            b._session = main
    assert set(seen) == {"work · a", "work · b", "work · b vs a"}
    assert "spin_alpha" in seen["work · a"] and "spin_beta" not in seen["work · a"]
    assert "spin_beta" in seen["work · b"] and "spin_alpha" not in seen["work · b"]
    # the differential graph draws b's stacks, each coloured by its change against a
    grown = re.search(r"spin_beta \(\d+ samples, [0-9.]+%; \+([0-9.]+)%\)", seen["work · b vs a"])
    assert grown and float(grown.group(1)) > 10, seen["work · b vs a"]


class _Phase:
    def __init__(self, profile: object = None, measure: bool = True):
        self.profile, self.measure = profile, measure


class _Experiment:
    def __init__(self, profile: object = None):
        self.profile = profile


def test_which_phases_are_profiled_and_how():
    assert phase_mode(_Experiment(), _Phase()) is None
    assert phase_mode(_Experiment(), _Phase(), forced=True) == "process"
    assert phase_mode(_Experiment(), _Phase(measure=False), forced=True) is None
    assert phase_mode(_Experiment("system"), _Phase()) == "system"
    assert phase_mode(_Experiment(True), _Phase(False), forced=True) is None
    assert phase_mode(_Experiment(), _Phase("system", measure=False)) == "system"
    assert phase_mode(_Experiment("system"), _Phase(True)) == "system"


def test_what_perf_may_do_follows_perf_event_paranoid():
    root = read_host_perf("/usr/bin/perf\n2\n0\n\n", "h")
    assert (root.event, root.kernel, root.system) == ("cpu-clock", True, True)
    user = read_host_perf("/usr/bin/perf\n2\n1000\n/sys/x/events/cpu-cycles\n", "h")
    assert (user.event, user.kernel, user.system) == ("cycles", False, False)
    assert "sysctl kernel.perf_event_paranoid=1" in user.kernel_warning("h")
    assert read_host_perf("/usr/bin/perf\n1\n1000\n\n", "h").kernel
    with pytest.raises(ProfileError, match="paranoid = 3"):
        read_host_perf("/usr/bin/perf\n3\n1000\n\n", "h")
    with pytest.raises(ProfileError, match="linux-perf"):
        read_host_perf("\n2\n0\n\n", "h")


KV_SPEC = """\
name = "kv-system-profile"
baseline = "mc"
repetitions = 1
profile = "system"

[[variant]]
name = "mc"
[[variant]]
name = "mc-again"

[[service]]
name = "memcached"
port = "{free_port}"
command = "memcached -l 127.0.0.1 -p {port} -t 1 -m 64 -U 0 -u $(id -un)"
ready = "tcp://127.0.0.1:{port}"

[[phase]]
name = "access"
kv = { server = "127.0.0.1:{memcached_port}", protocol = "memcache_text", test_time = "0.5s", ratio = "1:1", clients = 2, threads = 1, key_max = 500 }

[[phase]]
name = "tail"
profile = false
command = "true"

[[metric]]
name = "ops_per_sec"
phase = "access"
better = "higher"
"""


def test_a_kv_phase_is_profiled_system_wide_with_the_server_in_it(tmp_path):
    _perf_samples(tmp_path)
    store = tmp_path / "kv.db"
    r = perflab("run", str(write_spec(tmp_path, KV_SPEC)), "--store", str(store), "--no-compare")
    assert r.code == 0, r.err
    with Database(store) as s:
        runs = s.runs(1)
        assert [x.status for x in runs] == ["ok", "ok"]
        for run in runs:
            names = [n for n, _ in s.artifact_names(1, run.id)]
            assert "profile:tail" not in names  # profile = false on the phase
            blob = s.artifact(1, "profile:access", run.id)
            info = json.loads(s.artifact(1, "profile-info:access", run.id) or b"{}")
            assert blob is not None and info["mode"] == "system"
            stacks = parse_folded(gzip.decompress(blob).decode())
            comms = {stack.split(";", 1)[0] for stack in stacks}
            # the server (its threads: mc-worker, …), not only perflab
            assert any(c == "memcached" or c.startswith("mc-") for c in comms), sorted(comms)


def test_the_command_line_mode_wins_over_the_spec_but_not_over_a_phase():
    assert phase_mode(_Experiment(True), _Phase(), forced="system") == "system"
    assert phase_mode(_Experiment(), _Phase(True), forced="system") == "system"
    assert phase_mode(_Experiment(), _Phase("process"), forced="system") == "process"
    assert phase_mode(_Experiment(False), _Phase(), forced="system") == "system"
    assert phase_mode(_Experiment(False), _Phase()) is None


# `perf script` of a MIPS router (a kernel that records no user call chains): the sample in
# memcached's own code has no frame at all, and `perf script -G` gives each sample's leaf.
MIPS_STACKS = """\
mc-worker   131/133      41.745549: cpu-clock:
\t        81ead324 kmem_cache_alloc ([kernel.kallsyms])
\t        81bead4c syscall_common ([kernel.kallsyms])

mc-worker   131/133      41.746468: cpu-clock:

swapper     0/0          41.747785: cpu-clock:
\t        81c1d2e0 __r4k_wait ([kernel.kallsyms])

"""
MIPS_LEAVES = """\
     41.745549:          81ead324 kmem_cache_alloc ([kernel.kallsyms])
     41.746468:          4a3f10 assoc_find (/usr/bin/memcached)
     41.747785:          81c1d2e0 __r4k_wait ([kernel.kallsyms])
"""


def test_a_sample_without_a_call_chain_is_folded_as_its_leaf():
    from perflab import _native

    assert _native.stackless_samples(MIPS_STACKS) == 1
    # folded alone, the stackless sample is lost
    alone = parse_folded(_native.fold_perf_script(MIPS_STACKS, annotate_kernel=True))
    assert sum(alone.values()) == 2
    filled = _native.fill_stackless(MIPS_STACKS, MIPS_LEAVES)
    assert _native.stackless_samples(filled) == 0
    folded = parse_folded(_native.fold_perf_script(filled, annotate_kernel=True))
    assert folded == {
        "mc-worker;syscall_common_[k];kmem_cache_alloc_[k]": 1,
        "mc-worker;assoc_find": 1,
        "swapper;__r4k_wait_[k]": 1,
    }


@pytest.mark.parametrize(
    "leaves, error",
    [
        (MIPS_LEAVES.replace("41.746468", "41.746469"), "sample 2 at 41.746468: but leaf at"),
        ("\n".join(MIPS_LEAVES.splitlines()[:2]), "2 lines for more samples"),
        (MIPS_LEAVES + "     41.8: 1 x (y)\n", "more lines than samples"),
    ],
)
def test_leaves_that_do_not_match_the_samples_are_refused(leaves, error):
    from perflab import _native

    with pytest.raises(ValueError, match=re.escape(error)):
        _native.fill_stackless(MIPS_STACKS, leaves)


PROFILE_ON_SPEC = """\
name = "profiled-elsewhere"
baseline = "a"

[hosts.router]
ssh = "root@127.0.0.1:1"

[[variant]]
name = "a"

[[phase]]
name = "access"
profile = "system"
profile_on = "router"
command = "true"

[[metric]]
name = "wall_time"
better = "lower"
"""


@pytest.mark.parametrize(
    ("edit", "line", "why"),
    [
        (('profile_on = "router"', 'profile_on = "routr"'), "profile_on", "unknown host 'routr'"),
        (('profile = "system"', 'profile = "process"'), "profile =", 'not profile = "process"'),
        (('profile = "system"', "profile = false"), "profile =", "not profile = false"),
    ],
    ids=["unknown-host", "process", "never"],
)
def test_a_phase_profiled_on_a_host_written_wrong_is_bad_input_at_its_line(
    tmp_path, edit, line, why
):
    text = PROFILE_ON_SPEC.replace(*edit)
    spec = write_spec(tmp_path, text)
    store = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(store))
    assert r.code == 2 and why in r.err, r.err
    at = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(line))
    assert f"{spec}:{at}:" in r.err and "Traceback" not in r.err
    assert not store.exists()  # nothing written


def test_a_phase_profiled_on_a_host_is_recorded_whole_there():
    class Phase(_Phase):
        profile_on = "router"

    assert phase_mode(_Experiment(), Phase(True)) == "system"
    assert phase_mode(_Experiment(), Phase()) is None  # where, not whether
    assert phase_mode(_Experiment(), Phase(), forced=True) == "system"

"""`perflab bisect`: the first commit that made a metric worse, found with experiments.

The end-to-end tests generate a real git repository of a small C program (a loop doing a
fixed amount of work, timed by the program itself with clock_gettime) whose history has a
planted slowdown — 50% more loop iterations (`TEST_SLOWDOWN`: one a noisy shared VM
cannot hide; benchmarks/bisect_trials bisects 8%) — entering at a known commit; the spec
builds each commit with gcc into a folder of its own in the variant's setup and runs it.
Timing noise is the machine's own (nothing pinned). benchmarks/bisect_trials runs many such
trials; here one or two (slow). The rest checks the parts on their own: the search, the
step file, the TOML it is written in, and the one-line errors."""

from __future__ import annotations

import json
import math
import tomllib

import pytest
from bisect_repo import TEST_SLOWDOWN, git, make_repo, write_spec
from cli_helpers import REPO, perflab
from perflab.commits.search import Search, expected_steps
from tomli_w import dumps

# -- end to end (real builds, real timing)


@pytest.mark.slow
def test_bisect_names_the_planted_commit(tmp_path):
    repo, good, bad, planted = make_repo(tmp_path, commits=16, planted=11, slowdown=TEST_SLOWDOWN)
    spec, db = write_spec(tmp_path), tmp_path / "perflab.db"
    r = perflab(
        "bisect", str(spec), "--good", good, "--bad", bad, "--repo", str(repo),
        "--store", str(db), "--json",
    )  # fmt: skip
    assert r.code == 0, r.err + r.out
    doc = json.loads(r.out)
    assert (doc["schema"], doc["status"]) == ("perflab.bisect/1", "found")
    assert doc["first_bad"]["id"] == planted, r.err
    assert doc["first_bad"]["subject"] == "commit 11: more work per call"
    assert abs(doc["steps_run"] - math.log2(16)) <= 1
    # every step right: a candidate at or after the planted commit holds the slowdown
    order = git(repo, "rev-list", "--reverse", "HEAD").split()
    for step in doc["steps"]:
        truth = "bad" if order.index(step["commit"]) >= order.index(planted) else "good"
        assert step["decision"] == truth, step
        # decided by the candidate's place between the ends, block by block; or, where
        # the precision target came first and the blocks could not tell, by the
        # comparisons against each end
        if step["position"]["side"] is not None:
            assert step["position"]["side"] == step["decision"], step
            assert f"on {step['decision']}'s side of the ends' mean" in step["why"]
        else:
            assert step["stop_reason"] in ("target_reached", "max_reached"), step
            assert "ends' mean" not in step["why"] and "than good" in step["why"], step
    assert any(s["position"]["side"] for s in doc["steps"]), doc["steps"]
    change = doc["change"]
    # the planted +50%, measured: its interval excludes no change and stays near it
    assert change["verdict"] == "worse" and change["low"] <= change["estimate"] <= change["high"]
    assert change["low"] > 0.05 and change["high"] < 1.0, change
    # every step is an ordinary experiment: `perflab compare` reads it
    last = doc["steps"][-1]["experiments"][-1]
    assert doc["change_experiment"] == last
    shown = perflab("compare", str(last), "--store", str(db))
    assert shown.code == 0 and "loop" in shown.out, shown.err
    listed = perflab("ls", "--store", str(db))
    assert "loop-bisect-step-1" in listed.out


@pytest.mark.slow
def test_a_candidate_that_does_not_build_is_skipped(tmp_path):
    """Commit 8 — the first candidate of 16 — does not compile: the next one nearest the
    middle is tried instead, and the bisect still names the planted commit."""
    repo, good, bad, planted = make_repo(
        tmp_path, commits=16, planted=4, broken=8, slowdown=TEST_SLOWDOWN
    )
    spec, db = write_spec(tmp_path, seed=2), tmp_path / "perflab.db"
    r = perflab(
        "bisect", str(spec), "--good", good, "--bad", bad, "--repo", str(repo),
        "--store", str(db),
    )  # fmt: skip
    assert r.code == 0, r.err + r.out
    lines = r.out.splitlines()
    assert lines[0].startswith("bisecting 16 commits after good")
    assert "commit 8: typo" in lines[1] and "→ skip: cannot be measured: setup:" in lines[2]
    assert "commit 7: tidy up" in lines[3]  # a neighbour nearest the middle (the lower)
    assert f"first bad commit: {planted} commit 4: more work per call" in r.out
    assert "5 steps (1 skipped) for 16 commits; ⌈log2(16)⌉ = 4" in r.out


@pytest.mark.slow
def test_a_stopped_bisect_goes_on_with_resume_without_measuring_again(tmp_path):
    """Stopped after its first step (--max-steps 1, as an interrupt would leave it), the
    same bisect with --resume reads that step back from the store — the same experiment,
    not run again — and goes on to the planted commit."""
    repo, good, bad, planted = make_repo(tmp_path, commits=8, planted=6, slowdown=TEST_SLOWDOWN)
    spec, db = write_spec(tmp_path, seed=3), tmp_path / "perflab.db"
    args = ("bisect", str(spec), "--good", good, "--bad", bad, "--repo", str(repo),
            "--store", str(db), "--json")  # fmt: skip
    first = perflab(*args, "--max-steps", "1")
    assert first.code == 1, first.err
    step1 = json.loads(first.out)["steps"][0]
    r = perflab(*args, "--resume")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["first_bad"]["id"] == planted
    assert doc["steps"][0]["experiments"] == step1["experiments"]  # read back, not run
    assert doc["steps"][0]["decision"] == step1["decision"]
    listed = json.loads(perflab("ls", "--json", "--store", str(db)).out)
    names = [e["name"] for e in listed]
    assert names.count("loop-bisect-step-1") == 1 and len(names) == doc["steps_run"] + sum(
        len(s["experiments"]) - 1 for s in doc["steps"]
    )


#: A bisect of values: each commit's file `value` read back by COMMAND (its metric "value").
VALUE_SPEC = """\
name = "{name}"
baseline = "build"
repetitions = {{ {repetitions} }}

[[variant]]
name = "build"
setup = "mkdir -p values counts && git -C {{repo}} show {{commit}}:value > values/{{commit}}"

[[phase]]
name = "read"
shell = false
command = "{command}"

[[metric]]
name = "value"
better = "lower"
regex = '([0-9.]+)'
"""
NOISE_READ = (
    "{python} -c 'import random, sys; random.seed(sys.argv[2]); "
    "print(float(open(sys.argv[1]).read()) * random.gauss(1, 0.05))' "
    "values/{{commit}} {{experiment}}-{{run}}"
)


def value_repo(tmp_path, values: list[str]):
    """A repository of one commit per value (file `value`); its commits, oldest first."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for k, value in enumerate(values):
        (repo / "value").write_text(value + "\n")
        (repo / "n").write_text(str(k))
        git(repo, "add", "value", "n")
        git(repo, "commit", "-q", "-m", f"commit {k}")
    return repo, git(repo, "rev-list", "--reverse", "HEAD").split()


@pytest.mark.slow
def test_a_change_the_noise_hides_stops_the_bisect_and_says_why(tmp_path):
    """Every commit prints the same value with 5% noise: after the most blocks the spec
    allows, bad is not significantly worse than good — exit 1, naming no commit. The noise
    is seeded by the run (experiment and position), so the verdict is the same every time:
    unseeded, the ends came out significantly apart by chance now and then (in none of 100
    bisects alone, in one run of the whole suite), which stops the bisect just as well but
    in other words."""
    import sys

    repo, _ = value_repo(tmp_path, ["100"] * 4)
    spec = tmp_path / "noise.toml"
    read = NOISE_READ.format(python=sys.executable)
    spec.write_text(
        VALUE_SPEC.format(
            name="noise", repetitions='min = 3, max = 4, target_ci = "1%"', command=read
        )
    )
    db = tmp_path / "perflab.db"
    r = perflab(
        "bisect", str(spec), "--good", "HEAD~3", "--bad", "HEAD", "--repo", str(repo),
        "--store", str(db),
    )  # fmt: skip
    assert r.code == 1, r.err + r.out
    assert "no first bad commit: step 1 (" in r.out
    assert "bad is not significantly different from good in this step" in r.out
    assert "(after 4 blocks); that is the most the spec allows" in r.out
    assert "it is one of 3 commits:" in r.out


#: Prints the commit's value (its file's first number) with 0.5% noise seeded by the run;
#: a file "V B K" prints B instead for the commit's first K runs: a burst.
BURST_SCRIPT = """\
import os, random, sys
value, seed, count = sys.argv[1:]
v = open(value).read().split()
n = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(n + 1))
x = float(v[1]) if len(v) > 1 and n < int(v[2]) else float(v[0])
random.seed(seed)
print(x * random.gauss(1, 0.005))
"""


@pytest.mark.slow
def test_a_candidate_a_burst_puts_between_the_ends_is_measured_again(tmp_path):
    """The first bad commit (200, as bad) measures 150 in its first 5 runs — halfway
    between the ends, as a burst of noise on a busy machine can put it: its first
    experiment reaches its target undecided ("spread over more than one commit"), and a
    second one, afresh and finer, finds it on bad's side; the bisect names it."""
    import sys

    repo, order = value_repo(tmp_path, ["100", "100", "100", "200 150 5", "200", "200"])
    script = tmp_path / "burst.py"
    script.write_text(BURST_SCRIPT)
    spec = tmp_path / "burst.toml"
    read = f"{sys.executable} {script} values/{{commit}} {{experiment}}-{{run}} counts/{{commit}}"
    spec.write_text(
        VALUE_SPEC.format(
            name="burst", repetitions='min = 5, max = 12, target_ci = "5%"', command=read
        )
    )
    db = tmp_path / "perflab.db"
    r = perflab(
        "bisect", str(spec), "--good", order[0], "--bad", order[-1], "--repo", str(repo),
        "--store", str(db), "--json",
    )  # fmt: skip
    assert r.code == 0, r.err + r.out
    doc = json.loads(r.out)
    assert doc["first_bad"]["id"] == order[3], r.err
    burst = next(s for s in doc["steps"] if s["commit"] == order[3])
    assert len(burst["experiments"]) == 2, burst
    # the first: between the ends at its target, as a spread change would be
    from perflab.api.bisect_verdict import read_step

    first = read_step(str(db), burst["experiments"][0], "value", "lower")
    assert (first.decision, first.stop_reason) == ("undecided", "target_reached"), first.why
    assert "spread over more than one commit" in first.why
    # the second: to half the first's target (a third of the ~100% change the step
    # before it measured), and on bad's side
    before = doc["steps"][doc["steps"].index(burst) - 1]
    assert burst["target_ci"] == pytest.approx(before["bad_vs_good"]["estimate"] / 3 / 2)
    assert burst["decision"] == "bad" and burst["position"]["side"] == "bad", burst
    names = {
        e["id"]: e["name"] for e in json.loads(perflab("ls", "--json", "--store", str(db)).out)
    }
    k = doc["steps"].index(burst) + 1
    assert [names[e] for e in burst["experiments"]] == [
        f"burst-bisect-step-{k}",
        f"burst-bisect-step-{k}-try2",
    ]


# -- the parts


def test_the_decision_rule():
    from perflab.api.bisect_verdict import Change, decide

    def rule(vs_good: str, vs_bad: str, ends: str = "worse") -> str:
        return decide(Change(None, vs_good), Change(None, vs_bad), Change(None, ends))[0]

    assert rule("worse", "ns") == rule("worse", "worse") == "bad"
    assert rule("ns", "better") == rule("better", "better") == "good"
    assert rule("ns", "ns") == rule("worse", "better") == rule("undefined", "ns") == "undecided"
    assert rule("worse", "ns", ends="ns") == rule("ns", "better", ends="better") == "no_regression"
    why = decide(Change(None, "worse"), Change(None, "better"), Change(None, "worse"))[1]
    assert why.startswith("worse than good but better than bad: the change looks spread")


@pytest.mark.parametrize(
    ("at_candidate", "decision"),
    [(0.074, "bad"), (0.0064, "good"), (0.04, "undecided"), (0.09, "bad"), (-0.001, "good")],
)
def test_a_candidate_between_the_ends_is_decided_by_its_share_of_the_regression(
    at_candidate, decision
):
    """Worse than good and better than bad at once: a sliver of an 8% regression on one
    side is noise called significant (one step in twenty at 95%), half of it a spread
    change; the share decides (`MOST`)."""
    from types import SimpleNamespace

    from perflab.api.bisect_verdict import MOST, Change, decide

    def change(estimate: float, verdict: str) -> Change:
        return Change(SimpleNamespace(relative=True, estimate=estimate), verdict)  # type: ignore[arg-type]

    got, why = decide(change(at_candidate, "worse"), change(0, "better"), change(0.08, "worse"))
    assert got == decision, why
    share = at_candidate / 0.08
    assert (share >= MOST) == (got == "bad") and (share <= 1 - MOST) == (got == "good")
    assert f"{max(share, 0):.0%} of" in why


def test_a_step_undecided_at_its_target_runs_once_more_finer():
    """Undecided at its target: once more, to the finer of what the measured change asks
    (a third of it) and half the target; never at the spec's most blocks, never a third
    time, never once decided."""
    from types import SimpleNamespace

    from perflab.api.bisect_verdict import Change, StepEvidence
    from perflab.api.bisecting import retry_target

    def evidence(decision: str, stop: str, ends: float | None = 0.5) -> StepEvidence:
        measured = None if ends is None else SimpleNamespace(relative=True, estimate=ends)
        change = Change(measured, "worse")  # type: ignore[arg-type]
        none = Change(None, "ns")
        return StepEvidence(1, {}, {}, none, none, change, 5, stop, decision, "")

    undecided = evidence("undecided", "target_reached")
    assert retry_target(undecided, 0.164, 1) == pytest.approx(0.082)  # half its own
    assert retry_target(undecided, 0.5, 1) == pytest.approx(0.5 / 3)  # the change's third
    assert retry_target(evidence("undecided", "target_reached", None), 0.02, 1) == 0.01
    assert retry_target(evidence("undecided", "target_reached", 0.0), 0.0008, 1) == 0.0005
    assert retry_target(undecided, 0.164, 2) is None
    assert retry_target(evidence("undecided", "max_reached"), 0.164, 1) is None
    for decided in ("bad", "good", "skip", "no_regression"):
        assert retry_target(evidence(decided, "target_reached"), 0.164, 1) is None


def test_the_search_halves_the_range_and_skips_like_git_bisect():
    s = Search(16)
    assert (s.next(), expected_steps(16)) == (7, 4)
    s.mark(7, "good")
    assert s.next() == 11
    s.mark(11, "skip")
    assert s.next() == 10  # nearest the middle (11) after it, the lower one on a tie
    s.mark(10, "bad")
    s.mark(s.next() or 0, "bad")  # 8
    assert s.next() is None and s.found and (s.good, s.bad) == (7, 8)
    stuck = Search(3)
    stuck.mark(1, "skip")
    stuck.mark(0, "good")
    assert stuck.stuck and stuck.suspects == [1, 2]
    assert Search(1).found and expected_steps(1) == 0 and expected_steps(15) == 4


def test_steps_for_every_planted_position_are_within_one_of_log2():
    for size in (2, 5, 16, 17, 100):
        for first_bad in range(size):
            s, steps = Search(size), 0
            while not s.found:
                i = s.next()
                assert i is not None
                s.mark(i, "bad" if i >= first_bad else "good")
                steps += 1
            assert s.bad == first_bad
            assert abs(steps - math.log2(size)) <= 1


def test_step_files_read_back_as_written():
    for spec in sorted((REPO / "examples").glob("*.toml")):
        data = tomllib.loads(spec.read_text())
        assert tomllib.loads(dumps(data)) == data, spec
    odd = {"a": 'quote " back\\slash \x7f\x01 tab\t\nnew', "b c": [1.5, float("inf")], "t": {}}
    assert tomllib.loads(dumps(odd)) == odd


def test_the_step_experiment_keeps_the_users_file_and_sets_the_commits(tmp_path):
    from perflab.api.bisect_spec import read_spec, step_spec

    spec = write_spec(tmp_path, name="x" * 64)
    read = read_spec(spec, None)
    assert (read.metric, read.better, read.design.max_blocks) == ("loop", "lower", 40)
    ids = {"good": "a" * 40, "candidate": "b" * 40, "bad": "c" * 40}
    step = step_spec(read, 12, ids, {"candidate": "fix it"}, tmp_path, 0.0123, attempt=2)
    m = step.model
    assert m.name == "x" * 44 + "-bisect-step-12-try2" and len(m.name) == 64
    assert m.baseline == "good" and [v.name for v in m.variant] == ["good", "candidate", "bad"]
    assert m.variant[1].params == {"commit": "b" * 40, "repo": str(tmp_path)}
    assert m.variant[1].description == "fix it" and m.variant[0].setup == m.variant[2].setup
    assert m.adaptive is not None and m.adaptive.metrics == ["loop"]
    assert (m.adaptive.min, m.adaptive.max, m.adaptive.target_ci) == (5, 40, 0.0123)
    assert [p.name for p in m.phase] == ["loop"] and step.path == spec


def test_a_kernel_variant_boots_the_kernel_built_from_the_candidate(tmp_path):
    """``{commit}`` in a variant's ``kernel`` (and ``cmdline``): each step's variants name
    the kernel release built from their own commit, which their host boots and verifies."""
    from perflab.api.bisect_spec import read_spec, step_spec

    spec = write_spec(tmp_path)
    text = spec.read_text().replace(
        'name = "build"',
        'name = "build"\non = "dut"\nkernel = "6.1.0-bisect-{commit}"\ncmdline = "src={repo}"',
        1,
    )
    spec.write_text(
        text.replace("[[variant]]", '[hosts.dut]\nssh = "root@127.0.0.1"\n\n[[variant]]', 1)
    )
    ids = {"good": "a" * 40, "candidate": "b" * 40, "bad": "c" * 40}
    step = step_spec(read_spec(spec, None), 1, ids, {}, tmp_path, 0.02)
    kernels = {v.name: (v.kernel, v.cmdline) for v in step.model.variant}
    assert kernels == {
        name: (f"6.1.0-bisect-{commit}", f"src={tmp_path}") for name, commit in ids.items()
    }


@pytest.mark.parametrize(("pool", "first"), [(None, 5), (2, 6), (3, 6), (16, 16)])
def test_a_step_on_a_pool_starts_with_whole_rounds_of_blocks(tmp_path, pool, first):
    """On a pool of N devices a step's first blocks are a multiple of N (N blocks take the
    time of one), never past its maximum; on one device, the file's minimum (5)."""
    from perflab.api.bisect_spec import read_spec, step_spec

    spec = write_spec(tmp_path)
    if pool is not None:
        host = f'[hosts.dut]\nssh = "root@127.0.0.1:222{{slot}}"\npool = {pool}\n\n'
        spec.write_text(spec.read_text().replace("[[variant]]", host + "[[variant]]", 1))
    ids = {"good": "a" * 40, "candidate": "b" * 40, "bad": "c" * 40}
    adaptive = step_spec(read_spec(spec, None), 1, ids, {}, tmp_path, 0.02).model.adaptive
    assert adaptive is not None and (adaptive.min, adaptive.max) == (first, 40)


def test_bad_input_is_one_line_before_anything_runs(tmp_path):
    repo, good, bad, _ = make_repo(tmp_path, commits=3, planted=2)
    spec, db = write_spec(tmp_path), tmp_path / "perflab.db"
    common = ("--repo", str(repo), "--store", str(db))
    cases = [
        (("--good", "nope", "--bad", bad), "--good 'nope': no such commit in"),
        (("--good=--output=x", "--bad", bad), "--good '--output=x': not a revision"),
        (("--good", bad, "--bad", good), "is not an ancestor of --bad"),
        (("--good", good, "--bad", good), "the same commit"),
        (("--good", good, "--bad", bad, "--metric", "rss"), "--metric rss: not a metric of"),
    ]
    for args, said in cases:
        r = perflab("bisect", str(spec), *args, *common)
        assert r.code == 2 and said in r.err and r.err.count("\n") == 1, (args, r.err)
    plain = tmp_path / "plain.toml"
    plain.write_text(
        'name = "p"\nbaseline = "a"\n[[variant]]\nname = "a"\n[[phase]]\nname = "x"\n'
        'command = "true"\n[[metric]]\nname = "wall_time"\nbetter = "lower"\n'
    )
    r = perflab("bisect", str(plain), "--good", good, "--bad", bad, *common)
    assert r.code == 2 and "no command names {commit}" in r.err
    typo = tmp_path / "typo.toml"  # a file that does not load alone: its own error, its line
    typo.write_text(spec.read_text().replace('command = "builds', 'comand = "builds'))
    r = perflab("bisect", str(typo), "--good", good, "--bad", bad, *common)
    assert r.code == 2 and f"{typo}:14: unknown key 'comand'" in r.err, r.err
    r = perflab("bisect", str(spec), "--good", good, "--bad", bad, "--max-steps", "0", *common)
    assert r.code == 2 and "expected a whole number ≥ 1" in r.err
    once = tmp_path / "once.toml"  # {commit} where it would be one value for three variants
    once.write_text(
        spec.read_text().replace("[[variant]]", 'before_all = "make C={commit}"\n[[variant]]', 1)
    )
    r = perflab("bisect", str(once), "--good", good, "--bad", bad, *common)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "'{commit}' is a variant's parameter; before_all runs once" in r.err, r.err
    git(repo, "checkout", "-q", "HEAD")
    (repo / "prog.c").write_text((repo / "prog.c").read_text() + "/* local edit */\n")
    r = perflab("bisect", str(spec), "--good", good, "--bad", bad, *common)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "uncommitted changes (1 file, e.g. prog.c)" in r.err, r.err
    assert not db.exists()  # nothing ran, nothing was stored

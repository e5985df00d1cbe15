"""Every kind of bad experiment file gives one line: file:line, what is wrong, a hint."""

from __future__ import annotations

import pytest
from cli_helpers import perflab, write_spec
from testdata import MINIMAL_SPEC as GOOD  # the one minimal valid spec


def error_of(tmp_path, text: str) -> str:
    spec = write_spec(tmp_path, text)
    r = perflab("run", str(spec), "--dry-run", "--store", str(tmp_path / "db"))
    assert r.code == 2, r
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got: {r.err!r}"
    assert "Traceback" not in r.err
    return lines[0].replace(str(spec), "SPEC")


def test_good_spec_dry_run_prints_plan(tmp_path):
    r = perflab("run", str(write_spec(tmp_path, GOOD)), "--dry-run")
    assert r.code == 0, r.err
    assert r.out.startswith("demo: 12 runs (12 measured, 0 warm-up), order interleaved")
    assert len([l for l in r.out.splitlines() if "block" in l]) == 12


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            ("repetitions = 3", "repetitons = 3"),
            "perflab: error: SPEC:3: unknown key 'repetitons' in the top level (did you mean 'repetitions'?)",
        ),
        (
            ('name = "b"', 'name = "b"\nsetpu = "x"'),
            "perflab: error: SPEC:12: unknown key 'setpu' in [[variant]] #2 'b' (did you mean 'setup'?)",
        ),
        (
            ("repetitions = 3", 'repetitions = "ten"'),
            "perflab: error: SPEC:3: repetitions: Input should be a valid integer, unable to parse string as an integer, got 'ten'",
        ),
        (
            ('baseline = "a"', 'baseline = "c"'),
            "perflab: error: SPEC:2: baseline 'c' is not a variant (choose from: a, b)",
        ),
        (
            ('baseline = "a"', 'baseline = "bb"'),
            "perflab: error: SPEC:2: baseline 'bb' is not a variant (did you mean 'b'?)",
        ),
        (
            ("repetitions = 3", 'repetitions = 3\ntimeout = "10 parsecs"'),
            'perflab: error: SPEC:4: timeout: bad duration \'10 parsecs\' (use e.g. "30s", "500ms", "2m", "1h30m")',
        ),
        (
            ('command = "echo {size}"', 'command = "echo {sise}"'),
            "perflab: error: SPEC:15: unknown parameter '{sise}' (did you mean 'size'? (write {{ }} for literal braces))",
        ),
        (
            ('better = "lower"', 'better = "smaller"'),
            "perflab: error: SPEC:19: metric[1].better: Input should be 'higher' or 'lower', got 'smaller'",
        ),
        (
            ('[[variant]]\nname = "b"\n', '[[variant]]\nname = "a"\n'),
            "perflab: error: SPEC:11: duplicate variant name 'a'",
        ),
        (("size = [1, 2]", "size = [1, 2"), None),  # TOML syntax error: checked separately below
    ],
)
def test_bad_spec_one_line_error(tmp_path, change, expected):
    old, new = change
    assert old in GOOD
    msg = error_of(tmp_path, GOOD.replace(old, new, 1))
    if expected is not None:
        assert msg == expected
    else:
        assert msg == "perflab: error: SPEC:8: invalid TOML: Unclosed array"


def test_missing_required_key(tmp_path):
    msg = error_of(tmp_path, GOOD.replace('baseline = "a"\n', ""))
    assert msg == "perflab: error: SPEC: missing required key 'baseline' in the top level"


def test_metric_without_source(tmp_path):
    msg = error_of(tmp_path, GOOD.replace('name = "wall_time"', 'name = "throughput"'))
    assert msg.startswith("perflab: error: SPEC:17: metric 'throughput' has no source")


def test_metric_names_unknown_phase(tmp_path):
    msg = error_of(tmp_path, GOOD.replace('better = "lower"', 'better = "lower"\nphase = "wrk"'))
    assert (
        msg
        == "perflab: error: SPEC:20: metric 'wall_time' names unknown phase 'wrk' (did you mean 'work'?)"
    )


def test_unknown_parser(tmp_path):
    msg = error_of(
        tmp_path, GOOD.replace('command = "echo {size}"', 'command = "x"\nparser = "memtir"')
    )
    assert msg == "perflab: error: SPEC:16: unknown parser 'memtir' (did you mean 'memtier'?)"


def test_phase_needs_command_or_kv(tmp_path):
    msg = error_of(tmp_path, GOOD.replace('command = "echo {size}"\n', ""))
    assert (
        msg
        == "perflab: error: SPEC:13: phase 'work' needs exactly one of 'command', 'kv' or 'probe'"
    )


def test_variant_only_parameter_used_by_common_phase(tmp_path):
    text = GOOD.replace(
        '[[variant]]\nname = "a"', '[[variant]]\nname = "a"\nparams = { level = 1 }'
    )
    text = text.replace('command = "echo {size}"', 'command = "echo {level}"')
    msg = error_of(tmp_path, text)
    assert msg.startswith("perflab: error: SPEC:16: unknown parameter '{level}' for variant 'b'")


def test_missing_file(tmp_path):
    r = perflab("run", str(tmp_path / "nope.toml"), "--dry-run")
    assert r.code == 2
    assert r.err.strip() == f"perflab: error: experiment file not found: {tmp_path / 'nope.toml'}"


def test_several_problems_reports_first_and_count(tmp_path):
    text = GOOD.replace("repetitions = 3", 'repetitions = "x"').replace(
        'better = "lower"', 'better = "up"'
    )
    msg = error_of(tmp_path, text)
    assert msg.startswith("perflab: error: SPEC:3: repetitions:")
    assert msg.endswith("(and 1 more problem)")

"""Units of the spec layer: substitution, key locations, plans, durations, interval text."""

from __future__ import annotations

import subprocess

import pytest
from perflab.durations import parse_duration
from perflab.plan import expand_matrix, make_plan
from perflab.report.numbers import fmt_number, fmt_pct_interval
from perflab.spec import parse_spec
from perflab.spec.locate import key_lines
from perflab.spec.template import placeholders, render_shell, render_value
from perflab.stats import Comparison


@pytest.mark.parametrize(
    "value", ["plain", "two words", "it's", '"; rm -rf / #', "$(reboot)", "a\nb", "", 7, 2.5]
)
def test_shell_substitution_is_quoted(value):
    cmd = render_shell("printf '%s' {v}", {"v": value})
    out = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True, check=True).stdout
    assert out == (str(value) if not isinstance(value, float) else "2.5")


def test_braces_that_are_not_parameters_are_left_alone():
    text = "awk '{print $1}' ${HOME} {{literal}} {x}"
    assert placeholders(text) == ["x"]
    assert render_shell(text, {"x": 1}) == "awk '{print $1}' ${HOME} {literal} 1"


def test_typed_substitution_keeps_types():
    assert render_value("{keys}", {"keys": 2000000}) == 2000000
    assert render_value(
        {"server": "127.0.0.1:{port}", "n": ["{k}"]}, {"port": 11211, "k": True}
    ) == {"server": "127.0.0.1:11211", "n": [True]}


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("20s", 20),
        ("500ms", 0.5),
        ("1m30s", 90),
        ("2h", 7200),
        (3, 3),
        ("1.5 s", 1.5),
        ("250us", 0.00025),
        ("10", 10),  # bare seconds, as memtier's --test-time 10
        ("2.5", 2.5),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "10x", "-10", "10 parsecs", "s", "-5s", 0, True, "5s junk"])
def test_bad_durations(bad):
    if bad == "10":  # a bare number in a string is not a duration: units are required in strings
        with pytest.raises(ValueError):
            parse_duration(bad)
        return
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_key_lines_handle_strings_comments_and_nesting():
    text = '''a = "x = 1 # not a key"   # comment
b = """
c = 2
"""
[t]
"quoted.key" = 1
d.e = { f = [1, { g = 2 }], h = 'i' }
[[arr]]
x = 1
[[arr]]
x = 2
'''
    lines = key_lines(text)
    assert lines[("a",)] == 1 and lines[("b",)] == 2 and ("c",) not in lines
    assert lines[("t", "quoted.key")] == 6
    assert lines[("t", "d", "e", "f", 1, "g")] == 7 and lines[("t", "d", "e", "h")] == 7
    assert lines[("arr", 0, "x")] == 9 and lines[("arr", 1, "x")] == 11


SPEC = """
name = "p"
baseline = "a"
repetitions = 3
warmup = 1
order = "{order}"
[matrix]
x = [1, 2]
y = {{ lo = 10, hi = 20 }}
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "w"
command = "true"
[[metric]]
name = "wall_time"
better = "lower"
"""


def test_matrix_product_first_parameter_slowest_and_labels():
    cells = expand_matrix({"x": [1, 2], "y": {"lo": 10, "hi": 20}})
    assert [c.key for c in cells] == ["x=1,y=lo", "x=1,y=hi", "x=2,y=lo", "x=2,y=hi"]
    assert cells[1].values == {"x": 1, "y": 20} and cells[1].labels == {"x": "1", "y": "hi"}


def test_sequential_plan_order():
    plan = make_plan(parse_spec(SPEC.format(order="sequential")).model)
    assert len(plan) == 4 * 2 * 4
    first = [(r.cell.key, r.variant, r.repetition, r.warmup) for r in plan[:5]]
    assert first == [
        ("x=1,y=lo", "a", 1, True),
        ("x=1,y=lo", "a", 1, False),
        ("x=1,y=lo", "a", 2, False),
        ("x=1,y=lo", "a", 3, False),
        ("x=1,y=lo", "b", 1, True),
    ]
    assert [r.order_index for r in plan] == list(range(len(plan)))


def test_interleaved_plan_changes_with_seed_only():
    m = parse_spec(SPEC.format(order="interleaved")).model
    p1 = [(r.cell.key, r.variant) for r in make_plan(m)]
    p2 = [(r.cell.key, r.variant) for r in make_plan(m)]
    p3 = [(r.cell.key, r.variant) for r in make_plan(m.model_copy(update={"seed": 2}))]
    assert p1 == p2 and p1 != p3
    assert sorted(p1) == sorted(p3)


def _cmp(lo, hi):
    return Comparison("welch", 0.95, 10, 10, 1.0, 1.0, (lo + hi) / 2, lo, hi, 0.01)


@pytest.mark.parametrize(
    "lo, hi, text",
    [
        (0.12220, 0.16207, "+[12.2, 16.2]%"),
        (-0.22963, -0.20032, "-[20.0, 23.0]%"),
        (-0.0098, 0.0008, "[-1.0, +0.1]%"),
        (0.16, 0.17, "+[16.0, 17.0]%"),
        (0.100001, 0.100049, "+[10.000, 10.005]%"),  # more decimals until the bounds differ
    ],
)
def test_interval_text(lo, hi, text):
    assert fmt_pct_interval(_cmp(lo, hi)) == text


@pytest.mark.parametrize(
    "x, text",
    [
        (48550.71, "48,551"),
        (812.345, "812.3"),
        (8.43476, "8.435"),
        (0.004599, "0.004599"),
        (0.0, "0"),
        (float("nan"), "–"),
        (1.2e-7, "1.200e-07"),
    ],
)
def test_numbers_read_at_a_glance(x, text):
    assert fmt_number(x) == text


def test_json_metric_found_after_log_lines_even_when_pretty_printed():
    from perflab.execution.metrics import MetricExtractionError, PhaseOutput, extract
    from perflab.spec.schema import MetricSpec

    m = MetricSpec.model_validate({"name": "x", "better": "higher", "json": "result.items[1]"})
    text = 'starting...\nwarming up\n{\n  "result": {"items": [3, 7.5]}\n}\n'
    assert extract(m, PhaseOutput(text, "", {}, {})) == 7.5
    assert extract(m, PhaseOutput('{"result": {"items": [1, 2]}}', "", {}, {})) == 2
    with pytest.raises(MetricExtractionError, match="stdout is not JSON"):
        extract(m, PhaseOutput("no json here\n", "", {}, {}))

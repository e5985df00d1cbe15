"""Runs on a fleet of devices, validated by simulation (`sim_fleet.py`): the change within
devices (`perflab.stats.devices`) against ignoring the device and against one board.

Each configuration — a noise family × 2 or 4 boards (factors uniform in ±5%) × 10 runs per
variant × a layout (balanced blocks, or the variants spread unequally over the boards) —
gets 2,000 seeded A/A experiments and 2,000 with a true +4% change. Asserted, with
SE = √(0.05·0.95/2000) = 0.49 points:

- the device-blocked comparison keeps A/A false positives within 5% ± 3·SE and covers the
  true change ≥ 95% − 3·SE of the time, and every experiment obeys the invariants of
  `sim_fleet.check` (every method's, here);
- balanced: its power is at least one board's with Welch, and within 7 points of one
  board's with the default method (the price of comparing only runs of the same board: 2–6
  points on heavy tails with 4 boards and 10 runs; none on normal runs);
- ignoring the device: when the variants' runs sit unequally on the boards, false
  positives far above 5% (a false change); when they sit equally, fewer false positives
  than 5% and less power (the boards' differences become noise).

`.venv/bin/python -m tests.stats.test_fleet_validation [--experiments N]` prints the tables
of docs/statistics.md (2, 3 and 4 boards × 10 and 30 runs; the docs' table is
``--experiments 4000``).
"""

from __future__ import annotations

import argparse
import math

import pytest

from tests.stats import sim_fleet
from tests.stats.test_device_spread import named_rate

COUNT = 2000
SE = math.sqrt(0.05 * 0.95 / COUNT)
CASES = [
    (family, kind, boards)
    for family in sim_fleet.FAMILIES
    for kind in sim_fleet.LAYOUTS
    for boards in (2, 4)
]


#: Lower bounds where the rank test is discrete: one run in ten throttled, 10 runs spread
#: 3-3-2-2 against 2-2-3-3 over 4 boards — the throttled runs go to van Elteren's exact
#: test over few pairs per board, which cannot use all of its 5% (3.0% at 4,000 runs).
LOWER = {("contaminated", "unbalanced", 4): 0.02}


@pytest.mark.parametrize(("family", "kind", "boards"), CASES)
def test_within_devices_false_positives_and_coverage(family, kind, boards):
    r = sim_fleet.rates("devices", family, kind, boards, 10, COUNT)
    low = LOWER.get((family, kind, boards), 0.05 - 3 * SE)
    assert low <= r["false_positive"] <= 0.05 + 3 * SE, r
    assert r["coverage"] >= 0.95 - 3 * SE, r


@pytest.mark.parametrize("family", sim_fleet.FAMILIES)
def test_power_against_one_board(family):
    fleet = sim_fleet.rates("devices", family, "balanced", 4, 10, COUNT)["power"]
    welch = sim_fleet.rates("one-board-welch", family, "balanced", 4, 10, COUNT)["power"]
    default = sim_fleet.rates("one-board", family, "balanced", 4, 10, COUNT)["power"]
    assert fleet >= welch - 3 * SE
    assert fleet >= default - (3 * SE if family in ("normal", "skewed") else 0.07)


@pytest.mark.parametrize("method", ["welch", "auto"])
def test_ignoring_the_device(method):
    unbalanced = sim_fleet.rates(method, "normal", "unbalanced", 2, 30, COUNT)
    assert unbalanced["false_positive"] > 0.10
    balanced = sim_fleet.rates(method, "normal", "balanced", 4, 30, COUNT)
    fleet = sim_fleet.rates("devices", "normal", "balanced", 4, 30, COUNT)
    assert balanced["false_positive"] < 0.05
    assert balanced["power"] < fleet["power"] - 0.03


@pytest.mark.parametrize("method", ["devices-fixed", "paired"])
def test_every_method_keeps_the_invariants(method):
    sim_fleet.rates(method, "t3", "balanced", 3, 10, 200)  # `sim_fleet.check` in each


# -- the tables of docs/statistics.md

LABELS = {
    "devices": "within devices (`devices`, auto)",
    "devices-fixed": "within devices, fixed effects only",
    "inverse-variance": "each board's Welch, inverse-variance weights",
    "paired": "paired by block",
    "welch": "device ignored: Welch",
    "auto": "device ignored: auto",
    "one-board": "one board, auto (no offsets)",
    "one-board-welch": "one board, Welch (no offsets)",
}
GRID = [(boards, n) for boards in (2, 3, 4) for n in (10, 30)]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def false_positive_table(count: int) -> str:
    """Lowest–highest A/A false positives over GRID, per method, layout and family."""
    head = "| method | layout | " + " | ".join(sim_fleet.FAMILIES) + " |"
    lines = [head, "|---|---|" + "---|" * len(sim_fleet.FAMILIES)]
    for method in sim_fleet.METHODS:
        for kind in sim_fleet.LAYOUTS:
            if kind == "unbalanced" and (method == "paired" or method.startswith("one-board")):
                continue
            cells = []
            for family in sim_fleet.FAMILIES:
                fp = [
                    sim_fleet.rates(method, family, kind, b, n, count)["false_positive"]
                    for b, n in GRID
                ]
                cells.append(f"{_pct(min(fp))}–{_pct(max(fp))}")
            layout = "—" if method.startswith("one-board") else kind
            lines.append(f"| {LABELS[method]} | {layout} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def power_table(count: int, boards: int = 4) -> str:
    """Power for the true change at ``boards`` boards, 10 and 30 runs per variant."""
    cols = [(f, n) for f in sim_fleet.FAMILIES for n in (10, 30)]
    lines = ["| method | layout | " + " | ".join(f"{f} n={n}" for f, n in cols) + " |"]
    lines.append("|---|---|" + "---|" * len(cols))
    # (power is not shown for the inverse-variance weights: their false positives run to 21%)
    rows = [(m, "balanced") for m in sim_fleet.METHODS if m != "inverse-variance"]
    rows.append(("devices", "unbalanced"))
    for method, kind in rows:
        cells = [_pct(sim_fleet.rates(method, f, kind, boards, n, count)["power"]) for f, n in cols]
        layout = "—" if method.startswith("one-board") else kind
        lines.append(f"| {LABELS[method]} | {layout} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def coverage_range(count: int) -> str:
    cov = [
        sim_fleet.rates("devices", f, k, b, n, count)["coverage"]
        for f in sim_fleet.FAMILIES
        for k in sim_fleet.LAYOUTS
        for b, n in GRID
    ]
    return f"{_pct(min(cov))}–{_pct(max(cov))}%"


def odd_board_rates(count: int) -> str:
    equal = [named_rate(f, b, n, "equal", count) for f in sim_fleet.FAMILIES for b, n in GRID]
    spread = [named_rate("normal", b, n, "spread", count) for b, n in GRID]
    found = {n: named_rate("normal", 4, n, "odd", count) for n in (10, 30, 100)}
    return (
        f"equal boards (A/A): {_pct(min(equal))}–{_pct(max(equal))}% of experiments name a "
        f"board; boards ±5% apart (normal runs): {_pct(min(spread))}–{_pct(max(spread))}%; "
        "a board 6% off among 4, found at 10 / 30 / 100 runs per variant: "
        + " / ".join(f"{_pct(found[n])}%" for n in (10, 30, 100))
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="the fleet tables of docs/statistics.md")
    ap.add_argument("--experiments", type=int, default=2000)
    args = ap.parse_args()
    print("A/A false positives (%), lowest–highest over 2, 3, 4 boards × 10, 30 runs:\n")
    print(false_positive_table(args.experiments))
    print(f"\nPower (%) for a true +{sim_fleet.DELTA:.0%} change, 4 boards:\n")
    print(power_table(args.experiments))
    print(f"\nCoverage of the true change, within devices: {coverage_range(args.experiments)}")
    print(odd_board_rates(args.experiments))

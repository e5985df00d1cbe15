"""Print the simulated error rates, coverage and power of every method (docs/evidence.md).

    .venv/bin/python -m tests.stats.tables

Same seeds and settings as test_validation.py / test_adaptive.py, so the numbers printed
are the ones the tests assert on.
"""

from __future__ import annotations

import numpy as np

from tests.stats import sim
from tests.stats.test_adaptive import MAX, MIN, TARGET, _adaptive, _paths

LABELS = {
    "auto": "auto (the default: welch or mannwhitney)",
    "welch": "welch (interval=auto)",
    "welch-difference": "welch, interval=difference",
    "welch-fieller": "welch, interval=fieller",
    "bootstrap-mean": "bootstrap (mean)",
    "bootstrap-median": "bootstrap, statistic=median",
    "mannwhitney": "mannwhitney (HL ratio)",
    "mannwhitney-shift": "mannwhitney, scale=shift",
    "paired": "paired (3% block drift)",
}


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _rates_table(families, methods) -> None:
    print("| method | " + " | ".join(f"{f} n={n}" for f in families for n in (5, 10, 30)) + " |")
    print("|---|" + "---|" * (3 * len(families)))
    for m in methods:
        cells = []
        for f in families:
            for n in (5, 10, 30):
                r = sim.error_rates(m, f, n)
                cells.append(
                    "refused"
                    if r["undefined"] == 1
                    else f"{pct(r['false_positive'])} / {pct(r['coverage'])}"
                )
        print(f"| {LABELS[m]} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    methods = list(sim.METHODS) + ["welch-difference", "mannwhitney-shift"]
    print(
        f"A/A false-positive rate (%) at α = 5% | coverage (%) of a true change (+{100 * sim.DELTA:.0f}%), "
        f"{sim.EXPERIMENTS:,} experiments each"
    )
    print()
    _rates_table(sim.FAMILIES, methods)
    new = [f for f in sim.ALL_FAMILIES if f not in sim.FAMILIES]
    print(
        "The same for the families of tests/stats/sim.py: heavy right skew (log-normal σ = 1), one run in ten "
        "throttled (×2), negative values, integer counts (Poisson 20; true change ×2), values straddling zero "
        "(true change +2.0 in the unit), magnitudes 1e-300 and 1e300"
    )
    print()
    for i in range(0, len(new), 4):
        _rates_table(new[i : i + 4], methods)
    print(
        "Every one of these experiments, and every one recomputed under holm, bonferroni and bh: no bound of "
        "a ratio at or below −100%, significant ⇔ the interval excludes 0 ⇔ p ≤ α, the estimate inside its "
        "interval (tests/stats/test_validation*.py, test_agreement.py)."
    )
    print()
    print("Power: n = 10 per variant, 2% normal noise, true change +3% (2,000 experiments)")
    print()
    print("| method | power |")
    print("|---|---|")
    for m in sim.METHODS:
        print(f"| {LABELS[m]} | {pct(sim.power(m))}% |")
    print()
    print(
        f"Adaptive repetitions: min {MIN}, max {MAX}, target ±{TARGET:.0%}, 2% run noise, 4,000 A/A experiments"
    )
    print()
    print(
        "| runs | false positives | mean runs used | fixed count for ±1% in 95% | machine time saved |"
    )
    print("|---|---|---|---|---|")
    for fam in sim.FAMILIES:
        a, b = _paths(fam, 3)
        used, sig, hws = _adaptive(a, b)
        fixed = next((n for n in range(MIN, MAX + 1) if np.mean(hws[n] <= TARGET) >= 0.95), None)
        saved = f"{pct(1 - used.mean() / fixed)}%" if fixed else f"n/a (> {MAX})"
        print(
            f"| {fam} | {pct(sig.mean())}% | {used.mean():.1f} | {fixed or f'> {MAX}'} | {saved} |"
        )
    print()
    for n in (5, 10, 30):
        fp, cov = histogram_rates(n=n)
        print(
            f"histogram bootstrap, p99 over runs' merged histograms, n = {n}: "
            f"false positives {pct(fp)}%, coverage of +10% {pct(cov)}% (1,000 experiments each)"
        )


def histogram_rates(experiments: int = 1000, n: int = 10) -> tuple[float, float]:
    """A/A false positives and coverage of a +10% p99 for the merged-histogram bootstrap."""
    from perflab.stats import histogram_bootstrap

    from tests.stats.test_histogram import EDGES, _runs

    rng = np.random.default_rng(sim.seed_of("histogram", experiments, n))
    fp = cov = 0
    for _ in range(experiments):
        r = histogram_bootstrap(
            EDGES, _runs(rng, n, 1.0), _runs(rng, n, 1.0), 99, resamples=2000, seed=rng
        )
        fp += bool(r.significant[0])
        r = histogram_bootstrap(
            EDGES, _runs(rng, n, 1.0), _runs(rng, n, 1.1), 99, resamples=2000, seed=rng
        )
        cov += bool(r.covers(0.1)[0])
    return fp / experiments, cov / experiments


if __name__ == "__main__":
    main()

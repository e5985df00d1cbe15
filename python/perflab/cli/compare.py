"""perflab compare ID — the TLDR table of relative changes, and per-variant summaries."""

from __future__ import annotations

from perflab.cli.common import (add_analysis_options, add_experiment_arguments, add_store_option,
                                analysis_options, experiment_pairs, open_store, pct)

# numpy/scipy and the reporters are imported when the command runs, not when the
# parser is built, so that `perflab --help` and other commands start fast.


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare each variant with the baseline (95%% CIs)",
                       description="Print the TLDR table (rows: matrix cells; columns: metrics; cells: "
                                   "CI of the relative change vs the baseline, or NS) and per-variant "
                                   "summaries.")
    add_experiment_arguments(p, "compare")
    add_store_option(p)
    p.add_argument("--format", choices=["terminal", "markdown", "csv", "json"], default="terminal")
    p.add_argument("--json", action="store_const", const="json", dest="format",
                   help="same as --format json")
    add_analysis_options(p)
    p.add_argument("--fail-if-worse", type=pct, default=None, metavar="PCT",
                   help="exit 1 when a metric is significantly worse by more than PCT percent")
    p.add_argument("--no-summary", action="store_true", help="only the TLDR table")
    p.set_defaults(handler=run)


def run(args, io) -> int:
    from perflab.analysis.compare import compare_dataset, regressions
    from perflab.analysis.dataset import load_dataset
    from perflab.report.csv_table import render_csv
    from perflab.report.format import fmt_pct
    from perflab.report.json_export import render_json
    from perflab.report.markdown import render_markdown
    from perflab.report.terminal import render_terminal
    opts = analysis_options(args)
    pairs = experiment_pairs(args)
    with open_store(args) as store:
        if args.other is None:
            data = load_dataset(store, args.experiment)
            result = compare_dataset(data, **opts)
        else:
            from perflab.analysis.cross import compare_cross, cross_dataset
            cross = cross_dataset(store, args.experiment, args.other, pairs)
            result = compare_cross(cross, **opts)
    if args.format == "json":
        io.out.write(render_json(result))
    elif args.format == "markdown":
        io.out.write(render_markdown(result))
    elif args.format == "csv":
        io.out.write(render_csv(result))
    else:
        render_terminal(result, io.console, summaries=not args.no_summary)
    if args.fail_if_worse is not None:
        bad = regressions(result, args.fail_if_worse)
        for c in bad:
            io.warn(f"regression: {c.metric.name} at {c.cell_key} for {c.variant}: "
                    f"{fmt_pct(c.comparison.estimate)} (worse than the {args.fail_if_worse:g}% allowed)")
        return 1 if bad else 0
    return 0

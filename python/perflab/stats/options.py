"""The choices of the statistical methods' options, and their defaults: one definition for
the methods that check them, the request that checks them before any method is imported,
and the command line's choices. A leaf (nothing imported), so that `perflab --help` can
list them without loading the statistics."""

#: Welch's interval: ``auto`` (Fieller's where the change is large next to the baseline's
#: uncertainty), ``difference`` or ``fieller``.
WELCH_INTERVALS = ("auto", "difference", "fieller")
#: Mann–Whitney's Hodges–Lehmann scale.
MANNWHITNEY_SCALES = ("auto", "ratio", "shift")
#: Resamples per interval of a bootstrap (BCa and histogram) unless asked: Monte-Carlo
#: error of a 95% bound ≈ 1% of its width.
DEFAULT_RESAMPLES = 10_000
#: How a family of comparisons is corrected for multiplicity (`correction.py`).
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
DEFAULT_CORRECTION = "holm"

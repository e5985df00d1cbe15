"""Names of the per-run values recorded beside a metric that has an overhead (the metric
itself is net): light, for the analysis that reads them without the schema."""

GROSS_SUFFIX, OVERHEAD_SUFFIX = ".gross", ".overhead"
OVERHEAD_SUFFIXES = (GROSS_SUFFIX, OVERHEAD_SUFFIX)

"""From stored runs to statistical results: loading samples (dataset.py) and the
pure computation of comparisons (compare.py) that every reporter renders."""

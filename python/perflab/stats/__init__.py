"""Pure statistics over numbers: no files, processes, database or formatting.

Every method implements the same small interface (`Method`): ``summary`` of one
sample and ``compare`` of a candidate sample against a baseline sample. Results
are frozen dataclasses whose fields carry units and invariants in their
docstrings; warnings are typed data attached to them (see `warnings.py`).
"""

from perflab.stats.methods import Method, available_methods, get_method
from perflab.stats.summary import Summary, summarize
from perflab.stats.types import Comparison, Verdict, classify
from perflab.stats.warnings import StatWarning

__all__ = [
    "Comparison",
    "Method",
    "StatWarning",
    "Summary",
    "Verdict",
    "available_methods",
    "classify",
    "get_method",
    "summarize",
]

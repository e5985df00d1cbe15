"""Cross-platform performance model (from the router performance-index experiment), pure:
no files, processes or database.

    I = rate × (1/cpu + M·L/C + N)

`index_table` computes I per platform for given M and N; `fit` estimates M, N and I
from several platforms with their uncertainty; `predict` gives a new platform's rate
with a prediction interval. Inputs are `Observation` values (`from_rows` builds them
from CSV-like rows with explicit units).
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names __getattr__ loads, for type checkers (no module of this
    # package is named like one of its functions, so `import perflab.model.X` shadows none)
    from perflab.model.fit_result import FitResult, LeaveOneOut, PlatformFit
    from perflab.model.fitting import fit
    from perflab.model.observations import Columns, Observation, check, from_rows
    from perflab.model.performance_index import (
        IndexRow,
        IndexTable,
        index,
        index_table,
        per_packet_time,
    )
    from perflab.model.prediction import Prediction, predict
    from perflab.model.units import BANDWIDTH_UNITS, bytes_per_second

# Names are loaded on first use (PEP 562): the fitting code imports scipy, which the CLI
# should not pay for when it only builds its parser.
_HOMES = {
    "FitResult": "fit_result",
    "LeaveOneOut": "fit_result",
    "PlatformFit": "fit_result",
    "fit": "fitting",
    "IndexRow": "performance_index",
    "IndexTable": "performance_index",
    "index": "performance_index",
    "index_table": "performance_index",
    "per_packet_time": "performance_index",
    "Columns": "observations",
    "Observation": "observations",
    "check": "observations",
    "from_rows": "observations",
    "Prediction": "prediction",
    "predict": "prediction",
    "BANDWIDTH_UNITS": "units",
    "bytes_per_second": "units",
}


def __getattr__(name: str) -> object:
    if name in _HOMES:
        value = getattr(importlib.import_module(f"perflab.model.{_HOMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'perflab.model' has no attribute {name!r}")


__all__ = [
    "BANDWIDTH_UNITS",
    "Columns",
    "FitResult",
    "IndexRow",
    "IndexTable",
    "LeaveOneOut",
    "Observation",
    "PlatformFit",
    "Prediction",
    "bytes_per_second",
    "check",
    "fit",
    "from_rows",
    "index",
    "index_table",
    "per_packet_time",
    "predict",
]

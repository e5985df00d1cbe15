"""Cross-platform performance model (seed 001), pure: no files, processes or database.

    I = rate × (1/cpu + M·L/C + N)

`index_table` computes I per platform for given M and N; `fit` estimates M, N and I
from several platforms with their uncertainty; `predict` gives a new platform's rate
with a prediction interval. Inputs are `Observation` values (`from_rows` builds them
from CSV-like rows with explicit units).
"""

from perflab.model.fit import FitResult, LeaveOneOut, PlatformFit, fit
from perflab.model.index import IndexRow, IndexTable, index, index_table, per_packet_time
from perflab.model.observations import Columns, Observation, check, from_rows
from perflab.model.predict import Prediction, predict
from perflab.model.units import BANDWIDTH_UNITS, bytes_per_second

__all__ = [
    "BANDWIDTH_UNITS", "Columns", "FitResult", "IndexRow", "IndexTable", "LeaveOneOut", "Observation",
    "PlatformFit", "Prediction", "bytes_per_second", "check", "fit", "from_rows", "index", "index_table",
    "per_packet_time", "predict",
]

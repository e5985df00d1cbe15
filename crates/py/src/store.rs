//! Bindings for `perflab-store`: an experiment's measured values as Python lists, grouped
//! by (cell, variant, metric); SQLite errors raised as `sqlite3` errors with
//! `sqlite_errorname` set, so the store's callers word them as they word their own reads.
use perflab_store::{cells_and_variants as read_cells, measured_values as read, StoreError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

fn sqlite_error(py: Python<'_>, e: StoreError) -> PyErr {
    let raised = (|| -> PyResult<PyErr> {
        let sqlite3 = py.import("sqlite3")?;
        let kind = if matches!(e.code_name.as_str(), "SQLITE_CORRUPT" | "SQLITE_NOTADB") {
            "DatabaseError"
        } else {
            "OperationalError"
        };
        let err = sqlite3.getattr(kind)?.call1((e.message.as_str(),))?;
        err.setattr("sqlite_errorname", e.code_name.as_str())?;
        Ok(PyErr::from_value(err))
    })();
    raised.unwrap_or_else(|failed| failed)
}

/// `measured_values(uri, experiment_id, busy_timeout_ms) -> (samples, blocks)`: dicts
/// keyed by (cell_key, variant, metric), in order of each group's first run; values
/// (floats) and blocks (ints) in run order. Reads with the GIL released.
#[pyfunction]
fn measured_values<'py>(
    py: Python<'py>,
    uri: &str,
    experiment_id: i64,
    busy_timeout_ms: u32,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let uri = uri.to_string();
    let grouped = py.allow_threads(|| read(&uri, experiment_id, busy_timeout_ms)).map_err(|e| sqlite_error(py, e))?;
    let (samples, blocks) = (PyDict::new(py), PyDict::new(py));
    for (g, (cell, variant, metric)) in grouped.keys.iter().enumerate() {
        let key = PyTuple::new(py, [cell.as_str(), variant.as_str(), metric.as_str()])?;
        let (values, block) = grouped.group(g);
        samples.set_item(&key, PyList::new(py, values)?)?;
        blocks.set_item(&key, PyList::new(py, block)?)?;
    }
    Ok((samples, blocks))
}

/// Every (cell_key, cell labels as JSON, variant) of an experiment's runs, and its runs per status.
type Overview = (Vec<(String, String, String)>, Vec<(String, i64)>);

/// `cells_and_variants(uri, experiment_id, busy_timeout_ms) -> ([(cell_key, cell_json,
/// variant)], [(status, runs)])`: every (cell, variant) of the experiment's runs, in order of
/// first appearance, and the number of runs of each status (by status).
#[pyfunction]
fn cells_and_variants(py: Python<'_>, uri: &str, experiment_id: i64, busy_timeout_ms: u32) -> PyResult<Overview> {
    let uri = uri.to_string();
    let read =
        py.allow_threads(|| read_cells(&uri, experiment_id, busy_timeout_ms)).map_err(|e| sqlite_error(py, e))?;
    Ok((read.cells, read.status_counts))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(measured_values, m)?)?;
    m.add_function(wrap_pyfunction!(cells_and_variants, m)?)
}

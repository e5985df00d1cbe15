//! Bindings for `perflab-store`: an experiment's measured values as one buffer and ranges, grouped
//! by (cell, variant, metric); SQLite errors raised as `sqlite3` errors with
//! `sqlite_errorname` set, so the store's callers word them as they word their own reads.
use perflab_store::{
    cells_and_variants as read_cells, experiment_values as read_both, measured_values as read, Grouped, StoreError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use std::collections::HashMap;

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

/// (keys, offsets, values, blocks): see `measured_values`.
type FlatGroups<'py> = (Bound<'py, PyList>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

/// `measured_values(uri, experiment_id, busy_timeout_ms) -> (keys, offsets, values, blocks)`:
/// the groups' keys (cell_key, variant, metric) in order of each group's first run; group
/// `g` is `[offsets[g], offsets[g + 1])` of `values` (float64) and `blocks` (int64), native
/// byte order, in run order. Read with the GIL released; then no Python object per value,
/// one string per distinct name, so that a reader in a thread barely holds the GIL.
#[pyfunction]
fn measured_values<'py>(
    py: Python<'py>,
    uri: &str,
    experiment_id: i64,
    busy_timeout_ms: u32,
) -> PyResult<FlatGroups<'py>> {
    let uri = uri.to_string();
    let grouped = py.allow_threads(|| read(&uri, experiment_id, busy_timeout_ms)).map_err(|e| sqlite_error(py, e))?;
    flat_groups(py, &grouped)
}

/// `Grouped` as `measured_values` hands it over.
fn flat_groups<'py>(py: Python<'py>, grouped: &Grouped) -> PyResult<FlatGroups<'py>> {
    let mut names: HashMap<&str, Bound<'py, PyString>> = HashMap::new();
    let mut keys = Vec::with_capacity(grouped.len());
    for (cell, variant, metric) in &grouped.keys {
        let [c, v, m] = [cell, variant, metric]
            .map(|text| names.entry(text.as_str()).or_insert_with(|| PyString::new(py, text)).clone());
        keys.push(PyTuple::new(py, [c, v, m])?);
    }
    let bytes_of = |words: Vec<u8>| PyBytes::new(py, &words);
    let offsets: Vec<u8> = grouped.offsets.iter().flat_map(|&o| (o as u64).to_ne_bytes()).collect();
    let values: Vec<u8> = grouped.values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let blocks: Vec<u8> = grouped.blocks.iter().flat_map(|b| b.to_ne_bytes()).collect();
    Ok((PyList::new(py, keys)?, bytes_of(offsets), bytes_of(values), bytes_of(blocks)))
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

/// `experiment_values(uri, experiment_id, busy_timeout_ms) -> (measured_values(...),
/// cells_and_variants(...))`: both in one pass over the experiment's runs (a command that
/// reads both, `compare`, pays for one).
#[pyfunction]
fn experiment_values<'py>(
    py: Python<'py>,
    uri: &str,
    experiment_id: i64,
    busy_timeout_ms: u32,
) -> PyResult<(FlatGroups<'py>, Overview)> {
    let uri = uri.to_string();
    let (grouped, overview) =
        py.allow_threads(|| read_both(&uri, experiment_id, busy_timeout_ms)).map_err(|e| sqlite_error(py, e))?;
    Ok((flat_groups(py, &grouped)?, (overview.cells, overview.status_counts)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(measured_values, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_values, m)?)?;
    m.add_function(wrap_pyfunction!(cells_and_variants, m)?)
}

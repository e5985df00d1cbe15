//! Bindings for `perflab-load`: run a key-value load with the GIL released, calling
//! back into Python at each progress tick (which is also where signals are handled
//! and where the caller can ask the run to stop).
use perflab_load::{run, Config, Control, Progress, RunOptions, RunResult};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::Duration;

fn progress_dict<'py>(py: Python<'py>, p: &Progress) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("phase", p.phase.name())?;
    d.set_item("elapsed_s", p.elapsed_s)?;
    d.set_item("planned_s", p.planned_s)?;
    d.set_item("requests_done", p.requests_done)?;
    d.set_item("requests_planned", p.requests_planned)?;
    d.set_item("ops_per_sec", p.ops_per_sec)?;
    d.set_item("ops_per_sec_avg", p.ops_per_sec_avg)?;
    d.set_item("errors", p.errors)?;
    d.set_item("connections", p.connections)?;
    d.set_item("connections_planned", p.connections_planned)?;
    Ok(d)
}

/// Run a load. `config_json`: the engine's normalised config. `tick(progress: dict) -> bool`
/// is called every `tick_interval` seconds with the GIL held; a true return stops the run.
/// Returns (result JSON text, exception raised during the run or None): a signal handler
/// or `tick` raising stops the run, and the exception is handed back with the partial result.
/// Raises ValueError((field, message)) for a configuration the engine rejects.
#[pyfunction]
#[pyo3(signature = (config_json, tick=None, tick_interval=0.1))]
fn kv_run(
    py: Python<'_>,
    config_json: &str,
    tick: Option<PyObject>,
    tick_interval: f64,
) -> PyResult<(String, Option<PyObject>)> {
    let cfg = Config::from_json(config_json).map_err(|e| PyValueError::new_err((e.field, e.message)))?;
    let opts = RunOptions { tick: Duration::from_secs_f64(tick_interval.clamp(0.001, 60.0)) };
    let mut pending: Option<PyErr> = None;
    let outcome = py.allow_threads(|| {
        run(&cfg, &opts, &mut |p: &Progress| {
            Python::with_gil(|py| {
                if pending.is_some() {
                    return Control::Stop;
                }
                if let Err(e) = py.check_signals() {
                    pending = Some(e);
                    return Control::Stop;
                }
                let Some(t) = tick.as_ref() else { return Control::Continue };
                let called = progress_dict(py, p).and_then(|d| t.call1(py, (d,))).and_then(|v| v.is_truthy(py));
                match called {
                    Ok(true) => Control::Stop,
                    Ok(false) => Control::Continue,
                    Err(e) => {
                        pending = Some(e);
                        Control::Stop
                    }
                }
            })
        })
    });
    let result = outcome.map_err(|e| PyValueError::new_err((e.field, e.message)))?;
    let exc = pending.map(|e| e.into_value(py).into_any());
    Ok((result.to_json().to_string(), exc))
}

/// The engine's defaults as normalised config JSON (memtier_benchmark's defaults).
#[pyfunction]
fn kv_default_config() -> String {
    Config::default().to_json().to_string()
}

/// Check a normalised config JSON; raises ValueError((field, message)) when invalid.
#[pyfunction]
fn kv_check_config(config_json: &str) -> PyResult<()> {
    Config::from_json(config_json).map(|_| ()).map_err(|e| PyValueError::new_err((e.field, e.message)))
}

/// One result of several load processes that ran at the same time (their "perflab-kv-result"
/// JSON documents): counts summed, histograms added, metrics derived anew. ValueError(message)
/// for a document that is not a result or results that cannot be merged.
#[pyfunction]
fn kv_merge(results_json: Vec<String>) -> PyResult<String> {
    let parts = results_json
        .iter()
        .map(|t| {
            let doc: serde_json::Value = serde_json::from_str(t).map_err(|e| e.to_string())?;
            RunResult::from_json(&doc)
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(PyValueError::new_err)?;
    let merged = RunResult::merge(&parts).map_err(PyValueError::new_err)?;
    Ok(merged.to_json().to_string())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kv_run, m)?)?;
    m.add_function(wrap_pyfunction!(kv_merge, m)?)?;
    m.add_function(wrap_pyfunction!(kv_default_config, m)?)?;
    m.add_function(wrap_pyfunction!(kv_check_config, m)?)?;
    m.add("KV_RESULT_FORMAT", perflab_load::result::FORMAT)?;
    m.add("KV_RESULT_VERSION", perflab_load::result::VERSION)?;
    Ok(())
}

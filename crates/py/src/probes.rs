//! Bindings for `perflab-probes`: each function releases the GIL while it measures,
//! pins the calling OS thread to `core` for the duration (restoring its affinity
//! afterwards), and returns plain dicts. Between measurement points it checks for
//! signals so that Ctrl-C stops a long sweep.
use perflab_probes::{affinity, cpu, latency, memmove, pagebuf::Pages, ProbeError};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::Duration;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(probe_cpu, m)?)?;
    m.add_function(wrap_pyfunction!(probe_cpu_validate, m)?)?;
    m.add_function(wrap_pyfunction!(probe_memmove, m)?)?;
    m.add_function(wrap_pyfunction!(probe_latency, m)?)?;
    m.add_function(wrap_pyfunction!(probe_memmove_cases, m)?)?;
    m.add_function(wrap_pyfunction!(probe_memmove_sweep_grid, m)?)?;
    m.add_function(wrap_pyfunction!(probe_latency_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(probe_allowed_cores, m)?)?;
    Ok(())
}

fn err(e: ProbeError) -> PyErr {
    match e {
        ProbeError::InvalidArgument(_) | ProbeError::Affinity(_) => PyValueError::new_err(e.to_string()),
        ProbeError::Allocation(_) => PyMemoryError::new_err(e.to_string()),
        ProbeError::Validation(_) => PyRuntimeError::new_err(e.to_string()),
    }
}

fn seconds(d: f64) -> PyResult<Duration> {
    if !(d.is_finite() && d > 0.0 && d <= 3600.0) {
        return Err(PyValueError::new_err(format!("duration {d} s: must be in (0, 3600]")));
    }
    Ok(Duration::from_secs_f64(d))
}

fn pages(huge: bool) -> Pages {
    if huge {
        Pages::Huge
    } else {
        Pages::Base
    }
}

/// Runs `f` without the GIL, pinned to `core` when given; reports the core it ran on.
fn pinned<T: Send>(
    py: Python<'_>,
    core: Option<usize>,
    f: impl FnOnce() -> Result<T, ProbeError> + Send,
) -> PyResult<(T, Option<usize>)> {
    py.allow_threads(|| {
        let _guard = match core {
            Some(c) => Some(affinity::pin_current_thread(c)?),
            None => None,
        };
        let r = f()?;
        Ok((r, affinity::current_core()))
    })
    .map_err(err)
}

/// `repeat` timed runs of the cpu workload of about `duration` seconds each.
#[pyfunction]
#[pyo3(signature = (duration, repeat = 1, core = None))]
fn probe_cpu<'py>(
    py: Python<'py>,
    duration: f64,
    repeat: usize,
    core: Option<usize>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let d = seconds(duration)?;
    let mut out = Vec::with_capacity(repeat);
    for _ in 0..repeat.max(1) {
        let (r, ran_on) = pinned(py, core, || cpu::run(d))?;
        let dict = PyDict::new(py);
        dict.set_item("iterations", r.iterations)?;
        dict.set_item("seconds", r.seconds)?;
        dict.set_item("cpu_seconds", r.cpu_seconds)?;
        dict.set_item("iter_per_sec", r.iter_per_sec)?;
        dict.set_item("checksum", r.checksum)?;
        dict.set_item("core", ran_on)?;
        out.push(dict);
        py.check_signals()?;
    }
    Ok(out)
}

/// Checks the cpu workload's golden results without timing anything.
#[pyfunction]
fn probe_cpu_validate(py: Python<'_>) -> PyResult<()> {
    py.allow_threads(cpu::validate).map_err(err)
}

/// Measures each (copy_size, buffers) pair, `repeat` rounds over all pairs, in one arena.
#[pyfunction]
#[pyo3(signature = (cases, duration, repeat = 1, core = None, huge_pages = false))]
fn probe_memmove<'py>(
    py: Python<'py>,
    cases: Vec<(usize, usize)>,
    duration: f64,
    repeat: usize,
    core: Option<usize>,
    huge_pages: bool,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let d = seconds(duration)?;
    let (mut arena, _) = pinned(py, core, || memmove::Arena::new(pages(huge_pages)))?;
    let mut out = Vec::new();
    for round in 0..repeat.max(1) {
        for &(size, buffers) in &cases {
            let arena_ref = &mut arena;
            let (r, ran_on) = pinned(py, core, move || arena_ref.measure(size, buffers, d))?;
            let dict = PyDict::new(py);
            dict.set_item("round", round)?;
            dict.set_item("copy_size", r.copy_size)?;
            dict.set_item("buffers", r.buffers)?;
            dict.set_item("copies", r.copies)?;
            dict.set_item("seconds", r.seconds)?;
            dict.set_item("cpu_seconds", r.cpu_seconds)?;
            dict.set_item("mib_per_sec", r.mib_per_sec)?;
            dict.set_item("copies_per_sec", r.copies_per_sec)?;
            dict.set_item("verified_blocks", r.verified_blocks)?;
            dict.set_item("core", ran_on)?;
            out.push(dict);
            py.check_signals()?;
        }
    }
    Ok(out)
}

/// Pointer chase over each size (bytes) in each order ("page", "random").
#[pyfunction]
#[pyo3(signature = (sizes, orders, duration, repeat = 1, core = None, huge_pages = false, seed = 1))]
#[allow(clippy::too_many_arguments)]
fn probe_latency<'py>(
    py: Python<'py>,
    sizes: Vec<usize>,
    orders: Vec<String>,
    duration: f64,
    repeat: usize,
    core: Option<usize>,
    huge_pages: bool,
    seed: u64,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let d = seconds(duration)?;
    let orders: Vec<latency::Order> = orders
        .iter()
        .map(|o| {
            latency::Order::parse(o)
                .ok_or_else(|| PyValueError::new_err(format!("order {o:?}: use \"page\" or \"random\"")))
        })
        .collect::<PyResult<_>>()?;
    let mut out = Vec::new();
    for round in 0..repeat.max(1) {
        for &size in &sizes {
            for &order in &orders {
                let s = seed.wrapping_add(round as u64);
                let (r, ran_on) = pinned(py, core, move || latency::chase(size, order, d, pages(huge_pages), s))?;
                let dict = PyDict::new(py);
                dict.set_item("round", round)?;
                dict.set_item("size_bytes", r.size_bytes)?;
                dict.set_item("order", r.order.name())?;
                dict.set_item("accesses", r.accesses)?;
                dict.set_item("seconds", r.seconds)?;
                dict.set_item("cpu_seconds", r.cpu_seconds)?;
                dict.set_item("ns_per_access", r.ns_per_access)?;
                dict.set_item("core", ran_on)?;
                out.push(dict);
                py.check_signals()?;
            }
        }
    }
    Ok(out)
}

/// mmbm's named cases as (name, copy_size, buffers).
#[pyfunction]
fn probe_memmove_cases() -> Vec<(&'static str, usize, usize)> {
    memmove::CASES.iter().map(|c| (c.name, c.copy_size, c.buffers)).collect()
}

/// The default sweep grid: (copy sizes, buffer counts).
#[pyfunction]
fn probe_memmove_sweep_grid() -> (Vec<usize>, Vec<usize>) {
    (memmove::SWEEP_SIZES.to_vec(), memmove::SWEEP_BUFFERS.to_vec())
}

/// Working-set sizes from `min` to `max` bytes, `points_per_octave` per doubling.
#[pyfunction]
#[pyo3(signature = (min, max, points_per_octave = 1))]
fn probe_latency_sizes(min: usize, max: usize, points_per_octave: usize) -> PyResult<Vec<usize>> {
    latency::sizes(min, max, points_per_octave).map_err(err)
}

/// Cores this process may run on (its affinity mask).
#[pyfunction]
fn probe_allowed_cores() -> PyResult<Vec<usize>> {
    affinity::allowed_cores().map_err(err)
}

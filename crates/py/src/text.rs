//! perflab-text: the numbers of a report's column, formatted at once.
use pyo3::prelude::*;

/// `fmt_number` (perflab.report.numbers) of each value, 4 significant digits.
#[pyfunction]
fn fmt_numbers(values: Vec<f64>) -> Vec<String> {
    perflab_text::numbers(&values)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fmt_numbers, m)?)
}

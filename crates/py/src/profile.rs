//! Bindings for the `inferno` crate: `perf script` text folded into stacks, and flame
//! graphs (plain or differential) drawn as SVG. Strings in, strings out; the GIL is
//! released while inferno works.
use inferno::collapse::perf::{Folder, Options as FoldOptions};
use inferno::collapse::Collapse;
use inferno::differential;
use inferno::flamegraph::{self, Options as GraphOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fold_perf_script, m)?)?;
    m.add_function(wrap_pyfunction!(diff_folded, m)?)?;
    m.add_function(wrap_pyfunction!(flamegraph_svg, m)?)?;
    Ok(())
}

fn err(what: &str, e: std::io::Error) -> PyErr {
    PyValueError::new_err(format!("{what}: {e}"))
}

fn utf8(bytes: Vec<u8>) -> PyResult<String> {
    String::from_utf8(bytes).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `perf script` output → folded stacks ("comm;f1;f2 count" lines), kernel frames
/// marked `_[k]` when `annotate_kernel`.
#[pyfunction]
#[pyo3(signature = (text, annotate_kernel = false))]
fn fold_perf_script(py: Python<'_>, text: &str, annotate_kernel: bool) -> PyResult<String> {
    py.allow_threads(|| {
        let mut options = FoldOptions::default();
        options.annotate_kernel = annotate_kernel;
        options.nthreads = 1;
        let mut out = Vec::new();
        Folder::from(options).collapse(text.as_bytes(), &mut out).map_err(|e| err("perf script", e))?;
        utf8(out)
    })
}

/// Two folded profiles → the two-count folded lines of a differential flame graph
/// (`stack before after`); `normalize` scales `before` to the total of `after`.
#[pyfunction]
#[pyo3(signature = (before, after, normalize = true))]
fn diff_folded(py: Python<'_>, before: &str, after: &str, normalize: bool) -> PyResult<String> {
    py.allow_threads(|| {
        let options = differential::Options { normalize, strip_hex: false };
        let mut out = Vec::new();
        differential::from_readers(options, before.as_bytes(), after.as_bytes(), &mut out)
            .map_err(|e| err("folded stacks", e))?;
        utf8(out)
    })
}

/// Folded stacks (one or two counts per line) → an interactive SVG flame graph
/// (inferno's search and zoom script included). Two counts draw a differential graph.
#[pyfunction]
#[pyo3(signature = (folded, title, subtitle = None, count_name = "samples", width = 1200))]
fn flamegraph_svg(
    py: Python<'_>,
    folded: &str,
    title: &str,
    subtitle: Option<String>,
    count_name: &str,
    width: usize,
) -> PyResult<String> {
    py.allow_threads(|| {
        let mut options = GraphOptions::default();
        options.title = title.to_string();
        options.subtitle = subtitle;
        options.count_name = count_name.to_string();
        options.image_width = Some(width);
        options.deterministic = true;
        let mut out = Vec::new();
        flamegraph::from_lines(&mut options, folded.lines(), &mut out).map_err(|e| err("flame graph", e))?;
        utf8(out)
    })
}

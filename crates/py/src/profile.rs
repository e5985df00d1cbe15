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
    m.add_function(wrap_pyfunction!(stackless_samples, m)?)?;
    m.add_function(wrap_pyfunction!(fill_stackless, m)?)?;
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

/// Samples of `perf script` text (with call graphs) whose stack is empty: a kernel that
/// records no user call chains (MIPS) leaves a sample taken in user space without any
/// frame, and folding drops it.
#[pyfunction]
fn stackless_samples(py: Python<'_>, text: &str) -> usize {
    py.allow_threads(|| {
        let lines: Vec<&str> = text.lines().collect();
        samples(&lines).iter().filter(|s| s.frames == 0).count()
    })
}

/// `perf script` text with call graphs, each stackless sample given its leaf as a
/// one-frame stack: `leaves` is `perf script -G -F time,ip,sym,dso` of the same file,
/// one line per sample in the same order (`TIME: IP SYM (DSO)`), matched by time; a
/// mismatch is an error, never a stack given to the wrong sample.
#[pyfunction]
fn fill_stackless(py: Python<'_>, text: &str, leaves: &str) -> PyResult<String> {
    py.allow_threads(|| fill(text, leaves)).map_err(PyValueError::new_err)
}

/// One sample of `perf script` text: its header line's time, the index of the line after
/// its header, and its number of frames.
struct Sample<'a> {
    time: &'a str,
    after: usize,
    frames: usize,
}

/// The samples of `perf script` text: a header line (`COMM PID/TID TIME: EVENT: `) then
/// its frames (lines starting with a tab), then a blank line.
fn samples<'a>(lines: &[&'a str]) -> Vec<Sample<'a>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.starts_with('\t') || line.starts_with('#') {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let time = if tokens.len() >= 2 { tokens[tokens.len() - 2] } else { "" };
        let mut frames = 0;
        while i + frames < lines.len() && lines[i + frames].starts_with('\t') {
            frames += 1;
        }
        out.push(Sample { time, after: i, frames });
        i += frames;
    }
    out
}

fn fill(text: &str, leaves: &str) -> Result<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut leaf_lines = leaves.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let mut out = String::with_capacity(text.len() + leaves.len());
    let mut next = 0; // the first line of `text` not yet written
    for (k, sample) in samples(&lines).iter().enumerate() {
        let leaf = leaf_lines.next().ok_or_else(|| format!("leaves: {k} lines for more samples"))?;
        let (time, frame) = leaf.trim_start().split_once(char::is_whitespace).unwrap_or((leaf, ""));
        if time != sample.time {
            return Err(format!("leaves: sample {} at {} but leaf at {time}", k + 1, sample.time));
        }
        if sample.frames > 0 {
            continue;
        }
        for line in &lines[next..sample.after] {
            out.push_str(line);
            out.push('\n');
        }
        next = sample.after;
        out.push('\t');
        out.push_str(frame.trim());
        out.push('\n');
    }
    if leaf_lines.next().is_some() {
        return Err("leaves: more lines than samples".to_string());
    }
    for line in &lines[next..] {
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
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

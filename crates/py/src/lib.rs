//! `perflab._native`: thin bindings only. Each Rust crate gets one module file
//! here that converts between Python objects and the crate's own types.
use pyo3::prelude::*;

mod load;
mod probes;
mod profile;
mod store;
mod text;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    load::register(m)?;
    probes::register(m)?;
    profile::register(m)?;
    store::register(m)?;
    text::register(m)?;
    Ok(())
}

//! The `nucleus` Python package's native module (`nucleus._nucleus`): thin bindings over
//! nucleus-sampler (and nucleus-grammar). Every behaviour comes from the Rust crates; this
//! crate only converts arguments, borrows buffers without copying and maps errors to Python
//! exceptions.

use pyo3::prelude::*;

mod buffer;
mod convert;
mod grammar;
mod model;
mod sampler;

#[pymodule]
fn _nucleus(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<sampler::Sampler>()?;
    m.add_function(wrap_pyfunction!(sampler::sample_batch, m)?)?;
    m.add_class::<grammar::Vocab>()?;
    m.add_class::<grammar::Grammar>()?;
    m.add_class::<grammar::TokenTrie>()?;
    m.add_class::<model::Model>()?;
    m.add_class::<model::Generation>()?;
    Ok(())
}

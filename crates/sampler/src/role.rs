//! [`Role`]: what a built-in sampler tells the fast-path planner (`fast::plan`) about itself.
//!
//! Each sampler module reports its own role from its parameters (`role()`), and [`crate::Step`]
//! asks the sampler inside its variant. This module depends on nothing, so the samplers need
//! not import [`crate::step`] (which imports every sampler).

/// How a step can take part in the whole-vocabulary fast paths, which avoid building a
/// candidate entry for every token when the chain allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Unknown effect: the chain runs on the full candidate array (always correct).
    Opaque,
    /// Does nothing (a built-in "?name" sampler built from off values).
    Noop,
    /// Changes only the logits of a few known ids, each independently of the others
    /// (penalties, DRY, logit-bias).
    Sparse,
    /// llama.cpp's top-k with this `k`.
    TopK(i32),
    /// top-n-sigma with a finite `n > 0`.
    TopNSigma,
    /// Plain temperature (`temp`, or `temp-ext` without dynamic range) with a finite `t > 0`.
    Temp,
    /// The `dist` selector.
    Dist,
    /// The `mirostat-v2` selector.
    MirostatV2,
    /// top-p with `p < 1`.
    TopP,
    /// min-p with `p > 0`.
    MinP,
}

//! Whole-vocabulary fast paths: llama.cpp's samplers computed straight from the logits row,
//! without building the candidate array, giving the full path's result bit for bit.
//!
//! One module per sampler it speeds up (`top_k`, `top_p`, `top_p_wide`, `dist`, `top_n_sigma`,
//! `mirostat_v2`); what they share lives in its own module and they import nothing from each
//! other: [`plan`] (the planner: which path a chain allows, and running it), [`threshold`]
//! (the rising-threshold buffer of top-k and top-p), [`row`] (block size, patched row view, max pass, gather, tier counters), [`bounds`]
//! (rounding helpers, exact replays of llama.cpp's sequential sums), [`expf`] (the glibc
//! `expf` replica and exp bounds), [`simd`] (the AVX-512 / AVX2 / NEON / scalar kernels and their
//! run-time dispatch; the NEON backend is `neon`) and [`value_sort`] (descending-order keys of values and their radix
//! sort, for the paths that sort values without ids).

pub(crate) mod bounds;
pub(crate) mod dist;
pub(crate) mod expf;
pub(crate) mod mirostat_v2;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;
pub(crate) mod plan;
pub(crate) mod row;
pub(crate) mod simd;
pub(crate) mod threshold;
pub(crate) mod top_k;
pub(crate) mod top_n_sigma;
pub(crate) mod top_p;
pub(crate) mod top_p_wide;
pub(crate) mod value_sort;

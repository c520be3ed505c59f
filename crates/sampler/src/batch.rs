//! [`BatchSampler`]: sample many rows of logits (`[B, V]`, row-major) at once, across threads.
//!
//! A server decoding several sequences per step gets one logits row per sequence. Each row
//! keeps its own [`TokenSampler`] — its own parameters, RNG stream and history — so a row's
//! tokens are exactly what the single-row path gives for the same seed, whatever the thread
//! count. Rows are spread over rayon's current thread pool.

use rayon::prelude::*;

use crate::candidates::Token;
use crate::error::SampleError;
use crate::session::TokenSampler;

/// One [`TokenSampler`] per row, sampled in parallel.
#[derive(Clone, Debug, Default)]
pub struct BatchSampler {
    rows: Vec<TokenSampler>,
}

impl BatchSampler {
    /// A batch over these per-row samplers (row `i` of the logits goes to `samplers[i]`).
    pub fn new(samplers: Vec<TokenSampler>) -> Self {
        BatchSampler { rows: samplers }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The per-row samplers.
    pub fn rows(&self) -> &[TokenSampler] {
        &self.rows
    }

    /// The per-row samplers, mutable (accept prompt tokens, reset, ...).
    pub fn rows_mut(&mut self) -> &mut [TokenSampler] {
        &mut self.rows
    }

    /// Samples and accepts one token per row from `logits` (`len() * n_vocab` values, row
    /// after row), writing each row's result to `out[i]`. Runs on rayon's current pool
    /// (use `ThreadPool::install` to choose the thread count).
    pub fn sample(
        &mut self,
        logits: &[f32],
        n_vocab: usize,
        out: &mut [Result<Token, SampleError>],
    ) -> Result<(), SampleError> {
        let b = self.rows.len();
        if n_vocab == 0 {
            return Err(SampleError::EmptyVocab);
        }
        if logits.len() != b * n_vocab {
            return Err(SampleError::VocabMismatch { expected: b * n_vocab, got: logits.len() });
        }
        if out.len() != b {
            return Err(SampleError::VocabMismatch { expected: b, got: out.len() });
        }
        self.rows
            .par_iter_mut()
            .zip(logits.par_chunks_exact(n_vocab))
            .zip(out.par_iter_mut())
            .for_each(|((s, row), o)| *o = s.sample(row));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::SamplingParams;

    #[test]
    fn rows_match_the_single_row_path_on_any_thread_count() {
        let (b, v) = (8, 3000);
        let logits: Vec<f32> = (0..b * v).map(|i| ((i * 7919 % 1000) as f32) / 100.0 - 5.0).collect();
        let make = |i: usize| {
            let p = SamplingParams { seed: 100 + i as u32, top_k: [40, 0][i % 2], ..Default::default() };
            TokenSampler::new(p.build(v, None).unwrap())
        };
        let mut single: Vec<TokenSampler> = (0..b).map(make).collect();
        let want: Vec<Vec<Token>> =
            (0..b).map(|i| (0..5).map(|_| single[i].sample(&logits[i * v..(i + 1) * v]).unwrap()).collect()).collect();
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut batch = BatchSampler::new((0..b).map(make).collect());
            let mut got = vec![Vec::new(); b];
            let mut out = vec![Ok(0); b];
            for _ in 0..5 {
                pool.install(|| batch.sample(&logits, v, &mut out)).unwrap();
                for (g, o) in got.iter_mut().zip(&out) {
                    g.push(o.clone().unwrap());
                }
            }
            assert_eq!(got, want, "{threads} threads");
        }
    }

    #[test]
    fn shape_errors() {
        let mut batch = BatchSampler::new(vec![TokenSampler::new(SamplingParams::default().build(4, None).unwrap())]);
        let mut out = vec![Ok(0)];
        assert!(batch.sample(&[0.0; 3], 4, &mut out).is_err());
        assert!(batch.sample(&[0.0; 4], 0, &mut out).is_err());
        let mut bad = vec![0.0f32; 4];
        bad[2] = f32::NAN;
        batch.sample(&bad, 4, &mut out).unwrap();
        assert!(out[0].is_err());
    }
}

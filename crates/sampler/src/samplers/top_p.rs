//! `top-p` (nucleus): keep the smallest prefix of the sorted candidates whose probability
//! mass reaches `p`.

use crate::candidates::Candidates;
use crate::role::Role;
use crate::sampler::Sampler;
use crate::softmax::softmax;
use crate::sort::{bucket_partial_sort, partial_sort_inplace};

/// Nucleus filter with llama.cpp's adaptive sort: views over 1024 candidates sort only the top
/// 256 first and sort everything only if the nucleus is larger. `p >= 1` builds `?top-p`.
#[derive(Clone, Debug)]
pub struct TopP {
    p: f32,
    min_keep: usize,
}

impl TopP {
    /// A top-p filter (`llama_sampler_init_top_p`).
    pub fn new(p: f32, min_keep: usize) -> Self {
        TopP { p, min_keep }
    }
}

impl Sampler for TopP {
    fn name(&self) -> &str {
        if self.p >= 1.0 {
            "?top-p"
        } else {
            "top-p"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        if self.p >= 1.0 || c.is_empty() {
            return;
        }
        softmax(c, false);
        let size = c.len();
        let was_sorted = c.is_sorted();
        // Where the sorted candidates are read from: the view itself, or scratch.tokens.
        let mut in_scratch = false;
        let mut k = size;
        if !was_sorted && size > 1024 {
            k = 256.min(size);
            let (view, scratch) = c.split_scratch();
            bucket_partial_sort(view, k, scratch);
            in_scratch = true;
        } else if !was_sorted {
            partial_sort_inplace(c, size);
        }

        let mut cum = 0.0f32;
        let mut last = size;
        for i in 0..size {
            let p = if in_scratch { c.scratch_mut().tokens[i].p } else { c.as_slice()[i].p };
            cum += p;
            if cum >= self.p && i + 1 >= self.min_keep {
                last = i + 1;
                break;
            }
            if in_scratch && i == k - 1 {
                k = size;
                let (view, scratch) = c.split_scratch();
                bucket_partial_sort(view, k, scratch);
            }
        }
        if in_scratch {
            c.overwrite_prefix(last);
            c.set_sorted(true);
        }
        c.truncate(last);
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl TopP {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.p >= 1.0 {
            Role::Noop
        } else {
            Role::TopP
        }
    }
}

impl TopP {
    /// `p` and `min_keep`.
    pub(crate) fn params(&self) -> (f32, usize) {
        (self.p, self.min_keep)
    }
}

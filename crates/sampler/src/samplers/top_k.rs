//! `top-k`: keep the `k` highest logits.

use crate::candidates::Candidates;
use crate::role::Role;
use crate::sampler::Sampler;
use crate::softmax::top_k_cut;

/// Keeps the `k` best candidates, sorted descending; `k <= 0` builds the no-op `?top-k`.
#[derive(Clone, Debug)]
pub struct TopK {
    k: i32,
}

impl TopK {
    /// A top-k filter (`llama_sampler_init_top_k`).
    pub fn new(k: i32) -> Self {
        TopK { k }
    }
}

impl Sampler for TopK {
    fn name(&self) -> &str {
        if self.k <= 0 {
            "?top-k"
        } else {
            "top-k"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        if self.k > 0 && !c.is_empty() {
            top_k_cut(c, self.k);
        }
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl TopK {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.k <= 0 {
            Role::Noop
        } else {
            Role::TopK(self.k)
        }
    }
}

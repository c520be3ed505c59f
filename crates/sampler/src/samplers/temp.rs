//! `temp`: plain temperature scaling (used by llama.cpp's common layer with mirostat).

use crate::candidates::Candidates;
use crate::role::Role;
use crate::sampler::Sampler;
use crate::softmax::temp_scale;

/// Divides logits by `t`; `t <= 0` keeps only the first maximum; `t == 1` builds `?temp`.
#[derive(Clone, Debug)]
pub struct Temp {
    t: f32,
}

impl Temp {
    /// A temperature sampler (`llama_sampler_init_temp`).
    pub fn new(t: f32) -> Self {
        Temp { t }
    }
}

impl Sampler for Temp {
    fn name(&self) -> &str {
        if self.t == 1.0 {
            "?temp"
        } else {
            "temp"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        if self.t != 1.0 {
            temp_scale(c, self.t);
        }
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl Temp {
    /// How the whole-vocabulary fast paths treat this sampler.
    pub(crate) fn role(&self) -> Role {
        if self.t == 1.0 {
            Role::Noop
        } else if self.t > 0.0 && self.t.is_finite() {
            Role::Temp
        } else {
            Role::Opaque
        }
    }
}

impl Temp {
    /// The temperature.
    pub(crate) fn t(&self) -> f32 {
        self.t
    }
}

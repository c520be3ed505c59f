//! `min-p`: keep candidates whose probability is at least `p` times the best one's,
//! computed on logits as `logit >= max_logit + ln(p)`.

use crate::candidates::Candidates;
use crate::role::Role;
use crate::sampler::Sampler;
use crate::sort::partial_sort_inplace;

/// Min-p filter. On an unsorted view it filters in place keeping id order (and leaves the
/// view unsorted), falling back to a full sort when fewer than `min_keep` survive.
/// `p <= 0` builds `?min-p`.
#[derive(Clone, Debug)]
pub struct MinP {
    p: f32,
    min_keep: usize,
}

impl MinP {
    /// A min-p filter (`llama_sampler_init_min_p`).
    pub fn new(p: f32, min_keep: usize) -> Self {
        MinP { p, min_keep }
    }
}

impl Sampler for MinP {
    fn name(&self) -> &str {
        if self.p <= 0.0 {
            "?min-p"
        } else {
            "min-p"
        }
    }

    fn apply(&mut self, c: &mut Candidates) {
        if self.p <= 0.0 || c.is_empty() {
            return;
        }
        if !c.is_sorted() {
            let data = c.as_mut_slice();
            let mut mx = -f32::MAX;
            for d in data.iter() {
                // std::max keeps the first argument unless it is less than the second.
                if mx < d.logit {
                    mx = d.logit;
                }
            }
            let thr = mx + self.p.ln();
            let kept = data.iter().filter(|d| d.logit >= thr).count();
            if kept > 0 && kept >= self.min_keep {
                let mut w = 0;
                for r in 0..data.len() {
                    if data[r].logit >= thr {
                        data[w] = data[r];
                        w += 1;
                    }
                }
                c.truncate(kept);
                return;
            }
            let n = c.len();
            partial_sort_inplace(c, n);
        }
        let data = c.as_slice();
        let thr = data[0].logit + self.p.ln();
        let mut i = 1;
        while i < data.len() {
            if data[i].logit < thr && i >= self.min_keep {
                break;
            }
            i += 1;
        }
        c.truncate(i);
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

impl MinP {
    /// How the whole-vocabulary fast paths treat this sampler.
    /// `(p, min_keep)` (for the wide top-p fast path, which replays `apply` on sorted values).
    pub(crate) fn params(&self) -> (f32, usize) {
        (self.p, self.min_keep)
    }

    pub(crate) fn role(&self) -> Role {
        if self.p <= 0.0 {
            Role::Noop
        } else {
            Role::MinP
        }
    }
}

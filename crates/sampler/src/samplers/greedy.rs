//! `greedy`: select the first candidate with the highest logit.

use crate::candidates::Candidates;
use crate::sampler::Sampler;

/// Picks the first maximum logit in array order (strict `>` scan), like `llama_sampler_init_greedy`.
#[derive(Clone, Debug, Default)]
pub struct Greedy;

impl Greedy {
    /// A greedy selector.
    pub fn new() -> Self {
        Greedy
    }
}

impl Sampler for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }

    fn apply(&mut self, c: &mut Candidates) {
        let data = c.as_slice();
        if data.is_empty() {
            c.set_selected(None);
            return;
        }
        let mut best = 0;
        for i in 1..data.len() {
            if data[i].logit > data[best].logit {
                best = i;
            }
        }
        c.set_selected(Some(best));
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_maximum_wins() {
        let mut c = Candidates::new();
        c.fill_f32(&[1.0, 3.0, 2.0, 3.0]);
        Greedy::new().apply(&mut c);
        assert_eq!(c.selected(), Some(1));
    }

    #[test]
    fn empty_selects_nothing() {
        let mut c = Candidates::new();
        c.fill_f32(&[]);
        Greedy::new().apply(&mut c);
        assert_eq!(c.selected(), None);
    }
}

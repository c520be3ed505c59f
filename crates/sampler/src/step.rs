//! [`Step`]: one member of a [`crate::Chain`] — a built-in sampler, or a user's own.
//!
//! The built-in samplers form a closed set, so the whole-vocabulary fast paths of
//! [`crate::TokenSampler`] can recognise them by matching on the variant (and read their
//! parameters) instead of asking the samplers for hints through a public trait. A user's
//! sampler is a [`Step::Custom`]: it is opaque to the fast paths, so its `apply` always runs
//! on the complete candidate array, whatever it is named.

use crate::candidates::{Candidates, Token};
use crate::role::Role;
use crate::sampler::Sampler;
use crate::samplers::{
    adaptive_p::AdaptiveP, dist::Dist, dry::Dry, greedy::Greedy, gumbel::GumbelMax, infill::Infill,
    logit_bias::LogitBias, min_p::MinP, mirostat::Mirostat, mirostat_v2::MirostatV2, penalties::Penalties, temp::Temp,
    temp_ext::TempExt, top_k::TopK, top_n_sigma::TopNSigma, top_p::TopP, typical::Typical, xtc::Xtc,
};

/// A chain member: one of llama.cpp's samplers, or a user sampler ([`Step::Custom`]).
///
/// Built-in samplers convert into their variant with `From` (`chain.push(TopK::new(40))`); a
/// user sampler is wrapped with [`Step::custom`] or converted from a `Box<dyn Sampler>`.
#[derive(Clone)]
#[non_exhaustive]
pub enum Step {
    /// [`Greedy`].
    Greedy(Greedy),
    /// [`Dist`].
    Dist(Dist),
    /// [`TopK`].
    TopK(TopK),
    /// [`TopP`].
    TopP(TopP),
    /// [`MinP`].
    MinP(MinP),
    /// [`Typical`].
    Typical(Typical),
    /// [`Temp`].
    Temp(Temp),
    /// [`TempExt`].
    TempExt(TempExt),
    /// [`Xtc`].
    Xtc(Xtc),
    /// [`TopNSigma`].
    TopNSigma(TopNSigma),
    /// [`Mirostat`].
    Mirostat(Mirostat),
    /// [`MirostatV2`].
    MirostatV2(MirostatV2),
    /// [`Penalties`].
    Penalties(Penalties),
    /// [`Dry`].
    Dry(Dry),
    /// [`LogitBias`].
    LogitBias(LogitBias),
    /// [`AdaptiveP`].
    AdaptiveP(AdaptiveP),
    /// [`GumbelMax`].
    GumbelMax(GumbelMax),
    /// [`Infill`].
    Infill(Infill),
    /// A user sampler (or a nested [`crate::Chain`]): never skipped, never looked into.
    Custom(Box<dyn Sampler>),
}

/// Calls `$body` with `$s` bound to the sampler inside any variant.
macro_rules! each {
    ($step:expr, $s:ident => $body:expr) => {
        each!($step, $s => $body; $s => $body)
    };
    ($step:expr, $s:ident => $body:expr; $c:ident => $custom:expr) => {
        match $step {
            Step::Greedy($s) => $body,
            Step::Dist($s) => $body,
            Step::TopK($s) => $body,
            Step::TopP($s) => $body,
            Step::MinP($s) => $body,
            Step::Typical($s) => $body,
            Step::Temp($s) => $body,
            Step::TempExt($s) => $body,
            Step::Xtc($s) => $body,
            Step::TopNSigma($s) => $body,
            Step::Mirostat($s) => $body,
            Step::MirostatV2($s) => $body,
            Step::Penalties($s) => $body,
            Step::Dry($s) => $body,
            Step::LogitBias($s) => $body,
            Step::AdaptiveP($s) => $body,
            Step::GumbelMax($s) => $body,
            Step::Infill($s) => $body,
            Step::Custom($c) => $custom,
        }
    };
}

macro_rules! from_builtin {
    ($($v:ident),*) => {
        $(impl From<$v> for Step {
            fn from(s: $v) -> Step {
                Step::$v(s)
            }
        })*
    };
}

from_builtin!(
    Greedy, Dist, TopK, TopP, MinP, Typical, Temp, TempExt, Xtc, TopNSigma, Mirostat, MirostatV2, Penalties, Dry,
    LogitBias, AdaptiveP, GumbelMax, Infill
);

impl From<Box<dyn Sampler>> for Step {
    /// A boxed sampler is a [`Step::Custom`] (even a boxed built-in one: it is then opaque).
    fn from(s: Box<dyn Sampler>) -> Step {
        Step::Custom(s)
    }
}

impl From<crate::Chain> for Step {
    /// A nested chain is a [`Step::Custom`].
    fn from(c: crate::Chain) -> Step {
        Step::Custom(Box::new(c))
    }
}

impl Step {
    /// Wraps a user sampler.
    pub fn custom(s: impl Sampler + 'static) -> Step {
        Step::Custom(Box::new(s))
    }

    /// The sampler's name, as llama.cpp prints it (see [`Sampler::name`]).
    pub fn name(&self) -> &str {
        each!(self, s => s.name())
    }

    /// The sampler as a trait object.
    pub fn as_sampler(&self) -> &dyn Sampler {
        each!(self, s => s as &dyn Sampler; c => c.as_ref())
    }

    /// The sampler as a mutable trait object.
    pub fn as_sampler_mut(&mut self) -> &mut dyn Sampler {
        each!(self, s => s as &mut dyn Sampler; c => c.as_mut())
    }

    /// How the whole-vocabulary fast paths treat this step. A custom step is always
    /// [`Role::Opaque`].
    pub(crate) fn role(&self) -> Role {
        match self {
            Step::TopK(s) => s.role(),
            Step::TopP(s) => s.role(),
            Step::MinP(s) => s.role(),
            Step::Temp(s) => s.role(),
            Step::TempExt(s) => s.role(),
            Step::TopNSigma(s) => s.role(),
            Step::MirostatV2(s) => s.role(),
            Step::Penalties(s) => s.role(),
            Step::Dry(s) => s.role(),
            Step::LogitBias(s) => s.role(),
            Step::Dist(s) => s.role(),
            Step::Custom(_) => Role::Opaque,
            // Built-ins without a fast path of their own: skipped when built from "off" values.
            other if other.name().starts_with('?') => Role::Noop,
            _ => Role::Opaque,
        }
    }

    /// For [`Role::Sparse`] steps: appends the token ids whose logits this step may change.
    pub(crate) fn sparse_ids(&self, out: &mut Vec<Token>) {
        match self {
            Step::Penalties(s) => s.sparse_ids(out),
            Step::Dry(s) => s.sparse_ids(out),
            Step::LogitBias(s) => s.sparse_ids(out),
            _ => {}
        }
    }

    /// For [`Role::Sparse`] steps: applies the step to `cands`, which holds (in id order) only
    /// the ids from [`Step::sparse_ids`], exactly as if it ran on the full id-ordered
    /// vocabulary.
    pub(crate) fn apply_sparse(&mut self, cands: &mut Candidates) {
        match self {
            Step::LogitBias(s) => s.apply_sparse(cands),
            // Penalties and DRY treat each id independently of the others.
            other => other.apply(cands),
        }
    }
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Custom(s) => write!(f, "Custom({:?})", s.name()),
            other => f.write_str(other.name()),
        }
    }
}

impl Sampler for Step {
    fn name(&self) -> &str {
        Step::name(self)
    }

    fn apply(&mut self, cands: &mut Candidates) {
        each!(self, s => s.apply(cands))
    }

    fn accept(&mut self, token: Token) {
        each!(self, s => s.accept(token))
    }

    fn reset(&mut self) {
        each!(self, s => s.reset())
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }

    fn seed(&self) -> Option<u32> {
        each!(self, s => s.seed())
    }
}

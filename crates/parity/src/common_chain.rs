//! llama.cpp's common-layer chain (`common_sampler_init`) built on the llama.cpp side from the
//! same [`SamplingParams`] nucleus uses, so benchmarks and tests compare like with like.

use nucleus_sampler::{MirostatMode, SamplerType, SamplingParams};

use crate::llama::LlamaSampler;

/// The llama.cpp chain for `p` over a vocabulary of `n_vocab` (no model: DRY has no string
/// breakers, infill is skipped), in llama.cpp's common order.
pub fn llama_chain(p: &SamplingParams, n_vocab: usize) -> LlamaSampler {
    let nv = n_vocab as i32;
    let mut chain = LlamaSampler::chain();
    if !p.logit_bias.is_empty() {
        chain.push(LlamaSampler::logit_bias(nv, &p.logit_bias));
    }
    match p.mirostat {
        MirostatMode::Off => {
            let mut adaptive = false;
            for &s in &p.samplers {
                let next = match s {
                    SamplerType::Penalties => LlamaSampler::penalties(
                        nv,
                        p.penalty_last_n,
                        p.penalty_repeat,
                        p.penalty_freq,
                        p.penalty_present,
                    ),
                    SamplerType::Dry => {
                        LlamaSampler::dry(p.dry_multiplier, p.dry_base, p.dry_allowed_length, p.dry_penalty_last_n, &[])
                    }
                    SamplerType::TopNSigma => LlamaSampler::top_n_sigma(p.top_n_sigma),
                    SamplerType::TopK => LlamaSampler::top_k(p.top_k),
                    SamplerType::TypicalP => LlamaSampler::typical(p.typ_p, p.min_keep),
                    SamplerType::TopP => LlamaSampler::top_p(p.top_p, p.min_keep),
                    SamplerType::MinP => LlamaSampler::min_p(p.min_p, p.min_keep),
                    SamplerType::Xtc => LlamaSampler::xtc(p.xtc_probability, p.xtc_threshold, p.min_keep, p.seed),
                    SamplerType::Temperature => LlamaSampler::temp_ext(p.temp, p.dynatemp_range, p.dynatemp_exponent),
                    SamplerType::Infill => continue,
                    SamplerType::AdaptiveP => {
                        adaptive = true;
                        continue;
                    }
                };
                chain.push(next);
            }
            if adaptive {
                chain.push(LlamaSampler::adaptive_p(p.adaptive_target, p.adaptive_decay, p.seed));
            } else {
                chain.push(LlamaSampler::dist(p.seed));
            }
        }
        MirostatMode::V1 => {
            chain.push(LlamaSampler::temp(p.temp));
            chain.push(LlamaSampler::mirostat(nv, p.seed, p.mirostat_tau, p.mirostat_eta, 100));
        }
        MirostatMode::V2 => {
            chain.push(LlamaSampler::temp(p.temp));
            chain.push(LlamaSampler::mirostat_v2(p.seed, p.mirostat_tau, p.mirostat_eta));
        }
    }
    chain
}

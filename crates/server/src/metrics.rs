//! [`Metrics`]: counters the engine and the handlers update with plain atomics, rendered in
//! Prometheus' text format by `GET /metrics` (requests, tokens in and out, tokens/s, time to
//! first token, queue depth, busy slots, sampling time per token).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the time-to-first-token histogram, in seconds.
const TTFT_BUCKETS: [f64; 12] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// Every metric the server exports.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<Vec<((&'static str, u16), u64)>>,
    prompt_tokens: AtomicU64,
    prompt_cached: AtomicU64,
    memory_restored: AtomicU64,
    memory_restores: AtomicU64,
    memory_entries: AtomicU64,
    memory_bytes: AtomicU64,
    prompt_nanos: AtomicU64,
    completion_tokens: AtomicU64,
    reasoning_tokens: AtomicU64,
    reasoning_forced_ends: AtomicU64,
    spec_sequences: AtomicU64,
    spec_drafted: AtomicU64,
    spec_accepted: AtomicU64,
    spec_verify_passes: AtomicU64,
    sequences: AtomicU64,
    cancelled: AtomicU64,
    decode_steps: AtomicU64,
    decode_nanos: AtomicU64,
    decode_seqs: AtomicU64,
    sampling_nanos: AtomicU64,
    ttft_buckets: [AtomicU64; TTFT_BUCKETS.len()],
    ttft_count: AtomicU64,
    ttft_nanos: AtomicU64,
    queue_wait_nanos: AtomicU64,
    admitted: AtomicU64,
    queue: AtomicU64,
    busy: AtomicU64,
    slots: AtomicU64,
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl Metrics {
    /// Metrics for a server with `slots` slots.
    pub fn new(slots: usize) -> Self {
        let m = Metrics::default();
        m.slots.store(slots as u64, Ordering::Relaxed);
        m
    }

    /// Counts a finished HTTP request by route and status.
    pub fn request(&self, route: &'static str, status: u16) {
        let mut r = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        match r.iter_mut().find(|(k, _)| *k == (route, status)) {
            Some((_, n)) => *n += 1,
            None => r.push(((route, status), 1)),
        }
    }

    /// Jobs waiting for slots.
    pub fn set_queue(&self, n: usize) {
        self.queue.store(n as u64, Ordering::Relaxed);
    }

    /// Sequences holding a slot.
    pub fn set_busy(&self, n: usize) {
        self.busy.store(n as u64, Ordering::Relaxed);
    }

    /// A job got its slots after waiting `waited`.
    pub fn admitted(&self, waited: Duration) {
        self.admitted.fetch_add(1, Ordering::Relaxed);
        self.queue_wait_nanos.fetch_add(nanos(waited), Ordering::Relaxed);
    }

    /// A prompt (or part of one) of `n` tokens was evaluated in `t`.
    pub fn prompt_done(&self, n: usize, t: Duration) {
        self.prompt_tokens.fetch_add(n as u64, Ordering::Relaxed);
        self.prompt_nanos.fetch_add(nanos(t), Ordering::Relaxed);
    }

    /// A prompt started with `n` tokens kept from its slot's prompt cache.
    pub fn prompt_cached(&self, n: usize) {
        self.prompt_cached.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The prompt cache's memory now holds `entries` KV copies taking `bytes`.
    pub fn memory_cache(&self, entries: usize, bytes: usize) {
        self.memory_entries.store(entries as u64, Ordering::Relaxed);
        self.memory_bytes.store(bytes as u64, Ordering::Relaxed);
    }

    /// A prompt started from `n` tokens put back from the prompt cache's memory.
    pub fn memory_cache_hit(&self, n: usize) {
        self.memory_restores.fetch_add(1, Ordering::Relaxed);
        self.memory_restored.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// One decode call advanced `seqs` sequences in `t`.
    pub fn decode_step(&self, seqs: usize, t: Duration) {
        self.decode_steps.fetch_add(1, Ordering::Relaxed);
        self.decode_seqs.fetch_add(seqs as u64, Ordering::Relaxed);
        self.decode_nanos.fetch_add(nanos(t), Ordering::Relaxed);
    }

    /// A sequence produced its first token `t` after its request arrived.
    pub fn first_token(&self, t: Duration) {
        let s = t.as_secs_f64();
        for (i, b) in TTFT_BUCKETS.iter().enumerate() {
            if s <= *b {
                self.ttft_buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.ttft_count.fetch_add(1, Ordering::Relaxed);
        self.ttft_nanos.fetch_add(nanos(t), Ordering::Relaxed);
    }

    /// A sequence finished with `generated` tokens and `sampling` time in its sampler chain.
    pub fn sequence_done(&self, generated: usize, sampling: Duration) {
        self.sequences.fetch_add(1, Ordering::Relaxed);
        self.completion_tokens.fetch_add(generated as u64, Ordering::Relaxed);
        self.sampling_nanos.fetch_add(nanos(sampling), Ordering::Relaxed);
    }

    /// A finished sequence thought for `tokens` tokens; `forced` when its budget forced the end.
    pub fn reasoning_done(&self, tokens: usize, forced: bool) {
        self.reasoning_tokens.fetch_add(tokens as u64, Ordering::Relaxed);
        self.reasoning_forced_ends.fetch_add(forced as u64, Ordering::Relaxed);
    }

    /// A finished sequence speculated: its drafts.
    pub fn speculative_done(&self, s: &nucleus_runtime::SpecStats) {
        self.spec_sequences.fetch_add(1, Ordering::Relaxed);
        self.spec_drafted.fetch_add(s.drafted as u64, Ordering::Relaxed);
        self.spec_accepted.fetch_add(s.accepted as u64, Ordering::Relaxed);
        self.spec_verify_passes.fetch_add(s.verify_passes as u64, Ordering::Relaxed);
    }

    /// A sequence was dropped because its client left.
    pub fn cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let secs = |a: &AtomicU64| g(a) as f64 / 1e9;
        let mut o = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        };
        let completion = g(&self.completion_tokens);
        let decode_s = secs(&self.decode_nanos);
        let steps = g(&self.decode_steps);
        metric(
            "nucleus_prompt_tokens_total",
            "counter",
            "Prompt tokens evaluated.",
            g(&self.prompt_tokens).to_string(),
        );
        metric(
            "nucleus_prompt_cached_tokens_total",
            "counter",
            "Prompt tokens taken from a slot's prompt cache instead of being evaluated.",
            g(&self.prompt_cached).to_string(),
        );
        metric(
            "nucleus_prompt_cache_restores_total",
            "counter",
            "Prompts that started from tokens put back from the prompt cache's memory (--cache-ram).",
            g(&self.memory_restores).to_string(),
        );
        metric(
            "nucleus_prompt_cache_restored_tokens_total",
            "counter",
            "Prompt tokens put back from the prompt cache's memory (counted in the cached tokens too).",
            g(&self.memory_restored).to_string(),
        );
        metric(
            "nucleus_prompt_cache_memory_entries",
            "gauge",
            "Slot contents (prompts and answers) the prompt cache keeps in memory.",
            g(&self.memory_entries).to_string(),
        );
        metric(
            "nucleus_prompt_cache_memory_bytes",
            "gauge",
            "Memory taken by the prompt cache's KV copies.",
            g(&self.memory_bytes).to_string(),
        );
        metric(
            "nucleus_prompt_seconds_total",
            "counter",
            "Time spent evaluating prompts.",
            format!("{:.6}", secs(&self.prompt_nanos)),
        );
        metric(
            "nucleus_completion_tokens_total",
            "counter",
            "Tokens generated by finished sequences.",
            completion.to_string(),
        );
        metric(
            "nucleus_reasoning_tokens_total",
            "counter",
            "Tokens generated inside reasoning blocks by finished sequences.",
            g(&self.reasoning_tokens).to_string(),
        );
        metric(
            "nucleus_reasoning_forced_ends_total",
            "counter",
            "Reasoning blocks whose end the thinking budget forced.",
            g(&self.reasoning_forced_ends).to_string(),
        );
        metric(
            "nucleus_speculative_sequences_total",
            "counter",
            "Finished sequences that speculated.",
            g(&self.spec_sequences).to_string(),
        );
        let (drafted, accepted) = (g(&self.spec_drafted), g(&self.spec_accepted));
        metric(
            "nucleus_speculative_drafted_tokens_total",
            "counter",
            "Draft tokens decoded for verification by finished sequences.",
            drafted.to_string(),
        );
        metric(
            "nucleus_speculative_accepted_tokens_total",
            "counter",
            "Draft tokens the sampler confirmed (finished sequences).",
            accepted.to_string(),
        );
        let rate = if drafted > 0 { accepted as f64 / drafted as f64 } else { 0.0 };
        metric(
            "nucleus_speculative_acceptance_rate",
            "gauge",
            "Accepted over drafted tokens, all finished sequences together.",
            format!("{rate:.6}"),
        );
        metric(
            "nucleus_speculative_passes_saved_total",
            "counter",
            "Forward passes plain decoding would have needed and speculation did not (one per accepted token).",
            accepted.to_string(),
        );
        metric(
            "nucleus_speculative_verify_passes_total",
            "counter",
            "Forward passes that carried a draft (finished sequences).",
            g(&self.spec_verify_passes).to_string(),
        );
        metric("nucleus_sequences_total", "counter", "Sequences (choices) finished.", g(&self.sequences).to_string());
        metric(
            "nucleus_sequences_cancelled_total",
            "counter",
            "Sequences stopped because the client went away.",
            g(&self.cancelled).to_string(),
        );
        metric("nucleus_decode_steps_total", "counter", "Batched decode calls.", steps.to_string());
        metric(
            "nucleus_decode_seconds_total",
            "counter",
            "Time spent in batched decode calls.",
            format!("{decode_s:.6}"),
        );
        let per_step = if steps > 0 { g(&self.decode_seqs) as f64 / steps as f64 } else { 0.0 };
        metric(
            "nucleus_sequences_per_decode",
            "gauge",
            "Mean sequences advanced per decode call.",
            format!("{per_step:.3}"),
        );
        let tps = if decode_s > 0.0 { g(&self.decode_seqs) as f64 / decode_s } else { 0.0 };
        metric(
            "nucleus_generation_tokens_per_second",
            "gauge",
            "Tokens decoded per second of decode time (all sequences together).",
            format!("{tps:.3}"),
        );
        let spt = if completion > 0 { secs(&self.sampling_nanos) / completion as f64 } else { 0.0 };
        metric(
            "nucleus_sampling_seconds_per_token",
            "gauge",
            "Mean time in the sampler chain per generated token.",
            format!("{spt:.9}"),
        );
        metric(
            "nucleus_sampling_seconds_total",
            "counter",
            "Time spent in sampler chains.",
            format!("{:.6}", secs(&self.sampling_nanos)),
        );
        let admitted = g(&self.admitted);
        let wait = if admitted > 0 { secs(&self.queue_wait_nanos) / admitted as f64 } else { 0.0 };
        metric(
            "nucleus_queue_wait_seconds_mean",
            "gauge",
            "Mean time requests waited for slots.",
            format!("{wait:.6}"),
        );
        metric("nucleus_queue_depth", "gauge", "Requests waiting for slots.", g(&self.queue).to_string());
        metric("nucleus_slots_busy", "gauge", "Slots generating.", g(&self.busy).to_string());
        metric("nucleus_slots_total", "gauge", "Slots (--parallel).", g(&self.slots).to_string());

        let _ = writeln!(
            o,
            "# HELP nucleus_time_to_first_token_seconds Time from a request's arrival to its first generated token."
        );
        let _ = writeln!(o, "# TYPE nucleus_time_to_first_token_seconds histogram");
        for (i, b) in TTFT_BUCKETS.iter().enumerate() {
            let _ =
                writeln!(o, "nucleus_time_to_first_token_seconds_bucket{{le=\"{b}\"}} {}", g(&self.ttft_buckets[i]));
        }
        let count = g(&self.ttft_count);
        let _ = writeln!(o, "nucleus_time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(o, "nucleus_time_to_first_token_seconds_sum {:.6}", secs(&self.ttft_nanos));
        let _ = writeln!(o, "nucleus_time_to_first_token_seconds_count {count}");

        let _ = writeln!(o, "# HELP nucleus_requests_total HTTP requests by route and status.");
        let _ = writeln!(o, "# TYPE nucleus_requests_total counter");
        let reqs = self.requests.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for ((route, status), n) in reqs {
            let _ = writeln!(o, "nucleus_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::new(2);
        m.request("/v1/completions", 200);
        m.request("/v1/completions", 200);
        m.first_token(Duration::from_millis(30));
        m.decode_step(2, Duration::from_millis(10));
        m.sequence_done(5, Duration::from_micros(50));
        let t = m.render();
        assert!(t.contains("nucleus_requests_total{route=\"/v1/completions\",status=\"200\"} 2"), "{t}");
        assert!(t.contains("nucleus_time_to_first_token_seconds_bucket{le=\"0.05\"} 1"), "{t}");
        assert!(t.contains("nucleus_time_to_first_token_seconds_bucket{le=\"0.025\"} 0"), "{t}");
        assert!(t.contains("nucleus_completion_tokens_total 5"), "{t}");
        assert!(t.contains("nucleus_generation_tokens_per_second 200.000"), "{t}");
        assert!(t.contains("nucleus_slots_total 2"), "{t}");
        m.speculative_done(&nucleus_runtime::SpecStats { drafted: 8, accepted: 6, verify_passes: 3 });
        let t = m.render();
        assert!(t.contains("nucleus_speculative_acceptance_rate 0.750000"), "{t}");
        assert!(t.contains("nucleus_speculative_passes_saved_total 6"), "{t}");
    }
}

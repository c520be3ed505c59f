//! The sampling flags shared by `sample`, `generate` and `serve`, with llama.cpp's names,
//! meanings and defaults, turned into a validated [`SamplingParams`]. The flags are not written
//! here: each comes from its field of [`nucleus_sampler::fields`] (flag, help, kind, default),
//! so a field added there is a flag here. Only `--sampling-seq` (the codes spelling of
//! `--samplers`) is the command line's own.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use nucleus_sampler::fields::{self, Field, Kind};
use nucleus_sampler::{SamplerType, SamplingParams, Token};

/// The codes spelling of `--samplers` (llama.cpp's `--sampling-seq`).
const SAMPLING_SEQ: &str = "sampling-seq";

/// llama.cpp's sampling command-line flags, as given (each scalar flag holds its default when
/// absent).
#[derive(Debug, Clone, Default)]
pub struct SamplingArgs {
    /// The table's fields with a flag, each with what the command line gave it.
    values: Vec<(&'static Field, Given)>,
    /// `--sampling-seq`.
    sampling_seq: Option<String>,
}

/// What one flag was given.
#[derive(Debug, Clone)]
enum Given {
    Float(f32),
    Int(i64),
    Bool(bool),
    /// A repeatable flag's values, in order (`--dry-sequence-breaker`, `--logit-bias`).
    List(Vec<String>),
    /// `--samplers`, when given.
    Text(Option<String>),
}

/// The fields of the table the command line takes, with their flag.
fn flagged() -> impl Iterator<Item = (&'static Field, fields::Cli)> {
    fields::FIELDS.iter().filter_map(|f| f.cli.map(|c| (f, c)))
}

impl Args for SamplingArgs {
    fn augment_args(mut cmd: Command) -> Command {
        for (f, c) in flagged() {
            let arg = Arg::new(f.name).long(c.flag).help(c.help).value_name(f.name.to_ascii_uppercase());
            let arg = match f.kind {
                Kind::Float { default, .. } => arg
                    .value_parser(clap::value_parser!(f32))
                    .default_value(default.to_string())
                    .allow_negative_numbers(true),
                Kind::Int { default, .. } => arg
                    .value_parser(clap::value_parser!(i64))
                    .default_value(default.to_string())
                    .allow_negative_numbers(true),
                Kind::Bool { .. } => arg.action(ArgAction::SetTrue),
                Kind::Breakers => arg.action(ArgAction::Append),
                Kind::LogitBias => arg.action(ArgAction::Append).allow_hyphen_values(true),
                Kind::Samplers => arg,
            };
            cmd = cmd.arg(arg);
        }
        cmd.arg(
            Arg::new(SAMPLING_SEQ)
                .long(SAMPLING_SEQ)
                .value_name("SAMPLING_SEQ")
                .help("Sampler order as one-letter codes (e.g. \"edskypmxt\")"),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SamplingArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = SamplingArgs::default();
        args.update_from_arg_matches(m)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.values = flagged()
            .map(|(f, _)| {
                let id = f.name;
                let given = match f.kind {
                    Kind::Float { default, .. } => Given::Float(m.get_one::<f32>(id).copied().unwrap_or(default)),
                    Kind::Int { default, .. } => Given::Int(m.get_one::<i64>(id).copied().unwrap_or(default)),
                    Kind::Bool { .. } => Given::Bool(m.get_flag(id)),
                    Kind::Breakers | Kind::LogitBias => {
                        Given::List(m.get_many::<String>(id).map(|v| v.cloned().collect()).unwrap_or_default())
                    }
                    Kind::Samplers => Given::Text(m.get_one::<String>(id).cloned()),
                };
                (f, given)
            })
            .collect();
        self.sampling_seq = m.get_one::<String>(SAMPLING_SEQ).cloned();
        Ok(())
    }
}

/// Parses `TOKEN(+|-)BIAS` (llama.cpp's `--logit-bias` syntax; the bias may be `inf`).
pub fn parse_logit_bias(s: &str) -> Result<(Token, f32), String> {
    let err = || format!("invalid --logit-bias `{s}`: expected TOKEN+BIAS or TOKEN-BIAS, e.g. 15043+1 or 15043-inf");
    let pos = s.char_indices().skip(1).find(|&(_, c)| c == '+' || c == '-').map(|(i, _)| i).ok_or_else(err)?;
    let tok: Token = s[..pos].trim().parse().map_err(|_| err())?;
    let bias: f32 = s[pos..].trim().parse().map_err(|_| err())?;
    if bias.is_nan() {
        return Err(err());
    }
    Ok((tok, bias))
}

impl SamplingArgs {
    /// Builds validated parameters; `has_vocab` says whether string DRY breakers can be resolved.
    pub fn to_params(&self, has_vocab: bool) -> Result<SamplingParams, String> {
        let mut p = SamplingParams::default();
        for (f, given) in &self.values {
            let flag = f.cli.map_or(f.name, |c| c.flag);
            match (f.kind, given) {
                (Kind::Float { set, .. }, Given::Float(x)) => set(&mut p, *x),
                (Kind::Int { min, max, set, .. }, Given::Int(x)) => {
                    if !(min..=max).contains(x) {
                        return Err(int_range_error(flag, *x, min, max));
                    }
                    set(&mut p, *x).map_err(|e| e.to_string())?;
                }
                (Kind::Bool { set, .. }, Given::Bool(b)) => set(&mut p, *b),
                (Kind::Breakers, Given::List(list)) if !list.is_empty() => {
                    let mut breakers = Vec::new();
                    for b in list {
                        if b == "none" {
                            breakers.clear();
                        } else {
                            breakers.push(b.clone());
                        }
                    }
                    if !breakers.is_empty() && !has_vocab {
                        return Err(format!(
                            "--{flag} with a string needs a model vocabulary; without one only `none` is meaningful"
                        ));
                    }
                    p.dry_sequence_breakers = breakers;
                }
                (Kind::LogitBias, Given::List(list)) => {
                    for b in list {
                        p.logit_bias.push(parse_logit_bias(b)?);
                    }
                }
                (Kind::Samplers, Given::Text(Some(s))) => {
                    p.samplers = SamplerType::parse_names(s).map_err(|e| e.to_string())?;
                }
                _ => {}
            }
        }
        if let Some(s) = &self.sampling_seq {
            p.samplers = SamplerType::parse_codes(s).map_err(|e| e.to_string())?;
        }
        p.validate(None).map_err(|e| e.to_string())?;
        Ok(p)
    }
}

/// An integer flag outside what its field holds (`--seed`: -1 or a `u32`; `--min-keep`: not
/// negative; the others: an `i32`).
fn int_range_error(flag: &str, x: i64, min: i64, max: i64) -> String {
    match flag {
        "seed" => format!("invalid --seed {x}: expected -1 (random) or 0..={max}"),
        _ if min == 0 && x < 0 => format!("invalid --{flag} {x}: must be >= 0"),
        _ => format!("invalid --{flag} {x}: expected {min}..={max}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command to read the flags off.
    #[derive(clap::Parser)]
    struct Probe {
        #[command(flatten)]
        args: SamplingArgs,
    }

    fn parse(argv: &[&str]) -> Result<SamplingParams, String> {
        let probe = <Probe as clap::Parser>::try_parse_from(std::iter::once("probe").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        probe.args.to_params(true)
    }

    /// Every field the table gives a flag is a flag, with the table's help; no flags give
    /// llama.cpp's defaults; each flag reaches its field.
    #[test]
    fn flags_are_the_fields_table() {
        use clap::CommandFactory;
        let cmd = Probe::command();
        for (f, c) in flagged() {
            let arg = cmd.get_arguments().find(|a| a.get_long() == Some(c.flag));
            let arg = arg.unwrap_or_else(|| panic!("no --{} for {}", c.flag, f.name));
            assert_eq!(arg.get_help().map(|h| h.to_string()).as_deref(), Some(c.help), "--{}", c.flag);
        }
        assert_eq!(parse(&[]).unwrap(), SamplingParams::default());
        for (f, c) in flagged() {
            let flag = format!("--{}", c.flag);
            let mut want = SamplingParams::default();
            let value = match f.kind {
                Kind::Float { default, set, .. } => {
                    let x = if default == 0.5 { 0.25 } else { 0.5 };
                    set(&mut want, x);
                    x.to_string()
                }
                Kind::Int { default, set, .. } => {
                    let x = if default == 1 { 2 } else { 1 };
                    set(&mut want, x).unwrap();
                    x.to_string()
                }
                Kind::Bool { .. } => unreachable!("no boolean sampling flag"),
                Kind::Breakers => {
                    want.dry_sequence_breakers = vec!["x".into()];
                    "x".into()
                }
                Kind::Samplers => {
                    want.samplers = vec![SamplerType::TopK];
                    "top_k".into()
                }
                Kind::LogitBias => {
                    want.logit_bias = vec![(1, 2.0)];
                    "1+2".into()
                }
            };
            assert_eq!(parse(&[&flag, &value]).unwrap(), want, "{flag}");
        }
        assert_eq!(
            parse(&["--sampling-seq", "kt"]).unwrap().samplers,
            vec![SamplerType::TopK, SamplerType::Temperature]
        );
        assert_eq!(
            parse(&["--dry-sequence-breaker", "x", "--dry-sequence-breaker", "none"]).unwrap().dry_sequence_breakers,
            Vec::<String>::new()
        );
        assert!(parse(&["--seed", "-2"]).unwrap_err().contains("invalid --seed -2"));
        assert!(parse(&["--min-keep", "-1"]).unwrap_err().contains("invalid --min-keep -1: must be >= 0"));
        assert!(parse(&["--mirostat", "3"]).unwrap_err().contains("mirostat"));
        assert!(parse(&["--top-p", "2"]).unwrap_err().contains("top_p"));
        assert!(parse(&["--temp", "x"]).unwrap_err().contains("--temp"));
    }

    #[test]
    fn logit_bias_syntax() {
        assert_eq!(parse_logit_bias("15043+1").unwrap(), (15043, 1.0));
        assert_eq!(parse_logit_bias("15043-0.5").unwrap(), (15043, -0.5));
        assert_eq!(parse_logit_bias("7-inf").unwrap(), (7, f32::NEG_INFINITY));
        assert!(parse_logit_bias("abc+1").is_err());
        assert!(parse_logit_bias("12").is_err());
        assert!(parse_logit_bias("12+nan").is_err());
    }
}

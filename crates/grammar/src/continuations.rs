//! Token-trie constraints ("allowed continuations"): from a descriptor listing, per path, the
//! token sequences of its leaves (e.g. action names), only tokens continuing some leaf are
//! allowed; where one continuation is forced the tokens are returned together
//! (fast-forward). Built tries are cached by [`crate::trie_cache`].
//!
//! Descriptor: `{"modelId": "...", "descriptors": [{"path": "action", "leaves":
//! [{"name": "THINK", "tokens": [100, 101]}, ...]}]}`.

use std::collections::HashMap;
use std::sync::Arc;

use nucleus_sampler::{Candidates, Sampler, Token};
use serde_json::Value;

use crate::error::DescriptorError;
pub use crate::trie_cache::{TrieCache, CACHE_ENTRIES};

#[derive(Debug, Clone, Default)]
struct Node {
    children: Vec<(Token, u32)>,
    leaf: Option<String>,
}

/// The token trie of one path: every leaf's token sequence from the root.
#[derive(Debug, Clone)]
pub struct TokenTrie {
    nodes: Vec<Node>,
}

impl TokenTrie {
    fn new() -> Self {
        TokenTrie { nodes: vec![Node::default()] }
    }

    fn insert(&mut self, tokens: &[Token], name: &str) {
        let mut n = 0u32;
        for &t in tokens {
            n = match self.nodes[n as usize].children.iter().find(|(c, _)| *c == t) {
                Some(&(_, child)) => child,
                None => {
                    let id = self.nodes.len() as u32;
                    self.nodes.push(Node::default());
                    self.nodes[n as usize].children.push((t, id));
                    id
                }
            };
        }
        self.nodes[n as usize].leaf = Some(name.to_string());
    }
}

/// All paths of one descriptor, each with its trie.
#[derive(Debug, Clone)]
pub struct ContinuationSet {
    /// The model the token ids belong to.
    pub model_id: String,
    tries: HashMap<String, Arc<TokenTrie>>,
}

impl ContinuationSet {
    /// Parses and validates a descriptor for the loaded model (`model_id`, `n_vocab` tokens).
    pub fn from_descriptor(desc: &Value, model_id: &str, n_vocab: usize) -> Result<Self, DescriptorError> {
        let e = |m: String| DescriptorError(m);
        let got =
            desc.get("modelId").and_then(Value::as_str).ok_or_else(|| e("missing string field \"modelId\"".into()))?;
        if got != model_id {
            return Err(e(format!("modelId {got:?} is not the loaded model {model_id:?}")));
        }
        let list = desc
            .get("descriptors")
            .and_then(Value::as_array)
            .ok_or_else(|| e("missing array field \"descriptors\"".into()))?;
        let mut tries = HashMap::new();
        for (i, d) in list.iter().enumerate() {
            let path = d
                .get("path")
                .and_then(Value::as_str)
                .ok_or_else(|| e(format!("descriptors[{i}]: missing string field \"path\"")))?;
            let leaves = d
                .get("leaves")
                .and_then(Value::as_array)
                .ok_or_else(|| e(format!("descriptors[{i}] ({path}): missing array field \"leaves\"")))?;
            if leaves.is_empty() {
                return Err(e(format!("descriptors[{i}] ({path}): zero leaves")));
            }
            let mut trie = TokenTrie::new();
            for (j, leaf) in leaves.iter().enumerate() {
                let name = leaf
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| e(format!("{path}: leaves[{j}] has no string \"name\"")))?;
                let toks = leaf
                    .get("tokens")
                    .and_then(Value::as_array)
                    .ok_or_else(|| e(format!("{path}: leaf {name:?} has no array \"tokens\"")))?;
                if toks.is_empty() {
                    return Err(e(format!("{path}: leaf {name:?} has no tokens")));
                }
                let mut ids = Vec::with_capacity(toks.len());
                for t in toks {
                    let id = t.as_i64().filter(|&v| v >= 0 && (v as u64) < n_vocab as u64).ok_or_else(|| {
                        e(format!("{path}: leaf {name:?} has token {t} outside the vocabulary (0..{n_vocab})"))
                    })?;
                    ids.push(id as Token);
                }
                trie.insert(&ids, name);
            }
            if tries.insert(path.to_string(), Arc::new(trie)).is_some() {
                return Err(e(format!("path {path:?} appears twice")));
            }
        }
        if tries.is_empty() {
            return Err(e("zero descriptors".into()));
        }
        Ok(ContinuationSet { model_id: model_id.to_string(), tries })
    }

    /// A constraint positioned at the start of `path`.
    pub fn constraint(&self, path: &str, mode: Mode) -> Result<TrieConstraint, DescriptorError> {
        let trie = self.tries.get(path).ok_or_else(|| DescriptorError(format!("no descriptor for path {path:?}")))?;
        Ok(TrieConstraint { trie: trie.clone(), node: 0, mode })
    }

    /// The paths described.
    pub fn paths(&self) -> Vec<&str> {
        self.tries.keys().map(String::as_str).collect()
    }
}

/// How the next token is chosen among the allowed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Argmax over the allowed set (the sampler selects it).
    Greedy,
    /// The rest of the chain samples over the allowed set.
    Sampled,
}

/// A position in one path's trie.
#[derive(Debug, Clone)]
pub struct TrieConstraint {
    trie: Arc<TokenTrie>,
    node: u32,
    mode: Mode,
}

impl TrieConstraint {
    /// Tokens allowed next (empty once a leaf with no longer continuation is reached).
    pub fn allowed(&self) -> impl Iterator<Item = Token> + '_ {
        self.trie.nodes[self.node as usize].children.iter().map(|&(t, _)| t)
    }

    /// The leaf name if the tokens so far spell a complete leaf.
    pub fn complete(&self) -> Option<&str> {
        self.trie.nodes[self.node as usize].leaf.as_deref()
    }

    /// Whether nothing more can follow.
    pub fn is_finished(&self) -> bool {
        self.trie.nodes[self.node as usize].children.is_empty()
    }

    /// Tokens that are forced from here (a single continuation and no leaf ending on the
    /// way), to be fed in one batch; does not advance.
    pub fn forced(&self) -> Vec<Token> {
        let mut out = Vec::new();
        let mut n = self.node as usize;
        loop {
            let node = &self.trie.nodes[n];
            if node.children.len() != 1 || node.leaf.is_some() {
                break;
            }
            let (t, child) = node.children[0];
            out.push(t);
            n = child as usize;
        }
        out
    }

    /// Advances by `token`, or reports that it does not continue any leaf.
    pub fn advance(&mut self, token: Token) -> Result<(), DescriptorError> {
        match self.trie.nodes[self.node as usize].children.iter().find(|(t, _)| *t == token) {
            Some(&(_, child)) => {
                self.node = child;
                Ok(())
            }
            None => Err(DescriptorError(format!("token {token} does not continue any leaf here"))),
        }
    }

    /// Advances by every token of `tokens` (e.g. the result of [`TrieConstraint::forced`]).
    pub fn advance_all(&mut self, tokens: &[Token]) -> Result<(), DescriptorError> {
        for &t in tokens {
            self.advance(t)?;
        }
        Ok(())
    }
}

impl Sampler for TrieConstraint {
    fn name(&self) -> &str {
        "token-trie"
    }

    fn apply(&mut self, cands: &mut Candidates) {
        let node = &self.trie.nodes[self.node as usize];
        if node.children.is_empty() {
            return; // the constrained span is over
        }
        let allowed = |id: Token| node.children.iter().any(|&(t, _)| t == id);
        for c in cands.as_mut_slice() {
            if !allowed(c.id) {
                c.logit = f32::NEG_INFINITY;
            }
        }
        if self.mode == Mode::Greedy {
            let s = cands.as_mut_slice();
            let mut b: Option<usize> = None;
            for i in 0..s.len() {
                if allowed(s[i].id) && b.is_none_or(|j| s[i].logit > s[j].logit) {
                    b = Some(i);
                }
            }
            if let Some(b) = b {
                s.swap(0, b);
                cands.truncate(1);
                cands.set_selected(Some(0));
            }
        }
    }

    fn accept(&mut self, token: Token) {
        let _ = self.advance(token);
    }

    fn reset(&mut self) {
        self.node = 0;
    }

    fn clone_box(&self) -> Box<dyn Sampler> {
        Box::new(self.clone())
    }
}

//! [`VocabIndex`]: the vocabulary's token byte strings, read once through
//! `nucleus_sampler::Vocab`, laid out as a prefix trie in depth-first order so a mask walk
//! checks shared prefixes once and skips whole subtrees on the first rejected byte.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nucleus_sampler::{Token, Vocab};

use crate::loop_exits::LoopExits;

use crate::parse::TokenLookup;

/// One trie node: the byte on the edge from its parent, its depth, where its subtree ends,
/// and the tokens whose text ends exactly here.
#[derive(Debug, Clone, Copy)]
pub struct TrieNode {
    /// Byte on the incoming edge.
    pub byte: u8,
    /// Depth (root = 0).
    pub depth: u32,
    /// Index one past the last node of this subtree.
    pub subtree_end: u32,
    /// Range into [`VocabIndex::node_tokens`].
    pub tok_start: u32,
    /// End of that range.
    pub tok_end: u32,
    /// End of the tokens of the whole subtree (they are contiguous from `tok_start`).
    pub subtree_tok_end: u32,
    /// Index into [`VocabIndex::byte_sets`]: every byte on an edge inside this subtree.
    pub bytes: u32,
    /// Bytes from this node's own byte down to the deepest token end in its subtree.
    pub height: u32,
}

/// Token texts, EOG flags and the token trie of one model vocabulary.
#[derive(Debug, Clone)]
pub struct VocabIndex {
    n_vocab: usize,
    pieces: Vec<Box<[u8]>>,
    eog: Vec<bool>,
    /// The end-of-generation token ids.
    eog_ids: Vec<u32>,
    /// Trie nodes in depth-first order; node 0 is the root.
    pub nodes: Vec<TrieNode>,
    /// Token ids grouped by node, in trie order: the tokens of a subtree are contiguous, so a
    /// mask walk records them as one range of positions.
    pub node_tokens: Vec<u32>,
    /// Distinct byte sets (256-bit) referenced by [`TrieNode::bytes`].
    pub byte_sets: Vec<[u64; 4]>,
    /// Every token with text (one bit per id): the starting point when a mask is mostly full.
    pub text_words: Vec<u64>,
    /// Per node: its byte starts a character and every token of the subtree is well-formed
    /// UTF-8 from there on (a cut final character allowed), as the grammar automaton decodes.
    pub utf8_ok: Vec<bool>,
    /// Per node: the first sibling at or after it (same parent) whose subtree holds a
    /// [`SPECIAL`] byte or malformed UTF-8, or the parent's subtree end. The siblings before it
    /// are plain text: inside any state that accepts every plain byte forever they are all
    /// allowed, as one token range ending at [`VocabIndex::plain_tok_end`].
    pub plain_next: Vec<u32>,
    /// Per node: where the token range of the plain siblings from it up to `plain_next` ends.
    pub plain_tok_end: Vec<u32>,
    max_depth: usize,
    by_text: HashMap<Box<[u8]>, u32>,
    /// Cache of [`LoopExits`] by byte set, shared by every grammar using this vocabulary
    /// (JSON grammars share a handful of sets: string characters, key characters).
    exits: Arc<Mutex<ExitsCache>>,
    /// [`LoopExits`] keep their endings trie when the exits hold at most 1/this of the tokens.
    pub(crate) endings_share: usize,
}

/// Byte set -> its loop exits, most recently used last.
type ExitsCache = Vec<([u64; 4], Arc<LoopExits>)>;

/// How many byte sets keep their [`LoopExits`] in [`VocabIndex::loop_exits`].
const EXIT_SETS: usize = 64;

impl VocabIndex {
    /// Reads every token's text from `vocab` and builds the trie.
    pub fn new(vocab: &dyn Vocab) -> Self {
        let n = vocab.n_vocab();
        let mut pieces = Vec::with_capacity(n);
        let mut eog = Vec::with_capacity(n);
        let mut buf = Vec::new();
        for id in 0..n {
            vocab.token_piece(id as Token, &mut buf);
            pieces.push(buf.clone().into_boxed_slice());
            eog.push(vocab.is_eog(id as Token));
        }
        Self::from_pieces(pieces, eog)
    }

    /// Builds the index from token texts (index = token id) and the end-of-generation ids, as
    /// an application hands them over (the C ABI, Python, Node): checks that there are between
    /// 1 and 2^31 - 1 tokens and that every end-of-generation id names one of them.
    pub fn checked(pieces: Vec<Box<[u8]>>, eog_ids: &[i64]) -> Result<Self, crate::error::VocabError> {
        let n = pieces.len();
        if n == 0 || n > i32::MAX as usize {
            return Err(crate::error::VocabError::Size(n));
        }
        let mut eog = vec![false; n];
        for &id in eog_ids {
            if id < 0 || id as u64 >= n as u64 {
                return Err(crate::error::VocabError::EogOutside { id, n_vocab: n });
            }
            eog[id as usize] = true;
        }
        Ok(Self::from_pieces(pieces, eog))
    }

    /// Builds the index from explicit token texts and EOG flags (one per token).
    pub fn from_pieces(pieces: Vec<Box<[u8]>>, eog: Vec<bool>) -> Self {
        let n_vocab = pieces.len();
        // Text as llama.cpp sees it: cut at the first NUL; empty text is never allowed.
        let mut order: Vec<u32> = (0..n_vocab as u32)
            .filter(|&i| !eog[i as usize] && !Self::effective(&pieces[i as usize]).is_empty())
            .collect();
        order.sort_by(|&a, &b| Self::effective(&pieces[a as usize]).cmp(Self::effective(&pieces[b as usize])));
        let mut nodes = vec![TrieNode {
            byte: 0,
            depth: 0,
            subtree_end: 0,
            tok_start: 0,
            tok_end: 0,
            subtree_tok_end: 0,
            bytes: 0,
            height: 0,
        }];
        let mut node_tokens = Vec::with_capacity(order.len());
        // path[d] = node index at depth d of the current branch.
        let mut path: Vec<usize> = vec![0];
        let mut prev: &[u8] = &[];
        let mut max_depth = 0;
        let mut utf8_ok: Vec<bool> = vec![true];
        for &id in &order {
            let text = Self::effective(&pieces[id as usize]);
            let common = prev.iter().zip(text).take_while(|(a, b)| a == b).count();
            // Close nodes deeper than the common prefix.
            while path.len() > common + 1 {
                let done = path.pop().unwrap();
                nodes[done].subtree_end = nodes.len() as u32;
            }
            for (d, &b) in text.iter().enumerate().skip(common) {
                let t = node_tokens.len() as u32;
                nodes.push(TrieNode {
                    byte: b,
                    depth: d as u32 + 1,
                    subtree_end: 0,
                    tok_start: t,
                    tok_end: t,
                    subtree_tok_end: 0,
                    bytes: 0,
                    height: 1,
                });
                utf8_ok.push(true);
                path.push(nodes.len() - 1);
            }
            for (p, &node) in path.iter().enumerate().skip(1) {
                if !valid_utf8_from(text, p - 1) {
                    utf8_ok[node] = false;
                }
            }
            let last = *path.last().unwrap();
            if nodes[last].tok_end != node_tokens.len() as u32 {
                // Tokens attach to a node right after its creation or right after a duplicate.
                nodes[last].tok_start = node_tokens.len() as u32;
            }
            node_tokens.push(id);
            nodes[last].tok_end = node_tokens.len() as u32;
            max_depth = max_depth.max(text.len());
            prev = text;
        }
        while let Some(done) = path.pop() {
            nodes[done].subtree_end = nodes.len() as u32;
        }
        // Subtree token ends and byte sets, children before parents (reverse DFS order).
        let mut sets: Vec<[u64; 4]> = vec![[0; 4]; nodes.len()];
        let mut tok_end_sub: Vec<u32> = nodes.iter().map(|n| n.tok_end).collect();
        for i in (1..nodes.len()).rev() {
            let b = nodes[i].byte;
            sets[i][(b >> 6) as usize] |= 1u64 << (b & 63);
            // Fold into the parent: the nearest earlier node one level up.
            let d = nodes[i].depth;
            let mut p = i - 1;
            while nodes[p].depth >= d {
                p -= 1;
            }
            let si = sets[i];
            for k in 0..4 {
                sets[p][k] |= si[k];
            }
            nodes[p].height = nodes[p].height.max(nodes[i].height + 1);
            tok_end_sub[p] = tok_end_sub[p].max(tok_end_sub[i]);
        }
        let mut byte_sets: Vec<[u64; 4]> = Vec::new();
        let mut set_ids: HashMap<[u64; 4], u32> = HashMap::new();
        for (i, n) in nodes.iter_mut().enumerate() {
            n.subtree_tok_end = tok_end_sub[i];
            n.bytes = *set_ids.entry(sets[i]).or_insert_with(|| {
                byte_sets.push(sets[i]);
                byte_sets.len() as u32 - 1
            });
        }
        let mut text_words = vec![0u64; n_vocab.div_ceil(64)];
        for &t in &node_tokens {
            text_words[(t >> 6) as usize] |= 1u64 << (t & 63);
        }
        let (plain_next, plain_tok_end) = plain_sibling_runs(&nodes, &byte_sets, &utf8_ok);
        let mut by_text = HashMap::new();
        for (i, p) in pieces.iter().enumerate() {
            if p.first() == Some(&b'<') && p.last() == Some(&b'>') {
                by_text.entry(p.clone()).or_insert(i as u32);
            }
        }
        let eog_ids = (0..n_vocab as u32).filter(|&i| eog[i as usize]).collect();
        VocabIndex {
            n_vocab,
            pieces,
            eog,
            eog_ids,
            nodes,
            node_tokens,
            byte_sets,
            text_words,
            utf8_ok,
            plain_next,
            plain_tok_end,
            max_depth,
            by_text,
            exits: Arc::new(Mutex::new(Vec::new())),
            endings_share: 16,
        }
    }

    fn effective(p: &[u8]) -> &[u8] {
        match p.iter().position(|&b| b == 0) {
            Some(i) => &p[..i],
            None => p,
        }
    }

    /// Makes every looping byte set keep its endings trie however many tokens leave it (the
    /// default keeps it only when few do), so tests can check that path on small vocabularies.
    #[doc(hidden)]
    pub fn keep_loop_endings_always(&mut self) {
        self.endings_share = 1;
        self.exits.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Number of token ids.
    pub fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// Longest token text in bytes.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The text of `token` (empty for ids outside the vocabulary).
    pub fn piece(&self, token: Token) -> &[u8] {
        if token < 0 || token as usize >= self.n_vocab {
            return &[];
        }
        &self.pieces[token as usize]
    }

    /// The text of `token` as the grammar consumes it (cut at NUL).
    pub fn grammar_piece(&self, token: Token) -> &[u8] {
        Self::effective(self.piece(token))
    }

    /// The end-of-generation token ids.
    pub fn eog_ids(&self) -> &[u32] {
        &self.eog_ids
    }

    /// Whether `token` ends generation.
    pub fn is_eog(&self, token: Token) -> bool {
        token >= 0 && (token as usize) < self.n_vocab && self.eog[token as usize]
    }

    /// Whether `token` can ever be allowed by text rules (non-EOG, non-empty text).
    pub fn has_text(&self, token: Token) -> bool {
        !self.is_eog(token) && !self.grammar_piece(token).is_empty()
    }
}

/// Bytes that end ordinary text in JSON strings and keys: controls, `"`, `\` and DEL. Every
/// other byte (UTF-8 included) is "plain".
pub const SPECIAL: [u64; 4] = [0x0000_0004_FFFF_FFFF, 0x8000_0000_1000_0000, 0, 0];

/// `plain_next` and `plain_tok_end` of every node (see [`VocabIndex::plain_next`]).
fn plain_sibling_runs(nodes: &[TrieNode], sets: &[[u64; 4]], utf8_ok: &[bool]) -> (Vec<u32>, Vec<u32>) {
    let n = nodes.len();
    let mut next = vec![n as u32; n];
    let mut tok_end = vec![0u32; n];
    let plain = |i: usize| {
        let s = &sets[nodes[i].bytes as usize];
        (0..4).all(|k| s[k] & SPECIAL[k] == 0) && ((s[2] | s[3]) == 0 || utf8_ok[i])
    };
    let mut children = Vec::new();
    for p in 0..n {
        children.clear();
        let mut c = p + 1;
        while c < nodes[p].subtree_end as usize {
            children.push(c);
            c = nodes[c].subtree_end as usize;
        }
        let (mut nx, mut end) = (nodes[p].subtree_end, nodes[p].subtree_tok_end);
        for &c in children.iter().rev() {
            if !plain(c) {
                nx = c as u32;
                end = nodes[c].tok_start;
            }
            next[c] = nx;
            tok_end[c] = end;
        }
    }
    (next, tok_end)
}

/// Whether `text[from..]` starts a character and is well-formed UTF-8 whose characters are
/// all U+0080..=U+10FFFF or ASCII (no stray continuation bytes, overlong forms, or leads
/// beyond U+10FFFF); a cut last character is allowed if its prefix is well-formed.
pub(crate) fn valid_utf8_from(text: &[u8], from: usize) -> bool {
    let mut i = from;
    while i < text.len() {
        let b = text[i];
        let (n, lo2, hi2) = match b {
            0x01..=0x7F => (0, 0x80, 0xBF),
            0xC2..=0xDF => (1, 0x80, 0xBF),
            0xE0 => (2, 0xA0, 0xBF),
            0xE1..=0xEF => (2, 0x80, 0xBF),
            0xF0 => (3, 0x90, 0xBF),
            0xF1..=0xF3 => (3, 0x80, 0xBF),
            0xF4 => (3, 0x80, 0x8F),
            _ => return false,
        };
        for k in 1..=n {
            let (lo, hi) = if k == 1 { (lo2, hi2) } else { (0x80, 0xBF) };
            match text.get(i + k) {
                None => return true,
                Some(&c) if (lo..=hi).contains(&c) => {}
                Some(_) => return false,
            }
        }
        i += n + 1;
    }
    true
}

impl VocabIndex {
    /// The tokens made only of bytes in `bytes` (a 256-bit set), well-formed UTF-8 when they
    /// use bytes from 0x80 up: exactly the tokens that keep a state whose self-loop set is
    /// `bytes`. One bit per trie-order position (see [`VocabIndex::node_tokens`]). A plain
    /// scan of every token: the reference [`LoopExits::within`] is checked against.
    pub fn tokens_within(&self, bytes: &[u64; 4]) -> Vec<u64> {
        let mut m = vec![0u64; self.node_tokens.len().div_ceil(64)];
        for (k, &id) in self.node_tokens.iter().enumerate() {
            let t = self.grammar_piece(id as Token);
            let mut high = false;
            let inside = t.iter().all(|&b| {
                high |= b >= 0x80;
                bytes[(b >> 6) as usize] & (1u64 << (b & 63)) != 0
            });
            if inside && (!high || valid_utf8_from(t, 0)) {
                m[k >> 6] |= 1u64 << (k & 63);
            }
        }
        m
    }

    /// The [`LoopExits`] of byte set `bytes`, computed on first use and cached.
    pub fn loop_exits(&self, bytes: &[u64; 4]) -> Arc<LoopExits> {
        let mut c = self.exits.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = c.iter().position(|(k, _)| k == bytes) {
            let hit = c.remove(i);
            let m = hit.1.clone();
            c.push(hit);
            return m;
        }
        let m = Arc::new(LoopExits::new(self, bytes));
        if c.len() >= EXIT_SETS {
            c.remove(0);
        }
        c.push((*bytes, m.clone()));
        m
    }
}

impl TokenLookup for VocabIndex {
    fn token_for_text(&self, text: &[u8]) -> Option<u32> {
        self.by_text.get(text).copied()
    }
}

//! `nucleus.Vocab`, `nucleus.Grammar` and `nucleus.TokenTrie`: nucleus-grammar's
//! [`GrammarMatcher`] and [`TrieMatcher`] with masks written into a caller's int32 buffer in
//! place.

use std::sync::{Arc, Mutex, MutexGuard};

use nucleus_grammar::bitmask::{as_unsigned, bitmask_words};
use nucleus_grammar::continuations::Mode;
use nucleus_grammar::{GrammarMatcher, OnEog, TrieMatcher, VocabIndex};
use nucleus_runtime::{token_trie_for, TrieSetting};
use nucleus_sampler::Token;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::Value;

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A token id from Python, or None when no token has it.
fn token(t: i64) -> Option<Token> {
    Token::try_from(t).ok()
}

/// A tokenizer vocabulary: every token's bytes (index = token id) and the end-of-generation
/// ids. Build it once and share it between grammars.
#[pyclass(module = "nucleus._nucleus", frozen)]
pub(crate) struct Vocab {
    index: Arc<VocabIndex>,
}

#[pymethods]
impl Vocab {
    #[new]
    #[pyo3(signature = (pieces, eog_ids = Vec::new()))]
    fn new(py: Python<'_>, pieces: Vec<Vec<u8>>, eog_ids: Vec<i64>) -> PyResult<Self> {
        let pieces = pieces.into_iter().map(Vec::into_boxed_slice).collect();
        let index = py.detach(|| VocabIndex::checked(pieces, &eog_ids)).map_err(value_error)?;
        Ok(Vocab { index: Arc::new(index) })
    }

    /// Number of tokens.
    #[getter]
    fn n_vocab(&self) -> usize {
        self.index.n_vocab()
    }

    /// Words of one packed bitmask row: `ceil(n_vocab / 32)`.
    #[getter]
    fn bitmask_words(&self) -> usize {
        bitmask_words(self.index.n_vocab())
    }
}

/// A JSON Schema given as a dict (any JSON value) or as JSON text.
fn schema_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let text: String = if let Ok(s) = obj.cast::<PyString>() {
        s.to_str()?.to_string()
    } else {
        let json = obj.py().import("json")?;
        json.call_method1("dumps", (obj,))?.extract()?
    };
    serde_json::from_str(&text).map_err(|e| PyValueError::new_err(format!("json_schema is not valid JSON: {e}")))
}

/// Row `index` of a writable int32 buffer (1-D: the whole buffer is one row).
fn with_bitmask_row<R>(out: &Bound<'_, PyAny>, index: usize, f: impl FnOnce(&mut [u32]) -> R) -> PyResult<R> {
    let buf = PyBuffer::<i32>::get(out)?;
    if buf.readonly() {
        return Err(PyValueError::new_err("the bitmask buffer is read-only"));
    }
    let Some(ptr) = buf.as_slice_ptr() else {
        return Err(PyValueError::new_err("the bitmask must be C-contiguous"));
    };
    let shape = buf.shape().to_vec();
    let (rows, width) = match shape.as_slice() {
        [w] => (1, *w),
        [r, w] => (*r, *w),
        _ => return Err(PyValueError::new_err(format!("the bitmask must be 1-D or 2-D, not shape {shape:?}"))),
    };
    if index >= rows {
        return Err(PyValueError::new_err(format!("index {index} is outside the bitmask's {rows} rows")));
    }
    // SAFETY: PyO3 checked the format (int32), item size and alignment; the buffer is
    // writable and C-contiguous, exported until `buf` drops, and covers `rows * width` items.
    // The GIL is held, so no Python code touches it meanwhile.
    let all: &mut [i32] = unsafe { &mut *ptr.as_ptr() };
    Ok(f(as_unsigned(&mut all[index * width..(index + 1) * width])))
}

/// A grammar position over a vocabulary: `Grammar(vocab, gbnf)` (llama.cpp's GBNF, start
/// rule `start`) or `Grammar(vocab, json_schema=schema)` (strict: a keyword that cannot be
/// enforced exactly raises `ValueError` naming the keyword and its JSON pointer;
/// `llama_cpp_compat=True` converts it as llama.cpp's `json_schema_to_grammar` does instead).
#[pyclass(module = "nucleus._nucleus")]
pub(crate) struct Grammar {
    n_vocab: usize,
    state: Mutex<GrammarMatcher>,
}

impl Grammar {
    fn lock(&self) -> MutexGuard<'_, GrammarMatcher> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl Grammar {
    #[new]
    #[pyo3(signature = (vocab, gbnf = None, *, json_schema = None, start = "root", llama_cpp_compat = false))]
    fn new(
        py: Python<'_>,
        vocab: &Vocab,
        gbnf: Option<&str>,
        json_schema: Option<&Bound<'_, PyAny>>,
        start: &str,
        llama_cpp_compat: bool,
    ) -> PyResult<Self> {
        let index = vocab.index.clone();
        let m = match (gbnf, json_schema) {
            (Some(text), None) => {
                py.detach(|| GrammarMatcher::from_gbnf(index, text, start, OnEog::Terminate)).map_err(value_error)?
            }
            (None, Some(schema)) => {
                let v = schema_value(schema)?;
                py.detach(|| GrammarMatcher::from_json_schema(index, &v, llama_cpp_compat, OnEog::Terminate))
                    .map_err(value_error)?
            }
            _ => return Err(PyValueError::new_err("give exactly one of gbnf or json_schema")),
        };
        Ok(Grammar { n_vocab: m.n_vocab(), state: Mutex::new(m) })
    }

    /// Vocabulary size.
    #[getter]
    fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// Writes the tokens allowed next into row `index` of `bitmask` (int32, `ceil(n_vocab /
    /// 32)` words per row, bit `i % 32` of word `i / 32` for token `i`), in place.
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(&self, py: Python<'_>, bitmask: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
        // The first mask of a state may walk the whole vocabulary: computed without the GIL.
        with_bitmask_row(bitmask, index, |row| py.detach(|| self.lock().fill_bitmask(row)))?.map_err(value_error)
    }

    /// The tokens allowed next, in increasing order (the same set as the bitmask).
    fn allowed_tokens(&self, py: Python<'_>) -> Vec<u32> {
        py.detach(|| self.lock().allowed_tokens())
    }

    /// Whether `token` is allowed next, checked without computing a mask.
    fn is_allowed(&self, token: i64) -> bool {
        self::token(token).is_some_and(|t| self.lock().is_allowed(t))
    }

    /// Advances by `token`. Returns False (and changes nothing) if the grammar does not allow
    /// it here.
    fn accept_token(&self, token: i64) -> bool {
        self::token(token).is_some_and(|t| self.lock().accept(t).is_ok())
    }

    /// Undoes the last `n` accepted tokens (speculative decoding).
    fn rollback(&self, n: usize) -> PyResult<()> {
        self.lock().rollback(n).map_err(value_error)
    }

    /// Number of accepted tokens that `rollback` can undo.
    #[getter]
    fn num_accepted(&self) -> usize {
        self.lock().accepted()
    }

    /// Whether an end-of-generation token was accepted, or the grammar is complete and nothing
    /// may follow.
    fn is_terminated(&self) -> bool {
        self.lock().is_terminated()
    }

    /// Whether the text so far is a complete match (end of generation is allowed now).
    fn can_end(&self) -> bool {
        self.lock().can_end()
    }

    /// Back to the start of the grammar.
    fn reset(&self) {
        self.lock().reset()
    }

    /// An independent copy at the same position (sharing the compiled grammar and its caches).
    fn clone(&self) -> Self {
        Grammar { n_vocab: self.n_vocab, state: Mutex::new(self.lock().clone()) }
    }
}

/// The token-trie constraint: `TokenTrie(descriptor, mode="greedy", *, path=None,
/// n_vocab=None, model_id=None)` where `descriptor` is `{"modelId", "descriptors": [{"path",
/// "leaves": [{"name", "tokens"}]}]}` (dict or JSON text). Only tokens continuing some leaf of
/// `path` (default: the descriptor's only path) are allowed; `forced()` gives the tokens that
/// follow with no choice. `mode` says how a generation picks among the allowed tokens
/// (`greedy`: the most likely; `sampled`: the sampler chain). `n_vocab` defaults to one past
/// the largest token id listed. `Model.set_token_trie` / `generate(token_trie=...)` constrain a
/// model's generations with it.
#[pyclass(module = "nucleus._nucleus")]
pub(crate) struct TokenTrie {
    state: Mutex<TrieMatcher>,
}

impl TokenTrie {
    fn lock(&self) -> MutexGuard<'_, TrieMatcher> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This trie's path and mode as a constraint for a loaded model
    /// ([`nucleus_runtime::token_trie_for`]).
    pub(crate) fn for_model(&self, model_id: &str, n_vocab: usize) -> PyResult<TrieSetting> {
        token_trie_for(&self.lock(), model_id, n_vocab).map_err(|e| value_error(format!("token trie: {e}")))
    }
}

#[pymethods]
impl TokenTrie {
    #[new]
    #[pyo3(signature = (descriptor, mode = "greedy", *, path = None, n_vocab = None, model_id = None))]
    fn new(
        descriptor: &Bound<'_, PyAny>,
        mode: &str,
        path: Option<&str>,
        n_vocab: Option<usize>,
        model_id: Option<&str>,
    ) -> PyResult<Self> {
        let desc = schema_value(descriptor)?;
        let mode = Mode::from_name(mode).map_err(value_error)?;
        let t = TrieMatcher::new(&desc, path, mode, n_vocab, model_id).map_err(value_error)?;
        Ok(TokenTrie { state: Mutex::new(t) })
    }

    /// The descriptor path this trie walks.
    #[getter]
    fn path(&self) -> String {
        self.lock().path().to_string()
    }

    /// "greedy" or "sampled".
    #[getter]
    fn mode(&self) -> &'static str {
        self.lock().mode().name()
    }

    /// Vocabulary size.
    #[getter]
    fn n_vocab(&self) -> usize {
        self.lock().n_vocab()
    }

    /// Tokens allowed next (empty once nothing can follow).
    fn allowed(&self) -> Vec<i32> {
        self.lock().allowed()
    }

    /// Tokens forced from here, to feed in one batch; does not advance.
    fn forced(&self) -> Vec<i32> {
        self.lock().forced()
    }

    /// Advances by one token or a list of tokens; `ValueError` if one continues no leaf
    /// (nothing changes then).
    fn advance(&self, tokens: &Bound<'_, PyAny>) -> PyResult<()> {
        let list: Vec<i64> = match tokens.extract::<i64>() {
            Ok(t) => vec![t],
            Err(_) => tokens.extract()?,
        };
        let list = list
            .into_iter()
            .map(|t| token(t).ok_or_else(|| value_error(format!("token {t} is out of range"))))
            .collect::<PyResult<Vec<Token>>>()?;
        self.lock().advance(&list).map_err(value_error)
    }

    /// The leaf name if the tokens so far spell a complete leaf, else None.
    fn complete(&self) -> Option<String> {
        self.lock().complete().map(str::to_string)
    }

    /// Whether nothing more can follow.
    fn is_finished(&self) -> bool {
        self.lock().is_finished()
    }

    /// Back to the start of the path.
    fn reset(&self) {
        self.lock().reset()
    }

    /// Writes the allowed tokens into row `index` of an int32 bitmask (every token once the
    /// path is finished).
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(&self, bitmask: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
        with_bitmask_row(bitmask, index, |row| self.lock().fill_bitmask(row))?.map_err(value_error)
    }
}

//! Recent responses kept in memory for `GET /v1/responses/{id}` and `previous_response_id`:
//! at most `--responses-store` of them, the least recently used dropped first. A response is
//! kept with its conversation as Responses items (its input after the chain it continued, and
//! its output), so the next turn's prompt is that conversation plus the new input — the same
//! leading tokens, which the prompt cache then reuses.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::body::Item;
use super::types::ResponseObject;

/// One kept response.
#[derive(Clone, Debug)]
pub struct Stored {
    /// The response as answered.
    pub response: ResponseObject,
    /// The conversation through this response's output (without `instructions`).
    pub items: Vec<Item>,
}

#[derive(Default)]
struct Inner {
    /// By id: the entry and its last use.
    entries: HashMap<String, (u64, Arc<Stored>)>,
    /// Last use → id, oldest first.
    order: BTreeMap<u64, String>,
    tick: u64,
}

/// The bounded LRU of responses.
pub struct ResponseStore {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl ResponseStore {
    /// A store keeping at most `capacity` responses (0: none).
    pub fn new(capacity: usize) -> Self {
        ResponseStore { capacity, inner: Mutex::new(Inner::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `s` under its response's id, dropping the least recently used beyond capacity.
    pub fn put(&self, s: Stored) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.lock();
        g.tick += 1;
        let (tick, id) = (g.tick, s.response.id.clone());
        if let Some((old, _)) = g.entries.insert(id.clone(), (tick, Arc::new(s))) {
            g.order.remove(&old);
        }
        g.order.insert(tick, id);
        while g.entries.len() > self.capacity {
            let Some((_, oldest)) = g.order.pop_first() else { break };
            g.entries.remove(&oldest);
        }
    }

    /// The response `id` (now the most recently used).
    pub fn get(&self, id: &str) -> Option<Arc<Stored>> {
        let mut g = self.lock();
        g.tick += 1;
        let tick = g.tick;
        let (old, s) = {
            let e = g.entries.get_mut(id)?;
            let old = std::mem::replace(&mut e.0, tick);
            (old, e.1.clone())
        };
        g.order.remove(&old);
        g.order.insert(tick, id.to_string());
        Some(s)
    }

    /// Forgets `id`; whether it was kept.
    pub fn delete(&self, id: &str) -> bool {
        let mut g = self.lock();
        match g.entries.remove(id) {
            Some((tick, _)) => {
                g.order.remove(&tick);
                true
            }
            None => false,
        }
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::responses::types::{Echo, Status};
    use serde_json::json;

    fn stored(id: &str) -> Stored {
        let echo = Echo {
            instructions: None,
            metadata: Default::default(),
            parallel_tool_calls: true,
            temperature: None,
            top_p: None,
            tool_choice: json!("auto"),
            tools: Vec::new(),
            max_output_tokens: None,
            previous_response_id: None,
            text: json!({"format": {"type": "text"}}),
            truncation: "disabled".into(),
            store: true,
            user: None,
            reasoning: None,
        };
        let response = ResponseObject {
            id: id.into(),
            object: "response",
            created_at: 0,
            completed_at: None,
            status: Status::Completed,
            model: "m".into(),
            output: Vec::new(),
            usage: None,
            incomplete_details: None,
            error: None,
            echo,
        };
        Stored { response, items: Vec::new() }
    }

    #[test]
    fn least_recently_used_goes_first() {
        let s = ResponseStore::new(2);
        s.put(stored("a"));
        s.put(stored("b"));
        assert!(s.get("a").is_some());
        s.put(stored("c"));
        assert!(s.get("b").is_none(), "b was the least recently used");
        assert!(s.get("a").is_some() && s.get("c").is_some());
        assert!(s.delete("a") && !s.delete("a"));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let s = ResponseStore::new(0);
        s.put(stored("a"));
        assert!(s.is_empty());
    }
}

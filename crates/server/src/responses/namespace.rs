//! `namespace` tools (a named group of function tools, as Codex sends its sub-agent and MCP
//! tools): each member is offered to the model as a plain function named
//! `{namespace}__{name}`, and a call to one goes back out as OpenAI writes it, `name` and
//! `namespace` apart. Only names this request's namespaces made are split again (looked up,
//! never parsed), so a function whose own name holds `__` is left alone. vLLM, Ollama and
//! llama-server's pending support flatten the same way.

use std::collections::HashMap;

use super::types::{OutputItem, StreamEvent};

/// Joins a namespace and a member's name into the function name the model sees.
pub fn flat_name(namespace: &str, name: &str) -> String {
    format!("{namespace}__{name}")
}

/// The flat names of one request's namespace members.
#[derive(Clone, Debug, Default)]
pub struct Namespaces {
    /// Flat name → (namespace, name).
    members: HashMap<String, (String, String)>,
}

impl Namespaces {
    /// Records a member; returns its flat name.
    pub fn add(&mut self, namespace: &str, name: &str) -> String {
        let flat = flat_name(namespace, name);
        self.members.insert(flat.clone(), (namespace.to_string(), name.to_string()));
        flat
    }

    /// No namespace was sent.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The (namespace, name) a flat name stands for.
    fn split(&self, flat: &str) -> Option<&(String, String)> {
        self.members.get(flat)
    }

    /// `ev` as the client expects it: a call to a namespace member named by its own name,
    /// with its `namespace`.
    pub fn restore(&self, ev: &mut StreamEvent) {
        match ev {
            StreamEvent::ItemAdded { item, .. } | StreamEvent::ItemDone { item, .. } => self.restore_item(item),
            StreamEvent::ArgsDone { name, .. } => {
                if let Some((_, n)) = self.split(name) {
                    *name = n.clone();
                }
            }
            StreamEvent::Created { response }
            | StreamEvent::InProgress { response }
            | StreamEvent::Completed { response }
            | StreamEvent::Incomplete { response }
            | StreamEvent::Failed { response } => response.output.iter_mut().for_each(|i| self.restore_item(i)),
            _ => {}
        }
    }

    fn restore_item(&self, item: &mut OutputItem) {
        if let OutputItem::FunctionCall { name, namespace, .. } = item {
            if namespace.is_none() {
                if let Some((ns, n)) = self.split(name) {
                    *namespace = Some(ns.clone());
                    *name = n.clone();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::responses::types::Status;

    #[test]
    fn only_recorded_names_are_split() {
        let mut ns = Namespaces::default();
        assert_eq!(ns.add("multi_agent", "spawn"), "multi_agent__spawn");
        let call = |name: &str| OutputItem::FunctionCall {
            id: "fc_1".into(),
            call_id: "call_1".into(),
            name: name.into(),
            namespace: None,
            arguments: "{}".into(),
            status: Status::Completed,
        };
        let mut ev = StreamEvent::ItemDone { output_index: 0, item: call("multi_agent__spawn") };
        ns.restore(&mut ev);
        let StreamEvent::ItemDone { item: OutputItem::FunctionCall { name, namespace, .. }, .. } = ev else { panic!() };
        assert_eq!((name.as_str(), namespace.as_deref()), ("spawn", Some("multi_agent")));
        let mut ev = StreamEvent::ItemDone { output_index: 0, item: call("get__weather") };
        ns.restore(&mut ev);
        let StreamEvent::ItemDone { item: OutputItem::FunctionCall { name, namespace, .. }, .. } = ev else { panic!() };
        assert_eq!((name.as_str(), namespace), ("get__weather", None));
    }
}

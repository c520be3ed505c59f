//! `GET /v1/models`: the one model served, under the id requests use.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::openai_types::{json_response, ModelCard, ModelList, ModelMeta};
use crate::state::AppState;

pub async fn list(State(state): State<Arc<AppState>>) -> Response {
    let ready = match state.ready() {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let m = &ready.model;
    let card = ModelCard {
        id: state.config.model_id.clone(),
        object: "model",
        created: ready.created,
        owned_by: "nucleus",
        max_model_len: ready.engine.slot_ctx(),
        meta: ModelMeta {
            architecture: m.architecture().to_string(),
            n_vocab: m.n_vocab(),
            n_ctx_train: m.n_ctx_train(),
            n_ctx_per_request: ready.engine.slot_ctx(),
            parallel: ready.engine.parallel(),
        },
    };
    json_response(StatusCode::OK, &ModelList { object: "list", data: vec![card] })
}

//! What the store tells of the completions it stores. Once the commit
//! that stores a completed response has returned, whatever path stored it
//! (a POSTed response, a PUT that completes a pending one, a fill-out
//! page, an import through [`NewResponse`](super::NewResponse)), the store
//! hands it to the [`CompletionSink`] it was given at start
//! (`StoreOptions::completions`): the response's id, the definition it was
//! checked against and scored with, its answers, variant and outcome.
//! Shadow scoring (`crate::shadow`) is such a sink: a consequence of
//! storing, so no caller has to remember it.
//!
//! A sink is called on the task that stored (the writer's own thread for
//! POSTed responses, after the caller was answered) and must return at
//! once: it keeps what it wants or drops it, and never waits, writes or
//! fails. It is handed the completion itself, which the store no longer
//! needs, so keeping it copies nothing. A completion whose commit failed,
//! a retry and a refused write are never handed on.

use std::sync::Arc;

use crate::domain::ids::ResponseId;
use crate::domain::questionnaire::Questionnaire;
use crate::domain::response::Completion;

/// A completion just stored, handed over whole.
#[derive(Debug)]
pub struct StoredCompletion {
    pub response_id: ResponseId,
    /// The definition its answers were checked against and scored with.
    pub definition: Arc<Questionnaire>,
    /// Answers, variant, completion time, the stored outcome and its
    /// provenance.
    pub completion: Completion,
    /// Scored as the professional's (the scorer input's respondent type).
    pub professional: bool,
}

/// Where the store hands the completions it stored.
pub trait CompletionSink: Send + Sync + std::fmt::Debug {
    /// Called once per stored completion, after its commit. Returns at
    /// once.
    fn stored(&self, completion: StoredCompletion);
}

/// A completion scored and about to complete a pending response (PUT, a
/// fill-out page), with what the sink is told besides the completion.
#[derive(Debug, Clone)]
pub struct Scored {
    pub completion: Completion,
    /// The definition its answers were checked against and scored with.
    pub definition: Arc<Questionnaire>,
    /// Scored as the professional's (the scorer input's respondent type).
    pub professional: bool,
}

impl Scored {
    /// What the sink is told once this completed response `response_id`.
    /// `shared` was handed to the write, which has dropped its copy by the
    /// time it answered: nothing is copied then.
    pub(super) fn stored(shared: Arc<Scored>, response_id: ResponseId) -> StoredCompletion {
        let Scored {
            completion,
            definition,
            professional,
        } = Arc::try_unwrap(shared).unwrap_or_else(|shared| (*shared).clone());
        StoredCompletion {
            response_id,
            definition,
            completion,
            professional,
        }
    }
}

/// The store's sink: none unless one was given.
#[derive(Debug, Clone, Default)]
pub struct Completions(Option<Arc<dyn CompletionSink>>);

impl Completions {
    /// Hands stored completions to `sink`.
    pub fn to(sink: Arc<dyn CompletionSink>) -> Completions {
        Completions(Some(sink))
    }

    /// Tells the sink of a completion its commit stored.
    pub(super) fn stored(&self, completion: StoredCompletion) {
        if let Some(sink) = &self.0 {
            sink.stored(completion);
        }
    }
}

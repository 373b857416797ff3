//! A test double: a language model that plays a script of outcomes. Test code only.

use std::collections::VecDeque;
use std::sync::Mutex;

use hamlet_gateway::backend::{Attempt, BackendError, BoxFuture, Completion, LlmBackend};

/// Plays its outcomes in order; after the script, every call fails as refused.
pub struct ScriptedLlm {
    script: Mutex<VecDeque<Result<String, BackendError>>>,
}

impl ScriptedLlm {
    /// A model that answers `script` in order.
    pub fn new(script: Vec<Result<String, BackendError>>) -> ScriptedLlm {
        ScriptedLlm { script: Mutex::new(script.into()) }
    }
}

impl LlmBackend for ScriptedLlm {
    fn name(&self) -> &str {
        "scripted-test-double"
    }

    fn server(&self) -> String {
        String::new()
    }

    fn model(&self) -> String {
        "scripted".into()
    }

    fn complete<'a>(
        &'a self,
        _attempt: Attempt<'a>,
    ) -> BoxFuture<'a, Result<Completion, BackendError>> {
        let next = self.script.lock().unwrap().pop_front();
        Box::pin(async move {
            // Long enough to show as latency: a replay must record the recorded one.
            tokio::time::sleep(std::time::Duration::from_millis(15)).await;
            let text = next.unwrap_or_else(|| {
                Err(BackendError::new(hamlet_log::event::FailureKind::Refused, "script over"))
            })?;
            Ok(Completion {
                tokens_prompt: 10,
                tokens_completion: text.len() as u32,
                text,
                finish_reason: "stop".into(),
                response_model: "scripted".into(),
                response_id: String::new(),
                probabilities: Vec::new(),
                tokens_cached: 0,
            })
        })
    }
}

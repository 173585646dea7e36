//! What the ORS server tells an operator (see [`observe`](crate::observe)): the span of a
//! call, its refusals, and its calls to the shared store, timed and counted. Without the
//! `tracing` and `metrics` features all of it compiles to nothing.

use std::future::Future;

use crate::observe::{self, log, REFUSED_TOTAL, STORE_ERRORS_TOTAL};
use crate::runtime::Runtime;
use crate::store::StoreError;

/// The span of one ORS call, `ors_call` (fields `task_id`, `session`, `tool`, `resumed`):
/// entered where the call's response body is made, so that the body's access-log line is
/// inside it, and around the tool's task. Zero-sized without `tracing`.
#[derive(Clone, Debug)]
pub(crate) struct CallSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl CallSpan {
    /// The span of a call by `session` (empty when unknown) to `tool`; `task_id` is the id
    /// a resume names (the call is then `resumed`), recorded later for a new task.
    pub(crate) fn new(session: &str, tool: &str, task_id: Option<&str>) -> Self {
        #[cfg(feature = "tracing")]
        {
            let span = tracing::info_span!(
                "ors_call",
                task_id = tracing::field::Empty,
                session,
                tool,
                resumed = task_id.is_some(),
            );
            if let Some(id) = task_id {
                span.record("task_id", id);
            }
            CallSpan { span }
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (session, tool, task_id);
            CallSpan {}
        }
    }

    /// Records the id of the task the call started.
    pub(crate) fn record_task_id(&self, task_id: &str) {
        #[cfg(feature = "tracing")]
        self.span.record("task_id", task_id);
        #[cfg(not(feature = "tracing"))]
        let _ = task_id;
    }

    /// Runs `f` inside the span.
    pub(crate) fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        #[cfg(feature = "tracing")]
        {
            self.span.in_scope(f)
        }
        #[cfg(not(feature = "tracing"))]
        {
            f()
        }
    }

    /// `future`, polled inside the span.
    pub(crate) fn instrument<F: Future>(
        &self,
        future: F,
    ) -> impl Future<Output = F::Output> + use<F> {
        #[cfg(feature = "tracing")]
        {
            tracing::Instrument::instrument(future, self.span.clone())
        }
        #[cfg(not(feature = "tracing"))]
        {
            future
        }
    }
}

/// `future` inside a `debug` span `ors_session` naming the session of an ORS request
/// (`X-Session-ID`), when it has one.
pub(crate) fn in_session<F: Future>(
    session: Option<&str>,
    future: F,
) -> impl Future<Output = F::Output> + use<F> {
    #[cfg(feature = "tracing")]
    {
        let span = match session {
            Some(session) => tracing::debug_span!("ors_session", session),
            None => tracing::Span::none(),
        };
        tracing::Instrument::instrument(future, span)
    }
    #[cfg(not(feature = "tracing"))]
    {
        let _ = session;
        future
    }
}

/// Counts a request the ORS server refused, for `reason` (one of the reasons listed in
/// [`observe`](crate::observe)), and says so at `debug` (a refusal an operator must act on,
/// `busy` and the full session table, at `warn`).
pub(crate) fn refusal(reason: &'static str, status: u16) {
    observe::count_by(REFUSED_TOTAL, "reason", reason, 1);
    #[cfg(feature = "tracing")]
    if matches!(reason, "busy" | "too_many_sessions" | "task_spec_full") {
        tracing::warn!(reason, status, "ORS request refused: the server is full");
    } else {
        tracing::debug!(reason, status, "ORS request refused");
    }
    #[cfg(not(feature = "tracing"))]
    let _ = status;
}

/// A call to the shared store, `op`: timed on the runtime's clock (so that a simulated
/// runtime stays deterministic) into [`STORE_SECONDS`](crate::observe::STORE_SECONDS), and,
/// when it fails, counted in [`STORE_ERRORS_TOTAL`] and logged at `warn`.
pub(crate) async fn store_call<R: Runtime, T>(
    runtime: &R,
    op: &'static str,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    #[cfg(feature = "metrics")]
    let started = runtime.now();
    #[cfg(not(feature = "metrics"))]
    let _ = runtime;
    let result = call.await;
    #[cfg(feature = "metrics")]
    observe::record_by(
        observe::STORE_SECONDS,
        "op",
        op,
        (runtime.now() - started).as_secs_f64(),
    );
    if let Err(e) = &result {
        observe::count_by(STORE_ERRORS_TOTAL, "op", op, 1);
        log!(warn, op, error = %e, "shared store call failed");
        #[cfg(not(feature = "tracing"))]
        let _ = e;
    }
    result
}

//! ORS (Open Reward Standard) on tokio: the HTTP API the official `ors-sdk` client speaks, as
//! a [`Server`] over pluggable [`Environment`]s, and a [`Client`] whose
//! [`call_tool`](Client::call_tool) resumes a dropped call by its task id.
//!
//! Both are written once in `ssekit-http`, generic over the runtime: this module names them
//! on tokio ([`Tokio`](crate::runtime::Tokio)), as `ssekit_smol::ors` names them on smol.
//!
//! ```text
//!  POST /{env}/call {name,input,task_id?} ──▶ session check ──▶ TaskRegistry::open
//!     Started ─▶ tokio::spawn(tool) ─▶ Chunker ─▶ TaskRegistry::push ─┐
//!     Resumed ───────────────────────────────────────────────────────┼─▶ task_id, chunk*, end|error ─▶ SseBody (+ 10 s pings)
//!     Unknown ─▶ error "unknown task_id"                              ┘
//! ```
//!
//! Where the SDK's server and the specification text differ, this follows the text (see
//! `ors-http-api.md` §5): an unknown or expired session and an unknown tool are `error`
//! events, chunks are at most 4096 *bytes*, lines end in LF, and pings come after 10 s of
//! silence at most.

mod client;

pub use client::{CallOptions, Client, HyperOrs, Trace};
pub use ssekit_http::ors::{
    text_result, tool_error, Block, Busy, Env, Environment, InputError, IntoBlocks, IntoToolResult,
    Json, OrsBody, ServerConfig, SetupFuture, Split, ToolFuture, ToolOutput, ToolResult, ToolSpec,
    BUSY,
};

/// The ORS server on tokio: `ssekit-http`'s [`Server`](ssekit_http::ors::Server) (every
/// route, session and task rule) with tokio's tasks and timer. A hyper `Service`.
///
/// # Example
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use ssekit_hyper::ors::{text_result, Environment, Server, Split, ToolFuture, ToolSpec};
///
/// struct Echo;
/// impl Environment for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn splits(&self) -> Vec<Split> { vec![Split::new("test", "test")] }
///     fn tasks(&self, split: &str) -> Option<Vec<Value>> { (split == "test").then(|| vec![json!({})]) }
///     fn tools(&self) -> Vec<ToolSpec> { vec![ToolSpec::new("echo", "Echo the input", None)] }
///     fn prompt(&self, _task: &Value) -> String { "Say something.".into() }
///     fn call(&self, _task: &Value, _tool: &str, input: Value) -> ToolFuture {
///         Box::pin(async move { Ok(text_result(&input.to_string(), None, true)) })
///     }
/// }
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// ssekit_hyper::server::serve(listener, Server::new(vec![Arc::new(Echo)])).await
/// # }
/// ```
pub type Server = ssekit_http::ors::Server<crate::runtime::Tokio>;

/// The `/call` half of the ORS server alone, on tokio (see
/// [`ssekit_http::ors::Calls`]).
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use ssekit_hyper::ors::{text_result, Calls};
/// let body = Calls::default().call(None, async { Ok(text_result("4", Some(1.0), true)) });
/// let resp = ssekit_hyper::server::response(body);
/// # let _ = resp;
/// # }
/// ```
pub type Calls = ssekit_http::ors::Calls<crate::runtime::Tokio>;

//! ORS (Open Reward Standard) on smol: the HTTP API the official `ors-sdk` client speaks, as
//! a [`Server`] over pluggable [`Environment`]s (or its `/call` half alone, [`Calls`]), and a
//! [`Client`] whose calls resume by task id.
//!
//! All of it is written once in `ssekit-http`, generic over the runtime: this module names it
//! on smol ([`Smol`](crate::runtime::Smol)), as `ssekit_hyper::ors` names it on tokio, so
//! both servers answer byte for byte alike.
//!
//! ```text
//!  POST /{env}/call {name,input,task_id?} ──▶ session check ──▶ TaskRegistry::open
//!     Started ─▶ Smol::spawn(tool) ─▶ Chunker ─▶ TaskRegistry::push ─┐
//!     Resumed ──────────────────────────────────────────────────────┼─▶ task_id, chunk*, end|error ─▶ SseBody (+ pings)
//!     Unknown ─▶ error "unknown task_id"                             ┘
//! ```

mod client;
pub use client::{CallOptions, Client, SmolOrs, Trace};
pub use ssekit_http::ors::{
    text_result, tool_error, Block, Busy, Env, Environment, InputError, IntoBlocks, IntoToolResult,
    Json, OrsBody, ServerConfig, SetupFuture, Split, ToolFuture, ToolOutput, ToolResult, ToolSpec,
    BUSY,
};

/// The ORS server on smol: `ssekit-http`'s [`Server`](ssekit_http::ors::Server) (every
/// route, session and task rule) with smol's tasks and async-io's timer. A hyper `Service`
/// for [`serve`](crate::server::serve).
///
/// # Example
/// ```no_run
/// # smol::block_on(async {
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use ssekit_smol::ors::{text_result, Environment, Server, Split, ToolFuture, ToolSpec};
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
/// let listener = smol::net::TcpListener::bind("127.0.0.1:8080").await?;
/// ssekit_smol::server::serve(listener, Server::new(vec![Arc::new(Echo)])).await
/// # }).unwrap();
/// ```
pub type Server = ssekit_http::ors::Server<crate::runtime::Smol>;

/// The `/call` half of the ORS server alone, on smol (see [`ssekit_http::ors::Calls`]):
/// for an application that routes and keeps sessions itself.
///
/// # Example
/// ```
/// use ssekit_smol::ors::{text_result, Calls};
/// let body = Calls::default().call(None, async { Ok(text_result("4", Some(1.0), true)) });
/// let resp = ssekit_smol::server::response(body);
/// # let _ = resp;
/// ```
pub type Calls = ssekit_http::ors::Calls<crate::runtime::Smol>;

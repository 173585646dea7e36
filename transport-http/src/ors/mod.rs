//! The IO-free halves of ORS (Open Reward Standard) over HTTP, shared by `ssekit-hyper` and
//! `ssekit-smol`:
//! - the server (feature `ors-server`): `Server`, every route of the HTTP API the official
//!   `ors-sdk` client speaks, over [`Environment`]s, generic over a
//!   [`Runtime`](crate::runtime::Runtime) (see the `server` module for why it lives here),
//!   and `Calls`, its `/call` half alone;
//! - the server's `POST /{env}/call` stream: how a tool's outcome becomes frames
//!   ([`call_frames`]), how a finished task is recorded ([`complete`]), and how one
//!   connection follows a task from any point ([`Follow`]), woken when its task finishes
//!   ([`TaskSignals`]);
//! - the client: a tool call resumed by task id across connections ([`Call`]), the session
//!   id in a `/create_session` reply ([`SessionReply`]), the JSON requests of the other
//!   routes ([`json_request`], [`json_answer`]) and the redirects they follow
//!   ([`Redirects`]), and [`Client`], all of it written once over a transport's [`OrsIo`];
//! - typed environments (feature `ors-typed`, which `ors-server` enables): `Env`, an
//!   [`Environment`] built from tools whose inputs are serde types with derived JSON
//!   Schemas, and `InputError`, the input a tool refused and where.

mod call;
#[cfg(feature = "ors-server")]
mod calls;
mod client;
mod environment;
#[cfg(all(test, feature = "ors-server"))]
mod observe_tests;
#[cfg(feature = "ors-server")]
mod observed;
mod redirects;
#[cfg(feature = "ors-server")]
pub mod server;
mod signals;
mod stream;
#[cfg(feature = "ors-typed")]
mod typed;

/// The IO trait of the ORS [`Client`], under its first name: it is [`HttpIo`](crate::io::HttpIo),
/// which the UTCP provider uses too. Implement that one; this name stays for the code that
/// already says `OrsIo`.
pub use crate::io::HttpIo as OrsIo;
pub use call::{
    json_answer, json_checked, json_request, Call, CallOptions, CallStep, Flow, SessionReply, Trace,
};
#[cfg(feature = "ors-server")]
pub use calls::{Busy, Calls, NotStarted};
pub use client::{Client, MAX_JSON_ANSWER};
pub use environment::{
    text_result, tool_error, Environment, SetupFuture, Split, ToolFuture, ToolSpec,
};
pub use redirects::Redirects;
#[cfg(feature = "ors-server")]
pub use server::{OrsBody, Server, ServerConfig};
pub use signals::{Following, TaskSignals};
pub use ssekit::profile::ors::{Block, ToolOutput, ToolResult};
pub use stream::{
    call_frames, complete, encode, named, refused, run_tool, try_complete, Completion, Follow,
    BUSY, CALL_ABANDONED, NOT_KEPT, NOT_RESUMABLE, SHUTTING_DOWN, TASK_LOST, TOOL_PANICKED,
};
#[cfg(feature = "ors-typed")]
pub use typed::{Env, InputError, IntoBlocks, IntoToolResult, Json};

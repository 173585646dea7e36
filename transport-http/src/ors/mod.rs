//! The IO-free halves of ORS (Open Reward Standard) over HTTP, shared by `ssekit-hyper` and
//! `ssekit-smol`:
//! - the server's `POST /{env}/call` stream: how a tool's outcome becomes frames
//!   ([`call_frames`]), how a finished task is recorded ([`complete`]), and how one
//!   connection follows a task from any point ([`Follow`]), woken when its task finishes
//!   ([`TaskSignals`]);
//! - the client: a tool call resumed by task id across connections ([`Call`]), the session
//!   id in a `/create_session` reply ([`SessionReply`]), the JSON requests of the other
//!   routes ([`json_request`], [`json_answer`]) and the redirects they follow
//!   ([`Redirects`]), and [`Client`], all of it written once over a transport's [`OrsIo`].

mod call;
mod client;
mod redirects;
mod signals;
mod stream;

/// The IO trait of the ORS [`Client`], under its first name: it is [`HttpIo`](crate::io::HttpIo),
/// which the UTCP provider uses too. Implement that one; this name stays for the code that
/// already says `OrsIo`.
pub use crate::io::HttpIo as OrsIo;
pub use call::{
    json_answer, json_checked, json_request, Call, CallOptions, CallStep, Flow, SessionReply, Trace,
};
pub use client::{Client, MAX_JSON_ANSWER};
pub use redirects::Redirects;
pub use signals::{Following, TaskSignals};
pub use stream::{
    call_frames, complete, encode, named, refused, run_tool, Completion, Follow, BUSY,
    CALL_ABANDONED, TOOL_PANICKED,
};

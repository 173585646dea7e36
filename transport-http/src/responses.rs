//! OpenAI Responses API streams resumed by sequence number, as background mode does it:
//! `GET /v1/responses/{id}?stream=true&starting_after=N` sends the events of response `id`
//! whose `sequence_number` is above `N`, then the rest as they are made. `Last-Event-ID` is
//! not the cursor: the response id and the last sequence number seen are.
//!
//! - [`Resume`] (client): reads the id and sequence numbers of the events a client receives,
//!   and rewrites its reconnect into that `GET` (an [`on_connect`] hook).
//! - [`Background`] (server, feature `ors-server`): keeps a response's events in a
//!   [`Store`](crate::store::Store) as they are made, whether or not a client reads them, so
//!   that any instance sharing the store serves the resume.
//!
//! ```text
//!  POST /v1/responses {"background":true,"stream":true}
//!    ─▶ Background::start: a task appends each event to the store (lease renewed)
//!    ◀─ Background::follow(id, None): every event, live          ✂ cut after seq 7
//!  GET /v1/responses/{id}?stream=true&starting_after=7   (Resume::hook)
//!    ◀─ Background::follow(id, Some(7)): seq 8.. from the store, then live, any instance
//! ```
//!
//! [`on_connect`]: crate::client::RequestSpec::on_connect

#[cfg(feature = "ors-server")]
mod background;
mod resume;

#[cfg(feature = "ors-server")]
pub use background::{Background, Unknown, RESPONSE_LOST};
pub use resume::Resume;

//! Server-side session logic: keep-alive, Last-Event-ID replay, ORS task resumption.
//!
//! Three independent sans-IO machines; a server connection typically owns a [`KeepAlive`]
//! and shares a [`ReplayBuffer`] (per stream) or a [`TaskRegistry`] (per process) with the
//! other connections. None of them reads a clock, spawns anything or touches a socket: they
//! take the caller's [`Instant`](crate::time::Instant) and hand back bytes, deadlines and answers.
//!
//! ```text
//!  app events ──▶ ReplayBuffer::push ──▶ bytes ──▶ socket   (and KeepAlive::handle_write)
//!  reconnect with Last-Event-ID ──▶ ReplayBuffer::since ──▶ missed bytes, or Gap
//!  timer ──▶ KeepAlive::handle_timeout ──▶ poll_transmit ──▶ ": ping\n" ──▶ socket
//!  ORS POST /call {task_id?} ──▶ TaskRegistry::open ──▶ Started / Resumed / Unknown
//! ```

mod keepalive;
mod replay;
#[cfg(feature = "tasks")]
mod tasks;

pub use keepalive::KeepAlive;
pub use replay::{Gap, Replay, ReplayBuffer};
#[cfg(feature = "tasks")]
pub use tasks::{
    ByteSize, ClientIds, Cursor, IdFormat, Open, Progress, StartError, TaskConfig, TaskError,
    TaskRegistry, TaskState,
};

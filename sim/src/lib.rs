//! Deterministic simulation of ssekit: clients, servers and the shared store in one thread,
//! in virtual time, from one seed (as FoundationDB and TigerBeetle test theirs, and
//! quinn-proto its `Pair`).
//!
//! [`Sim`] is a third [`Runtime`](ssekit_http::runtime::Runtime) beside tokio and smol: the
//! real code runs on it unchanged (`serve_on`, `ors::Server`, `ors::Client`, the client
//! pool), over [`Net`]'s in-memory sockets and a [`FaultyStore`]. Every choice (which ready
//! task runs, how many bytes a read returns, which connection is cut and where, how long its
//! bytes are in flight, how long the store takes) is drawn from the seed, so a seed replays its run bit for bit, and a failing
//! seed is a one-line regression test.
//!
//! ```text
//!  seed ─▶ World: ready tasks drawn, clock jumps to the next timer
//!            ├─ Net: listeners, balancer "lb", sockets with drawn cuts, delays, read sizes
//!            ├─ FaultyStore: MemoryStore on the virtual clock, latency, outages, lost replies
//!            └─ workloads (ors_cluster, broadcast_cluster): servers and clients, kills,
//!               drains, partitions, outages ─▶ invariants
//! ```
//!
//! `cargo test -p ssekit-sim` runs the fixed seeds; `cargo run -p ssekit-sim --release --bin
//! soak -- --seeds 10000` runs more and prints any failing seed with its story and faults.

pub mod broadcast_cluster;
mod net;
pub mod ors_cluster;
mod store;
mod world;

pub use net::{Listener, Net, NetFaults, Socket};
pub use store::{FaultyStore, StoreFaults};
pub use world::{Node, Ran, Sim, Sleep, World};

/// Locks `m`, poison or not: a panic elsewhere already failed the run, and what it left is
/// still what the invariants look at.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

//! What the tests that need a real Redis share.
pub mod redis_server;

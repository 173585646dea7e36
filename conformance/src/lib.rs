//! The cross-transport suite of ssekit (never published): tests that run one scenario on both
//! runtimes, smol and hyper on tokio (`tests/`), and examples that use both transports
//! (`examples/`). It has no API; it exists so that the library crates need neither transport
//! as a dev-dependency.

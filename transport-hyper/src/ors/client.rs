//! The ORS client on hyper: `ssekit-http`'s generic [`Client`](ssekit_http::ors::Client)
//! (sessions, and tool calls resumed by task id, with every decision in its IO-free
//! `Call`) over [`HyperOrs`]: hyper-util's pooled client and tokio's timer.

pub use ssekit_http::ors::{CallOptions, Trace};

/// An ORS client on hyper and tokio (see [`ssekit_http::ors::Client`] for every method).
///
/// # Example
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// use serde_json::json;
/// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?;
/// let task = json!({"question": "2 + 2?", "answer": 4});
/// let sid = ors.open_session("gsm8k", &task).await?;
/// let result = ors.call_tool("gsm8k", &sid, "submit", json!({"answer": 4})).await?;
/// assert_eq!(result.output.and_then(|o| o.reward), Some(1.0));
/// ors.delete(&sid).await?;
/// # Ok(()) }
/// ```
pub type Client = ssekit_http::ors::Client<HyperOrs>;

/// What the ORS [`Client`] does its IO with on hyper: the transport's
/// [`HyperHttp`](crate::client::HyperHttp) (one pooled HTTP client, made on first use or
/// shared, and tokio's timer), under the name it had first.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// let shared = ssekit_hyper::client::http_client()?;
/// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:1")?
///     .io(ssekit_hyper::ors::HyperOrs::with_client(shared));
/// # let _ = ors; Ok(()) }
/// ```
pub type HyperOrs = crate::client::HyperHttp;

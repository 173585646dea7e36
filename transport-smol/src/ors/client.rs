//! The ORS client on smol: `ssekit-http`'s generic [`Client`](ssekit_http::ors::Client)
//! (sessions, and tool calls resumed by task id, with every decision in its IO-free
//! `Call`) over [`SmolOrs`]: smol's event streams, one-shot requests and timer.

pub use ssekit_http::ors::{CallOptions, Trace};

/// An ORS client on smol (see [`ssekit_http::ors::Client`] for every method).
///
/// # Example
/// ```no_run
/// use serde_json::json;
/// # smol::block_on(async {
/// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?;
/// let sid = ors.open_session("gsm8k", &json!({"question": "2 + 2?", "answer": 4})).await?;
/// let result = ors.call_tool("gsm8k", &sid, "submit", json!({"answer": 4})).await?;
/// assert_eq!(result.output.and_then(|o| o.reward), Some(1.0));
/// ors.delete(&sid).await?;
/// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
/// ```
pub type Client = ssekit_http::ors::Client<SmolOrs>;

/// What the ORS [`Client`] does its IO with on smol: the transport's
/// [`SmolHttp`](crate::client::SmolHttp), under the name it had first.
///
/// # Example
/// ```
/// use ssekit_http::ors::OrsIo;
/// let io = ssekit_smol::ors::SmolOrs::new()?;
/// # let _ = io; Ok::<(), ssekit_smol::Error>(())
/// ```
pub type SmolOrs = crate::client::SmolHttp;

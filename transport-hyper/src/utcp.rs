//! UTCP's SSE provider on hyper and tokio: [`ssekit_utcp`] (the provider, its auth and
//! OAuth2 token refresh, tool calls checked against their schemas, `/utcp` discovery and
//! [`ManualEndpoint`]), written once over [`HttpIo`], with this
//! crate's [`HyperHttp`](crate::client::HyperHttp) filled in. `ssekit_smol::utcp` is the same over smol.
//!
//! Every item of [`ssekit_utcp`] is here under the same name; the generic ones are named
//! for hyper ([`SseProvider`], [`ProviderSource`], [`ToolCall`], [`Discovery`],
//! [`discover`]).
//!
//! ```text
//!  provider JSON ─▶ SseProvider::connect ─▶ ProviderSource (an EventSource, OAuth2 token kept fresh)
//!  GET /utcp ─▶ discover ─▶ Manual ─▶ Tool ─▶ SseProvider::call ─▶ outputs checked against the tool's schema
//! ```
//!
//! # Example
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use futures_util::StreamExt;
//! let provider = ssekit_hyper::utcp::SseProvider::from_json(r#"{"name":"market_updates",
//!     "provider_type":"sse","url":"http://127.0.0.1:8080/stream","event_type":"price_update"}"#)?;
//! let inputs = serde_json::json!({"symbol": "AAPL"});
//! let mut events = provider.connect(inputs.as_object().ok_or("not an object")?).await?.events();
//! while let Some(update) = events.next().await {
//!     println!("{}", update?.data());
//! }
//! # Ok(()) }
//! ```

ssekit_utcp::transport_module!(ssekit_hyper, crate::client::HyperHttp);

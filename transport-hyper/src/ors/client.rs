//! The ORS client on hyper: `ssekit-http`'s generic [`Client`](ssekit_http::ors::Client)
//! (sessions, and tool calls resumed by task id, with every decision in its IO-free
//! `Call`) over [`HyperOrs`]: hyper-util's pooled client and tokio's timer.

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use ssekit::Instant;
use ssekit_http::client::{Item, RequestSpec};
use ssekit_http::ors::OrsIo;
pub use ssekit_http::ors::{CallOptions, Trace};

use crate::client::{http_client, EventSource, HttpClient, Items, SCHEMES};
use crate::time::Clock;
use crate::Error;

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

/// What the ORS [`Client`] does its IO with on hyper: one pooled HTTP client for its
/// requests and streams (made on first use), tokio's timer.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// let shared = ssekit_hyper::client::http_client()?;
/// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:1")?
///     .io(ssekit_hyper::ors::HyperOrs::with_client(shared));
/// # let _ = ors; Ok(()) }
/// ```
#[derive(Clone)]
pub struct HyperOrs {
    http: Option<HttpClient>,
    clock: Clock,
}

impl std::fmt::Debug for HyperOrs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperOrs").finish_non_exhaustive()
    }
}

impl HyperOrs {
    /// Uses this HTTP client (to share a pool, or for a private TLS root).
    ///
    /// # Example
    /// See [`HyperOrs`].
    pub fn with_client(http: HttpClient) -> Self {
        HyperOrs {
            http: Some(http),
            clock: Clock::tokio(),
        }
    }

    fn http(&self) -> Result<HttpClient, Error> {
        match &self.http {
            Some(c) => Ok(c.clone()),
            None => http_client(),
        }
    }
}

impl OrsIo for HyperOrs {
    const SCHEMES: &'static [&'static str] = SCHEMES;
    type Events = Items;

    fn new() -> Result<Self, Error> {
        Ok(HyperOrs {
            http: None,
            clock: Clock::tokio(),
        })
    }

    fn events(&self, spec: RequestSpec) -> Items {
        let source = EventSource::from_spec(spec);
        match &self.http {
            Some(http) => source.client(http.clone()).stream(),
            None => source.stream(),
        }
    }

    async fn next(events: &mut Items) -> Option<Result<Item, Error>> {
        events.next().await
    }

    async fn request(&self, req: Request<Bytes>) -> Result<Response<Bytes>, Error> {
        let resp = self.http()?.request(req.map(Full::new)).await?;
        let (head, body) = resp.into_parts();
        // A JSON answer, not a stream: bounded, so a server cannot make the client buffer
        // without end.
        let body = http_body_util::Limited::new(body, ssekit_http::ors::MAX_JSON_ANSWER);
        let bytes = body.collect().await.map_err(Error::Http)?.to_bytes();
        Ok(Response::from_parts(head, bytes))
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    async fn sleep_until(&self, at: Instant) {
        self.clock.sleep_until(at).await;
    }
}

//! The ORS client on smol: `ssekit-http`'s generic [`Client`](ssekit_http::ors::Client)
//! (sessions, and tool calls resumed by task id, with every decision in its IO-free
//! `Call`) over [`SmolOrs`]: smol's event streams, one-shot requests and timer.

use async_io::Timer;
use bytes::Bytes;
use futures_lite::StreamExt;
use http::{Request, Response};
use http_body_util::BodyExt;
use ssekit::Instant;
use ssekit_http::client::{origin_form, Item, RequestSpec};
use ssekit_http::ors::OrsIo;
pub use ssekit_http::ors::{CallOptions, Trace};

use crate::client::{send, EventSource, Items, SCHEMES};
use crate::time::Clock;
use crate::Error;

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

/// What the ORS [`Client`] does its IO with on smol: one connection per request or
/// stream, `async_io` timers.
///
/// # Example
/// ```
/// use ssekit_http::ors::OrsIo;
/// let io = ssekit_smol::ors::SmolOrs::new()?;
/// # let _ = io; Ok::<(), ssekit_smol::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SmolOrs {
    clock: Clock,
}

impl OrsIo for SmolOrs {
    const SCHEMES: &'static [&'static str] = SCHEMES;
    type Events = Items;

    fn new() -> Result<Self, Error> {
        Ok(SmolOrs {
            clock: Clock::new(),
        })
    }

    fn events(&self, spec: RequestSpec) -> Items {
        EventSource::from_spec(spec).stream()
    }

    async fn next(events: &mut Items) -> Option<Result<Item, Error>> {
        events.next().await
    }

    async fn request(&self, mut req: Request<Bytes>) -> Result<Response<Bytes>, Error> {
        let uri = req.uri().clone();
        origin_form(&mut req)?;
        let (resp, _connection) = send(uri, req, &Default::default()).await?;
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
        Timer::at(self.clock.at(at)).await;
    }
}

//! The demo server: the ORS API over the gsm8k example environment, plus a Responses-API
//! style stream at `POST /v1/responses`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{json, Value};
use ssekit::{Encoder, Event};
use ssekit_hyper::ors::{gsm8k::Gsm8k, OrsBody, Server, ServerConfig};
use ssekit_hyper::server::{last_event_id, response, SseBody};

/// The answer the fake model streams, word by word.
const ANSWER: &str = "Natalia sold 48 clips in April and 24 in May, so 72 clips in all.";

#[derive(Clone)]
pub struct App {
    ors: Server,
    keep_alive: Duration,
    delta_pause: Duration,
}

impl App {
    pub fn new(keep_alive: Duration, delta_pause: Duration) -> Self {
        App {
            ors: Server::with_config(
                vec![Arc::new(Gsm8k)],
                ServerConfig::default().keep_alive(keep_alive),
            ),
            keep_alive,
            delta_pause,
        }
    }

    pub async fn handle(&self, req: Request<Incoming>) -> Response<OrsBody> {
        if req.uri().path() == "/v1/responses" && req.method() == Method::POST {
            self.responses(req).await
        } else {
            self.ors.handle(req).await
        }
    }

    /// A Responses-API stream with ids `1..n`. `Last-Event-ID: k` resumes at `k+1` (the
    /// stream is a pure function of the request, so resuming is recomputing). A first
    /// connection with `?cut_after=N` sends N events and half of the next, then ends the
    /// body: a truncation, on purpose.
    async fn responses(&self, req: Request<Incoming>) -> Response<OrsBody> {
        let resume = last_event_id(req.headers()).and_then(|id| id.parse::<usize>().ok());
        let cut = req
            .uri()
            .query()
            .and_then(|q| q.strip_prefix("cut_after="))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|_| resume.is_none());
        let input = match req.into_body().collect().await {
            Ok(body) => serde_json::from_slice::<Value>(&body.to_bytes()).unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        let prompt = input["input"].as_str().unwrap_or_default().to_owned();
        let mut frames: Vec<Bytes> = responses_events(&prompt)
            .iter()
            .enumerate()
            .skip(resume.unwrap_or(0))
            .filter_map(|(i, (kind, data))| {
                let event = Event::builder()
                    .event(kind.clone())
                    .and_then(|b| b.id((i + 1).to_string()))
                    .ok()?
                    .data(data.to_string())
                    .build();
                let mut out = BytesMut::new();
                Encoder::new().encode(&event, &mut out).ok()?;
                Some(out.freeze())
            })
            .collect();
        if let Some(n) = cut {
            if let Some(next) = frames.get(n) {
                let half = next.slice(..next.len() / 2);
                frames.truncate(n);
                frames.push(half);
            }
        }
        let pause = self.delta_pause;
        let stream = futures_util::stream::unfold(frames.into_iter(), move |mut it| async move {
            let frame = it.next()?;
            tokio::time::sleep(pause).await;
            Some((frame, it))
        });
        let body = SseBody::from_bytes(stream).keep_alive(self.keep_alive);
        response(body.boxed_unsync())
    }
}

/// `(type, data)` of every event of one response.
fn responses_events(prompt: &str) -> Vec<(String, Value)> {
    let id = "resp_demo";
    let mut out = vec![
        (
            "response.created".to_owned(),
            json!({"type": "response.created", "response": {"id": id, "status": "in_progress", "output": []}, "input": prompt}),
        ),
        (
            "response.in_progress".to_owned(),
            json!({"type": "response.in_progress", "response": {"id": id, "status": "in_progress"}}),
        ),
    ];
    let words: Vec<&str> = ANSWER.split_inclusive(' ').collect();
    for word in words {
        out.push((
            "response.output_text.delta".to_owned(),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": word}),
        ));
    }
    out.push((
        "response.completed".to_owned(),
        json!({"type": "response.completed", "response": {"id": id, "status": "completed", "error": null}}),
    ));
    out
}

impl hyper::service::Service<Request<Incoming>> for App {
    type Response = Response<OrsBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let app = self.clone();
        Box::pin(async move { Ok(app.handle(req).await) })
    }
}

/// The full answer text, for the demo's check.
pub fn expected_answer() -> &'static str {
    ANSWER
}

//! UTCP SSE providers, from the specification page's own examples, against 127.0.0.1.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{boxed, spawn, within};
use futures_util::StreamExt;
use http_body_util::BodyExt;
use serde_json::json;
use ssekit::Event;
use ssekit_hyper::client::Item;
use ssekit_hyper::server::{response, SseBody};
use ssekit_hyper::utcp::{Auth, SseProvider};

/// The page's full configuration example, verbatim.
const FULL: &str = r#"{
  "name": "live_updates_service",
  "provider_type": "sse",
  "url": "https://api.example.com/events",
  "event_type": "message",
  "reconnect": true,
  "retry_timeout": 30000,
  "auth": {
    "auth_type": "api_key",
    "api_key": "$YOUR_API_KEY",
    "var_name": "X-API-Key"
  },
  "headers": {
    "User-Agent": "UTCP Client"
  },
  "body_field": "payload",
  "header_fields": ["api_version", "client_id"]
}"#;

const MARKET: &str = r#"{
  "name": "market_updates",
  "provider_type": "sse",
  "url": "https://markets.example.com/stream",
  "event_type": "price_update"
}"#;

const NOTIFY: &str = r#"{
  "name": "notification_service",
  "provider_type": "sse",
  "url": "https://notify.example.com/events",
  "event_type": "notification",
  "auth": {
    "auth_type": "api_key",
    "api_key": "YOUR_API_KEY",
    "var_name": "X-API-Key"
  }
}"#;

#[derive(Clone, Debug, Default)]
struct Seen {
    method: String,
    uri: String,
    headers: http::HeaderMap,
    body: Bytes,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// A server that logs each request and streams typed events: two `other`, then `kind`s.
async fn server(kind: &'static str, log: Log) -> String {
    let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
        let log = log.clone();
        async move {
            if req.uri().path() == "/token" {
                let body = req.into_body().collect().await.unwrap().to_bytes();
                log.lock().unwrap().push(Seen {
                    method: "TOKEN".into(),
                    body,
                    ..Seen::default()
                });
                let mut resp = http::Response::new(http_body_util::Full::new(Bytes::from_static(
                    br#"{"access_token":"tok-123","token_type":"bearer"}"#,
                )));
                resp.headers_mut().insert(
                    "content-type",
                    http::HeaderValue::from_static("application/json"),
                );
                return boxed(resp);
            }
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let n = {
                let mut log = log.lock().unwrap();
                log.push(Seen {
                    method: parts.method.to_string(),
                    uri: parts.uri.to_string(),
                    headers: parts.headers,
                    body,
                });
                log.len()
            };
            let events = vec![
                Event::builder()
                    .event("other")
                    .unwrap()
                    .data("skip me")
                    .build(),
                Event::builder()
                    .event(kind)
                    .unwrap()
                    .id(format!("{n}"))
                    .unwrap()
                    .data(format!(r#"{{"n":{n}}}"#))
                    .build(),
                Event::builder()
                    .event("other")
                    .unwrap()
                    .data("skip me too")
                    .build(),
            ];
            boxed(response(SseBody::new(futures_util::stream::iter(events))))
        }
    })
    .await;
    format!("http://{addr}")
}

fn with_url(json: &str, url: &str) -> SseProvider {
    let mut value: serde_json::Value = serde_json::from_str(json).unwrap();
    value["url"] = json!(url);
    SseProvider::from_json(&value.to_string()).unwrap()
}

#[test]
fn an_undefined_variable_is_an_error() {
    let err = SseProvider::from_json(FULL)
        .unwrap()
        .with_variables(|_| None)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid request: UTCP variable \"YOUR_API_KEY\" is not defined"
    );
}

#[test]
fn the_pages_examples_parse_with_their_defaults() {
    let full = SseProvider::from_json(FULL).unwrap();
    assert_eq!(full.event_type.as_deref(), Some("message"));
    assert!(full.reconnect);
    assert_eq!(full.retry_timeout, 30_000);
    assert_eq!(
        full.auth,
        Some(
            serde_json::from_value::<Auth>(
                json!({"auth_type": "api_key", "api_key": "$YOUR_API_KEY", "var_name": "X-API-Key"})
            )
            .unwrap()
        )
    );
    assert_eq!(full.headers["User-Agent"], "UTCP Client");
    assert_eq!(full.body_field.as_deref(), Some("payload"));
    assert_eq!(full.header_fields, ["api_version", "client_id"]);
    let market = SseProvider::from_json(MARKET).unwrap();
    assert_eq!(
        (
            market.reconnect,
            market.retry_timeout,
            market.auth.is_none()
        ),
        (true, 30_000, true)
    );
    assert!(SseProvider::from_json(NOTIFY).unwrap().auth.is_some());
    assert!(SseProvider::from_json(&FULL.replace("\"sse\"", "\"http\"")).is_err());
    let basic: Auth =
        serde_json::from_value(json!({"auth_type": "basic", "username": "u", "password": "p"}))
            .unwrap();
    assert!(matches!(basic, Auth::Basic { .. }));
    let oauth: Auth = serde_json::from_value(
        json!({"auth_type": "oauth2", "token_url": "t", "client_id": "c", "client_secret": "s"}),
    )
    .unwrap();
    assert!(matches!(oauth, Auth::OAuth2 { scope: None, .. }));
}

#[tokio::test]
async fn the_full_example_splits_inputs_into_headers_body_and_query_and_filters_by_type() {
    let log = Log::default();
    let base = server("message", log.clone()).await;
    let provider = with_url(FULL, &format!("{base}/events"))
        .with_variables(|name| (name == "YOUR_API_KEY").then(|| "key-from-env".to_owned()))
        .unwrap();
    let inputs = json!({"payload": {"q": "up?"}, "api_version": "2", "client_id": "c-9", "symbol": "AAPL & co"});
    let source = provider.connect(inputs.as_object().unwrap()).await.unwrap();
    let mut events = source.events();
    let first = within(5, events.next()).await.unwrap().unwrap();
    assert_eq!(
        (first.event_type(), first.data()),
        ("message", r#"{"n":1}"#)
    );
    drop(events);
    let seen = log.lock().unwrap()[0].clone();
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.uri, "/events?symbol=AAPL%20%26%20co");
    assert_eq!(seen.body.as_ref(), br#"{"q":"up?"}"#);
    let h = &seen.headers;
    assert_eq!(h["x-api-key"], "key-from-env");
    assert_eq!(h["user-agent"], "UTCP Client");
    assert_eq!(h["api_version"], "2");
    assert_eq!(h["client_id"], "c-9");
    assert_eq!(h["accept"], "text/event-stream");
    assert_eq!(h["content-type"], "application/json");
}

#[tokio::test]
async fn the_market_example_is_a_get_with_query_inputs_that_reconnects_with_last_event_id() {
    let log = Log::default();
    let base = server("price_update", log.clone()).await;
    let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
    value["url"] = json!(format!("{base}/stream"));
    value["retry_timeout"] = json!(50); // the page's 30 s default would make this test slow
    let provider = SseProvider::from_json(&value.to_string()).unwrap();
    let source = provider
        .connect(json!({"symbol": "AAPL"}).as_object().unwrap())
        .await
        .unwrap();
    let mut items = source.stream();
    let mut updates = Vec::new();
    while updates.len() < 2 {
        if let Item::Event(e) = within(5, items.next()).await.unwrap().unwrap() {
            updates.push(e);
        }
    }
    assert!(
        updates.iter().all(|e| e.event_type() == "price_update"),
        "filtered by event_type"
    );
    let log = log.lock().unwrap();
    assert_eq!(log[0].method, "GET");
    assert_eq!(log[0].uri, "/stream?symbol=AAPL");
    assert!(log[0].headers.get("last-event-id").is_none());
    assert_eq!(log[1].headers["last-event-id"], "1");
}

#[tokio::test]
async fn a_null_event_type_delivers_every_event() {
    let base = server("price_update", Log::default()).await;
    let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
    value["url"] = json!(format!("{base}/stream"));
    value["event_type"] = serde_json::Value::Null;
    let provider = SseProvider::from_json(&value.to_string()).unwrap();
    assert_eq!(provider.event_type, None);
    let source = provider.connect(&serde_json::Map::new()).await.unwrap();
    let mut items = source.stream();
    let mut types = Vec::new();
    while types.len() < 2 {
        if let Item::Event(e) = within(5, items.next()).await.unwrap().unwrap() {
            types.push(e.event_type().to_owned());
        }
    }
    assert_eq!(types, ["other", "price_update"], "no filter");
}

#[tokio::test]
async fn basic_and_oauth2_auth_and_reconnect_false() {
    let log = Log::default();
    let base = server("notification", log.clone()).await;
    let mut value: serde_json::Value = serde_json::from_str(NOTIFY).unwrap();
    value["url"] = json!(format!("{base}/events"));
    value["reconnect"] = json!(false);
    value["auth"] = json!({"auth_type": "basic", "username": "Aladdin", "password": "open sesame"});
    let provider = SseProvider::from_json(&value.to_string()).unwrap();
    let all: Vec<_> = within(
        5,
        provider
            .connect(&serde_json::Map::new())
            .await
            .unwrap()
            .events()
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(
        all.len(),
        1,
        "one connection, one notification, no reconnect: {all:?}"
    );
    assert_eq!(
        log.lock().unwrap()[0].headers["authorization"],
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    );

    value["auth"] = json!({"auth_type": "oauth2", "token_url": format!("{base}/token"), "client_id": "id 1", "client_secret": "s&cret", "scope": "read"});
    let provider = SseProvider::from_json(&value.to_string()).unwrap();
    let all: Vec<_> = within(
        5,
        provider
            .connect(&serde_json::Map::new())
            .await
            .unwrap()
            .events()
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(all.len(), 1);
    let log = log.lock().unwrap();
    let token_request = log.iter().find(|s| s.method == "TOKEN").unwrap();
    assert_eq!(
        token_request.body.as_ref(),
        b"grant_type=client_credentials&client_id=id%201&client_secret=s%26cret&scope=read"
    );
    assert_eq!(
        log.last().unwrap().headers["authorization"],
        "Bearer tok-123"
    );
    let _ = Duration::ZERO;
}

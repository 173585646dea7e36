//! UTCP SSE providers, from the specification page's own examples, against 127.0.0.1.
//!
//! Every client-side scenario is a function generic over the transport (`T: HttpIo`), run
//! once per runtime by [`runtimes!`]: `name::hyper` (ssekit-hyper on tokio) and `name::smol`
//! (ssekit-smol; its client brings its own reactor, so it runs inside a tokio test). The
//! servers are hyper services on tokio either way.

// The helpers of ssekit-hyper's suites (servers on 127.0.0.1), shared rather than copied.
#[path = "../../transport-hyper/tests/common/mod.rs"]
mod common;

/// Runs the scenario `$name::<T>()` with each transport's provider: as the tests
/// `$name::hyper` and `$name::smol`.
macro_rules! runtimes {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn hyper() {
                super::$name::<ssekit_hyper::client::HyperHttp>().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn smol() {
                super::$name::<ssekit_smol::client::SmolHttp>().await;
            }
        }
    };
}

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::{boxed, spawn, within};
use futures_util::StreamExt;
use http_body_util::BodyExt;
use serde_json::json;
use ssekit::Event;
use ssekit_http::client::Item;
use ssekit_http::io::HttpIo;
use ssekit_hyper::server::{response, SseBody};
use ssekit_utcp::{Auth, SseProvider, WarningKind};

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
    serve_events(kind, log, false).await
}

/// [`server`], whose streams are cut inside an event after theirs, so that a call resumes.
async fn cutting_server(kind: &'static str, log: Log) -> String {
    serve_events(kind, log, true).await
}

async fn serve_events(kind: &'static str, log: Log, cut: bool) -> String {
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
            if cut {
                cut_after(events)
            } else {
                boxed(response(SseBody::new(futures_util::stream::iter(events))))
            }
        }
    })
    .await;
    format!("http://{addr}")
}

/// An event stream of `events` cut inside the next one: a UTCP call resumes a cut stream
/// with `Last-Event-ID` (a clean end would end the call).
fn cut_after(events: Vec<Event>) -> common::Resp {
    let mut wire = bytes::BytesMut::new();
    for event in &events {
        ssekit::Encoder::default().encode(event, &mut wire).unwrap();
    }
    wire.extend_from_slice(CUT);
    reply(200, &wire)
}

/// Half an event: what a stream that is cut ends with.
const CUT: &[u8] = b"data: cut before its end";

/// Every event (or the error that ended the stream) of one connection of `provider`,
/// within 5 s.
async fn all_events<T: HttpIo>(
    provider: &SseProvider<T>,
) -> Vec<Result<Event, ssekit_http::Error>> {
    let events = async {
        let source = provider.connect(&serde_json::Map::new()).await.unwrap();
        source.events().collect().await
    };
    within(events).await
}

fn with_url<T>(json: &str, url: &str) -> SseProvider<T> {
    let mut value: serde_json::Value = serde_json::from_str(json).unwrap();
    value["url"] = json!(url);
    SseProvider::<T>::from_json(&value.to_string()).unwrap()
}

#[test]
fn an_undefined_variable_is_an_error() {
    let err = SseProvider::<()>::from_json(FULL)
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
    let full = SseProvider::<()>::from_json(FULL).unwrap();
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
    let market = SseProvider::<()>::from_json(MARKET).unwrap();
    assert_eq!(
        (
            market.reconnect,
            market.retry_timeout,
            market.auth.is_none()
        ),
        (true, 30_000, true)
    );
    assert!(SseProvider::<()>::from_json(NOTIFY).unwrap().auth.is_some());
    assert!(SseProvider::<()>::from_json(&FULL.replace("\"sse\"", "\"http\"")).is_err());
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

runtimes!(the_full_example_splits_inputs_into_headers_body_and_query_and_filters_by_type);
async fn the_full_example_splits_inputs_into_headers_body_and_query_and_filters_by_type<
    T: HttpIo,
>() {
    let log = Log::default();
    let base = server("message", log.clone()).await;
    let provider = with_url::<T>(FULL, &format!("{base}/events"))
        .with_variables(|name| (name == "YOUR_API_KEY").then(|| "key-from-env".to_owned()))
        .unwrap();
    let inputs = json!({"payload": {"q": "up?"}, "api_version": "2", "client_id": "c-9", "symbol": "AAPL & co"});
    let source = provider.connect(inputs.as_object().unwrap()).await.unwrap();
    let mut events = source.events();
    let first = within(events.next()).await.unwrap().unwrap();
    assert_eq!(
        (first.event_type(), first.data()),
        ("message", r#"{"n":1}"#)
    );
    drop(events);
    let seen = log.lock().unwrap()[0].clone();
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.uri, "/events?symbol=AAPL%20%26%20co");
    // No Content-Type in the template: an object body is form-encoded, as the official
    // client (aiohttp) sends a dict.
    assert_eq!(seen.body.as_ref(), b"q=up%3F");
    let h = &seen.headers;
    assert_eq!(h["x-api-key"], "key-from-env");
    assert_eq!(h["user-agent"], "UTCP Client");
    assert_eq!(h["api_version"], "2");
    assert_eq!(h["client_id"], "c-9");
    assert_eq!(h["accept"], "text/event-stream");
    assert_eq!(h["content-type"], "application/x-www-form-urlencoded");
}

runtimes!(a_call_ends_at_a_clean_end_of_its_stream);
/// A tool call runs "until the connection is closed": a clean end ends it, without the
/// reconnect (and the repeated results) of a subscription; a cut resumes it (the market
/// test below).
async fn a_call_ends_at_a_clean_end_of_its_stream<T: HttpIo>() {
    let log = Log::default();
    let base = server("price_update", log.clone()).await;
    let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
    value["url"] = json!(format!("{base}/stream"));
    value["retry_timeout"] = json!(50);
    let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
    let source = provider
        .connect(json!({"symbol": "AAPL"}).as_object().unwrap())
        .await
        .unwrap();
    let items: Vec<_> = within(source.stream().collect::<Vec<_>>()).await;
    let events: Vec<_> = items
        .iter()
        .filter_map(|item| match item {
            Ok(Item::Event(e)) => Some(e.data().to_owned()),
            Ok(_) => None,
            Err(e) => panic!("{e}"),
        })
        .collect();
    assert_eq!(events, [r#"{"n":1}"#]);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(log.lock().unwrap().len(), 1, "no reconnect after the end");
}

runtimes!(the_market_example_is_a_get_with_query_inputs_that_reconnects_with_last_event_id);
async fn the_market_example_is_a_get_with_query_inputs_that_reconnects_with_last_event_id<
    T: HttpIo,
>() {
    let log = Log::default();
    let base = cutting_server("price_update", log.clone()).await;
    let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
    value["url"] = json!(format!("{base}/stream"));
    value["retry_timeout"] = json!(50); // the page's 30 s default would make this test slow
    let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
    let source = provider
        .connect(json!({"symbol": "AAPL"}).as_object().unwrap())
        .await
        .unwrap();
    let mut items = source.stream();
    let mut updates = Vec::new();
    while updates.len() < 2 {
        if let Item::Event(e) = within(items.next()).await.unwrap().unwrap() {
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

runtimes!(query_inputs_survive_a_fragment_in_the_provider_url);
/// A fragment in the provider URL is not sent, and does not take the query inputs with it
/// (they were appended after it, where the request URI had already ended).
async fn query_inputs_survive_a_fragment_in_the_provider_url<T: HttpIo>() {
    let log = Log::default();
    let base = server("price_update", log.clone()).await;
    for (url, expected) in [
        (format!("{base}/stream#top"), "/stream?symbol=AAPL"),
        (format!("{base}/stream?v=2#top"), "/stream?v=2&symbol=AAPL"),
    ] {
        let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
        value["url"] = json!(url);
        value["reconnect"] = json!(false);
        let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
        let inputs = json!({"symbol": "AAPL"});
        let source = provider.connect(inputs.as_object().unwrap()).await.unwrap();
        let _: Vec<_> = within(source.events().collect()).await;
        assert_eq!(log.lock().unwrap().pop().unwrap().uri, expected, "{url}");
    }
}

runtimes!(a_null_event_type_delivers_every_event);
async fn a_null_event_type_delivers_every_event<T: HttpIo>() {
    let base = server("price_update", Log::default()).await;
    let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
    value["url"] = json!(format!("{base}/stream"));
    value["event_type"] = serde_json::Value::Null;
    let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
    assert_eq!(provider.event_type, None);
    let source = provider.connect(&serde_json::Map::new()).await.unwrap();
    let mut items = source.stream();
    let mut types = Vec::new();
    while types.len() < 2 {
        if let Item::Event(e) = within(items.next()).await.unwrap().unwrap() {
            types.push(e.event_type().to_owned());
        }
    }
    assert_eq!(types, ["other", "price_update"], "no filter");
}

runtimes!(basic_and_oauth2_auth_and_reconnect_false);
async fn basic_and_oauth2_auth_and_reconnect_false<T: HttpIo>() {
    let log = Log::default();
    let base = server("notification", log.clone()).await;
    let mut value: serde_json::Value = serde_json::from_str(NOTIFY).unwrap();
    value["url"] = json!(format!("{base}/events"));
    value["reconnect"] = json!(false);
    value["auth"] = json!({"auth_type": "basic", "username": "Aladdin", "password": "open sesame"});
    let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
    let all: Vec<_> = all_events(&provider).await;
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
    let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
    let all: Vec<_> = all_events(&provider).await;
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
}

// ---------------------------------------------------------------------------------------
// Tool calls checked against the tool's schemas: the page's watch_stock example end to end.

/// The page's tool definition, verbatim.
const WATCH_STOCK: &str = r#"{
  "name": "watch_stock",
  "description": "Get real-time price updates for a stock",
  "inputs": {
    "type": "object",
    "properties": {
      "symbol": {
        "type": "string",
        "description": "Stock symbol (e.g., AAPL)"
      }
    },
    "required": ["symbol"]
  },
  "outputs": {
    "type": "object",
    "properties": {
      "symbol": {
        "type": "string",
        "description": "Stock symbol"
      },
      "price": {
        "type": "number",
        "description": "Current price"
      },
      "change": {
        "type": "number",
        "description": "Price change"
      },
      "timestamp": {
        "type": "string",
        "description": "Update time"
      }
    }
  }
}"#;

mod call {
    use super::common::{boxed, spawn, within};
    use super::{Log, Seen, MARKET, WATCH_STOCK};
    use futures_util::StreamExt;
    use http_body_util::BodyExt;
    use serde_json::json;
    use ssekit::Event;
    use ssekit_http::io::HttpIo;
    use ssekit_hyper::server::{response, SseBody};
    use ssekit_utcp::{CallError, OnMismatch, Output, SseProvider, Tool};

    /// A market stream: price updates for the `symbol` asked (a good one, a price sent as a
    /// string, data that is not JSON, an event of another type, a good one), then the end.
    async fn market(log: Log) -> String {
        let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
            let log = log.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = body.collect().await.unwrap().to_bytes();
                log.lock().unwrap().push(Seen {
                    method: parts.method.to_string(),
                    uri: parts.uri.to_string(),
                    headers: parts.headers,
                    body,
                });
                let update = |id: &str, data: &str| {
                    Event::builder()
                        .event("price_update")
                        .unwrap()
                        .id(id.to_owned())
                        .unwrap()
                        .data(data.to_owned())
                        .build()
                };
                let events = vec![
                    update("1", r#"{"symbol":"AAPL","price":189.5,"change":0.25,"timestamp":"2025-01-02T15:04:05Z"}"#),
                    update("2", r#"{"symbol":"AAPL","price":"189.75","change":0.25,"timestamp":"2025-01-02T15:04:06Z"}"#),
                    update("3", "AAPL 189.80"),
                    Event::builder().event("heartbeat").unwrap().data("{}").build(),
                    update("4", r#"{"symbol":"AAPL","price":190,"change":-0.5,"timestamp":"2025-01-02T15:04:08Z"}"#),
                ];
                boxed(response(SseBody::new(futures_util::stream::iter(events))))
            }
        })
        .await;
        format!("http://{addr}")
    }

    fn provider<T>(base: &str) -> SseProvider<T> {
        let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
        value["url"] = json!(format!("{base}/stream"));
        value["reconnect"] = json!(false); // one connection: the stream ends with the body
        SseProvider::<T>::from_json(&value.to_string()).unwrap()
    }

    fn prices(outputs: &[Result<Output, CallError>]) -> Vec<String> {
        outputs
            .iter()
            .map(|o| match o {
                Ok(out) => format!("ok {} {}", out.event.id().unwrap(), out.value["price"]),
                Err(e) => e.to_string(),
            })
            .collect()
    }

    runtimes!(watch_stock_yields_parsed_updates_and_names_each_bad_one);
    async fn watch_stock_yields_parsed_updates_and_names_each_bad_one<T: HttpIo>() {
        let log = Log::default();
        let base = market(log.clone()).await;
        let tool = Tool::from_json(WATCH_STOCK).unwrap();
        let inputs = json!({"symbol": "AAPL"});
        let call = provider::<T>(&base)
            .call(&tool, inputs.as_object().unwrap())
            .await
            .unwrap();
        let outputs: Vec<_> = within(call.outputs().collect()).await;
        assert_eq!(
            prices(&outputs),
            [
                "ok 1 189.5",
                "event id \"2\" of type \"price_update\": the data does not match the tool's \
                 outputs schema: at /price: expected number, found string \"189.75\"",
                "event id \"3\" of type \"price_update\": the data is not JSON: expected value \
                 at line 1 column 1",
                "ok 4 190",
            ],
            "filtered by event_type, bad events reported and skipped"
        );
        let Err(CallError::Output { event, mismatch }) = &outputs[1] else {
            panic!("{:?}", outputs[1]);
        };
        assert_eq!(
            (event.id(), event.event_type(), mismatch.path.as_str()),
            (Some("2"), "price_update", "/price")
        );
        assert_eq!(
            (mismatch.expected.as_str(), mismatch.found.as_str()),
            ("number", "string \"189.75\"")
        );
        let Err(CallError::NotJson { event, .. }) = &outputs[2] else {
            panic!("{:?}", outputs[2]);
        };
        assert_eq!(event.data(), "AAPL 189.80");
        let Ok(first) = &outputs[0] else {
            unreachable!()
        };
        assert_eq!(
            first.value,
            json!({"symbol": "AAPL", "price": 189.5, "change": 0.25, "timestamp": "2025-01-02T15:04:05Z"})
        );
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(
            (log[0].method.as_str(), log[0].uri.as_str()),
            ("GET", "/stream?symbol=AAPL")
        );
    }

    runtimes!(on_mismatch_end_stops_at_the_first_bad_event);
    async fn on_mismatch_end_stops_at_the_first_bad_event<T: HttpIo>() {
        let base = market(Log::default()).await;
        let tool = Tool::from_json(WATCH_STOCK).unwrap();
        let inputs = json!({"symbol": "AAPL"});
        let call = provider::<T>(&base)
            .call(&tool, inputs.as_object().unwrap())
            .await
            .unwrap()
            .on_mismatch(OnMismatch::End);
        let outputs: Vec<_> = within(call.outputs().collect()).await;
        assert_eq!(outputs.len(), 2, "{:?}", prices(&outputs));
        assert!(outputs[0].is_ok());
        assert!(
            matches!(&outputs[1], Err(CallError::Output { mismatch, .. }) if mismatch.path == "/price")
        );
    }

    runtimes!(event_data_past_the_parse_limit_is_refused_unparsed);
    /// Data past the parse limit is not parsed (as a `Value` it could take ~90 times its
    /// size): it is reported as too large, then skipped like a mismatch, or ends the stream.
    async fn event_data_past_the_parse_limit_is_refused_unparsed<T: HttpIo>() {
        use ssekit_utcp::DEFAULT_MAX_OUTPUT;
        // JSON strings of exactly the limit and of one byte more, then a small object.
        let string = |len: usize| format!("\"{}\"", "x".repeat(len - 2));
        let datas = [
            string(DEFAULT_MAX_OUTPUT),
            string(DEFAULT_MAX_OUTPUT + 1),
            r#"{"price":1}"#.to_owned(),
        ];
        let addr = spawn(move |_req: http::Request<hyper::body::Incoming>| {
            let events: Vec<_> = datas
                .iter()
                .enumerate()
                .map(|(i, data)| {
                    Event::builder()
                        .event("price_update")
                        .unwrap()
                        .id(format!("{}", i + 1))
                        .unwrap()
                        .data(data.clone())
                        .build()
                })
                .collect();
            async move { boxed(response(SseBody::new(futures_util::stream::iter(events)))) }
        })
        .await;
        let tool =
            Tool::from_json(r#"{"name":"t","outputs":{"type":["object","string"]}}"#).unwrap();
        let provider = provider::<T>(&format!("http://{addr}"));
        let call = provider.call(&tool, &serde_json::Map::new()).await.unwrap();
        let outputs: Vec<_> = within(call.outputs().collect()).await;
        assert_eq!(outputs.len(), 3);
        assert!(outputs[0].is_ok(), "at the limit: parsed");
        let Err(err @ CallError::TooLarge { event, limit }) = &outputs[1] else {
            panic!("{:?}", outputs[1]);
        };
        assert_eq!((event.id(), *limit), (Some("2"), DEFAULT_MAX_OUTPUT));
        assert_eq!(
            err.to_string(),
            format!(
                "event id \"2\" of type \"price_update\": the data is {} bytes, more than \
                 the {DEFAULT_MAX_OUTPUT}-byte limit for parsing it",
                DEFAULT_MAX_OUTPUT + 1
            )
        );
        assert_eq!(outputs[2].as_ref().unwrap().value, json!({"price": 1}));
        // A smaller limit, and End: the first event ends the stream.
        let call = provider.call(&tool, &serde_json::Map::new()).await.unwrap();
        let outputs: Vec<_> = within(
            call.max_output(16)
                .on_mismatch(OnMismatch::End)
                .outputs()
                .collect(),
        )
        .await;
        assert_eq!(outputs.len(), 1);
        assert!(matches!(
            outputs[0],
            Err(CallError::TooLarge { limit: 16, .. })
        ));
    }

    runtimes!(inputs_that_do_not_match_are_refused_before_any_request);
    async fn inputs_that_do_not_match_are_refused_before_any_request<T: HttpIo>() {
        let log = Log::default();
        let base = market(log.clone()).await;
        // OAuth2 too: not even the token request may leave.
        let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
        value["url"] = json!(format!("{base}/stream"));
        value["auth"] = json!({"auth_type": "oauth2", "token_url": format!("{base}/token"), "client_id": "c", "client_secret": "s"});
        let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
        let tool = Tool::from_json(WATCH_STOCK).unwrap();
        for (inputs, path, expected, found) in [
            (json!({}), "/symbol", "a value (required)", "nothing"),
            (
                json!({"ticker": "AAPL"}),
                "/symbol",
                "a value (required)",
                "nothing",
            ),
            (json!({"symbol": 42}), "/symbol", "string", "number 42"),
        ] {
            let err = within(provider.call(&tool, inputs.as_object().unwrap()))
                .await
                .unwrap_err();
            let CallError::Inputs(m) = &err else {
                panic!("{err}");
            };
            assert_eq!(
                (m.path.as_str(), m.expected.as_str(), m.found.as_str()),
                (path, expected, found),
                "{inputs}"
            );
        }
        assert_eq!(
            within(provider.call(&tool, &serde_json::Map::new()))
                .await
                .unwrap_err()
                .to_string(),
            "the inputs do not match the tool's inputs schema: at /symbol: expected a value \
             (required), found nothing"
        );
        // Give a stray request time to arrive: none did.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(
            log.lock().unwrap().is_empty(),
            "no request reached the server"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Discovery at /utcp on the API's domain, client and server.

mod discovery {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::common::{boxed, spawn, within};
    use super::WATCH_STOCK;
    use bytes::Bytes;
    use futures_util::StreamExt;
    use http_body_util::{Full, StreamBody};
    use serde_json::json;
    use ssekit::Event;
    use ssekit_http::io::HttpIo;
    use ssekit_hyper::server::{response, SseBody};
    use ssekit_utcp::{
        discover, CallError, Discovery, DiscoveryError, Manual, ManualEndpoint, Tool,
    };

    /// The endpoint a server answers `/utcp` with, set once it listens (a provider in the
    /// manual needs the server's URL).
    type Late = Arc<Mutex<Option<ManualEndpoint>>>;

    /// A server whose `/utcp` answers the manual and whose other paths stream one good and
    /// one bad price update; it records what it was asked.
    async fn api(manual: Late, asked: Arc<Mutex<Vec<String>>>) -> String {
        let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
            let endpoint = manual.lock().unwrap().clone().unwrap();
            let asked = asked.clone();
            async move {
                asked
                    .lock()
                    .unwrap()
                    .push(format!("{} {}", req.method(), req.uri()));
                if let Some(answer) = endpoint.answer(&req) {
                    return boxed(answer);
                }
                let events = [r#"{"price":1.5}"#, r#"{"price":null}"#].map(|data| {
                    Event::builder()
                        .event("price_update")
                        .unwrap()
                        .data(data)
                        .build()
                });
                boxed(response(SseBody::new(futures_util::stream::iter(events))))
            }
        })
        .await;
        format!("http://{addr}")
    }

    fn ready(manual: &Manual) -> Late {
        Arc::new(Mutex::new(Some(ManualEndpoint::new(manual))))
    }

    /// A server whose `/utcp` answers these bytes, with a `Content-Length` or chunked.
    async fn raw(body: Vec<u8>, chunked: bool) -> String {
        let body = Bytes::from(body);
        let addr = spawn(move |_req: http::Request<hyper::body::Incoming>| {
            let body = body.clone();
            async move {
                if chunked {
                    let pieces: Vec<Result<_, std::convert::Infallible>> = body
                        .chunks(64 * 1024)
                        .map(|c| Ok(hyper::body::Frame::data(Bytes::copy_from_slice(c))))
                        .collect();
                    boxed(http::Response::new(StreamBody::new(
                        futures_util::stream::iter(pieces),
                    )))
                } else {
                    boxed(http::Response::new(Full::new(body)))
                }
            }
        })
        .await;
        format!("http://{addr}")
    }

    runtimes!(a_manual_served_at_utcp_is_found_from_the_provider_url_and_called);
    async fn a_manual_served_at_utcp_is_found_from_the_provider_url_and_called<T: HttpIo>() {
        let paths = Arc::new(Mutex::new(Vec::new()));
        let cell = Late::default();
        let base = api(cell.clone(), paths.clone()).await;
        let provider = json!({"name": "market_updates", "provider_type": "sse",
            "url": format!("{base}/stream"), "event_type": "price_update", "reconnect": false});
        let served = Manual::new(vec![Tool::from_json(WATCH_STOCK)
            .unwrap()
            .with_provider(provider)
            .with_tags(["finance"])])
        .with_version("1.0");
        *cell.lock().unwrap() = Some(ManualEndpoint::new(&served));

        let manual = within(discover::<T>(&format!("{base}/stream?symbol=AAPL")))
            .await
            .unwrap();
        assert_eq!(manual, served, "the manual makes the round trip");
        let tool = manual.tool("watch_stock").unwrap();
        let provider = tool.sse_provider_for::<T>().unwrap().unwrap();
        let inputs = json!({"symbol": "AAPL"});
        let outputs: Vec<_> = within(
            provider
                .call(tool, inputs.as_object().unwrap())
                .await
                .unwrap()
                .outputs()
                .collect(),
        )
        .await;
        assert_eq!(outputs.len(), 2);
        assert_eq!(outputs[0].as_ref().unwrap().value, json!({"price": 1.5}));
        assert!(
            matches!(&outputs[1], Err(CallError::Output { mismatch, .. }) if mismatch.found == "null")
        );
        assert_eq!(
            *paths.lock().unwrap(),
            ["GET /utcp", "GET /stream?symbol=AAPL"]
        );
    }

    #[tokio::test]
    async fn the_endpoint_answers_get_and_head_refuses_other_methods_and_leaves_other_paths() {
        let paths = Arc::new(Mutex::new(Vec::new()));
        let base = api(ready(&Manual::new(vec![])), paths.clone()).await;
        let client = ssekit_hyper::client::http_client().unwrap();
        let ask = |method: &str, path: &str| {
            let req = http::Request::builder()
                .method(method)
                .uri(format!("{base}{path}"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            let client = client.clone();
            async move {
                let resp = client.request(req).await.unwrap();
                let status = resp.status().as_u16();
                let allow = resp
                    .headers()
                    .get("allow")
                    .map(|v| v.to_str().unwrap().to_owned());
                let ct = resp
                    .headers()
                    .get("content-type")
                    .map(|v| v.to_str().unwrap().to_owned());
                let body = http_body_util::BodyExt::collect(resp.into_body())
                    .await
                    .unwrap()
                    .to_bytes();
                (status, allow, ct, body)
            }
        };
        let (status, _, ct, body) = within(ask("GET", "/utcp?x=1")).await;
        assert_eq!((status, ct.as_deref()), (200, Some("application/json")));
        assert_eq!(body.as_ref(), br#"{"tools":[]}"#);
        let (status, _, _, body) = within(ask("HEAD", "/utcp")).await;
        assert_eq!((status, body.len()), (200, 0));
        let (status, allow, _, _) = within(ask("POST", "/utcp")).await;
        assert_eq!((status, allow.as_deref()), (405, Some("GET, HEAD")));
        let (status, _, ct, _) = within(ask("GET", "/utcp/")).await;
        assert_eq!(
            (status, ct.as_deref()),
            (200, Some("text/event-stream")),
            "not the discovery path"
        );
    }

    runtimes!(a_utcp_1_manual_with_unknown_fields_parses);
    async fn a_utcp_1_manual_with_unknown_fields_parses<T: HttpIo>() {
        let manual = json!({
            "manual_version": "1.0.0", "utcp_version": "1.0.1",
            "info": {"title": "Markets", "version": "1.0.0"}, "x-vendor": true,
            "tools": [{
                "name": "watch_stock", "description": "d", "x-extra": [1, 2],
                "inputs": {"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"], "title": "t"},
                "outputs": {"type": "object"},
                "tool_call_template": {"name": "m", "call_template_type": "sse", "url": "http://127.0.0.1:1/stream", "event_type": "price_update"}
            }, {
                "name": "http_tool",
                "tool_call_template": {"call_template_type": "http", "url": "http://127.0.0.1:1/x", "http_method": "GET"}
            }]
        });
        let base = raw(manual.to_string().into_bytes(), false).await;
        let manual = within(discover::<T>(&base)).await.unwrap();
        assert_eq!(manual.version.as_deref(), Some("1.0.1"));
        assert_eq!(manual.tools.len(), 2);
        let sse = manual.tools[0].sse_provider_for::<T>().unwrap().unwrap();
        assert_eq!(sse.event_type.as_deref(), Some("price_update"));
        assert!(
            manual.tools[1].sse_provider_for::<T>().is_none(),
            "not an SSE tool"
        );
        assert!(manual.tools[1].provider.is_some(), "kept as written");
    }

    runtimes!(an_oversized_manual_is_refused_with_or_without_content_length);
    async fn an_oversized_manual_is_refused_with_or_without_content_length<T: HttpIo>() {
        let mut big = br#"{"tools":[],"padding":""#.to_vec();
        big.resize(2 << 20, b'x');
        big.extend_from_slice(b"\"}");
        for chunked in [false, true] {
            let base = raw(big.clone(), chunked).await;
            let err = within(Discovery::<T>::new().max_size(1 << 20).fetch(&base))
                .await
                .unwrap_err();
            assert!(
                matches!(err, DiscoveryError::TooLarge { limit: 1_048_576 }),
                "chunked {chunked}: {err}"
            );
            // The same body within a larger limit is a manual.
            let manual = within(Discovery::<T>::new().max_size(4 << 20).fetch(&base))
                .await
                .unwrap();
            assert!(manual.tools.is_empty());
        }
    }

    runtimes!(discovery_reads_at_most_1_mib_by_default);
    /// A parsed manual can take ~90 times its bytes (0.73 GB for 8 MiB, the old default):
    /// by default discovery reads at most 1 MiB.
    async fn discovery_reads_at_most_1_mib_by_default<T: HttpIo>() {
        let body = |len: usize| {
            let mut body = br#"{"tools":[],"padding":""#.to_vec();
            body.resize(len - 2, b'x');
            body.extend_from_slice(b"\"}");
            body
        };
        let at_limit = raw(body(1 << 20), false).await;
        assert!(within(discover::<T>(&at_limit))
            .await
            .unwrap()
            .tools
            .is_empty());
        let over = raw(body((1 << 20) + 1), true).await;
        let err = within(discover::<T>(&over)).await.unwrap_err();
        assert!(
            matches!(err, DiscoveryError::TooLarge { limit: 1_048_576 }),
            "{err}"
        );
    }

    runtimes!(a_malformed_manual_is_a_typed_error_naming_where);
    async fn a_malformed_manual_is_a_typed_error_naming_where<T: HttpIo>() {
        for (body, path, problem) in [
            (
                &b"<html>not json</html>"[..],
                "",
                "not JSON: expected value at line 1 column 1",
            ),
            (b"[]", "", "a manual is a JSON object"),
            (
                b"{\"version\":\"1.0\"}",
                "/tools",
                "missing (a manual lists its tools)",
            ),
            (
                br#"{"tools":[{"name":"a"},{"description":"no name"}]}"#,
                "/tools/1/name",
                "missing (a tool needs a name)",
            ),
            (
                br#"{"tools":[{"name":"a","outputs":{"properties":{"price":{"type":"float"}}}}]}"#,
                "/tools/0/outputs/properties/price/type",
                "unknown type \"float\"",
            ),
            (
                br#"{"tools":[{"name":"a"},{"name":"a"}]}"#,
                "/tools/1/name",
                "\"a\" is the name of /tools/0 too",
            ),
            (
                br#"{"tools":[{"name":"a","tags":"x"}]}"#,
                "/tools/0/tags",
                "not an array of strings",
            ),
            (
                br#"{"tools":[{"name":"a","tool_provider":"sse"}]}"#,
                "/tools/0/tool_provider",
                "not an object",
            ),
        ] {
            let base = raw(body.to_vec(), false).await;
            let err = within(discover::<T>(&base)).await.unwrap_err();
            let DiscoveryError::Manual(e) = &err else {
                panic!("{err}");
            };
            assert_eq!(
                (e.path.as_str(), e.problem.as_str()),
                (path, problem),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    runtimes!(a_missing_endpoint_and_a_silent_server_end_in_time);
    async fn a_missing_endpoint_and_a_silent_server_end_in_time<T: HttpIo>() {
        let base = api(ready(&Manual::new(vec![])), Arc::default()).await;
        // A path that is not the discovery one would be an event stream: the client only
        // ever asks for /utcp, so use a server without it.
        let none = spawn(|_req: http::Request<hyper::body::Incoming>| async {
            let mut resp = http::Response::new(Full::new(Bytes::new()));
            *resp.status_mut() = http::StatusCode::NOT_FOUND;
            boxed(resp)
        })
        .await;
        let err = within(discover::<T>(&format!("http://{none}/events")))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                DiscoveryError::Transport(ref e) if e.status() == Some(404)
            ),
            "{err}"
        );
        let (addr, held) = silent_server().await;
        let started = std::time::Instant::now();
        let err = within(
            Discovery::<T>::new()
                .timeout(Duration::from_millis(300))
                .fetch(&format!("http://{addr}/stream")),
        )
        .await
        .unwrap_err();
        // The discovery's own timeout ended it (the server never answers, and `within`
        // fails a hang), not before it was due; how soon after only measures the machine.
        assert!(
            matches!(err, DiscoveryError::TimedOut(t) if t == Duration::from_millis(300)),
            "{err}"
        );
        assert!(started.elapsed() >= Duration::from_millis(300));
        held.abort();
        assert!(within(discover::<T>(&base)).await.unwrap().tools.is_empty());
        let refused = within(discover::<T>("ftp://example.com/x"))
            .await
            .unwrap_err();
        assert!(matches!(
            refused,
            DiscoveryError::Transport(ssekit_http::Error::Request(_))
        ));
    }

    /// A listener on 127.0.0.1 that accepts one connection and never answers (for 30 s),
    /// and the task holding it, to abort when done.
    async fn silent_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = silent.local_addr().unwrap();
        let held = tokio::spawn(async move {
            let (_socket, _) = silent.accept().await.unwrap();
            // Holds the connection, silent, until aborted: only a timeout can end a request.
            std::future::pending::<()>().await;
        });
        (addr, held)
    }

    /// A `/utcp` that wants the provider's credentials: the API key, Basic or a bearer token
    /// from its `/token` (and the provider's own header), else 401. It logs what it is asked.
    async fn guarded(asked: Arc<Mutex<Vec<String>>>) -> String {
        let manual = Manual::new(vec![Tool::from_json(WATCH_STOCK).unwrap()]);
        let endpoint = ManualEndpoint::new(&manual);
        let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
            let endpoint = endpoint.clone();
            let asked = asked.clone();
            async move {
                let header = |name: &str| {
                    req.headers()
                        .get(name)
                        .map_or("", |v| v.to_str().unwrap())
                        .to_owned()
                };
                let mut line = format!(
                    "{} {} key={} auth={} tenant={}",
                    req.method(),
                    req.uri().path(),
                    header("x-api-key"),
                    header("authorization"),
                    header("x-tenant")
                );
                if let Some(query) = req.uri().query() {
                    line.push_str(&format!(" query={query}"));
                }
                if !header("cookie").is_empty() {
                    line.push_str(&format!(" cookie={}", header("cookie")));
                }
                asked.lock().unwrap().push(line);
                if req.uri().path() == "/token" {
                    return boxed(http::Response::new(Full::new(Bytes::from_static(
                        br#"{"access_token":"tok-9","token_type":"bearer"}"#,
                    ))));
                }
                let allowed = header("x-tenant") == "t-1"
                    && (header("x-api-key") == "k-1"
                        || req.uri().query() == Some("X-API-Key=k-1")
                        || header("cookie") == "X-API-Key=k-1"
                        || header("authorization") == "Basic dTpw"
                        || header("authorization") == "Bearer tok-9");
                match endpoint.answer(&req) {
                    Some(answer) if allowed => boxed(answer),
                    _ => {
                        let mut resp = http::Response::new(Full::new(Bytes::new()));
                        *resp.status_mut() = http::StatusCode::UNAUTHORIZED;
                        boxed(resp)
                    }
                }
            }
        })
        .await;
        format!("http://{addr}")
    }

    runtimes!(discovery_of_a_provider_sends_its_headers_and_credentials);
    /// Discovery of a provider's manual sends the provider's headers and credentials, as
    /// UTCP's own client does ("Use the provider's configuration (headers, auth, etc.)"):
    /// an API key, Basic, an OAuth2 bearer token fetched first.
    async fn discovery_of_a_provider_sends_its_headers_and_credentials<T: HttpIo>() {
        use ssekit_utcp::SseProvider;
        let asked = Arc::new(Mutex::new(Vec::new()));
        let base = guarded(asked.clone()).await;
        let provider = |auth: serde_json::Value| {
            SseProvider::<T>::from_json(
                &json!({"name": "m", "provider_type": "sse", "url": format!("{base}/stream?x=1"),
                    "headers": {"X-Tenant": "$TENANT"}, "auth": auth})
                .to_string(),
            )
            .unwrap()
            .with_variables(|name| match name {
                "TENANT" => Some("t-1".to_owned()),
                "KEY" => Some("k-1".to_owned()),
                _ => None,
            })
            .unwrap()
        };
        let err = within(discover::<T>(&base)).await.unwrap_err();
        assert!(
            matches!(
                err,
                DiscoveryError::Transport(ref e) if e.status() == Some(401)
            ),
            "a bare URL sends no credentials: {err}"
        );
        for auth in [
            json!({"auth_type": "api_key", "api_key": "$KEY", "var_name": "X-API-Key"}),
            json!({"auth_type": "api_key", "api_key": "$KEY", "var_name": "X-API-Key",
                "location": "query"}),
            json!({"auth_type": "api_key", "api_key": "$KEY", "var_name": "X-API-Key",
                "location": "cookie"}),
            json!({"auth_type": "basic", "username": "u", "password": "p"}),
            json!({"auth_type": "oauth2", "token_url": format!("{base}/token"),
                "client_id": "c", "client_secret": "s"}),
        ] {
            let manual = within(provider(auth.clone()).discover()).await;
            assert_eq!(
                manual.unwrap().tools[0].name,
                "watch_stock",
                "{auth}: {:?}",
                asked.lock().unwrap()
            );
        }
        assert_eq!(
            *asked.lock().unwrap(),
            [
                "GET /utcp key= auth= tenant=",
                "GET /utcp key=k-1 auth= tenant=t-1",
                "GET /utcp key= auth= tenant=t-1 query=X-API-Key=k-1",
                "GET /utcp key= auth= tenant=t-1 cookie=X-API-Key=k-1",
                "GET /utcp key= auth=Basic dTpw tenant=t-1",
                "POST /token key= auth= tenant=",
                "GET /utcp key= auth=Bearer tok-9 tenant=t-1",
            ]
        );
        // Without its auth the provider's headers alone do not open it.
        let no_auth = SseProvider::<T>::from_json(
            &json!({"name": "m", "provider_type": "sse", "url": base, "headers": {"X-Tenant": "t-1"}})
                .to_string(),
        )
        .unwrap();
        assert!(matches!(
            within(no_auth.discover()).await.unwrap_err(),
            DiscoveryError::Transport(ref e) if e.status() == Some(401)
        ));
    }

    runtimes!(a_silent_token_endpoint_ends_discovery_in_time);
    /// The OAuth2 token request counts within the discovery's timeout.
    async fn a_silent_token_endpoint_ends_discovery_in_time<T: HttpIo>() {
        use ssekit_utcp::SseProvider;
        let (addr, held) = silent_server().await;
        let provider = SseProvider::<T>::from_json(
            &json!({"name": "m", "provider_type": "sse", "url": "http://127.0.0.1:1/stream",
                "auth": {"auth_type": "oauth2", "token_url": format!("http://{addr}/token"),
                    "client_id": "c", "client_secret": "s"}})
            .to_string(),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let err = within(
            Discovery::<T>::new()
                .timeout(Duration::from_millis(300))
                .fetch_provider(&provider),
        )
        .await
        .unwrap_err();
        // The discovery's own timeout ended it (the server never answers, and `within`
        // fails a hang), not before it was due; how soon after only measures the machine.
        assert!(
            matches!(err, DiscoveryError::TimedOut(t) if t == Duration::from_millis(300)),
            "{err}"
        );
        assert!(started.elapsed() >= Duration::from_millis(300));
        held.abort();
    }

    #[test]
    fn the_discovery_url_is_on_the_apis_domain() {
        use ssekit_utcp::discovery_url;
        for (provider, expected) in [
            (
                "https://api.example.com/events",
                "https://api.example.com/utcp",
            ),
            (
                "https://markets.example.com/stream?symbol=AAPL",
                "https://markets.example.com/utcp",
            ),
            ("http://127.0.0.1:8080/a/b#f", "http://127.0.0.1:8080/utcp"),
            ("http://user:pw@[::1]:9/x", "http://[::1]:9/utcp"),
        ] {
            assert_eq!(discovery_url(provider).unwrap(), expected);
        }
        assert!(discovery_url("api.example.com/events").is_err());
    }
}

// ---------------------------------------------------------------------------------------
// Credentials: kept on the provider's origin, and a token endpoint cannot flood the client.

runtimes!(auth_headers_do_not_follow_a_redirect_to_another_origin);
async fn auth_headers_do_not_follow_a_redirect_to_another_origin<T: HttpIo>() {
    let log = Log::default();
    let elsewhere = server("notification", log.clone()).await;
    let to = format!("{elsewhere}/events");
    let redirector = spawn(move |_req: http::Request<hyper::body::Incoming>| {
        let to = to.clone();
        async move {
            let mut resp = http::Response::new(http_body_util::Full::new(Bytes::new()));
            *resp.status_mut() = http::StatusCode::TEMPORARY_REDIRECT;
            resp.headers_mut()
                .insert("location", http::HeaderValue::from_str(&to).unwrap());
            boxed(resp)
        }
    })
    .await;
    for auth in [
        json!({"auth_type": "api_key", "api_key": "k-1", "var_name": "X-API-Key"}),
        json!({"auth_type": "basic", "username": "u", "password": "p"}),
        // The bearer token is put on each request by the stream's hook: dropped all the same.
        json!({"auth_type": "oauth2", "token_url": format!("{elsewhere}/token"),
            "client_id": "c", "client_secret": "s"}),
    ] {
        let mut value: serde_json::Value = serde_json::from_str(NOTIFY).unwrap();
        value["url"] = json!(format!("http://{redirector}/events"));
        value["auth"] = auth;
        value["headers"] = json!({"X-Token": "t-1"});
        value["reconnect"] = json!(false);
        let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
        let source = provider.connect(&serde_json::Map::new()).await.unwrap();
        let mut items = source.stream();
        loop {
            match within(items.next()).await {
                Some(Ok(Item::Event(_))) => break,
                Some(Ok(_)) => {}
                other => panic!("{other:?}"),
            }
        }
        let seen = log.lock().unwrap().pop().unwrap();
        assert!(seen.headers.get("x-api-key").is_none(), "{seen:?}");
        assert!(seen.headers.get("authorization").is_none(), "{seen:?}");
        assert!(seen.headers.get("x-token").is_none(), "{seen:?}");
    }
}

#[test]
fn debug_output_leaves_the_secrets_out() {
    let secrets = [
        "S3-key",
        "S3-password",
        "S3-client-secret",
        "S3-header",
        "S3-disc",
    ];
    let provider = |auth: serde_json::Value| {
        SseProvider::<()>::from_json(
            &json!({"name": "n", "provider_type": "sse", "url": "http://127.0.0.1:1/e",
                "auth": auth, "headers": {"X-Token": "S3-header"}})
            .to_string(),
        )
        .unwrap()
    };
    let printed = [
        json!({"auth_type": "api_key", "api_key": "S3-key", "var_name": "X-API-Key"}),
        json!({"auth_type": "basic", "username": "user-1", "password": "S3-password"}),
        json!({"auth_type": "oauth2", "token_url": "http://127.0.0.1:1/token",
            "client_id": "client-1", "client_secret": "S3-client-secret", "scope": "read"}),
    ]
    .map(|auth| format!("{:?}", provider(auth)))
    .into_iter()
    .chain([format!(
        "{:?}",
        ssekit_utcp::Discovery::<()>::new().header("X-API-Key", "S3-disc")
    )]);
    for text in printed {
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("<redacted>"), "{text}");
    }
    let text = format!(
        "{:?}",
        provider(
            json!({"auth_type": "oauth2", "token_url": "http://127.0.0.1:1/token",
            "client_id": "client-1", "client_secret": "S3-client-secret"})
        )
    );
    for shown in [
        "X-Token",
        "client-1",
        "http://127.0.0.1:1/token",
        "http://127.0.0.1:1/e",
    ] {
        assert!(text.contains(shown), "{shown} not in {text}");
    }
}

#[test]
fn debug_output_leaves_credentials_in_urls_out() {
    let provider = SseProvider::<()>::from_json(
        &json!({"name": "n", "provider_type": "sse",
            "url": "https://user:S3-url-password@api.example.com/events?api_key=S3-query#S3-frag",
            "auth": {"auth_type": "oauth2", "client_id": "c", "client_secret": "s",
                "token_url": "https://id:S3-token-password@auth.example.com/token?key=S3-token-query"}})
        .to_string(),
    )
    .unwrap();
    let text = format!("{provider:?}");
    for secret in [
        "S3-url-password",
        "S3-query",
        "S3-frag",
        "S3-token-password",
        "S3-token-query",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    for shown in [
        "\"https://api.example.com/events?<redacted>\"",
        "\"https://auth.example.com/token?<redacted>\"",
    ] {
        assert!(text.contains(shown), "{shown} not in {text}");
    }
}

runtimes!(an_oversized_token_response_is_refused);
async fn an_oversized_token_response_is_refused<T: HttpIo>() {
    let token = spawn(|_req: http::Request<hyper::body::Incoming>| async move {
        let huge = format!(r#"{{"access_token":"{}"}}"#, "t".repeat(1 << 20));
        boxed(http::Response::new(http_body_util::Full::new(Bytes::from(
            huge,
        ))))
    })
    .await;
    let mut value: serde_json::Value = serde_json::from_str(NOTIFY).unwrap();
    value["url"] = json!("http://127.0.0.1:1/events");
    value["auth"] = json!({"auth_type": "oauth2", "token_url": format!("http://{token}/token"), "client_id": "id", "client_secret": "s"});
    let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
    let Err(err) = within(provider.connect(&serde_json::Map::new())).await else {
        panic!("a token of 1 MiB accepted")
    };
    assert!(
        err.to_string().contains(&format!(
            "larger than {} bytes",
            ssekit_utcp::MAX_TOKEN_RESPONSE
        )),
        "{err}"
    );
}

/// A tool's provider object is kept as written, and can hold the same secrets as an
/// `SseProvider`: its `Debug` output leaves them out as the provider's does (auth secrets,
/// header values, and fields named like a secret anywhere in it), keeping what identifies it.
#[test]
fn a_tools_debug_output_leaves_the_providers_secrets_out() {
    use ssekit_utcp::Tool;
    let tool = |provider: serde_json::Value| {
        Tool::from_value(&json!({"name": "watch_stock", "tool_provider": provider})).unwrap()
    };
    let printed = [
        json!({"name": "p", "provider_type": "sse", "url": "http://127.0.0.1:1/e",
            "headers": {"X-Token": "S3-header"},
            "auth": {"auth_type": "api_key", "api_key": "S3-key", "var_name": "X-API-Key"}}),
        json!({"name": "p", "provider_type": "sse", "url": "http://127.0.0.1:1/e",
            "auth": {"auth_type": "basic", "username": "user-1", "password": "S3-password"}}),
        json!({"name": "p", "provider_type": "sse", "url": "http://127.0.0.1:1/e",
            "auth": {"auth_type": "oauth2", "token_url": "http://127.0.0.1:1/token",
                "client_id": "client-1", "client_secret": "S3-client-secret", "scope": "read"}}),
        // 1.x's call template, with fields this crate does not know.
        json!({"name": "p", "call_template_type": "sse", "url": "http://127.0.0.1:1/e",
            "auth": {"auth_type": "api_key", "api_key": "S3-key", "var_name": "X-API-Key",
                "location": "header", "extra": {"nested": "S3-nested"}},
            "access_token": "S3-access", "options": [{"Client-Secret": "S3-deep"}]}),
        // An auth and headers of a shape no version has are kept, not shown.
        json!({"name": "p", "provider_type": "sse", "url": "http://127.0.0.1:1/e",
            "auth": "Bearer S3-string", "headers": [["X-Token", "S3-pair"]]}),
    ]
    .map(|provider| format!("{:?}", tool(provider)));
    for text in &printed {
        for secret in [
            "S3-header",
            "S3-key",
            "S3-password",
            "S3-client-secret",
            "S3-nested",
            "S3-access",
            "S3-deep",
            "S3-string",
            "S3-pair",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("<redacted>"), "{text}");
        for shown in ["watch_stock", "http://127.0.0.1:1/e"] {
            assert!(text.contains(shown), "{shown} not in {text}");
        }
    }
    for (text, shown) in [
        (&printed[0], "X-Token"),
        (&printed[0], "X-API-Key"),
        (&printed[1], "user-1"),
        (&printed[2], "client-1"),
        (&printed[2], "http://127.0.0.1:1/token"),
        (&printed[2], "read"),
        (&printed[3], "header"),
    ] {
        assert!(text.contains(shown), "{shown} not in {text}");
    }
    // URLs in the object lose their user info and query, as `SseProvider`'s `Debug` shows
    // them; a text that is not an absolute URL is not shown.
    let text = format!(
        "{:?}",
        tool(json!({"name": "p", "provider_type": "sse",
            "url": "https://user:S3-url-password@api.example.com/e?api_key=S3-query",
            "auth": {"auth_type": "oauth2", "client_id": "c", "client_secret": "s",
                "token_url": "https://id:S3-token-password@auth.example.com/t#S3-frag"},
            "discovery_uri": "S3-not-a-url"}))
    );
    for secret in [
        "S3-url-password",
        "S3-query",
        "S3-token-password",
        "S3-frag",
        "S3-not-a-url",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    for shown in [
        "https://api.example.com/e?<redacted>",
        "https://auth.example.com/t?<redacted>",
        "<redacted: not an absolute URL>",
    ] {
        assert!(text.contains(shown), "{shown} not in {text}");
    }
    // The tool itself is untouched: the secrets are still there to use.
    let provider = tool(
        json!({"name": "p", "provider_type": "sse", "url": "http://127.0.0.1:1/e",
        "auth": {"auth_type": "api_key", "api_key": "S3-key"}}),
    )
    .sse_provider_for::<()>()
    .unwrap()
    .unwrap();
    assert!(matches!(provider.auth, Some(Auth::ApiKey { ref api_key, .. }) if api_key == "S3-key"));
}

runtimes!(token_url_errors_do_not_echo_its_user_info_or_query);
/// A token_url may carry credentials in its user info or query: an error about it names
/// its host and path only.
async fn token_url_errors_do_not_echo_its_user_info_or_query<T: HttpIo>() {
    let token = spawn(|_req: http::Request<hyper::body::Incoming>| async move {
        let huge = format!(r#"{{"access_token":"{}"}}"#, "t".repeat(1 << 20));
        boxed(http::Response::new(http_body_util::Full::new(Bytes::from(
            huge,
        ))))
    })
    .await;
    let failure = |token_url: String| async move {
        let mut value: serde_json::Value = serde_json::from_str(NOTIFY).unwrap();
        value["url"] = json!("http://127.0.0.1:1/events");
        value["auth"] = json!({"auth_type": "oauth2", "token_url": token_url,
            "client_id": "id", "client_secret": "s"});
        let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
        match within(provider.connect(&serde_json::Map::new())).await {
            Ok(_) => panic!("{token_url} accepted"),
            Err(err) => err.to_string(),
        }
    };
    let oversized = failure(format!(
        "http://user:S3-pw@{token}/token?client_secret=S3-query#S3-fragment"
    ))
    .await;
    assert!(
        oversized.contains(&format!("http://{token}/token ")),
        "{oversized}"
    );
    let invalid = failure("http://user:S3-pw@127.0.0.1:1/to ken?k=S3-query".to_owned()).await;
    for text in [oversized, invalid] {
        assert!(!text.contains("S3-"), "{text}");
        assert!(!text.contains("user"), "{text}");
    }
}

runtimes!(a_plain_http_token_url_is_refused_unless_it_is_loopback);
/// A client secret must not cross the network in cleartext: a plain `http` token_url is
/// refused, before any request (no lookup of its host either), with a typed error, unless
/// its host is loopback; a scheme the client does not speak is refused the same way. Tool
/// calls and discovery with the provider's credentials refuse it alike.
async fn a_plain_http_token_url_is_refused_unless_it_is_loopback<T: HttpIo>() {
    use ssekit_utcp::{CallError, DiscoveryError, TokenUrlError, Tool};
    let asked = Arc::new(Mutex::new(0));
    let counted = asked.clone();
    let token = spawn(move |_req: http::Request<hyper::body::Incoming>| {
        *counted.lock().unwrap() += 1;
        async move {
            boxed(http::Response::new(http_body_util::Full::new(
                Bytes::from_static(br#"{"access_token":"tok-1"}"#),
            )))
        }
    })
    .await;
    let sse = server("notification", Log::default()).await;
    let provider = |token_url: &str| {
        let mut value: serde_json::Value = serde_json::from_str(NOTIFY).unwrap();
        value["url"] = json!(format!("{sse}/events"));
        value["reconnect"] = json!(false);
        value["auth"] = json!({"auth_type": "oauth2", "token_url": token_url,
            "client_id": "id", "client_secret": "S3-secret"});
        SseProvider::<T>::from_json(&value.to_string()).unwrap()
    };
    // `.invalid` never resolves (RFC 6761): were it asked for, the test would fail, not
    // reach a host elsewhere.
    let cleartext = "http://user:S3-pw@auth.invalid:8080/o/token?k=S3-query";
    let Err(err) = within(provider(cleartext).connect(&serde_json::Map::new())).await else {
        panic!("a plain http token_url to another host accepted");
    };
    assert_eq!(
        TokenUrlError::of(&err),
        Some(&TokenUrlError::Cleartext {
            url: "http://auth.invalid:8080/o/token".to_owned()
        }),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("http://auth.invalid:8080/o/token"), "{text}");
    assert!(!text.contains("S3-"), "{text}");
    let tool = Tool::from_json(r#"{"name": "t"}"#).unwrap();
    let Err(CallError::Transport(err)) =
        within(provider(cleartext).call(&tool, &serde_json::Map::new())).await
    else {
        panic!("a tool call sent the secret to a plain http token_url");
    };
    assert!(
        matches!(
            TokenUrlError::of(&err),
            Some(TokenUrlError::Cleartext { .. })
        ),
        "{err}"
    );
    let Err(DiscoveryError::Transport(err)) = within(provider(cleartext).discover()).await else {
        panic!("discovery sent the secret to a plain http token_url");
    };
    assert!(
        matches!(
            TokenUrlError::of(&err),
            Some(TokenUrlError::Cleartext { .. })
        ),
        "{err}"
    );
    let Err(err) =
        within(provider(&format!("ftp://{token}/token")).connect(&serde_json::Map::new())).await
    else {
        panic!("an ftp token_url accepted");
    };
    assert!(
        matches!(TokenUrlError::of(&err), Some(TokenUrlError::Scheme { scheme }) if scheme == "ftp"),
        "{err}"
    );
    assert_eq!(*asked.lock().unwrap(), 0, "no token request was sent");
    // Loopback over plain http is fine: tests and local development.
    let all: Vec<_> = all_events(&provider(&format!("http://{token}/token"))).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(*asked.lock().unwrap(), 1);
}

// ---------------------------------------------------------------------------------------
// OAuth2 tokens on a long-lived stream: fetched again when they expire or are refused.

/// What the OAuth2 API below saw of one stream request.
#[derive(Clone, Debug, PartialEq)]
struct Asked {
    /// The bearer token sent.
    token: String,
    last_event_id: Option<String>,
    status: u16,
}

/// A loopback API with a `/token` endpoint that counts its requests and hands out `tok-N`
/// (with this `expires_in`, if any), and a stream that logs each request and, unless
/// `refuse(connection number, token)`, sends one event (its id the connection number) and
/// cuts the stream.
struct OAuthApi {
    base: String,
    tokens: Arc<Mutex<u32>>,
    streams: Arc<Mutex<Vec<Asked>>>,
}

async fn oauth_api(expires_in: Option<u64>, refuse: fn(usize, &str) -> bool) -> OAuthApi {
    oauth_api_failing(expires_in, refuse, |_| false).await
}

/// [`oauth_api`] whose token endpoint answers 500 to its `n`th request when `fails(n)`.
async fn oauth_api_failing(
    expires_in: Option<u64>,
    refuse: fn(usize, &str) -> bool,
    fails: fn(u32) -> bool,
) -> OAuthApi {
    let tokens = Arc::new(Mutex::new(0));
    let streams = Arc::new(Mutex::new(Vec::new()));
    let (counted, logged) = (tokens.clone(), streams.clone());
    let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
        let (counted, logged) = (counted.clone(), logged.clone());
        async move {
            if req.uri().path() == "/token" {
                let n = {
                    let mut n = counted.lock().unwrap();
                    *n += 1;
                    *n
                };
                if fails(n) {
                    let mut resp = http::Response::new(http_body_util::Full::new(Bytes::new()));
                    *resp.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
                    return boxed(resp);
                }
                let mut answer =
                    json!({"access_token": format!("tok-{n}"), "token_type": "bearer"});
                if let Some(secs) = expires_in {
                    answer["expires_in"] = json!(secs);
                }
                return boxed(http::Response::new(http_body_util::Full::new(Bytes::from(
                    answer.to_string(),
                ))));
            }
            let header = |name: &str| {
                req.headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_owned())
            };
            let token = header("authorization")
                .unwrap_or_default()
                .trim_start_matches("Bearer ")
                .to_owned();
            let last_event_id = header("last-event-id");
            let mut logged = logged.lock().unwrap();
            let connection = logged.len() + 1;
            let refused = refuse(connection, &token);
            logged.push(Asked {
                token,
                last_event_id,
                status: if refused { 401 } else { 200 },
            });
            if refused {
                let mut resp = http::Response::new(http_body_util::Full::new(Bytes::new()));
                *resp.status_mut() = http::StatusCode::UNAUTHORIZED;
                return boxed(resp);
            }
            let event = Event::builder()
                .event("price_update")
                .unwrap()
                .id(connection.to_string())
                .unwrap()
                .data(format!(r#"{{"n":{connection}}}"#))
                .build();
            cut_after(vec![event])
        }
    })
    .await;
    OAuthApi {
        base: format!("http://{addr}"),
        tokens,
        streams,
    }
}

impl OAuthApi {
    /// The market provider on this API, with OAuth2 and (for a quick test) a reconnection
    /// time of 600 ms: a token good for 1 s is stale (half its life) at each reconnect.
    fn provider<T>(&self) -> SseProvider<T> {
        let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
        value["url"] = json!(format!("{}/stream", self.base));
        value["retry_timeout"] = json!(600);
        value["auth"] = json!({"auth_type": "oauth2", "token_url": format!("{}/token", self.base),
            "client_id": "c", "client_secret": "S3-client-secret"});
        SseProvider::<T>::from_json(&value.to_string()).unwrap()
    }

    fn seen(&self) -> (u32, Vec<Asked>) {
        (
            *self.tokens.lock().unwrap(),
            self.streams.lock().unwrap().clone(),
        )
    }
}

fn asked(token: &str, last_event_id: Option<&str>, status: u16) -> Asked {
    Asked {
        token: token.to_owned(),
        last_event_id: last_event_id.map(str::to_owned),
        status,
    }
}

runtimes!(an_expiring_token_is_fetched_again_before_a_reconnect);
/// The token response's `expires_in` is honoured: a token that is stale (within
/// TOKEN_REFRESH_MARGIN of its expiry, or past half of a shorter lifetime) by the time of a
/// reconnect is fetched again first; one that is not, or has no `expires_in`, is kept.
async fn an_expiring_token_is_fetched_again_before_a_reconnect<T: HttpIo>() {
    let never = |_: usize, _: &str| false;
    for (expires_in, tokens, sent) in [
        // Stale 0.5 s after it is fetched; reconnects come at least 0.5 s after a cut.
        (Some(1), 3, ["tok-1", "tok-2", "tok-3"]),
        (Some(3600), 1, ["tok-1", "tok-1", "tok-1"]),
        (None, 1, ["tok-1", "tok-1", "tok-1"]),
    ] {
        let api = oauth_api(expires_in, never).await;
        let source = within(api.provider::<T>().connect(&serde_json::Map::new()))
            .await
            .unwrap();
        let text = format!("{source:?}");
        assert!(!text.contains("S3-") && !text.contains("tok-"), "{text}");
        let mut items = source.stream();
        let mut ids = Vec::new();
        while ids.len() < 3 {
            match within(items.next()).await {
                Some(Ok(Item::Event(e))) => ids.push(e.id().unwrap().to_owned()),
                Some(Ok(_)) => {}
                other => panic!("expires_in {expires_in:?}: {other:?}"),
            }
        }
        drop(items);
        assert_eq!(ids, ["1", "2", "3"]);
        assert_eq!(
            api.seen(),
            (
                tokens,
                vec![
                    asked(sent[0], None, 200),
                    asked(sent[1], Some("1"), 200),
                    asked(sent[2], Some("2"), 200),
                ]
            ),
            "expires_in {expires_in:?}"
        );
    }
}

runtimes!(a_failed_renewal_before_a_reconnect_keeps_the_current_token);
/// A token endpoint that fails when a stale token is to be renewed before a reconnect does
/// not end the stream: the current token is sent, and the server (here taking it) decides.
/// When the server refuses it, the renewal after the 401 failing too ends the stream.
async fn a_failed_renewal_before_a_reconnect_keeps_the_current_token<T: HttpIo>() {
    let never = |_: usize, _: &str| false;
    let api = oauth_api_failing(Some(1), never, |n| n > 1).await;
    let mut events = within(api.provider::<T>().connect(&serde_json::Map::new()))
        .await
        .unwrap()
        .events();
    for id in ["1", "2", "3"] {
        let event = within(events.next()).await.unwrap().unwrap();
        assert_eq!(event.id(), Some(id));
    }
    drop(events);
    let (tokens, streams) = api.seen();
    assert!(
        tokens >= 3,
        "a renewal was tried before each reconnect: {tokens}"
    );
    assert_eq!(
        streams[..3],
        [
            asked("tok-1", None, 200),
            asked("tok-1", Some("1"), 200),
            asked("tok-1", Some("2"), 200),
        ]
    );

    // Refused after the first connection, with the endpoint down: the stream ends with the
    // endpoint's error once the server has said 401.
    let api = oauth_api_failing(Some(1), |connection, _| connection > 1, |n| n > 1).await;
    let mut events = within(api.provider::<T>().connect(&serde_json::Map::new()))
        .await
        .unwrap()
        .events();
    assert_eq!(
        within(events.next()).await.unwrap().unwrap().id(),
        Some("1")
    );
    let end = within(events.next()).await;
    assert!(matches!(end, Some(Err(_))), "{end:?}");
    assert!(within(events.next()).await.is_none());
}

runtimes!(a_token_refused_on_a_reconnect_is_fetched_again_once);
/// A 401 on a reconnect with the token the server took before drops it and fetches a new
/// one, once: the stream opens again from the last event's id. A 401 to a token just
/// fetched ends the stream.
async fn a_token_refused_on_a_reconnect_is_fetched_again_once<T: HttpIo>() {
    // tok-1 is revoked after the first connection; tok-2 is good.
    let api = oauth_api(None, |connection, token| connection > 1 && token == "tok-1").await;
    let mut items = within(api.provider::<T>().connect(&serde_json::Map::new()))
        .await
        .unwrap()
        .stream();
    let mut seen = Vec::new();
    while seen.iter().filter(|i| matches!(i, Item::Event(_))).count() < 2 {
        match within(items.next()).await {
            Some(Ok(item)) => seen.push(item),
            other => panic!("{other:?} after {seen:?}"),
        }
    }
    drop(items);
    assert!(
        seen.iter().any(|item| matches!(
            item,
            Item::Disconnected(ssekit_http::client::Ended::Refused(refused))
                if refused.status() == 401
                    && refused.to_string().starts_with("the server answered 401 Unauthorized")
        )),
        "{seen:?}"
    );
    assert_eq!(
        api.seen(),
        (
            2,
            vec![
                asked("tok-1", None, 200),
                asked("tok-1", Some("1"), 401),
                asked("tok-2", Some("1"), 200),
            ]
        )
    );

    // Every token is refused after the first connection: one new token, then the 401
    // ends the tool call.
    use ssekit_utcp::{CallError, Tool};
    let api = oauth_api(None, |connection, _| connection > 1).await;
    let tool = Tool::from_json(r#"{"name": "watch_stock"}"#).unwrap();
    let call = within(api.provider::<T>().call(&tool, &serde_json::Map::new()))
        .await
        .unwrap();
    let outputs: Vec<_> = within(call.outputs().collect()).await;
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert_eq!(outputs[0].as_ref().unwrap().value, json!({"n": 1}));
    assert!(
        matches!(
            outputs[1],
            Err(CallError::Transport(ref e)) if e.status() == Some(401)
        ),
        "{outputs:?}"
    );
    assert_eq!(
        api.seen(),
        (
            2,
            vec![
                asked("tok-1", None, 200),
                asked("tok-1", Some("1"), 401),
                asked("tok-2", Some("1"), 401),
            ]
        )
    );

    // A token refused on the first connection, just fetched, is not fetched again.
    let api = oauth_api(None, |_, _| true).await;
    let all: Vec<_> = all_events(&api.provider::<T>()).await;
    assert!(
        matches!(&all[..], [Err(e)] if e.status() == Some(401)),
        "{all:?}"
    );
    assert_eq!(api.seen(), (1, vec![asked("tok-1", None, 401)]));
}

runtimes!(a_reopen_after_a_401_leaves_an_id_that_is_no_header_value_out);
/// After a 401, the stream is opened again with a new token from the last event id; an id
/// with a control character (valid SSE, no header value) is left out then, as the session's
/// own reconnects leave it out, instead of ending the stream with a request error.
async fn a_reopen_after_a_401_leaves_an_id_that_is_no_header_value_out<T: HttpIo>() {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let streams = Arc::new(AtomicUsize::new(0));
    let counted = streams.clone();
    let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
        let streams = counted.clone();
        async move {
            if req.uri().path() == "/token" {
                return boxed(http::Response::new(http_body_util::Full::new(
                    Bytes::from_static(br#"{"access_token":"t","expires_in":3600}"#),
                )));
            }
            match streams.fetch_add(1, Relaxed) {
                0 => boxed(
                    http::Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(http_body_util::Full::new(Bytes::from_static(
                            b"id: a\x01b\ndata: {}\n\ndata: cut",
                        )))
                        .unwrap(),
                ),
                1 => boxed(
                    http::Response::builder()
                        .status(401)
                        .body(http_body_util::Full::new(Bytes::new()))
                        .unwrap(),
                ),
                _ => boxed(response(SseBody::new(futures_util::stream::iter([
                    Event::message("{}"),
                ])))),
            }
        }
    })
    .await;
    let provider = SseProvider::<T>::from_json(
        &json!({"name": "p", "provider_type": "sse", "url": format!("http://{addr}/stream"),
            "retry_timeout": 100,
            "auth": {"auth_type": "oauth2", "token_url": format!("http://{addr}/token"),
                "client_id": "c", "client_secret": "s"}})
        .to_string(),
    )
    .unwrap();
    let mut items = provider
        .connect(&serde_json::Map::new())
        .await
        .unwrap()
        .stream();
    let mut events = 0;
    while events < 2 {
        match within(items.next()).await {
            Some(Ok(Item::Event(_))) => events += 1,
            Some(Ok(_)) => {}
            other => panic!("after {events} events: {other:?}"),
        }
    }
    assert_eq!(streams.load(Relaxed), 3);
}

runtimes!(the_reopen_after_a_401_sends_the_streams_last_event_id);
/// The reopen after a 401 resumes from the stream's last event ID, as the session's own
/// reconnects do: set by a block without data and by events of a type the provider does not
/// deliver, not only by the events it delivered.
async fn the_reopen_after_a_401_sends_the_streams_last_event_id<T: HttpIo>() {
    let ids: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let logged = ids.clone();
    let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
        let logged = logged.clone();
        async move {
            if req.uri().path() == "/token" {
                return reply(200, br#"{"access_token":"t","token_type":"bearer"}"#);
            }
            let id = req
                .headers()
                .get("last-event-id")
                .map(|v| v.to_str().unwrap().to_owned());
            let connection = {
                let mut logged = logged.lock().unwrap();
                logged.push(id);
                logged.len()
            };
            match connection {
                // A delivered event, one of a type not delivered, a block without data.
                1 => reply(
                    200,
                    b"event: price_update\nid: 1\ndata: {\"n\":1}\n\n\
                      event: heartbeat\nid: 2\ndata: {}\n\n\
                      id: 3\n\ndata: cut",
                ),
                // The token is revoked: the reconnect is refused.
                2 => reply(401, b""),
                _ => reply(200, b"event: price_update\nid: 9\ndata: {\"n\":9}\n\n"),
            }
        }
    })
    .await;
    let mut provider = with_url::<T>(MARKET, &format!("http://{addr}/stream"));
    provider.retry_timeout = 50;
    provider.auth = Some(Auth::OAuth2 {
        token_url: format!("http://{addr}/token"),
        client_id: "c".into(),
        client_secret: "s".into(),
        scope: None,
    });
    let mut items = within(provider.connect(&serde_json::Map::new()))
        .await
        .unwrap()
        .stream();
    let mut delivered = Vec::new();
    while delivered.len() < 2 {
        match within(items.next()).await {
            Some(Ok(Item::Event(e))) => delivered.push(e.id().unwrap_or("").to_owned()),
            Some(Ok(_)) => {}
            other => panic!("after {delivered:?}: {other:?}"),
        }
    }
    drop(items);
    assert_eq!(delivered, ["1", "9"]);
    let ids = ids.lock().unwrap().clone();
    assert_eq!(ids[0], None);
    assert_eq!(ids[1].as_deref(), Some("3"), "the session's own reconnect");
    assert_eq!(ids[2].as_deref(), Some("3"), "the reopen after the 401");
}

runtimes!(a_token_endpoint_that_takes_only_http_basic_is_asked_again_with_it);
/// A token endpoint that takes only HTTP Basic client authentication (RFC 6749 §2.3.1 says
/// every one must) answers the form-body credentials with 401: the token is asked for once
/// more with Basic, without the secret in the body, and the stream opens with it.
async fn a_token_endpoint_that_takes_only_http_basic_is_asked_again_with_it<T: HttpIo>() {
    let log: Log = Arc::default();
    let logged = log.clone();
    let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
        let logged = logged.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            let authorization = parts.headers.get("authorization").cloned();
            logged.lock().unwrap().push(Seen {
                method: parts.method.to_string(),
                uri: parts.uri.to_string(),
                headers: parts.headers,
                body,
            });
            match (parts.uri.path(), authorization) {
                // base64("c%3Aid:s%20t") = "YyUzQWlkOnMlMjB0"
                ("/token", Some(basic)) if basic == "Basic YyUzQWlkOnMlMjB0" => {
                    reply(200, br#"{"access_token":"tok","token_type":"bearer"}"#)
                }
                ("/token", _) => reply(401, br#"{"error":"invalid_client"}"#),
                (_, Some(bearer)) if bearer == "Bearer tok" => {
                    reply(200, b"event: notification\ndata: {}\n\n")
                }
                _ => reply(401, b""),
            }
        }
    })
    .await;
    let mut provider = with_url::<T>(NOTIFY, &format!("http://{addr}/events"));
    provider.reconnect = false;
    provider.auth = Some(Auth::OAuth2 {
        token_url: format!("http://{addr}/token"),
        client_id: "c:id".into(),
        client_secret: "s t".into(),
        scope: Some("read".into()),
    });
    let mut events = within(provider.connect(&serde_json::Map::new()))
        .await
        .unwrap()
        .events();
    assert_eq!(within(events.next()).await.unwrap().unwrap().data(), "{}");
    let seen = log.lock().unwrap().clone();
    let tokens: Vec<_> = seen.iter().filter(|s| s.uri.ends_with("/token")).collect();
    assert_eq!(tokens.len(), 2, "{seen:?}");
    assert_eq!(
        tokens[0].body,
        "grant_type=client_credentials&client_id=c%3Aid&client_secret=s%20t&scope=read"
    );
    assert!(tokens[0].headers.get("authorization").is_none());
    assert_eq!(tokens[1].body, "grant_type=client_credentials&scope=read");
    assert_eq!(tokens[1].method, "POST");
}

runtimes!(an_api_key_goes_where_its_location_says);
/// UTCP 1.x's `location` of an API key: a query parameter (percent-encoded, after the
/// inputs, and left out of `Debug` output) or a cookie, and a header by default; never two
/// of them.
async fn an_api_key_goes_where_its_location_says<T: HttpIo>() {
    for (location, query, cookie, header) in [
        (None, "symbol=AAPL", None, Some("k 1&2")),
        (Some("header"), "symbol=AAPL", None, Some("k 1&2")),
        (Some("query"), "symbol=AAPL&api_key=k%201%262", None, None),
        (Some("cookie"), "symbol=AAPL", Some("api_key=k 1&2"), None),
    ] {
        let log: Log = Arc::default();
        let base = server("price_update", log.clone()).await;
        let mut auth = json!({"auth_type": "api_key", "api_key": "k 1&2", "var_name": "api_key"});
        if let Some(location) = location {
            auth["location"] = json!(location);
        }
        let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
        value["url"] = json!(format!("{base}/stream"));
        value["reconnect"] = json!(false);
        value["auth"] = auth;
        let provider = SseProvider::<T>::from_json(&value.to_string()).unwrap();
        assert!(
            !format!("{provider:?}").contains("k 1"),
            "{location:?}: {provider:?}"
        );
        let mut inputs = serde_json::Map::new();
        inputs.insert("symbol".into(), json!("AAPL"));
        let mut events = within(provider.connect(&inputs)).await.unwrap().events();
        within(events.next()).await.unwrap().unwrap();
        let seen = log.lock().unwrap()[0].clone();
        let uri: http::Uri = seen.uri.parse().unwrap();
        assert_eq!(uri.query(), Some(query), "{location:?}");
        let text = |name: &str| seen.headers.get(name).map(|v| v.to_str().unwrap());
        assert_eq!(text("cookie"), cookie, "{location:?}");
        assert_eq!(text("api_key"), header, "{location:?}");
    }
}

/// A provider with its API key in the query (`location: query`), opening `url`.
fn query_key_provider<T>(url: &str) -> SseProvider<T> {
    let mut value: serde_json::Value = serde_json::from_str(MARKET).unwrap();
    value["url"] = json!(url);
    value["reconnect"] = json!(false);
    value["auth"] = json!({"auth_type": "api_key", "api_key": "SECRET-KEY-42",
        "var_name": "api_key", "location": "query"});
    SseProvider::<T>::from_json(&value.to_string()).unwrap()
}

runtimes!(a_query_key_is_not_in_debug_output);
/// A key in the query is left out of the `Debug` output of the source and its
/// `EventSource` (their request spec and session printed the whole URL).
async fn a_query_key_is_not_in_debug_output<T: HttpIo>() {
    let provider = query_key_provider::<T>("http://127.0.0.1:1/stream");
    let source = provider.connect(&serde_json::Map::new()).await.unwrap();
    let shown = format!("{source:?}");
    assert!(!shown.contains("SECRET-KEY-42"), "{shown}");
    assert!(shown.contains("127.0.0.1:1/stream"), "{shown}");
    let shown = format!("{:?}", source.into_spec());
    assert!(!shown.contains("SECRET-KEY-42"), "{shown}");
}

runtimes!(a_query_key_is_not_in_the_redirect_limit_error);
/// Nor is it in the error of a redirect loop, which names the URL the stream was opened
/// with.
async fn a_query_key_is_not_in_the_redirect_limit_error<T: HttpIo>() {
    let addr = spawn(|_req: http::Request<hyper::body::Incoming>| async move {
        let mut resp = http::Response::new(http_body_util::Full::new(Bytes::new()));
        *resp.status_mut() = http::StatusCode::TEMPORARY_REDIRECT;
        resp.headers_mut()
            .insert("location", http::HeaderValue::from_static("/stream"));
        boxed(resp)
    })
    .await;
    let provider = query_key_provider::<T>(&format!("http://{addr}/stream"));
    let mut items = provider
        .connect(&serde_json::Map::new())
        .await
        .unwrap()
        .stream();
    let err = loop {
        match within(items.next()).await {
            Some(Ok(_)) => {}
            Some(Err(e)) => break e,
            None => panic!("ended without an error"),
        }
    };
    assert!(err.to_string().contains("redirects from"), "{err}");
    assert!(!err.to_string().contains("SECRET-KEY-42"), "{err}");
    assert!(!format!("{err:?}").contains("SECRET-KEY-42"), "{err:?}");
}

runtimes!(the_first_token_error_is_reported_when_the_basic_retry_fails_too);
/// A 400 about something Basic does not change (`invalid_scope`) is the error reported,
/// not the answer to the Basic retry.
async fn the_first_token_error_is_reported_when_the_basic_retry_fails_too<T: HttpIo>() {
    let tokens: Arc<Mutex<Vec<bool>>> = Arc::default();
    let logged = tokens.clone();
    let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
        let logged = logged.clone();
        async move {
            let basic = req.headers().contains_key("authorization");
            logged.lock().unwrap().push(basic);
            if basic {
                reply(401, br#"{"error":"invalid_client"}"#)
            } else {
                reply(400, br#"{"error":"invalid_scope"}"#)
            }
        }
    })
    .await;
    let mut provider = with_url::<T>(MARKET, &format!("http://{addr}/stream"));
    provider.auth = Some(Auth::OAuth2 {
        token_url: format!("http://{addr}/token"),
        client_id: "c".into(),
        client_secret: "s".into(),
        scope: Some("no-such-scope".into()),
    });
    let err = within(provider.connect(&serde_json::Map::new()))
        .await
        .unwrap_err();
    assert_eq!(*tokens.lock().unwrap(), [false, true]);
    assert_eq!(err.status(), Some(400), "{err:?}");
}

/// A response of `status` with `bytes` (typed `text/event-stream`, which the token
/// endpoints of these tests do not mind).
fn reply(status: u16, bytes: &[u8]) -> common::Resp {
    boxed(
        http::Response::builder()
            .status(status)
            .header("content-type", "text/event-stream")
            .body(http_body_util::Full::new(Bytes::copy_from_slice(bytes)))
            .unwrap(),
    )
}

/// A manual as the official library (`utcp` 1.2.0) writes it: `UtcpManualSerializer().to_dict`
/// of two tools, abridged only in the schema of the second (every unset field `null`, a
/// call template without a name of its own but the random one it makes up).
const OFFICIAL_MANUAL: &str = r#"{"utcp_version": "1.2.0", "manual_version": "1.0.0", "tools": [
 {"name": "ticker", "description": "", "inputs": {"$schema": null, "$id": null, "title": null,
  "description": null, "type": "object", "properties": {"symbol": {"$schema": null, "$id": null,
  "title": null, "description": null, "type": "string", "properties": null, "items": null,
  "required": null, "enum": null, "const": null, "default": null, "examples": null, "format": null,
  "additionalProperties": null, "pattern": null, "minimum": null, "maximum": null, "minLength": null,
  "maxLength": null}}, "items": null, "required": ["symbol"], "enum": null, "const": null,
  "default": null, "examples": null, "format": null, "additionalProperties": null, "pattern": null,
  "minimum": null, "maximum": null, "minLength": null, "maxLength": null},
  "outputs": {"type": "object", "properties": {"n": {"type": "integer", "const": null, "items": null}},
  "required": null, "additionalProperties": null, "enum": null, "minimum": null, "maximum": null},
  "tags": [], "average_response_size": null,
  "tool_call_template": {"name": "50aa07c563114d3fa125c25fddf6b4c9", "call_template_type": "sse",
  "auth": null, "allowed_communication_protocols": null, "url": "http://127.0.0.1:1/s",
  "event_type": null, "reconnect": true, "retry_timeout": 30000, "headers": null,
  "body_field": null, "header_fields": null}},
 {"name": "fetch", "description": null, "inputs": {}, "outputs": {}, "tags": null,
  "average_response_size": null, "tool_call_template": {"call_template_type": "http",
  "url": "http://127.0.0.1:1/f", "http_method": "GET"}}]}"#;

#[test]
fn the_official_serializers_manual_is_read_unchanged() {
    let manual = ssekit_utcp::Manual::from_json(OFFICIAL_MANUAL).unwrap();
    assert_eq!(manual.version.as_deref(), Some("1.2.0"));
    let ticker = manual.tool("ticker").unwrap();
    // `"const": null` is no `const`, `"items": null` no `items`: any string passes.
    assert!(ticker.inputs.validate(&json!({"symbol": "AAPL"})).is_ok());
    assert_eq!(
        ticker.inputs.validate(&json!({})).unwrap_err().path,
        "/symbol"
    );
    assert!(ticker.outputs.validate(&json!({"n": 3})).is_ok());
    assert!(ticker.outputs.validate(&json!({"n": "3"})).is_err());
    let provider = ticker.sse_provider_for::<()>().unwrap().unwrap();
    assert_eq!(
        (provider.name.as_str(), provider.url.as_str()),
        ("50aa07c563114d3fa125c25fddf6b4c9", "http://127.0.0.1:1/s")
    );
    assert!(provider.headers.is_empty() && provider.header_fields.is_empty());
    assert!(provider.auth.is_none() && provider.reconnect);
    // The http tool is kept, and reported: this crate will not call it.
    assert!(manual
        .tool("fetch")
        .unwrap()
        .sse_provider_for::<()>()
        .is_none());
    assert_eq!(manual.warnings.len(), 1);
    assert_eq!(
        manual.warnings[0].to_string(),
        r#"tool "fetch" at /tools/1/tool_call_template: call template type "http" is not "sse" (Tool::sse_provider is None)"#
    );
}

#[test]
fn null_is_absent_in_every_optional_provider_field_in_both_shapes() {
    let nulls = json!({"name": null, "event_type": null, "reconnect": null, "retry_timeout": null,
        "auth": null, "headers": null, "body_field": null, "header_fields": null,
        "url": "http://127.0.0.1:1/e"});
    for kind in ["provider_type", "call_template_type"] {
        let mut object = nulls.clone();
        object[kind] = json!("sse");
        let p = SseProvider::<()>::from_json(&object.to_string()).unwrap();
        assert_eq!(
            (
                p.name.as_str(),
                p.provider_type.as_str(),
                p.reconnect,
                p.retry_timeout
            ),
            ("", "sse", true, 30_000)
        );
        let from_serde: SseProvider<()> = serde_json::from_value(object.clone()).unwrap();
        assert_eq!(from_serde, p);
        // A tool's provider reads the same object through the same code.
        let tool =
            ssekit_utcp::Tool::from_value(&json!({"name": "t", "tool_call_template": object}))
                .unwrap();
        assert_eq!(tool.sse_provider_for::<()>().unwrap().unwrap(), p);
    }
    let key: Auth = serde_json::from_value(
        json!({"auth_type": "api_key", "api_key": "k", "var_name": null, "location": null}),
    )
    .unwrap();
    assert!(matches!(key, Auth::ApiKey { ref var_name, .. } if var_name == "X-Api-Key"));
    let oauth: Auth = serde_json::from_value(json!({"auth_type": "oauth2", "token_url": "t",
        "client_id": "c", "client_secret": "s", "scope": null}))
    .unwrap();
    assert!(matches!(oauth, Auth::OAuth2 { scope: None, .. }));
    let err = |v: serde_json::Value| {
        SseProvider::<()>::from_json(&v.to_string())
            .unwrap_err()
            .to_string()
    };
    assert!(err(json!({"url": "u"}))
        .contains("missing field provider_type (UTCP 0.x) or call_template_type (1.x)"));
    assert!(
        err(json!({"url": "u", "provider_type": "sse", "call_template_type": "http"}))
            .contains(r#"provider_type "sse" and call_template_type "http" disagree"#)
    );
    assert!(err(json!({"url": "u", "call_template_type": "mcp"}))
        .contains(r#"the provider type is "mcp""#));
}

runtimes!(requests_are_encoded_as_the_official_client_encodes_them);
/// What `utcp-http` 1.1.15 (aiohttp) sends for the same call, case by case: the body by the
/// template's Content-Type, header fields as Python's `str()`, `{name}` path parameters.
async fn requests_are_encoded_as_the_official_client_encodes_them<T: HttpIo>() {
    let log = Log::default();
    let base = server("message", log.clone()).await;
    let call = |template: serde_json::Value, inputs: serde_json::Value| {
        let log = log.clone();
        let base = base.clone();
        async move {
            let mut template = template;
            template["call_template_type"] = json!("sse");
            template["url"] = json!(format!(
                "{base}{}",
                template["url"].as_str().unwrap_or("/e")
            ));
            let provider = SseProvider::<T>::from_json(&template.to_string()).unwrap();
            let source = provider.connect(inputs.as_object().unwrap()).await.unwrap();
            let first = within(source.events().next()).await.unwrap().unwrap();
            assert_eq!(first.event_type(), "other");

            log.lock().unwrap().last().unwrap().clone()
        }
    };
    // A JSON Content-Type in the template: the body is JSON, the header as declared.
    let seen = call(
        json!({"body_field": "b", "headers": {"Content-Type": "application/json; charset=utf-8"}}),
        json!({"b": {"q": [1, 2.5]}}),
    )
    .await;
    assert_eq!(
        (seen.method.as_str(), seen.body.as_ref()),
        ("POST", br#"{"q":[1,2.5]}"#.as_slice())
    );
    assert_eq!(
        seen.headers["content-type"],
        "application/json; charset=utf-8"
    );
    // A string body and no Content-Type: the text as it is, as text/plain.
    let seen = call(json!({"body_field": "b"}), json!({"b": "héllo"})).await;
    assert_eq!(seen.body.as_ref(), "héllo".as_bytes());
    assert_eq!(seen.headers["content-type"], "text/plain; charset=utf-8");
    // A Content-Type in another case is seen (the official client looks for "Content-Type"
    // only); a body the official client refuses (an array) is sent as JSON.
    let seen = call(
        json!({"body_field": "b", "headers": {"content-type": "application/json"}}),
        json!({"b": {"k": "v"}}),
    )
    .await;
    assert_eq!(seen.body.as_ref(), br#"{"k":"v"}"#);
    let seen = call(json!({"body_field": "b"}), json!({"b": [1, "two"]})).await;
    assert_eq!(seen.body.as_ref(), br#"[1,"two"]"#);
    assert_eq!(seen.headers["content-type"], "application/json");
    // A null body is no body: a GET, as the official client makes it.
    let seen = call(json!({"body_field": "b"}), json!({"b": null})).await;
    assert_eq!((seen.method.as_str(), seen.body.len()), ("GET", 0));
    assert!(seen.headers.get("content-type").is_none());
    // Header fields are Python's str() of the input.
    let seen = call(
        json!({"header_fields": ["yes", "no", "none", "big", "n", "obj", "s"]}),
        json!({"yes": true, "no": false, "none": null, "big": 1e20, "n": 7,
               "obj": {"a": [1, null], "b": "it's"}, "s": "plain"}),
    )
    .await;
    let h = &seen.headers;
    for (name, value) in [
        ("yes", "True"),
        ("no", "False"),
        ("none", "None"),
        ("big", "1e+20"),
        ("n", "7"),
        ("obj", r#"{'a': [1, None], 'b': "it's"}"#),
        ("s", "plain"),
    ] {
        assert_eq!(h[name], value, "{name}");
    }
    assert_eq!(seen.uri, "/e", "header fields are no query parameters");
    // `{name}` path parameters; then the query: arrays repeat their key, null is left out,
    // numbers as Python prints them, booleans (which the official client refuses) as JSON.
    let seen = call(
        json!({"url": "/items/{id}/events"}),
        json!({"id": "a/b c", "tags": ["x", "y"], "gone": null, "big": 1e20, "flag": true}),
    )
    .await;
    assert_eq!(
        seen.uri,
        "/items/a%2Fb%20c/events?big=1e%2B20&flag=true&tags=x&tags=y"
    );
}

runtimes!(a_tool_of_the_official_serializers_manual_is_called);
/// The official serializer's manual, its template nameless and full of nulls, called
/// through the tool's own template.
async fn a_tool_of_the_official_serializers_manual_is_called<T: HttpIo>() {
    let log = Log::default();
    let base = server("message", log.clone()).await;
    let text = OFFICIAL_MANUAL
        .replace("\"name\": \"50aa07c563114d3fa125c25fddf6b4c9\", ", "")
        .replace("http://127.0.0.1:1/s", &format!("{base}/s"));
    let manual = ssekit_utcp::Manual::from_json(&text).unwrap();
    let tool = manual.tool("ticker").unwrap();
    let provider = tool.sse_provider_for::<T>().unwrap().unwrap();
    assert_eq!(provider.name, "");
    let inputs = json!({"symbol": "AAPL"});
    let call = provider
        .call(tool, inputs.as_object().unwrap())
        .await
        .unwrap();
    let outputs: Vec<_> = within(call.outputs().collect()).await;
    // Every event passes (no event_type); "skip me" is no JSON, reported and skipped.
    let values: Vec<_> = outputs
        .iter()
        .filter_map(|o| o.as_ref().ok())
        .map(|o| o.value.clone())
        .collect();
    assert_eq!(values, [json!({"n": 1})]);
    assert_eq!(outputs.len(), 3);
    assert_eq!(log.lock().unwrap()[0].uri, "/s?symbol=AAPL");
    // Outputs that take a string take data that is not JSON as its text, as the official
    // client delivers it.
    let any = ssekit_utcp::Tool::new("any", "", json!({}), json!({"type": ["object", "string"]}))
        .unwrap();
    let call = provider
        .call(&any, inputs.as_object().unwrap())
        .await
        .unwrap();
    let outputs: Vec<_> = within(call.outputs().collect()).await;
    let values: Vec<_> = outputs.into_iter().map(|o| o.unwrap().value).collect();
    assert_eq!(
        values,
        [json!("skip me"), json!({"n": 2}), json!("skip me too")]
    );
}

#[test]
fn tools_whose_call_template_is_not_read_are_reported_with_why() {
    let manual = ssekit_utcp::Manual::from_value(&json!({"tools": [
        {"name": "ok", "tool_call_template": {"call_template_type": "sse", "url": "http://127.0.0.1:1/e"}},
        {"name": "bare"},
        {"name": "untyped", "tool_call_template": {"url": "http://127.0.0.1:1/e"}},
        {"name": "broken", "tool_provider": {"provider_type": "sse", "url": 5}},
        {"name": "mcp", "provider": {"provider_type": "mcp"}}
    ]}))
    .unwrap();
    assert_eq!(manual.tools.len(), 5, "every tool is kept");
    let seen: Vec<_> = manual
        .warnings
        .iter()
        .map(|w| (w.tool.as_str(), w.path.as_str(), w.kind.clone()))
        .collect();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(
        (seen[0].0, seen[0].1, &seen[0].2),
        (
            "untyped",
            "/tools/2/tool_call_template",
            &WarningKind::NoType
        )
    );
    assert!(
        matches!(&seen[1], ("broken", "/tools/3/tool_provider", WarningKind::Invalid { problem }) if problem.contains("invalid type")),
        "{:?}",
        seen[1]
    );
    assert_eq!(
        (seen[2].0, seen[2].1, &seen[2].2),
        (
            "mcp",
            "/tools/4/provider",
            &WarningKind::Unsupported {
                call_template_type: "mcp".into()
            }
        )
    );
}

runtimes!(a_path_parameter_without_its_input_is_an_error_before_any_request);
async fn a_path_parameter_without_its_input_is_an_error_before_any_request<T: HttpIo>() {
    let provider = SseProvider::<T>::from_json(
        r#"{"call_template_type": "sse", "url": "http://127.0.0.1:1/items/{item_id}"}"#,
    )
    .unwrap();
    let err = provider.connect(&serde_json::Map::new()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid request: the URL's path parameter {item_id} has no input"
    );
    // A header field whose text would end the header line is refused too (the official
    // client's aiohttp refuses it as well), not sent.
    let provider = SseProvider::<T>::from_json(
        r#"{"call_template_type": "sse", "url": "http://127.0.0.1:1/e", "header_fields": ["x-h"]}"#,
    )
    .unwrap();
    let inputs = json!({"x-h": "a\r\nInjected: yes"});
    assert!(provider.connect(inputs.as_object().unwrap()).await.is_err());
}

runtimes!(a_call_gives_up_after_five_reconnects_in_a_row_without_an_event);
/// The official client's bound: a call whose server keeps failing ends after 5 reconnects.
async fn a_call_gives_up_after_five_reconnects_in_a_row_without_an_event<T: HttpIo>() {
    let log = Log::default();
    let seen = log.clone();
    let addr = spawn(move |req: http::Request<hyper::body::Incoming>| {
        let log = seen.clone();
        async move {
            log.lock().unwrap().push(Seen {
                uri: req.uri().to_string(),
                ..Seen::default()
            });
            reply(503, b"busy")
        }
    })
    .await;
    let provider = SseProvider::<T>::from_json(&format!(
        r#"{{"call_template_type": "sse", "url": "http://{addr}/e", "retry_timeout": 0}}"#
    ))
    .unwrap();
    // Waits of 100 ms (the floor), 200, 400, 800 and 1 600 ms, with up to 20 % jitter.
    let source = provider.connect(&serde_json::Map::new()).await.unwrap();
    let events: Vec<_> = within(source.events().collect::<Vec<_>>()).await;
    let [Err(err)] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert!(
        matches!(err, ssekit_http::Error::Exhausted { attempts: 5, .. }),
        "{err}"
    );
    assert_eq!(
        log.lock().unwrap().len(),
        6,
        "the first request and 5 reconnects"
    );
}

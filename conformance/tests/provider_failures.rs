//! A provider's failure after a `200` and a stream cut before its terminal event, as every
//! client reports them through `EventSource::validated`: the failure as
//! `Error::Provider` with the provider's message (never dropped, never a success), the cut as
//! `Error::Sequence(Unterminated)`. Real sockets on 127.0.0.1, every server × client pairing.

mod kit;

use futures_util::StreamExt;
use kit::{each_pair, fast, serve, tokio_rt, within, Reply, Side};
use ssekit::client::ReconnectConfig;
use ssekit::profile::{agent, responses};
use ssekit::sequence::{Profile, SequenceError};
use ssekit::Event;
use ssekit_http::Error;

fn named(name: &str, data: &str) -> Event {
    Event::builder()
        .event(name.to_owned())
        .unwrap()
        .data(data.to_owned())
        .build()
}

/// The stream from `url` (served once: no reconnect), checked by `profile`: the events'
/// types, then how it ended (`None`: with its terminal event).
fn validated<P: Profile + Send + 'static>(
    side: Side,
    url: String,
    profile: P,
) -> (Vec<String>, Option<Error>) {
    let once = fast().reconnect(false);
    let run = |events: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<Event, Error>> + Send>,
    >| async move {
        let mut events = events;
        let mut seen = Vec::new();
        while let Some(item) = events.next().await {
            match item {
                Ok(event) => seen.push(event.event_type().to_owned()),
                Err(e) => return (seen, Some(e)),
            }
        }
        (seen, None)
    };
    let limit = std::time::Duration::from_secs(30);
    match side {
        Side::Smol => {
            let source = ssekit_smol::client::EventSource::post(&url, "{}").unwrap();
            let events = source.reconnect(once).validated(profile);
            smol::block_on(within(limit, run(events)))
        }
        Side::Hyper => tokio_rt().block_on(async move {
            let source = ssekit_hyper::client::EventSource::post(&url, "{}").unwrap();
            let events = source.reconnect(once).validated(profile);
            within(limit, run(events)).await
        }),
    }
}

const CREATED: &str = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}"#;
const IN_PROGRESS: &str = r#"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","status":"in_progress"}}"#;
const DELTA: &str = r#"{"type":"response.output_text.delta","sequence_number":2,"item_id":"m","output_index":0,"delta":"Hi"}"#;

#[test]
fn an_error_event_after_200_is_a_typed_provider_failure() {
    // OpenAI's `error` event, as its API reference shows it, after two events of a `200`.
    let error = r#"{"type":"error","sequence_number":3,"code":"server_error","message":"The server had an error while processing your request.","param":null}"#;
    each_pair(|server, client| {
        let events = [
            named("response.created", CREATED),
            named("response.in_progress", IN_PROGRESS),
            named("response.output_text.delta", DELTA),
            named("error", error),
        ];
        let addr = serve(server, move |_| Reply::events(&events));
        let (seen, end) = validated(
            client,
            format!("http://{addr}/v1/responses"),
            responses::Stream::new(),
        );
        assert_eq!(
            seen,
            [
                "response.created",
                "response.in_progress",
                "response.output_text.delta",
                "error"
            ]
        );
        match end {
            Some(Error::Provider(failure)) => {
                assert_eq!(failure.code.as_deref(), Some("server_error"));
                assert_eq!(
                    failure.message,
                    "The server had an error while processing your request."
                );
            }
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn a_stream_cut_before_its_terminal_event_is_a_cut_not_a_success() {
    each_pair(|server, client| {
        let events = [
            named("response.created", CREATED),
            named("response.in_progress", IN_PROGRESS),
            named("response.output_text.delta", DELTA),
        ];
        let addr = serve(server, move |_| Reply::events(&events));
        let (seen, end) = validated(
            client,
            format!("http://{addr}/v1/responses"),
            responses::Stream::new(),
        );
        assert_eq!(
            seen,
            [
                "response.created",
                "response.in_progress",
                "response.output_text.delta"
            ]
        );
        assert!(
            matches!(
                end,
                Some(Error::Sequence(SequenceError::Unterminated {
                    events: 3,
                    ..
                }))
            ),
            "{end:?}"
        );
    });
}

#[test]
fn an_agent_run_that_fails_and_one_that_completes() {
    let start = r#"{"event":"start","run_id":"r1","session_id":"s1"}"#;
    each_pair(|server, client| {
        let failed = [
            Event::message(start),
            Event::message(r#"{"event":"error","message":"the model crashed"}"#),
        ];
        let addr = serve(server, move |_| Reply::events(&failed));
        let (seen, end) = validated(client, format!("http://{addr}/run"), agent::Run::new());
        assert_eq!(seen.len(), 2);
        assert!(
            matches!(&end, Some(Error::Provider(f)) if f.message == "the model crashed"),
            "{end:?}"
        );
        let done = [
            Event::message(start),
            Event::message(r#"{"event":"complete","run_id":"r1","content":"","usage":{}}"#),
        ];
        let addr = serve(server, move |_| Reply::events(&done));
        let (seen, end) = validated(client, format!("http://{addr}/run"), agent::Run::new());
        assert_eq!((seen.len(), end.is_none()), (2, true), "{end:?}");
    });
}

/// The reconnect policy sees the failure as the end it is: no retry follows it.
#[test]
fn a_failure_is_not_retried() {
    let error = r#"{"type":"error","code":"x","message":"no"}"#;
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    let events = [named("error", error)];
    let addr = serve(Side::Hyper, move |_| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Reply::events(&events)
    });
    let source = ssekit_hyper::client::EventSource::post(&format!("http://{addr}/"), "{}").unwrap();
    let source = source.reconnect(ReconnectConfig::default());
    let seen: Vec<_> = tokio_rt().block_on(source.validated(responses::Stream::new()).collect());
    assert!(matches!(seen.last(), Some(Err(Error::Provider(_)))));
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// `events` served after a `200`, through `validated(profile)` on every pairing: the
/// events, then `Error::Provider` whose message is `message`.
fn fails_with<P: Profile + Send + 'static>(
    name: &str,
    events: &[Event],
    profile: impl Fn() -> P,
    message: &str,
) {
    each_pair(|server, client| {
        let served = events.to_vec();
        let addr = serve(server, move |_| Reply::events(&served));
        let (seen, end) = validated(client, format!("http://{addr}/"), profile());
        assert_eq!(seen.len(), events.len(), "{name}: {end:?}");
        match end {
            Some(Error::Provider(failure)) => assert_eq!(failure.message, message, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    });
}

/// Each profile's failure event, after a `200`, is a typed error carrying the provider's
/// message on every client: none dropped, none read as a success.
#[test]
fn every_profile_reports_its_providers_failure() {
    use ssekit::profile::{a2a, anthropic, chat, ors};
    // https://docs.anthropic.com/en/docs/build-with-claude/streaming (the error event)
    let start = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}"#;
    let error =
        r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
    fails_with(
        "anthropic",
        &[
            named("message_start", start),
            named("ping", r#"{"type": "ping"}"#),
            named("error", error),
        ],
        anthropic::Messages::new,
        "Overloaded",
    );
    fails_with(
        "chat",
        &[
            Event::message(r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#),
            Event::message(
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            ),
        ],
        chat::Completions::new,
        "Rate limit reached",
    );
    fails_with(
        "a2a",
        &[Event::message(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}"#,
        )],
        a2a::Stream::new,
        "Task not found",
    );
    fails_with(
        "ors",
        &[named("task_id", "t1"), named("error", "Session not found")],
        ors::ToolCall::new,
        "Session not found",
    );
}

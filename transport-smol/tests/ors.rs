//! ORS `POST /{env}/call` on smol with task-id resumption, over 127.0.0.1.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use futures_lite::StreamExt;
use http_body_util::BodyExt;
use hyper::service::service_fn;
use ssekit::chunk::Reassembler;
use ssekit::client::ReconnectConfig;
use ssekit::profile::ors::{ToolOutput, ToolResult};
use ssekit::server::TaskConfig;
use ssekit::Event;
use ssekit_smol::client::EventSource;
use ssekit_smol::ors::Calls;
use ssekit_smol::server::{response, serve};

fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        smol::Timer::after(Duration::from_secs(10)).await;
        panic!("test timed out")
    }))
}

fn big_result() -> ToolResult {
    let text: String = (0..12_000)
        .map(|i| if i % 7 == 0 { 'é' } else { 'x' })
        .collect();
    ToolResult::success(ToolOutput::text(text).reward(1.0).finished(true))
}

/// `POST /{env}/call` with `{"name", "input", "task_id"?}`: `slow` answers `big_result()`
/// after 300 ms, `broken` cannot run.
async fn start() -> SocketAddr {
    let calls = Calls::with_options(TaskConfig::default(), Duration::from_secs(5), 4096);
    let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
        let calls = calls.clone();
        async move {
            assert!(req.uri().path().ends_with("/call"));
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let call: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let task_id = call["task_id"].as_str();
            let name = call["name"].as_str().unwrap_or_default().to_owned();
            let body = calls.call(task_id, async move {
                match name.as_str() {
                    "slow" => {
                        smol::Timer::after(Duration::from_millis(300)).await;
                        Ok(big_result())
                    }
                    _ => Err(format!("'{name}' is not a valid tool")),
                }
            });
            Ok::<_, Infallible>(response(body))
        }
    });
    smol::spawn(serve(listener, service)).detach();
    addr
}

async fn events(addr: SocketAddr, body: String, take: usize) -> Vec<Event> {
    EventSource::post(&format!("http://{addr}/gsm8k/call"), body)
        .unwrap()
        .reconnect(ReconnectConfig::default().reconnect(false))
        .events()
        .take(take)
        .map(Result::unwrap)
        .collect()
        .await
}

#[test]
fn a_dropped_call_resumes_by_task_id_and_the_chunked_result_is_whole() {
    run(async {
        let addr = start().await;
        // First connection: read the task id, then drop it while the tool still runs.
        let first = events(addr, r#"{"name":"slow","input":{}}"#.into(), 1).await;
        assert_eq!(first[0].event_type(), "task_id");
        let task_id = first[0].data().to_owned();
        let resumed = events(
            addr,
            format!(r#"{{"name":"slow","input":{{}},"task_id":"{task_id}"}}"#),
            usize::MAX,
        )
        .await;
        assert_eq!(resumed[0].event_type(), "task_id");
        assert_eq!(resumed[0].data(), task_id);
        let mut whole = Reassembler::new();
        let mut json = None;
        for ev in &resumed[1..] {
            assert!(ev.data().len() <= 4096);
            json = whole.push(ev).unwrap();
        }
        assert!(resumed.len() >= 5, "a 14 KB result is several chunks");
        assert_eq!(resumed.last().unwrap().event_type(), "end");
        let got: ToolResult = serde_json::from_str(&json.unwrap()).unwrap();
        assert_eq!(got, big_result());
    });
}

#[test]
fn an_unknown_task_id_and_a_tool_that_cannot_run_are_error_events() {
    run(async {
        let addr = start().await;
        let unknown = events(
            addr,
            r#"{"name":"slow","input":{},"task_id":"nope"}"#.into(),
            9,
        )
        .await;
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].event_type(), "error");
        let broken = events(addr, r#"{"name":"broken","input":{}}"#.into(), 9).await;
        assert_eq!(broken[0].event_type(), "task_id");
        assert_eq!(broken[1].event_type(), "error");
        assert_eq!(broken[1].data(), "'broken' is not a valid tool");
        assert_eq!(broken.len(), 2);
    });
}

fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn reassemble(events: &[Event]) -> ToolResult {
    let mut whole = Reassembler::new();
    let mut json = None;
    for ev in events.iter().filter(|ev| ev.event_type() != "task_id") {
        json = whole.push(ev).unwrap();
    }
    serde_json::from_str(&json.expect("no end event")).unwrap()
}

#[test]
fn a_hyper_client_resumes_a_call_on_the_smol_server() {
    let addr = run(start());
    let rt = tokio_rt();
    let url = format!("http://{addr}/gsm8k/call");
    let take = |body: String, n: usize| {
        let url = url.clone();
        rt.block_on(async move {
            let events = ssekit_hyper::client::EventSource::post(&url, body)
                .unwrap()
                .reconnect(ReconnectConfig::default().reconnect(false))
                .events()
                .take(n)
                .map(Result::unwrap)
                .collect::<Vec<_>>();
            tokio::time::timeout(Duration::from_secs(10), events)
                .await
                .unwrap()
        })
    };
    let first = take(r#"{"name":"slow","input":{}}"#.into(), 1);
    let task_id = first[0].data().to_owned();
    let resumed = take(
        format!(r#"{{"name":"slow","input":{{}},"task_id":"{task_id}"}}"#),
        usize::MAX,
    );
    assert_eq!(resumed[0].data(), task_id);
    assert_eq!(reassemble(&resumed), big_result());
}

#[test]
fn a_smol_client_resumes_a_call_on_the_hyper_ors_server() {
    use ssekit_hyper::ors::{gsm8k::Gsm8k, Server, ServerConfig};
    let rt = tokio_rt();
    let config = ServerConfig::default().keep_alive(Duration::from_millis(100));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(ssekit_hyper::server::serve(
        listener,
        Server::with_config(vec![std::sync::Arc::new(Gsm8k)], config),
    ));
    let base = format!("http://{addr}");
    let sid = rt
        .block_on(async {
            let ors = ssekit_hyper::ors::Client::new(&base)?;
            ors.open_session(
                "gsm8k",
                &serde_json::json!({"question": "2+2?", "answer": 4}),
            )
            .await
        })
        .unwrap();
    let take = |body: String, n: usize| {
        let source = EventSource::post(&format!("{base}/gsm8k/call"), body)
            .unwrap()
            .header("x-session-id", &sid)
            .unwrap()
            .reconnect(ReconnectConfig::default().reconnect(false));
        run(source
            .events()
            .take(n)
            .map(Result::unwrap)
            .collect::<Vec<_>>())
    };
    let call = r#""name":"work","input":{"delay_ms":300,"steps":300}"#;
    let first = take(format!("{{{call}}}"), 1);
    assert_eq!(first[0].event_type(), "task_id");
    let task_id = first[0].data().to_owned();
    let resumed = take(format!(r#"{{{call},"task_id":"{task_id}"}}"#), usize::MAX);
    assert_eq!(resumed[0].data(), task_id);
    assert!(resumed.len() > 3, "several chunks");
    let result = reassemble(&resumed);
    let json = serde_json::to_string(&result).unwrap();
    assert!(result.ok && json.contains("Step 300:"), "{json}");
}

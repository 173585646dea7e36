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

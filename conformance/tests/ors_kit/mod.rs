//! What the ORS server tests share: the runtimes they run on ([`TestRuntime`]: one test
//! body, run on tokio and on smol by [`on_both_runtimes!`]), a small `gsm8k` test
//! environment, and helpers. The test code itself (clients, timeouts) runs on tokio; the
//! server under test runs on the runtime named.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use ssekit_http::ors::{
    text_result, tool_error, Environment, Server, ServerConfig, Split, ToolFuture, ToolSpec,
};
use ssekit_http::runtime::Runtime;

/// A runtime an ORS server under test runs on.
pub trait TestRuntime: Runtime + Default {
    /// Serves `server` on a fresh 127.0.0.1 port with this runtime's HTTP server; returns
    /// `http://127.0.0.1:port`. Call it inside a tokio runtime.
    fn serve(server: Server<Self>) -> String;
}

fn listener() -> std::net::TcpListener {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    listener
}

impl TestRuntime for ssekit_hyper::runtime::Tokio {
    fn serve(server: Server<Self>) -> String {
        let listener = tokio::net::TcpListener::from_std(listener()).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(ssekit_hyper::server::serve(listener, server));
        base
    }
}

impl TestRuntime for ssekit_smol::runtime::Smol {
    fn serve(server: Server<Self>) -> String {
        let listener = smol::net::TcpListener::try_from(listener()).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        smol::spawn(ssekit_smol::server::serve(listener, server)).detach();
        base
    }
}

/// Runs each named test body (`async fn name<R: TestRuntime>()`) once per runtime, as the
/// tests `on_tokio::name` and `on_smol::name`.
macro_rules! on_both_runtimes {
    ($($name:ident),* $(,)?) => {
        mod on_tokio {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name::<ssekit_hyper::runtime::Tokio>().await
                }
            )*
        }
        mod on_smol {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name::<ssekit_smol::runtime::Smol>().await
                }
            )*
        }
    };
}

/// Serves `handler` on a fresh 127.0.0.1 port, on the current tokio runtime.
pub async fn spawn<F, Fut>(handler: F) -> std::net::SocketAddr
where
    F: Fn(http::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(ssekit_hyper::server::serve(
        listener,
        hyper::service::service_fn(move |req| {
            let handler = handler.clone();
            async move { Ok::<_, std::convert::Infallible>(handler(req).await) }
        }),
    ));
    addr
}

/// A response with a boxed body.
pub type Resp =
    http::Response<http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, ssekit_http::BoxError>>;

/// Boxes a response's body.
pub fn boxed<B>(resp: http::Response<B>) -> Resp
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<ssekit_http::BoxError>,
{
    use http_body_util::BodyExt;
    resp.map(|b| b.map_err(Into::into).boxed_unsync())
}

/// A server over [`Gsm8k`] with `config`, served on `R`.
pub async fn start<R: TestRuntime>(config: ServerConfig) -> String {
    R::serve(Server::with_config(vec![Arc::new(Gsm8k)], config))
}

/// How long a test may take before it is called hung: far past anything a loaded machine
/// needs, so only a hang fails a test, never a slow run.
pub const HANG: Duration = Duration::from_secs(60);

/// Fails a test that hangs instead of hanging the suite (after [`HANG`]). What a test
/// checks about time is what the code decided, never how fast this run was.
pub async fn within<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(HANG, fut)
        .await
        .unwrap_or_else(|_| panic!("hung: no outcome after {HANG:?}"))
}

/// `(event type, data)` of every event in `wire`.
pub fn events(wire: &str) -> Vec<(String, String)> {
    let mut dec = ssekit::Decoder::new();
    dec.feed_slice(wire.as_bytes()).unwrap();
    let mut out = Vec::new();
    while let Some(frame) = dec.next_frame().unwrap() {
        if let ssekit::Frame::Event(e) = frame {
            out.push((e.event_type().to_owned(), e.data().to_owned()));
        }
    }
    out
}

/// A body's text for at most `limit`, and whether it ended in that time.
pub async fn read_for<B>(body: B, limit: Duration) -> (String, bool)
where
    B: http_body::Body<Data = bytes::Bytes>,
    B::Error: std::fmt::Display,
{
    use http_body_util::BodyExt;
    let mut body = Box::pin(body);
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), false),
            Ok(None) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(Some(Ok(f))) => {
                if let Ok(d) = f.into_data() {
                    out.extend_from_slice(&d);
                }
            }
            Ok(Some(Err(e))) => panic!("body error {e}"),
        }
    }
}

/// The first task of the `test` split of [`Gsm8k`].
pub fn task() -> Value {
    Gsm8k.tasks("test").unwrap()[0].clone()
}

/// The test environment, `gsm8k` (as the official SDK's example is named): three word
/// problems (`train`: one, `test`: two), `submit` scores an answer, and `work` waits
/// `delay_ms` (so pings show) and answers `steps` lines (so the result is chunked).
#[derive(Clone, Copy, Debug, Default)]
pub struct Gsm8k;

/// `(split, question, answer)`.
const TASKS: [(&str, &str, f64); 3] = [
    (
        "train",
        "Natalia sold 48 clips in April and half as many in May. How many in all?",
        72.0,
    ),
    (
        "test",
        "Tom has 3 baskets with 14 apples each and gives away 9. How many apples are left?",
        33.0,
    ),
    (
        "test",
        "A train goes 60 km per hour for 2.5 hours. How many kilometres?",
        150.0,
    ),
];

impl Environment for Gsm8k {
    fn name(&self) -> &str {
        "gsm8k"
    }

    fn splits(&self) -> Vec<Split> {
        ["train", "test"].map(|s| Split::new(s, s)).into()
    }

    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        let tasks: Vec<Value> = TASKS
            .iter()
            .filter(|(s, ..)| *s == split)
            .map(|(_, q, a)| json!({"question": q, "answer": a}))
            .collect();
        (!tasks.is_empty()).then_some(tasks)
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new("submit", "Submit the answer", None),
            ToolSpec::new("work", "Show the work slowly", None),
        ]
    }

    fn prompt(&self, task: &Value) -> String {
        task["question"].as_str().unwrap_or_default().to_owned()
    }

    fn call(&self, task: &Value, tool: &str, input: Value) -> ToolFuture {
        let (task, tool) = (task.clone(), tool.to_owned());
        Box::pin(async move {
            if tool == "work" {
                let delay = input["delay_ms"].as_u64().unwrap_or(0);
                async_io::Timer::after(Duration::from_millis(delay)).await;
                let line = format!(
                    "working on «{}» — ",
                    task["question"].as_str().unwrap_or("")
                );
                let steps = input["steps"].as_u64().unwrap_or(10);
                let text: String = (1..=steps).map(|n| format!("Step {n}: {line}\n")).collect();
                return Ok(text_result(&text, None, false));
            }
            let given = match &input["answer"] {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            let Some(given) = given else {
                return Ok(tool_error(
                    "Tool input validation error: `answer` must be a number",
                ));
            };
            let expected = task["answer"].as_f64().ok_or("the task has no answer")?;
            Ok(if given == expected {
                text_result("Correct!", Some(1.0), true)
            } else {
                text_result("Incorrect.", Some(0.0), true)
            })
        })
    }
}

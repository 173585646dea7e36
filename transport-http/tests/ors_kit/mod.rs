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

/// Fails a test that hangs instead of hanging the suite.
pub async fn within<T>(secs: u64, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .expect("test timed out")
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

/// The test environment, `gsm8k`: grade-school word problems, a `submit` tool that scores
/// an answer, and a `work` tool that is slow (so keep-alive pings show) and answers with a
/// long worked solution (so the result is chunked).
#[derive(Clone, Copy, Debug, Default)]
pub struct Gsm8k;

const PROBLEMS: &[(&str, f64, &str)] = &[
    (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?",
        72.0,
        "In May she sold 48 / 2 = 24 clips; 48 + 24 = 72.",
    ),
    (
        "Tom has 3 baskets with 14 apples each. He gives away 9 apples. How many apples does he have left?",
        33.0,
        "3 × 14 = 42 apples; 42 − 9 = 33.",
    ),
    (
        "A train travels 60 km per hour for 2.5 hours. How many kilometres does it travel?",
        150.0,
        "60 × 2.5 = 150 km.",
    ),
];

/// The most the `work` tool sleeps, and the most text it writes.
const MAX_DELAY: Duration = Duration::from_secs(120);
const MAX_STEPS: u64 = 100_000;

impl Environment for Gsm8k {
    fn name(&self) -> &str {
        "gsm8k"
    }

    fn splits(&self) -> Vec<Split> {
        vec![Split::new("train", "train"), Split::new("test", "test")]
    }

    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        let range = match split {
            "train" => 0..1,
            "test" => 1..PROBLEMS.len(),
            _ => return None,
        };
        Some(
            PROBLEMS
                .get(range)
                .unwrap_or_default()
                .iter()
                .map(|(question, answer, _)| json!({"question": question, "answer": answer}))
                .collect(),
        )
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                "submit",
                "Submit the final numeric answer",
                Some(
                    json!({"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}),
                ),
            ),
            ToolSpec::new(
                "work",
                "Work through the problem slowly and show every step",
                Some(json!({"type": "object", "properties": {
                    "delay_ms": {"type": "integer", "description": "how long to think"},
                    "steps": {"type": "integer", "description": "how many steps to write"}
                }})),
            ),
        ]
    }

    fn prompt(&self, task: &Value) -> String {
        let question = task["question"].as_str().unwrap_or("(no question)");
        format!("{question}\nAnswer with the `submit` tool.")
    }

    fn call(&self, task: &Value, tool: &str, input: Value) -> ToolFuture {
        let expected = task["answer"].as_f64();
        let question = task["question"].as_str().unwrap_or_default().to_owned();
        match tool {
            "submit" => Box::pin(async move {
                let given = match &input["answer"] {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().replace(',', "").parse().ok(),
                    _ => None,
                };
                let Some(given) = given else {
                    return Ok(tool_error(
                        "Tool input validation error: `answer` must be a number",
                    ));
                };
                let Some(expected) = expected else {
                    return Err("the task has no answer".to_owned());
                };
                Ok(if (given - expected).abs() < 1e-6 {
                    text_result("Correct!", Some(1.0), true)
                } else {
                    text_result("Incorrect.", Some(0.0), true)
                })
            }),
            "work" => Box::pin(async move {
                let delay =
                    Duration::from_millis(input["delay_ms"].as_u64().unwrap_or(0)).min(MAX_DELAY);
                let steps = input["steps"].as_u64().unwrap_or(10).min(MAX_STEPS);
                // async-io's timer: the tool runs on either runtime.
                async_io::Timer::after(delay).await;
                let solution = PROBLEMS
                    .iter()
                    .find(|(q, _, _)| *q == question)
                    .map_or("", |(_, _, s)| s);
                let mut text = String::new();
                for step in 1..=steps {
                    text.push_str(&format!(
                        "Step {step}: re-reading the problem — «{question}» — and checking: {solution}\n"
                    ));
                }
                Ok(text_result(&text, None, false))
            }),
            other => {
                let other = other.to_owned();
                Box::pin(async move { Err(format!("'{other}' is not a valid tool")) })
            }
        }
    }
}

//! The ORS client: sessions and [`Client::call_tool`] with resumption by task id.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use ssekit::client::{Action, Disconnect, Failure, GiveUpReason, Reconnect, ReconnectConfig};
use ssekit::profile::ors::{Terminal, ToolCall};
use ssekit::sequence::Validator;
use ssekit::Event;

use super::ToolResult;
use crate::client::{http_client, Ended, EventSource, HttpClient, Item};
use crate::time::Clock;
use crate::Error;

/// What happened during a [`Client::call_tool_traced`] call, for logs and the CLI's trace.
///
/// # Example
/// ```
/// use ssekit_hyper::ors::Trace;
/// let t = Trace::Cut { after_events: 2 };
/// assert!(matches!(t, Trace::Cut { after_events: 2 }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trace {
    /// A connection was accepted; `resume` is the task id sent in the body, if any.
    Connected {
        /// The retry number (0 first).
        attempt: u32,
        /// The task id this connection resumes.
        resume: Option<String>,
    },
    /// An event arrived (already validated).
    Event(Event),
    /// A keep-alive comment arrived.
    KeepAlive,
    /// [`CallOptions::cut_after`] dropped the connection on purpose.
    Cut {
        /// Events read on the connection before the cut.
        after_events: usize,
    },
    /// The connection ended before the terminal event.
    Disconnected(Ended),
    /// The next attempt starts after this wait.
    Reconnecting {
        /// The wait.
        after: Duration,
    },
}

/// Per-call options.
///
/// # Example
/// ```
/// let options = ssekit_hyper::ors::CallOptions::default().cut_after(Some(3));
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, Default)]
#[must_use]
pub struct CallOptions {
    cut_after: Option<usize>,
}

impl CallOptions {
    /// Fault injection for demos and tests: drop the first connection after this many
    /// events, to exercise resumption.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_hyper::ors::CallOptions::default().cut_after(Some(2));
    /// ```
    pub fn cut_after(mut self, events: Option<usize>) -> Self {
        self.cut_after = events;
        self
    }
}

/// A client of an ORS server.
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
#[derive(Clone, Debug)]
pub struct Client {
    base: String,
    http: Option<HttpClient>,
    reconnect: ReconnectConfig,
    idle_timeout: Duration,
    api_key: Option<String>,
}

impl Client {
    /// A client for the server at `base_url` (`http://host:port`, or a path prefix). Calls
    /// retry as the official client does ([`ReconnectConfig::ors`]), and a call silent for
    /// 30 s is dropped and resumed.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_hyper::ors::Client::new("ftp://x").is_err());
    /// ```
    pub fn new(base_url: &str) -> Result<Self, Error> {
        let base = base_url.trim_end_matches('/').to_owned();
        EventSource::get(&base)?; // validates the URL
        Ok(Client {
            base,
            http: None,
            reconnect: ReconnectConfig::ors(),
            idle_timeout: Duration::from_secs(30),
            api_key: None,
        })
    }

    /// Sets the retry policy of calls (backoff and attempts; headers are ignored).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:1")?
    ///     .reconnect(ssekit::client::ReconnectConfig::ors().retry_timeout(Duration::from_millis(50)));
    /// # let _ = ors; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn reconnect(mut self, config: ReconnectConfig) -> Self {
        self.reconnect = config;
        self
    }

    /// A call that receives no bytes (not even a ping) for this long is dropped and resumed
    /// (default 30 s, the official client's read timeout).
    ///
    /// # Example
    /// ```
    /// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:1")?.idle_timeout(std::time::Duration::from_secs(60));
    /// # let _ = ors; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sends `X-API-Key: key` with every request, as the official client does with
    /// `ORS_API_KEY`.
    ///
    /// # Example
    /// ```
    /// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:1")?.api_key(Some("s3cret".into()));
    /// # let _ = ors; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// Adds the API key header to an event source.
    fn with_key(&self, source: EventSource) -> Result<EventSource, Error> {
        match &self.api_key {
            Some(key) => source.header("x-api-key", key),
            None => Ok(source),
        }
    }

    fn http(&mut self) -> Result<HttpClient, Error> {
        match &self.http {
            Some(c) => Ok(c.clone()),
            None => {
                let c = http_client()?;
                self.http = Some(c.clone());
                Ok(c)
            }
        }
    }

    /// A JSON request to `path`; a non-2xx answer is [`Error::Status`].
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?;
    /// let splits = ors.request_json(http::Method::GET, "/gsm8k/splits", None, None).await?;
    /// # let _ = splits; Ok(()) }
    /// ```
    pub async fn request_json(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, Error> {
        let http = self.clone().http()?;
        let mut req = Request::new(Full::new(
            body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string())),
        ));
        *req.method_mut() = method;
        *req.uri_mut() = format!("{}{path}", self.base)
            .parse()
            .map_err(|e| Error::Request(format!("bad path {path:?}: {e}")))?;
        let headers = req.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        if let Some(key) = &self.api_key {
            headers.insert(
                "x-api-key",
                key.parse()
                    .map_err(|_| Error::Request("bad API key".to_owned()))?,
            );
        }
        if let Some(sid) = session {
            headers.insert(
                "x-session-id",
                sid.parse()
                    .map_err(|_| Error::Request(format!("bad session id {sid:?}")))?,
            );
        }
        let resp = http.request(req).await?;
        let status = resp.status();
        let bytes = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            return Err(Error::Status(status.as_u16()));
        }
        Ok(serde_json::from_slice(&bytes)?)
    }

    /// `POST /create_session`: a new session id, read from the SSE reply.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// let sid = ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?.create_session().await?;
    /// # let _ = sid; Ok(()) }
    /// ```
    pub async fn create_session(&self) -> Result<String, Error> {
        let mut this = self.clone();
        let source = EventSource::post(&format!("{}/create_session", self.base), "{}")?
            .reconnect(ReconnectConfig::default().reconnect(false))
            .header("content-type", "application/json")?
            .client(this.http()?);
        let mut items = self.with_key(source)?.events();
        let mut validator = Validator::new(ToolCall::new().check_result(false));
        while let Some(event) = items.next().await {
            validator.event(&event?)?;
            if validator.is_terminated() {
                break;
            }
        }
        validator.finish()?;
        let profile = validator.profile();
        match profile.terminal() {
            Some(Terminal::End(data)) => {
                let sid = serde_json::from_str::<Value>(data)
                    .ok()
                    .and_then(|v| v["sid"].as_str().map(str::to_owned));
                sid.or_else(|| profile.task_id().map(|t| t.to_string()))
                    .ok_or_else(|| Error::Tool("no session id in the reply".to_owned()))
            }
            Some(Terminal::Error(msg)) => Err(Error::Tool(msg.to_string())),
            _ => Err(Error::Tool("no session id in the reply".to_owned())),
        }
    }

    /// `POST /create`: binds a session to an environment and a task spec.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?;
    /// let sid = ors.create_session().await?;
    /// ors.create(&sid, "gsm8k", &serde_json::json!({"question": "1+1", "answer": 2})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create(&self, session: &str, env: &str, task: &Value) -> Result<(), Error> {
        let body = json!({"env_name": env, "task_spec": task});
        self.request_json(Method::POST, "/create", Some(session), Some(&body))
            .await
            .map(drop)
    }

    /// `/create_session` then `/create`: a session ready for calls.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?;
    /// let sid = ors.open_session("gsm8k", &serde_json::json!({"question": "1+1", "answer": 2})).await?;
    /// # let _ = sid; Ok(()) }
    /// ```
    pub async fn open_session(&self, env: &str, task: &Value) -> Result<String, Error> {
        let sid = self.create_session().await?;
        self.create(&sid, env, task).await?;
        Ok(sid)
    }

    /// `POST /ping`: keeps the session alive; [`Error::Status`]`(404)` once it expired.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?.ping("sid").await?;
    /// # Ok(()) }
    /// ```
    pub async fn ping(&self, session: &str) -> Result<(), Error> {
        self.request_json(Method::POST, "/ping", Some(session), None)
            .await
            .map(drop)
    }

    /// `POST /delete` then `POST /delete_session`, as the official client ends a session.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?.delete("sid").await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, session: &str) -> Result<(), Error> {
        self.request_json(Method::POST, "/delete", Some(session), None)
            .await?;
        self.request_json(Method::POST, "/delete_session", Some(session), None)
            .await
            .map(drop)
    }

    /// `POST /{env}/call`: runs a tool and returns its reassembled, validated result. A
    /// connection that drops before `end` is resumed with the task id; the server replays the
    /// result from its first chunk, so nothing is lost or doubled. An `error` event is
    /// [`Error::Tool`]; a tool logic error is an `Ok` result with `ok: false`.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// let ors = ssekit_hyper::ors::Client::new("http://127.0.0.1:8080")?;
    /// let r = ors.call_tool("gsm8k", "sid", "submit", serde_json::json!({"answer": 72})).await?;
    /// println!("ok: {}", r.ok);
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(
        &self,
        env: &str,
        session: &str,
        name: &str,
        input: Value,
    ) -> Result<ToolResult, Error> {
        self.call_tool_traced(env, session, name, input, CallOptions::default(), |_| {})
            .await
    }

    /// [`call_tool`](Self::call_tool) with options and a callback that sees every step.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// use ssekit_hyper::ors::{CallOptions, Client};
    /// let ors = Client::new("http://127.0.0.1:8080")?;
    /// let input = serde_json::json!({"steps": 200});
    /// let r = ors
    ///     .call_tool_traced("gsm8k", "sid", "work", input, CallOptions::default().cut_after(Some(2)), |t| println!("{t:?}"))
    ///     .await?;
    /// # let _ = r; Ok(()) }
    /// ```
    pub async fn call_tool_traced(
        &self,
        env: &str,
        session: &str,
        name: &str,
        input: Value,
        options: CallOptions,
        mut trace: impl FnMut(Trace),
    ) -> Result<ToolResult, Error> {
        let mut this = self.clone();
        let http = this.http()?;
        let clock = Clock::tokio();
        let url = format!("{}/{env}/call", self.base);
        let mut rc = Reconnect::new(self.reconnect.clone());
        let mut task_id: Option<String> = None;
        let mut cut = options.cut_after;
        let mut last_failure: Option<String> = None;
        loop {
            match rc.poll_action() {
                Some(Action::Connect { .. }) => {}
                Some(Action::GiveUp(reason)) => {
                    return Err(match last_failure {
                        Some(why) => Error::Http(format!("{reason}; last error: {why}").into()),
                        None => Error::GaveUp(reason),
                    });
                }
                Some(_) => continue,
                None => {
                    let Some(at) = rc.poll_timeout() else {
                        return Err(Error::Tool("the call was stopped".to_owned()));
                    };
                    trace(Trace::Reconnecting {
                        after: at.saturating_duration_since(clock.now()),
                    });
                    clock.sleep_until(at).await;
                    rc.handle_timeout(clock.now());
                    continue;
                }
            }
            let mut body = json!({"name": name, "input": input});
            if let Some(id) = &task_id {
                body["task_id"] = json!(id);
            }
            let items = EventSource::post(&url, body.to_string())?
                .reconnect(
                    ReconnectConfig::default()
                        .reconnect(false)
                        .idle_timeout(Some(self.idle_timeout)),
                )
                .header("content-type", "application/json")?
                .header("x-session-id", session)?
                .client(http.clone());
            let mut items = self.with_key(items)?.stream();
            let mut validator = Validator::new(ToolCall::new());
            let mut events = 0usize;
            let mut how = Disconnect::Eof;
            while let Some(item) = items.next().await {
                match item {
                    Ok(Item::Connected { .. }) => {
                        let _ = rc.handle_response(clock.now(), 200, Some("text/event-stream"));
                        trace(Trace::Connected {
                            attempt: rc.attempts(),
                            resume: task_id.clone(),
                        });
                    }
                    Ok(Item::Event(event)) => {
                        validator.event(&event)?;
                        events += 1;
                        if let Some(id) = validator.profile().task_id() {
                            task_id = Some(id.to_string());
                        }
                        trace(Trace::Event(event));
                        if validator.is_terminated() {
                            return match validator.profile().terminal() {
                                Some(Terminal::Error(msg)) => Err(Error::Tool(msg.to_string())),
                                _ => validator.profile().result().cloned().ok_or_else(|| {
                                    Error::Tool("the call ended without a result".to_owned())
                                }),
                            };
                        }
                        if cut == Some(events) {
                            cut = None;
                            trace(Trace::Cut {
                                after_events: events,
                            });
                            how = Disconnect::Error;
                            break;
                        }
                    }
                    Ok(Item::Comment(_)) => trace(Trace::KeepAlive),
                    Ok(Item::Disconnected(ended)) => {
                        if let Ended::Failed(why) = &ended {
                            last_failure = Some(why.clone());
                            how = Disconnect::Error;
                        }
                        trace(Trace::Disconnected(ended));
                        break;
                    }
                    Ok(_) => {}
                    Err(Error::GaveUp(GiveUpReason::ReconnectDisabled {
                        last: Failure::Status(status),
                    })) => {
                        // 5xx, 408, 429: the policy decides whether and when to retry.
                        let _ = rc.handle_response(clock.now(), status, None);
                        last_failure = Some(format!("HTTP {status}"));
                        break;
                    }
                    Err(e @ (Error::Status(_) | Error::ContentType(_))) => return Err(e),
                    Err(e) => {
                        last_failure = Some(e.to_string());
                        how = Disconnect::Error;
                        break;
                    }
                }
            }
            drop(items);
            rc.handle_closed(clock.now(), how);
        }
    }
}

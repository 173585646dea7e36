//! The ORS client on smol: sessions and [`Client::call_tool`] with resumption by task id.
//! Every decision (the retry policy across connections, event validation, the task id,
//! the session id) is `ssekit-http`'s [`Call`] and [`SessionReply`], shared with
//! `ssekit-hyper`'s `ors::Client`; this file makes the requests and waits.

use std::time::Duration;

use async_io::Timer;
use futures_lite::StreamExt;
use http::Method;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use ssekit::client::ReconnectConfig;
use ssekit::profile::ors::ToolResult;
use ssekit_http::client::origin_form;
use ssekit_http::ors::{json_answer, json_request, Call, CallStep, Flow, SessionReply};
pub use ssekit_http::ors::{CallOptions, Trace};

use crate::client::{send, EventSource};
use crate::time::Clock;
use crate::Error;

/// A client of an ORS server (`ssekit-hyper`'s `ors::Server`, or the official one), on smol.
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
#[derive(Clone, Debug)]
pub struct Client {
    base: String,
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
    /// assert!(ssekit_smol::ors::Client::new("ftp://x").is_err());
    /// ```
    pub fn new(base_url: &str) -> Result<Self, Error> {
        let base = base_url.trim_end_matches('/').to_owned();
        EventSource::get(&base)?; // validates the URL
        Ok(Client {
            base,
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
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:1")?
    ///     .reconnect(ssekit::client::ReconnectConfig::ors().retry_timeout(Duration::from_millis(50)));
    /// # let _ = ors; Ok::<(), ssekit_smol::Error>(())
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
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:1")?.idle_timeout(std::time::Duration::from_secs(60));
    /// # let _ = ors; Ok::<(), ssekit_smol::Error>(())
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
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:1")?.api_key(Some("s3cret".into()));
    /// # let _ = ors; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// An event stream `POST` to `path` with the ORS headers, not reconnecting by itself.
    fn post_stream(
        &self,
        path: &str,
        body: String,
        session: Option<&str>,
    ) -> Result<EventSource, Error> {
        let mut source = EventSource::post(&format!("{}{path}", self.base), body)?
            .reconnect(
                ReconnectConfig::default()
                    .reconnect(false)
                    .idle_timeout(Some(self.idle_timeout)),
            )
            .header("content-type", "application/json")?;
        if let Some(sid) = session {
            source = source.header("x-session-id", sid)?;
        }
        match &self.api_key {
            Some(key) => source.header("x-api-key", key),
            None => Ok(source),
        }
    }

    /// A JSON request to `path`; a non-2xx answer is [`Error::Status`].
    ///
    /// # Example
    /// ```no_run
    /// # smol::block_on(async {
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?;
    /// let splits = ors.request_json(http::Method::GET, "/gsm8k/splits", None, None).await?;
    /// # let _ = splits; Ok::<(), ssekit_smol::Error>(()) }).unwrap();
    /// ```
    pub async fn request_json(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, Error> {
        let mut req = json_request(
            &self.base,
            method,
            path,
            session,
            body,
            self.api_key.as_deref(),
        )?;
        let uri = req.uri().clone();
        origin_form(&mut req)?;
        let (resp, _connection) = send(uri, req, &Default::default()).await?;
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await?.to_bytes();
        json_answer(status, &bytes)
    }

    /// `POST /create_session`: a new session id, read from the SSE reply.
    ///
    /// # Example
    /// ```no_run
    /// # smol::block_on(async {
    /// let sid = ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?.create_session().await?;
    /// # let _ = sid; Ok::<(), ssekit_smol::Error>(()) }).unwrap();
    /// ```
    pub async fn create_session(&self) -> Result<String, Error> {
        let mut items = self
            .post_stream("/create_session", "{}".into(), None)?
            .events();
        let mut reply = SessionReply::new();
        while let Some(event) = items.next().await {
            if reply.event(&event?)? {
                break;
            }
        }
        reply.finish()
    }

    /// `POST /create`: binds a session to an environment and a task spec.
    ///
    /// # Example
    /// ```no_run
    /// # smol::block_on(async {
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?;
    /// let sid = ors.create_session().await?;
    /// ors.create(&sid, "gsm8k", &serde_json::json!({"question": "1+1", "answer": 2})).await?;
    /// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
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
    /// # smol::block_on(async {
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?;
    /// let sid = ors.open_session("gsm8k", &serde_json::json!({"question": "1+1", "answer": 2})).await?;
    /// # let _ = sid; Ok::<(), ssekit_smol::Error>(()) }).unwrap();
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
    /// # smol::block_on(async {
    /// ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?.ping("sid").await?;
    /// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
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
    /// # smol::block_on(async {
    /// ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?.delete("sid").await?;
    /// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
    /// ```
    pub async fn delete(&self, session: &str) -> Result<(), Error> {
        self.request_json(Method::POST, "/delete", Some(session), None)
            .await?;
        self.request_json(Method::POST, "/delete_session", Some(session), None)
            .await
            .map(drop)
    }

    /// `POST /{env}/call`: runs a tool and returns its reassembled, validated result. A
    /// connection that drops before `end` is resumed with the task id; the server replays
    /// the result from its first chunk, so nothing is lost or doubled. An `error` event is
    /// [`Error::Tool`]; a tool logic error is an `Ok` result with `ok: false`.
    ///
    /// # Example
    /// ```no_run
    /// # smol::block_on(async {
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:8080")?;
    /// let r = ors.call_tool("gsm8k", "sid", "submit", serde_json::json!({"answer": 72})).await?;
    /// println!("ok: {}", r.ok);
    /// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
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
    /// use ssekit_smol::ors::{CallOptions, Client};
    /// # smol::block_on(async {
    /// let ors = Client::new("http://127.0.0.1:8080")?;
    /// let input = serde_json::json!({"steps": 200});
    /// let r = ors
    ///     .call_tool_traced("gsm8k", "sid", "work", input, CallOptions::default().cut_after(Some(2)), |t| println!("{t:?}"))
    ///     .await?;
    /// # let _ = r; Ok::<(), ssekit_smol::Error>(()) }).unwrap();
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
        let clock = Clock::new();
        let path = format!("/{env}/call");
        let mut call = Call::new(name, input, self.reconnect.clone(), options);
        loop {
            match call.poll(clock.now(), &mut trace) {
                CallStep::Done(result) => return result,
                CallStep::Wait { until } => {
                    Timer::at(clock.at(until)).await;
                    call.handle_timeout(clock.now());
                }
                CallStep::Connect { body } => {
                    let mut items = self.post_stream(&path, body, Some(session))?.stream();
                    while let Some(item) = items.next().await {
                        match call.handle_item(clock.now(), item, &mut trace) {
                            Flow::Continue => {}
                            Flow::Done(result) => return result,
                            _ => break,
                        }
                    }
                    drop(items);
                    call.handle_closed(clock.now());
                }
                _ => {}
            }
        }
    }
}

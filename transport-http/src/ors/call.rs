//! The client: a tool call resumed by task id across connections ([`Call`]), the session id
//! of a `/create_session` reply ([`SessionReply`]), and the JSON requests of the other
//! routes ([`json_request`], [`json_answer`]).
//!
//! ```text
//!  Call::poll(now) ─▶ Connect{body (+ task_id)} ─▶ transport: EventSource (no reconnect) ─▶ handle_item ... ─▶ handle_closed
//!                 ─▶ Wait{until} (the policy's backoff) ─▶ handle_timeout
//!                 ─▶ Done(result | error)
//! ```

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use serde_json::{json, Value};
use ssekit::client::{Action, Disconnect, GiveUpReason, Reconnect, ReconnectConfig, ResponseError};
use ssekit::profile::ors::{Terminal, ToolCall, ToolResult};
use ssekit::sequence::Validator;
use ssekit::{Event, Instant};

use crate::client::{Ended, Item};
use crate::{Error, RequestError, RequestErrorKind, ToolError};

/// What happened during a traced tool call, for logs and the CLI's trace.
///
/// # Example
/// ```
/// use ssekit_http::ors::Trace;
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
/// let options = ssekit_http::ors::CallOptions::default().cut_after(Some(3));
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
    /// let _ = ssekit_http::ors::CallOptions::default().cut_after(Some(2));
    /// ```
    pub fn cut_after(mut self, events: Option<usize>) -> Self {
        self.cut_after = events;
        self
    }
}

/// What a [`Call`] wants done next.
///
/// # Example
/// ```
/// use ssekit_http::ors::{Call, CallOptions, CallStep};
/// let mut call = Call::new("submit", serde_json::json!({"answer": 4}), Default::default(), CallOptions::default());
/// let CallStep::Connect { body } = call.poll(ssekit::Instant::ZERO, &mut |_| {}) else { panic!() };
/// assert_eq!(body, r#"{"input":{"answer":4},"name":"submit"}"#);
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum CallStep {
    /// `POST /{env}/call` with this JSON body (it carries the task id when resuming), as an
    /// event stream that does not reconnect by itself; feed its items to
    /// [`Call::handle_item`] until it says stop, then call [`Call::handle_closed`].
    Connect {
        /// The request body.
        body: String,
    },
    /// Wait until this moment (the policy's backoff), then [`Call::handle_timeout`].
    Wait {
        /// The moment.
        until: Instant,
    },
    /// The call is over.
    Done(Result<ToolResult, Error>),
}

/// What to do with the current connection after an item.
///
/// # Example
/// ```
/// assert!(matches!(ssekit_http::ors::Flow::Continue, ssekit_http::ors::Flow::Continue));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// Drop this connection, then [`Call::handle_closed`].
    Close,
    /// The call is over.
    Done(Result<ToolResult, Error>),
}

/// One ORS tool call, IO-free: the retry policy across connections (the core
/// [`Reconnect`]), the events checked by the core ORS profile ([`Validator`]`<`[`ToolCall`]`>`),
/// and the task id, so a connection that drops before `end` is resumed with it and the
/// server replays the result from its first chunk (nothing lost or doubled). An `error`
/// event ends the call with [`Error::Tool`]; a tool logic error is an `Ok` result with
/// `ok: false`.
///
/// # Example
/// ```
/// use ssekit::Instant;
/// use ssekit_http::client::Item;
/// use ssekit_http::ors::{named, Call, CallOptions, CallStep, Flow};
/// let mut call = Call::new("submit", serde_json::json!({}), Default::default(), CallOptions::default());
/// let mut trace = |_| {};
/// let CallStep::Connect { .. } = call.poll(Instant::ZERO, &mut trace) else { panic!() };
/// let _ = call.handle_item(Instant::ZERO, Ok(Item::Connected { attempt: 0 }), &mut trace);
/// let _ = call.handle_item(Instant::ZERO, Ok(Item::Event(named("task_id", "t1"))), &mut trace);
/// let end = named("end", r#"{"ok":true,"output":{"blocks":[],"metadata":null,"reward":1.0,"finished":true}}"#);
/// let Flow::Done(Ok(result)) = call.handle_item(Instant::ZERO, Ok(Item::Event(end)), &mut trace) else { panic!() };
/// assert!(result.ok);
/// ```
#[derive(Debug)]
pub struct Call {
    rc: Reconnect,
    name: String,
    input: Value,
    task_id: Option<String>,
    cut: Option<usize>,
    last_failure: Option<Error>,
    validator: Validator<ToolCall>,
    events: usize,
    /// The most events one connection of this call has delivered: a resumed call replays
    /// from the start, so only events past this are progress.
    most_events: usize,
    how: Disconnect,
}

impl Call {
    /// A call of tool `name` with `input`, retried per `reconnect` (backoff and attempts;
    /// its headers are not used).
    ///
    /// # Example
    /// See [`Call`].
    pub fn new(name: &str, input: Value, reconnect: ReconnectConfig, options: CallOptions) -> Self {
        Call {
            rc: Reconnect::new(reconnect),
            name: name.to_owned(),
            input,
            task_id: None,
            cut: options.cut_after,
            last_failure: None,
            validator: Validator::new(ToolCall::new()),
            events: 0,
            most_events: 0,
            how: Disconnect::Truncated,
        }
    }

    /// What to do next, at `now`; waits are reported to `trace`.
    ///
    /// # Example
    /// See [`CallStep`].
    pub fn poll(&mut self, now: Instant, trace: &mut impl FnMut(Trace)) -> CallStep {
        loop {
            match self.rc.poll_action() {
                Some(Action::Connect { .. }) => {
                    self.validator = Validator::new(ToolCall::new());
                    self.events = 0;
                    // A call's stream that ends before its terminal event was cut, however
                    // it ended at the HTTP level: a failure, unless it delivered new events.
                    self.how = Disconnect::Truncated;
                    let mut body = json!({"name": self.name, "input": self.input});
                    if let Some(id) = &self.task_id {
                        body["task_id"] = json!(id);
                    }
                    return CallStep::Connect {
                        body: body.to_string(),
                    };
                }
                Some(Action::GiveUp(reason)) => {
                    return CallStep::Done(Err(match (self.last_failure.take(), reason) {
                        (Some(last), GiveUpReason::MaxAttempts { attempts, .. }) => {
                            Error::Exhausted {
                                attempts,
                                last: Box::new(last),
                            }
                        }
                        (Some(last), _) => last,
                        (None, reason) => Error::GaveUp(reason),
                    }));
                }
                Some(_) => continue,
                None => {
                    let Some(until) = self.rc.poll_timeout() else {
                        return CallStep::Done(Err(ToolError::Stopped.into()));
                    };
                    trace(Trace::Reconnecting {
                        after: until.saturating_duration_since(now),
                    });
                    return CallStep::Wait { until };
                }
            }
        }
    }

    /// The wait of a [`CallStep::Wait`] is over.
    ///
    /// # Example
    /// ```
    /// let mut call = ssekit_http::ors::Call::new("t", serde_json::json!({}), Default::default(), Default::default());
    /// call.handle_timeout(ssekit::Instant::ZERO); // spurious calls are harmless
    /// ```
    pub fn handle_timeout(&mut self, now: Instant) {
        self.rc.handle_timeout(now);
    }

    /// An item of the current connection's event stream.
    ///
    /// # Example
    /// See [`Call`].
    pub fn handle_item(
        &mut self,
        now: Instant,
        item: Result<Item, Error>,
        trace: &mut impl FnMut(Trace),
    ) -> Flow {
        match item {
            Ok(Item::Connected { .. }) => {
                let _ = self.rc.handle_response(now, 200, Some("text/event-stream"));
                trace(Trace::Connected {
                    attempt: self.rc.attempts(),
                    resume: self.task_id.clone(),
                });
            }
            // Signs of life for `reset_after`; new events are progress (see `event`).
            Ok(Item::Event(event)) => {
                self.rc.handle_bytes(now);
                return self.event(event, trace);
            }
            Ok(Item::Comment(_)) => {
                self.rc.handle_bytes(now);
                trace(Trace::KeepAlive);
            }
            Ok(Item::Disconnected(ended)) => {
                if let Ended::Failed(e) = &ended {
                    self.last_failure = Some(e.clone());
                    self.how = Disconnect::Error;
                }
                trace(Trace::Disconnected(ended));
                return Flow::Close;
            }
            Ok(_) => {}
            Err(Error::Refused(refused))
                if ResponseError::Status(refused.status()).is_retryable() =>
            {
                // 5xx, 408, 429: the policy decides whether and when to retry.
                let _ = self.rc.handle_response(now, refused.status(), None);
                if let Some(wait) = refused.retry_after_value() {
                    self.rc.handle_retry_after(wait);
                }
                self.last_failure = Some(Error::Refused(refused));
                return Flow::Close;
            }
            // Answers that come again on a retry: a refused status, type, coding or redirect.
            Err(
                e @ (Error::Status(_)
                | Error::Refused(_)
                | Error::ContentType(_)
                | Error::ContentEncoding(_)
                | Error::Redirect(_)),
            ) => return Flow::Done(Err(e)),
            Err(e) => {
                self.last_failure = Some(e);
                self.how = Disconnect::Error;
                return Flow::Close;
            }
        }
        Flow::Continue
    }

    fn event(&mut self, event: Event, trace: &mut impl FnMut(Trace)) -> Flow {
        if let Err(e) = self.validator.event(&event) {
            return Flow::Done(Err(e.into()));
        }
        self.events += 1;
        if self.events > self.most_events {
            // New events, past what earlier connections replayed: the call moves on, and
            // its failure count starts over.
            self.most_events = self.events;
            self.rc.handle_progress();
        }
        // Copied when the `task_id` event arrives (once per connection: the profile refuses a
        // second one); copied at every event, a long id made each empty `chunk` cost its
        // length.
        if event.event_type() == "task_id"
            && let Some(id) = self.validator.profile().task_id()
        {
            self.task_id = Some(id.to_string());
        }
        trace(Trace::Event(event));
        if self.validator.is_terminated() {
            let profile = self.validator.profile();
            return Flow::Done(match profile.terminal() {
                Some(Terminal::Error(msg)) => Err(ToolError::Reported(msg.to_string()).into()),
                _ => profile
                    .result()
                    .cloned()
                    .ok_or_else(|| ToolError::NoResult.into()),
            });
        }
        if self.cut == Some(self.events) {
            self.cut = None;
            trace(Trace::Cut {
                after_events: self.events,
            });
            self.how = Disconnect::Error;
            return Flow::Close;
        }
        Flow::Continue
    }

    /// The current connection was dropped (after [`Flow::Close`], or its stream ended).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ors::{Call, CallStep};
    /// let mut call = Call::new("t", serde_json::json!({}), Default::default(), Default::default());
    /// let _connect = call.poll(ssekit::Instant::ZERO, &mut |_| {});
    /// call.handle_closed(ssekit::Instant::ZERO);
    /// assert!(matches!(call.poll(ssekit::Instant::ZERO, &mut |_| {}), CallStep::Wait { .. }));
    /// ```
    pub fn handle_closed(&mut self, now: Instant) {
        self.rc.handle_closed(now, self.how);
    }
}

/// The events of a `POST /create_session` reply, checked by the core ORS profile, and the
/// session id in it.
///
/// # Example
/// ```
/// use ssekit_http::ors::{named, SessionReply};
/// let mut reply = SessionReply::new();
/// assert!(!reply.event(&named("task_id", "s1"))?);
/// assert!(reply.event(&named("end", r#"{"sid":"s1"}"#))?);
/// assert_eq!(reply.finish()?, "s1");
/// # Ok::<(), ssekit_http::Error>(())
/// ```
#[derive(Debug)]
pub struct SessionReply {
    validator: Validator<ToolCall>,
}

impl Default for SessionReply {
    fn default() -> Self {
        SessionReply::new()
    }
}

impl SessionReply {
    /// An empty reply.
    ///
    /// # Example
    /// See [`SessionReply`].
    pub fn new() -> Self {
        SessionReply {
            validator: Validator::new(ToolCall::new().check_result(false)),
        }
    }

    /// The next event; `true` once the reply is complete.
    ///
    /// # Example
    /// See [`SessionReply`].
    pub fn event(&mut self, event: &Event) -> Result<bool, Error> {
        self.validator.event(event)?;
        Ok(self.validator.is_terminated())
    }

    /// The session id (from the `end` event's `sid`, else the task id), or why there is none.
    ///
    /// # Example
    /// See [`SessionReply`].
    pub fn finish(mut self) -> Result<String, Error> {
        self.validator.finish()?;
        let profile = self.validator.profile();
        match profile.terminal() {
            Some(Terminal::End(data)) => {
                let sid = serde_json::from_str::<Value>(data)
                    .ok()
                    .and_then(|v| v["sid"].as_str().map(str::to_owned));
                sid.or_else(|| profile.task_id().map(|t| t.to_string()))
                    .ok_or_else(|| ToolError::NoSessionId.into())
            }
            Some(Terminal::Error(msg)) => Err(ToolError::Reported(msg.to_string()).into()),
            _ => Err(ToolError::NoSessionId.into()),
        }
    }
}

/// A JSON request to `base` + `path` with the ORS headers (`Content-Type`, `X-API-Key`,
/// `X-Session-ID`; the credentials marked sensitive, as an event stream's are), asking for
/// an uncompressed JSON answer (`Accept: application/json`, `Accept-Encoding: identity`:
/// the client does not decompress, as it does not for an event stream).
///
/// # Example
/// ```
/// let req = ssekit_http::ors::json_request("http://127.0.0.1:1", http::Method::POST, "/ping", Some("s1"), None, None)?;
/// assert_eq!(req.uri(), "http://127.0.0.1:1/ping");
/// assert_eq!(req.headers()["x-session-id"], "s1");
/// assert!(req.headers()["x-session-id"].is_sensitive());
/// assert_eq!(req.headers()["accept-encoding"], "identity");
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub fn json_request(
    base: &str,
    method: Method,
    path: &str,
    session: Option<&str>,
    body: Option<&Value>,
    api_key: Option<&str>,
) -> Result<Request<Bytes>, Error> {
    let mut req = Request::new(body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string())));
    *req.method_mut() = method;
    *req.uri_mut() = format!("{base}{path}").parse().map_err(|e| {
        RequestError::new(RequestErrorKind::Path, format!("bad path {path:?}")).with_source(e)
    })?;
    let headers = req.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        http::header::ACCEPT_ENCODING,
        http::HeaderValue::from_static("identity"),
    );
    if let Some(key) = api_key {
        let mut key: http::HeaderValue = key.parse().map_err(|e| {
            RequestError::new(RequestErrorKind::Header, "bad API key").with_source(e)
        })?;
        key.set_sensitive(true);
        headers.insert("x-api-key", key);
    }
    if let Some(sid) = session {
        let mut sid: http::HeaderValue = sid.parse().map_err(|e| {
            RequestError::new(RequestErrorKind::Header, format!("bad session id {sid:?}"))
                .with_source(e)
        })?;
        sid.set_sensitive(true);
        headers.insert("x-session-id", sid);
    }
    Ok(req)
}

/// The JSON of an answer; a non-2xx status is [`Error::Refused`], with the body.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::ors::json_answer(200, b"{\"status\":\"ok\"}")?["status"], "ok");
/// let refused = ssekit_http::ors::json_answer(404, br#"{"detail":"Session not found"}"#).unwrap_err();
/// assert_eq!(refused.to_string(), r#"the server answered 404 Not Found: {"detail":"Session not found"}"#);
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub fn json_answer(status: u16, body: &[u8]) -> Result<Value, Error> {
    json_as(status, body)
}

/// [`json_answer`] for an answer that is not used: the status and the JSON syntax are
/// checked, and nothing is built (a [`Value`] can take about 100 times the answer's bytes).
///
/// # Example
/// ```
/// assert!(ssekit_http::ors::json_checked(200, b"{\"status\":\"ok\"}").is_ok());
/// assert!(ssekit_http::ors::json_checked(200, b"{").is_err());
/// assert_eq!(ssekit_http::ors::json_checked(404, b"{}").unwrap_err().status(), Some(404));
/// ```
pub fn json_checked(status: u16, body: &[u8]) -> Result<(), Error> {
    json_as::<serde::de::IgnoredAny>(status, body).map(drop)
}

/// A 2xx answer's body read as `T`; another status is [`Error::Refused`].
fn json_as<T: serde::de::DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, Error> {
    if !(200..300).contains(&status) {
        return Err(Error::Refused(crate::Refused::new(status, None, body)));
    }
    Ok(serde_json::from_slice(body)?)
}

//! Calling a tool whose definition is known: the inputs are checked against its `inputs`
//! schema before anything is sent, and each event's data is parsed as JSON and checked
//! against its `outputs` schema, as the provider page asks ("the `data` field is expected to
//! contain JSON that matches the tool's output schema"; "parse each event's data according
//! to the tool's output schema"; "monitor for ... malformed data").
//!
//! Data that is not JSON is delivered as a JSON string of its text where the tool's
//! `outputs` accept a string (an `outputs` of `{}` accepts anything), as the official UTCP
//! client delivers it (`utcp-http` 1.1.15 returns the raw text when `json.loads` fails).
//!
//! An event whose data is not JSON (and not a string the outputs accept), or does not match, is a [`CallError`] that names the
//! event (its id and type) and, for a mismatch, the JSON path and what was expected. What
//! happens next is the caller's choice, [`OnMismatch`]:
//!
//! - [`OnMismatch::Skip`] (the default): the error is yielded and the stream goes on with
//!   the next event. An SSE tool call is a long-lived subscription (a price feed, a
//!   notification channel) that the page says continues "until the connection is closed or
//!   the tool call is terminated"; one bad event from a producer should not cost the events
//!   after it, nor a reconnect that would replay from `Last-Event-ID` and may meet the same
//!   event again. Nothing is dropped silently: every bad event is reported.
//! - [`OnMismatch::End`]: the error is yielded and the stream ends, closing the connection:
//!   for callers that treat a producer breaking its contract as fatal.
//!
//! Transport errors pass through as [`CallError::Transport`], and end the stream when the
//! reconnect policy gives up, as with [`ProviderSource::events`].
//!
//! Parsed JSON takes far more memory than its text: as a `serde_json::Value`, an array of
//! small objects takes about 90 times its bytes (one 15 MiB event of `{"b":1}` objects,
//! within the decoder's 16 MiB limit, made a client peak at 1.39 GB). So an event's data is
//! parsed only up to [`ToolCall::max_output`] bytes ([`DEFAULT_MAX_OUTPUT`], 1 MiB, by
//! default); a larger one is [`CallError::TooLarge`], reported and then skipped or ending
//! the stream as [`OnMismatch`] says, like data that does not match.

use std::fmt;
use std::pin::Pin;

use futures_core::Stream;
use futures_util::StreamExt;
use serde_json::{Map, Value};
use ssekit::Event;

use super::manual::Tool;
use super::observe::{log, CallSpan};
use super::schema::{Mismatch, Schema};
use super::{ProviderSource, SseProvider};
use crate::{Error, HttpIo};

/// The largest event data a tool call parses by default, in bytes: 1 MiB (see
/// [`ToolCall::max_output`]).
///
/// # Example
/// ```
/// assert_eq!(ssekit_utcp::DEFAULT_MAX_OUTPUT, 1 << 20);
/// ```
pub const DEFAULT_MAX_OUTPUT: usize = 1 << 20;

/// What a tool-call stream does after an event whose data is not JSON, does not match the
/// tool's `outputs` or is too large to parse (see [the module](self) for why `Skip` is the
/// default).
///
/// # Example
/// ```
/// use ssekit_utcp::OnMismatch;
/// assert_eq!(OnMismatch::default(), OnMismatch::Skip);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnMismatch {
    /// Yield the error, then go on with the next event.
    #[default]
    Skip,
    /// Yield the error, then end the stream (the connection is closed).
    End,
}

/// Why a tool call failed, or why one of its events was not delivered.
///
/// # Example
/// ```
/// use serde_json::json;
/// use ssekit_utcp::CallError;
/// let mismatch = ssekit_utcp::Schema::new(json!({"required": ["symbol"]}))?
///     .validate(&json!({})).unwrap_err();
/// assert_eq!(
///     CallError::Inputs(mismatch).to_string(),
///     "the inputs do not match the tool's inputs schema: at /symbol: expected a value (required), found nothing"
/// );
/// # Ok::<(), ssekit_utcp::SchemaError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum CallError {
    /// The call's inputs do not match the tool's `inputs`; no request was sent.
    Inputs(Mismatch),
    /// An event's data is not JSON, and the tool's `outputs` do not take it as a string.
    NotJson {
        /// The event, as received (boxed: the error stays small).
        event: Box<Event>,
        /// What the JSON parser said.
        error: serde_json::Error,
    },
    /// An event's data is JSON that does not match the tool's `outputs`.
    Output {
        /// The event, as received (boxed: the error stays small).
        event: Box<Event>,
        /// Where and how it does not match.
        mismatch: Mismatch,
    },
    /// An event's data is larger than [`ToolCall::max_output`]; it was not parsed.
    TooLarge {
        /// The event, as received (boxed: the error stays small).
        event: Box<Event>,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The connection or the event stream failed (see [`Error`]).
    Transport(Error),
}

impl CallError {
    /// The event whose data was refused, for [`NotJson`](Self::NotJson),
    /// [`Output`](Self::Output) and [`TooLarge`](Self::TooLarge).
    ///
    /// # Example
    /// ```
    /// let err = ssekit_utcp::CallError::Transport(ssekit_http::Error::Status(500));
    /// assert!(err.event().is_none());
    /// ```
    pub fn event(&self) -> Option<&Event> {
        match self {
            CallError::NotJson { event, .. }
            | CallError::Output { event, .. }
            | CallError::TooLarge { event, .. } => Some(event),
            _ => None,
        }
    }
}

/// `event id "7" of type price_update`, or `event without id of type ...`.
struct Named<'a>(&'a Event);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.id() {
            Some(id) => write!(f, "event id {id:?}")?,
            None => f.write_str("event without id")?,
        }
        write!(f, " of type {:?}", self.0.event_type())
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Inputs(m) => {
                write!(f, "the inputs do not match the tool's inputs schema: {m}")
            }
            CallError::NotJson { event, error } => {
                write!(f, "{}: the data is not JSON: {error}", Named(event))
            }
            CallError::Output { event, mismatch } => write!(
                f,
                "{}: the data does not match the tool's outputs schema: {mismatch}",
                Named(event)
            ),
            CallError::TooLarge { event, limit } => write!(
                f,
                "{}: the data is {} bytes, more than the {limit}-byte limit for parsing it",
                Named(event),
                event.data().len()
            ),
            CallError::Transport(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Inputs(m) => Some(m),
            CallError::NotJson { error, .. } => Some(error),
            CallError::Output { mismatch, .. } => Some(mismatch),
            CallError::TooLarge { .. } => None,
            CallError::Transport(e) => Some(e),
        }
    }
}

impl From<Error> for CallError {
    fn from(e: Error) -> Self {
        CallError::Transport(e)
    }
}

/// One event of a tool call whose data matched the tool's `outputs`.
///
/// # Example
/// ```
/// # fn show(output: ssekit_utcp::Output) {
/// println!("{} (event {:?})", output.value["price"], output.event.id());
/// # }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Output {
    /// The data, parsed.
    pub value: Value,
    /// The event it came in (id, type, raw data).
    pub event: Event,
}

/// What [`ToolCall::outputs`] returns.
pub type Outputs = Pin<Box<dyn Stream<Item = Result<Output, CallError>> + Send>>;

/// A tool call, connected lazily: its inputs are checked, its request built. Take its
/// [`outputs`](Self::outputs) to connect. `T` is the transport.
///
/// # Example
/// ```no_run
/// use futures_util::StreamExt;
/// use ssekit_utcp::{HttpIo, OnMismatch, SseProvider, Tool};
/// async fn watch_stock<T: HttpIo>() -> Result<(), Box<dyn std::error::Error>> {
///     let provider = SseProvider::<T>::from_json(r#"{"name":"market_updates","provider_type":"sse",
///         "url":"http://127.0.0.1:8080/stream","event_type":"price_update"}"#)?;
///     let tool = Tool::from_json(r#"{"name":"watch_stock","inputs":{"required":["symbol"]},
///         "outputs":{"properties":{"price":{"type":"number"}}}}"#)?;
///     let inputs = serde_json::json!({"symbol": "AAPL"});
///     let mut updates = provider
///         .call(&tool, inputs.as_object().ok_or("not an object")?)
///         .await?
///         .on_mismatch(OnMismatch::End)
///         .outputs();
///     while let Some(update) = updates.next().await {
///         println!("{}", update?.value["price"]);
///     }
///     Ok(())
/// }
/// ```
#[must_use = "a tool call does nothing until its outputs are read"]
pub struct ToolCall<T> {
    source: ProviderSource<T>,
    outputs: Schema,
    on_mismatch: OnMismatch,
    max_output: usize,
    span: CallSpan,
}

impl<T> fmt::Debug for ToolCall<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("source", &self.source)
            .field("outputs", &self.outputs)
            .field("on_mismatch", &self.on_mismatch)
            .field("max_output", &self.max_output)
            .finish_non_exhaustive()
    }
}

impl<T: HttpIo> ToolCall<T> {
    /// What to do after an event that is not JSON or does not match (default
    /// [`OnMismatch::Skip`]).
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_utcp::{CallError, HttpIo, OnMismatch, Outputs, SseProvider, Tool};
    /// async fn strict<T: HttpIo>(provider: &SseProvider<T>, tool: &Tool) -> Result<Outputs, CallError> {
    ///     let outputs = provider.call(tool, &serde_json::Map::new()).await?
    ///         .on_mismatch(OnMismatch::End)
    ///         .outputs();
    ///     Ok(outputs)
    /// }
    /// ```
    pub fn on_mismatch(mut self, policy: OnMismatch) -> Self {
        self.on_mismatch = policy;
        self
    }

    /// The largest event data parsed, in bytes (default [`DEFAULT_MAX_OUTPUT`], 1 MiB); a
    /// larger event is [`CallError::TooLarge`]. Parsed JSON can take about 90 times its
    /// bytes (see [the module](self)).
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_utcp::{CallError, HttpIo, Outputs, SseProvider, Tool};
    /// async fn small<T: HttpIo>(provider: &SseProvider<T>, tool: &Tool) -> Result<Outputs, CallError> {
    ///     let outputs = provider.call(tool, &serde_json::Map::new()).await?
    ///         .max_output(64 * 1024)
    ///         .outputs();
    ///     Ok(outputs)
    /// }
    /// ```
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes;
        self
    }

    /// Connects, and yields each event's data parsed and checked, or the error that
    /// refused it. Dropping the stream closes the connection.
    ///
    /// # Example
    /// ```no_run
    /// use futures_util::StreamExt;
    /// use ssekit_utcp::{CallError, HttpIo, SseProvider, Tool};
    /// async fn print<T: HttpIo>(provider: &SseProvider<T>, tool: &Tool) -> Result<(), CallError> {
    ///     let mut outputs = provider.call(tool, &serde_json::Map::new()).await?.outputs();
    ///     while let Some(output) = outputs.next().await {
    ///         match output {
    ///             Ok(output) => println!("{}", output.value),
    ///             Err(bad) if bad.event().is_some() => eprintln!("skipped: {bad}"),
    ///             Err(fatal) => return Err(fatal),
    ///         }
    ///     }
    ///     Ok(())
    /// }
    /// ```
    pub fn outputs(self) -> Outputs {
        let ToolCall {
            source,
            outputs,
            on_mismatch,
            max_output,
            span,
        } = self;
        let state = Some((source.events(), outputs));
        span.outputs(Box::pin(futures_util::stream::unfold(
            state,
            move |state| async move {
                let (mut events, schema) = state?;
                let Some(next) = events.next().await else {
                    log!(debug, "UTCP tool call ended");
                    return None;
                };
                let result = match next {
                    Err(e) => {
                        log!(warn, error = %e, "UTCP tool call failed");
                        Err(CallError::Transport(e))
                    }
                    Ok(event) => parse(&schema, event, max_output),
                };
                let stop = on_mismatch == OnMismatch::End
                    && result.as_ref().is_err_and(|e| e.event().is_some());
                if let Err(e) = &result
                    && e.event().is_some()
                {
                    log!(debug, error = %e, stop, "UTCP tool output refused");
                    #[cfg(not(feature = "tracing"))]
                    let _ = e;
                }
                Some((result, (!stop).then_some((events, schema))))
            },
        )))
    }
}

/// The data of `event` as JSON (serde_json refuses nesting past 128) checked against
/// `schema`, if it is at most `limit` bytes.
fn parse(schema: &Schema, event: Event, limit: usize) -> Result<Output, CallError> {
    if event.data().len() > limit {
        return Err(CallError::TooLarge {
            event: Box::new(event),
            limit,
        });
    }
    let value: Value = match serde_json::from_str(event.data()) {
        Ok(value) => value,
        Err(error) => {
            // As the official client delivers it: data that is not JSON is the text itself,
            // where the tool's outputs take a string.
            let text = Value::String(event.data().to_owned());
            if schema.validate(&text).is_ok() {
                return Ok(Output { value: text, event });
            }
            return Err(CallError::NotJson {
                event: Box::new(event),
                error,
            });
        }
    };
    match schema.validate(&value) {
        Ok(()) => Ok(Output { value, event }),
        Err(mismatch) => Err(CallError::Output {
            event: Box::new(event),
            mismatch,
        }),
    }
}

impl<T: HttpIo> SseProvider<T> {
    /// Calls `tool` with `inputs`: checks the inputs against the tool's `inputs` schema
    /// (a mismatch is [`CallError::Inputs`], and nothing is sent, not even an OAuth2 token
    /// request), then prepares the connection as [`connect`](Self::connect) does. Read the
    /// events with [`ToolCall::outputs`].
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_utcp::{CallError, HttpIo, SseProvider, Tool};
    /// async fn without_symbol<T: HttpIo>() -> Result<(), Box<dyn std::error::Error>> {
    ///     let provider = SseProvider::<T>::from_json(r#"{"name":"m","provider_type":"sse","url":"http://127.0.0.1:1/stream"}"#)?;
    ///     let tool = Tool::from_json(r#"{"name":"watch_stock","inputs":{"type":"object","required":["symbol"]}}"#)?;
    ///     let refused = provider.call(&tool, &serde_json::Map::new()).await;
    ///     assert!(matches!(refused, Err(CallError::Inputs(ref m)) if m.path == "/symbol"));
    ///     Ok(())
    /// }
    /// ```
    pub async fn call(
        &self,
        tool: &Tool,
        inputs: &Map<String, Value>,
    ) -> Result<ToolCall<T>, CallError> {
        let span = CallSpan::new(&tool.name, &self.name, &self.url);
        let connect = async {
            log!(debug, "UTCP tool call");
            tool.inputs
                .validate(&Value::Object(inputs.clone()))
                .map_err(|mismatch| {
                    log!(debug, path = %mismatch.path, "UTCP tool inputs refused: nothing sent");
                    CallError::Inputs(mismatch)
                })?;
            self.connect(inputs).await.map_err(|e| {
                log!(warn, error = %e, "UTCP tool call failed before it connected");
                CallError::from(e)
            })
        };
        let source = span.instrument(connect).await?;
        Ok(ToolCall {
            source,
            outputs: tool.outputs.clone(),
            on_mismatch: OnMismatch::default(),
            max_output: DEFAULT_MAX_OUTPUT,
            span,
        })
    }
}

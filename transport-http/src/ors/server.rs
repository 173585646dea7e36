//! The ORS HTTP API server, written once: every route of `ors-http-api.md`, the sessions
//! (setup in the background, idle expiry, teardown), the bounds (sessions, `task_spec`
//! bytes, running calls, request bodies), the API key, and the `/call` streams of
//! [`Calls`] (task registry, chunking, resumption by task id, keep-alive).
//!
//! **Why here, and generic over a [`Runtime`].** All of it is protocol: which status a
//! route answers, when a session expires, what a refused call streams. Written inside a
//! runtime crate, the other runtime lacked it (smol users could not serve the ORS API at
//! all). What a runtime adds is small, so it is asked for through [`Runtime`]: the time
//! ([`Runtime::now`]), a background task for tools, setups and teardowns
//! ([`Runtime::spawn`]), and timers for the keep-alive of its response bodies
//! ([`SseBody`](crate::server::SseBody) on the runtime). `ssekit_hyper::ors::Server` is `Server<Tokio>` and
//! `ssekit_smol::ors::Server` is `Server<Smol>`: the same server, byte for byte.
//!
//! ```text
//!  Request ─▶ API key ─▶ body (≤ max_body) ─▶ route
//!     /create ─▶ Sessions (bounded) ─▶ Runtime::spawn(setup)
//!     /{env}/call ─▶ session, tool ─▶ Calls::try_call ─▶ TaskRegistry ─▶ Runtime::sse_body
//!     the rest ─▶ JSON
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_lite::stream;
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use serde::Deserialize;
use serde_json::{json, Value};
use ssekit::server::{IdFormat, TaskConfig};
use ssekit::time::Instant;
use tokio::sync::watch;

use super::calls::{Calls, NotStarted};
use super::environment::Environment;
use super::observed::{in_session, refusal, store_call, CallSpan};
use super::{encode, named, BUSY};
use crate::entropy::os_seed;
use crate::observe::log;
use crate::runtime::{Frames, Runtime};
use crate::server::response;
use crate::store::{SessionRecord, Store, StoreError, TaskScope};
use crate::sync::lock;
use crate::{BoxError, Error};

/// The response body of every ORS route: JSON or an event stream.
///
/// # Example
/// ```no_run
/// use ssekit_http::{ors::{OrsBody, Server}, runtime::Runtime};
/// async fn environments<R: Runtime>(server: &Server<R>) -> http::Response<OrsBody> {
///     let req = http::Request::get("/list_environments").body(http_body_util::Empty::<bytes::Bytes>::new()).unwrap();
///     let resp: http::Response<OrsBody> = server.handle(req).await;
///     assert_eq!(resp.headers()["content-type"], "application/json");
///     resp
/// }
/// ```
pub type OrsBody = UnsyncBoxBody<Bytes, Error>;

/// Server policy. Defaults are the specification's: pings after 10 s of silence, sessions
/// expire after 15 minutes without a call or `/ping`, finished results are kept 60 s,
/// request bodies up to 1 MiB, chunks of at most 4096 bytes; and at most 10 000 live
/// sessions holding at most 256 MiB of `task_spec` between them (`/create` answers 503
/// beyond either). Finished results are kept for resumption in the core `TaskRegistry`:
/// at most 1024 results and 64 MiB over all sessions, and 256 results and 16 MiB per session
/// (see [`max_session_result_bytes`](Self::max_session_result_bytes) for what happens at
/// each); at most 1024 tool calls run at once (`/call` answers 503 beyond that). A task id
/// resumes only in the session that started the call, for the same tool; the ids are
/// keyed by 32 bytes from the OS RNG ([`os_seed`]), new for every [`Server`].
///
/// # Example
/// ```
/// use std::time::Duration;
/// let config = ssekit_http::ors::ServerConfig::default()
///     .keep_alive(Duration::from_millis(200))
///     .session_timeout(Duration::from_secs(60));
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ServerConfig {
    keep_alive: Duration,
    session_timeout: Duration,
    result_ttl: Duration,
    max_body: usize,
    max_chunk: usize,
    max_sessions: usize,
    max_task_spec_bytes: usize,
    max_running_calls: usize,
    max_results: usize,
    max_result_bytes: usize,
    max_session_results: usize,
    max_session_result_bytes: usize,
    api_key: Option<String>,
    store: Option<SharedStore>,
    task_lease: Duration,
    id_seed: Option<[u8; 32]>,
}

/// The store of a [`ServerConfig`], printed by its name only.
#[derive(Clone)]
struct SharedStore(Arc<dyn Store>);

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            keep_alive: ssekit::server::KeepAlive::ORS,
            session_timeout: Duration::from_secs(15 * 60),
            result_ttl: Duration::from_secs(60),
            max_body: 1 << 20,
            max_chunk: ssekit::chunk::DEFAULT_MAX_CHUNK,
            max_sessions: 10_000,
            max_task_spec_bytes: 256 << 20,
            max_running_calls: 1024,
            max_results: 1024,
            max_result_bytes: 64 << 20,
            max_session_results: 256,
            max_session_result_bytes: 16 << 20,
            api_key: None,
            store: None,
            task_lease: Duration::from_secs(3),
            id_seed: None,
        }
    }
}

impl ServerConfig {
    /// The keep-alive interval on `/call` streams (default 10 s).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().keep_alive(std::time::Duration::from_secs(5));
    /// ```
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// How long a session lives without a call or `/ping` (default 15 min).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().session_timeout(std::time::Duration::from_secs(60));
    /// ```
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long a finished result stays available for resumption (default 60 s).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().result_ttl(std::time::Duration::from_secs(120));
    /// ```
    pub fn result_ttl(mut self, ttl: Duration) -> Self {
        self.result_ttl = ttl;
        self
    }

    /// The largest request body accepted (default 1 MiB; larger is 413).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_body(64 << 10);
    /// ```
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Requires `X-API-Key: key` on every route but `/health` (401 otherwise); the official
    /// client sends it when `ORS_API_KEY` is set. Default: no key.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().api_key(Some("s3cret".into()));
    /// ```
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// The most live sessions (default 10 000); `/create` answers 503 when full.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_sessions(100);
    /// ```
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// The most `task_spec` bytes held over all live sessions (default 256 MiB): the sum of
    /// the `/create` request bodies of the live sessions. A `/create` that would go over is
    /// answered 503, like one past [`max_sessions`](Self::max_sessions); a session's bytes
    /// are released when it is deleted or expires.
    ///
    /// A session keeps its task as parsed JSON, which takes more memory than its text: up
    /// to about 16 times (an array of small numbers, 2 bytes of text each, takes 32 bytes
    /// per element), so the default bounds the sessions' tasks near 4 GiB in the worst case
    /// and to a few hundred MiB for ordinary task objects.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_task_spec_bytes(64 << 20);
    /// ```
    pub fn max_task_spec_bytes(mut self, bytes: usize) -> Self {
        self.max_task_spec_bytes = bytes;
        self
    }

    /// The most tool calls running at once (default 1024, at least 1). A tool keeps
    /// running when its client hangs up (as in ORS), so without a bound clients that post
    /// calls and leave would grow the server without limit. A `/call` past it is answered
    /// `503 Service Unavailable` with `Retry-After: 1` before any stream starts: the
    /// official client retries 5xx answers with backoff, and since the tool did not run,
    /// the retry is safe, whereas an `error` event would fail the call at once (the
    /// client does not retry those).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_running_calls(256);
    /// ```
    pub fn max_running_calls(mut self, calls: usize) -> Self {
        self.max_running_calls = calls.max(1);
        self
    }

    /// The most finished results kept for resumption over all sessions (default 1024, at
    /// least 1). See [`max_session_result_bytes`](Self::max_session_result_bytes).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_results(4096);
    /// ```
    pub fn max_results(mut self, results: usize) -> Self {
        self.max_results = results.max(1);
        self
    }

    /// The most bytes of finished results (their encoded events) kept for resumption over
    /// all sessions (default 64 MiB). See
    /// [`max_session_result_bytes`](Self::max_session_result_bytes).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_result_bytes(256 << 20);
    /// ```
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// The most finished results one session keeps for resumption (default 256, at least
    /// 1): a session's result past it evicts that session's oldest.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_session_results(16);
    /// ```
    pub fn max_session_results(mut self, results: usize) -> Self {
        self.max_session_results = results.max(1);
        self
    }

    /// The most bytes of finished results one session keeps for resumption (default
    /// 16 MiB, a quarter of [`max_result_bytes`](Self::max_result_bytes), so that four
    /// sessions at least hold that much each).
    ///
    /// Results are cached fairly: a session's results are only ever evicted (before their
    /// TTL) to make room for that session's own newer results, never for another session's,
    /// so no client can make another's `task_id` unknown inside its TTL. When a result
    /// cannot be kept, because it alone is larger than this budget, or because the other
    /// sessions' results fill [`max_result_bytes`](Self::max_result_bytes) or
    /// [`max_results`](Self::max_results), the call's own stream still gets the whole
    /// result, after the comment [`NOT_RESUMABLE`](super::NOT_RESUMABLE); a resume with its
    /// `task_id` gets an `error` event ([`NOT_KEPT`](super::NOT_KEPT)) or, past
    /// `max_results`, `unknown task_id`. Each such result is counted
    /// ([`ORS_RESULTS_NOT_KEPT_TOTAL`](crate::observe::ORS_RESULTS_NOT_KEPT_TOTAL)). With a
    /// [`store`](Self::store), the store's copy of the result is not bounded by these.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_session_result_bytes(4 << 20);
    /// ```
    pub fn max_session_result_bytes(mut self, bytes: usize) -> Self {
        self.max_session_result_bytes = bytes;
        self
    }

    /// Keeps sessions and task logs in `store`, shared by every instance that uses it,
    /// instead of this process's memory alone, so that several instances behind a load
    /// balancer serve one API: a session made on one works on all, a call resumes (by
    /// `task_id`, from the session that made it) on any, finished or running. Default: no
    /// store. See [`store`](crate::store) for what is kept and for how long.
    ///
    /// # Example
    /// ```
    /// # fn doc(store: std::sync::Arc<dyn ssekit_http::store::Store>) {
    /// let _ = ssekit_http::ors::ServerConfig::default().store(store);
    /// # }
    /// ```
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(SharedStore(store));
        self
    }

    /// With a [`store`](Self::store): how long a running task's lease lasts without
    /// renewal (default 3 s, at least 300 ms; the instance running it renews it every
    /// third). A client following the task from another instance learns that the instance
    /// died (an `error` event, [`TASK_LOST`](super::TASK_LOST)) within this and a second.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().task_lease(std::time::Duration::from_secs(2));
    /// ```
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.task_lease = lease;
        self
    }

    /// The most data bytes per `chunk`/`end` event (default 4096).
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().max_chunk(1024);
    /// ```
    pub fn max_chunk(mut self, bytes: usize) -> Self {
        self.max_chunk = bytes;
        self
    }

    /// Derives task and session ids from `seed` instead of the operating system's random
    /// numbers, so that a run can be repeated: for simulations and tests only. Ids are
    /// capabilities (whoever knows one may resume the call or use the session), so a server
    /// others can reach must keep the default.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit_http::ors::ServerConfig::default().id_seed([7; 32]);
    /// ```
    pub fn id_seed(mut self, seed: [u8; 32]) -> Self {
        self.id_seed = Some(seed);
        self
    }
}

/// A session id: 128 bits from the OS RNG, or the `n`th id of a seed (two SplitMix64 outputs,
/// keyed by the seed's first 16 bytes).
fn session_id(seed: Option<&[u8; 32]>, n: u64) -> String {
    let Some(seed) = seed else {
        return format!("{:032x}", u128::from_le_bytes(os_seed()));
    };
    let word = |at: usize| {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(seed.get(at..at + 8).unwrap_or(&[0; 8]));
        u64::from_le_bytes(bytes)
    };
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    format!(
        "{:016x}{:016x}",
        mix(word(0) ^ n),
        mix(word(8) ^ n.rotate_left(32))
    )
}

/// The outcome of a session's `setup`, once known.
type SetupState = watch::Receiver<Option<Result<(), String>>>;

struct Session {
    env: usize,
    /// Shared, so a request that needs the task clones a pointer, not the JSON.
    task: Arc<Value>,
    last_seen: Instant,
    setup: SetupState,
    /// The `/create` body size this session counts against `max_task_spec_bytes`.
    spec_bytes: usize,
}

/// The live sessions and the `task_spec` bytes they hold.
#[derive(Default)]
struct Sessions {
    map: HashMap<String, Session>,
    spec_bytes: usize,
}

impl Sessions {
    /// Removes a session, releasing its `task_spec` bytes.
    fn remove(&mut self, sid: &str) -> Option<Session> {
        let session = self.map.remove(sid)?;
        self.spec_bytes = self.spec_bytes.saturating_sub(session.spec_bytes);
        Some(session)
    }
}

/// Waits for a session's setup; `Err` with its message if it failed.
async fn ready(mut setup: SetupState) -> Result<(), String> {
    match setup.wait_for(Option::is_some).await {
        Ok(state) => state.clone().unwrap_or(Ok(())),
        Err(_) => Err("environment setup did not finish".to_owned()),
    }
}

/// Where a session's setup outcome is to be found.
enum Setup {
    /// Running or done on this instance.
    Local(SetupState),
    /// Done, as the store says.
    Known(Result<(), String>),
    /// Running on another instance: read the store until it is done.
    Stored(String),
}

/// How long a request waits for a setup running on another instance.
const SHARED_SETUP_WAIT: Duration = Duration::from_secs(60);

/// Whether `given` equals `expected`, in a time that depends on their lengths only: a
/// comparison that stops at the first differing byte would tell a client, by its timing,
/// how much of a guessed API key is right.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    let difference = given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | std::hint::black_box(a ^ b));
    difference == 0
}

fn json_response(status: StatusCode, value: &Value) -> Response<OrsBody> {
    let mut resp = Response::new(
        Full::new(Bytes::from(value.to_string()))
            .map_err(|never: Infallible| match never {})
            .boxed_unsync(),
    );
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

fn detail(status: StatusCode, message: &str) -> Response<OrsBody> {
    json_response(status, &json!({ "detail": message }))
}

fn unprocessable(message: &str) -> Response<OrsBody> {
    json_response(
        StatusCode::UNPROCESSABLE_ENTITY,
        &json!({"detail": [{"type": "value_error", "loc": ["body"], "msg": message}]}),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallBody {
    name: String,
    input: serde_json::Map<String, Value>,
    #[serde(default)]
    task_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    #[serde(default)]
    env_name: Option<String>,
    #[serde(default)]
    task_spec: Option<Value>,
    #[serde(default)]
    split: Option<String>,
    #[serde(default)]
    index: Option<i64>,
    #[serde(default)]
    secrets: Option<Value>,
}

#[derive(Deserialize)]
struct SplitBody {
    split: String,
    #[serde(default)]
    index: Option<i64>,
    #[serde(default)]
    start: Option<i64>,
    #[serde(default)]
    stop: Option<i64>,
}

/// Python's index rule: negative counts from the end.
fn py_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if index < 0 { index + len } else { index };
    (0..len)
        .contains(&i)
        .then(|| usize::try_from(i).ok())
        .flatten()
}

/// Python's slice bounds rule (step 1): clamp, negatives count from the end.
fn py_bound(bound: Option<i64>, len: usize, default: usize) -> usize {
    let Some(b) = bound else { return default };
    let n = i64::try_from(len).unwrap_or(i64::MAX);
    let b = if b < 0 { (b + n).max(0) } else { b.min(n) };
    usize::try_from(b).unwrap_or(default)
}

/// A tool's compiled `input_schema`, or why it did not compile.
type ToolSchema = Result<Arc<jsonschema::Validator>, String>;

/// The longest input-validation message sent (it quotes the client's input).
const MAX_INVALID_INPUT_MESSAGE: usize = 1024;

/// Compiles the `input_schema` of every tool of `env` (a tool without one, or with `null`,
/// takes any input; none for an environment that [checks its input
/// itself](Environment::checks_input)). A schema that does not compile is logged here and
/// refuses every call of its tool with a tool error naming the problem.
fn tool_schemas(env: &dyn Environment) -> HashMap<String, ToolSchema> {
    let mut schemas = HashMap::new();
    if env.checks_input() {
        return schemas;
    }
    for tool in env.tools() {
        let Some(schema) = tool.input_schema.as_ref().filter(|s| !s.is_null()) else {
            continue;
        };
        let compiled = jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(schema)
            .map(Arc::new)
            .map_err(|e| {
                let problem = format!(
                    "the input_schema of tool '{}' does not compile: {e}",
                    tool.name
                );
                log!(warn, env = env.name(), tool = %tool.name, %problem, "invalid ORS tool schema");
                problem
            });
        schemas.insert(tool.name, compiled);
    }
    schemas
}

/// Checks a call's `input` against its tool's compiled schema: `Err` with a message naming
/// the first failing path (`Tool input validation error: input/word: "word" is a required
/// property`), the reference server's prefix.
fn check_input(schema: Option<&ToolSchema>, input: &Value) -> Result<(), String> {
    let validator = match schema {
        None => return Ok(()),
        Some(Err(problem)) => return Err(format!("internal error: {problem}")),
        Some(Ok(validator)) => validator,
    };
    let Some(error) = validator.iter_errors(input).next() else {
        return Ok(());
    };
    let mut path = format!("input{}", error.instance_path().as_str());
    if let jsonschema::error::ValidationErrorKind::Required { property } = error.kind() {
        match property.as_str() {
            Some(name) => {
                path.push_str(&format!("/{}", name.replace('~', "~0").replace('/', "~1")))
            }
            None => path.push_str(&format!("/{property}")),
        }
    }
    let mut message = format!("Tool input validation error: {path}: {error}");
    if message.len() > MAX_INVALID_INPUT_MESSAGE {
        let mut end = MAX_INVALID_INPUT_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    Err(message)
}

struct Inner<R> {
    store: Option<Arc<dyn Store>>,
    envs: Vec<Arc<dyn Environment>>,
    /// Each environment's tools' compiled input schemas, by tool name.
    schemas: Vec<HashMap<String, ToolSchema>>,
    config: ServerConfig,
    runtime: R,
    sessions: Mutex<Sessions>,
    /// Session ids handed out so far (they number the ids of a seed).
    made: std::sync::atomic::AtomicU64,
    calls: Calls<R>,
}

/// An ORS server: every route of the HTTP API the official `ors-sdk` client uses, over the
/// environments it is given, on the runtime `R` (use `ssekit_hyper::ors::Server` or
/// `ssekit_smol::ors::Server`). With feature `hyper` it is a hyper
/// [`Service`](hyper::service::Service); or call [`handle`](Self::handle) from your own
/// router. No background task: expired sessions and results are dropped on the next
/// request.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use ssekit_http::ors::{text_result, Environment, Server, Split, ToolFuture, ToolSpec};
/// use ssekit_http::runtime::Runtime;
///
/// struct Echo;
/// impl Environment for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn splits(&self) -> Vec<Split> { vec![Split::new("test", "test")] }
///     fn tasks(&self, split: &str) -> Option<Vec<Value>> { (split == "test").then(|| vec![json!({})]) }
///     fn tools(&self) -> Vec<ToolSpec> { vec![ToolSpec::new("echo", "Echo the input", None)] }
///     fn prompt(&self, _task: &Value) -> String { "Say something.".into() }
///     fn call(&self, _task: &Value, _tool: &str, input: Value) -> ToolFuture {
///         Box::pin(async move { Ok(text_result(&input.to_string(), None, true)) })
///     }
/// }
/// // Serve it with a transport: `ssekit_smol::server::serve(listener, echo())` on smol,
/// // `ssekit_hyper::server::serve` on tokio.
/// fn echo<R: Runtime + Default>() -> Server<R> {
///     Server::new(vec![Arc::new(Echo)])
/// }
/// ```
pub struct Server<R> {
    inner: Arc<Inner<R>>,
}

impl<R> Clone for Server<R> {
    fn clone(&self) -> Self {
        Server {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<R> std::fmt::Debug for Server<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field(
                "environments",
                &self
                    .inner
                    .envs
                    .iter()
                    .map(|e| e.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime + Default> Server<R> {
    /// A server over `environments` (the first is the default for `/create`), with the
    /// default [`ServerConfig`].
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Server, runtime::Runtime};
    /// fn empty<R: Runtime + Default>() -> Server<R> {
    ///     Server::new(Vec::new())
    /// }
    /// ```
    pub fn new(environments: Vec<Arc<dyn Environment>>) -> Self {
        Server::with_config(environments, ServerConfig::default())
    }

    /// A server with a custom policy.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::{Server, ServerConfig}, runtime::Runtime};
    /// fn empty<R: Runtime + Default>() -> Server<R> {
    ///     Server::with_config(Vec::new(), ServerConfig::default())
    /// }
    /// ```
    pub fn with_config(environments: Vec<Arc<dyn Environment>>, config: ServerConfig) -> Self {
        Server::with_runtime(environments, config, R::default())
    }
}

impl<R: Runtime> Server<R> {
    /// A server with a custom policy on this runtime value (its clock times sessions and
    /// results; its tasks run setups, tools and teardowns).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::{Server, ServerConfig}, runtime::Runtime};
    /// fn empty<R: Runtime>(runtime: R) -> Server<R> {
    ///     Server::with_runtime(Vec::new(), ServerConfig::default(), runtime)
    /// }
    /// ```
    pub fn with_runtime(
        environments: Vec<Arc<dyn Environment>>,
        config: ServerConfig,
        runtime: R,
    ) -> Self {
        let tasks = TaskConfig::new(config.id_seed.unwrap_or_else(os_seed))
            .result_ttl(config.result_ttl)
            .max_running(config.max_running_calls)
            .max_tasks(config.max_results)
            .max_bytes(config.max_result_bytes)
            .max_owner_tasks(config.max_session_results)
            .max_owner_bytes(config.max_session_result_bytes)
            .id_format(IdFormat::Simple);
        let mut calls =
            Calls::with_runtime(tasks, config.keep_alive, config.max_chunk, runtime.clone());
        let store = config.store.as_ref().map(|s| Arc::clone(&s.0));
        if let Some(store) = &store {
            calls = calls.with_store(Arc::clone(store), config.task_lease);
        }
        let schemas = environments.iter().map(|e| tool_schemas(&**e)).collect();
        Server {
            inner: Arc::new(Inner {
                store,
                schemas,
                envs: environments,
                config,
                runtime,
                sessions: Mutex::new(Sessions::default()),
                made: std::sync::atomic::AtomicU64::new(0),
                calls,
            }),
        }
    }

    /// Answers one request. Use this to mount the API inside another router.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{ors::Server, runtime::Runtime};
    /// async fn health<R: Runtime>(server: &Server<R>) {
    ///     let req = http::Request::get("/health").body(http_body_util::Empty::<bytes::Bytes>::new()).unwrap();
    ///     assert_eq!(server.handle(req).await.status(), 200);
    /// }
    /// ```
    pub async fn handle<B>(&self, req: Request<B>) -> Response<OrsBody>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let session = req
            .headers()
            .get("x-session-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned);
        in_session(session.as_deref(), self.route(req)).await
    }

    async fn route<B>(&self, req: Request<B>) -> Response<OrsBody>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let (parts, body) = req.into_parts();
        let path = parts.uri.path().trim_matches('/').to_owned();
        if let Some(key) = &self.inner.config.api_key {
            let given = parts.headers.get("x-api-key").map(|v| v.as_bytes());
            let valid = given.is_some_and(|given| same_secret(given, key.as_bytes()));
            if path != "health" && !valid {
                return refused(
                    "unauthorized",
                    detail(StatusCode::UNAUTHORIZED, "invalid or missing X-API-Key"),
                );
            }
        }
        let segments: Vec<&str> = path.split('/').collect();
        let sid = parts
            .headers
            .get("x-session-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned);
        let body = match Limited::new(body, self.inner.config.max_body)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return refused(
                    "too_large",
                    detail(StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
                )
            }
        };
        let m = &parts.method;
        match segments.as_slice() {
            ["health"] if m == Method::GET => {
                json_response(StatusCode::OK, &json!({"status": "ok"}))
            }
            ["list_environments"] if m == Method::GET => {
                let names: Vec<&str> = self.inner.envs.iter().map(|e| e.name()).collect();
                json_response(StatusCode::OK, &json!(names))
            }
            ["create_session"] if m == Method::POST => self.create_session().await,
            ["create"] if m == Method::POST => match sid {
                Some(sid) => self.create(&sid, &body).await,
                None => missing_sid(),
            },
            ["ping"] if m == Method::POST => match sid {
                Some(sid) => match self.session(&sid, None).await {
                    Ok(Some(_)) => json_response(StatusCode::OK, &json!({"status": "ok"})),
                    Ok(None) => refused(
                        "unknown_session",
                        detail(StatusCode::NOT_FOUND, "Active environment not found"),
                    ),
                    Err(e) => unavailable(&e.to_string()),
                },
                None => missing_sid(),
            },
            ["delete"] if m == Method::POST => match sid {
                Some(sid) => match self.delete(&sid).await {
                    Ok(()) => json_response(StatusCode::OK, &json!({ "sid": sid })),
                    Err(e) => unavailable(&e.to_string()),
                },
                None => missing_sid(),
            },
            ["delete_session"] if m == Method::POST => match sid {
                Some(sid) => json_response(StatusCode::OK, &json!({ "sid": sid })),
                None => missing_sid(),
            },
            [env, route] => {
                let Some(index) = self.env_index(env) else {
                    return refused(
                        "unknown_environment",
                        detail(
                            StatusCode::NOT_FOUND,
                            &format!("unknown environment '{env}'"),
                        ),
                    );
                };
                self.env_route(index, m, route, sid, &body).await
            }
            _ => refused("not_found", detail(StatusCode::NOT_FOUND, "Not Found")),
        }
    }

    fn env_index(&self, name: &str) -> Option<usize> {
        self.inner
            .envs
            .iter()
            .position(|e| e.name().eq_ignore_ascii_case(name))
    }

    async fn env_route(
        &self,
        index: usize,
        m: &Method,
        route: &str,
        sid: Option<String>,
        body: &Bytes,
    ) -> Response<OrsBody> {
        let env = &self.inner.envs[index.min(self.inner.envs.len().saturating_sub(1))];
        let split_body = || serde_json::from_slice::<SplitBody>(body);
        match (route, m) {
            ("tools", &Method::GET) => {
                json_response(StatusCode::OK, &json!({"tools": env.tools()}))
            }
            ("splits", &Method::GET) => json_response(StatusCode::OK, &json!(env.splits())),
            ("tasks" | "num_tasks" | "task" | "task_range", &Method::POST) => {
                let Ok(req) = split_body() else {
                    return refused("bad_input", unprocessable("expected {\"split\": ...}"));
                };
                let Some(tasks) = env.tasks(&req.split) else {
                    return refused(
                        "bad_input",
                        detail(StatusCode::BAD_REQUEST, "Invalid split"),
                    );
                };
                match route {
                    "tasks" => json_response(
                        StatusCode::OK,
                        &json!({"tasks": tasks, "env_name": env.name()}),
                    ),
                    "num_tasks" => {
                        json_response(StatusCode::OK, &json!({"num_tasks": tasks.len()}))
                    }
                    "task" => match req.index.and_then(|i| py_index(i, tasks.len())) {
                        Some(i) => json_response(StatusCode::OK, &json!({"task": tasks[i]})),
                        None => refused(
                            "bad_input",
                            detail(StatusCode::BAD_REQUEST, "Invalid index"),
                        ),
                    },
                    _ => {
                        let start = py_bound(req.start, tasks.len(), 0);
                        let stop = py_bound(req.stop, tasks.len(), tasks.len());
                        let range = tasks.get(start..stop.max(start)).unwrap_or_default();
                        json_response(StatusCode::OK, &json!({ "tasks": range }))
                    }
                }
            }
            ("prompt" | "task_tools", &Method::GET) => {
                let Some(sid) = sid else { return missing_sid() };
                // A session of another environment is not found here, as on `/ping`.
                let (task, setup) = match self.session(&sid, Some(index)).await {
                    Ok(Some(session)) => session,
                    Ok(None) => {
                        return refused(
                            "unknown_session",
                            detail(StatusCode::NOT_FOUND, "Active environment not found"),
                        )
                    }
                    Err(e) => return unavailable(&e.to_string()),
                };
                if let Err(message) = self.ready(setup).await {
                    return refused(
                        "setup_failed",
                        detail(StatusCode::INTERNAL_SERVER_ERROR, &message),
                    );
                }
                if route == "prompt" {
                    json_response(StatusCode::OK, &json!(env.prompt_blocks(&task)))
                } else {
                    json_response(StatusCode::OK, &json!({"tools": env.tools()}))
                }
            }
            ("call", &Method::POST) => {
                let Some(sid) = sid else { return missing_sid() };
                match serde_json::from_slice::<CallBody>(body) {
                    Ok(call) => self.call(index, &sid, call).await,
                    Err(e) => refused("bad_input", unprocessable(&e.to_string())),
                }
            }
            _ => refused("not_found", detail(StatusCode::NOT_FOUND, "Not Found")),
        }
    }

    /// `/create_session`: a new session id. With a store, the store is asked first (is the
    /// new id free?), so that while it is down the answer is a 503 the client retries, not
    /// an id that `/create` would then fail to record.
    async fn create_session(&self) -> Response<OrsBody> {
        // 128 bits from the OS RNG: a session id is all it takes to call its tools.
        let n = self
            .inner
            .made
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sid = session_id(self.inner.config.id_seed.as_ref(), n);
        if let Some(store) = &self.inner.store {
            let ttl = self.inner.config.session_timeout;
            let found = store_call(&self.inner.runtime, "session", store.session(&sid, ttl));
            match found.await {
                Ok(None) => {}
                // 128 random bits: never, but an id in use is not handed out twice.
                Ok(Some(_)) => return unavailable_detail("session id collision: try again"),
                Err(e) => return unavailable(&e.to_string()),
            }
        }
        let frames = vec![encode(&named("task_id", sid)), encode(&named("end", ""))];
        let body = self.inner.calls.body(Box::pin(stream::iter(frames)));
        response(body.boxed_unsync())
    }

    async fn create(&self, sid: &str, body: &Bytes) -> Response<OrsBody> {
        let req: CreateBody = match serde_json::from_slice(body) {
            Ok(req) => req,
            Err(e) => return refused("bad_input", unprocessable(&e.to_string())),
        };
        let env = match &req.env_name {
            Some(name) => match self.env_index(name) {
                Some(i) => i,
                None => {
                    return refused(
                        "unknown_environment",
                        detail(
                            StatusCode::NOT_FOUND,
                            &format!("unknown environment '{name}'"),
                        ),
                    )
                }
            },
            None if self.inner.envs.is_empty() => {
                return refused(
                    "unknown_environment",
                    detail(StatusCode::NOT_FOUND, "no environment"),
                )
            }
            None => 0,
        };
        let secrets = req.secrets;
        let spec_bytes = body.len();
        let task = match (req.task_spec, req.split, req.index) {
            (Some(spec), None, None) => spec,
            (None, Some(split), Some(index)) => {
                let Some(tasks) = self.inner.envs.get(env).and_then(|e| e.tasks(&split)) else {
                    return refused(
                        "bad_input",
                        detail(StatusCode::BAD_REQUEST, "Invalid split"),
                    );
                };
                match py_index(index, tasks.len()).and_then(|i| tasks.get(i)) {
                    Some(task) => task.clone(),
                    None => {
                        return refused(
                            "bad_input",
                            detail(StatusCode::BAD_REQUEST, "Invalid index"),
                        )
                    }
                }
            }
            _ => {
                return refused(
                    "bad_input",
                    unprocessable("give exactly one of task_spec or split and index"),
                )
            }
        };
        if let Some(refused) = self.refuse_create(sid, spec_bytes) {
            return refused;
        }
        let record = self.inner.store.as_ref().map(|store| {
            let name = self.inner.envs.get(env).map(|e| e.name().to_owned());
            let record = SessionRecord {
                env: name.unwrap_or_default(),
                task: task.clone(),
                setup: None,
            };
            (Arc::clone(store), record)
        });
        if let Some((store, record)) = &record {
            let ttl = self.inner.config.session_timeout;
            let created = store_call(
                &self.inner.runtime,
                "create_session",
                store.create_session(sid, record, ttl),
            );
            match created.await {
                Ok(true) => {}
                Ok(false) => {
                    return refused(
                        "session_exists",
                        detail(StatusCode::BAD_REQUEST, "Session already exists"),
                    )
                }
                Err(e) => return unavailable(&e.to_string()),
            }
        }
        let now = self.inner.runtime.now();
        let mut sessions = lock(&self.inner.sessions);
        if let Some(refused) = self.refuse_create_locked(&mut sessions, sid, spec_bytes, now) {
            return refused;
        }
        let (done, setup) = watch::channel(None);
        if let Some(environment) = self.inner.envs.get(env) {
            let run = environment.setup(&task, secrets.as_ref().unwrap_or(&Value::Null));
            let session = sid;
            let sid = sid.to_owned();
            let runtime = self.inner.runtime.clone();
            log!(
                debug,
                env = environment.name(),
                "session created; setup started"
            );
            let setup = async move {
                let outcome = run.await;
                #[cfg(feature = "tracing")]
                match &outcome {
                    Ok(()) => tracing::debug!("session setup done"),
                    Err(error) => tracing::warn!(%error, "session setup failed"),
                }
                if let Some((store, mut record)) = record {
                    record.setup = Some(outcome.clone());
                    // Unrecorded, the other instances wait for it until SHARED_SETUP_WAIT.
                    let recorded = store.update_session(&sid, &record);
                    let _ = store_call(&runtime, "update_session", recorded).await;
                }
                let _ = done.send(Some(outcome));
            };
            self.inner.runtime.spawn(in_session(Some(session), setup));
        }
        sessions.spec_bytes += spec_bytes;
        sessions.map.insert(
            sid.to_owned(),
            Session {
                env,
                task: Arc::new(task),
                last_seen: now,
                setup,
                spec_bytes,
            },
        );
        json_response(StatusCode::OK, &json!({ "sid": sid }))
    }

    /// The answer refusing a session `sid` holding `spec_bytes` of `task_spec` now (it
    /// exists, or the bounds are reached); `None` when it may be created.
    fn refuse_create(&self, sid: &str, spec_bytes: usize) -> Option<Response<OrsBody>> {
        let now = self.inner.runtime.now();
        let mut sessions = lock(&self.inner.sessions);
        self.refuse_create_locked(&mut sessions, sid, spec_bytes, now)
    }

    fn refuse_create_locked(
        &self,
        sessions: &mut Sessions,
        sid: &str,
        spec_bytes: usize,
        now: Instant,
    ) -> Option<Response<OrsBody>> {
        self.sweep(sessions, now);
        if sessions.map.contains_key(sid) {
            return Some(refused(
                "session_exists",
                detail(StatusCode::BAD_REQUEST, "Session already exists"),
            ));
        }
        if sessions.map.len() >= self.inner.config.max_sessions {
            return Some(refused(
                "too_many_sessions",
                detail(StatusCode::SERVICE_UNAVAILABLE, "too many sessions"),
            ));
        }
        if sessions.spec_bytes.saturating_add(spec_bytes) > self.inner.config.max_task_spec_bytes {
            return Some(refused(
                "task_spec_full",
                detail(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too much task_spec data held by live sessions",
                ),
            ));
        }
        None
    }

    /// A live session (of environment `env`, when given: a session of another one is not
    /// found), refreshed: its task and where its setup's outcome is. With a store, the
    /// store decides, so a session made on another instance is found here.
    async fn session(
        &self,
        sid: &str,
        env: Option<usize>,
    ) -> Result<Option<(Arc<Value>, Setup)>, StoreError> {
        let Some(store) = &self.inner.store else {
            return Ok(self.touch(sid, env, |s| {
                (Arc::clone(&s.task), Setup::Local(s.setup.clone()))
            }));
        };
        let ttl = self.inner.config.session_timeout;
        let found = store_call(&self.inner.runtime, "session", store.session(sid, ttl));
        Ok(found
            .await?
            .and_then(|record| self.stored_session(sid, env, record)))
    }

    /// A session as the store returned it (of environment `env`, when given: a session of
    /// another one is not found): its task and where its setup's outcome is.
    fn stored_session(
        &self,
        sid: &str,
        env: Option<usize>,
        record: SessionRecord,
    ) -> Option<(Arc<Value>, Setup)> {
        let index = self.env_index(&record.env);
        if index.is_none() || env.is_some_and(|env| Some(env) != index) {
            return None;
        }
        let local = self.touch(sid, None, |s| s.setup.clone());
        let setup = match (local, record.setup) {
            (Some(setup), _) => Setup::Local(setup),
            (None, Some(outcome)) => Setup::Known(outcome),
            (None, None) => Setup::Stored(sid.to_owned()),
        };
        Some((Arc::new(record.task), setup))
    }

    /// Waits for a session's setup; `Err` with its message if it failed.
    async fn ready(&self, setup: Setup) -> Result<(), String> {
        let sid = match setup {
            Setup::Local(setup) => return ready(setup).await,
            Setup::Known(outcome) => return outcome,
            Setup::Stored(sid) => sid,
        };
        let Some(store) = &self.inner.store else {
            return Err("environment setup did not finish".to_owned());
        };
        let poll = Duration::from_millis(100);
        let until = self.inner.runtime.now().saturating_add(SHARED_SETUP_WAIT);
        while self.inner.runtime.now() < until {
            self.inner.runtime.sleep(poll).await;
            let ttl = self.inner.config.session_timeout;
            let found = store_call(&self.inner.runtime, "session", store.session(&sid, ttl));
            match found.await {
                Ok(Some(SessionRecord {
                    setup: Some(outcome),
                    ..
                })) => return outcome,
                Ok(Some(_)) => {}
                Ok(None) => return Err("the session ended during its setup".to_owned()),
                Err(e) => return Err(e.to_string()),
            }
        }
        Err("environment setup did not finish".to_owned())
    }

    /// `/delete`: ends the session, and runs its environment's teardown here.
    async fn delete(&self, sid: &str) -> Result<(), StoreError> {
        let removed = lock(&self.inner.sessions).remove(sid);
        log!(debug, "session deleted");
        let stored = match &self.inner.store {
            Some(store) => {
                let deleted = store.delete_session(sid);
                store_call(&self.inner.runtime, "delete_session", deleted).await?
            }
            None => None,
        };
        if let Some(session) = removed {
            self.teardown(&session.task, session.env);
        } else if let Some(record) = stored
            && let Some(index) = self.env_index(&record.env)
        {
            self.teardown(&record.task, index);
        }
        Ok(())
    }

    fn sweep(&self, sessions: &mut Sessions, now: Instant) {
        let timeout = self.inner.config.session_timeout;
        let expired: Vec<String> = sessions
            .map
            .iter()
            .filter(|(_, s)| now >= s.last_seen + timeout)
            .map(|(sid, _)| sid.clone())
            .collect();
        for sid in expired {
            // With a store, the session may live on at another instance: its teardown
            // waits for a `/delete`.
            log!(debug, session = %sid, "session expired");
            if let Some(session) = sessions.remove(&sid)
                && self.inner.store.is_none()
            {
                self.teardown(&session.task, session.env);
            }
        }
    }

    /// Refreshes a live session (of environment `env`, when given: a session of another
    /// one is not found, nor refreshed) and returns what `take` takes from it.
    fn touch<T>(
        &self,
        sid: &str,
        env: Option<usize>,
        take: impl FnOnce(&Session) -> T,
    ) -> Option<T> {
        let now = self.inner.runtime.now();
        let mut sessions = lock(&self.inner.sessions);
        self.sweep(&mut sessions, now);
        let session = sessions
            .map
            .get_mut(sid)
            .filter(|s| env.is_none_or(|env| s.env == env))?;
        session.last_seen = now;
        Some(take(session))
    }

    /// Runs an environment's teardown for a session that ended, in the background.
    fn teardown(&self, task: &Value, env: usize) {
        if let Some(env) = self.inner.envs.get(env) {
            let done = env.teardown(task);
            self.inner.runtime.spawn(async move {
                // Teardown errors have no client to go to: the log is where they go.
                if let Err(error) = done.await {
                    log!(warn, %error, "environment teardown failed");
                    #[cfg(not(feature = "tracing"))]
                    let _ = error;
                }
            });
        }
    }

    /// A `/call`. Calls refused before they run (no session, unknown tool) get a stream
    /// of `task_id` (an id never stored) and `error`, and take no place in the task
    /// registry, so they cannot evict other clients' cached results. A call past
    /// [`ServerConfig::max_running_calls`] is a 503 (see there for why).
    async fn call(&self, env: usize, sid: &str, call: CallBody) -> Response<OrsBody> {
        let calls = &self.inner.calls;
        let span = CallSpan::new(sid, &call.name, call.task_id.as_deref());
        let refuse = |reason: &'static str, message: &str| {
            span.in_scope(|| {
                refusal(reason, 200);
                response(calls.refuse(message).boxed_unsync())
            })
        };
        // A new call of a known tool with a store: the session is read with the start.
        if call.task_id.is_none()
            && self.inner.store.is_some()
            && let Some(environment) = self.inner.envs.get(env)
            && environment.tools().iter().any(|t| t.name == call.name)
        {
            let environment = Arc::clone(environment);
            return self.start_call(env, sid, call, environment, &span).await;
        }
        let (task, setup) = match self.session(sid, Some(env)).await {
            Ok(Some(session)) => session,
            Ok(None) => return refuse("unknown_session", "Session not found"),
            Err(e) => return unavailable(&e.to_string()),
        };
        let Some(environment) = self.inner.envs.get(env).map(Arc::clone) else {
            return refused("not_found", detail(StatusCode::NOT_FOUND, "Not Found"));
        };
        // A resume (with a task id) reads the task whatever the tool; a new call must name
        // one of the environment's tools.
        if call.task_id.is_none() && !environment.tools().iter().any(|t| t.name == call.name) {
            let message = format!("'{}' is not a valid tool", call.name);
            return refuse("unknown_tool", &message);
        }
        let CallBody {
            name,
            input,
            task_id,
        } = call;
        let input = Value::Object(input);
        // An input its tool's schema refuses is answered as the reference server answers
        // one (`end` with `ok: false`, `Tool input validation error: …`, which the official
        // client raises as a `ToolCallError`), and the tool never runs.
        let invalid = match task_id {
            Some(_) => None,
            None => {
                let schema = self.inner.schemas.get(env).and_then(|s| s.get(&name));
                check_input(schema, &input).err()
            }
        };
        if invalid.is_some() {
            span.in_scope(|| refusal("bad_input", 200));
        }
        let scope = TaskScope::new(sid, name.clone());
        // Built here, run (and so the environment's `call` made) only if a new task starts;
        // a panic in `call` itself is then a panic of the task's future, caught there.
        let run = self.tool_run(environment, task, setup, name, input, invalid);
        match calls
            .try_call_in_span(scope, task_id.as_deref(), run, &span)
            .await
        {
            Ok(body) => response(body.boxed_unsync()),
            Err(e) => not_started(&span, e),
        }
    }

    /// A new call's run: the answer to an input its tool's schema refused (`invalid`: `end`
    /// with `ok: false`, as the reference server answers one), or the tool's, once the
    /// session's setup is ready.
    fn tool_run(
        &self,
        environment: Arc<dyn Environment>,
        task: Arc<Value>,
        setup: Setup,
        name: String,
        input: Value,
        invalid: Option<String>,
    ) -> impl std::future::Future<Output = Result<ssekit::profile::ors::ToolResult, String>>
           + Send
           + 'static {
        let server = self.clone();
        async move {
            if let Some(message) = invalid {
                return Ok(super::environment::tool_error(&message));
            }
            server.ready(setup).await?;
            environment.call(&task, &name, input).await
        }
    }

    /// A new `/call` of a known tool of `environment`, with a store: the call starts in
    /// the store with a read of its session, in one request
    /// ([`Store::start_task_in_session`]), and is then checked against the session as
    /// [`call`](Self::call) checks it before; a session that is not live (or of another
    /// environment) is refused as there, and its task, which never ran, is forgotten. A
    /// call refused before the session was read (busy, draining) reads it as `call` does,
    /// so that a call without a live session is answered `Session not found` either way.
    async fn start_call(
        &self,
        env: usize,
        sid: &str,
        call: CallBody,
        environment: Arc<dyn Environment>,
        span: &CallSpan,
    ) -> Response<OrsBody> {
        let CallBody { name, input, .. } = call;
        let input = Value::Object(input);
        let schema = self.inner.schemas.get(env).and_then(|s| s.get(&name));
        let invalid = check_input(schema, &input).err();
        let scope = TaskScope::new(sid, name.clone());
        let run = |record: SessionRecord| {
            let (task, setup) = self.stored_session(sid, Some(env), record)?;
            if invalid.is_some() {
                span.in_scope(|| refusal("bad_input", 200));
            }
            Some(self.tool_run(environment, task, setup, name, input, invalid))
        };
        let ttl = self.inner.config.session_timeout;
        let calls = &self.inner.calls;
        let refuse = || {
            span.in_scope(|| {
                refusal("unknown_session", 200);
                response(calls.refuse("Session not found").boxed_unsync())
            })
        };
        match calls.try_start_in_session(scope, ttl, run, span).await {
            Ok(Some(body)) => response(body.boxed_unsync()),
            Ok(None) => refuse(),
            Err(e @ (NotStarted::Busy | NotStarted::Draining)) => {
                match self.session(sid, Some(env)).await {
                    Ok(Some(_)) => not_started(span, e),
                    Ok(None) => refuse(),
                    Err(e) => unavailable(&e.to_string()),
                }
            }
            Err(e) => not_started(span, e),
        }
    }

    /// Ends this instance's part in a rolling restart: new calls are answered `503` (the
    /// official client retries them, through the balancer, at another instance), running
    /// tools get up to `deadline` to finish with their results in the store, and then every
    /// open stream ends after a `retry:` line, so that clients come back soon, to another
    /// instance, and resume by `task_id`. Returns how many tools were still running. Stop
    /// accepting connections first; exit once this returns and the connections closed.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{ors::Server, runtime::Runtime};
    /// async fn idle<R: Runtime + Default>() {
    ///     let server = Server::<R>::new(Vec::new());
    ///     assert_eq!(server.shutdown(std::time::Duration::from_secs(30)).await, 0);
    /// }
    /// ```
    pub async fn shutdown(&self, deadline: Duration) -> usize {
        self.inner.calls.drain(deadline).await
    }

    /// The calls this instance keeps (running, and finished within the result TTL) and the
    /// bytes of their results, within [`ServerConfig::max_result_bytes`].
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Server, runtime::Runtime};
    /// fn idle<R: Runtime + Default>() {
    ///     assert_eq!(Server::<R>::new(Vec::new()).kept_results(), (0, 0));
    /// }
    /// ```
    pub fn kept_results(&self) -> (usize, usize) {
        self.inner.calls.kept()
    }

    /// `frames` until [`shutdown`](Self::shutdown) ends the streams (with `retry:` first):
    /// pass an application's own event streams served beside the API through here.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Server, runtime::{Frames, Runtime}};
    /// fn quiet<R: Runtime>(server: &Server<R>) -> Frames {
    ///     server.until_shutdown(Box::pin(futures_lite::stream::empty()))
    /// }
    /// ```
    pub fn until_shutdown(&self, frames: Frames) -> Frames {
        self.inner.calls.until_drained(frames)
    }
}

/// Counts and logs a refusal (see [`refusal`]) and passes its answer on.
fn refused(reason: &'static str, resp: Response<OrsBody>) -> Response<OrsBody> {
    refusal(reason, resp.status().as_u16());
    resp
}

/// A `503` for a request the server cannot serve now because its store is unreachable
/// (the store error was logged and counted where it happened): the official client
/// retries it.
fn unavailable(message: &str) -> Response<OrsBody> {
    refused("store_unavailable", unavailable_detail(message))
}

/// A `503` with `Retry-After: 1`.
fn unavailable_detail(message: &str) -> Response<OrsBody> {
    let mut resp = detail(StatusCode::SERVICE_UNAVAILABLE, message);
    resp.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    resp
}

/// The answer to a call that did not start (a 503), in its span.
fn not_started(span: &CallSpan, e: NotStarted) -> Response<OrsBody> {
    match e {
        NotStarted::Busy => span.in_scope(busy),
        NotStarted::Draining => span.in_scope(|| {
            refused(
                "shutting_down",
                unavailable_detail(&NotStarted::Draining.to_string()),
            )
        }),
        NotStarted::Store(e) => span.in_scope(|| unavailable(&e.to_string())),
    }
}

/// A `/call` refused because [`ServerConfig::max_running_calls`] tools are running: 503,
/// which the official client retries with backoff (see there).
fn busy() -> Response<OrsBody> {
    refused("busy", unavailable_detail(BUSY))
}

fn missing_sid() -> Response<OrsBody> {
    refused(
        "missing_session_id",
        detail(StatusCode::BAD_REQUEST, "X-Session-ID header is required"),
    )
}

#[cfg(feature = "hyper")]
impl<R: Runtime> hyper::service::Service<Request<hyper::body::Incoming>> for Server<R> {
    type Response = Response<OrsBody>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>,
    >;

    fn call(&self, req: Request<hyper::body::Incoming>) -> Self::Future {
        let server = self.clone();
        Box::pin(async move { Ok(server.handle(req).await) })
    }
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_match_only_when_equal() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(same_secret(b"", b""));
        for other in [&b"s3creT"[..], b"S3cret", b"s3cre", b"s3crets", b""] {
            assert!(!same_secret(other, b"s3cret"), "{other:?}");
        }
    }
}

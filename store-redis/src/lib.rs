//! # ssekit-redis — several ssekit server instances on one Redis
//!
//! [`RedisStore`] implements [`Store`]: the sessions, ORS task logs and broadcast event logs
//! that must outlive one process, so that instances behind a load balancer serve one API. A
//! reconnect (by ORS `task_id` or by `Last-Event-ID`) lands on any instance and finds what
//! it needs; a call whose instance dies ends in an ORS `error` event for its clients, never
//! in a fabricated result or a second run of the tool.
//!
//! ```text
//!  instance A ──┐                       ┌── instance B
//!   start      ─┼─▶ EVALSHA: GETEX session, SET lease, task PX
//!   renew      ─┼─▶ PEXPIRE lease       │   read_task ◀─ XRANGE log, EXISTS lease
//!   append     ─┼─▶ EVALSHA: XADD log … PEXPIRE … PUBLISH changed ─▶ changed() wakes B's followers
//! ```
//!
//! **Layout.** Every key starts with the prefix (default `ssekit:`) and has a TTL:
//!
//! | key | type | holds | expires |
//! |---|---|---|---|
//! | `{p}session:{sid}` | string | the session as JSON ([`SessionRecord`]) | the session timeout after its last use (`GETEX … PX`) |
//! | `{p}task:{id}` | string | who may resume the task ([`TaskScope`]) | lease + 60 s while running; the result TTL once finished |
//! | `{p}lease:{id}` | string | `1` while the producing instance renews it | the lease (3 s by default); left to lapse at the end (the terminal frame tells) |
//! | `{p}log:{id}` | stream | one entry per frame (`f`), the terminal one marked `t` | as the task key |
//! | `{p}events:{name}` | stream | a broadcast's events (`f`), ids given by Redis | `MAXLEN ~` the replay size; the TTL after the last publish |
//!
//! **Round trips.** An ORS call costs 2 on the happy path, each one script: the start
//! (`GETEX` of the session, then, only if it is live, `SET` of the lease and of the scope)
//! and the end (the frames, the TTLs and the `PUBLISH`). A broadcast event costs one (a
//! script); subscribers of one stream on one instance share their reads (one `XRANGE` for
//! all those at the same position). Scripts run by `EVALSHA`, and by `EVAL` when Redis lost them.
//! [`RedisStore::round_trips`] counts them.
//!
//! Changes are announced on the channel `{p}changed` (the payload names the log), which
//! each instance subscribes to once; a follower also re-reads every third of the lease, so
//! a lost notification (Redis restarting) delays it, never stalls it.
//!
//! **Failures.** Every request times out ([`RedisStore::connect`]'s `timeout`, 2 s by
//! default) into a [`StoreError`]; the connection is re-established in the background, so
//! when Redis comes back new requests work without a restart. A password in the URL never
//! appears in an error or in [`RedisStore`]'s `Debug` output.
//!
//! **Logs** (feature `tracing`): the connection lost (`warn`, once until it is back) and
//! back (`info`), the change subscription lost (`warn`) and back (`info`), and each failed
//! request at `debug`: the ORS server logs those at `warn` with the operation, and counts
//! them (`ssekit_store_errors_total{op}`, feature `metrics`), so they are not told twice.
//!
//! # Example
//! An ORS server on the runtime `R` (`ssekit_hyper::runtime::Tokio`,
//! `ssekit_smol::runtime::Smol`) whose state is in Redis:
//! ```no_run
//! use std::sync::Arc;
//! use ssekit_http::{ors::{Server, ServerConfig}, runtime::Runtime, store::StoreError};
//! use ssekit_redis::RedisStore;
//! async fn server<R: Runtime + Default>() -> Result<Server<R>, StoreError> {
//!     let store = RedisStore::connect("redis://127.0.0.1:6379/0", R::default()).await?;
//!     let config = ServerConfig::default().store(Arc::new(store));
//!     Ok(Server::with_config(Vec::new(), config))
//! }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Value};
use ssekit_http::runtime::Runtime;
use ssekit_http::store::{
    Changed, EventsRead, Log, LoggedEvent, SessionRecord, Store, StoreError, StoreFuture, TaskLog,
    TaskScope, Waiters,
};

/// A `tracing` event at the given level; nothing without the `tracing` feature (the
/// arguments are not evaluated then).
macro_rules! log {
    ($level:ident, $($arg:tt)+) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::$level!($($arg)+);
        }
    }};
}

/// How long a task's scope and log outlive its last lease renewal: a client resuming within
/// this after the producing instance died learns that the task was lost (rather than that
/// its id is unknown).
pub const LOST_GRACE: Duration = Duration::from_secs(60);

/// The default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The frames read from a log in one request.
const READ_BATCH: usize = 1024;

/// Appends a task's frames (`ARGV[5..]`) to its log (`KEYS[1]`) and announces it, in one
/// atomic request. Finished (`ARGV[2] == "1"`): the last frame is marked terminal and the
/// log and the scope (`KEYS[2]`) kept for `ARGV[1]` ms; the lease is left to lapse (a
/// finished log says the task ended whatever the lease). Unfinished: the log gets the
/// scope's TTL, so that it never lives without one.
const APPEND: &str = r"
local last = #ARGV
for i = 5, last do
  if ARGV[2] == '1' and i == last then
    redis.call('XADD', KEYS[1], '*', 'f', ARGV[i], 't', '1')
  else
    redis.call('XADD', KEYS[1], '*', 'f', ARGV[i])
  end
end
if ARGV[2] == '1' then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
else
  local ttl = redis.call('PTTL', KEYS[2])
  redis.call('PEXPIRE', KEYS[1], ttl > 0 and ttl or 1)
end
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
";

/// Starts a task in a live session, in one atomic request: refreshes the session
/// (`KEYS[1]`, for `ARGV[1]` ms) and, if it is live, writes the lease (`KEYS[2]`, `ARGV[2]`
/// ms) then the scope (`KEYS[3]`, `ARGV[4]`, kept `ARGV[3]` ms); the session's record, or
/// nil and nothing written.
const START: &str = r"
local record = redis.call('GETEX', KEYS[1], 'PX', ARGV[1])
if not record then
  return false
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[3])
return record
";

/// Appends a broadcast event (`ARGV[5]`) to its log (`KEYS[1]`, trimmed to about `ARGV[1]`
/// entries, kept `ARGV[2]` ms) and announces it, in one atomic request: the event's id.
const PUBLISH: &str = r"
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'f', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return id
";

/// A Lua script run by its SHA1 (`EVALSHA`), sent whole (`EVAL`, which caches it again)
/// when Redis no longer knows it (`NOSCRIPT`: Redis restarted, or `SCRIPT FLUSH`).
struct Script {
    source: &'static str,
    /// The SHA1 Redis gave it (`SCRIPT LOAD` at connect time).
    sha: String,
}

/// The reads of a broadcast log in flight, by (stream, after, limit): subscribers of one
/// stream at one position share one `XRANGE`. A change notice for the stream forgets its
/// flights (a read joined after the notice is a new one, so it sees the change).
type Flights = Mutex<HashMap<(String, String, usize), Arc<tokio::sync::OnceCell<EventsRead>>>>;

type Sleeper = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The shared state of several ssekit servers, on Redis (see the [crate docs](crate)).
///
/// # Example
/// ```no_run
/// use ssekit_http::{runtime::Runtime, store::StoreError};
/// async fn connect<R: Runtime>(runtime: R) -> Result<(), StoreError> {
///     let store = ssekit_redis::RedisStore::connect("redis://:s3cret@127.0.0.1:6379", runtime).await?;
///     assert_eq!(store.url(), "redis://:***@127.0.0.1:6379");
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    conn: ConnectionManager,
    prefix: String,
    timeout: Duration,
    /// The URL with its password replaced by `***`.
    shown_url: String,
    /// The password, to scrub from error messages.
    password: Option<String>,
    waiters: Arc<Waiters>,
    sleep: Sleeper,
    /// The last request failed for want of a connection (told once, until one succeeds).
    down: AtomicBool,
    /// Requests sent (a pipeline, a `MULTI … EXEC` block or a script is one).
    round_trips: AtomicU64,
    start: Script,
    append: Script,
    publish: Script,
    flights: Arc<Flights>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.inner.shown_url)
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

/// The URL with the password of its userinfo replaced by `***`, and the password.
fn redact(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_owned(), None);
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return (url.to_owned(), None);
    };
    let userinfo = &rest[..at];
    match userinfo.split_once(':') {
        Some((user, password)) if !password.is_empty() => (
            format!("{scheme}://{user}:***{}", &rest[at..]),
            Some(password.to_owned()),
        ),
        _ => (url.to_owned(), None),
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://[:PASSWORD@]HOST[:PORT][/DB]`, or `rediss://` with the
    /// `redis` crate's TLS), keys under `ssekit:`, requests timed out after
    /// [`DEFAULT_TIMEOUT`], on `runtime` (its timers; the Redis connections run on the
    /// runtime the `redis` crate finds: tokio inside a tokio runtime, else smol). Fails if
    /// Redis does not answer a `PING` in time; later outages are per request.
    ///
    /// # Example
    /// See [`RedisStore`].
    pub async fn connect<R: Runtime>(url: &str, runtime: R) -> Result<Self, StoreError> {
        RedisStore::connect_with(url, "ssekit:", DEFAULT_TIMEOUT, runtime).await
    }

    /// As [`connect`](Self::connect), with every key under `prefix` (several deployments
    /// on one Redis) and requests timed out after `timeout`.
    ///
    /// # Example
    /// ```no_run
    /// use std::time::Duration;
    /// use ssekit_http::{runtime::Runtime, store::StoreError};
    /// use ssekit_redis::RedisStore;
    /// async fn connect<R: Runtime>(runtime: R) -> Result<RedisStore, StoreError> {
    ///     RedisStore::connect_with("redis://127.0.0.1", "tools-eu:", Duration::from_secs(1), runtime).await
    /// }
    /// ```
    pub async fn connect_with<R: Runtime>(
        url: &str,
        prefix: &str,
        timeout: Duration,
        runtime: R,
    ) -> Result<Self, StoreError> {
        let (shown_url, password) = redact(url);
        let scrub = |e: redis::RedisError| scrubbed(&e.to_string(), password.as_deref());
        let client = Client::open(url)
            .map_err(|e| StoreError::new(format!("invalid Redis URL {shown_url}: {}", scrub(e))))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| StoreError::new(format!("{shown_url}: {}", scrub(e))))?;
        let sleep: Sleeper = {
            let runtime = runtime.clone();
            Arc::new(move |d| {
                let timer = runtime.sleep(d);
                Box::pin(async move {
                    timer.await;
                })
            })
        };
        // Loaded here: the SHA1s come from Redis (no hashing in this crate).
        let mut load = redis::pipe();
        load.cmd("PING");
        for source in [START, APPEND, PUBLISH] {
            load.cmd("SCRIPT").arg("LOAD").arg(source);
        }
        let mut conn_for_load = conn.clone();
        let scrub_load = |e: redis::RedisError| {
            StoreError::new(format!(
                "{shown_url}: {}",
                scrubbed(&e.to_string(), password.as_deref())
            ))
        };
        let timer = sleep(timeout);
        let loaded = futures_lite::future::or(
            async {
                Some(
                    load.query_async::<(String, String, String, String)>(&mut conn_for_load)
                        .await,
                )
            },
            async {
                timer.await;
                None
            },
        )
        .await
        .ok_or_else(|| StoreError::new(format!("{shown_url}: no answer within {timeout:?}")))?;
        let (pong, start_sha, append_sha, publish_sha) = loaded.map_err(scrub_load)?;
        if pong != "PONG" {
            return Err(StoreError::new(format!(
                "{shown_url}: PING answered {pong:?}"
            )));
        }
        let store = RedisStore {
            inner: Arc::new(Inner {
                conn,
                prefix: prefix.to_owned(),
                timeout,
                shown_url,
                password,
                waiters: Arc::default(),
                sleep,
                down: AtomicBool::new(false),
                round_trips: AtomicU64::new(1),
                start: Script {
                    source: START,
                    sha: start_sha,
                },
                append: Script {
                    source: APPEND,
                    sha: append_sha,
                },
                publish: Script {
                    source: PUBLISH,
                    sha: publish_sha,
                },
                flights: Arc::default(),
            }),
        };
        runtime.spawn(listen(
            client,
            format!("{prefix}changed"),
            Arc::downgrade(&store.inner.waiters),
            Arc::downgrade(&store.inner.flights),
            Arc::clone(&store.inner.sleep),
        ));
        log!(info, url = %store.inner.shown_url, prefix, "connected to Redis");
        Ok(store)
    }

    /// The URL, its password replaced by `***`.
    ///
    /// # Example
    /// See [`RedisStore`].
    pub fn url(&self) -> &str {
        &self.inner.shown_url
    }

    /// The requests this store has sent to Redis so far, each one round trip: a single
    /// command, a pipeline, a `MULTI … EXEC` block or a script (its reload after a
    /// `NOSCRIPT` counts as a second). For measuring what an operation costs.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{runtime::Runtime, store::{Store, StoreError}};
    /// async fn cost<R: Runtime>(runtime: R) -> Result<u64, StoreError> {
    ///     let store = ssekit_redis::RedisStore::connect("redis://127.0.0.1", runtime).await?;
    ///     let before = store.round_trips();
    ///     store.task_scope("some-task").await?;
    ///     Ok(store.round_trips() - before) // 1
    /// }
    /// ```
    pub fn round_trips(&self) -> u64 {
        self.inner.round_trips.load(Ordering::Relaxed)
    }

    fn key(&self, kind: &str, name: &str) -> String {
        format!("{}{kind}:{name}", self.inner.prefix)
    }

    fn channel(&self) -> String {
        format!("{}changed", self.inner.prefix)
    }

    fn error(&self, message: impl std::fmt::Display) -> StoreError {
        StoreError::new(format!(
            "{}: {}",
            self.inner.shown_url,
            scrubbed(&message.to_string(), self.inner.password.as_deref())
        ))
    }

    /// Runs `request` with the timeout.
    async fn timed<T>(
        &self,
        request: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        let timer = (self.inner.sleep)(self.inner.timeout);
        let timeout = self.inner.timeout;
        let timed_out = async move {
            timer.await;
            Err((true, format!("no answer within {timeout:?}")))
        };
        let answered = async {
            request.await.map_err(|e| {
                let connection = e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_timeout();
                (connection, e.to_string())
            })
        };
        match futures_lite::future::or(answered, timed_out).await {
            Ok(answer) => {
                if self.inner.down.swap(false, Ordering::Relaxed) {
                    log!(info, url = %self.inner.shown_url, "Redis answers again");
                }
                Ok(answer)
            }
            Err((connection, message)) => {
                let e = self.error(message);
                let newly_down = connection && !self.inner.down.swap(true, Ordering::Relaxed);
                #[cfg(feature = "tracing")]
                if newly_down {
                    tracing::warn!(
                        error = %e,
                        "connection to Redis lost: requests fail until it is back \
                         (reconnecting in the background)"
                    );
                } else {
                    tracing::debug!(error = %e, "Redis request failed");
                }
                #[cfg(not(feature = "tracing"))]
                let _ = newly_down;
                Err(e)
            }
        }
    }

    async fn run<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, StoreError> {
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.inner.conn.clone();
        self.timed(async move { cmd.query_async(&mut conn).await })
            .await
    }

    async fn run_pipe<T: redis::FromRedisValue>(
        &self,
        pipe: redis::Pipeline,
    ) -> Result<T, StoreError> {
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.inner.conn.clone();
        self.timed(async move { pipe.query_async(&mut conn).await })
            .await
    }

    /// Runs `script` with `keys` and `args`: `EVALSHA`, then `EVAL` if Redis answers
    /// `NOSCRIPT`.
    async fn run_script<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Result<T, StoreError> {
        let eval = |name: &str, body: &str| {
            let mut cmd = redis::cmd(name);
            cmd.arg(body).arg(keys.len()).arg(keys);
            for arg in args {
                cmd.arg(*arg);
            }
            cmd
        };
        self.inner.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.inner.conn.clone();
        let by_sha = eval("EVALSHA", &script.sha);
        let first = self
            .timed(async move {
                match by_sha.query_async::<T>(&mut conn).await {
                    Ok(answer) => Ok(Some(answer)),
                    Err(e)
                        if e.kind()
                            == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                    {
                        Ok(None)
                    }
                    Err(e) => Err(e),
                }
            })
            .await?;
        match first {
            Some(answer) => Ok(answer),
            None => self.run(eval("EVAL", script.source)).await,
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        raw: &[u8],
    ) -> Result<T, StoreError> {
        serde_json::from_slice(raw)
            .map_err(|e| self.error(format!("the stored {what} is not what ssekit writes: {e}")))
    }
}

/// `message` without `password` in it.
fn scrubbed(message: &str, password: Option<&str>) -> String {
    match password {
        Some(password) => message.replace(password, "***"),
        None => message.to_owned(),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// One stream entry: its id, and its field/value pairs.
type Entry = (String, Vec<(Vec<u8>, Vec<u8>)>);

/// The entries of an `XRANGE` reply.
fn entries(reply: Value) -> Option<Vec<Entry>> {
    let Value::Array(items) = reply else {
        return matches!(reply, Value::Nil).then(Vec::new);
    };
    items
        .into_iter()
        .map(|item| {
            let Value::Array(mut pair) = item else {
                return None;
            };
            if pair.len() != 2 {
                return None;
            }
            let fields = pair.pop()?;
            let id = match pair.pop()? {
                Value::BulkString(id) => String::from_utf8(id).ok()?,
                Value::SimpleString(id) => id,
                _ => return None,
            };
            let Value::Array(fields) = fields else {
                return None;
            };
            let mut out = Vec::with_capacity(fields.len() / 2);
            let mut it = fields.into_iter();
            while let (Some(Value::BulkString(k)), Some(Value::BulkString(v))) =
                (it.next(), it.next())
            {
                out.push((k, v));
            }
            Some((id, out))
        })
        .collect()
}

fn field<'a>(fields: &'a [(Vec<u8>, Vec<u8>)], name: &[u8]) -> Option<&'a [u8]> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_slice())
}

impl Store for RedisStore {
    fn create_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let json = serde_json::to_vec(record).map_err(|e| self.error(e))?;
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.key("session", sid))
                .arg(json)
                .arg("NX")
                .arg("PX")
                .arg(millis(ttl));
            let reply: Value = self.run(cmd).await?;
            Ok(matches!(reply, Value::Okay)
                || matches!(&reply, Value::SimpleString(s) if s == "OK"))
        })
    }

    fn update_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_vec(record).map_err(|e| self.error(e))?;
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.key("session", sid))
                .arg(json)
                .arg("XX")
                .arg("KEEPTTL");
            let _: Value = self.run(cmd).await?;
            Ok(())
        })
    }

    fn session<'a>(
        &'a self,
        sid: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GETEX");
            cmd.arg(self.key("session", sid)).arg("PX").arg(millis(ttl));
            let raw: Option<Vec<u8>> = self.run(cmd).await?;
            raw.map(|raw| self.decode("session", &raw)).transpose()
        })
    }

    fn delete_session<'a>(&'a self, sid: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GETDEL");
            cmd.arg(self.key("session", sid));
            let raw: Option<Vec<u8>> = self.run(cmd).await?;
            raw.map(|raw| self.decode("session", &raw)).transpose()
        })
    }

    fn start_task<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_vec(scope).map_err(|e| self.error(e))?;
            // No MULTI: each SET gives its key a TTL by itself, and the lease goes first,
            // so whoever finds the scope finds the lease too.
            let mut pipe = redis::pipe();
            pipe.cmd("SET")
                .arg(self.key("lease", task_id))
                .arg(1)
                .arg("PX")
                .arg(millis(lease))
                .ignore()
                .cmd("SET")
                .arg(self.key("task", task_id))
                .arg(json)
                .arg("PX")
                .arg(millis(lease + LOST_GRACE))
                .ignore();
            let _: Value = self.run_pipe(pipe).await?;
            Ok(())
        })
    }

    /// One script (`START`): `GETEX` of the session, then, if it is live, `SET` of the
    /// lease and of the scope: one round trip where [`session`](Store::session) and
    /// [`start_task`](Store::start_task) are two.
    fn start_task_in_session<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
        session_ttl: Duration,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let json = serde_json::to_vec(scope).map_err(|e| self.error(e))?;
            let keys = [
                self.key("session", &scope.session),
                self.key("lease", task_id),
                self.key("task", task_id),
            ];
            let (ttl, lease, keep) = (
                millis(session_ttl).to_string(),
                millis(lease).to_string(),
                millis(lease + LOST_GRACE).to_string(),
            );
            let args: [&[u8]; 4] = [ttl.as_bytes(), lease.as_bytes(), keep.as_bytes(), &json];
            let keys = [keys[0].as_str(), keys[1].as_str(), keys[2].as_str()];
            let raw: Option<Vec<u8>> = self.run_script(&self.inner.start, &keys, &args).await?;
            raw.map(|raw| self.decode("session", &raw)).transpose()
        })
    }

    fn renew_task<'a>(&'a self, task_id: &'a str, lease: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let keep = millis(lease + LOST_GRACE);
            let mut pipe = redis::pipe();
            pipe.cmd("PEXPIRE")
                .arg(self.key("lease", task_id))
                .arg(millis(lease))
                .ignore()
                .cmd("PEXPIRE")
                .arg(self.key("task", task_id))
                .arg(keep)
                .ignore()
                .cmd("PEXPIRE")
                .arg(self.key("log", task_id))
                .arg(keep)
                .ignore();
            let _: Value = self.run_pipe(pipe).await?;
            Ok(())
        })
    }

    fn append_task<'a>(
        &'a self,
        task_id: &'a str,
        frames: &'a [Bytes],
        finished: bool,
        result_ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (log, task) = (self.key("log", task_id), self.key("task", task_id));
            let (ttl, channel, name) = (
                millis(result_ttl).to_string(),
                self.channel(),
                Log::Task(task_id).name(),
            );
            let mut args: Vec<&[u8]> = Vec::with_capacity(4 + frames.len());
            args.extend([
                ttl.as_bytes(),
                if finished { b"1" } else { b"0" },
                channel.as_bytes(),
                name.as_bytes(),
            ]);
            args.extend(frames.iter().map(|f| f.as_ref()));
            let _: Value = self
                .run_script(&self.inner.append, &[&log, &task], &args)
                .await?;
            Ok(())
        })
    }

    fn task_scope<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskScope>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.key("task", task_id));
            let raw: Option<Vec<u8>> = self.run(cmd).await?;
            raw.map(|raw| self.decode("task", &raw)).transpose()
        })
    }

    fn read_task<'a>(&'a self, task_id: &'a str, after: &'a str) -> StoreFuture<'a, TaskLog> {
        Box::pin(async move {
            let start = if after == "0" {
                "-".to_owned()
            } else {
                format!("({after}")
            };
            let mut pipe = redis::pipe();
            pipe.cmd("XRANGE")
                .arg(self.key("log", task_id))
                .arg(start)
                .arg("+")
                .arg("COUNT")
                .arg(READ_BATCH)
                .cmd("EXISTS")
                .arg(self.key("lease", task_id));
            let (range, lease): (Value, i64) = self.run_pipe(pipe).await?;
            let entries =
                entries(range).ok_or_else(|| self.error("a task log that is not a stream"))?;
            let mut log = TaskLog {
                frames: Vec::with_capacity(entries.len()),
                next: after.to_owned(),
                finished: false,
                producer_alive: lease > 0,
            };
            for (id, fields) in entries {
                if let Some(frame) = field(&fields, b"f") {
                    log.frames.push(Bytes::copy_from_slice(frame));
                }
                log.finished |= field(&fields, b"t").is_some();
                log.next = id;
            }
            // A full batch: more may follow; the caller reads again at once.
            if log.frames.len() == READ_BATCH && !log.finished {
                log.producer_alive = true;
            }
            Ok(log)
        })
    }

    fn publish<'a>(
        &'a self,
        stream: &'a str,
        frame: Bytes,
        max_events: usize,
        ttl: Duration,
    ) -> StoreFuture<'a, String> {
        Box::pin(async move {
            let key = self.key("events", stream);
            let (max, ttl, channel, name) = (
                max_events.max(1).to_string(),
                millis(ttl).to_string(),
                self.channel(),
                Log::Events(stream).name(),
            );
            let args: [&[u8]; 5] = [
                max.as_bytes(),
                ttl.as_bytes(),
                channel.as_bytes(),
                name.as_bytes(),
                frame.as_ref(),
            ];
            self.run_script(&self.inner.publish, &[&key], &args).await
        })
    }

    fn read_events<'a>(
        &'a self,
        stream: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventsRead> {
        Box::pin(async move {
            let key = self.key("events", stream);
            let Some(after) = after else {
                let mut cmd = redis::cmd("XREVRANGE");
                cmd.arg(&key).arg("+").arg("-").arg("COUNT").arg(1);
                let reply: Value = self.run(cmd).await?;
                let last = entries(reply)
                    .and_then(|e| e.into_iter().next())
                    .map_or_else(|| "0-0".to_owned(), |(id, _)| id);
                return Ok(EventsRead {
                    events: Vec::new(),
                    last,
                    gap: false,
                });
            };
            let flight = (stream.to_owned(), after.to_owned(), limit);
            let cell = {
                let mut flights = self
                    .inner
                    .flights
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                Arc::clone(flights.entry(flight.clone()).or_default())
            };
            let read = cell
                .get_or_try_init(|| self.read_events_after(&key, after, limit))
                .await
                .cloned();
            let mut flights = self
                .inner
                .flights
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if flights.get(&flight).is_some_and(|f| Arc::ptr_eq(f, &cell)) {
                flights.remove(&flight);
            }
            read
        })
    }

    fn changed(&self, log: Log<'_>) -> Changed {
        self.inner.waiters.wait(log.name())
    }
}

impl RedisStore {
    /// [`Store::read_events`] after `after`, from Redis.
    async fn read_events_after(
        &self,
        key: &str,
        after: &str,
        limit: usize,
    ) -> Result<EventsRead, StoreError> {
        {
            // From `after` itself (inclusive): its presence proves that nothing between it
            // and the next events was trimmed (Redis trims from the head).
            let from_start = after == "0-0";
            let mut cmd = redis::cmd("XRANGE");
            cmd.arg(key)
                .arg(if from_start { "-" } else { after })
                .arg("+")
                .arg("COUNT")
                .arg(limit.max(1) + usize::from(!from_start));
            let reply: Value = self.run(cmd).await?;
            let mut entries =
                entries(reply).ok_or_else(|| self.error("an event log that is not a stream"))?;
            let mut gap = false;
            if !from_start {
                match entries.first() {
                    Some((id, _)) if id == after => {
                        entries.remove(0);
                    }
                    Some(_) => gap = true,
                    None => {}
                }
            }
            let mut read = EventsRead {
                events: Vec::with_capacity(entries.len()),
                last: after.to_owned(),
                gap,
            };
            for (id, fields) in entries {
                if let Some(frame) = field(&fields, b"f") {
                    read.events.push(LoggedEvent {
                        id: id.clone(),
                        frame: Bytes::copy_from_slice(frame),
                    });
                }
                read.last = id;
            }
            Ok(read)
        }
    }
}

/// The instance's subscription to `channel`: wakes the waiters of each log named there,
/// and every waiter when the subscription breaks (they re-read); resubscribes until the
/// store is dropped.
async fn listen(
    client: Client,
    channel: String,
    waiters: std::sync::Weak<Waiters>,
    flights: std::sync::Weak<Flights>,
    sleep: Sleeper,
) {
    // A read in flight may predate the change: later readers start their own.
    let forget = |name: Option<&str>| {
        if let Some(flights) = flights.upgrade() {
            let mut flights = flights.lock().unwrap_or_else(PoisonError::into_inner);
            match name.and_then(|n| n.strip_prefix("events:")) {
                Some(stream) => flights.retain(|(s, _, _), _| s != stream),
                None if name.is_none() => flights.clear(),
                None => {}
            }
        }
    };
    use futures_lite::StreamExt;
    // Whether the subscription broke (told once, until it is back).
    let mut lost = false;
    loop {
        if let Ok(mut pubsub) = client.get_async_pubsub().await
            && pubsub.subscribe(&channel).await.is_ok()
        {
            if lost {
                log!(info, channel, "Redis change subscription back");
                lost = false;
            } else {
                log!(debug, channel, "subscribed to Redis changes");
            }
            let mut messages = pubsub.on_message();
            while let Some(message) = messages.next().await {
                let Some(waiters) = waiters.upgrade() else {
                    return;
                };
                if let Ok(name) = std::str::from_utf8(message.get_payload_bytes()) {
                    forget(Some(name));
                    waiters.wake(name);
                }
            }
        }
        forget(None);
        match waiters.upgrade() {
            Some(waiters) => waiters.wake_all(),
            None => return,
        }
        if !lost {
            lost = true;
            log!(
                warn,
                channel,
                "Redis change subscription lost: resubscribing; followers re-read on their \
                 own meanwhile (every third of the lease)"
            );
        }
        sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_urls() {
        assert_eq!(
            redact("redis://:s3cret@10.0.0.1:6379/2"),
            (
                "redis://:***@10.0.0.1:6379/2".to_owned(),
                Some("s3cret".to_owned())
            )
        );
        assert_eq!(
            redact("redis://user:p@ss@host/0"),
            (
                "redis://user:***@host/0".to_owned(),
                Some("p@ss".to_owned())
            )
        );
        assert_eq!(redact("redis://host:6379").0, "redis://host:6379");
        assert_eq!(redact("redis://user@host").0, "redis://user@host");
        assert_eq!(
            scrubbed("auth p@ss failed", Some("p@ss")),
            "auth *** failed"
        );
    }

    #[test]
    fn stream_replies_parse_and_bad_ones_do_not() {
        let reply = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"1-0".to_vec()),
            Value::Array(vec![
                Value::BulkString(b"f".to_vec()),
                Value::BulkString(b"data: x\n\n".to_vec()),
                Value::BulkString(b"t".to_vec()),
                Value::BulkString(b"1".to_vec()),
            ]),
        ])]);
        let parsed = entries(reply).unwrap();
        assert_eq!(parsed[0].0, "1-0");
        assert_eq!(field(&parsed[0].1, b"f"), Some(&b"data: x\n\n"[..]));
        assert!(field(&parsed[0].1, b"t").is_some());
        assert_eq!(entries(Value::Nil), Some(Vec::new()));
        assert_eq!(entries(Value::Int(3)), None);
        assert_eq!(entries(Value::Array(vec![Value::Int(1)])), None);
    }
}

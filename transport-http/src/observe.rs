//! What an operator sees: `tracing` spans and events (feature `tracing`) and metrics through
//! the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`).
//!
//! Both are off by default and cost nothing then: the crate's logging macros expand to
//! nothing and its meters are zero-sized. With them on, a server built on ssekit (or
//! `ssekit serve`) tells what it decided and counts what it did; the application installs
//! the subscriber and the exporter it already uses (`tracing-subscriber`, OpenTelemetry,
//! `metrics-exporter-prometheus`, ...). ssekit never installs one itself. Mounted in axum,
//! an `SseBody` made in a handler writes its access-log line in the span of tower-http's
//! `TraceLayer`, as it does in `serve`'s request span: no layer of ssekit's is needed.
//!
//! # Levels
//! - `info`: an access log worth keeping, one line per response stream at its end (target
//!   `ssekit::access`: duration, events, bytes, keep-alives, why it ended), and one per ORS
//!   call at its end.
//! - `warn`: what an operator must act on: a client's failed attempt (with the cause and the
//!   wait), a client that gives up, a store error, a slow subscriber cut off, an accept error.
//! - `debug`: every other decision (a connection accepted or closed, a request and its
//!   route, a redirect followed, a replay gap, a call resumed).
//!
//! # Metrics
//! Names follow Prometheus' conventions (`_total` for counters, base units); each is a
//! constant of this module, and [`describe`] registers their help texts with the installed
//! recorder.
//!
//! | name | kind | labels | what it counts |
//! |---|---|---|---|
//! | [`CONNECTIONS_OPEN`] | gauge | | connections being served by `serve*` |
//! | [`CONNECTIONS_TOTAL`] | counter | | connections accepted |
//! | [`ACCEPT_ERRORS_TOTAL`] | counter | | failed `accept` calls (out of file descriptors, ...) |
//! | [`CONNECTIONS_SHED_TOTAL`] | counter | | connections over `ServeOptions::max_connections`, answered `503` (or closed, over TLS) at once |
//! | [`CONNECTIONS_EXPIRED_TOTAL`] | counter | `reason` (`head`: no request head within `request_head_timeout` of accept; `idle`: no request in flight for `idle_timeout`) | connections the server closed for outliving a limit |
//! | [`STREAMS_OPEN`] | gauge | | `SseBody` response streams alive |
//! | [`STREAMS_TOTAL`] | counter | | response streams started |
//! | [`EVENTS_TOTAL`] | counter | | messages written to streams (events, comments, `retry:`) |
//! | [`BYTES_TOTAL`] | counter | | bytes written to streams |
//! | [`KEEPALIVES_TOTAL`] | counter | | keep-alive comments written |
//! | [`SLOW_CONSUMERS_TOTAL`] | counter | `action` (`cut`, `gap`, `full`) | a client cut off for a full queue ([`Overflow::Disconnect`](crate::server::Overflow)); an event dropped for one (`Overflow::Gap`); a plain `Sender::try_send` refused for one |
//! | [`BROADCAST_SUBSCRIBERS`] | gauge | | broadcast subscribers connected |
//! | [`REPLAY_GAPS_TOTAL`] | counter | | `Last-Event-ID`s older than the replay buffer |
//! | [`REFUSED_TOTAL`] | counter | `reason` | requests the ORS server refused (`unauthorized` 401; `too_large` 413; `bad_input` 400/422; `missing_session_id` 400; `session_exists` 400; `unknown_session`, `unknown_environment`, `not_found` 404; `setup_failed` 500; `busy`, `shutting_down`, `store_unavailable`, `too_many_sessions`, `task_spec_full` 503; and, in a `/call` stream's `error` event, `unknown_session`, `unknown_tool`, `unknown_task`) |
//! | [`ORS_CALLS_RUNNING`] | gauge | | ORS tool calls running |
//! | [`ORS_CALLS_TOTAL`] | counter | `outcome` (`finished`, `error`, `lost`) | ORS calls ended (`lost`: a tool's task dropped unfinished, or, with a shared store, a call found lost by a stream following it from another instance) |
//! | [`ORS_RESUMES_TOTAL`] | counter | | ORS calls resumed by `task_id` |
//! | [`ORS_RESULT_BYTES`] | gauge | | bytes of finished results kept for resumption |
//! | [`ORS_RESULT_EVICTIONS_TOTAL`] | counter | | finished results dropped for room before their TTL (only ever for a newer result of the same session) |
//! | [`ORS_RESULTS_NOT_KEPT_TOTAL`] | counter | `reason` (`session_bytes`, `bytes`, `results`) | ORS results not kept for resumption, sent only to the call's own stream: past the session's byte budget, or no room in the whole cache (bytes, results) without evicting other sessions' |
//! | [`STORE_ERRORS_TOTAL`] | counter | `op` (the `Store` method: `session`, `create_session`, `update_session`, `delete_session`, `start_task`, `start_task_in_session`, `renew_task`, `append_task`, `task_scope`, `read_task`, `publish`, `read_events`) | failed calls to the shared store |
//! | [`STORE_SECONDS`] | histogram | `op` | how long the ORS server's calls to the shared store took (on its runtime's clock) |
//! | [`CLIENT_ATTEMPTS_TOTAL`] | counter | `outcome` (`connected`, `failed`, `refused`) | a client's connection attempts |
//! | [`CLIENT_GIVE_UPS_TOTAL`] | counter | | clients that stopped for good on an error |
//!
//! # Example
//! ```
//! // After installing a recorder (an exporter); without the `metrics` feature, a no-op:
//! ssekit_http::observe::describe();
//! assert_eq!(ssekit_http::observe::STREAMS_OPEN, "ssekit_streams_open");
//! ```

/// Connections being served by `serve*` (gauge).
pub const CONNECTIONS_OPEN: &str = "ssekit_connections_open";
/// Connections accepted (counter).
pub const CONNECTIONS_TOTAL: &str = "ssekit_connections_total";
/// Failed `accept` calls (counter).
pub const ACCEPT_ERRORS_TOTAL: &str = "ssekit_accept_errors_total";
/// Connections shed over the connection cap (counter).
pub const CONNECTIONS_SHED_TOTAL: &str = "ssekit_connections_shed_total";
/// Connections closed for outliving a limit, by `reason` (counter).
pub const CONNECTIONS_EXPIRED_TOTAL: &str = "ssekit_connections_expired_total";
/// Response streams alive (gauge).
pub const STREAMS_OPEN: &str = "ssekit_streams_open";
/// Response streams started (counter).
pub const STREAMS_TOTAL: &str = "ssekit_streams_total";
/// Messages written to response streams (counter).
pub const EVENTS_TOTAL: &str = "ssekit_events_total";
/// Bytes written to response streams (counter).
pub const BYTES_TOTAL: &str = "ssekit_bytes_total";
/// Keep-alive comments written (counter).
pub const KEEPALIVES_TOTAL: &str = "ssekit_keepalives_total";
/// Slow consumers, by `action` (counter).
pub const SLOW_CONSUMERS_TOTAL: &str = "ssekit_slow_consumers_total";
/// Broadcast subscribers connected (gauge).
pub const BROADCAST_SUBSCRIBERS: &str = "ssekit_broadcast_subscribers";
/// `Last-Event-ID`s older than the replay buffer (counter).
pub const REPLAY_GAPS_TOTAL: &str = "ssekit_replay_gaps_total";
/// Requests refused, by `reason` (counter).
pub const REFUSED_TOTAL: &str = "ssekit_refused_total";
/// ORS tool calls running (gauge).
pub const ORS_CALLS_RUNNING: &str = "ssekit_ors_calls_running";
/// ORS calls ended, by `outcome` (counter).
pub const ORS_CALLS_TOTAL: &str = "ssekit_ors_calls_total";
/// ORS calls resumed by `task_id` (counter).
pub const ORS_RESUMES_TOTAL: &str = "ssekit_ors_resumes_total";
/// Bytes of finished ORS results kept for resumption (gauge).
pub const ORS_RESULT_BYTES: &str = "ssekit_ors_result_bytes";
/// Finished ORS results dropped for room before their TTL (counter).
pub const ORS_RESULT_EVICTIONS_TOTAL: &str = "ssekit_ors_result_evictions_total";
/// ORS results not kept for resumption, by `reason` (counter).
pub const ORS_RESULTS_NOT_KEPT_TOTAL: &str = "ssekit_ors_results_not_kept_total";
/// Failed calls to the shared store, by `op` (counter).
pub const STORE_ERRORS_TOTAL: &str = "ssekit_store_errors_total";
/// Duration of calls to the shared store, by `op` (histogram, seconds).
pub const STORE_SECONDS: &str = "ssekit_store_seconds";
/// A client's connection attempts, by `outcome` (counter).
pub const CLIENT_ATTEMPTS_TOTAL: &str = "ssekit_client_attempts_total";
/// Clients that stopped for good on an error (counter).
pub const CLIENT_GIVE_UPS_TOTAL: &str = "ssekit_client_give_ups_total";

/// Registers the help text and unit of every ssekit metric with the installed recorder, so
/// that an exporter shows them (Prometheus' `# HELP` lines). Call it once, after installing
/// the recorder. Without the `metrics` feature it does nothing.
///
/// # Example
/// ```
/// ssekit_http::observe::describe(); // no recorder installed: does nothing
/// ```
pub fn describe() {
    #[cfg(feature = "metrics")]
    describe_all();
}

#[cfg(feature = "metrics")]
fn describe_all() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_gauge!(CONNECTIONS_OPEN, "Connections being served.");
    describe_counter!(CONNECTIONS_TOTAL, "Connections accepted.");
    describe_counter!(ACCEPT_ERRORS_TOTAL, "Failed accept calls.");
    describe_counter!(
        CONNECTIONS_SHED_TOTAL,
        "Connections over the connection cap, answered 503 at once."
    );
    describe_counter!(
        CONNECTIONS_EXPIRED_TOTAL,
        "Connections closed for sending no request head in time (head) or idling (idle)."
    );
    describe_gauge!(STREAMS_OPEN, "Event-stream responses alive.");
    describe_counter!(STREAMS_TOTAL, "Event-stream responses started.");
    describe_counter!(EVENTS_TOTAL, "Messages written to event streams.");
    describe_counter!(BYTES_TOTAL, Unit::Bytes, "Bytes written to event streams.");
    describe_counter!(KEEPALIVES_TOTAL, "Keep-alive comments written.");
    describe_counter!(
        SLOW_CONSUMERS_TOTAL,
        "Slow consumers: cut (a broadcast subscriber dropped) or full (a send refused)."
    );
    describe_gauge!(BROADCAST_SUBSCRIBERS, "Broadcast subscribers connected.");
    describe_counter!(
        REPLAY_GAPS_TOTAL,
        "Last-Event-IDs older than the replay buffer."
    );
    describe_counter!(REFUSED_TOTAL, "Requests refused, by reason.");
    describe_gauge!(ORS_CALLS_RUNNING, "ORS tool calls running.");
    describe_counter!(ORS_CALLS_TOTAL, "ORS calls ended, by outcome.");
    describe_counter!(ORS_RESUMES_TOTAL, "ORS calls resumed by task_id.");
    describe_gauge!(
        ORS_RESULT_BYTES,
        Unit::Bytes,
        "Bytes of finished ORS results kept for resumption."
    );
    describe_counter!(
        ORS_RESULT_EVICTIONS_TOTAL,
        "Finished ORS results dropped for room before their TTL."
    );
    describe_counter!(
        ORS_RESULTS_NOT_KEPT_TOTAL,
        "ORS results not kept for resumption (no room without evicting others'), by reason."
    );
    describe_counter!(STORE_ERRORS_TOTAL, "Failed calls to the shared store.");
    describe_histogram!(
        STORE_SECONDS,
        Unit::Seconds,
        "Duration of calls to the shared store."
    );
    describe_counter!(
        CLIENT_ATTEMPTS_TOTAL,
        "A client's connection attempts, by outcome."
    );
    describe_counter!(
        CLIENT_GIVE_UPS_TOTAL,
        "Clients that stopped for good on an error."
    );
}

/// Adds `n` to the counter `name`.
#[inline(always)]
pub(crate) fn count(name: &'static str, n: u64) {
    #[cfg(feature = "metrics")]
    metrics::counter!(name).increment(n);
    #[cfg(not(feature = "metrics"))]
    let _ = (name, n);
}

/// Adds `n` to the counter `name` with one label.
#[inline(always)]
pub(crate) fn count_by(name: &'static str, label: &'static str, value: &'static str, n: u64) {
    #[cfg(feature = "metrics")]
    metrics::counter!(name, label => value).increment(n);
    #[cfg(not(feature = "metrics"))]
    let _ = (name, label, value, n);
}

/// Moves the gauge `name` by `delta`.
#[inline(always)]
pub(crate) fn gauge_add(name: &'static str, delta: f64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!(name).increment(delta);
    #[cfg(not(feature = "metrics"))]
    let _ = (name, delta);
}

/// Records `seconds` in the histogram `name` with one label.
#[inline(always)]
#[allow(dead_code)]
pub(crate) fn record_by(
    name: &'static str,
    label: &'static str,
    value: &'static str,
    seconds: f64,
) {
    #[cfg(feature = "metrics")]
    metrics::histogram!(name, label => value).record(seconds);
    #[cfg(not(feature = "metrics"))]
    let _ = (name, label, value, seconds);
}

/// One unit of a gauge for as long as it lives: a connection, a stream, a subscriber, a
/// running call. Zero-sized without the `metrics` feature.
#[derive(Debug)]
pub(crate) struct Open {
    #[cfg(feature = "metrics")]
    gauge: &'static str,
}

impl Open {
    /// Raises the gauge `name` by one until the value is dropped.
    #[inline(always)]
    pub(crate) fn new(name: &'static str) -> Self {
        gauge_add(name, 1.0);
        #[cfg(not(feature = "metrics"))]
        let _ = name;
        Open {
            #[cfg(feature = "metrics")]
            gauge: name,
        }
    }
}

impl Drop for Open {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        gauge_add(self.gauge, -1.0);
    }
}

/// A `tracing` event at the given level; nothing without the `tracing` feature (the
/// arguments are not evaluated then, so they must not have side effects).
macro_rules! log {
    ($level:ident, $($arg:tt)+) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::$level!($($arg)+);
        }
    }};
}
pub(crate) use log;

/// What the unit tests read the meters and the log lines with.
#[cfg(test)]
pub(crate) mod testing {
    use std::cell::RefCell;
    use std::sync::OnceLock;

    thread_local! {
        /// What the log wrote on this thread.
        static LOGS: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }

    /// The log's writer: into the calling thread's [`LOGS`].
    struct ThreadLogs;

    impl Write for ThreadLogs {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            LOGS.with(|logs| logs.borrow_mut().extend_from_slice(buf));
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Runs `f` and returns what it logged at `info` and above on this thread. One global
    /// fmt subscriber serves every test: scoped subscribers (`with_default`) on parallel
    /// test threads race in tracing's per-callsite interest cache, and an event could be
    /// found disabled on the thread whose subscriber wanted it.
    pub(crate) fn capture_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
        static INSTALLED: OnceLock<()> = OnceLock::new();
        INSTALLED.get_or_init(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_writer(|| ThreadLogs)
                .with_max_level(tracing::Level::INFO)
                .with_ansi(false)
                .finish();
            let _ = tracing::subscriber::set_global_default(subscriber);
        });
        LOGS.with(|logs| logs.borrow_mut().clear());
        let out = f();
        let logged = LOGS.with(|logs| String::from_utf8_lossy(&logs.borrow()).into_owned());
        (out, logged)
    }

    use std::collections::HashMap;
    use std::io::Write;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

    /// The metrics so far. A snapshot of the debugging recorder drains its values (counters
    /// and gauges alike go back to 0), so the values are summed over every snapshot taken.
    pub(crate) struct Meters {
        snapshotter: Snapshotter,
        sums: HashMap<String, f64>,
    }

    impl Meters {
        pub(crate) fn new(recorder: &DebuggingRecorder) -> Self {
            Meters {
                snapshotter: recorder.snapshotter(),
                sums: HashMap::new(),
            }
        }

        pub(crate) fn value(&mut self, name: &str) -> f64 {
            for (key, _, _, value) in self.snapshotter.snapshot().into_vec() {
                let delta = match value {
                    DebugValue::Counter(n) => n as f64,
                    DebugValue::Gauge(g) => g.into_inner(),
                    DebugValue::Histogram(h) => h.len() as f64,
                };
                *self.sums.entry(key.key().name().to_owned()).or_default() += delta;
            }
            self.sums.get(name).copied().unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_is_free_without_metrics_and_balances_with_them() {
        #[cfg(not(feature = "metrics"))]
        assert_eq!(std::mem::size_of::<Open>(), 0);
        let open = Open::new(STREAMS_OPEN);
        drop(open);
    }
}

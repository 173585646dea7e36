//! Client reconnect policy, as a sans-IO state machine: [`Reconnect`].
//!
//! The transport owns the socket, the HTTP client and the timer; `Reconnect` owns every
//! decision: which headers to send, whether a response may be read, how long to wait before
//! the next attempt, when a silent stream counts as dead, when to give up, and which
//! replayed events were already delivered. It reads no clock (every input carries the
//! caller's [`Instant`]) and draws no randomness (jitter comes from
//! [`ReconnectConfig::jitter_seed`]).
//!
//! # The run loop
//! ```
//! use core::time::Duration;
//! use ssekit::client::{Action, Disconnect, Reconnect, ReconnectConfig};
//! use ssekit::time::Instant;
//! use ssekit::{Decoder, Frame};
//!
//! let mut rc = Reconnect::new(ReconnectConfig::default().retry_timeout(Duration::from_secs(2)));
//! let mut decoder = Decoder::new();
//! let mut now = Instant::ZERO;
//!
//! // 1. Drain actions: the first one is always a connect.
//! let Some(Action::Connect { headers, .. }) = rc.poll_action() else { unreachable!() };
//! assert!(headers.iter().any(|(n, v)| n == "Accept" && v == "text/event-stream"));
//!
//! // 2. Report the response; read the body only if it is accepted.
//! rc.handle_response(now, 200, Some("text/event-stream; charset=utf-8"))?;
//!
//! // 3. Report bytes (for the idle timer) and frames (for ids, `retry:` and dedupe).
//! rc.handle_bytes(now);
//! decoder.feed_slice(b"id: 1\ndata: hello\n\n")?;
//! while let Some(frame) = decoder.next_frame()? {
//!     if let Frame::Event(ev) = frame {
//!         assert!(rc.handle_event(&ev).is_delivered());
//!     }
//! }
//!
//! // 4. The connection drops: wait until `poll_timeout`, then connect again.
//! now = Instant::from_secs(1);
//! rc.handle_closed(now, Disconnect::Eof);
//! let wake = rc.poll_timeout().unwrap();
//! assert!(wake >= now + Duration::from_secs(2));
//! rc.handle_timeout(wake);
//! let Some(Action::Connect { headers, .. }) = rc.poll_action() else { unreachable!() };
//! assert!(headers.iter().any(|(n, v)| n == "Last-Event-ID" && v == "1"));
//! decoder.reset();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The policy, event by event
//! A *failure* is an attempt that delivered nothing: it counts toward
//! [`max_attempts`](ReconnectConfig::max_attempts) and the next wait grows. *Progress* is a
//! connection that delivered at least one new event (or advanced the last event ID): it sets
//! the failure count back to 0, however short the connection was.
//!
//! | what happens | what the client does |
//! |---|---|
//! | `200 text/event-stream` | reads the stream; the failure count is kept until progress |
//! | a new event, or a new last event ID ([`handle_event`](Reconnect::handle_event), [`handle_progress`](Reconnect::handle_progress)) | progress: the failure count starts over at 0 |
//! | `retry: N` | N ms is the reconnection time from now on (at least [`min_delay`](ReconnectConfig::min_delay)) |
//! | the server ends the stream cleanly ([`Disconnect::Eof`]) | **not a failure**: reconnects after the reconnection time, with jitter but no growth, for ever, as an `EventSource` does; with [`stop_on_clean_end`](ReconnectConfig::stop_on_clean_end) (a call, not a subscription) it stops instead ([`GiveUpReason::Ended`]) |
//! | the stream is cut inside an event ([`Disconnect::Truncated`]), the connection fails or is refused ([`Disconnect::Error`]), the idle timeout fires | a failure: waits the reconnection time doubled per earlier consecutive failure (capped, jitter on top), or gives up after `max_attempts` |
//! | 5xx, 408, 429 | a failure, the first attempt included; a `Retry-After` ([`handle_retry_after`](Reconnect::handle_retry_after)) lengthens the wait to what it asks |
//! | 204 | stops for good ([`GiveUpReason::NoContent`]) |
//! | any other status; a 200 that is not `text/event-stream` or is compressed | stops for good with the reason |
//! | [`reconnect(false)`](ReconnectConfig::reconnect) | the first end or failure of any kind stops ([`GiveUpReason::ReconnectDisabled`]) |
//!
//! # Where this differs from a browser's `EventSource`
//! Each difference is deliberate, and each can be turned off or tuned in [`ReconnectConfig`].
//! - 5xx, 408 and 429 responses and network errors are retried ([`ResponseError`]); a browser
//!   fails the connection for good on any status other than 200. Load balancers answer 502/503
//!   during deploys, and the ORS and OpenAI clients retry these too; 204 still stops for good.
//! - Consecutive failures back off exponentially from the reconnection time, with a cap and
//!   upward jitter; a browser waits the reconnection time (the specification allows longer
//!   waits). Without this, every client of a restarting server reconnects in lockstep. A
//!   clean end is no failure: it waits the reconnection time, as a browser does (plus jitter).
//! - `retry:` values below [`ReconnectConfig::min_delay`] are raised to it: `retry: 0` would
//!   otherwise reconnect in a tight loop.
//! - An attempt limit, on by default ([`DEFAULT_MAX_ATTEMPTS`] retries in a row without
//!   progress): a wrong port or a server gone for good ends with a typed
//!   [`GiveUpReason::MaxAttempts`] instead of a silent loop. A browser retries forever;
//!   `max_attempts(None)` does too. Optional idle timeout and `reconnect(false)`; a browser
//!   has no idle timeout, so a half-open TCP connection hangs it until the OS notices.
//! - Events a server replays after a reconnect, with ids already seen, are reported as
//!   [`Delivery::Duplicate`]; a browser delivers them twice. Only the start of a stream is
//!   checked, so a server that repeats an id on purpose loses nothing.
//! - The default reconnection time is 3 s, as in Chromium (Firefox uses 5 s); UTCP's SSE
//!   provider sets its own `retry_timeout` (30 s by default).
//! - A stream cut inside an event ([`Disconnect::Truncated`]) is told apart from a clean end:
//!   it is a failure, and with reconnecting off the give-up says [`Failure::Truncated`]. A
//!   browser sees both as an end.
//! - A 200 event stream in a content coding other than `identity` (gzip, ...) is refused for
//!   good ([`Reconnect::handle_response_head`]); a browser decodes it. The core decodes no
//!   coding, and the ssekit transports ask for `Accept-Encoding: identity`.

use alloc::collections::{BTreeSet, VecDeque};
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use crate::decode::Frame;
use crate::event::Event;
use crate::rng::SplitMix64;
use crate::text::Utf8Bytes;
use crate::time::{millis_ceil, Instant};

/// A request header: name and value, as [`Action::Connect`] lists them.
///
/// # Example
/// ```
/// use ssekit::{client::Header, Utf8Bytes};
/// let header: Header = (Utf8Bytes::from_static("Accept"), Utf8Bytes::from_static("text/event-stream"));
/// assert_eq!(header.0, "Accept");
/// ```
pub type Header = (Utf8Bytes, Utf8Bytes);

/// Reconnect policy. The fields mirror UTCP's SSE provider (`reconnect`, `retry_timeout`,
/// `headers`, `event_type`) plus the knobs a long-lived stream needs.
///
/// Defaults: reconnect on, after a clean end too; reconnection time 3 s (as in browsers;
/// UTCP's `retry_timeout` sets its own); floor 100 ms; cap 5 min; jitter up to 20 % above
/// the computed delay, from a fixed seed unless one is set (see
/// [`jitter_seed`](Self::jitter_seed)); at most 5 retries in a row without progress (so a
/// wrong port ends with [`GiveUpReason::MaxAttempts`] after waits of 3, 6, 12, 24 and 48 s,
/// not never); no idle timeout; the failure
/// count reset by progress (a new event) or by a stream alive 60 s; duplicate suppression
/// over the last 256 ids (at most 16 KiB of them); no event type filter; no extra headers.
///
/// # Example
/// ```
/// use core::time::Duration;
/// use ssekit::client::ReconnectConfig;
///
/// let config = ReconnectConfig::default()
///     .retry_timeout(Duration::from_millis(500))
///     .max_delay(Duration::from_secs(10))
///     .max_attempts(Some(5))
///     .idle_timeout(Some(Duration::from_secs(30)))
///     .jitter_seed(0x5eed)
///     .header("X-Session-ID", "abc-123")?
///     .event_type("price_update");
/// assert_eq!(config.retry_timeout_value(), Duration::from_millis(500));
/// # Ok::<(), ssekit::client::HeaderError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct ReconnectConfig {
    reconnect: bool,
    stop_on_clean_end: bool,
    retry_timeout: Duration,
    min_delay: Duration,
    max_delay: Duration,
    jitter_percent: u8,
    /// `None`: not set, [`DEFAULT_JITTER_SEED`] is used.
    jitter_seed: Option<u64>,
    max_attempts: Option<u32>,
    idle_timeout: Option<Duration>,
    reset_after: Duration,
    headers: Vec<Header>,
    event_type: Option<Utf8Bytes>,
    dedupe_ids: usize,
    dedupe_bytes: usize,
}

/// The jitter seed of a [`ReconnectConfig`] that was given none: the same in every process,
/// so the core stays deterministic. Transports replace it (see
/// [`ReconnectConfig::jitter_seed_value`]).
const DEFAULT_JITTER_SEED: u64 = 0x55E4_C17E_2026_0001;

/// The retries in a row without progress a [`ReconnectConfig`] makes by default before it
/// gives up: as the official ORS client. A subscription that must outlive any outage sets
/// [`ReconnectConfig::max_attempts`]`(None)`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

impl Default for ReconnectConfig {
    fn default() -> Self {
        ReconnectConfig {
            reconnect: true,
            stop_on_clean_end: false,
            retry_timeout: Duration::from_millis(3_000),
            min_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(300),
            jitter_percent: 20,
            jitter_seed: None,
            max_attempts: Some(DEFAULT_MAX_ATTEMPTS),
            idle_timeout: None,
            reset_after: Duration::from_secs(60),
            headers: Vec::new(),
            event_type: None,
            dedupe_ids: 256,
            dedupe_bytes: 16 << 10,
        }
    }
}

impl ReconnectConfig {
    /// What the official ORS Python client does for a tool call: first retry after 500 ms,
    /// doubling up to 10 s, at most 5 consecutive retries without progress; and a 30 s idle
    /// timeout (the client's read timeout), turned into a reconnect instead of a failure.
    ///
    /// # Example
    /// ```
    /// let config = ssekit::client::ReconnectConfig::ors();
    /// assert_eq!(config.max_attempts_value(), Some(5));
    /// ```
    pub fn ors() -> Self {
        ReconnectConfig::default()
            .retry_timeout(Duration::from_millis(500))
            .max_delay(Duration::from_secs(10))
            .max_attempts(Some(5))
            .idle_timeout(Some(Duration::from_secs(30)))
    }

    /// Whether to reconnect at all (UTCP `reconnect`, default `true`). With `false`, the
    /// first failure gives up with [`GiveUpReason::ReconnectDisabled`].
    ///
    /// # Example
    /// ```
    /// let config = ssekit::client::ReconnectConfig::default().reconnect(false);
    /// assert!(!config.reconnect_value());
    /// ```
    pub fn reconnect(mut self, on: bool) -> Self {
        self.reconnect = on;
        self
    }

    /// A call, not a subscription: a clean end of the stream ([`Disconnect::Eof`]) ends it
    /// with [`GiveUpReason::Ended`] instead of reconnecting (default `false`: reconnect after
    /// the reconnection time, as an `EventSource` does). A cut stream, a failed connection and
    /// a 5xx are still retried. A UTCP tool call runs "until the connection is closed".
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Action, Disconnect, GiveUpReason, Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().stop_on_clean_end(true));
    /// let _ = rc.poll_action();
    /// rc.handle_response(Instant::ZERO, 200, Some("text/event-stream"))?;
    /// rc.handle_closed(Instant::ZERO, Disconnect::Eof);
    /// assert_eq!(rc.poll_action(), Some(Action::GiveUp(GiveUpReason::Ended)));
    /// # Ok::<(), ssekit::client::ResponseError>(())
    /// ```
    pub fn stop_on_clean_end(mut self, stop: bool) -> Self {
        self.stop_on_clean_end = stop;
        self
    }

    /// The reconnection time: the wait after a clean end and before the first retry, doubled
    /// for each further consecutive failure (UTCP `retry_timeout`; default 3 000 ms, as
    /// Chromium's). A `retry:` field from the server replaces it, as in a browser.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// let config = ssekit::client::ReconnectConfig::default().retry_timeout(Duration::from_secs(3));
    /// assert_eq!(config.retry_timeout_value(), Duration::from_secs(3));
    /// ```
    pub fn retry_timeout(mut self, delay: Duration) -> Self {
        self.retry_timeout = delay;
        self
    }

    /// The floor under every wait (default 100 ms), so `retry: 0` cannot make a tight
    /// reconnect loop (at most ten connections a second). `Duration::ZERO` disables the
    /// floor.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// let _ = ssekit::client::ReconnectConfig::default().min_delay(Duration::from_secs(1));
    /// ```
    pub fn min_delay(mut self, floor: Duration) -> Self {
        self.min_delay = floor;
        self
    }

    /// The cap on exponential growth (default 5 min). It never lowers the reconnection time
    /// itself: a server asking for `retry: 600000` is waited for, as a browser would.
    /// Jitter is added on top of the capped delay.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// let _ = ssekit::client::ReconnectConfig::default().max_delay(Duration::from_secs(60));
    /// ```
    pub fn max_delay(mut self, cap: Duration) -> Self {
        self.max_delay = cap;
        self
    }

    /// Jitter: each wait is the computed delay plus a random extra of up to `percent` of it
    /// (default 20, clamped to 100). No wait is shorter than the reconnection time (a
    /// server's `retry:` is honoured) nor longer than [`max_delay`](Self::max_delay): near the
    /// cap, the random window ends at the cap. Where the reconnection time is itself at or
    /// above the cap (`retry:` asks for longer), it wins, with the jitter above it.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit::client::ReconnectConfig::default().jitter(0); // exact delays
    /// ```
    pub fn jitter(mut self, percent: u8) -> Self {
        self.jitter_percent = percent.min(100);
        self
    }

    /// The seed of the jitter PRNG. Give each client its own (from the OS RNG, say): clients
    /// with the same seed jitter in lockstep, which defeats the purpose. The same seed and
    /// inputs always give the same waits.
    ///
    /// Without one, the machine uses a fixed seed, the same in every process (the core draws
    /// no randomness). The ssekit transports (`ssekit-http`'s `RequestSpec`, hence the
    /// `EventSource`s and the ORS and UTCP clients) draw one from the OS for each stream or
    /// call when none was set here, and keep one that was.
    ///
    /// # Example
    /// ```
    /// let config = ssekit::client::ReconnectConfig::default().jitter_seed(42);
    /// assert_eq!(config.jitter_seed_value(), Some(42));
    /// ```
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// The most consecutive retries without progress before giving up with
    /// [`GiveUpReason::MaxAttempts`] ([`DEFAULT_MAX_ATTEMPTS`] by default); `None` retries
    /// forever, as a browser's `EventSource` does. Every failed attempt is reported to the
    /// transport before the wait, so a caller can watch them either way. The count resets
    /// when a connection makes progress (delivers a new event or advances the last event ID:
    /// [`Reconnect::handle_progress`]), however short it was, or stays alive
    /// [`reset_after`](Self::reset_after); not merely on a 200: a server that accepts every
    /// connection and then cuts it before any event still runs out of attempts. Clean ends
    /// are not failures and never count.
    ///
    /// # Example
    /// ```
    /// let config = ssekit::client::ReconnectConfig::default().max_attempts(Some(3));
    /// assert_eq!(config.max_attempts_value(), Some(3));
    /// ```
    pub fn max_attempts(mut self, attempts: Option<u32>) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// Reconnect when an open stream delivers no bytes at all (not even a keep-alive comment)
    /// for this long. `None` (the default) waits forever, as a browser does. Values below
    /// 1 ms are raised to 1 ms. The clock starts when the response is accepted; bounding the
    /// time to connect and to receive the response head is the transport's job.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// let _ = ssekit::client::ReconnectConfig::default().idle_timeout(Some(Duration::from_secs(45)));
    /// ```
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
        self
    }

    /// A stream that stayed alive this long (default 60 s) counts as healthy even without
    /// an event: when it ends, the backoff and the attempt count start over. Any new event
    /// does that at once ([`Reconnect::handle_progress`]); this covers long streams of
    /// keep-alives only.
    ///
    /// Alive means from its acceptance to the last bytes received
    /// ([`Reconnect::handle_bytes`]; keep-alive comments count), however the stream ends:
    /// the idle timeout, the server or the network. Silence does not count, so a server
    /// that accepts and then never sends is not healthy, whether the idle timeout or the
    /// server (a proxy's read timeout) closes the connection, and
    /// [`max_attempts`](Self::max_attempts) still ends its reconnect loop.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::client::{Action, GiveUpReason, Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let config = ReconnectConfig::default()
    ///     .reset_after(Duration::from_secs(10))
    ///     .idle_timeout(Some(Duration::from_secs(60)))
    ///     .max_attempts(Some(0));
    /// let mut rc = Reconnect::new(config);
    /// let _ = rc.poll_action();
    /// rc.handle_response(Instant::ZERO, 200, Some("text/event-stream"))?;
    /// // Open for a minute, but silent: not healthy, so the limit of 0 retries holds.
    /// rc.handle_timeout(Instant::from_secs(60));
    /// let _close = rc.poll_action();
    /// assert!(matches!(rc.poll_action(), Some(Action::GiveUp(GiveUpReason::MaxAttempts { .. }))));
    /// # Ok::<(), ssekit::client::ResponseError>(())
    /// ```
    pub fn reset_after(mut self, healthy: Duration) -> Self {
        self.reset_after = healthy;
        self
    }

    /// Adds a request header (UTCP `headers`), replacing one of the same name (names compare
    /// ASCII case-insensitively). Refused when the name is not an HTTP token or the value
    /// holds a control character (CR, LF and NUL among them; tab is allowed).
    ///
    /// A `Last-Event-ID` header is where the stream resumes from (an id kept from an earlier
    /// run): it is the machine's last event ID until the stream sets another, so reconnects
    /// send the newest id, not this one.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{HeaderError, ReconnectConfig};
    /// assert!(ReconnectConfig::default().header("X-API-Key", "k").is_ok());
    /// let resumed = ssekit::client::Reconnect::new(
    ///     ReconnectConfig::default().header("Last-Event-ID", "41")?,
    /// );
    /// assert_eq!(resumed.last_event_id(), "41");
    /// assert_eq!(
    ///     ReconnectConfig::default().header("X-API-Key", "k\r\nX-Evil: 1").unwrap_err(),
    ///     HeaderError::InvalidValue { position: 1 },
    /// );
    /// # Ok::<(), HeaderError>(())
    /// ```
    pub fn header(
        mut self,
        name: impl Into<Utf8Bytes>,
        value: impl Into<Utf8Bytes>,
    ) -> Result<Self, HeaderError> {
        set_header(&mut self.headers, name.into(), value.into())?;
        Ok(self)
    }

    /// Only deliver events of this type (UTCP `event_type`); others are reported as
    /// [`Delivery::Filtered`]. By default every event is delivered.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit::client::ReconnectConfig::default().event_type("notification");
    /// ```
    pub fn event_type(mut self, event_type: impl Into<Utf8Bytes>) -> Self {
        self.event_type = Some(event_type.into());
        self
    }

    /// Duplicate suppression after a reconnect (see [`Reconnect::handle_event`]): remember the
    /// last `ids` event ids, using at most `bytes` bytes for them (defaults 256 and 16 KiB);
    /// `0` ids turns suppression off. Make it at least as large as the server's replay.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit::client::ReconnectConfig::default().dedupe(1024, 64 << 10);
    /// ```
    pub fn dedupe(mut self, ids: usize, bytes: usize) -> Self {
        self.dedupe_ids = ids;
        self.dedupe_bytes = bytes;
        self
    }

    /// Whether a clean end stops the stream ([`stop_on_clean_end`](Self::stop_on_clean_end)).
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::client::ReconnectConfig::default().stop_on_clean_end_value());
    /// ```
    pub fn stop_on_clean_end_value(&self) -> bool {
        self.stop_on_clean_end
    }

    /// Whether reconnecting is on.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::client::ReconnectConfig::default().reconnect_value());
    /// ```
    pub fn reconnect_value(&self) -> bool {
        self.reconnect
    }

    /// The configured reconnection time.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// let config = ssekit::client::ReconnectConfig::default();
    /// assert_eq!(config.retry_timeout_value(), Duration::from_millis(3_000));
    /// ```
    pub fn retry_timeout_value(&self) -> Duration {
        self.retry_timeout
    }

    /// The attempt limit.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{ReconnectConfig, DEFAULT_MAX_ATTEMPTS};
    /// assert_eq!(ReconnectConfig::default().max_attempts_value(), Some(DEFAULT_MAX_ATTEMPTS));
    /// assert_eq!(ReconnectConfig::default().max_attempts(None).max_attempts_value(), None);
    /// ```
    pub fn max_attempts_value(&self) -> Option<u32> {
        self.max_attempts
    }

    /// The seed set with [`jitter_seed`](Self::jitter_seed), or `None` when none was set (the
    /// machine then uses its fixed default seed): a transport seeds such a config from the
    /// OS, so that its clients do not reconnect in lockstep.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::ReconnectConfig;
    /// assert_eq!(ReconnectConfig::default().jitter_seed_value(), None);
    /// assert_eq!(ReconnectConfig::default().jitter_seed(7).jitter_seed_value(), Some(7));
    /// ```
    pub fn jitter_seed_value(&self) -> Option<u64> {
        self.jitter_seed
    }
}

/// Why a header was refused.
///
/// # Example
/// ```
/// use ssekit::client::{HeaderError, ReconnectConfig};
/// assert_eq!(ReconnectConfig::default().header("Bad Name", "x").unwrap_err(), HeaderError::InvalidName);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HeaderError {
    /// The name is empty or holds a character that is not an HTTP token character.
    InvalidName,
    /// The value holds a control character at byte `position`: CR, LF or NUL (header
    /// injection), or another that HTTP does not allow in a field value (tab excepted).
    InvalidValue {
        /// Byte offset of the offending character.
        position: usize,
    },
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::InvalidName => f.write_str("header name is not an HTTP token"),
            HeaderError::InvalidValue { position } => {
                write!(
                    f,
                    "header value holds a control character at byte {position}"
                )
            }
        }
    }
}

impl core::error::Error for HeaderError {}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Where `value` holds a byte HTTP does not allow in a field value: a control character
/// other than tab (CR, LF and NUL among them), or DEL. Bytes from 0x80 are allowed
/// (`obs-text`, which carries UTF-8).
fn invalid_value_byte(value: &str) -> Option<usize> {
    value
        .bytes()
        .position(|b| (b < 0x20 && b != b'\t') || b == 0x7f)
}

/// Whether a header name is `Last-Event-ID` (names compare ASCII case-insensitively).
fn is_last_event_id(name: &str) -> bool {
    name.eq_ignore_ascii_case("Last-Event-ID")
}

fn set_header(
    headers: &mut Vec<Header>,
    name: Utf8Bytes,
    value: Utf8Bytes,
) -> Result<(), HeaderError> {
    if name.is_empty() || !name.bytes().all(is_tchar) {
        return Err(HeaderError::InvalidName);
    }
    if let Some(position) = invalid_value_byte(&value) {
        return Err(HeaderError::InvalidValue { position });
    }
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
    headers.push((name, value));
    Ok(())
}

/// Whether a `Content-Type` value is `text/event-stream`: the media type is compared ASCII
/// case-insensitively, surrounding whitespace and parameters (`; charset=utf-8`) are allowed,
/// anything else (a missing subtype, a list, `text/event-streams`) is not.
///
/// # Example
/// ```
/// use ssekit::client::is_event_stream;
/// assert!(is_event_stream("text/event-stream"));
/// assert!(is_event_stream("Text/Event-Stream ; charset=utf-8"));
/// assert!(!is_event_stream("text/plain"));
/// assert!(!is_event_stream("text/event-stream-x"));
/// ```
pub fn is_event_stream(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default();
    let essence = essence.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    let token = |s: &str| !s.is_empty() && s.bytes().all(is_tchar);
    token(kind)
        && token(subtype)
        && kind.eq_ignore_ascii_case("text")
        && subtype.eq_ignore_ascii_case("event-stream")
}

/// Whether a `Content-Encoding` value leaves the body as it is: every content coding it
/// lists (comma-separated, as several fields joined with commas) is `identity` (ASCII
/// case-insensitive) or empty. A body in any other coding (`gzip`, `br`, `deflate`, ...)
/// cannot be decoded as an event stream; a missing header is `identity` too.
///
/// # Example
/// ```
/// use ssekit::client::is_identity_encoding;
/// assert!(is_identity_encoding("identity"));
/// assert!(is_identity_encoding(" Identity "));
/// assert!(is_identity_encoding(""));
/// assert!(!is_identity_encoding("gzip"));
/// assert!(!is_identity_encoding("identity, br"));
/// ```
pub fn is_identity_encoding(content_encoding: &str) -> bool {
    content_encoding.split(',').all(|coding| {
        let coding = coding.trim_matches(|c| matches!(c, ' ' | '\t'));
        coding.is_empty() || coding.eq_ignore_ascii_case("identity")
    })
}

/// What the transport should do next, from [`Reconnect::poll_action`].
///
/// # Example
/// ```
/// use ssekit::client::{Action, Reconnect, ReconnectConfig};
/// let mut rc = Reconnect::new(ReconnectConfig::default());
/// match rc.poll_action() {
///     Some(Action::Connect { headers, attempt }) => {
///         assert_eq!(attempt, 0);
///         assert_eq!(headers.len(), 2); // Accept, Cache-Control
///     }
///     other => unreachable!("{other:?}"),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Open a connection now, sending exactly these request headers (the same method, URL
    /// and body as the first request: replaying a POST body is the transport's job).
    Connect {
        /// Standard headers, `Last-Event-ID` when known, then the configured ones (a
        /// configured header replaces a standard one of the same name).
        headers: Vec<Header>,
        /// 0 for the first connection; for a reconnect, the number of consecutive failures
        /// before it, and 1 when there were none (after a clean end, or a connection that
        /// made progress).
        attempt: u32,
    },
    /// Drop the current connection (it stopped delivering bytes). A reconnect follows.
    Close(CloseReason),
    /// Stop for good: no further action will be given.
    GiveUp(GiveUpReason),
}

/// Why [`Action::Close`] was given.
///
/// # Example
/// ```
/// use ssekit::client::CloseReason;
/// assert_eq!(CloseReason::IdleTimeout.to_string(), "no bytes received within the idle timeout");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CloseReason {
    /// No bytes at all within the idle timeout.
    IdleTimeout,
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::IdleTimeout => f.write_str("no bytes received within the idle timeout"),
        }
    }
}

/// How a connection attempt or stream failed (carried by [`GiveUpReason`]).
///
/// # Example
/// ```
/// use ssekit::client::Failure;
/// assert_eq!(Failure::Status(503).to_string(), "HTTP status 503");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Failure {
    /// The server ended the stream.
    Eof,
    /// The stream ended inside a line or an event ([`Disconnect::Truncated`]).
    Truncated,
    /// A network or transport error (including a refused connection or a decode error).
    Network,
    /// A retryable HTTP status (5xx, 408, 429).
    Status(u16),
    /// The idle timeout fired.
    IdleTimeout,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Eof => f.write_str("the server ended the stream"),
            Failure::Truncated => f.write_str("the stream was cut inside an event"),
            Failure::Network => f.write_str("network error"),
            Failure::Status(status) => write!(f, "HTTP status {status}"),
            Failure::IdleTimeout => f.write_str("idle timeout"),
        }
    }
}

/// Why [`Action::GiveUp`] was given.
///
/// # Example
/// ```
/// use ssekit::client::GiveUpReason;
/// assert_eq!(GiveUpReason::NoContent.to_string(), "the server answered 204 No Content");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// HTTP 204: the server asks the client to stop reconnecting.
    NoContent,
    /// A status that is neither 200, 204 nor retryable.
    Status(u16),
    /// A 200 whose content type is not `text/event-stream`.
    ContentType,
    /// A 200 event stream in a content coding other than `identity` (a compressed body).
    ContentEncoding,
    /// The attempt limit was reached.
    MaxAttempts {
        /// Retries made.
        attempts: u32,
        /// The failure that would have needed one more.
        last: Failure,
    },
    /// Reconnecting is off and the connection failed.
    ReconnectDisabled {
        /// The failure.
        last: Failure,
    },
    /// The stream ended cleanly and the policy ends calls there
    /// ([`ReconnectConfig::stop_on_clean_end`]): the normal end of a call, not an error.
    Ended,
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GiveUpReason::NoContent => f.write_str("the server answered 204 No Content"),
            GiveUpReason::Status(status) => write!(f, "HTTP status {status} is not retryable"),
            GiveUpReason::ContentType => f.write_str("the response is not text/event-stream"),
            GiveUpReason::ContentEncoding => {
                f.write_str("the response has a Content-Encoding other than identity")
            }
            GiveUpReason::MaxAttempts { attempts, last } => {
                let plural = if *attempts == 1 { "retry" } else { "retries" };
                write!(
                    f,
                    "gave up after {attempts} {plural} in a row; last failure: {last}"
                )
            }
            GiveUpReason::ReconnectDisabled { last } => {
                write!(f, "reconnecting is disabled; failure: {last}")
            }
            GiveUpReason::Ended => f.write_str("the stream ended"),
        }
    }
}

impl core::error::Error for GiveUpReason {}

/// Why [`Reconnect::handle_response`] refused a response: do not read its body. Whether a
/// retry follows is decided by the policy and shown by [`Reconnect::poll_action`].
///
/// # Example
/// ```
/// use ssekit::client::{Reconnect, ReconnectConfig, ResponseError};
/// use ssekit::time::Instant;
/// let mut rc = Reconnect::new(ReconnectConfig::default());
/// let _ = rc.poll_action();
/// assert_eq!(rc.handle_response(Instant::ZERO, 200, Some("text/html")), Err(ResponseError::ContentType));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResponseError {
    /// 204 No Content: stop for good.
    NoContent,
    /// Any other status than 200; retried when 5xx, 408 or 429.
    Status(u16),
    /// A 200 without `Content-Type: text/event-stream`.
    ContentType,
    /// A 200 `text/event-stream` whose `Content-Encoding` is not `identity`
    /// ([`is_identity_encoding`]): a compressed body, which the decoder would read as
    /// garbage. Not retried: the server would compress the retry too.
    ContentEncoding,
    /// No connection attempt is outstanding (the machine did not ask for one, or was stopped).
    NotExpected,
}

impl ResponseError {
    /// Whether the policy retries after this error (if reconnecting is on and attempts remain).
    ///
    /// # Example
    /// ```
    /// use ssekit::client::ResponseError;
    /// assert!(ResponseError::Status(503).is_retryable());
    /// assert!(!ResponseError::Status(404).is_retryable());
    /// assert!(!ResponseError::NoContent.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        matches!(self, ResponseError::Status(s) if is_retryable_status(*s))
    }
}

fn is_retryable_status(status: u16) -> bool {
    (500..=599).contains(&status) || status == 408 || status == 429
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResponseError::NoContent => {
                f.write_str("204 No Content: the server closed the stream for good")
            }
            ResponseError::Status(status) => write!(f, "unexpected HTTP status {status}"),
            ResponseError::ContentType => f.write_str("the response is not text/event-stream"),
            ResponseError::ContentEncoding => {
                f.write_str("the response has a Content-Encoding other than identity")
            }
            ResponseError::NotExpected => f.write_str("no connection attempt is outstanding"),
        }
    }
}

impl core::error::Error for ResponseError {}

/// How the connection ended, for [`Reconnect::handle_closed`].
///
/// # Example
/// ```
/// use ssekit::client::{Disconnect, Reconnect, ReconnectConfig};
/// use ssekit::time::Instant;
/// let mut rc = Reconnect::new(ReconnectConfig::default());
/// let _ = rc.poll_action();
/// rc.handle_closed(Instant::ZERO, Disconnect::Error); // connection refused
/// assert!(rc.poll_timeout().is_some());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Disconnect {
    /// The server ended the response body after a complete event (the decoder's
    /// [`StreamEnd::Clean`](crate::StreamEnd::Clean)): no failure, see
    /// [`Reconnect::handle_closed`].
    Eof,
    /// The response body ended normally at the HTTP level, but inside a line or an event
    /// (the decoder's [`StreamEnd::Truncated`](crate::StreamEnd::Truncated)): the partial
    /// event was lost. A failure, retried as a reset is; with reconnecting off, the give-up
    /// says [`Failure::Truncated`], so that a caller can tell it from a clean end.
    Truncated,
    /// The connection failed: refused, reset, timed out, TLS, or the body could not be decoded.
    Error,
}

/// What to do with an event, from [`Reconnect::handle_event`].
///
/// # Example
/// ```
/// use ssekit::client::{Delivery, Disconnect, Reconnect, ReconnectConfig};
/// use ssekit::{time::Instant, Event};
/// let mut rc = Reconnect::new(ReconnectConfig::default());
/// let (one, two) = (Event::builder().id("1")?.data("a").build(), Event::builder().id("2")?.data("b").build());
/// let _ = rc.poll_action();
/// rc.handle_response(Instant::ZERO, 200, Some("text/event-stream"))?;
/// assert_eq!(rc.handle_event(&one), Delivery::Deliver);
/// rc.handle_closed(Instant::ZERO, Disconnect::Error);
/// rc.handle_timeout(rc.poll_timeout().unwrap());
/// let _ = rc.poll_action();
/// rc.handle_response(Instant::from_secs(40), 200, Some("text/event-stream"))?;
/// assert_eq!(rc.handle_event(&one), Delivery::Duplicate); // replayed by the server
/// assert_eq!(rc.handle_event(&two), Delivery::Deliver);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// Hand the event to the application.
    Deliver,
    /// A replay after reconnect: the stream has sent no new id since it was accepted, and
    /// this event's id was seen before. Drop it.
    Duplicate,
    /// Its type does not match [`ReconnectConfig::event_type`]. Drop it.
    Filtered,
}

impl Delivery {
    /// `true` for [`Delivery::Deliver`].
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::client::Delivery::Deliver.is_delivered());
    /// ```
    pub fn is_delivered(self) -> bool {
        self == Delivery::Deliver
    }
}

/// A bounded set of recently seen ids, oldest evicted first.
#[derive(Clone, Debug)]
struct RecentIds {
    order: VecDeque<Utf8Bytes>,
    set: BTreeSet<Utf8Bytes>,
    bytes: usize,
    max_ids: usize,
    max_bytes: usize,
}

impl RecentIds {
    fn new(max_ids: usize, max_bytes: usize) -> Self {
        RecentIds {
            order: VecDeque::new(),
            set: BTreeSet::new(),
            bytes: 0,
            max_ids,
            max_bytes,
        }
    }

    /// Records `id`; `false` when it was already present.
    fn insert(&mut self, id: &Utf8Bytes) -> bool {
        if self.set.contains(id) {
            return false;
        }
        if self.max_ids == 0 || id.len() > self.max_bytes {
            return true;
        }
        while self.order.len() >= self.max_ids || self.bytes + id.len() > self.max_bytes {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.bytes -= old.len();
            self.set.remove(&old);
        }
        // A copy, not `id` itself: decoded text shares the buffer it was read in, and up to
        // `max_ids` such slices would hold as many read buffers alive, far past `max_bytes`.
        let id = Utf8Bytes::copy_from_str(id);
        self.bytes += id.len();
        self.order.push_back(id.clone());
        self.set.insert(id);
        true
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A connection should be opened; `poll_action` gives it.
    ConnectDue,
    /// `Connect` was given; waiting for `handle_response` or `handle_closed`.
    Connecting,
    /// A stream was accepted at `since`; the last bytes arrived at `last_rx`.
    Open { since: Instant, last_rx: Instant },
    /// Waiting to reconnect at `until`.
    Waiting { until: Instant },
    /// Done. `report` is a give-up not yet returned by `poll_action`.
    Stopped { report: Option<GiveUpReason> },
}

/// The client reconnect state machine. See the [module docs](self) for the run loop.
///
/// Inputs: [`handle_response`](Self::handle_response), [`handle_bytes`](Self::handle_bytes),
/// [`handle_event`](Self::handle_event), [`handle_retry`](Self::handle_retry),
/// [`handle_closed`](Self::handle_closed), [`handle_timeout`](Self::handle_timeout).
/// Outputs: [`poll_action`](Self::poll_action) and [`poll_timeout`](Self::poll_timeout).
/// Calls that do not fit the current state are ignored; a `now` earlier than one seen
/// before is treated as that earlier-seen time.
///
/// # Example
/// ```
/// use ssekit::client::{Action, GiveUpReason, Reconnect, ReconnectConfig, ResponseError};
/// use ssekit::time::Instant;
/// let mut rc = Reconnect::new(ReconnectConfig::default());
/// assert!(matches!(rc.poll_action(), Some(Action::Connect { .. })));
/// assert_eq!(rc.handle_response(Instant::ZERO, 204, None), Err(ResponseError::NoContent));
/// assert_eq!(rc.poll_action(), Some(Action::GiveUp(GiveUpReason::NoContent)));
/// assert_eq!(rc.poll_action(), None);
/// assert_eq!(rc.poll_timeout(), None);
/// ```
#[derive(Clone, Debug)]
pub struct Reconnect {
    config: ReconnectConfig,
    state: State,
    now: Instant,
    /// Consecutive failures since the last healthy stream.
    attempts: u32,
    /// The reconnection time: `retry_timeout`, or the server's last `retry:`.
    reconnection_time: Duration,
    last_event_id: Utf8Bytes,
    seen: RecentIds,
    /// The current stream has sent no new id yet: seen ids are replays.
    replaying: bool,
    rng: SplitMix64,
    pending_close: Option<CloseReason>,
    /// Whether a connection was asked for before: the next one is a reconnect.
    reconnecting: bool,
}

impl Reconnect {
    /// A machine that will connect as soon as it is polled.
    ///
    /// # Example
    /// ```
    /// let mut rc = ssekit::client::Reconnect::new(Default::default());
    /// assert!(rc.poll_action().is_some());
    /// ```
    pub fn new(config: ReconnectConfig) -> Self {
        Reconnect {
            state: State::ConnectDue,
            now: Instant::ZERO,
            attempts: 0,
            reconnection_time: config.retry_timeout,
            last_event_id: config
                .headers
                .iter()
                .find(|(name, _)| is_last_event_id(name))
                .map(|(_, id)| id.clone())
                .unwrap_or_default(),
            seen: RecentIds::new(config.dedupe_ids, config.dedupe_bytes),
            replaying: false,
            rng: SplitMix64::new(config.jitter_seed.unwrap_or(DEFAULT_JITTER_SEED)),
            pending_close: None,
            reconnecting: false,
            config,
        }
    }

    /// The next thing to do, or `None` to wait for input or [`poll_timeout`](Self::poll_timeout).
    /// Call until it returns `None`.
    ///
    /// # Example
    /// ```
    /// let mut rc = ssekit::client::Reconnect::new(Default::default());
    /// assert!(rc.poll_action().is_some()); // connect
    /// assert!(rc.poll_action().is_none()); // now waiting for the response
    /// ```
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        if let Some(reason) = self.pending_close.take() {
            return Some(Action::Close(reason));
        }
        match &mut self.state {
            State::ConnectDue => {
                self.state = State::Connecting;
                let attempt = match self.reconnecting {
                    true => self.attempts.max(1),
                    false => 0,
                };
                self.reconnecting = true;
                Some(Action::Connect {
                    headers: self.request_headers(),
                    attempt,
                })
            }
            State::Stopped { report } => report.take().map(Action::GiveUp),
            _ => None,
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called, if ever: the
    /// reconnect time while waiting, the idle deadline while a stream is open.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Disconnect, Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().jitter(0));
    /// let _ = rc.poll_action();
    /// rc.handle_closed(Instant::ZERO, Disconnect::Error);
    /// assert_eq!(rc.poll_timeout(), Some(Instant::from_millis(3_000)));
    /// ```
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            // A deadline past the end of time never comes.
            State::Open { last_rx, .. } => self
                .config
                .idle_timeout
                .and_then(|idle| last_rx.checked_add(idle)),
            State::Waiting { until } => Some(until),
            _ => None,
        }
    }

    /// Advances timers: starts the reconnect when its time has come, or closes a stream that
    /// stayed silent past the idle timeout. Early or spurious calls do nothing.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::client::{Action, CloseReason, Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let config = ReconnectConfig::default().idle_timeout(Some(Duration::from_secs(30)));
    /// let mut rc = Reconnect::new(config);
    /// let _ = rc.poll_action();
    /// rc.handle_response(Instant::ZERO, 200, Some("text/event-stream"))?;
    /// rc.handle_timeout(Instant::from_secs(30));
    /// assert_eq!(rc.poll_action(), Some(Action::Close(CloseReason::IdleTimeout)));
    /// # Ok::<(), ssekit::client::ResponseError>(())
    /// ```
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.observe(now);
        match self.state {
            State::Waiting { until } if now >= until => self.state = State::ConnectDue,
            State::Open { since, last_rx } => {
                if let Some(deadline) = self
                    .config
                    .idle_timeout
                    .and_then(|i| last_rx.checked_add(i))
                    && now >= deadline
                {
                    self.pending_close = Some(CloseReason::IdleTimeout);
                    // The stream was last alive when its last bytes came, not now.
                    self.stream_ended(last_rx, since);
                    self.fail(now, Failure::IdleTimeout);
                }
            }
            _ => {}
        }
    }

    /// Checks a response to the connection the machine asked for. `Ok` means: read the body.
    /// 200 with `text/event-stream` proceeds; 204 stops for good; 5xx, 408 and 429 are
    /// retried by policy; every other status, and a 200 of another content type, gives up
    /// (as a browser's `EventSource` fails the connection). A transport that follows
    /// redirects, as a browser does (ssekit's own do), reports the final response here; a 3xx
    /// reaching this check fails. The response's `Content-Encoding` is not checked: use
    /// [`handle_response_head`](Self::handle_response_head) when there may be one.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Reconnect, ReconnectConfig, ResponseError};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default());
    /// let _ = rc.poll_action();
    /// let err = rc.handle_response(Instant::ZERO, 503, Some("text/html")).unwrap_err();
    /// assert!(err.is_retryable());
    /// assert!(rc.poll_timeout().is_some()); // a retry is scheduled
    /// ```
    pub fn handle_response(
        &mut self,
        now: Instant,
        status: u16,
        content_type: Option<&str>,
    ) -> Result<(), ResponseError> {
        self.handle_response_head(now, status, content_type, None)
    }

    /// [`handle_response`](Self::handle_response) with the response's `Content-Encoding`
    /// (`None` when it has none; several fields joined with commas): a 200
    /// `text/event-stream` in any coding but `identity` ([`is_identity_encoding`]) is
    /// refused with [`ResponseError::ContentEncoding`] and gives up for good
    /// ([`GiveUpReason::ContentEncoding`]), since the decoder cannot read a compressed body
    /// and the server would compress a retry too. A client that decodes no coding should ask
    /// for `Accept-Encoding: identity` (the ssekit transports do).
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Action, GiveUpReason, Reconnect, ReconnectConfig, ResponseError};
    /// use ssekit::time::Instant;
    /// let sse = Some("text/event-stream");
    /// let mut rc = Reconnect::new(ReconnectConfig::default());
    /// let _ = rc.poll_action();
    /// let refused = rc.handle_response_head(Instant::ZERO, 200, sse, Some("gzip"));
    /// assert_eq!(refused, Err(ResponseError::ContentEncoding));
    /// assert_eq!(rc.poll_action(), Some(Action::GiveUp(GiveUpReason::ContentEncoding)));
    /// let mut plain = Reconnect::new(ReconnectConfig::default());
    /// let _ = plain.poll_action();
    /// assert_eq!(plain.handle_response_head(Instant::ZERO, 200, sse, Some("identity")), Ok(()));
    /// ```
    pub fn handle_response_head(
        &mut self,
        now: Instant,
        status: u16,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
    ) -> Result<(), ResponseError> {
        let now = self.observe(now);
        if self.state != State::Connecting {
            return Err(ResponseError::NotExpected);
        }
        let verdict = match status {
            200 if !content_type.is_some_and(is_event_stream) => Err(ResponseError::ContentType),
            200 if !content_encoding.is_none_or(is_identity_encoding) => {
                Err(ResponseError::ContentEncoding)
            }
            200 => Ok(()),
            204 => Err(ResponseError::NoContent),
            other => Err(ResponseError::Status(other)),
        };
        match verdict {
            Ok(()) => {
                self.state = State::Open {
                    since: now,
                    last_rx: now,
                };
                self.replaying = true;
            }
            Err(ResponseError::Status(s)) if is_retryable_status(s) => {
                self.fail(now, Failure::Status(s))
            }
            Err(ResponseError::Status(s)) => self.give_up(GiveUpReason::Status(s)),
            Err(ResponseError::NoContent) => self.give_up(GiveUpReason::NoContent),
            Err(ResponseError::ContentEncoding) => self.give_up(GiveUpReason::ContentEncoding),
            Err(_) => self.give_up(GiveUpReason::ContentType),
        }
        verdict
    }

    /// Bytes arrived on the open stream (any bytes: events, comments, partial lines). Resets
    /// the idle timer.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::client::{Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().idle_timeout(Some(Duration::from_secs(30))));
    /// let _ = rc.poll_action();
    /// rc.handle_response(Instant::ZERO, 200, Some("text/event-stream"))?;
    /// rc.handle_bytes(Instant::from_secs(20));
    /// assert_eq!(rc.poll_timeout(), Some(Instant::from_secs(50)));
    /// # Ok::<(), ssekit::client::ResponseError>(())
    /// ```
    pub fn handle_bytes(&mut self, now: Instant) {
        let now = self.observe(now);
        if let State::Open { last_rx, .. } = &mut self.state {
            *last_rx = now;
        }
    }

    /// A decoded event: records its id (for `Last-Event-ID` and duplicate suppression) and
    /// says whether to deliver it. An empty id clears the last event ID, as in a browser.
    ///
    /// Duplicates are looked for only at the start of each accepted stream, where a server
    /// replays: from acceptance until the first event whose id was never seen, an event with a
    /// recently seen id is [`Delivery::Duplicate`]. After that, and on streams that repeat an
    /// id on purpose (one id for all deltas of a message), nothing is suppressed. Events without
    /// an id are always delivered (if they pass the type filter): they cannot be told apart.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Delivery, Reconnect, ReconnectConfig};
    /// use ssekit::Event;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().event_type("tick"));
    /// let other = Event::builder().event("tock")?.id("1")?.data("x").build();
    /// assert_eq!(rc.handle_event(&other), Delivery::Filtered);
    /// assert_eq!(rc.last_event_id(), "1");
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn handle_event(&mut self, event: &Event) -> Delivery {
        let mut replayed = false;
        if let Some(id) = event.id_field() {
            self.last_event_id = id.clone();
            if !id.is_empty() {
                if self.seen.insert(id) {
                    self.replaying = false;
                } else {
                    replayed = self.replaying;
                }
            }
        }
        if replayed {
            return Delivery::Duplicate;
        }
        // A new event, delivered or filtered out: the server is making progress.
        self.handle_progress();
        if self
            .config
            .event_type
            .as_ref()
            .is_some_and(|wanted| wanted.as_str() != event.event_type())
        {
            Delivery::Filtered
        } else {
            Delivery::Deliver
        }
    }

    /// Any decoded frame: events go through [`handle_event`](Self::handle_event) (its answer is
    /// returned), `retry:` through [`handle_retry`](Self::handle_retry), a raw-mode data-less
    /// block updates the last event ID; comments need nothing beyond
    /// [`handle_bytes`](Self::handle_bytes). `None` for frames that are not events.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Delivery, Reconnect};
    /// use ssekit::{Decoder, Frame};
    /// let mut rc = Reconnect::new(Default::default());
    /// let mut dec = Decoder::new();
    /// dec.feed_slice(b": hi\n\nretry: 5000\nid: 3\ndata: x\n\n")?;
    /// let mut delivered = 0;
    /// while let Some(frame) = dec.next_frame()? {
    ///     if rc.handle_frame(&frame) == Some(Delivery::Deliver) {
    ///         delivered += 1;
    ///     }
    /// }
    /// assert_eq!((delivered, rc.last_event_id()), (1, "3"));
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn handle_frame(&mut self, frame: &Frame) -> Option<Delivery> {
        match frame {
            Frame::Event(event) => Some(self.handle_event(event)),
            Frame::Dataless(event) => {
                if let Some(id) = event.id_field() {
                    if *id != self.last_event_id {
                        self.handle_progress();
                    }
                    self.last_event_id = id.clone();
                }
                None
            }
            Frame::Retry(millis) => {
                self.handle_retry(*millis);
                None
            }
            Frame::Comment(_) => None,
        }
    }

    /// A `retry:` field ([`Frame::Retry`]): the new reconnection time in
    /// milliseconds. Values under [`ReconnectConfig::min_delay`] wait the floor instead.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Disconnect, Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().jitter(0));
    /// let _ = rc.poll_action();
    /// rc.handle_response(Instant::ZERO, 200, Some("text/event-stream"))?;
    /// rc.handle_retry(0); // would be a tight loop
    /// rc.handle_closed(Instant::ZERO, Disconnect::Eof);
    /// assert_eq!(rc.poll_timeout(), Some(Instant::from_millis(100))); // the floor
    /// # Ok::<(), ssekit::client::ResponseError>(())
    /// ```
    pub fn handle_retry(&mut self, millis: u64) {
        self.reconnection_time = Duration::from_millis(millis);
    }

    /// The stream made progress: it delivered a new event or advanced the last event ID.
    /// The failure count starts over, so the next failure waits the reconnection time and
    /// [`max_attempts`](ReconnectConfig::max_attempts) counts from there. A connection
    /// that makes progress is healthy however short it is (a server that ends each stream
    /// after one event, a proxy that cuts responses every few seconds).
    /// [`handle_event`](Self::handle_event) calls it for every event that is not a replay;
    /// call it yourself when progress is judged elsewhere (an ORS call resumed by task id
    /// replays its events, and only events past the replay are new).
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Disconnect, Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().jitter(0).max_attempts(Some(1)));
    /// for second in 0..10 {
    ///     let now = Instant::from_secs(second * 10);
    ///     let _connect = rc.poll_action();
    ///     rc.handle_response(now, 200, Some("text/event-stream"))?;
    ///     rc.handle_progress();
    ///     rc.handle_closed(now, Disconnect::Truncated); // cut after an event, every time
    ///     assert_eq!(rc.attempts(), 1);
    ///     rc.handle_timeout(rc.poll_timeout().unwrap());
    /// }
    /// assert!(!rc.is_stopped());
    /// # Ok::<(), ssekit::client::ResponseError>(())
    /// ```
    pub fn handle_progress(&mut self) {
        self.attempts = 0;
    }

    /// A refused response's `Retry-After` (a retried 503 or 429, say), as a wait: the
    /// scheduled reconnect comes no earlier than `delay` after the response. Call it after
    /// [`handle_response_head`](Self::handle_response_head) refused the response; it only
    /// lengthens a wait that is scheduled, and like a `retry:` it is honoured as long as it
    /// is. Parsing the header (seconds or an HTTP date) is the transport's job.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::client::{Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().jitter(0));
    /// let _ = rc.poll_action();
    /// let _refused = rc.handle_response(Instant::ZERO, 429, None);
    /// assert_eq!(rc.poll_timeout(), Some(Instant::from_secs(3)));
    /// rc.handle_retry_after(Duration::from_secs(20));
    /// assert_eq!(rc.poll_timeout(), Some(Instant::from_secs(20)));
    /// rc.handle_retry_after(Duration::from_secs(1)); // never shortens it
    /// assert_eq!(rc.poll_timeout(), Some(Instant::from_secs(20)));
    /// ```
    pub fn handle_retry_after(&mut self, delay: Duration) {
        let asked = self.now.saturating_add(delay);
        if let State::Waiting { until } = &mut self.state {
            *until = (*until).max(asked);
        }
    }

    /// The connection attempt or the stream ended. Schedules a reconnect (or gives up, by
    /// policy). Ignored unless a connection is outstanding or open. A clean end of an open
    /// stream is no failure: the reconnect comes after the reconnection time, without growth
    /// and without counting toward [`max_attempts`](ReconnectConfig::max_attempts) (or the
    /// stream stops, with [`stop_on_clean_end`](ReconnectConfig::stop_on_clean_end)). A cut
    /// stream and a failed connection are failures. With reconnecting off, the give-up
    /// tells them apart ([`Failure::Eof`], [`Failure::Truncated`], [`Failure::Network`]).
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Action, Disconnect, GiveUpReason, Failure, Reconnect, ReconnectConfig};
    /// use ssekit::time::Instant;
    /// let mut rc = Reconnect::new(ReconnectConfig::default().reconnect(false));
    /// let _ = rc.poll_action();
    /// rc.handle_closed(Instant::ZERO, Disconnect::Error);
    /// assert_eq!(
    ///     rc.poll_action(),
    ///     Some(Action::GiveUp(GiveUpReason::ReconnectDisabled { last: Failure::Network }))
    /// );
    /// let mut cut = Reconnect::new(ReconnectConfig::default().reconnect(false));
    /// let _ = cut.poll_action();
    /// cut.handle_response(Instant::ZERO, 200, Some("text/event-stream"))?;
    /// cut.handle_closed(Instant::ZERO, Disconnect::Truncated);
    /// assert_eq!(
    ///     cut.poll_action(),
    ///     Some(Action::GiveUp(GiveUpReason::ReconnectDisabled { last: Failure::Truncated }))
    /// );
    /// # Ok::<(), ssekit::client::ResponseError>(())
    /// ```
    pub fn handle_closed(&mut self, now: Instant, how: Disconnect) {
        let now = self.observe(now);
        let failure = match how {
            Disconnect::Eof => Failure::Eof,
            Disconnect::Truncated => Failure::Truncated,
            Disconnect::Error => Failure::Network,
        };
        match self.state {
            State::Connecting => self.fail(now, failure),
            State::Open { since, last_rx } => {
                // Alive until its last bytes: a silent minute before a close is no health.
                self.stream_ended(last_rx, since);
                if how == Disconnect::Eof {
                    self.ended(now);
                } else {
                    self.fail(now, failure);
                }
            }
            _ => {}
        }
    }

    /// Stops for good, as `EventSource.close()` does: no further actions. Close the
    /// connection yourself.
    ///
    /// # Example
    /// ```
    /// let mut rc = ssekit::client::Reconnect::new(Default::default());
    /// rc.stop();
    /// assert!(rc.poll_action().is_none());
    /// assert!(rc.is_stopped());
    /// ```
    pub fn stop(&mut self) {
        self.state = State::Stopped { report: None };
        self.pending_close = None;
    }

    /// Whether the machine has stopped (given up or [`stop`](Self::stop)ped).
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::client::Reconnect::new(Default::default()).is_stopped());
    /// ```
    pub fn is_stopped(&self) -> bool {
        matches!(self.state, State::Stopped { .. })
    }

    /// Whether a stream is open (its response was accepted and it has not ended).
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::client::Reconnect::new(Default::default()).is_open());
    /// ```
    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open { .. })
    }

    /// The last event ID, sent as `Last-Event-ID` on the next connection when not empty.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::client::Reconnect::new(Default::default()).last_event_id(), "");
    /// ```
    pub fn last_event_id(&self) -> &str {
        self.last_event_id.as_str()
    }

    /// Sets the last event ID, e.g. from [`Decoder::last_event_id_bytes`](crate::Decoder::last_event_id_bytes),
    /// which also sees ids of blocks without data, or from storage when resuming a stream
    /// in a new process.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Action, Reconnect};
    /// let mut rc = Reconnect::new(Default::default());
    /// rc.set_last_event_id("41".into());
    /// let Some(Action::Connect { headers, .. }) = rc.poll_action() else { unreachable!() };
    /// assert!(headers.iter().any(|(n, v)| n == "Last-Event-ID" && v == "41"));
    /// ```
    pub fn set_last_event_id(&mut self, id: Utf8Bytes) {
        self.last_event_id = id;
    }

    /// Adds or replaces a request header for the next connections (refresh a token before a
    /// reconnect). `Last-Event-ID` sets the last event ID, as
    /// [`set_last_event_id`](Self::set_last_event_id) does.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::{Action, Reconnect, ReconnectConfig};
    /// let mut rc = Reconnect::new(ReconnectConfig::default().header("Authorization", "Bearer old")?);
    /// rc.set_header("authorization", "Bearer new")?;
    /// let Some(Action::Connect { headers, .. }) = rc.poll_action() else { unreachable!() };
    /// assert!(headers.iter().any(|(_, v)| v == "Bearer new"));
    /// assert!(!headers.iter().any(|(_, v)| v == "Bearer old"));
    /// # Ok::<(), ssekit::client::HeaderError>(())
    /// ```
    pub fn set_header(
        &mut self,
        name: impl Into<Utf8Bytes>,
        value: impl Into<Utf8Bytes>,
    ) -> Result<(), HeaderError> {
        let (name, value) = (name.into(), value.into());
        set_header(&mut self.config.headers, name.clone(), value.clone())?;
        if is_last_event_id(&name) {
            self.last_event_id = value;
        }
        Ok(())
    }

    /// Consecutive failures since the last healthy stream.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::client::Reconnect::new(Default::default()).attempts(), 0);
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The policy in use.
    ///
    /// # Example
    /// ```
    /// let rc = ssekit::client::Reconnect::new(Default::default());
    /// assert!(rc.config().reconnect_value());
    /// ```
    pub fn config(&self) -> &ReconnectConfig {
        &self.config
    }

    fn observe(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    fn request_headers(&self) -> Vec<Header> {
        let configured = |name: &str| {
            self.config
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let mut headers = Vec::with_capacity(3 + self.config.headers.len());
        for (name, value) in [
            ("Accept", "text/event-stream"),
            ("Cache-Control", "no-cache"),
        ] {
            if !configured(name) {
                headers.push((Utf8Bytes::from_static(name), Utf8Bytes::from_static(value)));
            }
        }
        // A configured `Last-Event-ID` only seeded `last_event_id` (see `header`). An id with
        // a control character is valid SSE but cannot be an HTTP header value: it is left
        // out (the server then replays from its start, or not), rather than failing the
        // request.
        if !self.last_event_id.is_empty() && invalid_value_byte(&self.last_event_id).is_none() {
            headers.push((
                Utf8Bytes::from_static("Last-Event-ID"),
                self.last_event_id.clone(),
            ));
        }
        headers.extend(
            self.config
                .headers
                .iter()
                .filter(|(name, _)| !is_last_event_id(name))
                .cloned(),
        );
        headers
    }

    /// An accepted stream, open since `since`, ended; it was last alive at `alive`: one
    /// alive long enough resets the backoff (see [`ReconnectConfig::reset_after`]).
    fn stream_ended(&mut self, alive: Instant, since: Instant) {
        if alive.saturating_duration_since(since) >= self.config.reset_after {
            self.attempts = 0;
        }
    }

    fn give_up(&mut self, reason: GiveUpReason) {
        #[cfg(feature = "tracing")]
        tracing::debug!(target: "ssekit::client", reason = %reason, "the reconnect policy stops");
        self.state = State::Stopped {
            report: Some(reason),
        };
    }

    /// An open stream ended cleanly: no failure. Reconnect after the reconnection time (no
    /// growth), unless reconnecting is off or the policy ends calls here.
    fn ended(&mut self, now: Instant) {
        if !self.config.reconnect {
            return self.give_up(GiveUpReason::ReconnectDisabled { last: Failure::Eof });
        }
        if self.config.stop_on_clean_end {
            return self.give_up(GiveUpReason::Ended);
        }
        let delay = self.delay(1);
        #[cfg(feature = "tracing")]
        tracing::debug!(target: "ssekit::client", delay_ms = delay, "clean end: reconnect after the reconnection time");
        self.wait(now, delay);
    }

    /// Waits `delay` ms from `now` before the next connection.
    fn wait(&mut self, now: Instant, delay: u64) {
        // A wait past the end of time (`retry:` near `u64::MAX`) waits until then, as asked.
        // No wait at all (no floor and `retry: 0`), or a clock already at its end: connect
        // now rather than arm a timer that could not move past `now`.
        let until = now.saturating_add(Duration::from_millis(delay));
        self.state = if until > now {
            State::Waiting { until }
        } else {
            State::ConnectDue
        };
    }

    fn fail(&mut self, now: Instant, failure: Failure) {
        if !self.config.reconnect {
            return self.give_up(GiveUpReason::ReconnectDisabled { last: failure });
        }
        if self
            .config
            .max_attempts
            .is_some_and(|max| self.attempts >= max)
        {
            return self.give_up(GiveUpReason::MaxAttempts {
                attempts: self.attempts,
                last: failure,
            });
        }
        self.attempts = self.attempts.saturating_add(1);
        let delay = self.delay(self.attempts);
        #[cfg(feature = "tracing")]
        tracing::debug!(
            target: "ssekit::client",
            failure = %failure,
            retry = self.attempts,
            max = ?self.config.max_attempts,
            delay_ms = delay,
            "a failed attempt: retry after a grown wait"
        );
        self.wait(now, delay);
    }

    /// The wait before retry number `attempt` (1-based), in milliseconds: the reconnection
    /// time (at least the floor) doubled per earlier consecutive failure, capped, plus jitter
    /// that keeps it within `[base, cap]`: where `grown + spread` would pass the cap, the
    /// window `[cap - spread, cap]` is drawn from instead, so waits at the cap still spread.
    ///
    /// When the reconnection time itself is at or above `max_delay` (a server's `retry:`, or
    /// a config with both equal), it wins over the cap and the jitter lies above it: clients
    /// that were told the same time must still not reconnect in lockstep.
    fn delay(&mut self, attempt: u32) -> u64 {
        let base = millis_ceil(self.reconnection_time).max(millis_ceil(self.config.min_delay));
        let max = millis_ceil(self.config.max_delay);
        let spread_of = |wait: u64| {
            let spread = u128::from(wait) * u128::from(self.config.jitter_percent) / 100;
            u64::try_from(spread).unwrap_or(u64::MAX)
        };
        if base >= max {
            let spread = spread_of(base);
            return base.saturating_add(self.rng.below_or_equal(spread));
        }
        let doublings = attempt.saturating_sub(1).min(63);
        let grown = base.saturating_mul(1u64 << doublings).min(max);
        let spread = spread_of(grown);
        let start = grown.min(max.saturating_sub(spread)).max(base);
        let jitter = self.rng.below_or_equal(spread);
        start.saturating_add(jitter).min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(config: ReconnectConfig) -> Reconnect {
        Reconnect::new(config.jitter(0))
    }

    /// Drives one failed attempt at `now` and returns the scheduled wait in ms.
    fn fail_once(rc: &mut Reconnect, now: Instant) -> u64 {
        assert!(matches!(rc.poll_action(), Some(Action::Connect { .. })));
        rc.handle_closed(now, Disconnect::Error);
        let wake = rc.poll_timeout().unwrap();
        rc.handle_timeout(wake);
        (wake - now).as_millis() as u64
    }

    #[test]
    fn backoff_doubles_from_retry_timeout_and_caps() {
        let mut rc = exact(
            ReconnectConfig::default()
                .retry_timeout(Duration::from_millis(1_000))
                .max_delay(Duration::from_millis(10_000))
                .max_attempts(None),
        );
        let mut now = Instant::ZERO;
        let mut waits = Vec::new();
        for _ in 0..7 {
            let w = fail_once(&mut rc, now);
            waits.push(w);
            now += Duration::from_millis(w);
        }
        assert_eq!(waits, [1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
    }

    #[test]
    fn by_default_a_wrong_port_gives_up_after_five_retries_with_a_typed_reason() {
        let mut rc = exact(ReconnectConfig::default());
        let mut now = Instant::ZERO;
        let mut waits = Vec::new();
        loop {
            assert!(matches!(rc.poll_action(), Some(Action::Connect { .. })));
            rc.handle_closed(now, Disconnect::Error);
            let Some(wake) = rc.poll_timeout() else { break };
            waits.push((wake - now).as_millis());
            now = wake;
            rc.handle_timeout(wake);
        }
        assert_eq!(waits, [3_000, 6_000, 12_000, 24_000, 48_000]);
        match rc.poll_action() {
            Some(Action::GiveUp(GiveUpReason::MaxAttempts { attempts: 5, last })) => {
                assert_eq!(last, Failure::Network);
            }
            other => panic!("expected a give-up after 5 retries, got {other:?}"),
        }
        assert_eq!(rc.poll_action(), None);
    }

    #[test]
    fn give_up_says_retry_or_retries() {
        use alloc::string::ToString;
        let one = GiveUpReason::MaxAttempts {
            attempts: 1,
            last: Failure::Network,
        };
        assert!(
            one.to_string()
                .starts_with("gave up after 1 retry in a row"),
            "{one}"
        );
        let five = GiveUpReason::MaxAttempts {
            attempts: 5,
            last: Failure::Network,
        };
        assert!(
            five.to_string()
                .starts_with("gave up after 5 retries in a row"),
            "{five}"
        );
    }

    #[test]
    fn jittered_waits_never_pass_the_cap_and_still_spread_at_it() {
        for seed in 0..200 {
            let mut rc = Reconnect::new(
                ReconnectConfig::default()
                    .retry_timeout(Duration::from_millis(1_000))
                    .max_delay(Duration::from_millis(10_000))
                    .max_attempts(None)
                    .jitter_seed(seed),
            );
            let mut now = Instant::ZERO;
            let mut at_cap = BTreeSet::new();
            for attempt in 1..=8u32 {
                let w = fail_once(&mut rc, now);
                let grown = (1_000u64 << (attempt - 1)).min(10_000);
                assert!(w <= 10_000, "seed {seed}: wait {w} ms passes the 10 s cap");
                assert!(
                    w >= grown.min(8_000),
                    "seed {seed}: wait {w} ms below its window"
                );
                if grown == 10_000 {
                    at_cap.insert(w);
                }
                now += Duration::from_millis(w);
            }
            assert!(
                at_cap.len() > 1,
                "seed {seed}: waits at the cap do not spread"
            );
        }
        // A reconnection time above the cap wins over it, jittered above it: the cap never
        // shortens it, and clients told the same time still spread.
        let mut firsts = BTreeSet::new();
        for seed in 0..50 {
            let mut rc = Reconnect::new(
                ReconnectConfig::default()
                    .retry_timeout(Duration::from_millis(20_000))
                    .max_delay(Duration::from_millis(10_000))
                    .jitter_seed(seed),
            );
            let w = fail_once(&mut rc, Instant::ZERO);
            assert!((20_000..=24_000).contains(&w), "seed {seed}: {w}");
            firsts.insert(w);
        }
        assert!(firsts.len() > 1, "equal reconnection times in lockstep");
    }

    #[test]
    fn content_type_parsing() {
        for ok in [
            "text/event-stream",
            "TEXT/EVENT-STREAM",
            " text/event-stream ",
            "text/event-stream;charset=utf-8",
            "text/event-stream ; charset=\"utf-8\"",
        ] {
            assert!(is_event_stream(ok), "{ok}");
        }
        for bad in [
            "",
            "text",
            "text/",
            "/event-stream",
            "text/plain",
            "text /event-stream",
            "text/event-stream, text/html",
            "application/json",
        ] {
            assert!(!is_event_stream(bad), "{bad}");
        }
    }

    #[test]
    fn recent_ids_are_bounded_in_count_and_bytes() {
        let mut ids = RecentIds::new(2, 1_000);
        for id in ["a", "b", "c"] {
            assert!(ids.insert(&Utf8Bytes::from_static(id)));
        }
        assert!(ids.insert(&Utf8Bytes::from_static("a"))); // evicted, so new again
        assert!(!ids.insert(&Utf8Bytes::from_static("c")));
        let mut small = RecentIds::new(100, 4);
        assert!(small.insert(&Utf8Bytes::from_static("ab")));
        assert!(small.insert(&Utf8Bytes::from_static("cd")));
        assert!(small.insert(&Utf8Bytes::from_static("ef"))); // evicts "ab"
        assert!(small.insert(&Utf8Bytes::from_static("ab")));
        assert!(small.bytes <= 4);
        assert!(small.insert(&Utf8Bytes::from_static("too long"))); // never recorded
        assert!(small.insert(&Utf8Bytes::from_static("too long")));
    }

    #[test]
    fn standard_headers_yield_to_configured_ones() {
        let mut rc = Reconnect::new(
            ReconnectConfig::default()
                .header("accept", "text/event-stream, */*")
                .unwrap(),
        );
        let Some(Action::Connect { headers, .. }) = rc.poll_action() else {
            panic!()
        };
        assert_eq!(
            headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("accept"))
                .count(),
            1
        );
    }
}

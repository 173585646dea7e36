//! [`KeepAlive`]: a comment frame after an interval of silence.

use core::time::Duration;

use bytes::Bytes;

use crate::encode::{EncodeError, Encoder};
use crate::time::Instant;

/// Emits a keep-alive comment (`: ping\n` by default) whenever the stream has been silent
/// for `interval`. Any write resets the timer, so a busy stream carries no pings; a ping
/// itself counts as a write.
///
/// No blank line follows the comment, where the specs' servers send `: keepalive\n\n` or
/// `: heartbeat\n\n`: httpx-sse and the openai SDK turn that blank line into an empty event
/// once an id has been seen, and the openai SDK then fails on it (the interop suite found
/// it). A comment line alone is ignored by every client, and WHATWG-equivalent.
///
/// Proxies and clients drop silent connections (the ORS Python client after 30 s), so a
/// server should always run one. The timer lives in the transport: wait until
/// [`poll_timeout`](Self::poll_timeout), call [`handle_timeout`](Self::handle_timeout), send
/// what [`poll_transmit`](Self::poll_transmit) returns.
///
/// # Example
/// ```
/// use ssekit::server::KeepAlive;
/// use ssekit::time::Instant;
///
/// let mut ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO);
/// assert_eq!(ka.poll_timeout(), Some(Instant::from_secs(10)));
/// ka.handle_write(Instant::from_secs(4));                 // an event went out
/// assert_eq!(ka.poll_timeout(), Some(Instant::from_secs(14)));
/// ka.handle_timeout(Instant::from_secs(14));
/// assert_eq!(ka.poll_transmit().as_deref(), Some(&b": ping\n"[..]));
/// assert_eq!(ka.poll_transmit(), None);
/// assert_eq!(ka.poll_timeout(), Some(Instant::from_secs(24)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeepAlive {
    interval: Duration,
    frame: Bytes,
    last_write: Instant,
    pending: bool,
}

impl KeepAlive {
    /// The ORS interval: 10 s (the official client gives up after 30 s of silence).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::server::KeepAlive::ORS.as_secs(), 10);
    /// ```
    pub const ORS: Duration = Duration::from_secs(10);

    /// The Open Responses Server interval: 15 s.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::server::KeepAlive::OPEN_RESPONSES.as_secs(), 15);
    /// ```
    pub const OPEN_RESPONSES: Duration = Duration::from_secs(15);

    /// The agent platform interval: 30 s.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::server::KeepAlive::AGENT_PLATFORM.as_secs(), 30);
    /// ```
    pub const AGENT_PLATFORM: Duration = Duration::from_secs(30);

    /// A keep-alive whose silence is counted from `now` (when the response head went out).
    /// Intervals under 1 ms are raised to 1 ms.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// let ka = KeepAlive::new(Duration::from_secs(15), Instant::from_secs(100));
    /// assert_eq!(ka.poll_timeout(), Some(Instant::from_secs(115)));
    /// ```
    pub fn new(interval: Duration, now: Instant) -> Self {
        KeepAlive {
            interval: interval.max(Duration::from_millis(1)),
            frame: Bytes::from_static(b": ping\n"),
            last_write: now,
            pending: false,
        }
    }

    /// Uses `text` as the comment (refused if it holds CR or LF). An empty text sends `: \n`.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// let mut ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO).with_comment("keep-alive")?;
    /// ka.handle_timeout(Instant::from_secs(10));
    /// assert_eq!(ka.poll_transmit().as_deref(), Some(&b": keep-alive\n"[..]));
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn with_comment(mut self, text: &str) -> Result<Self, EncodeError> {
        let mut frame = alloc::vec::Vec::new();
        Encoder::new().comment(text, &mut frame)?;
        self.frame = Bytes::from(frame);
        Ok(self)
    }

    /// The interval in use.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// assert_eq!(KeepAlive::new(KeepAlive::ORS, Instant::ZERO).interval(), KeepAlive::ORS);
    /// ```
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Something was written to the stream at `now`: restart the silence count. A ping not
    /// yet taken with `poll_transmit` is dropped, since the write already shows liveness.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// let mut ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO);
    /// ka.handle_timeout(Instant::from_secs(10));
    /// ka.handle_write(Instant::from_secs(10));
    /// assert_eq!(ka.poll_transmit(), None);
    /// ```
    pub fn handle_write(&mut self, now: Instant) {
        self.last_write = self.last_write.max(now);
        self.pending = false;
    }

    /// Advances the timer: after `interval` of silence a ping becomes ready and the silence
    /// count restarts. Early and spurious calls do nothing.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// let mut ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO);
    /// ka.handle_timeout(Instant::from_millis(9_999));
    /// assert_eq!(ka.poll_transmit(), None);
    /// ```
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|deadline| now >= deadline) {
            self.pending = true;
            self.last_write = now;
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called; `None` only when
    /// the deadline would lie past [`Instant::MAX`].
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// let ka = KeepAlive::new(KeepAlive::AGENT_PLATFORM, Instant::ZERO);
    /// assert_eq!(ka.poll_timeout(), Some(Instant::from_secs(30)));
    /// ```
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.last_write.checked_add(self.interval)
    }

    /// The ping to write now, if one is due.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// let mut ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO);
    /// assert_eq!(ka.poll_transmit(), None);
    /// ```
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        core::mem::take(&mut self.pending).then(|| self.frame.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_going_backwards_does_not_move_the_deadline_back() {
        let mut ka = KeepAlive::new(KeepAlive::ORS, Instant::from_secs(100));
        ka.handle_write(Instant::from_secs(50));
        assert_eq!(ka.poll_timeout(), Some(Instant::from_secs(110)));
        ka.handle_timeout(Instant::ZERO);
        assert_eq!(ka.poll_transmit(), None);
    }

    #[test]
    fn zero_interval_is_raised_so_the_timer_always_advances() {
        let mut ka = KeepAlive::new(Duration::ZERO, Instant::ZERO);
        let t = ka.poll_timeout().unwrap();
        ka.handle_timeout(t);
        assert!(ka.poll_timeout().unwrap() > t);
    }
}

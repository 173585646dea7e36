//! What a [`Decoder`] is told: its [`Limits`], its dispatch [`Mode`] and what
//! it does after a limit is hit ([`OnLimit`]), gathered in a [`Config`].

#[cfg(doc)]
use super::{DecodeError, Decoder, Frame};

/// Which blocks are surfaced as frames.
///
/// # Example
/// ```
/// use ssekit::{decode::Mode, Config, Decoder, Frame};
/// let mut dec = Decoder::with_config(Config::default().mode(Mode::Raw));
/// dec.feed_slice(b"event: ping\n\n")?;
/// assert!(matches!(dec.next_frame()?, Some(Frame::Dataless(e)) if e.event_type() == "ping"));
/// # Ok::<(), ssekit::DecodeError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// What a browser's `EventSource` dispatches: blocks without data are dropped.
    #[default]
    Browser,
    /// Also surface data-less blocks that name an event type or set an id, as
    /// [`Frame::Dataless`].
    Raw,
}

/// What the decoder does after a [`Limits`] violation.
///
/// # Example
/// ```
/// use ssekit::{decode::OnLimit, Config, Decoder, Limits};
/// let config = Config::default().limits(Limits::default().max_line(4)).on_limit(OnLimit::Resync);
/// let mut dec = Decoder::with_config(config);
/// dec.feed_slice(b"data: too long\n\ndata: ok\n\n")?;
/// assert!(dec.next_frame().is_err());              // reported once ...
/// assert!(dec.next_frame().is_err());              // "data: ok" is itself over 4 bytes
/// # Ok::<(), ssekit::DecodeError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OnLimit {
    /// Return the error from every later call until [`Decoder::reset`].
    #[default]
    FailStop,
    /// Return the error once, drop the offending event, skip to the next blank line and go on.
    Resync,
}

/// Bounds on what one stream may make the decoder hold.
///
/// # Example
/// ```
/// let limits = ssekit::Limits::default().max_event(64 << 20);
/// assert_eq!(limits.event_limit(), 64 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    pub(super) max_line: usize,
    pub(super) max_event: usize,
    pub(super) max_buffered: usize,
}

impl Default for Limits {
    /// 16 MiB per line, 16 MiB of data per event, 16 MiB of undrained input.
    fn default() -> Self {
        Limits {
            max_line: 16 << 20,
            max_event: 16 << 20,
            max_buffered: 16 << 20,
        }
    }
}

impl Limits {
    /// Longest line, in bytes without its line ending. A line that straddles pieces is
    /// buffered, and when frames are borrowed the last such line is kept while the next is
    /// read: line buffers hold at most two lines of this length.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Limits::default().max_line(10).line_limit(), 10);
    /// ```
    pub const fn max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes;
        self
    }

    /// Most data in one event, in bytes (the `data:` values joined with LF).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Limits::default().max_event(10).event_limit(), 10);
    /// ```
    pub const fn max_event(mut self, bytes: usize) -> Self {
        self.max_event = bytes;
        self
    }

    /// Most input held between `feed` and the `next_frame` calls that consume it. A single
    /// `feed` into a drained decoder is always accepted (a `Bytes` is not copied); feeding
    /// more without draining past this bound is refused with [`DecodeError::BufferFull`].
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Limits::default().max_buffered(10).buffered_limit(), 10);
    /// ```
    pub const fn max_buffered(mut self, bytes: usize) -> Self {
        self.max_buffered = bytes;
        self
    }

    /// The line limit.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Limits::default().line_limit(), 16 << 20);
    /// ```
    pub const fn line_limit(&self) -> usize {
        self.max_line
    }

    /// The event data limit.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Limits::default().event_limit(), 16 << 20);
    /// ```
    pub const fn event_limit(&self) -> usize {
        self.max_event
    }

    /// The undrained input limit.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Limits::default().buffered_limit(), 16 << 20);
    /// ```
    pub const fn buffered_limit(&self) -> usize {
        self.max_buffered
    }
}

/// Decoder configuration: limits, dispatch mode and limit policy.
///
/// # Example
/// ```
/// use ssekit::{decode::{Mode, OnLimit}, Config, Limits};
/// let config = Config::default()
///     .limits(Limits::default().max_line(1 << 20))
///     .mode(Mode::Raw)
///     .on_limit(OnLimit::Resync);
/// let _dec = ssekit::Decoder::with_config(config);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Config {
    pub(super) limits: Limits,
    pub(super) mode: Mode,
    pub(super) on_limit: OnLimit,
    /// Comment lines are skipped instead of surfaced (false by default).
    pub(super) skip_comments: bool,
}

impl Config {
    /// Sets the limits.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit::Config::default().limits(ssekit::Limits::default());
    /// ```
    pub const fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the dispatch mode.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit::Config::default().mode(ssekit::decode::Mode::Raw);
    /// ```
    pub const fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets what happens after a limit is hit.
    ///
    /// # Example
    /// ```
    /// let _ = ssekit::Config::default().on_limit(ssekit::decode::OnLimit::Resync);
    /// ```
    pub const fn on_limit(mut self, on_limit: OnLimit) -> Self {
        self.on_limit = on_limit;
        self
    }

    /// Whether comment lines are surfaced as [`Frame::Comment`] (the default) or skipped,
    /// as a browser does. A client that only watches for liveness can count bytes instead
    /// and skip them: each surfaced comment costs a frame.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Config, Decoder, Frame};
    /// let mut dec = Decoder::with_config(Config::default().comments(false));
    /// dec.feed_slice(b": ping\ndata: x\n\n")?;
    /// assert!(matches!(dec.next_frame()?, Some(Frame::Event(_))));
    /// assert!(!Config::default().comments(false).get_comments());
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub const fn comments(mut self, surface: bool) -> Self {
        self.skip_comments = !surface;
        self
    }

    /// Whether comment lines are surfaced as frames.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::Config::default().get_comments());
    /// ```
    pub const fn get_comments(&self) -> bool {
        !self.skip_comments
    }

    /// The limits in force.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Config::default().get_limits(), ssekit::Limits::default());
    /// ```
    pub const fn get_limits(&self) -> Limits {
        self.limits
    }

    /// The dispatch mode.
    ///
    /// # Example
    /// ```
    /// use ssekit::decode::Mode;
    /// assert_eq!(ssekit::Config::default().get_mode(), Mode::Browser);
    /// ```
    pub const fn get_mode(&self) -> Mode {
        self.mode
    }

    /// The limit policy.
    ///
    /// # Example
    /// ```
    /// use ssekit::decode::OnLimit;
    /// assert_eq!(ssekit::Config::default().get_on_limit(), OnLimit::FailStop);
    /// ```
    pub const fn get_on_limit(&self) -> OnLimit {
        self.on_limit
    }
}

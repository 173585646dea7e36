//! Event-order validation: a [`Profile`] is a small state machine over the events of one
//! protocol; a [`Validator`] feeds it events, counts them and turns the first broken
//! [`Rule`] into a [`SequenceError`] that stays.
//!
//! Some rules are warnings ([`Rule::warning`]): the protocol allows the event, but a known
//! client rejects it. A profile reports them with [`Profile::poll_warning`]; they stop
//! nothing, and [`Validator::warnings`] lists those of the last event checked.
//!
//! The built-in profiles live in [`crate::profile`]. Writing one is implementing two methods:
//!
//! ```
//! use ssekit::sequence::{Profile, Rule, SequenceError, Validator};
//! use ssekit::Event;
//!
//! /// `hello`, then any number of `tick`, then `bye`.
//! #[derive(Default)]
//! struct Greeting { said_hello: bool, said_bye: bool }
//!
//! const HELLO_FIRST: Rule = Rule::new("greeting.hello-first", "the first event is `hello`");
//! const AFTER_BYE: Rule = Rule::new("greeting.after-bye", "nothing follows `bye`");
//! const UNKNOWN: Rule = Rule::new("greeting.unknown", "only hello, tick and bye");
//!
//! impl Profile for Greeting {
//!     fn event(&mut self, event: &Event) -> Result<(), Rule> {
//!         if self.said_bye {
//!             return Err(AFTER_BYE);
//!         }
//!         match (self.said_hello, event.event_type()) {
//!             (false, "hello") => self.said_hello = true,
//!             (false, _) => return Err(HELLO_FIRST),
//!             (true, "tick") => {}
//!             (true, "bye") => self.said_bye = true,
//!             (true, _) => return Err(UNKNOWN),
//!         }
//!         Ok(())
//!     }
//!     fn is_terminated(&self) -> bool {
//!         self.said_bye
//!     }
//! }
//!
//! let named = |name: &'static str| Event::builder().event(name).map(|b| b.data("").build());
//! let mut v = Validator::new(Greeting::default());
//! v.event(&named("hello")?)?;
//! v.event(&named("tick")?)?;
//! // The stream stops here: "ended without a terminal event" is an outcome of its own.
//! assert!(matches!(v.finish(), Err(SequenceError::Unterminated { events: 2, .. })));
//!
//! let mut v = Validator::new(Greeting::default());
//! let err = v.event(&named("tick")?).unwrap_err();
//! assert_eq!(err.rule(), HELLO_FIRST);
//! assert_eq!(err.index(), Some(0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;

use alloc::vec::Vec;

use crate::decode::Frame;
use crate::event::Event;
use crate::frame_ref::{EventRef, FrameRef};
use crate::text::Utf8Bytes;

/// A rule of a protocol: a stable identifier (`profile.rule-name`) and one sentence. An
/// error rule ([`Rule::new`]) is part of the protocol: an event that breaks it ends the
/// validation. A warning rule ([`Rule::warning`]) is not: the protocol allows what it
/// finds, but a known client rejects it.
///
/// # Example
/// ```
/// use ssekit::sequence::Rule;
/// const MINE: Rule = Rule::new("mine.first", "the first event is `start`");
/// assert_eq!(MINE.id(), "mine.first");
/// assert_eq!(MINE.to_string(), "mine.first: the first event is `start`");
/// assert!(!MINE.is_warning());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    id: &'static str,
    description: &'static str,
    warning: bool,
}

impl Rule {
    /// An error rule with an identifier and a description of what it asks.
    ///
    /// # Example
    /// ```
    /// let rule = ssekit::sequence::Rule::new("x.y", "z");
    /// assert_eq!(rule.description(), "z");
    /// ```
    pub const fn new(id: &'static str, description: &'static str) -> Self {
        Rule {
            id,
            description,
            warning: false,
        }
    }

    /// A warning rule: what it finds is valid in the protocol, but a known client chokes on
    /// it. The description says what was found and who chokes, as a message would
    /// (`` `end` has no `metadata`; the official ors-sdk client raises on it ``). A profile
    /// reports it with [`Profile::poll_warning`], never as the error of
    /// [`Profile::event`].
    ///
    /// # Example
    /// ```
    /// let rule = ssekit::sequence::Rule::warning("x.old-client", "`x` has no `y`; client z raises on it");
    /// assert!(rule.is_warning());
    /// ```
    pub const fn warning(id: &'static str, description: &'static str) -> Self {
        Rule {
            id,
            description,
            warning: true,
        }
    }

    /// Whether this is a warning rule ([`Rule::warning`]).
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::sequence::UNTERMINATED.is_warning());
    /// assert!(ssekit::profile::ors::END_METADATA.is_warning());
    /// ```
    pub const fn is_warning(&self) -> bool {
        self.warning
    }

    /// The identifier, `profile.rule-name`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::sequence::UNTERMINATED.id(), "sequence.unterminated");
    /// ```
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// What the rule asks, in one sentence.
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::sequence::UNTERMINATED.description().is_empty());
    /// ```
    pub const fn description(&self) -> &'static str {
        self.description
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.id, self.description)
    }
}

/// A rule is the error of [`Profile::event`]: the rule the event breaks.
impl core::error::Error for Rule {}

/// The rule of every profile: a stream ends with its terminal event. Reported by
/// [`Validator::finish`] as [`SequenceError::Unterminated`].
///
/// # Example
/// ```
/// use ssekit::sequence::{Validator, UNTERMINATED};
/// let mut v = Validator::new(ssekit::profile::ors::ToolCall::new());
/// assert_eq!(v.finish().unwrap_err().rule(), UNTERMINATED);
/// ```
pub const UNTERMINATED: Rule = Rule::new(
    "sequence.unterminated",
    "the stream ends with its terminal event",
);

/// Who produced the events: this program (a bug here) or the peer (a bug there).
///
/// # Example
/// ```
/// use ssekit::sequence::{Origin, Validator};
/// let v = Validator::new(ssekit::profile::chat::Completions::new()).origin(Origin::Local);
/// assert_eq!(v.current_origin(), Origin::Local);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Origin {
    /// Events this program is about to send (a server checking itself).
    Local,
    /// Events received from the peer (the default).
    #[default]
    Remote,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Local => "local",
            Origin::Remote => "remote",
        })
    }
}

/// A protocol as a state machine over observed events.
///
/// `event` is called once per dispatched event, in order, and returns the rule the event
/// breaks, if any; after an error it is not called again. `is_terminated` says whether the
/// stream may end here. See the [module docs](self) for a complete profile.
///
/// # Example
/// ```
/// use ssekit::sequence::{Profile, Rule};
/// struct Anything;
/// impl Profile for Anything {
///     fn event(&mut self, _: &ssekit::Event) -> Result<(), Rule> { Ok(()) }
///     fn is_terminated(&self) -> bool { true }
/// }
/// assert!(Anything.event(&ssekit::Event::message("x")).is_ok());
/// ```
pub trait Profile {
    /// Observes one event; `Err` names the rule it breaks.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// let mut p = ssekit::profile::chat::Completions::new();
    /// assert!(p.event(&ssekit::Event::message("[DONE]")).is_ok());
    /// assert!(p.event(&ssekit::Event::message("{}")).is_err());
    /// ```
    fn event(&mut self, event: &Event) -> Result<(), Rule>;

    /// Observes one borrowed event, from
    /// [`Decoder::next_frame_ref`](crate::Decoder::next_frame_ref): the same rules as
    /// [`event`](Self::event). The default makes an owned copy and calls `event`; profiles
    /// that only read the event (every built-in one but ORS, which keeps chunks and ids as
    /// shared bytes) implement this one and have `event` call it with
    /// [`Event::as_event_ref`], so that borrowed frames are validated without a copy.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// use ssekit::{Decoder, FrameRef};
    /// let mut p = ssekit::profile::chat::Completions::new();
    /// let mut dec = Decoder::new();
    /// dec.feed_slice(b"data: {}\n\ndata: [DONE]\n\n")?;
    /// while let Some(FrameRef::Event(ev)) = dec.next_frame_ref()? {
    ///     assert!(p.event_ref(ev).is_ok());
    /// }
    /// assert!(p.is_terminated());
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        self.event(&event.to_event())
    }

    /// Observes a comment (keep-alive). Every built-in profile allows comments anywhere,
    /// which is the default.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// let mut p = ssekit::profile::ors::ToolCall::new();
    /// assert!(p.comment("ping").is_ok());
    /// ```
    fn comment(&mut self, text: &str) -> Result<(), Rule> {
        let _ = text;
        Ok(())
    }

    /// The next warning ([`Rule::warning`]) about the event just observed, if any: the
    /// event is valid, but a known client rejects it. The [`Validator`] calls it after every
    /// event [`event`](Self::event) accepted, until it returns `None`; a profile reports
    /// each warning of an event once, and none of earlier events. The default has none.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::ors::{ToolCall, END_METADATA};
    /// use ssekit::sequence::Profile;
    /// use ssekit::Event;
    /// let mut p = ToolCall::new();
    /// p.event(&Event::builder().event("task_id")?.data("t").build())?;
    /// assert_eq!(p.poll_warning(), None);
    /// let end = r#"{"ok":true,"output":{"blocks":[],"reward":1.0,"finished":true}}"#;
    /// p.event(&Event::builder().event("end")?.data(end).build())?;
    /// assert_eq!(p.poll_warning(), Some(END_METADATA));
    /// assert_eq!(p.poll_warning(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    fn poll_warning(&mut self) -> Option<Rule> {
        None
    }

    /// Whether the stream may end now (its terminal event was seen).
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// assert!(!ssekit::profile::ors::ToolCall::new().is_terminated());
    /// ```
    fn is_terminated(&self) -> bool;

    /// The failure the stream's producer reported, once a terminal event said the work
    /// failed (an ORS `error`, OpenAI's `error` or `response.failed`, Anthropic's `error`):
    /// a valid end of the stream, but not a success, and never to be dropped. `None` while
    /// the stream runs and after a successful end. The default never reports one.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// let mut p = ssekit::profile::ors::ToolCall::new();
    /// p.event(&ssekit::Event::builder().event("error")?.data("Session not found").build())?;
    /// assert_eq!(p.failure().unwrap().message, "Session not found");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn failure(&self) -> Option<Failure> {
        None
    }

    /// The name to report for `event` in a [`Violation`]. The default is the event type
    /// (`event:` field or `message`); profiles whose events are named inside the JSON data
    /// return that name. Called only when reporting.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// let p = ssekit::profile::chat::Completions::new();
    /// assert_eq!(p.event_name(ssekit::Event::message("x").as_event_ref()), "message");
    /// ```
    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        event
            .event_field()
            .map_or(Utf8Bytes::from_static("message"), Utf8Bytes::copy_from_str)
    }
}

/// A failure a stream's producer reported in its terminal event ([`Profile::failure`]):
/// the provider's own code and message, kept for the caller to act on.
///
/// # Example
/// ```
/// use ssekit::sequence::Failure;
/// let failure = Failure::new("error", Some("overloaded_error".into()), "Overloaded");
/// assert_eq!(failure.to_string(), "`error` (overloaded_error): Overloaded");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Failure {
    /// The event that reported it, as the profile names it (`error`, `response.failed`).
    pub event: Utf8Bytes,
    /// The provider's machine-readable kind, when it sent one (`overloaded_error`,
    /// `server_error`).
    pub code: Option<alloc::string::String>,
    /// The provider's message.
    pub message: alloc::string::String,
}

impl Failure {
    /// A failure reported by `event`.
    ///
    /// # Example
    /// See [`Failure`].
    pub fn new(
        event: &str,
        code: Option<alloc::string::String>,
        message: impl Into<alloc::string::String>,
    ) -> Self {
        Failure {
            event: Utf8Bytes::copy_from_str(event),
            code,
            message: message.into(),
        }
    }
}

impl core::error::Error for Failure {}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.event.as_str())?;
        if let Some(code) = &self.code {
            write!(f, " ({code})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// An event that broke a rule: an error, or a warning when the rule is one
/// ([`Rule::is_warning`], from [`Validator::warnings`]).
///
/// # Example
/// ```
/// use ssekit::sequence::{SequenceError, Validator};
/// let mut v = Validator::new(ssekit::profile::ors::ToolCall::new());
/// let chunk = ssekit::Event::builder().event("chunk")?.data("x").build();
/// let SequenceError::Violation(violation) = v.event(&chunk).unwrap_err() else { panic!() };
/// assert_eq!((violation.index, violation.event_type.as_str()), (0, "chunk"));
/// assert_eq!(violation.rule, ssekit::profile::ors::TASK_ID_FIRST);
/// // Messages count events from 1.
/// assert!(violation.to_string().starts_with("remote event 1 (`chunk`) breaks ors.task-id-first"));
/// # Ok::<(), ssekit::EncodeError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Violation {
    /// Position of the event in the stream, counting events from 0 (comments and
    /// `retry:` lines are not counted). Messages ([`Display`](fmt::Display)) count from 1.
    pub index: u64,
    /// The event's name as the profile reads it (the `event:` field or a JSON field).
    pub event_type: Utf8Bytes,
    /// The rule broken.
    pub rule: Rule,
    /// Who sent the event.
    pub origin: Origin,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.rule.is_warning() {
            "warning"
        } else {
            "breaks"
        };
        write!(
            f,
            "{} event {} (`{}`) {verb} {}",
            self.origin,
            self.index.saturating_add(1),
            self.event_type,
            self.rule
        )
    }
}

/// Why a stream is not a valid instance of its protocol.
///
/// # Example
/// ```
/// use ssekit::sequence::{SequenceError, Validator};
/// let mut v = Validator::new(ssekit::profile::chat::Completions::new());
/// v.event(&ssekit::Event::message("{}"))?;
/// let err = v.finish().unwrap_err();
/// assert_eq!(err, SequenceError::Unterminated { events: 1, origin: Default::default() });
/// # Ok::<(), SequenceError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SequenceError {
    /// An event broke a rule.
    Violation(Violation),
    /// The stream ended before its terminal event (a truncation, or a server that stopped
    /// early).
    Unterminated {
        /// Events seen.
        events: u64,
        /// Who sent them.
        origin: Origin,
    },
}

impl SequenceError {
    /// The rule broken; [`UNTERMINATED`] for an early end.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::{Validator, UNTERMINATED};
    /// let mut v = Validator::new(ssekit::profile::chat::Completions::new());
    /// assert_eq!(v.finish().unwrap_err().rule(), UNTERMINATED);
    /// ```
    pub fn rule(&self) -> Rule {
        match self {
            SequenceError::Violation(v) => v.rule,
            SequenceError::Unterminated { .. } => UNTERMINATED,
        }
    }

    /// The index of the offending event; `None` for an early end.
    ///
    /// # Example
    /// ```
    /// let mut v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// assert_eq!(v.finish().unwrap_err().index(), None);
    /// ```
    pub fn index(&self) -> Option<u64> {
        match self {
            SequenceError::Violation(v) => Some(v.index),
            SequenceError::Unterminated { .. } => None,
        }
    }
}

impl fmt::Display for SequenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SequenceError::Violation(v) => fmt::Display::fmt(v, f),
            SequenceError::Unterminated { events, origin } => write!(
                f,
                "{origin} stream ended after {events} events without its terminal event"
            ),
        }
    }
}

impl core::error::Error for SequenceError {}

/// Feeds events to a [`Profile`] and reports the first broken rule. Failure is sticky:
/// after an error every call returns it again and the profile sees nothing more.
///
/// # Example
/// ```
/// use ssekit::profile::ors::ToolCall;
/// use ssekit::sequence::Validator;
/// use ssekit::{Decoder, Frame};
///
/// let mut decoder = Decoder::new();
/// decoder.feed_slice(b"event: task_id\ndata: t1\n\n: ping\n\nevent: end\ndata: {}\n\n")?;
/// let mut v = Validator::new(ToolCall::new().check_result(false));
/// while let Some(frame) = decoder.next_frame()? {
///     v.frame(&frame)?;
/// }
/// v.finish()?;
/// assert_eq!(v.profile().task_id().map(|t| t.as_str()), Some("t1"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Validator<P> {
    profile: P,
    origin: Origin,
    events: u64,
    failed: Option<SequenceError>,
    /// The warnings of the last event checked.
    warnings: Vec<Violation>,
}

impl<P: Profile> Validator<P> {
    /// Validates events from the peer ([`Origin::Remote`]).
    ///
    /// # Example
    /// ```
    /// let v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// assert_eq!(v.events(), 0);
    /// ```
    pub fn new(profile: P) -> Self {
        Validator {
            profile,
            origin: Origin::Remote,
            events: 0,
            failed: None,
            warnings: Vec::new(),
        }
    }

    /// Sets who produces the events; it is carried into every error.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::{Origin, Validator};
    /// let v = Validator::new(ssekit::profile::chat::Completions::new()).origin(Origin::Local);
    /// assert_eq!(v.current_origin(), Origin::Local);
    /// ```
    pub fn origin(mut self, origin: Origin) -> Self {
        self.origin = origin;
        self
    }

    /// The origin set with [`origin`](Self::origin).
    ///
    /// # Example
    /// ```
    /// let v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// assert_eq!(v.current_origin(), ssekit::sequence::Origin::Remote);
    /// ```
    pub fn current_origin(&self) -> Origin {
        self.origin
    }

    /// Checks one event.
    ///
    /// # Example
    /// ```
    /// let mut v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// assert!(v.event(&ssekit::Event::message("[DONE]")).is_ok());
    /// assert!(v.event(&ssekit::Event::message("[DONE]")).is_err());
    /// ```
    pub fn event(&mut self, event: &Event) -> Result<(), SequenceError> {
        self.observe(event.as_event_ref(), |profile| profile.event(event))
    }

    /// Checks one borrowed event (see [`Profile::event_ref`]).
    ///
    /// # Example
    /// ```
    /// use ssekit::{Decoder, FrameRef};
    /// let mut v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// let mut dec = Decoder::new();
    /// dec.feed_slice(b"data: [DONE]\n\ndata: late\n\n")?;
    /// let Some(FrameRef::Event(done)) = dec.next_frame_ref()? else { panic!() };
    /// assert!(v.event_ref(done).is_ok());
    /// let Some(FrameRef::Event(late)) = dec.next_frame_ref()? else { panic!() };
    /// assert_eq!(v.event_ref(late).unwrap_err().index(), Some(1));
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), SequenceError> {
        self.observe(event, |profile| profile.event_ref(event))
    }

    /// Counts `event` and asks the profile (`verdict`), unless an earlier error stands.
    #[inline]
    fn observe(
        &mut self,
        event: EventRef<'_>,
        verdict: impl FnOnce(&mut P) -> Result<(), Rule>,
    ) -> Result<(), SequenceError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if !self.warnings.is_empty() {
            self.warnings.clear();
        }
        let index = self.events;
        self.events += 1;
        verdict(&mut self.profile).map_err(|rule| self.fail_at(index, event, rule))?;
        while let Some(rule) = self.profile.poll_warning() {
            self.warn_at(index, event, rule);
        }
        Ok(())
    }

    #[cold]
    fn warn_at(&mut self, index: u64, event: EventRef<'_>, rule: Rule) {
        self.warnings.push(Violation {
            index,
            event_type: self.profile.event_name(event),
            rule,
            origin: self.origin,
        });
    }

    #[cold]
    fn fail_at(&mut self, index: u64, event: EventRef<'_>, rule: Rule) -> SequenceError {
        let err = SequenceError::Violation(Violation {
            index,
            event_type: self.profile.event_name(event),
            rule,
            origin: self.origin,
        });
        self.failed = Some(err.clone());
        err
    }

    /// Checks a comment. A comment is not counted as an event; if the profile refuses it,
    /// the violation carries the index the next event would have had and the type `""`.
    ///
    /// # Example
    /// ```
    /// let mut v = ssekit::sequence::Validator::new(ssekit::profile::ors::ToolCall::new());
    /// assert!(v.comment("keep-alive").is_ok());
    /// assert_eq!(v.events(), 0);
    /// ```
    pub fn comment(&mut self, text: &str) -> Result<(), SequenceError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        self.profile.comment(text).map_err(|rule| {
            let err = SequenceError::Violation(Violation {
                index: self.events,
                event_type: Utf8Bytes::new(),
                rule,
                origin: self.origin,
            });
            self.failed = Some(err.clone());
            err
        })
    }

    /// Checks a decoded frame: events and comments go to the profile; `retry:` and
    /// data-less blocks (which a browser does not dispatch) are not part of any protocol.
    ///
    /// # Example
    /// ```
    /// use ssekit::Frame;
    /// let mut v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// assert!(v.frame(&Frame::Retry(1000)).is_ok());
    /// ```
    pub fn frame(&mut self, frame: &Frame) -> Result<(), SequenceError> {
        match frame {
            Frame::Event(event) => self.event(event),
            Frame::Comment(text) => self.comment(text),
            _ => self.sticky(),
        }
    }

    /// Checks a borrowed frame, as [`frame`](Self::frame) does an owned one.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Validator;
    /// let mut v = Validator::new(ssekit::profile::responses::Stream::new());
    /// let mut dec = ssekit::Decoder::new();
    /// dec.feed_slice(b": ping\nevent: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"output\":[]}}\n\n")?;
    /// while let Some(frame) = dec.next_frame_ref()? {
    ///     v.frame_ref(frame)?;
    /// }
    /// assert_eq!(v.events(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn frame_ref(&mut self, frame: FrameRef<'_>) -> Result<(), SequenceError> {
        match frame {
            FrameRef::Event(event) => self.event_ref(event),
            FrameRef::Comment(text) => self.comment(text),
            _ => self.sticky(),
        }
    }

    /// The earlier error, if any: what a frame no profile looks at returns.
    fn sticky(&self) -> Result<(), SequenceError> {
        match &self.failed {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }

    /// The stream ended: `Ok` if it ended after its terminal event, otherwise
    /// [`SequenceError::Unterminated`] (or the earlier violation).
    ///
    /// # Example
    /// ```
    /// let mut v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// v.event(&ssekit::Event::message("[DONE]"))?;
    /// assert!(v.finish().is_ok());
    /// # Ok::<(), ssekit::sequence::SequenceError>(())
    /// ```
    pub fn finish(&mut self) -> Result<(), SequenceError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.profile.is_terminated() {
            return Ok(());
        }
        let err = SequenceError::Unterminated {
            events: self.events,
            origin: self.origin,
        };
        self.failed = Some(err.clone());
        Err(err)
    }

    /// Whether the terminal event was seen (and nothing broke a rule).
    ///
    /// # Example
    /// ```
    /// let v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// assert!(!v.is_terminated());
    /// ```
    pub fn is_terminated(&self) -> bool {
        self.failed.is_none() && self.profile.is_terminated()
    }

    /// The first error, if any.
    ///
    /// # Example
    /// ```
    /// let v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// assert!(v.error().is_none());
    /// ```
    pub fn error(&self) -> Option<&SequenceError> {
        self.failed.as_ref()
    }

    /// The warnings about the last event checked ([`Rule::warning`]: valid, but a known
    /// client rejects it), in the order the profile found them; empty when it had none.
    /// Each event checked replaces them, so read them after every event.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::ors::{ToolCall, END_METADATA};
    /// use ssekit::sequence::Validator;
    /// use ssekit::Event;
    /// let mut v = Validator::new(ToolCall::new());
    /// v.event(&Event::builder().event("task_id")?.data("t").build())?;
    /// assert!(v.warnings().is_empty());
    /// // The spec's own example: valid, but the official client reads `metadata`.
    /// let end = r#"{"ok": true, "output": {"blocks": [], "reward": 1.0, "finished": true}}"#;
    /// v.event(&Event::builder().event("end")?.data(end).build())?;
    /// assert_eq!(v.warnings().len(), 1);
    /// assert_eq!((v.warnings()[0].index, v.warnings()[0].rule), (1, END_METADATA));
    /// v.finish()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn warnings(&self) -> &[Violation] {
        &self.warnings
    }

    /// Events seen so far.
    ///
    /// # Example
    /// ```
    /// let mut v = ssekit::sequence::Validator::new(ssekit::profile::chat::Completions::new());
    /// let _ = v.event(&ssekit::Event::message("{}"));
    /// assert_eq!(v.events(), 1);
    /// ```
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The profile, for what it accumulated (a result, text, arguments).
    ///
    /// # Example
    /// ```
    /// let v = ssekit::sequence::Validator::new(ssekit::profile::ors::ToolCall::new());
    /// assert!(v.profile().task_id().is_none());
    /// ```
    pub fn profile(&self) -> &P {
        &self.profile
    }

    /// Gives the profile back.
    ///
    /// # Example
    /// ```
    /// let v = ssekit::sequence::Validator::new(ssekit::profile::ors::ToolCall::new());
    /// let _profile = v.into_profile();
    /// ```
    pub fn into_profile(self) -> P {
        self.profile
    }
}

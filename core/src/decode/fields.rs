//! The WHATWG side of the decoder: the buffers of the block being read (event type, data,
//! last event ID), the interpretation of one line, and where each value lies until its frame
//! is handed out. The input side (pieces, the line and held buffers, the line scan) is the
//! [`Decoder`](super::Decoder)'s; it hands each complete line here.

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use bytes::{Buf, Bytes, BytesMut};

use super::{Config, DecodeError, Mode};
use crate::text::Utf8Bytes;

#[cfg(doc)]
use {super::Frame, crate::FrameRef};

/// The WHATWG buffers and what the current block has set.
#[derive(Debug, Default)]
pub(super) struct FieldState {
    /// The block's `event:` value; after a dispatch, the dispatched event's until the next
    /// call (see `lent`).
    pub(super) event_type: Option<Value>,
    /// The block's data; after a dispatch, the dispatched event's.
    pub(super) data: Data,
    /// What belongs to the frame just handed out, which a borrowed frame may point into:
    /// cleared when the decoder is next used, so that a line buffer it shares is free to be
    /// reused.
    pub(super) lent: Lent,
    /// The comment just emitted, for a borrowed frame to point into.
    pub(super) comment: Option<Value>,
    /// The block had an `id:` field (without NUL).
    id_set: bool,
    /// The event just dispatched came from a block that set an id.
    pub(super) dispatched_id: bool,
    /// The value of the `retry:` frame just emitted.
    pub(super) retry: u64,
    /// The last event ID buffer.
    pub(super) id_buffer: Bytes,
    /// The last event ID string, committed at each dispatch.
    pub(super) last_event_id: Utf8Bytes,
    /// Skipping lines up to the next blank line after a limit (Resync).
    pub(super) skip_block: bool,
    /// Bytes copied by the joining of data lines, ids and owned frames (see
    /// `Decoder::bytes_copied`).
    pub(super) copied: u64,
    /// Bytes examined by the NUL check of ids.
    pub(super) scanned: u64,
    /// Where multi-line data is joined ([`Data::Joined`]), kept across events so joining
    /// does not reallocate per event (released when one event grew it past
    /// [`SCRATCH_KEPT`]). Holds the last joined event until the next one starts, so a
    /// borrowed frame can point into it.
    pub(super) scratch: Vec<u8>,
}

/// Which values the last frame handed out still holds (see `FieldState::lent`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Lent {
    #[default]
    Nothing,
    /// `event_type` and `data` are the dispatched event's.
    Event,
    /// `comment` is the comment's.
    Comment,
}

/// The joining buffer's capacity kept between events; larger buffers are released after use.
pub(super) const SCRATCH_KEPT: usize = 64 << 10;

/// Where a field's value lies.
#[derive(Clone, Debug)]
pub(super) enum Loc {
    /// `range` of the line's buffer: the piece being read (`front`), or the held line when
    /// the value says so ([`Value::held`]). A range of `front` is made [`Loc::Shared`]
    /// before that piece is let go, so it never outlives it.
    Front(Range<usize>),
    /// Bytes of its own: its piece or its held line has been let go since.
    Shared(Bytes),
}

impl Loc {
    #[inline(always)]
    fn len(&self) -> usize {
        match self {
            Loc::Front(range) => range.len(),
            Loc::Shared(bytes) => bytes.len(),
        }
    }

    /// The bytes, a range being one of `src`.
    #[inline(always)]
    fn bytes<'a>(&'a self, src: &'a [u8]) -> &'a [u8] {
        match self {
            Loc::Front(range) => src.get(range.clone()).unwrap_or_default(),
            Loc::Shared(bytes) => bytes,
        }
    }

    /// The value as shared bytes (a reference-counted slice of `src`, no copy).
    #[inline(always)]
    fn into_bytes(self, src: &Bytes) -> Bytes {
        match self {
            Loc::Front(range) if range.start <= range.end && range.end <= src.len() => {
                src.slice(range)
            }
            Loc::Front(_) => Bytes::new(),
            Loc::Shared(bytes) => bytes,
        }
    }
}

/// Where a line handed to [`FieldState::line`] lies.
///
/// Two variants, so that it has the size of a `Bytes` (a third would add a tag word).
pub(super) enum LineIn {
    /// In the piece being read, or in `Decoder::held` (it straddled pieces, frames are
    /// being borrowed).
    Buffer { held: bool },
    /// Frozen out of the line buffer: it straddled pieces, frames are being handed out owned.
    Joined(Bytes),
}

/// A line in the piece being read.
pub(super) const IN_FRONT: LineIn = LineIn::Buffer { held: false };

/// A whole line found by a line scan, for [`FieldState::read_line_at`].
pub(super) struct LineAt {
    /// Where it lies (without its ending) in `front`, or in `held` when `held`.
    pub(super) range: Range<usize>,
    /// The scan saw all its bytes below 0x80.
    pub(super) ascii: bool,
    pub(super) held: bool,
    /// Its stream offset.
    pub(super) offset: u64,
}

/// A field's value: where it lies, and whether the line scan saw all its bytes below 0x80,
/// or for a data line the scan did not see, `text::is_ascii` did (then it is UTF-8 without
/// another check; `false` means not known).
///
/// `held`: the range is one of `Decoder::held`, not of `front`. A flag here rather than a
/// third [`Loc`] variant: that would need a tag word, and a larger value moved through every
/// step cost more than the flag's test (about 4% on `tokens` in 16 KiB pieces).
#[derive(Clone, Debug)]
pub(super) struct Value {
    loc: Loc,
    ascii: bool,
    held: bool,
}

impl Value {
    /// A value in `front` (or of its own) whose bytes were not seen by the line scan.
    #[inline(always)]
    fn unscanned(loc: Loc) -> Self {
        Value {
            loc,
            ascii: false,
            held: false,
        }
    }

    /// `held[range]`, not seen by the line scan.
    #[inline(always)]
    fn in_held(range: Range<usize>) -> Self {
        Value {
            loc: Loc::Front(range),
            ascii: false,
            held: true,
        }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.loc.len()
    }

    /// Where the value starts in `Decoder::held`, if it lies there.
    fn held_start(&self) -> Option<usize> {
        match (&self.loc, self.held) {
            (Loc::Front(range), true) => Some(range.start),
            _ => None,
        }
    }

    /// A value in `Decoder::held` after the buffer let go of its first `by` bytes, all before
    /// the value.
    fn shift_held(&mut self, by: usize) {
        if let (Loc::Front(range), true) = (&mut self.loc, self.held) {
            *range = range.start.saturating_sub(by)..range.end.saturating_sub(by);
        }
    }

    #[inline(always)]
    fn bytes<'a>(&'a self, front: &'a Bytes, held: &'a [u8]) -> &'a [u8] {
        let src: &[u8] = if self.held { held } else { front };
        self.loc.bytes(src)
    }

    /// The value's text for a borrowed frame.
    #[inline(always)]
    pub(super) fn text<'a>(
        &'a self,
        front: &'a Bytes,
        held: &'a [u8],
        repaired: &mut String,
    ) -> Text<'a> {
        Text::scanned(self.bytes(front, held), self.ascii, repaired)
    }

    /// The value's text for an owned frame: shared bytes, no copy. A held value is
    /// detached before ([`FieldState::detach_held`]); were one not, it would be copied.
    #[inline(always)]
    pub(super) fn into_text(self, front: &Bytes, held: &[u8]) -> Utf8Bytes {
        let bytes = if self.held {
            Bytes::copy_from_slice(self.bytes(front, held))
        } else {
            self.loc.into_bytes(front)
        };
        owned_text(bytes, self.ascii)
    }

    /// Makes a range of `front` independent of it: `front` is about to be let go.
    fn detach(&mut self, front: &Bytes) {
        if let (Loc::Front(range), false) = (&self.loc, self.held) {
            self.loc = Loc::Shared(Loc::Front(range.clone()).into_bytes(front));
        }
    }

    /// Makes a range of the held line a slice of it, `held` being that line frozen.
    fn detach_held(&mut self, held: &Bytes) {
        if self.held {
            let loc = core::mem::replace(&mut self.loc, Loc::Front(0..0));
            self.loc = Loc::Shared(loc.into_bytes(held));
            self.held = false;
        }
    }
}

/// `bytes` as owned text, checked for UTF-8 unless the line scan found them `ascii`.
#[inline(always)]
pub(super) fn owned_text(bytes: Bytes, ascii: bool) -> Utf8Bytes {
    if ascii {
        Utf8Bytes::from_scanned_ascii(bytes)
    } else {
        Utf8Bytes::from_utf8_lossy(bytes)
    }
}

/// A borrowed field's text: its own bytes when they are UTF-8, else where in
/// `Decoder::repaired` their repair (invalid sequences replaced by U+FFFD) was written.
pub(super) enum Text<'a> {
    Valid(&'a str),
    Repaired(Range<usize>),
}

impl<'a> Text<'a> {
    #[inline(always)]
    fn of(bytes: &'a [u8], repaired: &mut String) -> Self {
        match crate::text::str_of(bytes) {
            Some(valid) => Text::Valid(valid),
            None => Text::repair(bytes, repaired),
        }
    }

    /// [`Text::of`], unless the line scan found the bytes `ascii`.
    #[inline(always)]
    pub(super) fn scanned(bytes: &'a [u8], ascii: bool, repaired: &mut String) -> Self {
        if ascii {
            Text::Valid(crate::text::str_of_scanned_ascii(bytes))
        } else {
            Text::of(bytes, repaired)
        }
    }

    #[cold]
    #[inline(never)]
    fn repair(bytes: &[u8], repaired: &mut String) -> Self {
        let start = repaired.len();
        repaired.push_str(&String::from_utf8_lossy(bytes));
        Text::Repaired(start..repaired.len())
    }

    #[inline(always)]
    pub(super) fn resolve(self, repaired: &'a str) -> &'a str {
        match self {
            Text::Valid(valid) => valid,
            Text::Repaired(range) => repaired.get(range).unwrap_or_default(),
        }
    }
}

/// The data buffer. `One(v)` stands for `v + LF`; `Joined` means the lines are in
/// `FieldState::scratch`, joined by LF, without the trailing LF (which dispatch would remove
/// anyway). The scratch buffer grows with [`reserve_within`], so its capacity never exceeds
/// `max_event`.
#[derive(Debug, Default)]
pub(super) enum Data {
    #[default]
    Empty,
    One(Value),
    /// `ascii`: every joined line was found all ASCII, by the line scan or, for a line it
    /// did not see, by `text::is_ascii`.
    Joined {
        ascii: bool,
    },
}

/// What one `scan` produced, before it becomes a [`Frame`] (shared, owned) or a
/// [`FrameRef`] (borrowed). An event's fields, whether its block set an id, a comment's text
/// and a retry value wait in [`FieldState`]. One byte with no payload: it crosses the calls
/// from the scan to the caller's frame in a register. (An enum with a `bool` field was
/// written a byte at a time and read back as a word, a store-forwarding stall that cost a
/// third of the time of a `tokens` event.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Emit {
    Event,
    Dataless,
    Comment,
    Retry,
}

/// Makes `bytes` its own `[range]` (empty when out of range): no reference count is touched,
/// as a slice would.
#[inline(always)]
fn trim_in_place(bytes: &mut Bytes, range: Range<usize>) {
    if range.start > range.end || range.end > bytes.len() {
        bytes.clear();
        return;
    }
    bytes.truncate(range.end);
    bytes.advance(range.start);
}

impl FieldState {
    pub(super) fn block_open(&self) -> bool {
        self.lent != Lent::Event
            && (self.event_type.is_some() || self.id_set || !matches!(self.data, Data::Empty))
    }

    /// Lets go of the values of the frame handed out last (the decoder is used again).
    #[inline(always)]
    pub(super) fn clear_lent(&mut self) {
        match self.lent {
            Lent::Nothing => return,
            Lent::Event => {
                self.event_type = None;
                self.data = Data::Empty;
            }
            Lent::Comment => self.comment = None,
        }
        self.lent = Lent::Nothing;
    }

    /// After a limit (Resync): drop the current event and ignore lines up to a blank line.
    /// The dropped block's id is not committed: the event was not delivered.
    pub(super) fn start_skip(&mut self) {
        self.skip_block = true;
        self.clear_block();
        self.id_buffer = self.last_event_id.as_bytes().clone();
    }

    fn clear_block(&mut self) {
        self.event_type = None;
        self.data = Data::Empty;
        self.id_set = false;
    }

    /// The piece `front` is about to be let go: values still pointing into it get their own
    /// reference to it (at most once per piece, whatever its number of events).
    pub(super) fn detach(&mut self, front: &Bytes) {
        self.clear_lent();
        if let Some(value) = &mut self.event_type {
            value.detach(front);
        }
        if let Data::One(value) = &mut self.data {
            value.detach(front);
        }
    }

    /// Whether a value points into `Decoder::held`.
    #[inline(always)]
    pub(super) fn held_pinned(&self) -> bool {
        self.event_type.as_ref().is_some_and(|v| v.held)
            || matches!(&self.data, Data::One(v) if v.held)
            || self.comment.as_ref().is_some_and(|v| v.held)
    }

    /// The values that may point into `Decoder::held`: the event type, a first data line
    /// kept where it lies, and a lent comment. ([`held_pinned`](Self::held_pinned) and
    /// [`detach_held`](Self::detach_held) go over them written out: they are on the path of
    /// every owned frame.)
    fn values(&self) -> impl Iterator<Item = &Value> + '_ {
        let data = match &self.data {
            Data::One(value) => Some(value),
            _ => None,
        };
        [self.event_type.as_ref(), data, self.comment.as_ref()]
            .into_iter()
            .flatten()
    }

    /// [`values`](Self::values), to change.
    fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> + '_ {
        let data = match &mut self.data {
            Data::One(value) => Some(value),
            _ => None,
        };
        [self.event_type.as_mut(), data, self.comment.as_mut()]
            .into_iter()
            .flatten()
    }

    /// Where the first value pointing into `Decoder::held` starts, if one does: the bytes
    /// before it are pinned by none.
    pub(super) fn held_pinned_from(&self) -> Option<usize> {
        self.values().filter_map(Value::held_start).min()
    }

    /// Values pointing into `Decoder::held` after it let go of its first `by` bytes, which
    /// lie before all of them ([`held_pinned_from`](Self::held_pinned_from)).
    pub(super) fn shift_held(&mut self, by: usize) {
        for value in self.values_mut() {
            value.shift_held(by);
        }
    }

    /// Values pointing into `Decoder::held` become slices of `frozen`, the part of it they
    /// point into, frozen. Written out rather than over [`values_mut`](Self::values_mut): it
    /// runs for every owned frame read in tiny pieces, where the iterator cost 3.7% more
    /// instructions on `keepalive-heavy` in 10-byte pieces (callgrind, `decode_once`).
    pub(super) fn detach_held(&mut self, frozen: &Bytes) {
        if let Some(value) = &mut self.event_type {
            value.detach_held(frozen);
        }
        if let Some(value) = &mut self.comment {
            value.detach_held(frozen);
        }
        if let Data::One(value) = &mut self.data {
            value.detach_held(frozen);
        }
    }

    /// Lets a joining buffer that one large event grew go, once nothing points into it.
    #[inline]
    pub(super) fn release_large_scratch(&mut self) {
        if self.scratch.capacity() > SCRATCH_KEPT && !matches!(self.data, Data::Joined { .. }) {
            empty_scratch(&mut self.scratch, &mut self.copied);
            self.scratch = Vec::new();
        }
    }

    /// Interprets the line at `range` of `front`, of `held` or of a frozen joined line
    /// (see [`LineIn`]); `line_ascii`: a scan saw every byte of the line below 0x80 (`false`:
    /// not known). Values are ranges of `front` or `held`, or the frozen line itself,
    /// trimmed (moved, not sliced: no reference count is touched).
    #[inline(never)]
    pub(super) fn line(
        &mut self,
        config: &Config,
        front: &Bytes,
        held: &[u8],
        (line_in, line_ascii): (LineIn, bool),
        range: Range<usize>,
        line_offset: u64,
    ) -> Result<Option<Emit>, DecodeError> {
        let src: &[u8] = match &line_in {
            LineIn::Buffer { held: false } => front,
            LineIn::Buffer { held: true } => held,
            LineIn::Joined(joined) => joined,
        };
        let line = src.get(range.clone()).unwrap_or_default();
        if self.skip_block {
            if line.is_empty() {
                self.skip_block = false;
            }
            return Ok(None);
        }
        if line.is_empty() {
            return Ok(self.dispatch(config.mode));
        }
        // Only `data`, `event`, `id`, `retry` and comments mean anything: a line is classified
        // by its first bytes, and any other field name is ignored without a search for its colon.
        let Some((name, value_start)) = classify(line) else {
            return Ok(None);
        };
        let value = line.get(value_start..).unwrap_or_default();
        let value_range = (range.start + value_start).min(range.end)..range.end;
        // First the fields that keep no value where it lies.
        match name {
            FieldName::Comment if config.skip_comments => return Ok(None),
            FieldName::Data if !matches!(self.data, Data::Empty) => {
                // A later data line is copied into the joining buffer. The line scan did not
                // see it, so it is checked here, while it is short and at hand: the joined
                // data then stays known ASCII and is not read again when it is handed out.
                let ascii = line_ascii || crate::text::is_ascii(value);
                self.join_data(config, front, held, value, ascii, line_offset)?;
                return Ok(None);
            }
            FieldName::Retry => {
                return Ok(parse_retry(value).map(|ms| {
                    self.retry = ms;
                    Emit::Retry
                }));
            }
            FieldName::Id => {
                self.scanned += value.len() as u64;
                if memchr::memchr(0, value).is_some() {
                    return Ok(None);
                }
            }
            FieldName::Comment | FieldName::Data | FieldName::Event => {}
        }
        // A first data line is checked for the same reason, for the lines joined to it.
        // A value lies inside the line, so it is ASCII if the line is.
        let ascii = line_ascii || name == FieldName::Data && crate::text::is_ascii(value);
        let mut value = match line_in {
            LineIn::Buffer { held: false } => Value::unscanned(Loc::Front(value_range)),
            LineIn::Buffer { held: true } => Value::in_held(value_range),
            LineIn::Joined(mut joined) => {
                trim_in_place(&mut joined, value_range);
                Value::unscanned(Loc::Shared(joined))
            }
        };
        match name {
            FieldName::Comment => {
                value.ascii = ascii;
                self.comment = Some(value);
                self.lent = Lent::Comment;
                Ok(Some(Emit::Comment))
            }
            FieldName::Data => {
                value.ascii = ascii;
                self.set_first_data(config, value, line_offset)
                    .map(|()| None)
            }
            FieldName::Event => {
                value.ascii = ascii;
                self.event_type = Some(value);
                Ok(None)
            }
            FieldName::Id | FieldName::Retry => {
                self.id_buffer = match value.loc {
                    // Copied: `held` may hold other values and lines not read yet, and an id
                    // is short.
                    Loc::Front(range) if value.held => {
                        let id = held.get(range).unwrap_or_default();
                        self.copied += id.len() as u64;
                        Bytes::copy_from_slice(id)
                    }
                    loc => loc.into_bytes(front),
                };
                self.id_set = true;
                Ok(None)
            }
        }
    }

    /// Interprets a whole line found by a scan (`text` is its bytes). The lines of nearly
    /// every event are read here without the general field parser ([`line`](Self::line), which
    /// has the same effect): a blank line, a comment, `data:` and `event:` with a colon.
    ///
    /// `held` is passed as the buffer, not as a slice: few lines read it (a data line joined
    /// to a first one that lies in `held`), and a slice made at the call loads its pointer
    /// and length into registers for every line of the `front` loop. Passing the buffer took
    /// `tokens` in 16 KiB pieces from 3.21 to 3.12 instructions per byte and
    /// `keepalive-heavy` from 15.56 to 15.10 (callgrind, `decode_once`, `next_frame_ref`,
    /// release builds; the README's figures).
    #[inline(always)]
    pub(super) fn read_line_at(
        &mut self,
        config: &Config,
        front: &Bytes,
        held: &BytesMut,
        text: &[u8],
        at: LineAt,
    ) -> Result<Option<Emit>, DecodeError> {
        let LineAt {
            range,
            ascii,
            held: in_held,
            offset,
        } = at;
        // A value lies inside the line, so it is ASCII if the line is.
        let value = |name_len: usize| {
            let start = name_len + 1 + usize::from(text.get(name_len + 1) == Some(&b' '));
            Value {
                loc: Loc::Front((range.start + start).min(range.end)..range.end),
                ascii,
                held: in_held,
            }
        };
        match text {
            _ if self.skip_block => {}
            [] => return Ok(self.dispatch(config.mode)),
            [b':', ..] if config.skip_comments => return Ok(None),
            [b':', ..] => {
                self.comment = Some(value(0));
                self.lent = Lent::Comment;
                return Ok(Some(Emit::Comment));
            }
            [b'd', b'a', b't', b'a', b':', ..] => {
                return self
                    .append_data(config, front, held, value(4), offset)
                    .map(|()| None);
            }
            [b'e', b'v', b'e', b'n', b't', b':', ..] => {
                self.event_type = Some(value(5));
                return Ok(None);
            }
            _ => {}
        }
        let line_in = LineIn::Buffer { held: in_held };
        self.line(config, front, held, (line_in, ascii), range, offset)
    }

    /// Appends the value of a `data:` line, within `max_event`. Only the first data line of
    /// an event is kept where it lies (the event's data when it has one line); later lines
    /// are copied into the joining buffer.
    #[inline(always)]
    fn append_data(
        &mut self,
        config: &Config,
        front: &Bytes,
        held: &[u8],
        value: Value,
        line_offset: u64,
    ) -> Result<(), DecodeError> {
        if matches!(self.data, Data::Empty) {
            self.set_first_data(config, value, line_offset)
        } else {
            let bytes = value.bytes(front, held);
            self.join_data(config, front, held, bytes, value.ascii, line_offset)
        }
    }

    /// The event's first data line, kept where it lies (the data buffer is empty).
    #[inline(always)]
    fn set_first_data(
        &mut self,
        config: &Config,
        value: Value,
        line_offset: u64,
    ) -> Result<(), DecodeError> {
        if value.len() > config.limits.max_event {
            return Err(event_too_large(config, line_offset, value.len()));
        }
        self.data = Data::One(value);
        Ok(())
    }

    /// Appends a second or later data line (`ascii`: known to be all ASCII): copies
    /// it into the joining buffer, with the first line on the second.
    #[inline(always)]
    fn join_data(
        &mut self,
        config: &Config,
        front: &Bytes,
        held: &[u8],
        bytes: &[u8],
        ascii: bool,
        line_offset: u64,
    ) -> Result<(), DecodeError> {
        let limit = config.limits.max_event;
        let (first, joined_ascii) = match &self.data {
            &Data::Joined {
                ascii: joined_ascii,
            } => (None, joined_ascii),
            Data::One(first) => (Some(first.bytes(front, held)), first.ascii),
            Data::Empty => {
                // Not reached (a first line is kept where it lies); still correct.
                if bytes.len() > limit {
                    return Err(event_too_large(config, line_offset, bytes.len()));
                }
                empty_scratch(&mut self.scratch, &mut self.copied);
                reserve_within(&mut self.scratch, bytes.len(), limit, &mut self.copied);
                self.scratch.extend_from_slice(bytes);
                self.data = Data::Joined { ascii };
                return Ok(());
            }
        };
        let held_len = first.map_or(self.scratch.len(), <[u8]>::len);
        let size = held_len + 1 + bytes.len();
        if size > limit {
            return Err(event_too_large(config, line_offset, size));
        }
        if let Some(first) = first {
            // The joining buffer held the last joined event until now.
            empty_scratch(&mut self.scratch, &mut self.copied);
            let needed = first.len() + 1 + bytes.len();
            reserve_within(&mut self.scratch, needed, limit, &mut self.copied);
            self.scratch.extend_from_slice(first);
        } else {
            reserve_within(&mut self.scratch, 1 + bytes.len(), limit, &mut self.copied);
        }
        self.scratch.push(b'\n');
        self.scratch.extend_from_slice(bytes);
        self.data = Data::Joined {
            ascii: joined_ascii && ascii,
        };
        Ok(())
    }

    /// A blank line: commit the last event ID, then dispatch unless the data buffer is empty.
    /// The event's fields stay where they are until it has been handed out.
    #[inline(always)]
    fn dispatch(&mut self, mode: Mode) -> Option<Emit> {
        let id = self.id_set;
        if id {
            self.commit_id();
        }
        if self.event_type.as_ref().is_some_and(|t| t.len() == 0) {
            self.event_type = None;
        }
        let emit = match self.data {
            Data::Empty if mode == Mode::Raw && (id || self.event_type.is_some()) => Emit::Dataless,
            Data::Empty => {
                self.event_type = None;
                return None;
            }
            _ => Emit::Event,
        };
        self.dispatched_id = id;
        self.lent = Lent::Event;
        Some(emit)
    }

    /// See [`Decoder::set_last_event_id`](super::Decoder::set_last_event_id).
    pub(super) fn set_last_event_id(&mut self, id: Utf8Bytes) {
        if !self.id_set {
            self.id_buffer = id.as_bytes().clone();
        }
        self.last_event_id = id;
    }

    /// The block's id becomes the last event ID.
    #[inline(never)]
    fn commit_id(&mut self) {
        self.last_event_id = Utf8Bytes::from_utf8_lossy(self.id_buffer.clone());
        self.id_set = false;
    }
}

/// The field names WHATWG gives a meaning to, and comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FieldName {
    Comment,
    Data,
    Event,
    Id,
    Retry,
}

/// Classifies a non-empty line: its field name and where its value starts (after the colon
/// and one optional space), or `None` for a field WHATWG ignores. The name is everything up to
/// the first colon, or the whole line without one, so a known name must be followed by `:` or
/// the end of the line (`datax: 1` and `dat` are unknown fields).
fn classify(line: &[u8]) -> Option<(FieldName, usize)> {
    let (name, len): (FieldName, usize) = match line.first()? {
        b':' => (FieldName::Comment, 0),
        b'd' if line.starts_with(b"data") => (FieldName::Data, 4),
        b'e' if line.starts_with(b"event") => (FieldName::Event, 5),
        b'i' if line.starts_with(b"id") => (FieldName::Id, 2),
        b'r' if line.starts_with(b"retry") => (FieldName::Retry, 5),
        _ => return None,
    };
    match line.get(len) {
        None => Some((name, len)),
        Some(b':') => Some((
            name,
            len + 1 + usize::from(line.get(len + 1) == Some(&b' ')),
        )),
        Some(_) => None,
    }
}

/// The error for a data line that would take the event's data to `size` bytes, past
/// `max_event`.
#[cold]
fn event_too_large(config: &Config, line_offset: u64, size: usize) -> DecodeError {
    DecodeError::EventTooLarge {
        offset: line_offset,
        size,
        limit: config.limits.max_event,
    }
}

/// Empties the joining buffer. Its bytes were all copied in by `FieldState::join_data`, and
/// are added to `copied` now rather than line by line (`Decoder::bytes_copied` adds those of
/// the buffer as it is). A free function, not a method: `join_data` calls it while the event's
/// first line still borrows another field.
fn empty_scratch(scratch: &mut Vec<u8>, copied: &mut u64) {
    *copied += scratch.len() as u64;
    scratch.clear();
}

/// Makes room for `additional` bytes, doubling as usual but never past `limit` (the caller
/// has checked that `len + additional <= limit`), so a capped buffer's capacity stays capped.
/// The check is inline (a data line joined into room already there pays no call). The bytes
/// the growth moves are added to `copied`.
#[inline(always)]
fn reserve_within(buf: &mut Vec<u8>, additional: usize, limit: usize, copied: &mut u64) {
    if buf.capacity() - buf.len() < additional {
        *copied += grow_within(buf, additional, limit);
    }
}

/// [`reserve_within`] when the buffer must grow; returns the bytes the growth may move (all
/// of them: counted as decided, not as `realloc` happened to place them, like the decoder's
/// `grow`).
#[cold]
#[inline(never)]
fn grow_within(buf: &mut Vec<u8>, additional: usize, limit: usize) -> u64 {
    let needed = buf.len().saturating_add(additional);
    let target = buf.len().saturating_mul(2).min(limit).max(needed);
    buf.reserve_exact(target - buf.len());
    buf.len() as u64
}

/// `retry:` applies only when the value is ASCII digits (and not empty). Saturates.
fn parse_retry(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_in_place_is_the_slice_and_empty_out_of_range() {
        let line = Bytes::from_static(b"data: hello");
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 7..6;
        for (range, expected) in [
            (6..11, "hello"),
            (0..0, ""),
            (11..11, ""),
            (6..12, ""),
            (reversed, ""),
        ] {
            let mut bytes = line.clone();
            trim_in_place(&mut bytes, range);
            assert_eq!(bytes, expected);
        }
    }

    #[test]
    fn retry_parsing_accepts_only_ascii_digits() {
        assert_eq!(parse_retry(b"3000"), Some(3000));
        assert_eq!(parse_retry(b""), None);
        assert_eq!(parse_retry(b" 1"), None);
        assert_eq!(parse_retry(b"1.5"), None);
        assert_eq!(parse_retry(b"-1"), None);
        assert_eq!(parse_retry(b"99999999999999999999999"), Some(u64::MAX));
    }
}

//! Bytes → frames: the WHATWG HTML "interpretation of the event stream", exactly.
//!
//! Push bytes in with [`Decoder::feed`], pull [`Frame`]s out with [`Decoder::next_frame`]
//! (or borrowed [`FrameRef`]s with [`Decoder::next_frame_ref`]) until it returns `Ok(None)`
//! ("need more input"), and call [`Decoder::finish`] at end of stream to learn whether it
//! ended cleanly or inside an event.
//!
//! # How it reads bytes
//! Lines are found with one scan for CR and LF over each input buffer: no line is
//! scanned for its ending twice, whatever the sizes of the pieces fed (a CR at the
//! end of one piece is remembered so an LF starting the next is not taken as a second line
//! ending). A line that lies inside one input [`Bytes`] is handed out as a slice of it; only
//! a line that straddles pieces is copied (once, into a line buffer), and only data of
//! events with more than one `data:` line is copied (once, joined with LF).
//!
//! The lines that lie whole in the piece being read go through one loop that keeps its
//! position and counters in locals and reads the lines nearly every event is made of (blank
//! lines, comments, `data:`, `event:`) itself; other fields go to the general field parser,
//! and a line cut by a piece boundary to the line buffer. That loop finds line endings with
//! an SSE2 scan of the line's first 256 bytes (`line_scan`) that also notes whether the line
//! is ASCII: values of such lines are handed out as `str` without a second pass to check
//! their UTF-8. Past 256 bytes, and for each piece of a line cut by piece boundaries, the
//! scan goes on with `line_scan::scan_long`: with `std` on a CPU with AVX2 it also notes the
//! ASCII-ness, 64 bytes a step, so a long line is read once, not again by a check when it
//! is complete (elsewhere `memchr2`, and the check as before). A piece that continues a line
//! is, moreover, copied into the line buffer as it is scanned (`line_copy`): with AVX2 one
//! pass over it where the scan and the copy were two. `feed` and `feed_slice` do that
//! themselves when nothing else waits, so a read that only continues a long line is neither
//! queued nor stepped over (and `feed_slice` copies it once, not into its staging buffer
//! first); and a long line that starts in a short read is copied as its tail is scanned,
//! since it likely goes on past the read (the copy is dropped if it does not).
//!
//! One step of the decoder (`next_step`) is the one out-of-line call per frame, and returns
//! a single byte; the frame itself is built in the caller's `next_frame`/`next_frame_ref`.
//! Returning a wider enum (the frame, or `Result<Option<_>, DecodeError>`) was written field
//! by field and read back whole, a store-forwarding stall that perf showed taking a third
//! of the time of a `tokens` event.
//!
//! Field values are kept as ranges of the piece being read until their frame is handed out:
//! `next_frame` then makes them reference-counted slices (and copies joined data out once),
//! `next_frame_ref` lends them as they lie. A piece read to its end is kept until the next
//! one is needed, so a borrowed frame can point into it; values of an event still open when
//! its piece is let go take their own reference to it then, once per piece.
//!
//! A line that straddled pieces larger than tiny ones is completed in the line buffer and
//! then read where it lies, in one of two ways chosen by how the last frame was asked for.
//! Drained with `next_frame_ref`, the buffer is swapped into a second one (`held`) and values
//! are ranges of it: no reference count is touched, and the buffer is reused for the line after
//! next (a value still pointing into it then is frozen out first). Drained with `next_frame`,
//! the line is frozen into a `Bytes` at once and the value takes that `Bytes` itself, trimmed,
//! so the owned frame shares it without a copy. (In 10-byte pieces, before they took the tiny
//! path below, the held line made borrowed decoding of `keepalive-heavy` about 35% faster and
//! of `multiline-crlf` 10-25% faster than freezing every line.)
//!
//! Tiny pieces (up to 16 bytes, what a socket read of a few bytes returns) are not queued:
//! `feed` copies each into the held buffer behind the line it continues, and looks at it for
//! line endings and high bytes in one SSE2 vector of its two 8-byte words. A piece without an
//! ending only extends the line, and `next_frame` returns at once; the lines a piece with one
//! completes are found in those bits (no byte is read twice) and read where they lie in the
//! held buffer, their values being ranges of it, as those of `front` are of `front`.
//! So in tiny pieces no line straddles anything: it is read in place in one buffer, with no
//! reference count touched and no line copied twice. (Before, each piece with a line ending
//! was queued and every line was completed in the line buffer and then swapped or frozen out
//! of it; `decode_once` on `keepalive-heavy` in 10-byte pieces measured this path 1.5x faster
//! with `feed` + `next_frame_ref` and 2.5x faster with `feed_slice` + `next_frame_ref`.) A
//! larger piece fed behind a line left in the held buffer takes that line into the line buffer
//! and the general path goes on; a tiny piece fed behind a line left in the line buffer takes
//! the line into the held buffer (either way the two are swapped, no copy: a long line fed in
//! pieces of alternating sizes is not copied again at each switch). Read lines are let go of when
//! the buffer is full and no value points into them (compacted if that frees at least half);
//! values that still do are given a frozen share of them first.
//!
//! For tiny reads prefer [`Decoder::feed_slice`]: handing over a `Bytes` costs two atomic
//! reference-count updates, which is more than decoding a few bytes. The line buffer and
//! `feed_slice`'s staging buffer grow to at least 4 KiB at a time, so that small pieces share
//! one allocation: a buffer that a frame or a piece still shares cannot grow in place.
//!
//! # Bounds
//! Nothing the peer sends can make the decoder hold more than [`Limits`] allow: a line
//! longer than `max_line`, data longer than `max_event`, or more than `max_buffered` bytes
//! fed without draining give a [`DecodeError`] carrying the stream offset and the limit.
//! What happens next is chosen by [`OnLimit`].
//!
//! # Where things are
//! This file is the input side: the pieces fed, the line and held buffers, the line scan and
//! the frames handed out. `fields` is the WHATWG side: the event type, data and last event ID
//! buffers of the block being read, the interpretation of one complete line, and where each
//! value lies until its frame is handed out. `config` holds [`Config`] and [`Limits`], and
//! `error` [`DecodeError`] and [`StreamEnd`]. The two sides are inlined into one function
//! (`next_step`), so the split costs nothing at run time.

mod config;
mod error;
mod fields;

use alloc::collections::VecDeque;
use alloc::string::String;

use bytes::{Buf, Bytes, BytesMut};

use crate::event::Event;
use crate::frame_ref::{EventRef, FrameRef};
use crate::line_copy::{copy_is_fused, put_line};
use crate::line_scan::{
    scan_continued, scan_line, scan_line_head, scan_long, LineEnd, LongLine, TailMasks, WordPair,
};

use crate::text::Utf8Bytes;
pub use config::{Config, Limits, Mode, OnLimit};
pub use error::{DecodeError, StreamEnd};
use fields::{
    owned_text, Data, Emit, FieldState, Lent, LineAt, LineIn, Text, Value, IN_FRONT, SCRATCH_KEPT,
};

/// One unit of decoded stream.
///
/// # Example
/// ```
/// use ssekit::{Decoder, Frame};
/// let mut dec = Decoder::new();
/// dec.feed_slice(b": hi\nretry: 10\ndata: x\n\n")?;
/// assert!(matches!(dec.next_frame()?, Some(Frame::Comment(c)) if c == "hi"));
/// assert!(matches!(dec.next_frame()?, Some(Frame::Retry(10))));
/// assert!(matches!(dec.next_frame()?, Some(Frame::Event(e)) if e.data() == "x"));
/// assert!(dec.next_frame()?.is_none());
/// # Ok::<(), ssekit::DecodeError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Frame {
    /// An event dispatched by a blank line (its data buffer was not empty).
    Event(Event),
    /// A comment line (`:` first), without the colon and one leading space. Servers send
    /// these as keep-alives; a browser ignores them.
    Comment(Utf8Bytes),
    /// A valid `retry:` field: the new reconnection time in milliseconds, reported when the
    /// line is read (as a browser applies it). Values beyond `u64::MAX` saturate.
    Retry(u64),
    /// [`Mode::Raw`] only: a block that named a non-empty event type or set an id, but had no
    /// `data:` line. A browser does not dispatch it (its `id` still updates the last event ID
    /// in both modes). Blocks with nothing to identify them are not surfaced in either mode.
    Dataless(Event),
}

/// Pieces up to this size are copied into the held buffer by `feed` itself and their lines
/// read there in place (see `Decoder::append_tiny`); larger ones are cheaper to queue and
/// scan with SIMD where they lie.
const TINY_PIECE: usize = 16;

/// Appends up to this size skip [`append`]'s check for a buffer it could take back whole.
const SHORT_APPEND: usize = 128;

/// The UTF-8 byte order mark, stripped once at the very start of a stream.
const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// The push/pull SSE decoder. See the [module docs](self).
///
/// # Example
/// ```
/// use bytes::Bytes;
/// use ssekit::{Decoder, Frame};
/// let mut dec = Decoder::new();
/// dec.feed(Bytes::from_static(b"event: greet\nid: 1\ndata: hel"))?;
/// assert!(dec.next_frame()?.is_none());            // need more input
/// dec.feed(Bytes::from_static(b"lo\n\n"))?;
/// let Some(Frame::Event(ev)) = dec.next_frame()? else { panic!() };
/// assert_eq!((ev.event_type(), ev.data()), ("greet", "hello"));
/// assert_eq!(dec.last_event_id(), "1");
/// # Ok::<(), ssekit::DecodeError>(())
/// ```
#[derive(Debug, Default)]
pub struct Decoder {
    config: Config,
    /// The piece being scanned, whole: `front[pos..]` is still to be read. A piece that has
    /// been read to its end stays here until the next one is needed, so the last frame
    /// returned by [`next_frame_ref`](Self::next_frame_ref) can borrow from it.
    front: Bytes,
    /// How much of `front` has been read.
    pos: usize,
    /// Pieces fed behind `front`, in order (untouched when pieces are drained one by one).
    queue: VecDeque<Bytes>,
    /// Bytes in `front` and `queue`.
    queued: usize,
    /// Bytes from `feed_slice`, queued behind `front`/`queue` in order as one piece.
    staging: BytesMut,
    /// A line that began in an earlier piece of input and has no line ending yet.
    line: BytesMut,
    /// A byte of `line` may be 0x80 or above (`false`: the scans that read its bytes saw all
    /// of them below). Meaningless while `line` is empty: see [`Self::line_ascii_with`].
    line_high: bool,
    /// Lines read in place outside `front`, whose values are ranges of it ([`Value::held`]),
    /// so reading them touches no reference count. It is filled two ways:
    /// - tiny pieces are appended to it as they are fed ([`append_tiny`](Self::append_tiny)):
    ///   `held[held_pos..]` is then input not read yet, the current line first;
    /// - a line that straddled larger pieces, once complete in `line`, is swapped in whole
    ///   when frames are borrowed (then `line` is empty and `held` is all read).
    ///
    /// Bytes before `held_pos` are let go (the buffer is compacted or cleared) only once no
    /// value points into them; otherwise they are frozen first and such values take a shared
    /// slice ([`detach_held`](Self::detach_held)).
    held: BytesMut,
    /// How much of `held` has been read.
    held_pos: usize,
    /// `held[held_pos..held_scan_from]` is known to hold no line ending (it was looked at as
    /// it was fed), so the next scan starts at `held_scan_from`.
    held_scan_from: usize,
    /// A byte of `held[held_pos..held_scan_from]` may be 0x80 or above (`false`: all are
    /// ASCII).
    held_high: bool,
    /// `held[held_pos..]` may hold a line ending not read yet (a tiny piece with one was fed).
    held_lines: bool,
    /// The line endings and high bytes of the last tiny piece with a line ending, which ends
    /// `held`: while `held_lines` is set, `held[held_scan_from..]` is the rest of that piece,
    /// and its lines are found in these bits ([`scan_held`](Self::scan_held)).
    held_masks: TailMasks,
    /// The last frame was asked for borrowed ([`next_frame_ref`](Self::next_frame_ref)): a
    /// line that straddles pieces is then kept in `held` and read in place; otherwise it is
    /// frozen out of the line buffer, so owned frames share it without a copy.
    lend_held: bool,
    /// Stream offset of the first byte of `front`.
    offset: u64,
    /// Stream offset where the current line starts.
    line_start: u64,
    /// The last line ended with a CR at the end of a piece: an LF next belongs to it.
    after_cr: bool,
    /// How many bytes of a BOM have been matched at stream start.
    bom_matched: u8,
    /// Whether the BOM question is settled: stripped, or the first bytes were not one.
    bom_done: bool,
    /// Discarding the rest of a line that went over `max_line` (Resync).
    discarding_line: bool,
    /// Sticky error (FailStop).
    failed: Option<DecodeError>,
    /// The error of the last [`Step::Error`].
    raised: Option<DecodeError>,
    /// [`append_tiny`](Self::append_tiny) may take a piece: nothing is queued or staged, no
    /// line waits in `held` or `line`, the BOM is settled, no CR is pending, no line is being
    /// discarded, no error. One flag for the path taken once per byte when bytes come one at a
    /// time; every call that can change one of those refreshes it
    /// ([`refresh_tiny_ready`](Self::refresh_tiny_ready)). It implies that all input fed has
    /// been read.
    tiny_ready: bool,
    /// Bytes examined by the line-ending scan.
    scanned: u64,
    /// Bytes copied into or moved within the decoder's buffers (see
    /// [`bytes_copied`](Self::bytes_copied)).
    copied: u64,
    fields: FieldState,
    /// Text of the last borrowed frame's fields that were not valid UTF-8, repaired.
    repaired: String,
}

/// What one step of the decoder produced: nothing more until more input, a frame, or an
/// error (stored in [`Decoder::raised`]). One byte, for the same reason as [`Emit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Pending,
    Frame(Emit),
    Error,
}

/// The least capacity a line or staging buffer is given when it grows. A buffer whose earlier
/// contents a piece or a frame still shares cannot grow in place, and `BytesMut` would then
/// allocate just the bytes being added: an allocation per tiny piece.
const MIN_CAPACITY: usize = 4 << 10;

/// Appends `bytes` to a line or staging buffer, making room for at least [`MIN_CAPACITY`]
/// bytes in all when it must grow. Asking for no more than that lets `BytesMut` reuse its
/// buffer once nothing shares it.
///
/// An empty buffer about to take more than [`SHORT_APPEND`] bytes first takes back its whole
/// allocation when nothing shares it any more (no copy, one atomic load): otherwise a long line is
/// copied to the front of the buffer when it outgrows what the previous line left, once per
/// line (every 64 KiB line of `big-data` in a 128 KiB buffer was). Short appends skip the
/// check; they are what tiny pieces make.
///
/// Returns the bytes copied: `bytes`, and what the buffer held if growing moved it.
#[inline]
fn append(buf: &mut BytesMut, bytes: &[u8]) -> u64 {
    let moved = make_room(buf, bytes.len());
    buf.extend_from_slice(bytes);
    moved + bytes.len() as u64
}

/// Makes room for `additional` more bytes in a line or staging buffer the way [`append`]
/// does; returns the bytes moved.
#[inline]
fn make_room(buf: &mut BytesMut, additional: usize) -> u64 {
    if buf.is_empty() && additional > SHORT_APPEND {
        // Still shared: the growth below allocates, as it would have.
        reclaim_whole(buf);
    }
    if buf.capacity() - buf.len() < additional {
        grow(buf, additional.max(MIN_CAPACITY.saturating_sub(buf.len())))
    } else {
        0
    }
}

/// Gives the empty `buf` its whole allocation back when nothing shares it any more (no
/// copy, one atomic load), so a long line put into it starts at its front and has room to
/// grow in place; a buffer still shared is left as it is.
#[inline]
fn reclaim_whole(buf: &mut BytesMut) {
    debug_assert!(buf.is_empty(), "only an empty buffer is taken back");
    let _reclaimed = buf.try_reclaim(buf.capacity() + 1);
}

/// Makes room for `additional` more bytes in `buf`; returns the bytes the growth may move:
/// all of them. Whether `realloc` really moved them depends on the allocator and on what else
/// is on the heap, so the count is what the decoder decided (to grow a buffer holding `len`
/// bytes), the same on every run and every allocator.
#[inline]
fn grow(buf: &mut BytesMut, additional: usize) -> u64 {
    let held = buf.len() as u64;
    buf.reserve(additional);
    held
}

/// Where the next line ends in `rest`, the unread end of `held`: while lines wait there it
/// is the rest of the last tiny piece, which `masks` describe, so no byte is read again.
/// Anything longer is scanned (never the case: `append_tiny` takes no piece while lines wait,
/// and what it appended before is scanned; kept so that a broken invariant costs a scan, not
/// a line).
#[inline(always)]
fn held_line_end(rest: &[u8], masks: TailMasks) -> LineEnd {
    if rest.len() > TailMasks::SPAN {
        return scan_line(rest);
    }
    let found = masks.line_end(rest.len());
    debug_assert_eq!(found, scan_line(rest), "masks of {rest:?}");
    found
}

/// Whether a byte of `rest`, the unread end of `held`, is 0x80 or above: see
/// [`held_line_end`].
#[inline(always)]
fn held_any_high(rest: &[u8], masks: TailMasks) -> bool {
    if rest.len() > TailMasks::SPAN {
        return !rest.is_ascii();
    }
    let high = masks.any_high(rest.len());
    debug_assert_eq!(high, !rest.is_ascii(), "masks of {rest:?}");
    high
}

/// Copies `piece`, which continues the line in `line`, onto it up to the line's ending,
/// finding that ending and whether the bytes before it are ASCII as it copies
/// ([`put_line`]: with AVX2 one pass over the piece, where a scan and then a copy made two).
/// Returns what it found and the bytes copied or moved; `None`, with nothing copied, when
/// the piece could take the line over `max_line` (the caller decides on a scan), or when
/// the line is shorter than the piece and has no room for it behind it.
///
/// The copy needs room for the whole piece, where the line may end early in it. The buffer
/// is grown for that only when the line is at least as long as the piece (a long line,
/// which will need the room anyway); a short line with too little room behind it takes the
/// scan and then the copy of just its bytes. Growing the buffer for a short line's end cost
/// `tokens` in 16 KiB pieces 1.6% more instructions, in reallocations as the decoder
/// started (callgrind).
#[inline(always)]
fn copy_onto_line(line: &mut BytesMut, piece: &[u8], max_line: usize) -> Option<(LineEnd, u64)> {
    if let Some(b'\n' | b'\r') = piece.first() {
        // The line ends where the piece starts (`continue_line` took the bytes before).
        return Some((
            LineEnd {
                at: Some(0),
                ascii: true,
            },
            0,
        ));
    }
    let (len, room) = (line.len(), line.capacity() - line.len());
    if len.saturating_add(piece.len()) > max_line || (room < piece.len() && len < piece.len()) {
        return None;
    }
    debug_assert!(len > 0, "only a started line is continued");
    let moved = make_room(line, piece.len());
    let before = line.len();
    let found = put_line(line, piece);
    debug_assert_eq!(
        line.get(before..),
        piece.get(..found.at.unwrap_or(piece.len())),
        "the line's bytes in this piece, and no others, are copied"
    );
    Some((found, moved + (line.len() - before) as u64))
}

/// At most this much of a piece is copied at the start of a line in case the line goes on
/// past the piece ([`start_long_line`]): a network read (1460 bytes is one TCP segment),
/// and what the line buffer holds when it grows the least.
const START_COPIED_UP_TO: usize = MIN_CAPACITY;

/// Reads a long line, one whose first 256 bytes in the piece ([`scan_line_head`]) hold no
/// ending, given the piece from the line's start (`rest`): where it ends and whether the
/// bytes before are ASCII, as [`scan_line`]. When `rest` is short (at most
/// [`START_COPIED_UP_TO`] and `max_line`) and the copy is fused with the scan
/// ([`copy_is_fused`]), the line is also copied into the empty line buffer as it is read, if
/// the buffer has room without growing: such a line likely goes on past the piece, and the
/// general path would then copy what the scan has just read (a 4 KiB ORS `chunk` line begins
/// in one 1460-byte read and ends two later). If the line ends in the piece after all, the
/// copy is dropped (it stopped at the ending: a line is never copied past it) and the line
/// is read in place as before. Returns what it found and the bytes it copied.
///
/// Out of line: taken only by lines longer than 256 bytes.
#[inline(never)]
fn start_long_line(
    line: &mut BytesMut,
    rest: &[u8],
    long: LongLine,
    max_line: usize,
) -> (LineEnd, u64) {
    debug_assert!(
        line.is_empty(),
        "whole lines are read with the line buffer empty"
    );
    let (head, tail) = long.split(rest);
    if rest.len() > START_COPIED_UP_TO.min(max_line) || !copy_is_fused() {
        return (long.join(scan_long(tail)), 0);
    }
    // As `make_room` does before a long append.
    reclaim_whole(line);
    if line.capacity() < rest.len() {
        return (long.join(scan_long(tail)), 0);
    }
    line.extend_from_slice(head);
    let found = long.join(put_line(line, tail));
    let put = line.len() as u64;
    if found.at.is_some() {
        line.clear();
    }
    (found, put)
}

impl Decoder {
    /// Pieces shorter than this are best fed with [`feed_slice`](Self::feed_slice) (copied
    /// into the decoder's staging buffer, which consecutive short pieces share) rather than
    /// [`feed`](Self::feed) (shared): a shared piece is held alive by every event read from
    /// it, so a few bytes read into an HTTP stack's 8 to 16 KiB buffer would keep the whole
    /// buffer alive for as long as the application keeps the event. Longer pieces are
    /// shared, without a copy. Every transport reads by this rule.
    ///
    /// # Example
    /// ```
    /// use ssekit::Decoder;
    /// let mut dec = Decoder::new();
    /// let piece = bytes::Bytes::from_static(b"data: short\n\n");
    /// if piece.len() < Decoder::COPY_BELOW {
    ///     dec.feed_slice(&piece)?;
    /// } else {
    ///     dec.feed(piece)?;
    /// }
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub const COPY_BELOW: usize = 4096;

    /// A decoder with the default [`Config`]: browser dispatch, fail-stop, 16 MiB limits.
    ///
    /// # Example
    /// ```
    /// let dec = ssekit::Decoder::new();
    /// assert_eq!(dec.last_event_id(), "");
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder with the given configuration.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Config, Decoder, Limits};
    /// let _dec = Decoder::with_config(Config::default().limits(Limits::default().max_event(1 << 30)));
    /// ```
    pub fn with_config(config: Config) -> Self {
        Decoder {
            config,
            ..Self::default()
        }
    }

    /// The configuration in use.
    ///
    /// # Example
    /// ```
    /// assert_eq!(*ssekit::Decoder::new().config(), ssekit::Config::default());
    /// ```
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether a limit stopped the decoder for good: under [`OnLimit::FailStop`] the first
    /// error of [`next_frame`](Self::next_frame) is returned again by every later call, and
    /// the stream it reads is over. Under [`OnLimit::Resync`] it never stops: after an error
    /// it skips to the next blank line and goes on. A transport asks this, rather than the
    /// configuration, whether a decode error ends its stream.
    ///
    /// # Example
    /// ```
    /// use ssekit::{decode::OnLimit, Config, Decoder, Limits};
    /// let limits = Limits::default().max_line(8);
    /// for (on_limit, stopped) in [(OnLimit::FailStop, true), (OnLimit::Resync, false)] {
    ///     let mut dec = Decoder::with_config(Config::default().limits(limits).on_limit(on_limit));
    ///     dec.feed_slice(b"data: far too long\n\ndata: ok\n\n")?;
    ///     assert!(dec.next_frame().is_err());
    ///     assert_eq!(dec.has_stopped(), stopped);
    /// }
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn has_stopped(&self) -> bool {
        self.failed.is_some()
    }

    /// Queues a piece of the stream without copying it. Empty pieces are ignored.
    ///
    /// Refused with [`DecodeError::BufferFull`] when undrained input would exceed
    /// `max_buffered` (a single piece into a drained decoder is always accepted).
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// dec.feed(bytes::Bytes::from_static(b"data: x\n\n"))?;
    /// assert!(dec.next_frame()?.is_some());
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    #[inline]
    pub fn feed(&mut self, chunk: Bytes) -> Result<(), DecodeError> {
        if chunk.is_empty() || self.append_tiny(&chunk) {
            return Ok(());
        }
        self.queue_piece(chunk)
    }

    /// `feed` past the tiny-piece fast path.
    fn queue_piece(&mut self, chunk: Bytes) -> Result<(), DecodeError> {
        if self.adopt_line_for_tiny(&chunk) && self.append_tiny(&chunk) {
            return Ok(());
        }
        let taken = self.continue_line(&chunk).unwrap_or(0);
        if taken == chunk.len() {
            return Ok(());
        }
        // Nothing waits when `continue_line` took bytes, so the rest is never refused then.
        self.check_room(chunk.len() - taken)?;
        self.flush_staging();
        self.push_piece(chunk);
        // The bytes taken are read (and counted in `offset`): the piece starts after them.
        self.pos += taken;
        self.queued -= taken;
        self.refresh_tiny_ready();
        Ok(())
    }

    /// Queues a non-empty piece behind those already held.
    fn push_piece(&mut self, piece: Bytes) {
        let len = piece.len();
        if self.queued == 0 {
            // `front` has been read to its end (or is empty) and nothing waits behind it.
            self.fields.detach(&self.front);
            self.front = piece;
            self.pos = 0;
        } else {
            self.queue.push_back(piece);
        }
        self.queued += len;
    }

    /// Queues a copy of a piece of the stream. Consecutive slices share one buffer, so
    /// feeding a byte at a time does not allocate per byte.
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// for b in b"data: x\n\n" {
    ///     dec.feed_slice(&[*b])?;
    /// }
    /// assert!(dec.next_frame()?.is_some());
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    #[inline]
    pub fn feed_slice(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        if chunk.is_empty() || self.append_tiny(chunk) {
            return Ok(());
        }
        self.stage_slice(chunk)
    }

    /// `feed_slice` past the tiny-piece fast path.
    fn stage_slice(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        if self.adopt_line_for_tiny(chunk) && self.append_tiny(chunk) {
            return Ok(());
        }
        let taken = self.continue_line(chunk).unwrap_or(0);
        let Some(chunk) = chunk.get(taken..).filter(|rest| !rest.is_empty()) else {
            return Ok(());
        };
        self.check_room(chunk.len())?;
        self.copied += append(&mut self.staging, chunk);
        self.refresh_tiny_ready();
        Ok(())
    }

    /// The fast path for tiny pieces (a socket read of a few bytes): the piece is copied into
    /// `held` at once, behind the line it continues, and examined for line endings and high
    /// bytes ([`WordPair`], from the two words that are also what is copied). Without an
    /// ending it only extends the current line: its bytes count as scanned, and `next_frame`
    /// returns at once. With one, `next_frame` reads the lines it completes where they lie in
    /// `held` ([`scan_held`](Self::scan_held)), finding them in the piece's [`TailMasks`].
    /// Returns false, with nothing changed, when the piece must take the general path (queued
    /// input, a line in `line`, a pending BOM or CR, a line that may go over the limit, a
    /// failed or resyncing decoder).
    #[inline(always)]
    fn append_tiny(&mut self, piece: &[u8]) -> bool {
        debug_assert_eq!(self.tiny_ready, self.may_append_tiny());
        if piece.len() > TINY_PIECE || !self.tiny_ready {
            return false;
        }
        // Every line this piece completes or extends lies in `held[held_pos..]` and the piece.
        let unread = self.held.len() - self.held_pos;
        if unread + piece.len() > self.config.limits.max_line {
            return false;
        }
        if self.held.capacity() - self.held.len() < TINY_PIECE {
            self.make_room_in_held(TINY_PIECE);
        }
        // All of `held` was looked at: a piece with a line ending is the unscanned rest, which
        // `held_masks` then describe.
        debug_assert_eq!(self.held_scan_from, self.held.len());
        // Where the piece's line endings and high bytes are, kept if it has an ending.
        let mut masks = TailMasks::LAST_BYTE_ENDS_LINE;
        // Copies of a constant size, which compile to plain stores (a copy of a length known
        // only at run time calls `memcpy`, which costs more than the rest of this path).
        let (ending, ascii) = match (piece.first_chunk::<8>(), piece.last_chunk::<8>()) {
            (Some(first), Some(last)) => {
                // 8 to 16 bytes: two overlapping words cover the piece. Stored as one 16-byte
                // value, `last` laid over `first` at its place (where they overlap, their bytes
                // are the same) and zeros after it, then cut to the piece.
                let (first, last) = (u64::from_le_bytes(*first), u64::from_le_bytes(*last));
                let last_at = 8 * piece.len().saturating_sub(8);
                let both = u128::from(first) | u128::from(last) << last_at;
                let start = self.held.len();
                self.held.extend_from_slice(&both.to_le_bytes());
                self.held.truncate(start + piece.len());
                let pair = WordPair::of(first, last);
                if pair.has_ending() {
                    masks = TailMasks::of_words(pair, piece.len());
                }
                (pair.has_ending(), pair.is_ascii())
            }
            _ => match *piece {
                [byte] => {
                    self.held.extend_from_slice(&[byte]);
                    (byte == b'\n' || byte == b'\r', byte.is_ascii())
                }
                _ => {
                    self.held.extend_from_slice(piece);
                    masks = TailMasks::of_bytes(piece);
                    (masks.has_ending(), !masks.any_high(piece.len()))
                }
            },
        };
        self.offset += piece.len() as u64;
        self.copied += piece.len() as u64;
        if ending {
            self.held_masks = masks;
            self.held_lines = true;
            self.tiny_ready = false;
        } else {
            self.held_scan_from = self.held.len();
            self.held_high |= !ascii;
            self.scanned += piece.len() as u64;
        }
        true
    }

    /// What [`tiny_ready`](Self::tiny_ready) caches.
    fn may_append_tiny(&self) -> bool {
        self.line.is_empty() && self.ready_but_for_line()
    }

    /// Everything [`may_append_tiny`](Self::may_append_tiny) asks but an empty `line`.
    fn ready_but_for_line(&self) -> bool {
        self.queued == 0
            && self.staging.is_empty()
            && !self.held_lines
            && self.bom_done
            && !self.after_cr
            && !self.discarding_line
            && self.failed.is_none()
    }

    fn refresh_tiny_ready(&mut self) {
        self.tiny_ready = self.may_append_tiny();
    }

    /// Before a tiny piece: when the only thing keeping it off the fast path is a line that
    /// larger pieces left in `line`, that line moves into `held` (the buffers are swapped, no
    /// copy), where tiny pieces continue it. Returns whether the fast path may take the piece.
    fn adopt_line_for_tiny(&mut self, piece: &[u8]) -> bool {
        if piece.len() > TINY_PIECE || self.tiny_ready || self.line.is_empty() {
            return self.tiny_ready;
        }
        // `line` holds a line only while `held` is all read.
        if !self.ready_but_for_line() || self.held_pos != self.held.len() {
            return false;
        }
        self.fields.clear_lent();
        self.swap_line_into_held(false);
        self.refresh_tiny_ready();
        self.tiny_ready
    }

    /// A piece fed behind a line that larger pieces left in `line`, with nothing else
    /// waiting: its bytes up to the line's ending are copied onto the line as they are
    /// scanned ([`copy_onto_line`]), here, so a piece that only continues a long line is
    /// neither queued nor stepped over, and one fed by `feed_slice` is copied once, not
    /// staged first. Returns how many bytes of the piece it took: all of them when the line
    /// goes on past the piece, otherwise those before its ending, which the rest of the
    /// piece, queued, then starts with. `None`, with nothing changed, when the piece takes
    /// the general path: input or a CR waiting, a line being discarded, a piece that could
    /// take the line over `max_line`, or a short line with no room behind it.
    ///
    /// A 4 KiB ORS `chunk` line spans three 1460-byte reads and a `big-data` line 45: all
    /// but the first read of each only continue it. Taking them in `next_step`, the general
    /// path queued each piece (letting the last one go, moving the piece in), and took a
    /// step to copy it and another to find the queue empty.
    #[inline(never)]
    fn continue_line(&mut self, piece: &[u8]) -> Option<usize> {
        if self.line.is_empty() || !self.ready_but_for_line() {
            return None;
        }
        let (found, copied) = copy_onto_line(&mut self.line, piece, self.config.limits.max_line)?;
        let taken = found.at.unwrap_or(piece.len());
        self.line_high = !self.line_ascii_with(found.ascii);
        self.copied += copied;
        self.scanned += taken as u64;
        self.offset += taken as u64;
        Some(taken)
    }

    /// Makes room in `held` for `additional` more bytes. The lines read that no value points
    /// into any more (those before the first value of the event being read, or all of them)
    /// are let go first if that frees at least half of it; otherwise, if values pin most of
    /// it, the lines read are detached and left to them; otherwise the buffer grows.
    ///
    /// Borrowed frames leave the lines of the event they lent in `held`, and the next event's
    /// `event:` line comes after them: detaching all the lines read then (as this did while
    /// any value pinned them) shared the buffer with the values, so that each growth after it
    /// allocated anew, three times per 4 KiB `chunk` event fed in 1- or 10-byte pieces.
    #[cold]
    #[inline(never)]
    fn make_room_in_held(&mut self, additional: usize) {
        let read = self.held_pos;
        if read > 0 {
            self.fields.clear_lent();
            let free = self
                .fields
                .held_pinned_from()
                .map_or(read, |from| from.min(read));
            if free * 2 >= self.held.len() {
                self.copied += (self.held.len() - free) as u64;
                self.held.copy_within(free.., 0);
                self.held.truncate(self.held.len() - free);
                self.held_pos -= free;
                self.held_scan_from -= free;
                self.fields.shift_held(free);
            } else if (read - free) * 2 >= self.held.len() {
                self.detach_held_slow();
            }
        }
        if self.held.capacity() - self.held.len() < additional {
            let additional = additional.max(MIN_CAPACITY.saturating_sub(self.held.len()));
            self.copied += grow(&mut self.held, additional);
        }
    }

    /// `held` takes the line buffer's bytes, and `line` the buffer `held` had (emptied; a
    /// value still pointing into it is detached first). `held` must be all read, as it is
    /// whenever `line` holds a line. `read`: the line is complete and read in place now;
    /// otherwise it is the current line, which tiny pieces go on to continue (its bytes were
    /// not looked at for ASCII as they were read).
    fn swap_line_into_held(&mut self, read: bool) {
        self.detach_held();
        self.held.clear();
        core::mem::swap(&mut self.line, &mut self.held);
        self.held_pos = if read { self.held.len() } else { 0 };
        self.held_scan_from = self.held.len();
        self.held_high = !read;
    }

    /// Values pointing into the read part of `held` become shared slices of it, frozen:
    /// before an owned frame hands them out, and before that part is let go.
    #[inline(always)]
    fn detach_held(&mut self) {
        if self.fields.held_pinned() {
            self.detach_held_slow();
        }
    }

    #[inline(never)]
    fn detach_held_slow(&mut self) {
        let read = self.held_pos;
        let frozen = self.held.split_to(read).freeze();
        self.held_pos = 0;
        self.held_scan_from -= read;
        self.fields.detach_held(&frozen);
    }

    fn check_room(&self, incoming: usize) -> Result<(), DecodeError> {
        let behind = self.queued + self.staging.len();
        // Lines fed in tiny pieces and not read yet count too (the current line alone does not).
        let unread_lines = if self.held_lines {
            self.held.len() - self.held_pos
        } else {
            0
        };
        let held = behind + unread_lines;
        if held > 0 && held.saturating_add(incoming) > self.config.limits.max_buffered {
            return Err(DecodeError::BufferFull {
                offset: self.offset + behind as u64,
                size: held.saturating_add(incoming),
                limit: self.config.limits.max_buffered,
            });
        }
        Ok(())
    }

    #[inline(always)]
    fn flush_staging(&mut self) {
        if !self.staging.is_empty() {
            self.flush_staging_slow();
        }
    }

    #[cold]
    fn flush_staging_slow(&mut self) {
        let piece = self.staging.split().freeze();
        self.push_piece(piece);
    }

    /// The next frame, or `Ok(None)` when all fed input has been consumed and more is needed.
    /// Its fields share the input's [`Bytes`]; see [`next_frame_ref`](Self::next_frame_ref)
    /// for frames that borrow instead.
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// dec.feed_slice(b"data: a\n\ndata: b\n\n")?;
    /// let mut n = 0;
    /// while let Some(_frame) = dec.next_frame()? {
    ///     n += 1;
    /// }
    /// assert_eq!(n, 2);
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    #[inline(always)]
    pub fn next_frame(&mut self) -> Result<Option<Frame>, DecodeError> {
        if self.all_read() {
            self.fields.clear_lent();
            return Ok(None);
        }
        self.next_frame_slow()
    }

    #[inline(always)]
    fn next_frame_slow(&mut self) -> Result<Option<Frame>, DecodeError> {
        self.lend_held = false;
        match self.next_step() {
            Step::Pending => Ok(None),
            Step::Frame(emit) => Ok(Some(self.owned_frame(emit))),
            Step::Error => Err(self.raised_error()),
        }
    }

    /// The next frame, borrowed from the decoder: the same frames as
    /// [`next_frame`](Self::next_frame), without a reference count, a copy or an allocation
    /// (see [`FrameRef`]). The borrow ends before the decoder is used again.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Decoder, FrameRef};
    /// let mut dec = Decoder::new();
    /// let mut text = String::new();
    /// for piece in [&b"data: Hel"[..], b"lo\n\ndata: , w", b"orld\n\n"] {
    ///     dec.feed_slice(piece)?;
    ///     while let Some(frame) = dec.next_frame_ref()? {
    ///         if let FrameRef::Event(ev) = frame {
    ///             text.push_str(ev.data());
    ///         }
    ///     }
    /// }
    /// assert_eq!(text, "Hello, world");
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    #[inline(always)]
    pub fn next_frame_ref(&mut self) -> Result<Option<FrameRef<'_>>, DecodeError> {
        if self.all_read() {
            self.fields.clear_lent();
            return Ok(None);
        }
        self.next_frame_ref_slow()
    }

    #[inline(always)]
    fn next_frame_ref_slow(&mut self) -> Result<Option<FrameRef<'_>>, DecodeError> {
        self.lend_held = true;
        match self.next_step() {
            Step::Pending => Ok(None),
            Step::Frame(emit) => Ok(Some(self.borrow_frame(emit))),
            Step::Error => Err(self.raised_error()),
        }
    }

    /// The error [`Step::Error`] stands for. `next_step` stores it before returning that
    /// step; the fallback is never taken.
    #[cold]
    fn raised_error(&self) -> DecodeError {
        self.raised.unwrap_or(DecodeError::LineTooLong {
            offset: self.offset,
            size: self.config.limits.max_line.saturating_add(1),
            limit: self.config.limits.max_line,
        })
    }

    /// Everything fed has been read (the common case after a tiny piece), without error.
    /// `tiny_ready` implies it and is one load.
    #[inline(always)]
    fn all_read(&self) -> bool {
        self.tiny_ready
            || (self.queued == 0
                && self.staging.is_empty()
                && !self.held_lines
                && self.failed.is_none())
    }

    /// The next step, shared by `next_frame` and `next_frame_ref`: out of line, returning
    /// one byte, so the frame is built in the caller.
    #[inline(never)]
    fn next_step(&mut self) -> Step {
        if let Some(err) = self.failed {
            self.raised = Some(err);
            return Step::Error;
        }
        self.fields.clear_lent();
        self.fields.release_large_scratch();
        self.flush_staging();
        let step = self.scan();
        self.refresh_tiny_ready();
        step
    }

    /// An emitted frame as an owned [`Frame`]: values in `front` become reference-counted
    /// slices of it, joined data is copied out once.
    #[inline(always)]
    fn owned_frame(&mut self, emit: Emit) -> Frame {
        self.detach_held();
        let front = &self.front;
        let held: &[u8] = &self.held;
        let fields = &mut self.fields;
        let text = |value: Value| value.into_text(front, held);
        match emit {
            Emit::Event | Emit::Dataless => {
                fields.lent = Lent::Nothing;
                let event_type = fields.event_type.take().map(text);
                let id = fields.dispatched_id.then(|| fields.last_event_id.clone());
                let data = match core::mem::take(&mut fields.data) {
                    Data::One(value) => text(value),
                    Data::Joined { ascii } => {
                        // One exact-size copy out; the joining buffer stays for the next event.
                        fields.copied += fields.scratch.len() as u64;
                        owned_text(Bytes::copy_from_slice(&fields.scratch), ascii)
                    }
                    Data::Empty => Utf8Bytes::new(),
                };
                let event = Event::from_decoded(event_type, id, data);
                match emit {
                    Emit::Dataless => Frame::Dataless(event),
                    _ => Frame::Event(event),
                }
            }
            Emit::Comment => {
                fields.lent = Lent::Nothing;
                Frame::Comment(fields.comment.take().map(text).unwrap_or_default())
            }
            Emit::Retry => Frame::Retry(fields.retry),
        }
    }

    /// An emitted frame as a [`FrameRef`] borrowing `front`, the joining buffer or the
    /// values waiting in [`FieldState`].
    #[inline(always)]
    fn borrow_frame(&mut self, emit: Emit) -> FrameRef<'_> {
        let Decoder {
            front,
            held,
            fields,
            repaired,
            ..
        } = self;
        let front: &Bytes = front;
        let held: &[u8] = held;
        // Like the joining buffer, a repair buffer one large event grew is not kept.
        if repaired.capacity() > SCRATCH_KEPT {
            *repaired = String::new();
        }
        repaired.clear();
        match emit {
            Emit::Event | Emit::Dataless => {}
            Emit::Comment => {
                let comment = match &fields.comment {
                    Some(value) => value.text(front, held, repaired),
                    None => Text::Valid(""),
                };
                return FrameRef::Comment(comment.resolve(repaired));
            }
            Emit::Retry => return FrameRef::Retry(fields.retry),
        }
        let data = match &fields.data {
            Data::One(value) => value.text(front, held, repaired),
            &Data::Joined { ascii } => Text::scanned(&fields.scratch, ascii, repaired),
            Data::Empty => Text::Valid(""),
        };
        let event_type = fields
            .event_type
            .as_ref()
            .map(|value| value.text(front, held, repaired));
        let repaired: &str = repaired;
        let event = EventRef {
            event_type: event_type.map(|t| t.resolve(repaired)),
            id: fields.dispatched_id.then(|| fields.last_event_id.as_str()),
            data: data.resolve(repaired),
        };
        match emit {
            Emit::Dataless => FrameRef::Dataless(event),
            _ => FrameRef::Event(event),
        }
    }

    /// Finds lines and feeds them to the field parser until one yields a frame.
    #[inline(always)]
    fn scan(&mut self) -> Step {
        if self.held_pos < self.held.len()
            && let Some(step) = self.scan_held()
        {
            return step;
        }
        loop {
            if self.pos == self.front.len() {
                // `front` is read to its end: move on to the next piece, if one was fed.
                let Some(next) = self.queue.pop_front() else {
                    return Step::Pending;
                };
                self.fields.detach(&self.front);
                self.front = next;
                self.pos = 0;
            }
            if !self.bom_done && !self.strip_bom() {
                continue;
            }
            if self.after_cr {
                // The LF of a CRLF split across pieces belongs to the line already ended.
                self.after_cr = false;
                if self.front.get(self.pos) == Some(&b'\n') {
                    self.drop_front(1);
                    self.line_start = self.offset;
                    continue;
                }
            }
            let (found, copied) = if self.line.is_empty() && !self.discarding_line {
                let mut found = LineEnd {
                    at: None,
                    ascii: false,
                };
                if let Some(step) = self.scan_whole_lines(&mut found) {
                    return step;
                }
                // A long line that goes on past the piece may have been copied as it was
                // scanned (`start_long_line`).
                (found, !self.line.is_empty())
            } else if let Some(found) = self.copy_continued_line() {
                (found, true)
            } else {
                // A line being discarded, or one this piece may take over `max_line`: its
                // ending and the ASCII-ness of what comes before it, in one pass.
                let rest = self.front.get(self.pos..).unwrap_or_default();
                (scan_continued(rest), false)
            };
            match self.read_line(found, copied) {
                Ok(None) => {}
                Ok(Some(emit)) => return Step::Frame(emit),
                Err(err) => return self.raise(err),
            }
        }
    }

    /// Reports `err`: the decoder stops for good (fail-stop) or skips to the next blank line
    /// (resync).
    #[cold]
    #[inline(never)]
    fn raise(&mut self, err: DecodeError) -> Step {
        match self.config.on_limit {
            OnLimit::FailStop => self.failed = Some(err),
            OnLimit::Resync => self.fields.start_skip(),
        }
        self.raised = Some(err);
        Step::Error
    }

    /// The hot loop of [`scan`](Self::scan), for when no line is pending from an earlier
    /// piece: reads the lines that lie whole in `front`, with its position and counters in
    /// locals. Stops at the first frame or error, or returns `None` to hand the general path
    /// ([`read_line`](Self::read_line)) the line it does not read, with what its scan found
    /// (`found`): a line with no ending in this piece, one whose CR is the piece's last
    /// byte (an LF may follow in the next piece), one over `max_line`. The first of these
    /// is then on the line buffer when [`start_long_line`] copied it as it scanned it.
    #[inline(always)]
    fn scan_whole_lines(&mut self, found: &mut LineEnd) -> Option<Step> {
        let bytes: &[u8] = &self.front;
        let max_line = self.config.limits.max_line;
        let begin = self.pos;
        let mut pos = begin;
        let mut scanned = 0;
        let mut error = None;
        let stop = loop {
            let rest = bytes.get(pos..).unwrap_or_default();
            let LineEnd { at, ascii } = match scan_line_head(rest) {
                Ok(found) => found,
                Err(long) => {
                    let (found, put) = start_long_line(&mut self.line, rest, long, max_line);
                    self.copied += put;
                    found
                }
            };
            let Some(end) = at else {
                *found = LineEnd { at, ascii };
                break None;
            };
            let terminator = match rest.get(end..end + 2) {
                Some(b"\r\n") => 2,
                None if rest.get(end) == Some(&b'\r') => {
                    *found = LineEnd { at, ascii };
                    break None;
                }
                _ => 1,
            };
            if end > max_line {
                *found = LineEnd { at, ascii };
                break None;
            }
            scanned += end + 1;
            let line = pos..pos + end;
            let line_offset = self.offset + (pos - begin) as u64;
            pos += terminator + end;
            let text = rest.get(..end).unwrap_or_default();
            let at = LineAt {
                range: line,
                ascii,
                held: false,
                offset: line_offset,
            };
            let result = self
                .fields
                .read_line_at(&self.config, &self.front, &self.held, text, at);
            match result {
                Ok(None) => {}
                Ok(Some(emit)) => break Some(Step::Frame(emit)),
                Err(err) => {
                    error = Some(err);
                    break Some(Step::Error);
                }
            }
        };
        let consumed = pos - begin;
        self.pos = pos;
        self.queued -= consumed;
        self.offset += consumed as u64;
        self.line_start = self.offset;
        self.scanned += scanned as u64;
        match error {
            Some(err) => Some(self.raise(err)),
            None => stop,
        }
    }

    /// Reads the lines fed in tiny pieces where they lie in `held` ([`append_tiny`]), as
    /// [`scan_whole_lines`](Self::scan_whole_lines) reads those of `front`, and stops at the
    /// first frame or error. Once only the current line is left (no line ending after
    /// `held_pos`), returns `Pending` if nothing else was fed; otherwise that line moves into
    /// `line`, where the next piece continues it, and `None` lets the general path go on.
    /// When it stops at a frame and only the current line is left, that is settled at once
    /// (the next call then returns without a step).
    ///
    /// Lines are found in `held_masks` (see [`held_line_end`]), not by reading bytes again.
    /// On `keepalive-heavy` in 10-byte pieces (`feed_slice`, `next_frame_ref`) the byte loop
    /// and ASCII pass this replaced were 14% of the instructions, and nearly one call in three
    /// took a step only to find the rest of a piece without an ending; together 34.41 -> 28.94
    /// instructions per byte (callgrind), 27.81 with the masks made by SSE2.
    ///
    /// [`append_tiny`]: Self::append_tiny
    fn scan_held(&mut self) -> Option<Step> {
        let bytes: &[u8] = &self.held;
        let held_end = self.offset; // stream offset just past `held`
        let max_line = self.config.limits.max_line;
        let mut pos = self.held_pos;
        // The first line continues bytes already looked at: its scan starts after them.
        let mut scan_from = self.held_scan_from;
        let mut known_ascii = !self.held_high;
        let mut scanned = 0;
        let mut ended_by_cr = false;
        let masks = self.held_masks;
        // Whether a byte of the current line is 0x80 or above, once no ending is left.
        let mut current_high = false;
        let stop = loop {
            let rest = bytes.get(scan_from..).unwrap_or_default();
            let LineEnd { at, ascii } = held_line_end(rest, masks);
            let Some(found) = at else {
                scanned += rest.len();
                current_high = !known_ascii || held_any_high(rest, masks);
                break None;
            };
            scanned += found + 1;
            let end = scan_from - pos + found;
            let terminator = match bytes.get(pos + end..pos + end + 2) {
                Some(b"\r\n") => 2,
                // A CR that ends `held`: an LF fed next belongs to it.
                None if bytes.get(pos + end) == Some(&b'\r') => {
                    ended_by_cr = true;
                    1
                }
                _ => 1,
            };
            let line_offset = held_end - (bytes.len() - pos) as u64;
            let at = LineAt {
                range: pos..pos + end,
                ascii: ascii && known_ascii,
                held: true,
                offset: line_offset,
            };
            let text = bytes.get(pos..pos + end).unwrap_or_default();
            pos += end + terminator;
            scan_from = pos;
            known_ascii = true;
            // Tiny pieces are taken only while the line stays within `max_line`.
            let result = if end > max_line {
                Err(DecodeError::LineTooLong {
                    offset: line_offset,
                    size: end,
                    limit: max_line,
                })
            } else {
                self.fields
                    .read_line_at(&self.config, &self.front, &self.held, text, at)
            };
            match result {
                Ok(None) => {}
                Ok(Some(emit)) => break Some(Ok(emit)),
                Err(err) => break Some(Err(err)),
            }
        };
        let held_len = bytes.len();
        self.held_pos = pos;
        self.scanned += scanned as u64;
        if ended_by_cr {
            self.after_cr = true;
        }
        self.line_start = held_end - (held_len - pos) as u64;
        if let Some(result) = stop {
            let rest = bytes.get(pos..).unwrap_or_default();
            if !rest.is_empty() && held_line_end(rest, masks).at.is_some() {
                // Stopped right after a line, and another follows: the next scan starts there.
                // (An empty rest, the usual case, is settled below without asking the masks.)
                self.held_scan_from = pos;
                self.held_high = false;
                self.held_lines = true;
            } else {
                // What is left, if anything, is the current line: settled now, so the next
                // call returns at once, where it would have taken a step to find nothing
                // (a step costs more than the rest of a line of tiny pieces).
                let high = held_any_high(rest, masks);
                self.scanned += rest.len() as u64;
                self.settle_current_line(high);
            }
            return Some(match result {
                Ok(emit) => Step::Frame(emit),
                Err(err) => self.raise(err),
            });
        }
        // What is left is the current line, looked at to its end. Tiny pieces go on to continue
        // it here, unless a piece fed since does.
        let continued_here = pos < held_len && self.queued == 0;
        self.settle_current_line(continued_here && current_high);
        if pos == held_len {
            return None;
        }
        if continued_here {
            return Some(Step::Pending);
        }
        // The general path takes the line from here.
        self.move_current_line_to_line();
        None
    }

    /// The current line, `held[held_pos..]`, becomes the line buffer where it lies, for the
    /// general path to continue; `held` takes the empty line buffer. The read lines before it
    /// are let go, or frozen first when values of the open block still point into them.
    ///
    /// Not copied: a line that went back and forth between tiny and larger pieces was copied
    /// whole at each switch (`adopt_line_for_tiny` swaps it the other way), quadratic in its
    /// length. A 100 KB line fed in a cycle of 1- to 1460-byte pieces cost 90 copied bytes
    /// per input byte (`bytes_copied`; a test now asserts at most 6).
    fn move_current_line_to_line(&mut self) {
        debug_assert!(
            self.line.is_empty(),
            "a line waits in `line` only while `held` is read"
        );
        if self.fields.held_pinned() {
            self.detach_held_slow();
        } else {
            self.held.advance(self.held_pos);
        }
        core::mem::swap(&mut self.line, &mut self.held);
        self.line_high = true; // not known: its bytes were not all looked at for it
        self.held.clear();
        self.held_pos = 0;
        self.held_scan_from = 0;
        self.held_high = false;
        self.held_lines = false;
    }

    /// `held` holds no line ending after `held_pos`, all of it looked at: what is left is
    /// the current line. `high`: whether a byte of it is 0x80 or above.
    fn settle_current_line(&mut self, high: bool) {
        self.held_lines = false;
        self.held_scan_from = self.held.len();
        self.held_high = high;
    }

    /// Whether every byte of `line` with `ascii` bytes appended (whether those are all
    /// ASCII) is known to be below 0x80. An empty `line` has no bytes: what `line_high` says
    /// of the line before it was let go does not count.
    #[inline(always)]
    fn line_ascii_with(&self, ascii: bool) -> bool {
        ascii && (self.line.is_empty() || !self.line_high)
    }

    /// The piece `front[pos..]` continues the line in `line`: copies it onto the line up to
    /// the line's ending ([`copy_onto_line`]). `None`, and nothing copied, when the line is
    /// being discarded or the piece could take it over `max_line`:
    /// [`read_line`](Self::read_line) then decides on a scan.
    ///
    /// Out of line: inlined it made `next_step` slower for short lines.
    #[inline(never)]
    fn copy_continued_line(&mut self) -> Option<LineEnd> {
        if self.discarding_line {
            return None;
        }
        let piece = self.front.get(self.pos..).unwrap_or_default();
        let (found, copied) = copy_onto_line(&mut self.line, piece, self.config.limits.max_line)?;
        self.copied += copied;
        Some(found)
    }

    /// Reads the line at `front[pos..]` in the general case, given what the scan of
    /// `front[pos..]` found (`found.at`, where the ending is, `None`: not in this piece, and
    /// `found.ascii`, whether the bytes before it are known ASCII): a line that continues one
    /// from an earlier piece, that goes on in the next one, that is being discarded or is over
    /// `max_line`. `copied`: the bytes before the ending are already on the line
    /// ([`copy_continued_line`](Self::copy_continued_line)).
    fn read_line(&mut self, found: LineEnd, copied: bool) -> Result<Option<Emit>, DecodeError> {
        let start = self.pos;
        let chunk = self.front.get(start..).unwrap_or_default();
        // The bytes of the line before this piece's.
        let line_before = match (copied, found.at) {
            (false, _) => self.line.len(),
            (true, Some(end)) => self.line.len() - end,
            (true, None) => self.line.len() - chunk.len(),
        };
        let Some(end) = found.at else {
            // No line ending in this piece: the line continues in the next one.
            let len = chunk.len();
            self.scanned += len as u64;
            if !self.discarding_line {
                let size = line_before + len;
                if size > self.config.limits.max_line {
                    self.line.clear();
                    self.discarding_line = true;
                    self.drop_front(len);
                    return Err(DecodeError::LineTooLong {
                        offset: self.line_start,
                        size,
                        limit: self.config.limits.max_line,
                    });
                }
                self.line_high = !self.line_ascii_with(found.ascii);
                if !copied {
                    self.copied += append(&mut self.line, chunk);
                }
            }
            self.drop_front(len);
            return Ok(None);
        };
        self.scanned += end as u64 + 1;
        let terminator = match (chunk.get(end), chunk.get(end + 1)) {
            (Some(b'\r'), Some(b'\n')) => 2,
            (Some(b'\r'), None) => {
                self.after_cr = true;
                1
            }
            _ => 1,
        };
        let line_offset = self.line_start;
        let consumed = end + terminator;
        let result = if self.discarding_line {
            self.discarding_line = false;
            Ok(None)
        } else if line_before + end > self.config.limits.max_line {
            let size = line_before + end;
            self.line.clear();
            Err(DecodeError::LineTooLong {
                offset: line_offset,
                size,
                limit: self.config.limits.max_line,
            })
        } else if self.line.is_empty() {
            // The whole line lies in this piece: parse it in place, values point into it.
            let line = start..start + end;
            self.fields.line(
                &self.config,
                &self.front,
                &self.held,
                (IN_FRONT, found.ascii),
                line,
                line_offset,
            )
        } else {
            let ascii = self.line_ascii_with(found.ascii);
            if !copied {
                self.copied += append(&mut self.line, chunk.get(..end).unwrap_or_default());
            }
            let range = 0..self.line.len();
            let line_in = if self.lend_held {
                // The complete line becomes the held one, for borrowed frames to point into;
                // the buffer it replaces takes the next line.
                self.swap_line_into_held(true);
                LineIn::Buffer { held: true }
            } else {
                LineIn::Joined(self.line.split().freeze())
            };
            self.fields.line(
                &self.config,
                &self.front,
                &self.held,
                (line_in, ascii),
                range,
                line_offset,
            )
        };
        self.drop_front(consumed);
        self.line_start = self.offset;
        result
    }

    /// Consumes `n` bytes of `front` (the piece itself is kept; see `scan`).
    #[inline]
    fn drop_front(&mut self, n: usize) {
        self.pos += n;
        self.queued -= n;
        self.offset += n as u64;
    }

    /// Matches a BOM at stream start. Returns false when the piece ended before deciding.
    fn strip_bom(&mut self) -> bool {
        while usize::from(self.bom_matched) < BOM.len() {
            let Some(&byte) = self.front.get(self.pos) else {
                return false;
            };
            let expected = BOM.get(usize::from(self.bom_matched)).copied();
            if Some(byte) == expected {
                self.bom_matched += 1;
                self.drop_front(1);
            } else {
                // Not a BOM: the bytes matched so far are the start of the first line.
                let matched = BOM.get(..usize::from(self.bom_matched)).unwrap_or_default();
                self.copied += append(&mut self.line, matched);
                self.line_high = true;
                self.bom_done = true;
                return true;
            }
        }
        self.bom_done = true;
        self.line_start = self.offset;
        true
    }

    /// Ends the stream: reports whether it ended cleanly. Call after `next_frame` returned
    /// `Ok(None)`; pending bytes are discarded, as WHATWG requires. The decoder keeps its
    /// last event ID; call [`reset`](Self::reset) before decoding a new stream.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Decoder, StreamEnd};
    /// let mut dec = Decoder::new();
    /// dec.feed_slice(b"data: x\n\n")?;
    /// while dec.next_frame()?.is_some() {}
    /// assert_eq!(dec.finish(), StreamEnd::Clean);
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn finish(&mut self) -> StreamEnd {
        if let Some(err) = self.failed {
            return StreamEnd::Failed(err);
        }
        let pending_bom = if self.bom_done {
            0
        } else {
            usize::from(self.bom_matched)
        };
        let unterminated = self.line.len()
            + (self.held.len() - self.held_pos)
            + self.queued
            + self.staging.len()
            + pending_bom;
        let open_event = self.fields.block_open() || self.fields.skip_block || self.discarding_line;
        if unterminated == 0 && !open_event {
            StreamEnd::Clean
        } else {
            StreamEnd::Truncated {
                unterminated_line: unterminated as u64,
                open_event,
            }
        }
    }

    /// Prepares for a new stream on the same source (a reconnect): clears all buffers, any
    /// error and the BOM state. The last event ID is kept and seeds the new stream's last
    /// event ID buffer, as browsers do.
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// dec.feed_slice(b"id: 9\ndata: x\n\ndata: cut")?;
    /// while dec.next_frame()?.is_some() {}
    /// dec.reset();
    /// assert_eq!(dec.last_event_id(), "9");
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn reset(&mut self) {
        let last_event_id = core::mem::take(&mut self.fields.last_event_id);
        let scanned = self.scanned + self.fields.scanned;
        let copied = self.bytes_copied();
        *self = Decoder::with_config(self.config);
        self.fields.id_buffer = last_event_id.as_bytes().clone();
        self.fields.last_event_id = last_event_id;
        self.scanned = scanned;
        self.copied = copied;
    }

    /// The last event ID: what a browser sends as `Last-Event-ID` on reconnect and shows as
    /// `MessageEvent.lastEventId`. Updated when a block ends with a blank line.
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// dec.feed_slice(b"id: 7\n\n")?;            // no data: no event, but the id counts
    /// while dec.next_frame()?.is_some() {}
    /// assert_eq!(dec.last_event_id(), "7");
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn last_event_id(&self) -> &str {
        self.fields.last_event_id.as_str()
    }

    /// Sets the last event ID, as an `id:` line followed by a blank line would: a stream
    /// resumed from an id kept elsewhere (a stored id, a reconnect policy's) starts from it,
    /// and it is what [`last_event_id`](Self::last_event_id) returns until the stream sets
    /// another. An `id:` line of the block being read, if any, still wins when that block
    /// ends.
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// dec.set_last_event_id("41".into());
    /// dec.feed_slice(b"data: x\n\n")?;
    /// assert!(dec.next_frame()?.is_some());
    /// assert_eq!(dec.last_event_id(), "41");
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn set_last_event_id(&mut self, id: Utf8Bytes) {
        self.fields.set_last_event_id(id);
    }

    /// The last event ID as shared bytes.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::Decoder::new().last_event_id_bytes().is_empty());
    /// ```
    pub fn last_event_id_bytes(&self) -> &Utf8Bytes {
        &self.fields.last_event_id
    }

    /// Bytes examined so far by the line-ending scan and the NUL check of ids together
    /// (field names are matched by their first bytes, not scanned; UTF-8 validation of
    /// exposed fields is not counted). At most twice the input, whatever the sizes of the
    /// pieces fed: the linear-time guarantee, made checkable. Counted per line, from its
    /// start to its ending: the vector reads of the scan (SSE2 here, AVX2 in `memchr2`)
    /// also load up to one vector past the ending, a constant per line that is not counted.
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// for b in b"data: hello\n\n" {
    ///     dec.feed_slice(&[*b])?;
    ///     while dec.next_frame()?.is_some() {}
    /// }
    /// assert!(dec.bytes_scanned() <= 2 * 13);
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn bytes_scanned(&self) -> u64 {
        self.scanned + self.fields.scanned
    }

    /// Bytes the decoder has copied so far: input into its line, held and staging buffers
    /// (a line that straddles pieces, or the start of a long one copied in case it does,
    /// tiny pieces, `feed_slice`), data lines joined, joined
    /// data copied out into an owned frame, and buffer contents moved when a buffer grows or
    /// is compacted. With [`bytes_scanned`](Self::bytes_scanned), the work per input byte:
    /// a bounded multiple of the input whatever the sizes of the pieces, where a decoder that
    /// copies its buffer per line or per read is quadratic. Tests assert at most 6 times the
    /// input on every feed pattern; typical streams copy none of it (`feed` of `Bytes` with
    /// single-line events) or about one time (`feed_slice`, multi-line data).
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// dec.feed(bytes::Bytes::from_static(b"data: in place\n\n"))?;
    /// while dec.next_frame()?.is_some() {}
    /// assert_eq!(dec.bytes_copied(), 0);
    /// dec.feed_slice(b"data: a\ndata: b\n\n")?;
    /// while dec.next_frame()?.is_some() {}
    /// assert!(dec.bytes_copied() <= 6 * 18);
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn bytes_copied(&self) -> u64 {
        // The joining buffer's bytes are counted when it is emptied.
        self.copied + self.fields.copied + self.fields.scratch.len() as u64
    }
}

//! Payload → `chunk` / `end` events of bounded size, and back.
//!
//! An ORS tool result larger than the limit (4096 bytes by default) is sent as `chunk` events
//! of at most that many bytes of data each and a final `end` event carrying the rest; a result
//! of the limit or less is one `end` event. [`Chunker`] cuts, [`Reassembler`] joins.
//!
//! ```
//! use ssekit::chunk::{Chunker, Reassembler};
//! use ssekit::{Decoder, Encoder, Frame};
//!
//! let payload = "{\"ok\":true,\"text\":\"héllo wörld\"}";
//! let mut wire = Vec::new();
//! for piece in Chunker::new().max_chunk(8).chunk(payload)? {
//!     Encoder::new().encode(&piece.into_event(), &mut wire)?;
//! }
//! let mut decoder = Decoder::new();
//! decoder.feed_slice(&wire)?;
//! let mut joined = Reassembler::new();
//! let mut result = None;
//! while let Some(Frame::Event(ev)) = decoder.next_frame()? {
//!     result = joined.push(&ev)?;
//! }
//! assert_eq!(result.as_deref(), Some(payload));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Where a boundary goes
//! Greedily as far as the limit allows, then moved back until it is
//! - at the start of a UTF-8 character: a character split over two events becomes two U+FFFD
//!   in a browser (each event's data is decoded on its own) and is silently dropped by the
//!   official ORS Python client (`errors="ignore"`);
//! - not in front of a character that Python's `str.lstrip()` removes (any Unicode
//!   whitespace and U+001C..U+001F, but not LF): that client strips every value, so a chunk
//!   beginning with a space would lose it. With [`Chunker::strip_safe`]`(false)` only the
//!   first rule applies.
//!
//! Pieces are slices of the payload: chunking copies nothing.
//!
//! # CR and LF in payloads
//! SSE cannot carry every string. The encoder writes one `data:` line per line of the payload
//! and every decoder joins `data:` lines with LF, so:
//! - **LF survives**, in ssekit, in every WHATWG client and in the ORS Python client (which
//!   also joins with LF), whichever piece it falls in, including a piece that starts or ends
//!   with it.
//! - **CR cannot survive**: a decoder reads CR and CRLF as line endings and hands back LF.
//!   [`Chunker::chunk`] refuses a payload containing CR with [`ChunkError::CarriageReturn`]
//!   rather than send something that reassembles to different bytes. Serialise JSON with
//!   escapes (`\r`), as every JSON serialiser does inside strings.
//! - **A line beginning with whitespace** (at the start of the payload or right after an LF)
//!   loses it on the ORS Python client, whatever the chunker does. In strip-safe mode (the
//!   default) such a payload is refused with [`ChunkError::LeadingWhitespace`]; compact JSON
//!   (`serde_json::to_string`, Python's `json.dumps`) never contains one.
//!
//! The httpx client sketched in the ORS documentation (`buffer += line[6:]` per `data:`
//! line) drops LF between lines; compact JSON has none, so it is served too. The
//! JavaScript sketch there is not, whatever a server does: it `trim()`s both ends of every
//! `data:` value, so a chunk ending in a space loses it (ssekit keeps boundaries off the
//! start of whitespace, not off its end), and it splits each network read into lines
//! without carrying a partial line to the next read, so any event cut between two reads
//! is lost. Keeping boundaries away from both sides of whitespace would leave text such as
//! `"a b c"` without one and still not serve that sketch; use an SSE parser there.

use alloc::string::String;
use core::fmt;

use bytes::Bytes;

use crate::event::Event;
use crate::text::Utf8Bytes;

/// The ORS chunk size: 4096 bytes of data per event.
///
/// # Example
/// ```
/// assert_eq!(ssekit::chunk::Chunker::new().limit(), ssekit::chunk::DEFAULT_MAX_CHUNK);
/// ```
pub const DEFAULT_MAX_CHUNK: usize = 4096;

/// The smallest limit: one character of UTF-8 is up to 4 bytes.
const MIN_CHUNK: usize = 4;

/// Why a payload cannot be chunked so that it reassembles byte for byte. Nothing is sent.
///
/// # Example
/// ```
/// use ssekit::chunk::{ChunkError, Chunker};
/// let err = Chunker::new().chunk("a\r\nb").unwrap_err();
/// assert_eq!(err, ChunkError::CarriageReturn { position: 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChunkError {
    /// A CR at byte `position`: every SSE decoder turns CR and CRLF into LF.
    CarriageReturn {
        /// Byte offset of the CR in the payload.
        position: usize,
    },
    /// The payload or one of its lines begins with whitespace at byte `position`, which the
    /// ORS Python client strips (strip-safe mode only).
    LeadingWhitespace {
        /// Byte offset of the whitespace character.
        position: usize,
    },
    /// A run of whitespace starting at byte `position` is longer than the limit, so no
    /// boundary in it avoids starting a chunk with whitespace (strip-safe mode only).
    NoBoundary {
        /// Byte offset where the run begins.
        position: usize,
        /// The chunk limit in bytes.
        limit: usize,
    },
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkError::CarriageReturn { position } => write!(
                f,
                "payload contains CR at byte {position}; SSE delivers it as LF"
            ),
            ChunkError::LeadingWhitespace { position } => write!(
                f,
                "a payload line begins with whitespace at byte {position}; stripping clients drop it"
            ),
            ChunkError::NoBoundary { position, limit } => write!(
                f,
                "whitespace run at byte {position} is longer than the {limit}-byte chunk limit"
            ),
        }
    }
}

impl core::error::Error for ChunkError {}

/// Cuts a payload into `chunk` events and one final `end` event.
///
/// # Example
/// ```
/// use ssekit::chunk::Chunker;
/// let pieces: Vec<_> = Chunker::new().max_chunk(4).chunk("abcdefghij")?.collect();
/// let kinds: Vec<_> = pieces.iter().map(|p| p.event_type()).collect();
/// assert_eq!(kinds, ["chunk", "chunk", "end"]);
/// assert_eq!(pieces[2].data(), "ij");
/// # Ok::<(), ssekit::chunk::ChunkError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Chunker {
    max_chunk: usize,
    strip_safe: bool,
}

impl Default for Chunker {
    /// 4096 bytes per event, strip-safe.
    fn default() -> Self {
        Chunker {
            max_chunk: DEFAULT_MAX_CHUNK,
            strip_safe: true,
        }
    }
}

impl Chunker {
    /// The ORS defaults: 4096 bytes per event, strip-safe.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::chunk::Chunker::new().limit(), 4096);
    /// ```
    pub const fn new() -> Self {
        Chunker {
            max_chunk: DEFAULT_MAX_CHUNK,
            strip_safe: true,
        }
    }

    /// Sets the most data bytes per event. Values below 4 are raised to 4, so that every
    /// character fits.
    ///
    /// # Example
    /// ```
    /// use ssekit::chunk::Chunker;
    /// assert_eq!(Chunker::new().max_chunk(1024).limit(), 1024);
    /// assert_eq!(Chunker::new().max_chunk(0).limit(), 4);
    /// ```
    pub const fn max_chunk(mut self, bytes: usize) -> Self {
        self.max_chunk = if bytes < MIN_CHUNK { MIN_CHUNK } else { bytes };
        self
    }

    /// Whether to serve clients that strip leading whitespace from every value (the
    /// default, `true`): boundaries avoid whitespace, and payloads with a line beginning with
    /// whitespace are refused. With `false`, any character boundary will do.
    ///
    /// # Example
    /// ```
    /// use ssekit::chunk::Chunker;
    /// assert!(Chunker::new().chunk(" x").is_err());
    /// assert!(Chunker::new().strip_safe(false).chunk(" x").is_ok());
    /// ```
    pub const fn strip_safe(mut self, on: bool) -> Self {
        self.strip_safe = on;
        self
    }

    /// The limit in bytes.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::chunk::Chunker::default().limit(), 4096);
    /// ```
    pub const fn limit(&self) -> usize {
        self.max_chunk
    }

    /// Checks `payload` and returns its pieces, lazily. All errors are found here, before
    /// any piece exists, so a caller never sends half a result. The payload is scanned once.
    ///
    /// # Example
    /// ```
    /// use ssekit::chunk::Chunker;
    /// let mut pieces = Chunker::new().chunk("{}")?;
    /// let only = pieces.next().unwrap();
    /// assert!(only.is_end());
    /// assert!(pieces.next().is_none());
    /// # Ok::<(), ssekit::chunk::ChunkError>(())
    /// ```
    pub fn chunk(&self, payload: impl Into<Utf8Bytes>) -> Result<Chunks, ChunkError> {
        let payload = payload.into();
        self.check(&payload)?;
        Ok(Chunks {
            payload,
            pos: 0,
            chunker: *self,
            done: false,
        })
    }

    fn check(&self, payload: &str) -> Result<(), ChunkError> {
        if !self.strip_safe {
            return match memchr::memchr(b'\r', payload.as_bytes()) {
                Some(position) => Err(ChunkError::CarriageReturn { position }),
                None => Ok(()),
            };
        }
        // One pass for CR (refused wherever it is) and LF (the next character starts a line).
        let starts_bad = |at: usize| {
            let (c, _) = char_at(payload, at);
            at < payload.len() && strippable(c)
        };
        let mut leading = starts_bad(0).then_some(0);
        for at in memchr::memchr2_iter(b'\r', b'\n', payload.as_bytes()) {
            if payload.as_bytes().get(at) == Some(&b'\r') {
                return Err(ChunkError::CarriageReturn { position: at });
            }
            if leading.is_none() && starts_bad(at + 1) {
                leading = Some(at + 1);
            }
        }
        // No line may begin with a strippable character, and every allowed boundary (a
        // non-strippable character's start, or the end) must lie within `max_chunk` of the
        // previous one, or the greedy cut cannot find one. When a payload breaks both, the
        // error it reaches first is reported (a leading character where it starts, a long
        // run where it ends).
        match (
            leading,
            self.first_long_run(payload, leading.unwrap_or(usize::MAX)),
        ) {
            (_, Some(err)) => Err(err),
            (Some(position), None) => Err(ChunkError::LeadingWhitespace { position }),
            (None, None) => Ok(()),
        }
    }

    /// The first run of strippable characters too long for a boundary, if it ends before
    /// byte `before`.
    ///
    /// Characters are at most 4 bytes and the limit at least 4, so only runs of strippable
    /// characters can open a gap. Every strippable character starts with a byte below 0x21
    /// or at or above 0x80 ("candidates"); 8-byte words are tested for them a word at a time.
    /// With a limit of 24 or more, a run long enough to matter (limit - 3 bytes) covers
    /// whole words of candidates, so only some words are tested (`scan_words`) and
    /// looked at closely, from the last printable ASCII byte before them to the first after.
    /// With a smaller limit every candidate is looked at.
    fn first_long_run(&self, text: &str, before: usize) -> Option<ChunkError> {
        let outcome = if self.max_chunk >= 3 * WORD {
            self.scan_words(text)
        } else {
            self.scan_candidates(text)
        };
        match outcome {
            Err((end, err)) if end < before => Some(err),
            _ => None,
        }
    }

    /// The scan for a limit of 24 or more. A run long enough to matter is at least
    /// limit - 3 bytes long, so it covers a whole word at a multiple of any stride up to
    /// limit - 10: only those words are tested, and looked at closely when they are all
    /// candidates. With the default limit that is one word in 2048 bytes.
    fn scan_words(&self, text: &str) -> Result<(), (usize, ChunkError)> {
        // The largest power of two not above the reach (at least 14, as the limit is 24 or
        // more); computed downwards, so that a limit near `usize::MAX` cannot overflow.
        let reach = self.max_chunk - 10;
        let stride = 1usize << (usize::BITS - 1 - reach.leading_zeros());
        let mut resume = 0;
        let mut base: usize = 0;
        while let Some(word) = text.as_bytes().get(base..base.saturating_add(WORD)) {
            self.scan_word(text, word, base, &mut resume)?;
            base = base.saturating_add(stride);
        }
        Ok(())
    }

    /// Looks closely around `word` (at byte `base`) if it is all candidates and past
    /// `resume`, where the last close look stopped; moves `resume` past this look.
    fn scan_word(
        &self,
        text: &str,
        word: &[u8],
        base: usize,
        resume: &mut usize,
    ) -> Result<(), (usize, ChunkError)> {
        let bytes = text.as_bytes();
        let resume_at = *resume;
        if candidate_bits(word) != HIGH || base < resume_at {
            return Ok(());
        }
        // Back to the last printable byte (not strippable, so no run is open there), then
        // forward to the first printable byte past the word.
        let mut at = base;
        while at > resume_at && !bytes.get(at - 1).copied().is_some_and(printable) {
            at -= 1;
        }
        let mut run = Run::default();
        while let Some(&byte) = bytes.get(at) {
            self.visit(text, at, byte, &mut run)?;
            at += 1;
            if at > base + WORD && printable(byte) {
                break;
            }
        }
        self.finish_run(text, &run)?;
        *resume = at;
        Ok(())
    }

    /// The scan for a limit under 24: every candidate byte.
    fn scan_candidates(&self, text: &str) -> Result<(), (usize, ChunkError)> {
        let mut run = Run::default();
        let mut words = text.as_bytes().chunks_exact(WORD);
        let mut base = 0;
        for word in &mut words {
            // One bit per candidate byte.
            let mut candidates = candidate_bits(word);
            while candidates != 0 {
                let offset = (candidates.trailing_zeros() / 8) as usize;
                let byte = word.get(offset).copied().unwrap_or(0);
                self.visit(text, base + offset, byte, &mut run)?;
                candidates &= candidates - 1;
            }
            base += WORD;
        }
        for (offset, &byte) in words.remainder().iter().enumerate() {
            self.visit(text, base + offset, byte, &mut run)?;
        }
        self.finish_run(text, &run)
    }

    /// Closes a run still open where a scan stopped (at the end of the payload).
    fn finish_run(&self, text: &str, run: &Run) -> Result<(), (usize, ChunkError)> {
        if run.open {
            self.close_run(text, run, run.end)
        } else {
            Ok(())
        }
    }

    /// Handles the byte at `at`: any candidate, and perhaps other bytes.
    #[inline]
    fn visit(
        &self,
        text: &str,
        at: usize,
        byte: u8,
        run: &mut Run,
    ) -> Result<(), (usize, ChunkError)> {
        if is_continuation(byte) {
            return Ok(());
        }
        if run.open && at != run.end {
            // The run ended at `run.end`, in front of a character that is not strippable.
            self.close_run(text, run, run.end)?;
            run.open = false;
        }
        let (c, len) = char_at(text, at);
        if !printable(byte) && strippable(c) {
            if !run.open {
                run.open = true;
                run.anchor = char_start_before(text.as_bytes(), at);
            }
            run.end = at + len;
        } else if run.open {
            self.close_run(text, run, at)?;
            run.open = false;
        }
        Ok(())
    }

    /// A run of strippable characters ends at `end`: the boundaries around it are `run.anchor`
    /// (the start of the character before it) and `end`. The error comes with `end`, where
    /// a scan finds it.
    fn close_run(&self, text: &str, run: &Run, end: usize) -> Result<(), (usize, ChunkError)> {
        if end - run.anchor > self.max_chunk {
            // The run starts after the character at `anchor`.
            let (_, len) = char_at(text, run.anchor);
            return Err((
                end,
                ChunkError::NoBoundary {
                    position: run.anchor + len,
                    limit: self.max_chunk,
                },
            ));
        }
        Ok(())
    }
}

/// Whether `byte` is printable ASCII (0x21..0x7F): a character that is not strippable.
#[inline]
fn printable(byte: u8) -> bool {
    (0x21..0x80).contains(&byte)
}

/// The high bit of every byte in a word.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Bytes per word of the strip-safe scan.
const WORD: usize = 8;

/// A run of strippable characters being scanned: `anchor` is the start of the character in
/// front of it, `end` the byte after its last character.
#[derive(Default)]
struct Run {
    open: bool,
    anchor: usize,
    end: usize,
}

/// The high bit of each byte of the 8-byte `word` that is below 0x21 or at or above 0x80,
/// exactly: the low seven bits plus 0x5F carry into the high bit when they are 0x21 or more.
#[inline]
fn candidate_bits(word: &[u8]) -> u64 {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let mut buf = [0u8; WORD];
    buf.copy_from_slice(word);
    let w = u64::from_le_bytes(buf);
    (!((w & LOW) + 0x5F5F_5F5F_5F5F_5F5F) | w) & HIGH
}

/// Whether `byte` continues a UTF-8 character (`0b10xx_xxxx`).
#[inline]
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The character starting at byte `at` of `text` and its length (U+0000 and 1 when `at` is
/// not a character start, which the callers rule out).
#[inline]
fn char_at(text: &str, at: usize) -> (char, usize) {
    let c = text
        .get(at..)
        .and_then(|s| s.chars().next())
        .unwrap_or('\0');
    (c, c.len_utf8())
}

/// The start of the character that ends just before byte `at` (`at > 0`).
#[inline]
fn char_start_before(bytes: &[u8], at: usize) -> usize {
    let mut start = at.saturating_sub(1);
    while start > 0 && bytes.get(start).copied().is_some_and(is_continuation) {
        start -= 1;
    }
    start
}

/// What Python's `str.lstrip()` removes from a value (`str.isspace`), except LF, which never
/// occurs inside a value because it ends the line.
fn strippable(c: char) -> bool {
    c != '\n' && (c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// The pieces of one payload, in order: `chunk`s, then exactly one `end`.
///
/// # Example
/// ```
/// let n = ssekit::chunk::Chunker::new().chunk("x".repeat(10_000))?.count();
/// assert_eq!(n, 3); // 4096 + 4096 + 1808
/// # Ok::<(), ssekit::chunk::ChunkError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Chunks {
    payload: Utf8Bytes,
    pos: usize,
    chunker: Chunker,
    done: bool,
}

impl Chunks {
    /// Whether a boundary may go at byte `at` (0 < at < len).
    fn allowed(&self, at: usize) -> bool {
        self.payload
            .get(at..)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| !self.chunker.strip_safe || !strippable(c))
    }

    fn piece(&self, start: usize, end: usize, last: bool) -> Piece {
        let bytes: &Bytes = self.payload.as_bytes();
        let end = end.min(bytes.len());
        let start = start.min(end);
        // Both ends are character boundaries (`allowed` checks each cut), so this is a
        // zero-copy slice with no second UTF-8 pass; the lossy fallback is never taken.
        let data = self
            .payload
            .slice(start..end)
            .unwrap_or_else(|| Utf8Bytes::from_utf8_lossy(bytes.slice(start..end)));
        Piece { data, last }
    }
}

impl Iterator for Chunks {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.done {
            return None;
        }
        let len = self.payload.len();
        let start = self.pos;
        if len - start <= self.chunker.max_chunk {
            self.done = true;
            return Some(self.piece(start, len, true));
        }
        let mut end = start + self.chunker.max_chunk;
        while end > start && !self.allowed(end) {
            end -= 1;
        }
        if end == start {
            // `Chunker::check` rules this out; stay total anyway: cut at a character.
            end = start + self.chunker.max_chunk;
            while end > start && !self.payload.is_char_boundary(end) {
                end -= 1;
            }
        }
        self.pos = end;
        Some(self.piece(start, end, false))
    }
}

impl core::iter::FusedIterator for Chunks {}

/// One event's worth of a chunked payload.
///
/// # Example
/// ```
/// let piece = ssekit::chunk::Chunker::new().chunk("{}")?.next().unwrap();
/// assert_eq!((piece.event_type(), piece.data().as_str()), ("end", "{}"));
/// # Ok::<(), ssekit::chunk::ChunkError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    data: Utf8Bytes,
    last: bool,
}

impl Piece {
    /// The data: a slice of the payload.
    ///
    /// # Example
    /// ```
    /// let piece = ssekit::chunk::Chunker::new().chunk("abc")?.next().unwrap();
    /// assert_eq!(piece.data(), "abc");
    /// # Ok::<(), ssekit::chunk::ChunkError>(())
    /// ```
    pub fn data(&self) -> &Utf8Bytes {
        &self.data
    }

    /// Whether this is the final piece (an `end` event).
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::chunk::Chunker::new().chunk("")?.next().unwrap().is_end());
    /// # Ok::<(), ssekit::chunk::ChunkError>(())
    /// ```
    pub fn is_end(&self) -> bool {
        self.last
    }

    /// `"end"` for the final piece, `"chunk"` for the others.
    ///
    /// # Example
    /// ```
    /// let first = ssekit::chunk::Chunker::new().max_chunk(4).chunk("abcdef")?.next().unwrap();
    /// assert_eq!(first.event_type(), "chunk");
    /// # Ok::<(), ssekit::chunk::ChunkError>(())
    /// ```
    pub fn event_type(&self) -> &'static str {
        if self.last {
            "end"
        } else {
            "chunk"
        }
    }

    /// The event to send: `event: chunk` or `event: end` with this data.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::chunk::Chunker::new().chunk("{}")?.next().unwrap().into_event();
    /// assert_eq!((ev.event_type(), ev.data()), ("end", "{}"));
    /// # Ok::<(), ssekit::chunk::ChunkError>(())
    /// ```
    pub fn into_event(self) -> Event {
        // "chunk" and "end" hold no line break, so the builder cannot refuse them.
        Event::builder()
            .event(Utf8Bytes::from_static(self.event_type()))
            .unwrap_or_default()
            .data(self.data)
            .build()
    }

    /// Takes the data out of the piece.
    ///
    /// # Example
    /// ```
    /// let data = ssekit::chunk::Chunker::new().chunk("{}")?.next().unwrap().into_data();
    /// assert_eq!(data, "{}");
    /// # Ok::<(), ssekit::chunk::ChunkError>(())
    /// ```
    pub fn into_data(self) -> Utf8Bytes {
        self.data
    }
}

/// The default cap on a reassembled payload: 16 MiB, the decoder's default event limit.
///
/// # Example
/// ```
/// assert_eq!(ssekit::chunk::Reassembler::new().limit(), ssekit::chunk::DEFAULT_MAX_PAYLOAD);
/// ```
pub const DEFAULT_MAX_PAYLOAD: usize = 16 << 20;

/// Why a [`Reassembler`] gave up. Every error is sticky: later pushes return it again.
///
/// # Example
/// ```
/// use ssekit::chunk::{ReassembleError, Reassembler};
/// use ssekit::Event;
/// let mut r = Reassembler::new();
/// let err = r.push(&Event::message("x")).unwrap_err();
/// assert_eq!(err, ReassembleError::UnexpectedEvent);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReassembleError {
    /// The payload would grow to `size` bytes, past the `limit`.
    TooLarge {
        /// The cap in bytes.
        limit: usize,
        /// The size the payload would have reached.
        size: usize,
    },
    /// A `chunk` or `end` after the `end`.
    AfterEnd,
    /// An event that is neither `chunk` nor `end`.
    UnexpectedEvent,
}

impl fmt::Display for ReassembleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReassembleError::TooLarge { limit, size } => write!(
                f,
                "reassembled payload of {size} bytes exceeds the {limit}-byte limit"
            ),
            ReassembleError::AfterEnd => f.write_str("chunk or end event after the end event"),
            ReassembleError::UnexpectedEvent => f.write_str("event is neither `chunk` nor `end`"),
        }
    }
}

impl core::error::Error for ReassembleError {}

/// Joins `chunk` data and the `end` data into the payload, up to a size cap.
///
/// Feed it only `chunk` and `end` events (the [`ors::ToolCall`](crate::profile::ors::ToolCall)
/// profile routes a whole tool-call stream). An `end` with no `chunk` before it is returned
/// as is, without a copy; otherwise each piece is copied as it arrives, once, into one
/// buffer that never grows past the cap. Keeping the pieces as they came would be a copy
/// less, but a piece of decoded data shares the buffer it was read in: a server could make
/// each byte of the payload hold a whole read buffer alive, far past the cap.
///
/// # Example
/// ```
/// use ssekit::chunk::Reassembler;
/// use ssekit::Event;
/// let mut r = Reassembler::new();
/// let chunk = Event::builder().event("chunk")?.data("{\"a\":").build();
/// let end = Event::builder().event("end")?.data("1}").build();
/// assert_eq!(r.push(&chunk)?, None);
/// assert_eq!(r.push(&end)?.as_deref(), Some("{\"a\":1}"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Reassembler {
    max_size: usize,
    /// The `chunk` data so far, copied.
    joined: String,
    /// Bytes collected, the `end` data included.
    size: usize,
    ended: bool,
    failed: Option<ReassembleError>,
}

impl Default for Reassembler {
    /// A 16 MiB cap.
    fn default() -> Self {
        Reassembler::new()
    }
}

impl Reassembler {
    /// An empty reassembler with the 16 MiB default cap.
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::chunk::Reassembler::new().is_complete());
    /// ```
    pub const fn new() -> Self {
        Reassembler {
            max_size: DEFAULT_MAX_PAYLOAD,
            joined: String::new(),
            size: 0,
            ended: false,
            failed: None,
        }
    }

    /// Sets the cap on the reassembled payload, in bytes.
    ///
    /// # Example
    /// ```
    /// use ssekit::chunk::{ReassembleError, Reassembler};
    /// let mut r = Reassembler::new().max_size(2);
    /// let big = ssekit::Event::builder().event("end")?.data("abc").build();
    /// assert_eq!(r.push(&big), Err(ReassembleError::TooLarge { limit: 2, size: 3 }));
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub const fn max_size(mut self, bytes: usize) -> Self {
        self.max_size = bytes;
        self
    }

    /// The cap in bytes.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::chunk::Reassembler::new().max_size(9).limit(), 9);
    /// ```
    pub const fn limit(&self) -> usize {
        self.max_size
    }

    /// Bytes collected so far.
    ///
    /// # Example
    /// ```
    /// let mut r = ssekit::chunk::Reassembler::new();
    /// let _ = r.push(&ssekit::Event::builder().event("chunk")?.data("ab").build());
    /// assert_eq!(r.len(), 2);
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub const fn len(&self) -> usize {
        self.size
    }

    /// Whether nothing was collected yet.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::chunk::Reassembler::new().is_empty());
    /// ```
    pub const fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Whether the `end` event arrived.
    ///
    /// # Example
    /// ```
    /// let mut r = ssekit::chunk::Reassembler::new();
    /// let _ = r.push(&ssekit::Event::builder().event("end")?.build());
    /// assert!(r.is_complete());
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub const fn is_complete(&self) -> bool {
        self.ended
    }

    /// Takes one event: a `chunk` is collected (`Ok(None)`), the `end` completes the payload
    /// and returns it. Anything else, anything after `end`, or growth past the cap is an
    /// error, and the reassembler stays failed.
    ///
    /// # Example
    /// ```
    /// use ssekit::chunk::{ReassembleError, Reassembler};
    /// use ssekit::Event;
    /// let mut r = Reassembler::new();
    /// let end = Event::builder().event("end")?.data("{}").build();
    /// assert_eq!(r.push(&end)?.as_deref(), Some("{}"));
    /// let late = Event::builder().event("chunk")?.data("x").build();
    /// assert_eq!(r.push(&late), Err(ReassembleError::AfterEnd));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the completed payload is returned only once"]
    pub fn push(&mut self, event: &Event) -> Result<Option<Utf8Bytes>, ReassembleError> {
        match event.event_type() {
            "chunk" => self.push_chunk(event.data_bytes()).map(|()| None),
            "end" => self.push_end(event.data_bytes()).map(Some),
            _ => Err(self.fail(ReassembleError::UnexpectedEvent)),
        }
    }

    /// Collects the data of a `chunk` event.
    ///
    /// # Example
    /// ```
    /// let mut r = ssekit::chunk::Reassembler::new();
    /// r.push_chunk(&"ab".into())?;
    /// assert_eq!(r.push_end(&"c".into())?, "abc");
    /// # Ok::<(), ssekit::chunk::ReassembleError>(())
    /// ```
    pub fn push_chunk(&mut self, data: &Utf8Bytes) -> Result<(), ReassembleError> {
        self.accept(data)?;
        self.append(data);
        Ok(())
    }

    /// Completes the payload with the data of the `end` event and returns it.
    ///
    /// # Example
    /// ```
    /// let mut r = ssekit::chunk::Reassembler::new();
    /// assert_eq!(r.push_end(&"{}".into())?, "{}");
    /// # Ok::<(), ssekit::chunk::ReassembleError>(())
    /// ```
    #[must_use = "the completed payload is returned only once"]
    pub fn push_end(&mut self, data: &Utf8Bytes) -> Result<Utf8Bytes, ReassembleError> {
        self.accept(data)?;
        self.ended = true;
        if self.joined.is_empty() {
            return Ok(data.clone());
        }
        self.append(data);
        Ok(Utf8Bytes::from(core::mem::take(&mut self.joined)))
    }

    /// Copies `data` behind the pieces so far, growing the buffer by doubling, as `String`
    /// does, but never past the cap ([`accept`](Self::accept) checked the size).
    fn append(&mut self, data: &str) {
        let needed = self.joined.len() + data.len();
        if self.joined.capacity() < needed {
            let wanted = needed
                .max(self.joined.capacity().saturating_mul(2))
                .min(self.max_size)
                .max(needed);
            self.joined.reserve_exact(wanted - self.joined.len());
        }
        self.joined.push_str(data);
    }

    fn accept(&mut self, data: &Utf8Bytes) -> Result<(), ReassembleError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        if self.ended {
            return Err(self.fail(ReassembleError::AfterEnd));
        }
        let size = self.size.saturating_add(data.len());
        if size > self.max_size {
            return Err(self.fail(ReassembleError::TooLarge {
                limit: self.max_size,
                size,
            }));
        }
        self.size = size;
        Ok(())
    }

    fn fail(&mut self, err: ReassembleError) -> ReassembleError {
        self.joined = String::new();
        self.failed = Some(err);
        err
    }

    /// Forgets everything, keeping the cap: the ORS client restarts the buffer on every
    /// connection, and a server replays a result from its first chunk.
    ///
    /// # Example
    /// ```
    /// let mut r = ssekit::chunk::Reassembler::new();
    /// let _ = r.push(&ssekit::Event::message("x"));
    /// r.reset();
    /// assert!(r.push(&ssekit::Event::builder().event("end")?.build()).is_ok());
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn reset(&mut self) {
        *self = Reassembler::new().max_size(self.max_size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn pieces(chunker: Chunker, payload: &str) -> Vec<Piece> {
        chunker
            .chunk(Utf8Bytes::copy_from_str(payload))
            .unwrap()
            .collect()
    }

    #[test]
    fn exactly_the_limit_is_one_end_event_one_more_byte_is_two() {
        let p = pieces(Chunker::new(), &"a".repeat(4096));
        assert_eq!(p.len(), 1);
        assert!(p[0].is_end());
        let p = pieces(Chunker::new(), &"a".repeat(4097));
        assert_eq!(
            p.iter()
                .map(|p| (p.event_type(), p.data().len()))
                .collect::<Vec<_>>(),
            [("chunk", 4096), ("end", 1)]
        );
    }

    #[test]
    fn boundary_moves_back_to_a_character_start() {
        // 3 ASCII + "€" (3 bytes) with a 4-byte limit: the cut may not fall inside "€".
        let p = pieces(Chunker::new().max_chunk(4), "abc€d");
        let data: Vec<&str> = p.iter().map(|p| p.data().as_str()).collect();
        assert_eq!(data, ["abc", "€d"]);
    }

    #[test]
    fn boundary_moves_back_in_front_of_a_word_not_a_space() {
        let p = pieces(Chunker::new().max_chunk(6), "abcd  efgh");
        let data: Vec<&str> = p.iter().map(|p| p.data().as_str()).collect();
        assert_eq!(data, ["abcd  ", "efgh"]);
        // Non-ASCII whitespace too (U+00A0, U+3000) and Python's extra U+001C..U+001F.
        for ws in ['\u{a0}', '\u{3000}', '\u{1f}', '\t'] {
            let payload: String = ["ab", &String::from(ws), "cd"].concat();
            for p in pieces(Chunker::new().max_chunk(4), &payload) {
                assert!(!p.data().starts_with(ws), "{payload:?}");
            }
        }
    }

    #[test]
    fn pieces_are_slices_of_the_payload() {
        let payload = Utf8Bytes::from("x".repeat(9000));
        let base = payload.as_bytes().as_ptr() as usize;
        let mut offset = 0;
        for p in Chunker::new().chunk(payload.clone()).unwrap() {
            assert_eq!(p.data().as_bytes().as_ptr() as usize, base + offset);
            offset += p.data().len();
        }
        assert_eq!(offset, 9000);
    }

    #[test]
    fn whitespace_run_longer_than_the_limit_is_refused_in_strip_safe_mode() {
        let err = Chunker::new().max_chunk(4).chunk("a      b").unwrap_err();
        assert_eq!(
            err,
            ChunkError::NoBoundary {
                position: 1,
                limit: 4
            }
        );
        let p = pieces(Chunker::new().max_chunk(4).strip_safe(false), "a      b");
        assert_eq!(p.iter().map(|p| p.data().len()).sum::<usize>(), 8);
    }

    #[test]
    fn trailing_whitespace_run_longer_than_the_limit_is_refused() {
        assert!(matches!(
            Chunker::new().max_chunk(4).chunk("ab     "),
            Err(ChunkError::NoBoundary { position: 2, .. })
        ));
    }

    #[test]
    fn leading_whitespace_of_the_payload_or_a_line_is_refused() {
        assert_eq!(
            Chunker::new().chunk(" {}").unwrap_err(),
            ChunkError::LeadingWhitespace { position: 0 }
        );
        assert_eq!(
            Chunker::new().chunk("{\n  \"a\": 1\n}").unwrap_err(),
            ChunkError::LeadingWhitespace { position: 2 }
        );
        // LF itself is fine anywhere, including first and in a row.
        assert!(Chunker::new().chunk("\n\na\n").is_ok());
    }

    #[test]
    fn cr_is_refused_in_both_modes() {
        for chunker in [Chunker::new(), Chunker::new().strip_safe(false)] {
            assert_eq!(
                chunker.chunk("ab\rc").unwrap_err(),
                ChunkError::CarriageReturn { position: 2 }
            );
        }
    }

    #[test]
    fn empty_payload_is_one_empty_end() {
        let p = pieces(Chunker::new(), "");
        assert_eq!(p.len(), 1);
        assert!(p[0].is_end() && p[0].data().is_empty());
    }

    #[test]
    fn reassembler_caps_counts_and_is_sticky() {
        let chunk = Event::builder().event("chunk").unwrap().data("abc").build();
        let mut r = Reassembler::new().max_size(5);
        assert_eq!(r.push(&chunk), Ok(None));
        let err = ReassembleError::TooLarge { limit: 5, size: 6 };
        assert_eq!(r.push(&chunk), Err(err));
        let end = Event::builder().event("end").unwrap().build();
        assert_eq!(r.push(&end), Err(err));
    }

    /// The strip-safe check written the obvious way, a character at a time: the reference
    /// the byte-level scan must agree with.
    fn naive_check(chunker: Chunker, payload: &str) -> Result<(), ChunkError> {
        if let Some(position) = payload.find('\r') {
            return Err(ChunkError::CarriageReturn { position });
        }
        if !chunker.strip_safe {
            return Ok(());
        }
        let no_boundary = |allowed: usize| ChunkError::NoBoundary {
            position: allowed + payload[allowed..].chars().next().map_or(0, char::len_utf8),
            limit: chunker.max_chunk,
        };
        let mut last_allowed = 0;
        let mut after_lf = true;
        for (i, c) in payload.char_indices() {
            if strippable(c) && after_lf {
                return Err(ChunkError::LeadingWhitespace { position: i });
            }
            after_lf = c == '\n';
            if !strippable(c) {
                if i - last_allowed > chunker.max_chunk {
                    return Err(no_boundary(last_allowed));
                }
                last_allowed = i;
            }
        }
        if payload.len() - last_allowed > chunker.max_chunk {
            return Err(no_boundary(last_allowed));
        }
        Ok(())
    }

    /// Text rich in what the check looks at: ASCII and Unicode whitespace, LF, CR, Python's
    /// U+001C..U+001F, multi-byte letters.
    fn tricky_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let c = prop_oneof![
            4 => proptest::char::range('a', 'c'),
            3 => Just(' '),
            1 => Just('\n'),
            1 => Just('\t'),
            1 => Just('\r'),
            1 => Just('\u{1d}'),
            1 => Just('\u{a0}'),
            1 => Just('\u{85}'),
            1 => Just('\u{2003}'),
            1 => Just('\u{3000}'),
            1 => Just('é'),
            1 => Just('€'),
            1 => Just('😀'),
            1 => Just('\u{200b}'),
        ];
        // Runs of one character, so that whitespace runs reach the larger limits too.
        proptest::collection::vec((c, 1usize..90), 0..24).prop_map(|v| {
            v.into_iter()
                .flat_map(|(c, n)| core::iter::repeat_n(c, if c.is_alphabetic() { 1 } else { n }))
                .collect()
        })
    }

    use alloc::vec;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]
        #[test]
        fn byte_level_check_agrees_with_the_char_level_reference(
            text in tricky_text(),
            limit in proptest::prop_oneof![4usize..12, 20usize..40, 40usize..100],
            strip_safe in proptest::bool::weighted(0.9),
        ) {
            let chunker = Chunker::new().max_chunk(limit).strip_safe(strip_safe);
            proptest::prop_assert_eq!(chunker.check(&text), naive_check(chunker, &text));
        }
    }

    #[test]
    fn byte_level_check_agrees_on_long_runs_and_word_edges() {
        for pad in 0..20 {
            for run in 0..140 {
                for ws in [" ", "\u{3000}", "\u{a0}", "\t", " \u{85}"] {
                    let text = ["x".repeat(pad), ws.repeat(run), "y".into()].concat();
                    for limit in [4, 5, 8, 9, 16, 24, 25, 31, 32, 40, 73, 128] {
                        let chunker = Chunker::new().max_chunk(limit);
                        assert_eq!(
                            chunker.check(&text),
                            naive_check(chunker, &text),
                            "{text:?}"
                        );
                        let trailing = ["x".repeat(pad), ws.repeat(run)].concat();
                        assert_eq!(
                            chunker.check(&trailing),
                            naive_check(chunker, &trailing),
                            "{trailing:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn huge_limits_neither_overflow_nor_change_the_answer() {
        for limit in [usize::MAX, usize::MAX / 2 + 1, 1 << 40] {
            let chunker = Chunker::new().max_chunk(limit);
            for text in ["", "a", &"a   b".repeat(100), &" ".repeat(64), "x\n y"] {
                assert_eq!(chunker.check(text), naive_check(chunker, text), "{text:?}");
            }
            assert_eq!(chunker.chunk("abc").unwrap().count(), 1);
        }
    }

    #[test]
    fn single_end_is_returned_without_a_copy() {
        let end = Event::builder().event("end").unwrap().data("{}").build();
        let ptr = end.data_bytes().as_bytes().as_ptr();
        let out = Reassembler::new().push(&end).unwrap().unwrap();
        assert_eq!(out.as_bytes().as_ptr(), ptr);
    }
}

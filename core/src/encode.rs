//! Events → bytes, into caller-owned buffers, with no way to inject fields.
//!
//! The encoder writes the safe subset every client reads (see the crate docs): LF line
//! endings, `field: value` with one space, one `data:` line per line of the payload (the
//! payload is split on CR, LF and CRLF), and never a block without a `data:` line. Values
//! that would break out of their line are refused with [`EncodeError`], never escaped or
//! stripped.

use core::fmt;

use bytes::BufMut;

use crate::decode::Frame;
use crate::event::{check_single_line, Event};
use crate::line_copy::put_line_after;

/// Which field an [`EncodeError`] is about.
///
/// # Example
/// ```
/// use ssekit::{encode::Field, EncodeError, Event};
/// let err = Event::builder().event("a\rb").unwrap_err();
/// assert_eq!(err, EncodeError::LineBreak { field: Field::Event, position: 1 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// The `event:` field.
    Event,
    /// The `id:` field.
    Id,
    /// A comment line (`: text`).
    Comment,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Event => "event type",
            Field::Id => "id",
            Field::Comment => "comment",
        })
    }
}

/// Why an event or comment could not be written. Nothing is written when this is returned.
///
/// # Example
/// ```
/// use ssekit::{EncodeError, Encoder};
/// let mut out = Vec::new();
/// let err = Encoder::new().comment("a\nid: 666", &mut out).unwrap_err();
/// assert!(matches!(err, EncodeError::LineBreak { position: 1, .. }));
/// assert!(out.is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodeError {
    /// A CR or LF at byte `position` of the value would end the line and start an injected one.
    LineBreak {
        /// The field holding the line break.
        field: Field,
        /// Byte offset of the CR or LF in the value.
        position: usize,
    },
    /// A NUL at byte `position` of an id: a conforming client ignores such an id.
    Nul {
        /// The field holding the NUL.
        field: Field,
        /// Byte offset of the NUL in the value.
        position: usize,
    },
    /// The output buffer has room for fewer than `required` more bytes.
    BufferTooSmall {
        /// Bytes the encoding needs.
        required: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::LineBreak { field, position } => write!(
                f,
                "{field} contains a line break at byte {position}; it would inject a field"
            ),
            EncodeError::Nul { field, position } => write!(
                f,
                "{field} contains NUL at byte {position}; clients ignore such an id"
            ),
            EncodeError::BufferTooSmall { required } => {
                write!(f, "output buffer too small: {required} bytes required")
            }
        }
    }
}

impl core::error::Error for EncodeError {}

/// Writes events, comments and `retry:` lines.
///
/// # Example
/// ```
/// use ssekit::{Encoder, Event};
/// let mut out = Vec::new();
/// let enc = Encoder::new();
/// enc.encode(&Event::builder().event("end")?.data("a\nb").build(), &mut out)?;
/// enc.comment("ping", &mut out)?;
/// assert_eq!(out, b"event: end\ndata: a\ndata: b\n\n: ping\n");
/// # Ok::<(), ssekit::EncodeError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Encoder {
    _private: (),
}

/// Bytes per data line besides its content: `data: ` and LF.
const DATA_LINE_OVERHEAD: usize = 7;

impl Encoder {
    /// An encoder with the safe defaults described in the [module docs](self).
    ///
    /// # Example
    /// ```
    /// let _enc = ssekit::Encoder::new();
    /// ```
    pub const fn new() -> Self {
        Encoder { _private: () }
    }

    /// Writes one event block: `event:` and `id:` when set, one `data:` line per line of data
    /// (at least one, so the event always dispatches), and the blank line. Returns the
    /// number of bytes written.
    ///
    /// # Example
    /// ```
    /// let mut out = Vec::new();
    /// let n = ssekit::Encoder::new().encode(&ssekit::Event::message(""), &mut out)?;
    /// assert_eq!(out, b"data: \n\n");
    /// assert_eq!(n, out.len());
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn encode<B: BufMut + ?Sized>(
        &self,
        event: &Event,
        out: &mut B,
    ) -> Result<usize, EncodeError> {
        self.write_block(event, true, out)
    }

    /// Writes a comment line (`: text\n`), the usual keep-alive.
    ///
    /// No blank line follows it: once a stream has carried an `id:`, some widely used clients
    /// (the `openai` Python SDK, `httpx-sse`) turn a blank line into an empty event, and the
    /// `openai` SDK then fails parsing its data as JSON. A comment line alone is complete.
    ///
    /// # Example
    /// ```
    /// let mut out = Vec::new();
    /// ssekit::Encoder::new().comment("keep-alive", &mut out)?;
    /// assert_eq!(out, b": keep-alive\n");
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn comment<B: BufMut + ?Sized>(
        &self,
        text: &str,
        out: &mut B,
    ) -> Result<usize, EncodeError> {
        check_single_line(Field::Comment, text)?;
        let required = text.len() + 3;
        ensure_room(out, required)?;
        out.put_slice(b": ");
        out.put_slice(text.as_bytes());
        out.put_u8(b'\n');
        Ok(required)
    }

    /// Writes a `retry:` line (milliseconds). It belongs to the block that follows; write it
    /// just before an event so no data-less block is ever sent.
    ///
    /// # Example
    /// ```
    /// let mut out = Vec::new();
    /// ssekit::Encoder::new().retry(3000, &mut out)?;
    /// assert_eq!(out, b"retry: 3000\n");
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn retry<B: BufMut + ?Sized>(
        &self,
        millis: u64,
        out: &mut B,
    ) -> Result<usize, EncodeError> {
        let mut digits = [0u8; 20];
        let digits = format_u64(millis, &mut digits);
        let required = digits.len() + 8;
        ensure_room(out, required)?;
        out.put_slice(b"retry: ");
        out.put_slice(digits);
        out.put_u8(b'\n');
        Ok(required)
    }

    /// Writes any decoded [`Frame`] so that decoding the output yields the same frame:
    /// events as [`encode`](Self::encode), comments as [`comment`](Self::comment),
    /// `Retry` as [`retry`](Self::retry) and a raw-mode `Dataless` block without a data line.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Encoder, Frame};
    /// let mut out = Vec::new();
    /// Encoder::new().encode_frame(&Frame::Retry(5), &mut out)?;
    /// assert_eq!(out, b"retry: 5\n");
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn encode_frame<B: BufMut + ?Sized>(
        &self,
        frame: &Frame,
        out: &mut B,
    ) -> Result<usize, EncodeError> {
        match frame {
            Frame::Event(event) => self.encode(event, out),
            Frame::Dataless(event) => self.write_block(event, false, out),
            Frame::Comment(text) => self.comment(text, out),
            Frame::Retry(millis) => self.retry(*millis, out),
        }
    }

    /// The number of bytes [`encode`](Self::encode) writes for `event`.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::message("a\nb");
    /// assert_eq!(ssekit::Encoder::new().encoded_len(&ev), "data: a\ndata: b\n\n".len());
    /// ```
    pub fn encoded_len(&self, event: &Event) -> usize {
        header_len(event) + data_len(event.data().as_bytes()) + 1
    }

    /// The common case inline (small enough to be inlined into the caller's loop), the
    /// rest ([`write_block_exact`](Self::write_block_exact)) out of line: split so, the
    /// encoder of `tokens` events ran 5% fewer instructions.
    #[inline]
    fn write_block<B: BufMut + ?Sized>(
        &self,
        event: &Event,
        with_data: bool,
        out: &mut B,
    ) -> Result<usize, EncodeError> {
        // `event:` and `id:` were checked when the event was built; only the data is scanned
        // for line breaks.
        let data = event.data().as_bytes();
        let header = header_len(event);
        if with_data {
            // Each data byte can at most start a new line: with room for that worst case
            // (always, for `Vec` and `BytesMut`), the data is copied as it is scanned.
            let worst = header
                .saturating_add(data.len().saturating_mul(DATA_LINE_OVERHEAD + 1))
                .saturating_add(DATA_LINE_OVERHEAD + 1);
            if out.remaining_mut() >= worst {
                put_header(event, out);
                return Ok(header + put_data_lines(data, out));
            }
        }
        self.write_block_exact(event, with_data, header, out)
    }

    /// [`write_block`](Self::write_block) into a buffer with less room than the worst case
    /// (or a data-less block): the exact length first, so that nothing is written when it
    /// does not fit. The data is scanned for its first line break with the decoder's inline
    /// line scan (long data goes on to the vector scan of long lines).
    /// `header`: the length of the `event:` and `id:` lines.
    #[inline(never)]
    fn write_block_exact<B: BufMut + ?Sized>(
        &self,
        event: &Event,
        with_data: bool,
        header: usize,
        out: &mut B,
    ) -> Result<usize, EncodeError> {
        let data = event.data().as_bytes();
        let first_break = if with_data {
            crate::line_scan::scan_line(data).at
        } else {
            None
        };
        match (with_data, first_break) {
            (true, None) => {
                // The common case, one data line: the exact length is known without a scan.
                let required = header + data.len() + DATA_LINE_OVERHEAD + 1;
                ensure_room(out, required)?;
                put_header(event, out);
                out.put_slice(b"data: ");
                out.put_slice(data);
                out.put_slice(b"\n\n");
                Ok(required)
            }
            (false, _) => {
                let required = header + 1;
                ensure_room(out, required)?;
                put_header(event, out);
                out.put_u8(b'\n');
                Ok(required)
            }
            (true, Some(_)) => {
                ensure_room(out, header + data_len(data) + 1)?;
                put_header(event, out);
                let mut written = header + 1;
                for line in DataLines::new(data) {
                    written += put_field(out, b"data: ", line);
                }
                out.put_u8(b'\n');
                Ok(written)
            }
        }
    }
}

/// Writes the `event:` and `id:` lines, when set.
#[inline]
fn put_header<B: BufMut + ?Sized>(event: &Event, out: &mut B) {
    if let Some(event_type) = event.event_field() {
        put_field(out, b"event: ", event_type.as_bytes());
    }
    if let Some(id) = event.id_field() {
        put_field(out, b"id: ", id.as_bytes());
    }
}

/// Writes `data` as `data:` lines (split at CR, LF and CRLF, as [`DataLines`] does) and the
/// blank line, finding each line break as the line is copied ([`put_line_after`]: with AVX2 one
/// pass over the data, where a scan and then a copy made two). Returns the bytes written.
/// The caller has made sure `out` has room for them.
#[inline]
fn put_data_lines<B: BufMut + ?Sized>(data: &[u8], out: &mut B) -> usize {
    let mut rest = data;
    let mut written = 0;
    loop {
        let Some(end) = put_line_after(out, b"data: ", rest).at else {
            out.put_slice(b"\n\n");
            return written + rest.len() + DATA_LINE_OVERHEAD + 1;
        };
        out.put_u8(b'\n');
        written += end + DATA_LINE_OVERHEAD;
        let skip = if rest.get(end..end + 2) == Some(b"\r\n") {
            2
        } else {
            1
        };
        rest = rest.get(end + skip..).unwrap_or_default();
    }
}

fn ensure_room<B: BufMut + ?Sized>(out: &B, required: usize) -> Result<(), EncodeError> {
    if out.remaining_mut() < required {
        Err(EncodeError::BufferTooSmall { required })
    } else {
        Ok(())
    }
}

fn put_field<B: BufMut + ?Sized>(out: &mut B, name: &[u8], value: &[u8]) -> usize {
    out.put_slice(name);
    out.put_slice(value);
    out.put_u8(b'\n');
    name.len() + value.len() + 1
}

/// Bytes of the `event:` and `id:` lines.
#[inline]
fn header_len(event: &Event) -> usize {
    event.event_field().map_or(0, |t| t.len() + 8) + event.id_field().map_or(0, |i| i.len() + 5)
}

/// Bytes of the `data:` lines.
fn data_len(data: &[u8]) -> usize {
    DataLines::new(data)
        .map(|line| line.len() + DATA_LINE_OVERHEAD)
        .sum()
}

/// Splits a payload into lines at CR, LF and CRLF, the way a decoder will read them back.
/// Always yields at least one (possibly empty) line.
struct DataLines<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> DataLines<'a> {
    fn new(data: &'a [u8]) -> Self {
        DataLines { rest: Some(data) }
    }
}

impl<'a> Iterator for DataLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match memchr::memchr2(b'\r', b'\n', rest) {
            None => {
                self.rest = None;
                Some(rest)
            }
            Some(i) => {
                let (line, tail) = rest.split_at(i);
                let skip = if tail.starts_with(b"\r\n") { 2 } else { 1 };
                self.rest = tail.get(skip..);
                Some(line)
            }
        }
    }
}

/// Formats `n` in decimal into `buf`, returning the digits.
fn format_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut start = buf.len();
    loop {
        start -= 1;
        if let Some(slot) = buf.get_mut(start) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.get(start..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn encoded(ev: &Event) -> Vec<u8> {
        let mut out = Vec::new();
        Encoder::new().encode(ev, &mut out).unwrap();
        out
    }

    #[test]
    fn data_is_split_on_lf_cr_and_crlf_into_data_lines() {
        let ev = Event::message("a\nb\rc\r\nd");
        assert_eq!(encoded(&ev), b"data: a\ndata: b\ndata: c\ndata: d\n\n");
    }

    #[test]
    fn trailing_line_break_keeps_an_empty_last_data_line() {
        assert_eq!(encoded(&Event::message("a\n")), b"data: a\ndata: \n\n");
    }

    #[test]
    fn empty_data_still_writes_a_data_line_so_the_event_dispatches() {
        assert_eq!(encoded(&Event::message("")), b"data: \n\n");
    }

    #[test]
    fn injection_through_data_stays_inside_data_lines() {
        let out = encoded(&Event::message("a\nid: 666\n\nevent: x"));
        assert_eq!(out, b"data: a\ndata: id: 666\ndata: \ndata: event: x\n\n");
    }

    #[test]
    fn event_type_with_line_break_is_refused() {
        for bad in ["a\nb", "a\rb", "x\r\n"] {
            assert!(matches!(
                Event::builder().event(bad),
                Err(EncodeError::LineBreak {
                    field: Field::Event,
                    ..
                })
            ));
        }
    }

    #[test]
    fn id_with_line_break_or_nul_is_refused() {
        assert_eq!(
            Event::builder().id("1\n2").unwrap_err(),
            EncodeError::LineBreak {
                field: Field::Id,
                position: 1
            }
        );
        assert_eq!(
            Event::builder().id("1\u{0}2").unwrap_err(),
            EncodeError::Nul {
                field: Field::Id,
                position: 1
            }
        );
    }

    #[test]
    fn comment_with_line_break_is_refused_and_writes_nothing() {
        let mut out = Vec::new();
        assert!(Encoder::new().comment("x\r", &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn retry_is_written_in_milliseconds() {
        let mut out = Vec::new();
        Encoder::new().retry(0, &mut out).unwrap();
        Encoder::new().retry(u64::MAX, &mut out).unwrap();
        assert_eq!(out, b"retry: 0\nretry: 18446744073709551615\n");
    }

    #[test]
    fn too_small_slice_buffer_is_an_error_not_a_panic() {
        let ev = Event::builder()
            .event("e")
            .unwrap()
            .data("abc\ndef")
            .build();
        let exact = Encoder::new().encoded_len(&ev);
        let mut small = [0u8; 8];
        let mut slice = &mut small[..];
        assert_eq!(
            Encoder::new().encode(&ev, &mut slice),
            Err(EncodeError::BufferTooSmall { required: exact })
        );
        let mut fits = [0u8; 64];
        let mut slice = &mut fits[..];
        assert_eq!(Encoder::new().encode(&ev, &mut slice), Ok(exact));
        assert_eq!(&fits[..exact], b"event: e\ndata: abc\ndata: def\n\n");
    }

    #[test]
    fn single_line_fast_path_checks_room_before_writing_and_matches_encoded_len() {
        let ev = Event::builder()
            .event("delta")
            .unwrap()
            .id("7")
            .unwrap()
            .data("{\"x\":1}")
            .build();
        let wire = b"event: delta\nid: 7\ndata: {\"x\":1}\n\n";
        assert_eq!(Encoder::new().encoded_len(&ev), wire.len());
        let mut buf = [0u8; 64];
        for room in 0..wire.len() {
            let mut slice = &mut buf[..room];
            assert_eq!(
                Encoder::new().encode(&ev, &mut slice),
                Err(EncodeError::BufferTooSmall {
                    required: wire.len()
                })
            );
            assert!(buf.iter().all(|&b| b == 0), "nothing written with {room}");
        }
        let mut slice = &mut buf[..wire.len()];
        assert_eq!(Encoder::new().encode(&ev, &mut slice), Ok(wire.len()));
        assert_eq!(&buf[..wire.len()], wire);
    }

    #[test]
    fn dataless_frame_writes_only_its_header_and_the_blank_line() {
        let ev = Event::builder().event("x").unwrap().data("a\nb").build();
        let mut out = Vec::new();
        let n = Encoder::new()
            .encode_frame(&Frame::Dataless(ev), &mut out)
            .unwrap();
        assert_eq!(out, b"event: x\n\n");
        assert_eq!(n, out.len());
    }

    #[test]
    fn every_buffer_gets_the_same_bytes_and_nothing_past_them() {
        // Data lines are copied into the room a buffer offers while they are scanned (with
        // AVX2): lengths around its 32- and 128-byte steps, breaks of every kind anywhere.
        let mut datas: Vec<alloc::string::String> = Vec::new();
        for len in [0, 1, 31, 32, 33, 127, 128, 129, 200, 300] {
            let line: alloc::string::String =
                (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            datas.push(line.clone());
            for (at, brk) in [(0, "\n"), (len / 2, "\r\n"), (len, "\r"), (len / 3, "\n\n")] {
                let mut data = line.clone();
                data.insert_str(at, brk);
                data.push('é');
                datas.push(data);
            }
        }
        for data in datas {
            let ev = Event::builder()
                .event("t")
                .unwrap()
                .data(data.clone())
                .build();
            let wire = encoded(&ev);
            assert_eq!(Encoder::new().encoded_len(&ev), wire.len(), "{data:?}");
            let mut bytes = bytes::BytesMut::new();
            assert_eq!(Encoder::new().encode(&ev, &mut bytes), Ok(wire.len()));
            assert_eq!(&bytes[..], &wire[..], "{data:?}");
            // A slice with room for exactly the bytes, and one with room for the worst case.
            for extra in [0, 8 * data.len() + 16] {
                let mut backing = alloc::vec![0xffu8; wire.len() + extra];
                let mut slice = &mut backing[..];
                assert_eq!(Encoder::new().encode(&ev, &mut slice), Ok(wire.len()));
                assert_eq!(&backing[..wire.len()], &wire[..], "{data:?}");
                assert!(backing[wire.len()..].iter().all(|&b| b == 0xff), "{data:?}");
            }
        }
    }

    #[test]
    fn encoded_len_matches_what_is_written() {
        let ev = Event::builder()
            .event("t")
            .unwrap()
            .id("")
            .unwrap()
            .data("\r\n\r")
            .build();
        assert_eq!(Encoder::new().encoded_len(&ev), encoded(&ev).len());
    }
}

//! Every decoder of the side-by-side benches, driven the same way: one function per
//! implementation that decodes a stream handed over as `pieces` (slices of one `Bytes`, as a
//! socket reader hands them over) and returns the number of events it dispatched. Each
//! event is passed through `black_box`, so none is optimised away.
//!
//! The sans-IO peers are fed piece by piece; the `Stream`-based ones are driven by
//! `futures::executor::block_on` over an in-memory stream of the same pieces (every poll is
//! ready, so no waker is ever used).
//!
//! The floors: `memchr2` finds every CR and LF in the same pieces (a decoder has to find
//! them all), and `memcpy` copies the same pieces into a buffer (every decoder that does not
//! keep the input has to read it once).

// Each bench binary uses only some of these.
#![allow(dead_code)]

use std::convert::Infallible;
use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use ssekit::{Decoder, Frame, FrameRef};

/// A decoder under test: name, and the function that decodes `pieces`, returning events.
pub type Impl = (&'static str, fn(&[Bytes]) -> usize);

/// ssekit first, then the peers, then the floors.
pub const DECODERS: [Impl; 17] = [
    ("ssekit", ssekit),
    ("ssekit-slice", ssekit_slice),
    ("ssekit-nocomment", ssekit_nocomment),
    ("ssekit-ref", ssekit_ref),
    ("ssekit-slice-ref", ssekit_slice_ref),
    ("ssekit-ref-nocomment", ssekit_ref_nocomment),
    ("sse-core", sse_core),
    ("sse-parse", sse_parse),
    ("sseer", sseer),
    ("eventsrc", eventsrc),
    ("sse-stream", sse_stream),
    ("eventsource-stream", eventsource_stream),
    ("sse-codec", sse_codec),
    ("memchr2", memchr2_floor),
    ("memcpy", memcpy_floor),
    ("bytes-clone", bytes_clone_floor),
    ("segments", segments_floor),
];

/// Whether `name` is a floor rather than a decoder (its result is not an event count).
pub fn is_floor(name: &str) -> bool {
    matches!(name, "memchr2" | "memcpy" | "bytes-clone" | "segments")
}

fn ready_stream(
    pieces: &[Bytes],
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Unpin + '_ {
    futures::stream::iter(pieces.iter().cloned().map(Ok))
}

/// Feeds every piece to `decoder` with `feed` (a `Bytes`, zero-copy) or, when `by_slice`,
/// with `feed_slice` (copied), draining `next_frame` after each, or `next_frame_ref` when
/// `borrow`. Returns the events dispatched; each goes through `black_box`.
#[inline(always)]
fn run_ssekit(decoder: &mut Decoder, pieces: &[Bytes], by_slice: bool, borrow: bool) -> usize {
    let mut events = 0;
    for piece in pieces {
        let fed = if by_slice {
            decoder.feed_slice(piece)
        } else {
            decoder.feed(piece.clone())
        };
        fed.expect("feed");
        if borrow {
            while let Some(frame) = decoder.next_frame_ref().expect("frame") {
                if let FrameRef::Event(ev) = frame {
                    black_box(&ev);
                    events += 1;
                }
            }
        } else {
            while let Some(frame) = decoder.next_frame().expect("frame") {
                if let Frame::Event(ev) = frame {
                    black_box(&ev);
                    events += 1;
                }
            }
        }
    }
    events
}

/// ssekit: `feed(Bytes)` each piece, drain `next_frame` after each.
pub fn ssekit(pieces: &[Bytes]) -> usize {
    run_ssekit(&mut Decoder::new(), pieces, false, false)
}

/// ssekit: `feed_slice(&[u8])` each piece (copied into the decoder), drain `next_frame` after
/// each: what a reader that reuses one read buffer calls, and the cheaper call for tiny
/// pieces (no reference count is touched).
pub fn ssekit_slice(pieces: &[Bytes]) -> usize {
    run_ssekit(&mut Decoder::new(), pieces, true, false)
}

/// ssekit configured to skip comment lines (`Config::comments(false)`), as sse-core and
/// browsers do: the same work as the peers on `keepalive-heavy`, where plain `ssekit`
/// surfaces every comment as a frame.
pub fn ssekit_nocomment(pieces: &[Bytes]) -> usize {
    let config = ssekit::Config::default().comments(false);
    run_ssekit(&mut Decoder::with_config(config), pieces, false, false)
}

/// ssekit: `feed(Bytes)` each piece, drain `next_frame_ref` after each (frames borrow from
/// the decoder: no reference count per event, no copy of joined data).
pub fn ssekit_ref(pieces: &[Bytes]) -> usize {
    run_ssekit(&mut Decoder::new(), pieces, false, true)
}

/// ssekit skipping comments, as [`ssekit_nocomment`], drained with `next_frame_ref` as
/// [`ssekit_ref`]: the same work as the peers, on ssekit's fastest path.
pub fn ssekit_ref_nocomment(pieces: &[Bytes]) -> usize {
    let config = ssekit::Config::default().comments(false);
    run_ssekit(&mut Decoder::with_config(config), pieces, false, true)
}

/// ssekit: `feed_slice(&[u8])` each piece, drain `next_frame_ref` after each: no atomic
/// operation anywhere.
pub fn ssekit_slice_ref(pieces: &[Bytes]) -> usize {
    run_ssekit(&mut Decoder::new(), pieces, true, true)
}

/// ssekit, with the number of bytes its line scan examined.
pub fn ssekit_scanned(pieces: &[Bytes]) -> (usize, u64) {
    let mut decoder = Decoder::new();
    let events = run_ssekit(&mut decoder, pieces, false, false);
    (events, decoder.bytes_scanned())
}

/// sse-core 0.2: sans-IO, `SseDecoder::next(&mut impl Buf)` on each piece.
pub fn sse_core(pieces: &[Bytes]) -> usize {
    let mut decoder = sse_core::SseDecoder::new();
    let mut events = 0;
    for piece in pieces {
        let mut buf = piece.clone();
        while let Some(event) = decoder.next(&mut buf) {
            if let sse_core::SseEvent::Message(ev) = event.expect("sse-core") {
                black_box(&ev);
                events += 1;
            }
        }
    }
    events
}

/// sse-parse 0.1: sans-IO, `feed(&[u8])` then drain `next_event`.
pub fn sse_parse(pieces: &[Bytes]) -> usize {
    let mut parser = sse_parse::SseParser::new();
    let mut events = 0;
    for piece in pieces {
        parser.feed(piece);
        while let Some(ev) = parser.next_event() {
            black_box(&ev);
            events += 1;
        }
    }
    events
}

/// sseer 0.3: `EventStream` over a stream of `Bytes`.
pub fn sseer(pieces: &[Bytes]) -> usize {
    futures::executor::block_on(async {
        let mut stream = sseer::EventStream::new(ready_stream(pieces));
        let mut events = 0;
        while let Some(ev) = stream.next().await {
            black_box(&ev.expect("sseer"));
            events += 1;
        }
        events
    })
}

/// eventsrc 0.0.2: `EventStream` over a stream of `Bytes` (its parser is not public).
pub fn eventsrc(pieces: &[Bytes]) -> usize {
    futures::executor::block_on(async {
        let mut stream = eventsrc::EventStream::new(ready_stream(pieces));
        let mut events = 0;
        while let Some(ev) = stream.next().await {
            black_box(&ev.expect("eventsrc"));
            events += 1;
        }
        events
    })
}

/// sse-stream 0.3: `SseByteStream` over a stream of `Bytes`. It also yields blocks without
/// data (metadata-only); only blocks with data are events.
pub fn sse_stream(pieces: &[Bytes]) -> usize {
    futures::executor::block_on(async {
        let mut stream = sse_stream::SseByteStream::new(ready_stream(pieces));
        let mut events = 0;
        while let Some(block) = stream.next().await {
            let block = block.expect("sse-stream");
            if block.data.is_some() {
                events += 1;
            }
            black_box(&block);
        }
        events
    })
}

/// eventsource-stream 0.2: `EventStream` over a stream of `Bytes`.
pub fn eventsource_stream(pieces: &[Bytes]) -> usize {
    futures::executor::block_on(async {
        let mut stream = eventsource_stream::EventStream::new(ready_stream(pieces));
        let mut events = 0;
        while let Some(ev) = stream.next().await {
            black_box(&ev.expect("eventsource-stream"));
            events += 1;
        }
        events
    })
}

/// sse-codec 0.3: its `futures_codec::Decoder`, driven the way `FramedRead` drives it
/// (append what was read to a `BytesMut`, call `decode` until it wants more) minus the
/// `AsyncRead`.
pub fn sse_codec(pieces: &[Bytes]) -> usize {
    use futures_codec::Decoder as _;
    let mut codec = sse_codec::SSECodec::default();
    let mut buf = BytesMut::new();
    let mut events = 0;
    for piece in pieces {
        buf.extend_from_slice(piece);
        while let Some(ev) = codec.decode(&mut buf).expect("sse-codec") {
            if let sse_codec::Event::Message { .. } = ev {
                events += 1;
            }
            black_box(&ev);
        }
    }
    events
}

/// Floor: every CR and LF found with `memchr2` in each piece. Returns the number found.
pub fn memchr2_floor(pieces: &[Bytes]) -> usize {
    pieces
        .iter()
        .map(|piece| memchr::memchr2_iter(b'\n', b'\r', piece).count())
        .sum()
}

/// Floor of a zero-copy decoder that hands out a line split across pieces as slices of
/// them instead of copying it together: each line found with `memchr2`, each of its
/// segments checked for ASCII (what a `&str` needs), and a segment that the line goes on
/// past kept as a `Bytes::slice` of its piece until the line ends (the last one is read
/// where it lies). No field is interpreted, and a CRLF counts as two endings. Returns the
/// number of blank lines.
pub fn segments_floor(pieces: &[Bytes]) -> usize {
    let mut earlier: Vec<Bytes> = Vec::with_capacity(64);
    let mut ascii = true;
    let mut line_len = 0;
    let mut blank_lines = 0;
    for piece in pieces {
        let mut pos = 0;
        while let Some(rest) = piece.get(pos..).filter(|rest| !rest.is_empty()) {
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                // The line goes on in the next piece: keep this part of it.
                ascii &= rest.is_ascii();
                earlier.push(piece.slice(pos..));
                line_len += rest.len();
                break;
            };
            let last = &rest[..end];
            ascii &= last.is_ascii();
            line_len += end;
            blank_lines += usize::from(line_len == 0);
            black_box((&earlier, last, ascii));
            earlier.clear();
            (ascii, line_len) = (true, 0);
            pos += end + 1;
        }
    }
    blank_lines
}

/// Floor of any decoder that takes ownership of `Bytes` pieces (ssekit's `feed`, sse-core):
/// each piece cloned and dropped, i.e. one atomic reference-count increment and decrement.
/// Returns the bytes handed over.
pub fn bytes_clone_floor(pieces: &[Bytes]) -> usize {
    pieces
        .iter()
        .map(|piece| black_box(piece.clone()).len())
        .sum()
}

thread_local! {
    static COPY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Floor: each piece copied into one buffer (kept across runs, so no allocation is timed).
/// Returns the bytes copied.
pub fn memcpy_floor(pieces: &[Bytes]) -> usize {
    COPY.with_borrow_mut(|buf| {
        buf.clear();
        for piece in pieces {
            buf.extend_from_slice(piece);
        }
        black_box(buf.as_slice());
        buf.len()
    })
}

//! Properties of the codec, checked on generated input:
//! - split invariance: every partition of the same bytes into feeds yields identical frames;
//! - agreement with the naive WHATWG reference decoder on every input;
//! - encode → decode is the identity on valid frames, under any split.

mod support;

use bytes::Bytes;
use proptest::prelude::*;
use ssekit::decode::{Mode, OnLimit};
use ssekit::{Config, Decoder, Encoder, Event, Frame};
use support::reference::{self, RefFrame};
use support::{decode_pieces, drive, split_at_cuts};

/// Bytes drawn mostly from SSE's own vocabulary, so generated streams hit real field names,
/// line endings, BOMs and bad UTF-8 often, with arbitrary bytes mixed in.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"data".to_vec()),
        Just(b"event".to_vec()),
        Just(b"id".to_vec()),
        Just(b"retry".to_vec()),
        Just(b":".to_vec()),
        Just(b": ".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\0".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(b"\xEF\xBB".to_vec()),
        Just(b"\xFF".to_vec()),
        Just("é€😀".as_bytes().to_vec()),
        Just(b"123".to_vec()),
        Just(b"x".to_vec()),
        any::<u8>().prop_map(|b| vec![b]),
    ];
    prop::collection::vec(token, 0..80).prop_map(|tokens| tokens.concat())
}

fn any_stream() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![3 => sse_bytes(), 1 => prop::collection::vec(any::<u8>(), 0..200)]
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Browser), Just(Mode::Raw)]
}

fn on_limit() -> impl Strategy<Value = OnLimit> {
    prop_oneof![Just(OnLimit::FailStop), Just(OnLimit::Resync)]
}

fn single_line_text() -> impl Strategy<Value = String> {
    "[^\r\n]{0,12}"
}

fn event() -> impl Strategy<Value = Event> {
    (
        prop::option::of(single_line_text()),
        prop::option::of("[^\r\n\0]{0,8}"),
        "([^\r\n]|\n){0,24}",
    )
        .prop_map(|(event_type, id, data)| {
            let mut builder = Event::builder().data(data);
            if let Some(t) = event_type {
                builder = builder.event(t).expect("no line breaks");
            }
            if let Some(i) = id {
                builder = builder.id(i).expect("no line breaks or NUL");
            }
            builder.build()
        })
}

fn frame(mode: Mode) -> BoxedStrategy<Frame> {
    let common = prop_oneof![
        4 => event().prop_map(Frame::Event),
        1 => single_line_text().prop_map(|c| Frame::Comment(c.into())),
        1 => any::<u64>().prop_map(Frame::Retry),
    ];
    if mode == Mode::Browser {
        return common.boxed();
    }
    // Raw mode also has data-less blocks: a non-empty type, an id, or both.
    let dataless = (
        prop::option::of("[^\r\n]{1,8}"),
        prop::option::of("[^\r\n\0]{0,8}"),
    )
        .prop_filter("a type or an id", |(t, i)| t.is_some() || i.is_some())
        .prop_map(|(event_type, id)| {
            let mut builder = Event::builder();
            if let Some(t) = event_type {
                builder = builder.event(t).expect("no line breaks");
            }
            if let Some(i) = id {
                builder = builder.id(i).expect("no line breaks or NUL");
            }
            Frame::Dataless(builder.build())
        });
    prop_oneof![6 => common, 1 => dataless].boxed()
}

fn frames_and_mode() -> impl Strategy<Value = (Mode, Vec<Frame>)> {
    mode().prop_flat_map(|m| (Just(m), prop::collection::vec(frame(m), 0..12)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn any_split_of_the_input_yields_the_frames_of_one_feed(
        stream in any_stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        mode in mode(),
    ) {
        let config = Config::default().mode(mode);
        let whole = decode_pieces(config, [&stream[..]]).unwrap();
        let split = decode_pieces(config, split_at_cuts(&stream, &cuts)).unwrap();
        prop_assert_eq!(&split, &whole);
    }

    #[test]
    fn borrowed_frames_mixed_with_owned_ones_are_the_frames_of_one_feed(
        stream in any_stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        borrow in prop::collection::vec(any::<bool>(), 1..8),
        mode in mode(),
        comments in any::<bool>(),
    ) {
        // Each call is next_frame_ref or next_frame as `borrow` says (cycled), each piece is
        // fed as Bytes or as a slice in turn: the frames are those of one next_frame feed.
        let config = Config::default().mode(mode).comments(comments);
        let whole = drive::run(config, &[&stream[..]]);
        prop_assert!(whole.items.iter().all(Result::is_ok), "within the default limits");
        let mixed = drive::run_mixed(config, &split_at_cuts(&stream, &cuts), &borrow, &[]);
        prop_assert_eq!(mixed, whole);
    }

    #[test]
    fn one_byte_feeds_through_feed_slice_yield_the_frames_of_one_feed(stream in any_stream(), mode in mode()) {
        let config = Config::default().mode(mode);
        let whole = decode_pieces(config, [&stream[..]]).unwrap();
        let mut dec = Decoder::with_config(config);
        let mut frames = Vec::new();
        for b in &stream {
            dec.feed_slice(std::slice::from_ref(b)).unwrap();
            while let Some(f) = dec.next_frame().unwrap() {
                frames.push(f);
            }
        }
        prop_assert_eq!(&frames, &whole.frames);
        prop_assert_eq!(dec.finish(), whole.end);
        prop_assert!(dec.bytes_scanned() <= 2 * stream.len() as u64);
    }

    #[test]
    fn the_decoder_agrees_with_the_reference_decoder(
        stream in any_stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        mode in mode(),
    ) {
        let expected = reference::decode(&stream, mode);
        let got = decode_pieces(Config::default().mode(mode), split_at_cuts(&stream, &cuts)).unwrap();
        prop_assert_eq!(reference::from_frames(&got.frames), expected.frames);
        prop_assert_eq!(got.last_event_id, expected.last_event_id);
    }

    #[test]
    fn encode_then_decode_is_the_identity_on_frames(
        (mode, frames) in frames_and_mode(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        // Data is generated with LF only: CR and CRLF are normalised to LF (next property).
        let mut wire = Vec::new();
        for frame in &frames {
            Encoder::new().encode_frame(frame, &mut wire).unwrap();
        }
        let decoded = decode_pieces(Config::default().mode(mode), split_at_cuts(&wire, &cuts)).unwrap();
        prop_assert_eq!(decoded.frames, frames);
        prop_assert_eq!(decoded.end, ssekit::StreamEnd::Clean);
    }

    #[test]
    fn data_with_cr_or_crlf_comes_back_with_lf_line_breaks(data in "(.|\r|\n|\r\n){0,32}") {
        let mut wire = Vec::new();
        Encoder::new().encode(&Event::message(data.clone()), &mut wire).unwrap();
        let mut dec = Decoder::new();
        dec.feed(Bytes::from(wire)).unwrap();
        let Some(Frame::Event(ev)) = dec.next_frame().unwrap() else {
            return Err(TestCaseError::fail("no event"));
        };
        prop_assert_eq!(ev.data(), data.replace("\r\n", "\n").replace('\r', "\n"));
    }

    #[test]
    fn reference_frames_are_never_lost_by_the_zero_copy_paths(stream in sse_bytes()) {
        // Feeding as one Bytes (zero-copy) and as copied slices must agree with the reference.
        let expected = reference::decode(&stream, Mode::Browser).frames;
        let mut dec = Decoder::new();
        dec.feed(Bytes::copy_from_slice(&stream)).unwrap();
        let mut frames = Vec::new();
        while let Some(f) = dec.next_frame().unwrap() {
            frames.push(f);
        }
        prop_assert_eq!(reference::from_frames(&frames), expected.clone());
        let events = expected.iter().filter(|f| matches!(f, RefFrame::Event { .. })).count();
        prop_assert_eq!(frames.iter().filter(|f| matches!(f, Frame::Event(_))).count(), events);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Tiny pieces take a fast path that appends to the current line without queueing; sizes
    /// around its threshold (16 bytes), both feeding calls, and small line limits in both
    /// limit policies must give exactly the frames, errors (with offsets) and end of one feed.
    #[test]
    fn tiny_pieces_yield_the_frames_errors_and_end_of_one_feed(
        stream in any_stream(),
        sizes in prop::collection::vec(1usize..=20, 1..64),
        max_line in 4usize..200,
        on_limit in on_limit(),
        mode in mode(),
    ) {
        let config = Config::default()
            .mode(mode)
            .on_limit(on_limit)
            .limits(ssekit::Limits::default().max_line(max_line));
        let mut pieces = Vec::new();
        let mut rest = &stream[..];
        for size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, tail) = rest.split_at((*size).min(rest.len()));
            pieces.push(piece);
            rest = tail;
        }
        let whole = drive::run(config, &[&stream[..]]);
        let tiny = drive::run(config, &pieces);
        prop_assert_eq!(tiny, whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// `Config::comments(false)` drops exactly the comment frames and changes nothing else.
    #[test]
    fn skipping_comments_drops_exactly_the_comment_frames(stream in any_stream(), mode in mode()) {
        let surfaced = decode_pieces(Config::default().mode(mode), [&stream[..]]).unwrap();
        let skipped = decode_pieces(Config::default().mode(mode).comments(false), [&stream[..]]).unwrap();
        let without: Vec<Frame> = surfaced
            .frames
            .iter()
            .filter(|f| !matches!(f, Frame::Comment(_)))
            .cloned()
            .collect();
        prop_assert_eq!(&skipped.frames, &without);
        prop_assert_eq!(skipped.end, surfaced.end);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// A reader need not drain after every piece: pieces fed while earlier ones are still
    /// queued (`feed` and `feed_slice` in turn, so staged slices queue behind `Bytes`), with a
    /// drawn number of frames taken in between (often none, often not all), owned and
    /// borrowed, under small limits in both policies, give exactly the frames, errors (with
    /// their offsets), end and last event ID of one feed drained at once. With a small
    /// `max_buffered`, a piece refused as `BufferFull` (at the offset where it starts) is fed
    /// again after draining, as a transport applying backpressure does: a refusal changes
    /// nothing. The driver is the one the `decode_split` fuzz target uses.
    #[test]
    fn pieces_queued_before_draining_yield_the_frames_errors_and_end_of_one_feed(
        stream in any_stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        takes in prop::collection::vec(any::<u8>(), 1..8),
        borrow in prop::collection::vec(any::<bool>(), 1..8),
        max_line in 4usize..200,
        max_event in 4usize..400,
        max_buffered in prop_oneof![Just(16usize << 20), 1usize..64],
        on_limit in on_limit(),
        comments in any::<bool>(),
        mode in mode(),
    ) {
        let config = Config::default()
            .mode(mode)
            .on_limit(on_limit)
            .comments(comments)
            .limits(
                ssekit::Limits::default()
                    .max_line(max_line)
                    .max_event(max_event)
                    .max_buffered(max_buffered),
            );
        let whole = drive::run(config, &[&stream[..]]);
        let split = drive::run_mixed(config, &split_at_cuts(&stream, &cuts), &borrow, &takes);
        prop_assert_eq!(split, whole);
    }
}

/// Streams of long lines (past the line scan's first 256 bytes, where `scan_long` takes over,
/// up to a few pieces of 1460 bytes), all ASCII or with one non-ASCII sequence (valid UTF-8
/// or not) anywhere, separated by blank lines, each ending in LF, CRLF or CR.
fn long_lines() -> impl Strategy<Value = Vec<u8>> {
    let high = prop_oneof![
        Just(&b"\xc3\xa9"[..]),
        Just(&b"\xff"[..]),
        Just("😀".as_bytes()),
        Just(&b"\xe2\x82"[..]),
    ];
    let field = prop_oneof![Just("data: "), Just(": "), Just("event: "), Just("id: ")];
    let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    let line = (
        field,
        200usize..4000,
        prop::option::of((any::<prop::sample::Index>(), high)),
        ending,
    )
        .prop_map(|(field, len, high, ending)| {
            let mut body = vec![b'a'; len];
            if let Some((at, bytes)) = high {
                let at = at.index(len);
                body.splice(at..at, bytes.iter().copied());
            }
            [field.as_bytes(), &body, ending.as_bytes()].concat()
        });
    let lines = prop_oneof![4 => line, 1 => Just(b"\n".to_vec())];
    prop::collection::vec(lines, 1..6).prop_map(|lines| lines.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Long lines are read in one pass that also says whether they are ASCII; a wrong "ASCII"
    /// would hand out invalid UTF-8 as `str` (debug builds assert every such claim).
    #[test]
    fn long_lines_cut_anywhere_agree_with_the_reference_decoder(
        stream in long_lines(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        piece in prop_oneof![Just(0usize), Just(1460), 1usize..600],
        borrow in prop::collection::vec(any::<bool>(), 1..4),
        mode in mode(),
    ) {
        let pieces = if piece == 0 {
            split_at_cuts(&stream, &cuts)
        } else {
            stream.chunks(piece).collect()
        };
        let expected = reference::decode(&stream, mode);
        let config = Config::default().mode(mode);
        let got = decode_pieces(config, pieces.iter().copied()).unwrap();
        prop_assert_eq!(reference::from_frames(&got.frames), expected.frames);
        prop_assert_eq!(got.last_event_id, expected.last_event_id);
        let whole = drive::run(config, &[&stream[..]]);
        prop_assert_eq!(drive::run_mixed(config, &pieces, &borrow, &[]), whole);
    }
}

//! Tiny pieces (up to 16 bytes) are appended to the decoder's held buffer and their lines read
//! there in place. These tests walk the paths where that buffer meets the others: a line begun
//! in a large piece and continued by tiny ones (and the reverse), a CR ending a tiny piece
//! with its LF in the next, values that outlive a compaction of the buffer, and backpressure
//! while lines wait in it. Each compares with the same bytes fed whole, by reference and owned.
//! (`decode_props.rs` checks the same on arbitrary input and splits.)

mod support;

use ssekit::decode::OnLimit;
use ssekit::{Config, DecodeError, Decoder, Frame, Limits, StreamEnd};
use support::drive;

/// Outcomes of `pieces` drained with `next_frame_ref` and with `next_frame` (pieces fed as
/// `Bytes` and as slices in turn, see `support::drive`).
fn decode(config: Config, pieces: &[&[u8]]) -> [drive::Outcome; 2] {
    [
        drive::run_mixed(config, pieces, &[true], &[]),
        drive::run(config, pieces),
    ]
}

/// `stream` cut at `cuts`: the same frames and end as fed whole.
fn assert_like_whole(stream: &[u8], cuts: &[usize]) {
    let mut pieces = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([&stream.len()]) {
        pieces.push(&stream[start..cut]);
        start = cut;
    }
    let whole = drive::run(Config::default(), &[stream]);
    for outcome in decode(Config::default(), &pieces) {
        assert_eq!(outcome, whole, "cut at {cuts:?}");
    }
}

fn message(data: &str) -> Frame {
    Frame::Event(ssekit::Event::message(data.to_owned()))
}

#[test]
fn a_line_begun_in_a_large_piece_goes_on_in_tiny_ones_and_back() {
    let mut stream = b"event: long\ndata: ".to_vec();
    stream.extend(std::iter::repeat_n(b'x', 3000));
    stream.extend_from_slice(b"\n\ndata: next\n\n");
    // Large, then tiny pieces through the end of the data line, then large again.
    let mut cuts = vec![1500];
    cuts.extend((1510..3030).step_by(10));
    cuts.push(3031);
    assert_like_whole(&stream, &cuts);
    // Tiny pieces first, then one large piece finishes the line.
    let cuts: Vec<usize> = (7..700).step_by(7).collect();
    assert_like_whole(&stream, &cuts);
    let [outcome, _] = decode(Config::default(), &[&stream[..1500], &stream[1500..]]);
    assert_eq!(outcome.items.len(), 2);
    assert_eq!(outcome.end, StreamEnd::Clean);
}

#[test]
fn a_cr_ending_a_tiny_piece_takes_the_lf_beginning_the_next() {
    let stream = b"data: a\r\n\r\ndata: b\r\ndata: c\r\n\r\n";
    for at in 1..stream.len() {
        // A tiny piece up to the cut, then the rest in a tiny or in a large piece.
        assert_like_whole(stream, &[at]);
        let mut padded = stream.to_vec();
        padded.extend_from_slice(&[b':'; 40]);
        padded.extend_from_slice(b"\r\n");
        assert_like_whole(&padded, &[at]);
    }
    let [outcome, _] = decode(Config::default(), &[b"data: a\r", b"\n\r", b"\n"]);
    assert_eq!(outcome.items, [Ok(message("a"))]);
}

#[test]
fn values_read_in_tiny_pieces_outlive_the_buffer_being_compacted() {
    // The `event:` line is read in place, then thousands of tiny pieces of data fill the
    // buffer several times over before the event ends.
    let data = "y".repeat(20_000);
    let stream = format!("event: survives\nid: 7\ndata: {data}\n\n");
    let cuts: Vec<usize> = (10..stream.len()).step_by(10).collect();
    let pieces: Vec<&[u8]> = {
        let mut start = 0;
        cuts.iter()
            .chain([&stream.len()])
            .map(|&cut| {
                let piece = &stream.as_bytes()[start..cut];
                start = cut;
                piece
            })
            .collect()
    };
    for outcome in decode(Config::default(), &pieces) {
        let [Ok(Frame::Event(ev))] = outcome.items.as_slice() else {
            panic!("{:?}", outcome.items)
        };
        assert_eq!(
            (ev.event_type(), ev.id(), ev.data()),
            ("survives", Some("7"), &*data)
        );
        assert_eq!(outcome.end, StreamEnd::Clean);
    }
}

#[test]
fn a_line_over_the_limit_in_tiny_pieces_is_reported_where_it_starts() {
    let config = Config::default()
        .limits(Limits::default().max_line(32))
        .on_limit(OnLimit::Resync);
    let stream = [&b"data: ok\n\n"[..], &[b'z'; 50], b"\n\ndata: after\n\n"].concat();
    let mut dec = Decoder::with_config(config);
    let mut frames = 0;
    let mut errors = Vec::new();
    for piece in stream.chunks(3) {
        dec.feed_slice(piece).unwrap();
        loop {
            match dec.next_frame() {
                Ok(Some(_)) => frames += 1,
                Ok(None) => break,
                Err(err) => errors.push(err),
            }
        }
    }
    assert_eq!(frames, 2, "the event before and the one after");
    // The 33rd byte of the line (stream byte 42) comes in the piece of bytes 42..45: the
    // error counts the 35 bytes seen by then.
    assert_eq!(
        errors,
        [DecodeError::LineTooLong {
            offset: 10,
            size: 35,
            limit: 32
        }]
    );
}

#[test]
fn lines_waiting_in_tiny_pieces_count_against_max_buffered() {
    let config = Config::default().limits(Limits::default().max_buffered(12));
    let mut dec = Decoder::with_config(config);
    // Not drained: the first piece with a line ending waits, and what follows counts with it.
    dec.feed_slice(b"data: a\n\n").unwrap();
    assert_eq!(
        dec.feed_slice(b"data: b\n\n"),
        Err(DecodeError::BufferFull {
            offset: 9,
            size: 18,
            limit: 12
        })
    );
    let Some(Frame::Event(ev)) = dec.next_frame().unwrap() else {
        panic!("the first event")
    };
    assert_eq!(ev.data(), "a");
    assert!(dec.next_frame().unwrap().is_none());
    // Drained: the same piece is taken now.
    dec.feed_slice(b"data: b\n\n").unwrap();
    assert_eq!(dec.next_frame().unwrap(), Some(message("b")));
    // A current line with no ending does not count: it is bounded by `max_line` instead.
    for _ in 0..10 {
        dec.feed_slice(b"data: abc").unwrap();
    }
    assert!(dec.next_frame().unwrap().is_none());
}

#[test]
fn bytes_fed_in_tiny_pieces_are_scanned_once() {
    let stream = b": keep-alive\ndata: {\"seq\":1,\"ok\":true}\n\n".repeat(100);
    for piece_len in [1, 3, 10, 16] {
        let mut dec = Decoder::new();
        for piece in stream.chunks(piece_len) {
            dec.feed_slice(piece).unwrap();
            while dec.next_frame().unwrap().is_some() {}
        }
        assert_eq!(
            dec.bytes_scanned(),
            stream.len() as u64,
            "{piece_len}-byte pieces"
        );
    }
}

/// Line endings (CR, LF, CRLF) and high bytes (a two-byte character, an invalid byte) at
/// every place in a tiny piece: the lines a piece completes are found from masks made as it
/// is appended, and the rest of a piece after a frame is settled at once as the current line.
#[test]
fn line_endings_and_high_bytes_at_every_place_in_a_tiny_piece() {
    let mut stream = Vec::new();
    for i in 0..40 {
        stream.extend_from_slice(b": c");
        stream.extend(std::iter::repeat_n(b'x', i % 7));
        stream.extend_from_slice(b"\r\ndata: \xc3\xa9");
        stream.extend(std::iter::repeat_n(b'y', i % 5));
        stream.extend_from_slice(if i % 3 == 0 { b"\xff\r" } else { b"\n" });
        stream.extend_from_slice(b"data: z\r\n\r\n");
    }
    for size in 1..=17 {
        for shift in 1..=size {
            let cuts: Vec<usize> = (shift..stream.len()).step_by(size).collect();
            assert_like_whole(&stream, &cuts);
        }
    }
    // Tiny pieces mixed with larger ones, which take over a line a tiny piece left open.
    let sizes = [3, 40, 10, 1, 16, 200, 9, 17];
    let mut cuts = Vec::new();
    let mut at = 0;
    for size in sizes.iter().cycle() {
        at += size;
        if at >= stream.len() {
            break;
        }
        cuts.push(at);
    }
    assert_like_whole(&stream, &cuts);
}

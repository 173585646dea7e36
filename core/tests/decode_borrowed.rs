//! `Decoder::next_frame_ref`: borrowed frames are the owned frames, field by field, on the
//! paths that make a borrowed frame different (values left in a piece that was let go, joined
//! data, repaired UTF-8, ids kept across events). The property test in `decode_props.rs`
//! checks the same on arbitrary input and splits.

use bytes::Bytes;
use ssekit::decode::Mode;
use ssekit::{Config, Decoder, EventRef, Frame, FrameRef};

/// Every frame of `pieces`, read with `next_frame_ref` and copied, and with `next_frame`.
fn both(config: Config, pieces: &[&[u8]]) -> (Vec<Frame>, Vec<Frame>) {
    let mut by_ref = Decoder::with_config(config);
    let mut owned = Decoder::with_config(config);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for piece in pieces {
        // A fresh `Bytes` per piece, dropped by the caller right away: only the decoder
        // keeps it alive.
        by_ref.feed(Bytes::copy_from_slice(piece)).unwrap();
        while let Some(frame) = by_ref.next_frame_ref().unwrap() {
            a.push(frame.to_frame());
        }
        owned.feed(Bytes::copy_from_slice(piece)).unwrap();
        while let Some(frame) = owned.next_frame().unwrap() {
            b.push(frame);
        }
    }
    (a, b)
}

#[test]
fn an_event_whose_fields_lie_in_pieces_already_read_is_whole() {
    let pieces: [&[u8]; 4] = [b"event: a\n", b"data: one\n", b"data: two\nid: 3\n", b"\n"];
    let (borrowed, owned) = both(Config::default(), &pieces);
    assert_eq!(borrowed, owned);
    let Frame::Event(ev) = &borrowed[0] else {
        panic!("{borrowed:?}")
    };
    assert_eq!(
        (ev.event_type(), ev.id(), ev.data()),
        ("a", Some("3"), "one\ntwo")
    );

    let pieces: [&[u8]; 2] = [b"event: solo\ndata: x", b"yz\n\n"];
    assert_eq!(
        both(Config::default(), &pieces).0[0],
        owned_event("solo", "xyz")
    );
}

fn owned_event(event_type: &str, data: &str) -> Frame {
    Frame::Event(
        ssekit::Event::builder()
            .event(event_type.to_string())
            .unwrap()
            .data(data.to_string())
            .build(),
    )
}

#[test]
fn invalid_utf8_is_repaired_in_every_field_the_same_way() {
    let stream: &[u8] =
        b":\xFFping\nevent: t\xC3\ndata: a\xF0\x9F\ndata: b\n\nevent: \xFE\ndata: \xFF\n\n";
    let (borrowed, owned) = both(Config::default(), &[stream]);
    assert_eq!(borrowed, owned);
    assert_eq!(borrowed.len(), 3);
    assert_eq!(borrowed[0], Frame::Comment("\u{FFFD}ping".into()));
    assert_eq!(borrowed[1], owned_event("t\u{FFFD}", "a\u{FFFD}\nb"));
    assert_eq!(borrowed[2], owned_event("\u{FFFD}", "\u{FFFD}"));
}

#[test]
fn raw_mode_dataless_blocks_and_retry_are_borrowed_too() {
    let config = Config::default().mode(Mode::Raw);
    let mut dec = Decoder::with_config(config);
    dec.feed_slice(b"retry: 250\nevent: ping\nid: 9\n\n")
        .unwrap();
    assert_eq!(dec.next_frame_ref().unwrap(), Some(FrameRef::Retry(250)));
    let expected = EventRef::default();
    match dec.next_frame_ref().unwrap() {
        Some(FrameRef::Dataless(ev)) => {
            assert_eq!(
                (ev.event_type(), ev.id(), ev.data()),
                ("ping", Some("9"), "")
            );
            assert_ne!(ev, expected);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(dec.next_frame_ref().unwrap(), None);
    assert_eq!(dec.last_event_id(), "9");
}

#[test]
fn a_borrowed_event_carries_only_its_own_blocks_id() {
    let mut dec = Decoder::new();
    dec.feed_slice(b"id: 1\ndata: a\n\ndata: b\n\n").unwrap();
    let first = dec.next_frame_ref().unwrap().map(|f| f.to_frame());
    assert_eq!(
        first,
        Some(Frame::Event(
            ssekit::Event::builder().id("1").unwrap().data("a").build()
        ))
    );
    match dec.next_frame_ref().unwrap() {
        // The second block set no id: the event has none, the stream's last id stays "1".
        Some(FrameRef::Event(ev)) => assert_eq!((ev.id(), ev.data()), (None, "b")),
        other => panic!("{other:?}"),
    }
    assert_eq!(dec.last_event_id(), "1");
}

#[test]
fn a_large_joined_event_read_by_reference_then_small_ones() {
    // The joining buffer (and, with an invalid byte, the repair buffer) one large event grew
    // is lent out, then let go before the next one; later events are unaffected.
    let big_line = [&b"x".repeat(40_000)[..], b"\xFF"].concat();
    let mut stream = Vec::new();
    for _ in 0..3 {
        stream.extend_from_slice(b"data: ");
        stream.extend_from_slice(&big_line);
        stream.push(b'\n');
    }
    stream.extend_from_slice(b"\ndata: small\ndata: \xFEagain\n\n");
    let (borrowed, owned) = both(Config::default(), &[&stream[..]]);
    assert_eq!(borrowed, owned);
    assert_eq!(borrowed.len(), 2);
    let Frame::Event(big) = &borrowed[0] else {
        panic!("{:?}", borrowed[0])
    };
    // Each invalid byte became U+FFFD (3 bytes); the lines are joined by LF.
    assert_eq!(big.data().len(), 3 * (40_000 + 3) + 2);
    assert_eq!(
        borrowed[1],
        Frame::Event(ssekit::Event::message("small\n\u{FFFD}again"))
    );
}

/// Joined data whose lines straddle pieces: such a line is checked for ASCII as it is
/// joined (the line scan did not see it whole), and the joined data then counts as ASCII
/// only if every line was. A two-byte character or an invalid byte in the first, a middle or
/// the last line must come out exact or repaired, never unchecked (a debug assertion checks
/// every ASCII claim), whichever line the cut falls in.
#[test]
fn joined_lines_that_straddle_pieces_keep_their_high_bytes() {
    let lines: [&[u8]; 3] = [
        b"first \xe2\x82\xac line",
        b"middle \xc3\xa9 line",
        b"last \xff line",
    ];
    for high in 0..=lines.len() {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            // Only line `high` keeps its high bytes (`high == 3`: all ASCII).
            let line: Vec<u8> = if i == high {
                line.to_vec()
            } else {
                line.iter()
                    .map(|&b| if b < 0x80 { b } else { b'?' })
                    .collect()
            };
            stream.extend_from_slice(b"data: ");
            stream.extend_from_slice(&line);
            stream.extend_from_slice(b"\r\n");
            expected.push(String::from_utf8_lossy(&line).into_owned());
        }
        stream.extend_from_slice(b"\r\n");
        let expected = expected.join("\n");
        for size in 17..stream.len() {
            let pieces: Vec<&[u8]> = stream.chunks(size).collect();
            let (borrowed, owned) = both(Config::default(), &pieces);
            assert_eq!(
                borrowed, owned,
                "{size}-byte pieces, high bytes in line {high}"
            );
            let data = ssekit::Event::builder().data(expected.clone()).build();
            assert_eq!(
                borrowed,
                [Frame::Event(data)],
                "{size}-byte pieces, high bytes in line {high}"
            );
        }
    }
}

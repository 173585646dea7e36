//! Arbitrary payloads → chunk → encode → decode (any split) → reassemble → the same bytes.
//! No piece over the limit, no split UTF-8 character (pieces are `str`), only the last piece
//! is `end`, and in strip-safe mode no piece starts with whitespace a client would strip.
#![no_main]

mod common;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ssekit::chunk::{ChunkError, Chunker, Reassembler};
use ssekit::{Config, Encoder, Event, Frame};

#[derive(Arbitrary, Debug)]
struct Input {
    payload: String,
    limit: u16,
    strip_safe: bool,
    cuts: Vec<u16>,
}

fuzz_target!(|input: Input| {
    let limit = 4 + usize::from(input.limit % 300);
    let chunker = Chunker::new().max_chunk(limit).strip_safe(input.strip_safe);
    let pieces: Vec<_> = match chunker.chunk(input.payload.clone()) {
        Ok(chunks) => chunks.collect(),
        Err(ChunkError::CarriageReturn { position }) => {
            assert_eq!(input.payload.as_bytes()[position], b'\r');
            return;
        }
        Err(_) => return, // leading whitespace or no boundary: refused before any byte is sent
    };
    let mut joined = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        assert!(
            piece.data().len() <= limit,
            "piece of {} bytes over {limit}",
            piece.data().len()
        );
        assert_eq!(
            piece.is_end(),
            i + 1 == pieces.len(),
            "only the last piece is end"
        );
        if input.strip_safe && i > 0 {
            // What Python's str.lstrip() removes; LF is not, it becomes an empty data: line.
            let strippable =
                |c: char| c != '\n' && (c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c));
            let first = piece.data().chars().next();
            assert!(
                !first.is_some_and(strippable),
                "piece starts with strippable whitespace"
            );
        }
        joined.push_str(piece.data());
    }
    assert_eq!(joined, input.payload);

    let mut wire = Vec::new();
    let encoder = Encoder::new();
    let task = Event::builder()
        .event("task_id")
        .expect("valid")
        .data("t-1")
        .build();
    encoder.encode(&task, &mut wire).expect("Vec has room");
    for piece in pieces {
        encoder
            .encode(&piece.into_event(), &mut wire)
            .expect("Vec has room");
        encoder.comment("ping", &mut wire).expect("valid");
    }
    let decoded = common::run(Config::default(), &common::split(&wire, &input.cuts));
    let mut reassembler = Reassembler::new();
    let mut result = None;
    for item in decoded.items {
        if let Ok(Frame::Event(ev)) = item {
            if ev.event_type() == "task_id" {
                continue;
            }
            if let Some(done) = reassembler.push(&ev).expect("our own stream reassembles") {
                result = Some(done);
            }
        }
    }
    assert_eq!(result.as_deref(), Some(input.payload.as_str()));
});

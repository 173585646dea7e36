//! Chunking and reassembly, end to end: payload → `Chunker` → `Encoder` → bytes split into
//! arbitrary feeds → `Decoder` → `Reassembler` must give back the payload byte for byte, and
//! so must a line-based client that strips every value the way the official ORS Python
//! client does.

use bytes::Bytes;
use proptest::prelude::*;
use ssekit::chunk::{ChunkError, Chunker, ReassembleError, Reassembler};
use ssekit::profile::ors::{Terminal, ToolCall};
use ssekit::sequence::{Origin, Validator};
use ssekit::{Decoder, Encoder, Event, Frame, StreamEnd};

/// The wire bytes of a chunked payload (one `task_id` first, as ORS sends, and a ping).
fn wire(chunker: Chunker, payload: &str) -> Result<Vec<u8>, ChunkError> {
    let mut out = Vec::new();
    let enc = Encoder::new();
    let task = Event::builder()
        .event("task_id")
        .unwrap()
        .data("t-1")
        .build();
    enc.encode(&task, &mut out).unwrap();
    for (i, piece) in chunker.chunk(payload.to_owned())?.enumerate() {
        assert!(piece.data().len() <= chunker.limit());
        enc.encode(&piece.into_event(), &mut out).unwrap();
        if i % 3 == 0 {
            enc.comment("ping", &mut out).unwrap();
        }
    }
    Ok(out)
}

/// Decodes `bytes` fed in pieces cut at `cuts` and reassembles the `chunk`/`end` events.
/// The same events also go through the ORS profile, as a server checking its own output
/// would, and it must reach the same payload.
fn reassemble(bytes: &[u8], cuts: &[usize]) -> String {
    let mut decoder = Decoder::new();
    let mut validator = Validator::new(ToolCall::new().check_result(false)).origin(Origin::Local);
    let mut joined = Reassembler::new();
    let mut result = None;
    let mut start = 0;
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(bytes.len());
    for end in ends {
        decoder
            .feed(Bytes::copy_from_slice(&bytes[start..end]))
            .unwrap();
        start = end;
        while let Some(frame) = decoder.next_frame().unwrap() {
            validator.frame(&frame).unwrap();
            if let Frame::Event(ev) = frame {
                if ev.event_type() == "task_id" {
                    continue;
                }
                assert!(result.is_none(), "event after end");
                result = joined.push(&ev).unwrap();
            }
        }
    }
    assert_eq!(decoder.finish(), StreamEnd::Clean);
    validator.finish().unwrap();
    let result = result.expect("an end event");
    assert_eq!(
        validator.profile().terminal(),
        Some(&Terminal::End(result.clone()))
    );
    result.to_string()
}

/// The official ORS Python client's parser (`ors/client/_http.py`, `_parse_sse_events` and
/// `resumable_sse`), transliterated: lines split on LF only, `rstrip("\r\n")`, comments
/// skipped, a line without a colon is an error, every value `lstrip()`ped, data lines joined
/// with LF, only blocks with an `event:` yielded; `chunk` data collected, `end` appended.
fn python_sdk_reassemble(bytes: &[u8]) -> String {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut event: Option<String> = None;
    let mut data: Vec<String> = Vec::new();
    let mut buffer = String::new();
    for line in text.split('\n') {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if let Some(name) = event.take() {
                let joined = data.join("\n");
                match name.as_str() {
                    "chunk" => buffer.push_str(&joined),
                    "end" => {
                        buffer.push_str(&joined);
                        return buffer;
                    }
                    _ => {}
                }
            }
            data.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line
            .split_once(':')
            .expect("the SDK raises on a line without a colon");
        let value = python_lstrip(value);
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => data.push(value.to_owned()),
            _ => {}
        }
    }
    panic!("stream ended without end");
}

/// Python's `str.lstrip()`: `str.isspace()` is Unicode White_Space plus U+001C..U+001F.
fn python_lstrip(s: &str) -> &str {
    s.trim_start_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Characters that stress the rules: 1-, 2-, 3- and 4-byte UTF-8, JSON punctuation,
/// spaces, other Unicode whitespace and LF.
fn payload_char() -> impl Strategy<Value = char> {
    prop_oneof![
        6 => proptest::char::range('a', 'z'),
        2 => prop::sample::select(vec!['{', '}', '"', ':', ',', '[', ']', '\\']),
        2 => prop::sample::select(vec!['é', 'ß', '€', '中', '😀', '𝄞', '\u{7ff}', '\u{800}', '\u{ffff}', '\u{10000}']),
        2 => Just(' '),
        1 => prop::sample::select(vec!['\u{a0}', '\u{3000}', '\t', '\u{1f}', '\u{2028}']),
        1 => Just('\n'),
        1 => any::<char>().prop_filter("no CR", |c| *c != '\r'),
    ]
}

fn payload() -> impl Strategy<Value = String> {
    prop::collection::vec(payload_char(), 0..300).prop_map(|cs| cs.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Without the strip-safe rules every CR-free payload chunks, and chunk → encode →
    /// decode (any split) → reassemble is the identity.
    #[test]
    fn identity_for_every_payload_any_split(
        payload in payload(),
        limit in 4usize..40,
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let bytes = wire(Chunker::new().max_chunk(limit).strip_safe(false), &payload).unwrap();
        prop_assert_eq!(reassemble(&bytes, &cuts), payload);
    }

    /// In strip-safe mode (the default) a payload is either refused with the reason that
    /// makes it unsendable, or it round-trips through ssekit *and* through the ORS Python
    /// client's stripping parser, and no piece begins with whitespace.
    #[test]
    fn strip_safe_payloads_survive_the_python_client(
        payload in payload(),
        limit in 4usize..40,
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let chunker = Chunker::new().max_chunk(limit);
        match chunker.chunk(payload.clone()) {
            Ok(pieces) => {
                for piece in pieces {
                    let first = piece.data().chars().next();
                    prop_assert!(first.is_none_or(|c| c == '\n' || python_lstrip(&c.to_string()) == c.to_string()));
                }
                let bytes = wire(chunker, &payload).unwrap();
                prop_assert_eq!(reassemble(&bytes, &cuts), payload.clone());
                prop_assert_eq!(python_sdk_reassemble(&bytes), payload);
            }
            Err(ChunkError::LeadingWhitespace { position }) => {
                let before = &payload[..position];
                prop_assert!(before.is_empty() || before.ends_with('\n'));
                let c = payload[position..].chars().next().unwrap();
                prop_assert!(python_lstrip(&c.to_string()).is_empty());
            }
            Err(ChunkError::NoBoundary { position, limit: l }) => {
                prop_assert_eq!(l, limit);
                // From `position` on, more than `limit` bytes of whitespace (and one non-space
                // character before it at most) leave no place to cut.
                let run: usize = payload[position..]
                    .chars()
                    .take_while(|c| *c != '\n' && python_lstrip(&c.to_string()).is_empty())
                    .map(char::len_utf8)
                    .sum();
                prop_assert!(run + 4 > limit, "run {} at {} limit {}", run, position, limit);
            }
            Err(other) => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    /// Words separated by single spaces (what JSON text looks like) always chunk in
    /// strip-safe mode once the limit is at least 5 bytes (a 4-byte character and one space:
    /// at 4, "😀 a" has no valid cut, and `NoBoundary` says so).
    #[test]
    fn prose_always_chunks_strip_safe(
        words in prop::collection::vec("[a-zé€😀\"{}:,]{1,12}", 1..80),
        limit in 5usize..64,
    ) {
        let payload = words.join(" ");
        let bytes = wire(Chunker::new().max_chunk(limit), &payload).unwrap();
        prop_assert_eq!(python_sdk_reassemble(&bytes), payload.clone());
        prop_assert_eq!(reassemble(&bytes, &[]), payload);
    }

    /// Any CR is refused, at its position, in both modes.
    #[test]
    fn carriage_return_is_refused(prefix in "[a-z]{0,20}", suffix in "[a-z\r\n]{0,20}") {
        let payload = format!("{prefix}\r{suffix}");
        for chunker in [Chunker::new(), Chunker::new().strip_safe(false)] {
            prop_assert_eq!(
                chunker.chunk(payload.clone()).unwrap_err(),
                ChunkError::CarriageReturn { position: prefix.len() }
            );
        }
    }
}

/// Every multi-byte character at every position relative to every boundary: the payload is
/// `offset` ASCII bytes followed by characters of 2, 3 and 4 bytes, for each limit 4..=16.
#[test]
fn multibyte_characters_at_every_boundary_position() {
    for ch in ['é', '€', '😀'] {
        for limit in 4..=16 {
            for offset in 0..limit {
                let payload = format!("{}{}", "a".repeat(offset), ch.to_string().repeat(40));
                let chunker = Chunker::new().max_chunk(limit);
                for piece in chunker.chunk(payload.clone()).unwrap() {
                    assert!(piece.data().len() <= limit);
                    assert!(!piece.data().contains('\u{fffd}'));
                }
                let bytes = wire(chunker, &payload).unwrap();
                assert_eq!(
                    reassemble(&bytes, &[1, 7, 13]),
                    payload,
                    "{ch} {limit} {offset}"
                );
                assert_eq!(python_sdk_reassemble(&bytes), payload);
            }
        }
    }
}

/// LF survives anywhere, including as the first or last byte of a piece, and a run of LFs.
#[test]
fn line_feeds_survive_at_and_around_boundaries() {
    for limit in 4..=9 {
        let payload = "ab\ncd\n\nefgh\nij\n\n\nk\n";
        let chunker = Chunker::new().max_chunk(limit);
        let bytes = wire(chunker, payload).unwrap();
        assert_eq!(reassemble(&bytes, &[]), payload);
        assert_eq!(python_sdk_reassemble(&bytes), payload);
    }
}

/// The documented behaviour for pretty-printed JSON: refused by default (the Python client
/// would strip the indentation), sent exactly with `strip_safe(false)` to WHATWG clients.
#[test]
fn pretty_printed_json_is_refused_by_default_and_exact_when_allowed() {
    let pretty = "{\n  \"ok\": true\n}";
    assert_eq!(
        Chunker::new().chunk(pretty).unwrap_err(),
        ChunkError::LeadingWhitespace { position: 2 }
    );
    let bytes = wire(Chunker::new().strip_safe(false).max_chunk(5), pretty).unwrap();
    assert_eq!(reassemble(&bytes, &[3]), pretty);
    // What the Python client would have made of it: same JSON value, different bytes.
    assert_eq!(python_sdk_reassemble(&bytes), "{\n\"ok\": true\n}");
}

/// A realistic ORS result: about 17 000 bytes of mixed-script text as compact JSON.
#[test]
fn large_ors_result_is_chunks_then_end_of_at_most_4096_bytes() {
    let text = "Grüße, 世界! 😀 ".repeat(700);
    let payload = format!(
        "{{\"ok\":true,\"output\":{{\"blocks\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"metadata\":null,\"reward\":1.0,\"finished\":true}}}}"
    );
    assert!(payload.len() > 3 * 4096);
    let pieces: Vec<_> = Chunker::new().chunk(payload.clone()).unwrap().collect();
    let (last, rest) = pieces.split_last().unwrap();
    assert!(last.is_end() && rest.iter().all(|p| !p.is_end()));
    assert!(pieces.iter().all(|p| p.data().len() <= 4096));
    assert!(pieces.iter().all(|p| !p.data().starts_with(' ')));
    let bytes = wire(Chunker::new(), &payload).unwrap();
    assert_eq!(python_sdk_reassemble(&bytes), payload);
}

#[test]
fn reassembler_rejects_a_chunk_after_end_and_foreign_events() {
    let ev = |t: &str, d: &str| {
        Event::builder()
            .event(t.to_owned())
            .unwrap()
            .data(d.to_owned())
            .build()
    };
    let mut r = Reassembler::new();
    assert_eq!(r.push(&ev("chunk", "a")), Ok(None));
    assert_eq!(r.push(&ev("end", "b")).unwrap().unwrap(), "ab");
    assert_eq!(r.push(&ev("chunk", "c")), Err(ReassembleError::AfterEnd));
    // Sticky.
    assert_eq!(r.push(&ev("end", "")), Err(ReassembleError::AfterEnd));

    let mut r = Reassembler::new();
    assert_eq!(
        r.push(&ev("task_id", "t")),
        Err(ReassembleError::UnexpectedEvent)
    );
    assert_eq!(
        r.push(&Event::message("x")),
        Err(ReassembleError::UnexpectedEvent)
    );
    r.reset();
    assert_eq!(r.push(&ev("end", "")).unwrap().unwrap(), "");
}

#[test]
fn reassembler_cap_counts_every_byte_and_reports_the_size() {
    let chunk = Event::builder()
        .event("chunk")
        .unwrap()
        .data("x".repeat(4096))
        .build();
    let mut r = Reassembler::new().max_size(10_000);
    assert_eq!(r.push(&chunk), Ok(None));
    assert_eq!(r.push(&chunk), Ok(None));
    assert_eq!(
        r.push(&chunk),
        Err(ReassembleError::TooLarge {
            limit: 10_000,
            size: 12_288
        })
    );
    assert!(r.is_empty() || r.len() == 8192);
}

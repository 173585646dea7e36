//! One test per rule of the WHATWG HTML "interpretation of the event stream", each named
//! after the rule it checks, plus the specification's own examples.

mod support;

use ssekit::decode::Mode;
use ssekit::{Config, Decoder, Frame, StreamEnd};
use support::{data, decode, decode_pieces, decode_with, events};

fn ev(t: &str, id: Option<&str>, d: &str) -> (String, Option<String>, String) {
    (t.to_string(), id.map(str::to_string), d.to_string())
}

#[test]
fn lf_cr_and_crlf_each_end_a_line() {
    assert_eq!(data(&decode(b"data: a\n\n")), ["a"]);
    assert_eq!(data(&decode(b"data: a\r\r")), ["a"]);
    assert_eq!(data(&decode(b"data: a\r\n\r\n")), ["a"]);
    assert_eq!(
        data(&decode(b"data: a\rdata: b\ndata: c\r\n\n")),
        ["a\nb\nc"]
    );
}

#[test]
fn cr_at_end_of_one_chunk_and_lf_at_start_of_next_are_one_line_ending() {
    // Taken as two line endings, "data: a\r" + "\n" would be a blank line and dispatch early.
    let out = decode_pieces(
        Config::default(),
        [&b"data: a\r"[..], b"\ndata: b\r", b"\n\r", b"\n"],
    )
    .unwrap();
    assert_eq!(data(&out.frames), ["a\nb"]);
    assert_eq!(out.end, StreamEnd::Clean);
}

#[test]
fn cr_cr_is_two_line_endings_and_dispatches_even_at_end_of_stream() {
    // eventsource-stream lost an event closed by \r\r at end of stream.
    let out = decode_pieces(Config::default(), [&b"data: a\r\r"[..]]).unwrap();
    assert_eq!(data(&out.frames), ["a"]);
    assert_eq!(out.end, StreamEnd::Clean);
}

#[test]
fn cr_lf_split_across_many_empty_and_single_byte_feeds() {
    let mut dec = Decoder::new();
    let mut frames = Vec::new();
    for piece in [&b"data: x\r"[..], b"", b"\n", b"\r", b"", b"\n"] {
        dec.feed_slice(piece).unwrap();
        while let Some(f) = dec.next_frame().unwrap() {
            frames.push(f);
        }
    }
    assert_eq!(data(&frames), ["x"]);
}

#[test]
fn bom_is_stripped_at_the_very_start_of_the_stream() {
    assert_eq!(data(&decode(b"\xEF\xBB\xBFdata: a\n\n")), ["a"]);
}

#[test]
fn bom_split_across_feeds_is_still_stripped() {
    let pieces = [&b"\xEF"[..], b"\xBB", b"\xBF", b"data: a\n\n"];
    assert_eq!(
        data(&decode_pieces(Config::default(), pieces).unwrap().frames),
        ["a"]
    );
}

#[test]
fn bom_is_stripped_only_once_and_only_at_the_start() {
    // A second BOM is part of the field name, which makes the field unknown.
    assert!(decode(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n").is_empty());
    assert!(decode(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n").len() == 1);
    // In a value it is kept.
    assert_eq!(data(&decode(b"data: \xEF\xBB\xBFa\n\n")), ["\u{FEFF}a"]);
}

#[test]
fn partial_bom_followed_by_other_bytes_is_content_decoded_as_u_fffd() {
    // EF BB then ':' : not a BOM. EF BB is an invalid sequence: one U+FFFD in the field name.
    assert!(decode(b"\xEF\xBB: x\n\ndata: b\n\n").len() == 1);
    let pieces = [&b"\xEF"[..], b"\xBBdata: a\n\n"];
    let out = decode_pieces(Config::default(), pieces).unwrap();
    assert!(
        out.frames.is_empty(),
        "field name is U+FFFD + data: unknown"
    );
    assert_eq!(out.end, StreamEnd::Clean);
}

#[test]
fn lines_starting_with_a_colon_are_comments() {
    let frames = decode(b": hello\n:\n:  two spaces\ndata: x\n\n");
    assert_eq!(
        frames[..3],
        [
            Frame::Comment("hello".into()),
            Frame::Comment("".into()),
            Frame::Comment(" two spaces".into())
        ]
    );
    assert_eq!(data(&frames), ["x"]);
}

#[test]
fn exactly_one_leading_space_is_removed_from_the_value() {
    assert_eq!(data(&decode(b"data:x\n\n")), ["x"]);
    assert_eq!(data(&decode(b"data: x\n\n")), ["x"]);
    assert_eq!(data(&decode(b"data:  x\n\n")), [" x"]);
    assert_eq!(data(&decode(b"data:\tx\n\n")), ["\tx"]);
    assert_eq!(data(&decode(b"data: x \n\n")), ["x "]);
}

#[test]
fn only_the_first_colon_separates_name_and_value() {
    assert_eq!(data(&decode(b"data: a: b:c\n\n")), ["a: b:c"]);
}

#[test]
fn a_line_without_a_colon_is_a_field_with_an_empty_value() {
    // "data" alone appends an empty line: the data buffer is "\n", not empty, so it dispatches.
    assert_eq!(data(&decode(b"data\n\n")), [""]);
    assert_eq!(data(&decode(b"data\ndata\n\n")), ["\n"]);
    // "event" alone sets an empty type, which dispatches as "message".
    assert_eq!(
        events(&decode(b"event: x\nevent\ndata: d\n\n")),
        [ev("message", None, "d")]
    );
}

#[test]
fn field_names_are_case_sensitive_and_unknown_fields_are_ignored() {
    let frames = decode(b"Data: no\nfoo: bar\nretryx: 1\ndata: yes\nx\n\n");
    assert_eq!(data(&frames), ["yes"]);
    assert_eq!(frames.len(), 1);
}

#[test]
fn data_lines_are_joined_with_lf_and_the_trailing_lf_removed() {
    assert_eq!(data(&decode(b"data: a\ndata: b\ndata:\n\n")), ["a\nb\n"]);
}

#[test]
fn an_event_with_an_empty_data_buffer_is_not_dispatched_but_its_id_updates_the_last_event_id() {
    let out = decode_with(Config::default(), b"id: 5\nevent: x\n\n");
    assert!(out.frames.is_empty());
    assert_eq!(out.last_event_id, "5");
}

#[test]
fn the_event_type_resets_to_message_after_each_dispatch() {
    let frames = decode(b"event: a\ndata: 1\n\ndata: 2\n\nevent: b\n\ndata: 3\n\n");
    assert_eq!(
        events(&frames),
        [
            ev("a", None, "1"),
            ev("message", None, "2"),
            ev("message", None, "3")
        ]
    );
}

#[test]
fn the_last_value_of_a_repeated_field_wins() {
    let frames = decode(b"event: a\nevent: b\nid: 1\nid: 2\ndata: x\n\n");
    assert_eq!(events(&frames), [ev("b", Some("2"), "x")]);
}

#[test]
fn an_id_containing_nul_is_ignored() {
    let out = decode_with(
        Config::default(),
        b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
    );
    assert_eq!(
        events(&out.frames),
        [ev("message", Some("1"), "a"), ev("message", None, "b")]
    );
    assert_eq!(out.last_event_id, "1");
}

#[test]
fn nul_in_data_and_event_type_is_kept() {
    assert_eq!(
        events(&decode(b"event: a\x00b\ndata: c\x00d\n\n")),
        [ev("a\0b", None, "c\0d")]
    );
}

#[test]
fn an_empty_id_resets_the_last_event_id() {
    let out = decode_with(Config::default(), b"id: 1\ndata: a\n\nid\ndata: b\n\n");
    assert_eq!(out.last_event_id, "");
    assert_eq!(events(&out.frames)[1], ev("message", Some(""), "b"));
}

#[test]
fn a_set_last_event_id_is_kept_until_the_stream_sets_one_and_loses_to_a_pending_id_line() {
    let mut dec = Decoder::new();
    dec.set_last_event_id("41".into());
    dec.feed_slice(b"data: a\n\n").unwrap();
    assert!(matches!(dec.next_frame().unwrap(), Some(Frame::Event(e)) if e.id().is_none()));
    assert_eq!(dec.last_event_id(), "41");
    // Set while a block with an `id:` line is open: the block's id wins when it ends.
    dec.feed_slice(b"id: 42\ndata: b").unwrap();
    assert!(dec.next_frame().unwrap().is_none());
    dec.set_last_event_id("7".into());
    assert_eq!(dec.last_event_id(), "7");
    dec.feed_slice(b"\n\n").unwrap();
    assert!(matches!(dec.next_frame().unwrap(), Some(Frame::Event(e)) if e.id() == Some("42")));
    assert_eq!(dec.last_event_id(), "42");
    // A reset keeps it, as browsers do across reconnects.
    dec.set_last_event_id("9".into());
    dec.reset();
    assert_eq!(dec.last_event_id(), "9");
}

#[test]
fn the_last_event_id_persists_across_events_without_an_id() {
    let mut dec = Decoder::new();
    dec.feed_slice(b"id: 1\ndata: a\n\ndata: b\n\n").unwrap();
    let Some(Frame::Event(a)) = dec.next_frame().unwrap() else {
        panic!()
    };
    assert_eq!((a.id(), dec.last_event_id()), (Some("1"), "1"));
    let Some(Frame::Event(b)) = dec.next_frame().unwrap() else {
        panic!()
    };
    assert_eq!((b.id(), dec.last_event_id()), (None, "1"));
}

#[test]
fn the_last_event_id_is_committed_at_the_blank_line_not_at_the_id_line() {
    let mut dec = Decoder::new();
    dec.feed_slice(b"id: 1\ndata: a\n").unwrap();
    assert!(dec.next_frame().unwrap().is_none());
    assert_eq!(dec.last_event_id(), "");
    dec.feed_slice(b"\n").unwrap();
    assert!(dec.next_frame().unwrap().is_some());
    assert_eq!(dec.last_event_id(), "1");
}

#[test]
fn retry_applies_only_when_the_value_is_ascii_digits() {
    let frames =
        decode(b"retry: 3000\nretry: 1.5\nretry: -1\nretry:  7\nretry: 12a\nretry:\nretry:0\n\n");
    assert_eq!(frames, [Frame::Retry(3000), Frame::Retry(0)]);
}

#[test]
fn retry_with_one_leading_space_is_accepted() {
    // async-sse and sse-codec ignored `retry: 3000` because they did not strip the space first.
    assert_eq!(decode(b"retry: 3000\n"), [Frame::Retry(3000)]);
}

#[test]
fn retry_beyond_u64_saturates() {
    assert_eq!(
        decode(b"retry: 123456789012345678901234567890\n"),
        [Frame::Retry(u64::MAX)]
    );
}

#[test]
fn a_retry_only_block_is_surfaced() {
    // eventsource-stream dropped a block that only set retry.
    assert_eq!(decode(b"retry: 10\n\n"), [Frame::Retry(10)]);
}

#[test]
fn an_incomplete_event_at_end_of_stream_is_discarded() {
    let out = decode_with(Config::default(), b"data: a\n\ndata: b\n");
    assert_eq!(data(&out.frames), ["a"]);
    assert_eq!(
        out.end,
        StreamEnd::Truncated {
            unterminated_line: 0,
            open_event: true
        }
    );
    let out = decode_with(Config::default(), b"data: a\n\ndata: b");
    assert_eq!(
        out.end,
        StreamEnd::Truncated {
            unterminated_line: 7,
            open_event: false
        }
    );
}

#[test]
fn an_id_in_an_incomplete_final_event_does_not_update_the_last_event_id() {
    let out = decode_with(Config::default(), b"id: 1\ndata: a\n\nid: 2\ndata: b\n");
    assert_eq!(out.last_event_id, "1");
}

#[test]
fn a_stream_ending_after_comments_only_ends_cleanly() {
    assert_eq!(
        decode_with(Config::default(), b": a\n: b\n").end,
        StreamEnd::Clean
    );
    assert_eq!(decode_with(Config::default(), b"").end, StreamEnd::Clean);
}

#[test]
fn invalid_utf8_is_decoded_with_u_fffd_replacement_as_a_browser_would() {
    // One bad byte must not stall the stream (eventsource-stream buffered everything after it).
    let frames = decode(b"data: a\xFFb\n\ndata: \xE2\x82\n\nevent: \xC0\ndata: ok\n\n");
    assert_eq!(
        events(&frames),
        [
            ev("message", None, "a\u{FFFD}b"),
            ev("message", None, "\u{FFFD}"),
            ev("\u{FFFD}", None, "ok")
        ]
    );
}

#[test]
fn a_multibyte_character_split_across_feeds_is_reassembled() {
    let bytes = "data: é€😀\n\n".as_bytes();
    for cut in 0..bytes.len() {
        let out = decode_pieces(Config::default(), [&bytes[..cut], &bytes[cut..]]).unwrap();
        assert_eq!(data(&out.frames), ["é€😀"], "cut at {cut}");
    }
}

#[test]
fn raw_mode_surfaces_dataless_blocks_and_browser_mode_drops_them() {
    let stream = b"event: ping\n\nid: 3\n\nretry: 5\n\n: c\n\n\n\n";
    let browser = decode_with(Config::default(), stream);
    assert_eq!(
        browser.frames,
        [Frame::Retry(5), Frame::Comment("c".into())]
    );
    let raw = decode_with(Config::default().mode(Mode::Raw), stream);
    let kinds: Vec<_> = raw
        .frames
        .iter()
        .map(|f| match f {
            Frame::Dataless(e) => format!("dataless {} {:?}", e.event_type(), e.id()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "dataless ping None",
            "dataless message Some(\"3\")",
            "Retry(5)",
            "Comment(\"c\")"
        ]
    );
    assert_eq!(raw.last_event_id, "3");
}

#[test]
fn whatwg_example_stock_ticker_multiline_data() {
    assert_eq!(
        data(&decode(b"data: YHOO\ndata: +2\ndata: 10\n\n")),
        ["YHOO\n+2\n10"]
    );
}

#[test]
fn whatwg_example_comments_ids_and_spaces() {
    let stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n";
    let out = decode_with(Config::default(), stream);
    assert_eq!(
        events(&out.frames),
        [
            ev("message", Some("1"), "first event"),
            ev("message", Some(""), "second event")
        ]
    );
    // The third event has no blank line after it: discarded at end of stream.
    assert_eq!(
        out.end,
        StreamEnd::Truncated {
            unterminated_line: 0,
            open_event: true
        }
    );
    let out = decode_with(Config::default(), &[&stream[..], b"\n"].concat());
    assert_eq!(data(&out.frames)[2], " third event");
    assert_eq!(out.last_event_id, "");
}

#[test]
fn whatwg_example_empty_data_lines() {
    let out = decode_with(Config::default(), b"data\n\ndata\ndata\n\ndata:");
    assert_eq!(data(&out.frames), ["", "\n"]);
}

#[test]
fn whatwg_example_space_after_colon_is_optional() {
    assert_eq!(
        data(&decode(b"data:test\n\ndata: test\n\n")),
        ["test", "test"]
    );
}

#[test]
fn whatwg_example_event_types() {
    let stream =
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n";
    assert_eq!(
        events(&decode(stream)),
        [
            ev("add", None, "73857293"),
            ev("remove", None, "2153"),
            ev("add", None, "113411")
        ]
    );
}

#[test]
fn reset_starts_a_new_stream_and_keeps_the_last_event_id() {
    let mut dec = Decoder::new();
    dec.feed_slice(b"id: 7\ndata: a\n\ndata: partial").unwrap();
    while dec.next_frame().unwrap().is_some() {}
    dec.reset();
    // A new stream may start with a BOM again; the partial line is gone.
    dec.feed_slice(b"\xEF\xBB\xBFdata: b\n\n").unwrap();
    let Some(Frame::Event(b)) = dec.next_frame().unwrap() else {
        panic!()
    };
    assert_eq!((b.data(), dec.last_event_id()), ("b", "7"));
    assert_eq!(dec.finish(), StreamEnd::Clean);
}

#[test]
fn finish_reports_undrained_input_as_truncation_never_silently() {
    let mut dec = Decoder::new();
    dec.feed_slice(b"data: a\n\n").unwrap();
    assert_eq!(
        dec.finish(),
        StreamEnd::Truncated {
            unterminated_line: 9,
            open_event: false
        }
    );
}

#[test]
fn single_line_data_fed_as_bytes_is_a_slice_of_the_input() {
    let input = bytes::Bytes::from_static(b"event: t\ndata: payload\n\n");
    let mut dec = Decoder::new();
    dec.feed(input.clone()).unwrap();
    let Some(Frame::Event(ev)) = dec.next_frame().unwrap() else {
        panic!()
    };
    let range = input.as_ptr_range();
    assert!(
        range.contains(&ev.data_bytes().as_bytes().as_ptr()),
        "data was copied"
    );
    assert!(
        range.contains(&ev.event_field().unwrap().as_bytes().as_ptr()),
        "type was copied"
    );
}

/// Every frame and error of `pieces`, in order; reading goes on after an error in `Resync`.
fn frames_and_errors(config: Config, pieces: &[&[u8]]) -> Vec<String> {
    frames_and_errors_as(config, pieces, false)
}

/// [`frames_and_errors`], frames drained with `next_frame_ref` when `borrow`.
fn frames_and_errors_as(config: Config, pieces: &[&[u8]], borrow: bool) -> Vec<String> {
    let mut decoder = Decoder::with_config(config);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.feed_slice(piece).unwrap();
        loop {
            let next = if borrow {
                decoder.next_frame_ref().map(|f| f.map(|f| f.to_frame()))
            } else {
                decoder.next_frame()
            };
            match next {
                Ok(Some(frame)) => out.push(format!("{frame:?}")),
                Ok(None) => break,
                Err(err) if config.get_on_limit() == ssekit::decode::OnLimit::Resync => {
                    out.push(format!("{err:?}"))
                }
                Err(err) => {
                    out.push(format!("{err:?}"));
                    return out;
                }
            }
        }
    }
    out.push(format!(
        "{:?} {}",
        decoder.finish(),
        decoder.last_event_id()
    ));
    out
}

#[test]
fn two_lines_cut_in_one_event_mean_the_same_borrowed_or_owned() {
    // A line cut by a piece boundary is held for borrowed frames (`next_frame_ref`) and
    // frozen for owned ones; a second cut line in the same event takes the held buffer, so
    // the value of the first must move out first. Every pair of cuts, both ways of draining.
    let stream: &[u8] = b"event: first type\ndata: first line\n: a comment\nid: 42\n\
        data: second line\nretry: 10\n\ndata: next\n\n";
    for config in [Config::default(), Config::default().mode(Mode::Raw)] {
        let whole = frames_and_errors(config, &[stream]);
        assert!(whole.len() >= 4, "{whole:?}");
        for borrow in [false, true] {
            for first in 0..=stream.len() {
                for second in first..=stream.len() {
                    let pieces = [&stream[..first], &stream[first..second], &stream[second..]];
                    let split = frames_and_errors_as(config, &pieces, borrow);
                    assert_eq!(
                        split, whole,
                        "cuts at {first} and {second}, borrowed: {borrow}"
                    );
                }
            }
        }
    }
}

#[test]
fn lines_read_whole_and_lines_joined_across_pieces_mean_the_same() {
    // The decoder reads lines that lie whole in a piece on a fast path (blank lines,
    // comments, `data:`, `event:`) and lines cut by a piece boundary on the general one. Every
    // cut of these lines must give the frames and errors of the uncut stream, in both modes
    // and both limit policies.
    let stream: &[u8] = b":c\n: c2\n:\ndata:a\ndata: b\ndata\ndata:\ndata:  two spaces\n\n\
        event:e\nevent: \ndata:x\r\n\r\nevent: t\rdata: y\r\rid: 7\ndata:z\n\nevent:only\n\n\
        datax: no\ndat: no\ndata: past the limit ...........\n\ndata:after\n\n";
    let resync = Config::default()
        .limits(ssekit::Limits::default().max_event(20))
        .on_limit(ssekit::decode::OnLimit::Resync);
    for config in [
        Config::default(),
        Config::default().comments(false),
        Config::default().mode(Mode::Raw),
        resync,
    ] {
        let whole = frames_and_errors(config, &[stream]);
        assert!(whole.len() >= 7, "{whole:?}");
        for borrow in [false, true] {
            for cut in 0..=stream.len() {
                let split = frames_and_errors_as(config, &[&stream[..cut], &stream[cut..]], borrow);
                assert_eq!(split, whole, "cut at {cut}, borrowed: {borrow}");
            }
        }
    }
    let resynced = frames_and_errors(resync, &[stream]);
    assert!(
        resynced.iter().any(|f| f.starts_with("EventTooLarge")),
        "{resynced:?}"
    );
    assert!(
        resynced.iter().any(|f| f.contains("\"after\"")),
        "{resynced:?}"
    );
}

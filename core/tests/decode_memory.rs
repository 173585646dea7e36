//! Memory is bounded by `Limits`, measured with a counting global allocator: hostile input
//! never makes the decoder hold more than its limits (plus small constant overhead), and a
//! single-line event fed as `Bytes` costs no heap allocation at all.
//!
//! Each test runs alone in this binary (`--test-threads` does not matter: a mutex
//! serializes them) so the counters see only its allocations.

#[path = "support/counting.rs"]
mod counting;

use bytes::Bytes;
use counting::{one_at_a_time, Measured};
use ssekit::decode::OnLimit;
use ssekit::{Config, Decoder, Frame, Limits};

/// Runs `f` and returns the peak heap growth above the starting point, and allocations made.
fn measure(f: impl FnOnce()) -> (usize, usize) {
    let Measured {
        peak, allocations, ..
    } = counting::measure(f);
    (peak, allocations)
}

/// Feeds `piece` `times` times into a Resync decoder with `limits`, draining after each feed;
/// expects exactly one limit error, and returns the peak heap growth while doing it.
fn peak_while_feeding(limits: Limits, piece: &Bytes, times: usize) -> usize {
    let (peak, _) = measure(|| {
        let config = Config::default().limits(limits).on_limit(OnLimit::Resync);
        let mut dec = Decoder::with_config(config);
        let mut errors = 0;
        for _ in 0..times {
            dec.feed(piece.clone()).unwrap();
            loop {
                match dec.next_frame() {
                    Ok(None) => break,
                    Ok(Some(_)) => {}
                    Err(_) => errors += 1,
                }
            }
        }
        assert_eq!(
            errors, 1,
            "one error, then resync skips the rest of the line or event"
        );
    });
    peak
}

/// The buffer at the limit was really built (the counter works), and growth stayed within
/// twice the limit (a buffer briefly holds its old and new allocation while it grows).
fn assert_peak_within(what: &str, peak: usize, limit: usize) {
    eprintln!("{what}: peak heap growth {peak} bytes for a {limit}-byte limit");
    assert!(
        peak >= limit / 2,
        "the counting allocator saw only {peak} bytes"
    );
    assert!(
        peak <= 2 * limit + 64 * 1024,
        "peak {peak} for a {limit}-byte limit"
    );
}

#[test]
fn an_endless_line_in_small_pieces_never_holds_more_than_the_line_limit() {
    let _serial = one_at_a_time();
    let limit = 1 << 20;
    // 16 MiB of one line in 4 KiB pieces: 16x the limit.
    let piece = Bytes::from(vec![b'x'; 4096]);
    let peak = peak_while_feeding(Limits::default().max_line(limit), &piece, 4096);
    assert_peak_within("endless line", peak, limit);
}

#[test]
fn borrowed_lines_near_the_limit_hold_at_most_two_lines() {
    let _serial = one_at_a_time();
    // With `next_frame_ref`, a line that straddled pieces is kept (held) while the next is
    // read: two line buffers, each within `max_line`, one of them briefly doubled as it grows
    // (2.5x the limit measured).
    let limit = 1 << 20;
    let line = [&b"data: "[..], &vec![b'z'; limit - 100], b"\n\n"].concat();
    let stream = Bytes::from(line.repeat(8));
    let (peak, _) = measure(|| {
        let mut dec =
            Decoder::with_config(Config::default().limits(Limits::default().max_line(limit)));
        let mut events = 0;
        for at in (0..stream.len()).step_by(4096) {
            dec.feed(stream.slice(at..(at + 4096).min(stream.len())))
                .unwrap();
            while let Some(frame) = dec.next_frame_ref().unwrap() {
                if let ssekit::FrameRef::Event(ev) = frame {
                    assert_eq!(ev.data().len(), limit - 100);
                    events += 1;
                }
            }
        }
        assert_eq!(events, 8);
    });
    eprintln!("held lines: peak heap growth {peak} bytes for a {limit}-byte line limit");
    assert!(
        peak >= limit,
        "the counting allocator saw only {peak} bytes"
    );
    assert!(
        peak <= 4 * limit + 64 * 1024,
        "peak {peak} for a {limit}-byte limit"
    );
}

#[test]
fn endless_multiline_data_never_holds_more_than_the_event_limit() {
    let _serial = one_at_a_time();
    let limit = 1 << 20;
    // 10 MB of 100-byte data lines with no blank line: 10x the limit.
    let line = Bytes::from([&b"data: "[..], &[b'y'; 100], b"\n"].concat());
    let peak = peak_while_feeding(Limits::default().max_event(limit), &line, 100_000);
    assert_peak_within("endless data", peak, limit);
}

#[test]
fn single_line_events_fed_as_bytes_allocate_nothing_per_event() {
    let _serial = one_at_a_time();
    let block =
        b"event: response.output_text.delta\nid: 12\ndata: {\"delta\":\"token\"}\n\n: ping\n\n";
    let run = |events: usize| {
        let stream = Bytes::from(block.repeat(events));
        let mut seen = 0;
        let (_, allocations) = measure(|| {
            let mut dec = Decoder::new();
            dec.feed(stream.clone()).unwrap();
            while let Some(frame) = dec.next_frame().unwrap() {
                if let Frame::Event(ev) = frame {
                    seen += usize::from(ev.data().starts_with('{'));
                }
            }
        });
        assert_eq!(seen, events);
        allocations
    };
    run(10); // warm-up: one-time process-wide allocations (memchr's CPU feature detection, ...)
    let (small, large) = (run(1_000), run(100_000));
    // A fixed handful (decoder queue, Bytes' one-time promotion to shared storage), none per event.
    eprintln!("allocations: {small} for 1000 events, {large} for 100000 events");
    assert!(small >= 1, "the counting allocator saw nothing");
    assert_eq!(
        small, large,
        "allocations grew with the event count: {small} vs {large}"
    );
    assert!(small <= 8, "{small} allocations");
}

/// Allocations made while `block`, repeated `events` times, is fed as `piece_len`-byte slices
/// of one `Bytes` and drained with `next_frame_ref` (`by_ref`) or `next_frame`, each owned
/// frame dropped at once; every event's data must pass `check`.
fn allocations_reading(
    block: &[u8],
    piece_len: usize,
    events: usize,
    check: fn(&str) -> bool,
    by_ref: bool,
) -> usize {
    let stream = Bytes::from(block.repeat(events));
    let pieces: Vec<Bytes> = (0..stream.len())
        .step_by(piece_len)
        .map(|at| stream.slice(at..(at + piece_len).min(stream.len())))
        .collect();
    let mut seen = 0;
    let (_, allocations) = measure(|| {
        let mut dec = Decoder::new();
        for piece in &pieces {
            dec.feed(piece.clone()).unwrap();
            if by_ref {
                while let Some(frame) = dec.next_frame_ref().unwrap() {
                    if let ssekit::FrameRef::Event(ev) = frame {
                        seen += usize::from(check(ev.data()));
                    }
                }
            } else {
                while let Some(frame) = dec.next_frame().unwrap() {
                    if let Frame::Event(ev) = frame {
                        seen += usize::from(check(ev.data()));
                    }
                }
            }
        }
    });
    assert_eq!(seen, events);
    allocations
}

/// After a warm-up, `run` allocates as much for 100x the events as for 1x: nothing per event.
fn assert_nothing_per_event(what: &str, run: impl Fn(usize) -> usize, small: usize) {
    run(10);
    let (few, many) = (run(small), run(100 * small));
    eprintln!(
        "{what}: {few} allocations for {small} events, {many} for {}",
        100 * small
    );
    assert!(few >= 1, "the counting allocator saw nothing");
    assert_eq!(few, many, "{what}: allocations grew with the event count");
    assert!(few <= 8, "{what}: {few} allocations");
}

#[test]
fn multi_line_events_read_by_reference_allocate_nothing_per_event() {
    let _serial = one_at_a_time();
    // `next_frame` copies joined data out once per event; `next_frame_ref` lends the joining
    // buffer itself, so after it has grown once nothing is allocated, whatever the pieces.
    let block = b"event: row\ndata: first line\r\ndata: second line\r\ndata: third\r\n\r\n: ka\n\n";
    let check: fn(&str) -> bool = |data| data == "first line\nsecond line\nthird";
    let run = |events| allocations_reading(block, 1460, events, check, true);
    assert_nothing_per_event("multi-line events", run, 1_000);
}

#[test]
fn events_read_by_reference_from_small_pieces_allocate_nothing_per_event() {
    let _serial = one_at_a_time();
    // Lines that straddle pieces are joined in the line buffer; a borrowed event lets go of
    // its share of that buffer when the decoder is next used (even by a call that finds
    // nothing to do), so the buffer is reused instead of reallocated per line.
    let block = b"data: {\"type\":\"response.output_text.delta\",\"delta\":\"tok\"}\n\n";
    let check: fn(&str) -> bool = |data| data.ends_with("\"tok\"}");
    for piece_len in [1, 7, 10] {
        let run = |events| allocations_reading(block, piece_len, events, check, true);
        assert_nothing_per_event(&format!("{piece_len}-byte pieces"), run, 200);
    }
}

#[test]
fn events_with_a_type_line_before_long_data_in_small_pieces_allocate_nothing_per_event() {
    let _serial = one_at_a_time();
    // An ORS `chunk` event in tiny pieces: its `event:` value points into the lines read
    // while its long data line is still arriving. Those lines used to be detached whenever
    // the data line needed room, leaving the buffer shared and each growth a fresh
    // allocation: three per 4 KiB event, with borrowed frames and owned ones alike.
    let mut block = b"event: chunk\ndata: ".to_vec();
    block.extend((0..600).map(|i| b'a' + (i % 26) as u8));
    block.extend_from_slice(b"\n\n");
    let check: fn(&str) -> bool = |data| data.len() == 600 && data.starts_with("abc");
    for piece_len in [1, 7, 10] {
        for by_ref in [true, false] {
            let run = |events| allocations_reading(&block, piece_len, events, check, by_ref);
            let what = format!("{piece_len}-byte pieces, by_ref {by_ref}");
            assert_nothing_per_event(&what, run, 20);
        }
    }
}

#[test]
fn small_slices_allocate_per_4_kib_of_input_not_per_line() {
    let _serial = one_at_a_time();
    // `feed_slice` copies tiny pieces into one staging buffer, and lines cut by them are
    // joined in one line buffer. Both grow to at least 4 KiB: a buffer that a piece or a frame
    // still shares cannot grow in place, and growing it by just the bytes added would
    // allocate once per piece or line (44 times per 20-line event in 10-byte pieces). So at
    // most one allocation per buffer per 4 KiB of input.
    let blocks: [&[u8]; 2] = [
        b": keep-alive\ndata: {\"seq\":1,\"ok\":true}\n\n",
        b"data: first line of sixty bytes, more or less, of event data\r\n\
          data: second line of sixty bytes, more or less, of event data\r\n\r\n",
    ];
    for block in blocks {
        for piece_len in [1, 10] {
            for by_ref in [false, true] {
                let stream = block.repeat(2_000);
                let (_, allocations) = measure(|| {
                    let mut dec = Decoder::new();
                    let mut events = 0;
                    for piece in stream.chunks(piece_len) {
                        dec.feed_slice(piece).unwrap();
                        if by_ref {
                            while let Some(frame) = dec.next_frame_ref().unwrap() {
                                events += usize::from(matches!(frame, ssekit::FrameRef::Event(_)));
                            }
                        } else {
                            while let Some(frame) = dec.next_frame().unwrap() {
                                events += usize::from(matches!(frame, ssekit::Frame::Event(_)));
                            }
                        }
                    }
                    assert_eq!(events, 2_000);
                });
                // Owned frames of multi-line events copy their joined data out: one each.
                let joined = if by_ref || !block.starts_with(b"data: first") {
                    0
                } else {
                    2_000
                };
                let budget = 2 * stream.len() / 4096 + 8 + joined;
                eprintln!(
                    "{} bytes in {piece_len}-byte slices, by_ref {by_ref}: {allocations} \
                     allocations (budget {budget})",
                    stream.len()
                );
                assert!(
                    allocations <= budget,
                    "{allocations} allocations for {} bytes in {piece_len}-byte slices \
                     (by_ref {by_ref})",
                    stream.len()
                );
            }
        }
    }
}

#[test]
fn tiny_pieces_hold_no_more_than_the_current_event_whatever_the_stream_length() {
    let _serial = one_at_a_time();
    // Tiny pieces are appended to one buffer whose lines are read in place; the lines read are
    // let go as it fills (compacted, or frozen into the values still pointing at them, here
    // the `event:` line of the open event). A 2 MiB stream must not make it grow with the stream.
    let block = b"event: tick\n: keep-alive\ndata: {\"seq\":1,\"ok\":true}\n\n";
    let stream = block.repeat((2 << 20) / block.len());
    for piece_len in [1, 10, 16] {
        for by_ref in [false, true] {
            let (peak, _) = measure(|| {
                let mut dec = Decoder::new();
                let mut events = 0;
                for piece in stream.chunks(piece_len) {
                    dec.feed(Bytes::copy_from_slice(piece)).unwrap();
                    if by_ref {
                        while let Some(frame) = dec.next_frame_ref().unwrap() {
                            if let ssekit::FrameRef::Event(ev) = frame {
                                assert_eq!(ev.event_type(), "tick");
                                events += 1;
                            }
                        }
                    } else {
                        while let Some(frame) = dec.next_frame().unwrap() {
                            if let ssekit::Frame::Event(ev) = frame {
                                assert_eq!(ev.event_type(), "tick");
                                events += 1;
                            }
                        }
                    }
                }
                assert_eq!(events, stream.len() / block.len());
            });
            eprintln!("{piece_len}-byte pieces, by_ref {by_ref}: peak heap growth {peak} bytes");
            assert!(peak <= 64 << 10, "{piece_len}-byte pieces: peak {peak}");
        }
    }
}

/// Decoded data shares the buffer it was read in. A result reassembled from `chunk` events
/// must not keep those buffers: a server that puts one byte of `chunk` into each large
/// read would otherwise make each byte of the result hold a read buffer alive (1,000
/// one-byte chunks held 125 MiB), far past the result's cap.
#[test]
fn an_ors_result_holds_its_bytes_not_the_buffers_they_were_read_in() {
    use ssekit::profile::ors::ToolCall;
    use ssekit::sequence::Validator;
    let _serial = one_at_a_time();
    let mut validator = Validator::new(ToolCall::new().check_result(false));
    let mut dec = Decoder::new();
    dec.feed(Bytes::from_static(b"event: task_id\ndata: t1\n\n"))
        .unwrap();
    while let Some(frame) = dec.next_frame().unwrap() {
        validator.frame(&frame).unwrap();
    }
    let mut read = b"event: chunk\ndata: x\n\n:".to_vec();
    read.extend(std::iter::repeat_n(b'p', 64 << 10));
    read.push(b'\n');
    let (peak, _) = measure(|| {
        for _ in 0..1000 {
            dec.feed(Bytes::from(read.clone())).unwrap();
            while let Some(frame) = dec.next_frame().unwrap() {
                validator.frame(&frame).unwrap();
            }
        }
    });
    dec.feed(Bytes::from_static(b"event: end\ndata: \n\n"))
        .unwrap();
    while let Some(frame) = dec.next_frame().unwrap() {
        validator.frame(&frame).unwrap();
    }
    let Some(ssekit::profile::ors::Terminal::End(result)) = validator.profile().terminal() else {
        panic!("no result")
    };
    assert_eq!(result.as_str(), "x".repeat(1000));
    eprintln!("1,000 one-byte chunks in 64 KiB reads: peak heap growth {peak} bytes");
    assert!(
        peak >= 64 << 10,
        "the counting allocator saw only {peak} bytes"
    );
    assert!(peak <= 4 * (64 << 10), "peak {peak}");
}

/// The client's record of recent event ids (kept to drop replayed events after a reconnect)
/// holds copies: 256 ids that shared their read buffers would hold 256 of them alive.
#[test]
fn recent_event_ids_hold_their_bytes_not_the_buffers_they_were_read_in() {
    use ssekit::client::{Delivery, Reconnect};
    let _serial = one_at_a_time();
    let mut reconnect = Reconnect::new(Default::default());
    let mut dec = Decoder::new();
    let (peak, _) = measure(|| {
        for n in 0..1000 {
            // One read: the event, then a 64 KiB comment.
            let mut read = format!("id: {n}\ndata: x\n\n:").into_bytes();
            read.resize(read.len() + (64 << 10), b'p');
            read.push(b'\n');
            dec.feed(Bytes::copy_from_slice(&read)).unwrap();
            while let Some(frame) = dec.next_frame().unwrap() {
                if let Some(delivery) = reconnect.handle_frame(&frame) {
                    assert_eq!(delivery, Delivery::Deliver);
                }
            }
        }
    });
    eprintln!("1,000 ids in 64 KiB reads: peak heap growth {peak} bytes");
    assert!(
        peak >= 64 << 10,
        "the counting allocator saw only {peak} bytes"
    );
    // A few reads at most: the one being built and copied, the one the decoder reads, the
    // one the last event id still shares (it is sent on reconnect); not one per recent id.
    assert!(peak <= 8 * (64 << 10), "peak {peak}");
}

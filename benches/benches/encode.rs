//! Encode throughput on the `tokens` and `big-data` workloads: ssekit's `Encoder` against
//! `write!` into a `Vec`, a hand-written `extend_from_slice` encoder, the peers that have an
//! encoder (sse-stream, sse-codec) and a `memcpy` of the finished wire bytes.
//!
//! `cargo bench -p ssekit-benches --bench encode -- --warm-up-time 0.5 --measurement-time 1`
//!
//! Every encoder writes `data: <line>\n` per line and a blank line, so all produce exactly
//! the workload's bytes (checked once before timing). `write!` writes the data as one line,
//! so it does less than the others: it does not look for line breaks in the data. The
//! hand-written encoder looks for them with `memchr2` and splits there, as ssekit must.
//! The peers' encoders consume their event, so their events are cloned outside the timed
//! part (`iter_batched`).
//!
//! Two floors besides `memcpy` of the wire: `memchr2` is the scan every safe encoder must do
//! (each event's data searched for CR and LF, nothing written), and `copy-per-event` writes
//! the wire event by event (`data: `, the data, the blank line) without looking at the data.
//! An encoder cannot beat `memchr2` + `copy-per-event` by much; on `tokens` that sum is
//! already about a third of `write!`.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::io::Write as _;

use bytes::{Bytes, BytesMut};
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use ssekit::{Decoder, Encoder, Event, Frame};
use ssekit_benches::workload::Workload;

fn decoded(wire: &Bytes) -> Vec<Event> {
    let mut decoder = Decoder::new();
    decoder.feed(wire.clone()).expect("feed");
    std::iter::from_fn(|| decoder.next_frame().expect("frame"))
        .filter_map(|frame| match frame {
            Frame::Event(ev) => Some(ev),
            _ => None,
        })
        .collect()
}

fn ssekit(events: &[Event], out: &mut Vec<u8>) {
    let encoder = Encoder::new();
    for ev in events {
        encoder.encode(ev, out).expect("encode");
    }
}

fn write_macro(events: &[Event], out: &mut Vec<u8>) {
    for ev in events {
        write!(out, "data: {}\n\n", ev.data()).expect("write");
    }
}

/// What a careful hand-written encoder does: one `data:` line per line of the data (split
/// at CR, LF and CRLF), then a blank line.
fn extend_from_slice(events: &[Event], out: &mut Vec<u8>) {
    for ev in events {
        let mut rest = ev.data().as_bytes();
        loop {
            let end = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
            let (line, tail) = rest.split_at(end);
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line);
            out.push(b'\n');
            match tail {
                [] => break,
                [b'\r', b'\n', more @ ..] => rest = more,
                [_, more @ ..] => rest = more,
            }
        }
        out.push(b'\n');
    }
}

/// The floor of the scan: each event's data searched for CR and LF.
fn memchr2_only(events: &[Event], out: &mut Vec<u8>) {
    let breaks = events
        .iter()
        .filter(|ev| memchr::memchr2(b'\n', b'\r', ev.data().as_bytes()).is_some())
        .count();
    black_box(breaks);
    black_box(out);
}

/// The floor of the copy: the single-line wire written event by event, no scan.
fn copy_per_event(events: &[Event], out: &mut Vec<u8>) {
    for ev in events {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(ev.data().as_bytes());
        out.extend_from_slice(b"\n\n");
    }
}

fn sse_stream(events: Vec<sse_stream::Sse>, out: &mut Vec<u8>) {
    for ev in events {
        out.extend_from_slice(&ev.encode().expect("sse-stream encode"));
    }
}

fn sse_codec(events: Vec<sse_codec::Event>, out: &mut BytesMut) {
    use futures_codec::Encoder as _;
    let mut codec = sse_codec::SSECodec::default();
    for ev in events {
        codec.encode(ev, out).expect("sse-codec encode");
    }
}

fn bench(c: &mut Criterion) {
    for load in [Workload::Tokens, Workload::BigData] {
        let (bytes, count) = load.stream_for_feed(16384);
        let wire = Bytes::from(bytes);
        let events = decoded(&wire);
        assert_eq!(events.len(), count);
        let stream_events: Vec<sse_stream::Sse> = events
            .iter()
            .map(|ev| sse_stream::Sse::default().data(ev.data()))
            .collect();
        let codec_events: Vec<sse_codec::Event> = events
            .iter()
            .map(|ev| sse_codec::Event::message("message", ev.data(), None))
            .collect();

        // Everyone writes the same bytes.
        let mut out = Vec::with_capacity(wire.len());
        for (name, encode) in [
            ("ssekit", ssekit as fn(&[Event], &mut Vec<u8>)),
            ("write!", write_macro),
            ("extend_from_slice", extend_from_slice),
        ] {
            out.clear();
            encode(&events, &mut out);
            assert!(out == wire, "{name} wrote other bytes");
        }
        out.clear();
        sse_stream(stream_events.clone(), &mut out);
        assert!(out == wire, "sse-stream wrote other bytes");
        let mut codec_out = BytesMut::with_capacity(wire.len());
        sse_codec(codec_events.clone(), &mut codec_out);
        assert!(codec_out == wire, "sse-codec wrote other bytes");

        let mut group = c.benchmark_group(format!("encode/{}", load.name()));
        group.throughput(Throughput::Bytes(wire.len() as u64));
        group.sampling_mode(SamplingMode::Flat);
        for (name, encode) in [
            ("ssekit", ssekit as fn(&[Event], &mut Vec<u8>)),
            ("write!", write_macro),
            ("extend_from_slice", extend_from_slice),
        ] {
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| {
                    out.clear();
                    encode(&events, &mut out);
                    black_box(out.len())
                })
            });
        }
        group.bench_function(BenchmarkId::from_parameter("sse-stream"), |b| {
            b.iter_batched(
                || stream_events.clone(),
                |evs| {
                    out.clear();
                    sse_stream(evs, &mut out);
                    black_box(out.len())
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::from_parameter("sse-codec"), |b| {
            b.iter_batched(
                || codec_events.clone(),
                |evs| {
                    codec_out.clear();
                    sse_codec(evs, &mut codec_out);
                    black_box(codec_out.len())
                },
                BatchSize::LargeInput,
            )
        });
        for (name, floor) in [
            ("memchr2", memchr2_only as fn(&[Event], &mut Vec<u8>)),
            ("copy-per-event", copy_per_event),
        ] {
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| {
                    out.clear();
                    floor(&events, &mut out);
                    black_box(out.len())
                })
            });
        }
        group.bench_function(BenchmarkId::from_parameter("memcpy"), |b| {
            b.iter(|| {
                out.clear();
                out.extend_from_slice(&wire);
                black_box(out.len())
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);

//! Validation overhead: events/s decoding a Responses API `tokens` workload with and without
//! the `responses::Stream` validator (which parses every event's JSON and accumulates text).
//!
//! Beside it, what reading the same JSON costs without any rule, as floors for the profile's
//! part: `serde_json` into `IgnoredAny` (what a consumer usually runs on each event anyway)
//! and `simd-json` building its tape (SIMD structural indexing, the fastest JSON parser
//! family; one tape allocation per event, buffers reused, input copied into a scratch buffer
//! because simd-json parses in place).
//!
//! `cargo bench -p ssekit-benches --bench validation -- --warm-up-time 1 --measurement-time 3`

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

// The plain decode loops (`ssekit`, `ssekit-ref`) are the decode bench's own.
mod common;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ssekit::profile::responses;
use ssekit::sequence::Validator;
use ssekit::{Decoder, Event, Frame};

const DELTAS: usize = 10_000;
/// A TCP segment's worth: how a socket usually hands bytes over.
const FEED: usize = 1460;

fn decode_and_validate(pieces: &[Bytes]) -> usize {
    let mut decoder = Decoder::new();
    let mut validator = Validator::new(responses::Stream::new());
    for piece in pieces {
        decoder.feed(piece.clone()).unwrap();
        while let Some(frame) = decoder.next_frame().unwrap() {
            validator.frame(&frame).unwrap();
        }
    }
    validator.finish().unwrap();
    validator.events() as usize
}

/// `decode_and_validate` on borrowed frames (`Validator::frame_ref`).
fn decode_ref_and_validate(pieces: &[Bytes]) -> usize {
    let mut decoder = Decoder::new();
    let mut validator = Validator::new(responses::Stream::new());
    for piece in pieces {
        decoder.feed(piece.clone()).unwrap();
        while let Some(frame) = decoder.next_frame_ref().unwrap() {
            validator.frame_ref(frame).unwrap();
        }
    }
    validator.finish().unwrap();
    validator.events() as usize
}

fn validate_only(events: &[Event]) -> usize {
    let mut validator = Validator::new(responses::Stream::new());
    for ev in events {
        validator.event(ev).unwrap();
    }
    validator.finish().unwrap();
    validator.profile().text(0).map_or(0, str::len)
}

/// Floor: `serde_json` reads every event's data as JSON (no rule, nothing kept).
fn serde_json_only(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|ev| serde_json::from_str::<serde::de::IgnoredAny>(ev.data()).is_ok())
        .count()
}

/// Floor: `simd-json` parses every event's data into its tape (no rule, nothing kept).
fn simd_json_only(events: &[Event]) -> usize {
    let mut buffers = simd_json::Buffers::default();
    let mut scratch = Vec::new();
    events
        .iter()
        .filter(|ev| {
            scratch.clear();
            scratch.extend_from_slice(ev.data().as_bytes());
            simd_json::to_tape_with_buffers(&mut scratch, &mut buffers).is_ok()
        })
        .count()
}

fn bench(c: &mut Criterion) {
    let (bytes, events) = ssekit_benches::responses_tokens(DELTAS);
    let whole = Bytes::from(bytes);
    let feeds: Vec<Bytes> = whole.chunks(FEED).map(|c| whole.slice_ref(c)).collect();
    let decoded: Vec<Event> = {
        let mut d = Decoder::new();
        d.feed(whole.clone()).unwrap();
        std::iter::from_fn(|| d.next_frame().unwrap())
            .filter_map(|f| match f {
                Frame::Event(ev) => Some(ev),
                _ => None,
            })
            .collect()
    };
    assert_eq!(common::ssekit(&feeds), events);
    assert_eq!(decode_and_validate(&feeds), events);
    assert_eq!(common::ssekit_ref(&feeds), events);
    assert_eq!(decode_ref_and_validate(&feeds), events);

    let mut group = c.benchmark_group("validation/responses_tokens");
    group.throughput(Throughput::Elements(events as u64));
    for (name, pieces) in [("whole", vec![whole.clone()]), ("1460", feeds)] {
        group.bench_with_input(BenchmarkId::new("decode", name), &pieces, |b, p| {
            b.iter(|| common::ssekit(p))
        });
        group.bench_with_input(
            BenchmarkId::new("decode+validate", name),
            &pieces,
            |b, p| b.iter(|| decode_and_validate(p)),
        );
        group.bench_with_input(BenchmarkId::new("decode-ref", name), &pieces, |b, p| {
            b.iter(|| common::ssekit_ref(p))
        });
        group.bench_with_input(
            BenchmarkId::new("decode-ref+validate", name),
            &pieces,
            |b, p| b.iter(|| decode_ref_and_validate(p)),
        );
    }
    assert_eq!(serde_json_only(&decoded), events);
    assert_eq!(simd_json_only(&decoded), events);
    group.bench_function("validate_only", |b| b.iter(|| validate_only(&decoded)));
    group.bench_function("json_only/serde_json", |b| {
        b.iter(|| serde_json_only(&decoded))
    });
    group.bench_function("json_only/simd-json", |b| {
        b.iter(|| simd_json_only(&decoded))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Chunk + reassemble of a 1 MiB ORS tool result, against a `memcpy` of the same bytes.
//!
//! `cargo bench -p ssekit-benches --bench chunk -- --warm-up-time 0.5 --measurement-time 1`
//!
//! - `chunk+reassemble`: `Chunker` (check the payload, cut it into 4096-byte pieces) and
//!   `Reassembler` (collect the pieces, join them into one buffer, check UTF-8).
//! - `chunk+encode+decode+reassemble`: the same with the wire in between: every piece
//!   encoded into one `Vec`, the wire decoded from one `Bytes`, the events reassembled.
//! - `memcpy`: the payload copied into a buffer kept across runs.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ssekit::chunk::{Chunker, Reassembler};
use ssekit::{Decoder, Encoder, Frame, Utf8Bytes};

const SIZE: usize = 1 << 20;

/// A 1 MiB tool result: compact JSON around deterministic ASCII text (no CR, no line that
/// starts with whitespace, so the strip-safe chunker takes it).
fn payload() -> Utf8Bytes {
    let mut text = String::with_capacity(SIZE);
    text.push_str(r#"{"ok":true,"output":{"blocks":[{"type":"text","text":""#);
    let tail = r#""}],"metadata":null,"reward":1.0,"finished":true}}"#;
    let mut n = 0u32;
    while text.len() + tail.len() < SIZE {
        n = n.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let c = b"abcdefghijklmnopqrstuvwxyz .,-0123456789"[(n >> 16) as usize % 40];
        text.push(char::from(c));
    }
    text.push_str(tail);
    Utf8Bytes::from(text)
}

fn chunk_reassemble(payload: &Utf8Bytes) -> Utf8Bytes {
    let mut joined = Reassembler::new();
    for piece in Chunker::new().chunk(payload.clone()).expect("chunk") {
        if let Some(done) = joined.push(&piece.into_event()).expect("push") {
            return done;
        }
    }
    unreachable!("the last piece is an end")
}

fn through_the_wire(payload: &Utf8Bytes) -> Utf8Bytes {
    let encoder = Encoder::new();
    let mut wire = Vec::with_capacity(payload.len() + payload.len() / 128 + 64);
    for piece in Chunker::new().chunk(payload.clone()).expect("chunk") {
        encoder
            .encode(&piece.into_event(), &mut wire)
            .expect("encode");
    }
    let mut decoder = Decoder::new();
    decoder.feed(Bytes::from(wire)).expect("feed");
    let mut joined = Reassembler::new();
    while let Some(frame) = decoder.next_frame().expect("frame") {
        if let Frame::Event(ev) = frame
            && let Some(done) = joined.push(&ev).expect("push")
        {
            return done;
        }
    }
    unreachable!("the last event is an end")
}

fn bench(c: &mut Criterion) {
    let payload = payload();
    assert_eq!(payload.len(), SIZE);
    assert!(chunk_reassemble(&payload) == payload);
    assert!(through_the_wire(&payload) == payload);
    let mut group = c.benchmark_group("chunk/1MiB");
    group.throughput(Throughput::Bytes(SIZE as u64));
    group.bench_function(BenchmarkId::from_parameter("chunk+reassemble"), |b| {
        b.iter(|| chunk_reassemble(&payload))
    });
    group.bench_function(
        BenchmarkId::from_parameter("chunk+encode+decode+reassemble"),
        |b| b.iter(|| through_the_wire(&payload)),
    );
    let mut copy = Vec::with_capacity(SIZE);
    group.bench_function(BenchmarkId::from_parameter("memcpy"), |b| {
        b.iter(|| {
            copy.clear();
            copy.extend_from_slice(payload.as_bytes());
            black_box(copy.len())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);

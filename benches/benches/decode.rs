//! Decode throughput, side by side on the same bytes: ssekit, the crates.io peers and the
//! floors (`memchr2` scan, `memcpy`, `bytes-clone`, and `segments`: scan, ASCII check and a
//! `Bytes::slice` per piece a line leaves behind, what a decoder that never copies a line
//! together cannot go below), for every workload × feed size of issue 8.
//!
//! `cargo bench -p ssekit-benches --bench decode -- --warm-up-time 0.5 --measurement-time 1`
//! then `scripts/bench-table`.
//!
//! Before its group is timed, every implementation decodes the workload once and must
//! dispatch exactly as many events as ssekit (and the generator) say: nobody is measured
//! doing less work. A run that takes longer than [`ONE_SHOT`] (a peer going quadratic on
//! long lines in small pieces) is not repeated: its one timed run is written to
//! `target/criterion/ssekit-benches/decode-one-shot.json` and the table shows it as such.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

mod common;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use ssekit_benches::workload::{self, FEEDS};

/// Longer than this for one run: measured once, not repeated.
const ONE_SHOT: Duration = Duration::from_millis(400);

fn bench(c: &mut Criterion) {
    let mut one_shots = String::new();
    for load in workload::ALL {
        for feed in FEEDS {
            let (bytes, events) = load.stream_for_feed(feed);
            let whole = Bytes::from(bytes);
            let pieces = workload::pieces(&whole, feed);
            let group_name = format!("decode/{}/{feed}", load.name());
            let mut group = c.benchmark_group(&group_name);
            group.throughput(Throughput::Bytes(whole.len() as u64));
            group.sampling_mode(SamplingMode::Flat);
            for (name, decode) in common::DECODERS {
                let start = Instant::now();
                let got = decode(&pieces);
                let once = start.elapsed();
                if !common::is_floor(name) {
                    assert_eq!(got, events, "{name} on {group_name}: events dispatched");
                }
                if once > ONE_SHOT {
                    eprintln!("{group_name}/{name}: one run took {once:?}; not repeated");
                    let sep = if one_shots.is_empty() { "" } else { ",\n" };
                    let _ = write!(
                        one_shots,
                        "{sep}  {{\"group\": \"{group_name}\", \"function\": \"{name}\", \
                         \"bytes\": {}, \"ns\": {}}}",
                        whole.len(),
                        once.as_nanos()
                    );
                    continue;
                }
                group.bench_with_input(BenchmarkId::from_parameter(name), &pieces, |b, p| {
                    b.iter(|| decode(p))
                });
            }
            group.finish();
        }
    }
    let dir = ssekit_benches::report_dir();
    std::fs::create_dir_all(&dir).expect("report dir");
    std::fs::write(
        dir.join("decode-one-shot.json"),
        format!("[\n{one_shots}\n]\n"),
    )
    .expect("write one-shot figures");
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);

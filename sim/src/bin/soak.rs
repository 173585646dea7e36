//! Runs the ORS cluster and broadcast workloads over many seeds and prints each failing seed:
//! `cargo run -p ssekit-sim --release --bin soak -- --seeds 10000 [--from N] [--no-partition]
//! [--no-store-faults] [--trace]` (`--trace` with `--features trace`).

use std::time::Instant;

use ssekit_sim::ors_cluster::{run, Scenario};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let seeds = value("--seeds").unwrap_or(1000);
    let from = value("--from").unwrap_or(0);
    #[cfg(feature = "trace")]
    if args.iter().any(|a| a == "--trace") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "debug,hyper=info,h2=info",
            ))
            .without_time()
            .init();
    }
    // `--no-partition`, `--no-store-faults`: a narrower search, to tell faults apart.
    let store_faults = !args.iter().any(|a| a == "--no-store-faults");
    let mut scenario = Scenario {
        partition: !args.iter().any(|a| a == "--no-partition"),
        outage: store_faults,
        ..Scenario::default()
    };
    if !store_faults {
        scenario.store.lost_reply = 0.0;
    }
    let started = Instant::now();
    let (mut failed, mut results, mut errors) = (0u64, 0u64, 0u64);
    let (mut orphans, mut snooped, mut cuts, mut drains) = (0u64, 0u64, 0u64, 0u64);
    let mut peak = 0usize;
    let mut kinds = std::collections::BTreeMap::<String, u64>::new();
    for seed in from..from + seeds {
        match run(seed, &scenario) {
            Ok(report) => {
                results += u64::from(report.results);
                errors += report.errors.values().map(|n| u64::from(*n)).sum::<u64>();
                orphans += u64::from(report.orphans);
                drains += u64::from(report.drains);
                peak = peak.max(report.peak_kept);
                snooped += u64::from(report.snooped);
                cuts += report.connections.1;
                for (kind, n) in &report.errors {
                    *kinds.entry(kind.clone()).or_default() += u64::from(*n);
                }
            }
            Err(violation) => {
                failed += 1;
                println!("FAILED {violation}");
            }
        }
    }
    println!(
        "ors_cluster, {seeds} seeds from {from}: {failed} failed; calls: {results} results, {errors} typed errors, {orphans} orphaned by a kill; {drains} drains; at most {peak} result bytes kept by an instance; {snooped} task ids snooped; {cuts} connections cut"
    );
    let (mut delivered, mut gaps) = (0u64, 0u64);
    for seed in from..from + seeds {
        match ssekit_sim::broadcast_cluster::run(seed, &Default::default()) {
            Ok(report) => {
                delivered += report.delivered;
                gaps += report.gaps;
            }
            Err(violation) => {
                failed += 1;
                println!("FAILED broadcast {violation}");
            }
        }
    }
    println!(
        "broadcast_cluster, the same seeds: {delivered} events delivered, {gaps} gap events; {failed} seeds failed in all; {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for (kind, n) in &kinds {
        println!("  {n} calls ended in: {kind}");
    }
    if failed > 0 {
        std::process::exit(1);
    }
}

//! The fixed seeds CI runs (`cargo test -p ssekit-sim`), and the determinism every seed relies
//! on: a seed replays its run exactly.

use ssekit_sim::ors_cluster::{run, Scenario};

/// Seeds run on every change: enough to meet kills, outages and cuts in many interleavings,
/// bounded to about 40 s for all the tests here in a debug build.
const CI_SEEDS: u64 = 500;

/// The reports of `run` over the CI seeds; fails naming every seed that broke an invariant.
fn over_ci_seeds<T>(run: impl Fn(u64) -> Result<T, String>) -> Vec<T> {
    let (reports, failures): (Vec<_>, Vec<_>) = (0..CI_SEEDS).map(run).partition(Result::is_ok);
    let failures: Vec<String> = failures.into_iter().filter_map(Result::err).collect();
    assert!(
        failures.is_empty(),
        "{} seeds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    reports.into_iter().filter_map(Result::ok).collect()
}

#[test]
fn the_ors_cluster_keeps_its_invariants_over_the_ci_seeds() {
    let scenario = Scenario::default();
    let reports = over_ci_seeds(|seed| run(seed, &scenario));
    let results: u32 = reports.iter().map(|r| r.results).sum();
    let errors: u32 = reports.iter().map(|r| r.errors.values().sum::<u32>()).sum();
    let cuts: u64 = reports.iter().map(|r| r.connections.1).sum();
    // The faults happened: calls were cut and resumed, and most still got their result.
    assert!(cuts > CI_SEEDS, "only {cuts} connections cut");
    assert!(results > errors * 4, "{results} results, {errors} errors");
}

/// Seeds that once went quiescent with a call open: the world took a stale ready entry (a
/// task killed after it was woken) for "nothing ready" and stopped.
#[test]
fn seeds_where_a_killed_task_had_been_woken_run_to_the_end() {
    for seed in [93, 122, 371, 1227, 1500, 1501, 1643, 1864] {
        run(seed, &Scenario::default()).unwrap();
    }
}

#[test]
fn a_seed_replays_its_run_exactly() {
    let scenario = Scenario::default();
    for seed in [0, 1, 17, 4242] {
        let first = run(seed, &scenario).unwrap();
        let again = run(seed, &scenario).unwrap();
        assert_eq!(first, again, "seed {seed}");
        let broadcast = ssekit_sim::broadcast_cluster::Scenario::default();
        let first = ssekit_sim::broadcast_cluster::run(seed, &broadcast).unwrap();
        let again = ssekit_sim::broadcast_cluster::run(seed, &broadcast).unwrap();
        assert_eq!(first, again, "broadcast seed {seed}");
    }
}

#[test]
fn different_seeds_make_different_runs() {
    let scenario = Scenario::default();
    let a = run(1, &scenario).unwrap();
    let b = run(2, &scenario).unwrap();
    assert_ne!((a.polls, a.ended_ms), (b.polls, b.ended_ms));
}

#[test]
fn the_broadcast_keeps_its_invariants_over_the_ci_seeds() {
    let scenario = ssekit_sim::broadcast_cluster::Scenario::default();
    let reports = over_ci_seeds(|seed| ssekit_sim::broadcast_cluster::run(seed, &scenario));
    let delivered: u64 = reports.iter().map(|r| r.delivered).sum();
    let gaps: u64 = reports.iter().map(|r| r.gaps).sum();
    // Subscribers were cut, fell behind the 16-event log and were told so.
    assert!(gaps > CI_SEEDS, "only {gaps} gap events");
    assert!(
        delivered > CI_SEEDS * 100,
        "only {delivered} events delivered"
    );
}

/// Found by the simulation: a subscriber without an id, cut before its first event,
/// reconnected "from now" and silently missed the rest (fixed in `SharedBroadcast`).
#[test]
fn broadcast_seed_486_a_subscriber_cut_before_its_first_event_misses_nothing() {
    let scenario = ssekit_sim::broadcast_cluster::Scenario::default();
    ssekit_sim::broadcast_cluster::run(486, &scenario).unwrap();
}

/// With a store that never fails, "task lost" is owed only to a dead instance: kills, drains
/// and partitions, no outage, no lost reply.
#[test]
fn without_store_faults_only_a_dead_instance_loses_a_task() {
    let mut scenario = Scenario {
        outage: false,
        ..Scenario::default()
    };
    scenario.store.lost_reply = 0.0;
    for seed in 0..CI_SEEDS / 2 {
        if let Err(violation) = run(seed, &scenario) {
            panic!("{violation}");
        }
    }
}

/// Found by the 10,000-seed soak: a call resumed its orphaned task, was cut before the lease
/// ran out and was refused four times in a row (5% each) until its retries ran out. Its end
/// is the retry policy's, not the lease's: the orphan bound holds calls that kept their
/// connection.
#[test]
fn seed_8379_a_call_cut_before_the_lease_ran_out_ends_by_its_retries() {
    run(8379, &Scenario::default()).unwrap();
}

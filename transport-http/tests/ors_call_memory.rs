//! What an ORS call costs in memory work, counted by a counting global allocator (its own
//! test binary).

#[path = "../../core/tests/support/counting.rs"]
mod counting;

use ssekit::Instant;
use ssekit_http::client::Item;
use ssekit_http::ors::{json_checked, named, Call, CallOptions, CallStep, Flow};

/// The task id is copied when its event arrives, not at every event after it: a server
/// that sent a 1 MiB id and then 2,000 empty chunks made the client copy 2 GB.
#[test]
fn a_long_task_id_is_copied_once_not_per_event() {
    let _serial = counting::one_at_a_time();
    let mut call = Call::new(
        "submit",
        serde_json::json!({}),
        Default::default(),
        CallOptions::default(),
    );
    let mut trace = |_| {};
    let CallStep::Connect { .. } = call.poll(Instant::ZERO, &mut trace) else {
        panic!("no connect")
    };
    let _ = call.handle_item(
        Instant::ZERO,
        Ok(Item::Connected { attempt: 0 }),
        &mut trace,
    );
    let id = "t".repeat(1 << 20);
    let chunks: Vec<_> = (0..2000).map(|_| named("chunk", "")).collect();
    let measured = counting::measure(|| {
        let flow = call.handle_item(
            Instant::ZERO,
            Ok(Item::Event(named("task_id", id))),
            &mut trace,
        );
        assert!(matches!(flow, Flow::Continue));
        for chunk in chunks {
            let flow = call.handle_item(Instant::ZERO, Ok(Item::Event(chunk)), &mut trace);
            assert!(matches!(flow, Flow::Continue));
        }
    });
    eprintln!(
        "1 MiB task id, 2,000 chunks: {} bytes allocated",
        measured.allocated
    );
    assert!(measured.allocated < 4 << 20, "{measured:?}");
}

/// `ping`'s answer is checked, not built into a `serde_json::Value` (about 100 times the
/// answer's bytes for `[{"":0},...]`): the check allocates nothing per element.
#[test]
fn an_unused_json_answer_is_checked_without_building_it() {
    let _serial = counting::one_at_a_time();
    let answer = format!("[{}{{\"\":0}}]", "{\"\":0},".repeat(100_000));
    let measured = counting::measure(|| {
        assert!(json_checked(200, answer.as_bytes()).is_ok());
    });
    assert!(measured.allocated < 64 << 10, "{measured:?}");
}

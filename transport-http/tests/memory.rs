//! What a client session and an ORS call cost in memory, counted by a counting global
//! allocator (its own test binary; the tests take turns).

#[path = "../../core/tests/support/counting.rs"]
mod counting;

use ssekit::Instant;
use ssekit_http::client::{Item, RequestSpec, Step, Target};
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

/// A body frame is decoded a few items ahead of the application, not whole: a frame of
/// 2-byte comments queued whole took about 50 times its bytes (1 MiB: 54 MB), above the
/// decoder's 16 MiB bound on undrained input.
#[test]
fn a_body_frame_is_decoded_a_few_items_ahead_not_whole() {
    let _serial = counting::one_at_a_time();
    let mut session = RequestSpec::get("http://127.0.0.1:1/", &["http"])
        .unwrap()
        .into_session(Target::Absolute);
    let Step::Connect { .. } = session.poll(Instant::ZERO) else {
        panic!("no connect")
    };
    session.handle_response(Instant::ZERO, 200, Some("text/event-stream"));
    let frame = bytes::Bytes::from(":\n".repeat(1 << 19));
    let mut comments = 0;
    let measured = counting::measure(|| {
        session.handle_data(Instant::ZERO, frame);
        while let Step::Item(item) = session.poll(Instant::ZERO) {
            if let Item::Comment(_) = item {
                comments += 1;
            }
        }
    });
    assert_eq!(comments, 1 << 19);
    eprintln!(
        "a 1 MiB frame of comments: peak heap growth {} bytes",
        measured.peak
    );
    assert!(measured.peak < 1 << 20, "{measured:?}");
}

//! `Calls` always ends a call: a tool that panics ends it (and every resume) in `error`
//! instead of pings for ever, and calls past `TaskConfig::max_running` are refused without
//! running or taking a place in the registry.

#[macro_use]
mod ors_kit;

use std::time::Duration;

use http_body_util::BodyExt;
use ors_kit::{read_for, TestRuntime};
use ssekit::profile::ors::{ToolOutput, ToolResult};
use ssekit::server::TaskConfig;
use ssekit_http::ors::{Busy, Calls, BUSY};

/// `(event, data)` of each named event of `wire`.
fn events(wire: &str) -> Vec<(String, String)> {
    wire.split("\n\n")
        .filter_map(|block| {
            let event = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event.to_owned(), data.to_owned()))
        })
        .collect()
}

fn calls<R: TestRuntime>(config: TaskConfig) -> Calls<R> {
    Calls::with_options(config, Duration::from_millis(100), 4096)
}

async fn a_tool_that_panics_ends_its_call_and_every_resume_in_error<R: TestRuntime>() {
    let calls = calls::<R>(TaskConfig::new(ssekit_http::entropy::os_seed()));
    let body = calls.call(None, async {
        let missing = std::hint::black_box(None::<u32>);
        // A tool bug: before the fix the task died, and the call only pinged.
        Ok(ToolResult::success(ToolOutput::text(
            missing.expect("a tool bug").to_string(),
        )))
    });
    let (wire, ended) = read_for(body, Duration::from_secs(5)).await;
    assert!(ended, "the call ended: {wire}");
    let events = events(&wire);
    assert_eq!(events.len(), 2, "{wire}");
    assert_eq!(events[0].0, "task_id");
    assert_eq!(
        events[1],
        (
            "error".to_owned(),
            ssekit_http::ors::TOOL_PANICKED.to_owned()
        )
    );
    let body = calls.call(Some(&events[0].1), async { Err("unused".to_owned()) });
    let (again, ended) = read_for(body, Duration::from_secs(5)).await;
    assert!(ended, "the resume ended: {again}");
    assert_eq!(
        self::events(&again),
        events,
        "a resume replays the same ending"
    );
}

async fn calls_past_max_running_are_refused_without_running<R: TestRuntime>() {
    let calls = calls::<R>(TaskConfig::new(ssekit_http::entropy::os_seed()).max_running(2));
    // Each call waits for its own release: with one shared channel, the release meant
    // for the first could reach the second.
    let (release, released) = smol::channel::bounded::<()>(1);
    let (_release_second, second_released) = smol::channel::bounded::<()>(1);
    let slow = |released: smol::channel::Receiver<()>| async move {
        let _ = released.recv().await;
        Ok(ToolResult::success(ToolOutput::text("done")))
    };
    let first = calls.call(None, slow(released));
    let _second = calls.call(None, slow(second_released));
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&ran);
    let refused = calls.try_call(None, async move {
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        Err("unused".to_owned())
    });
    assert_eq!(refused.err(), Some(Busy));
    // `call` answers with a stream: task_id (never stored), then the error.
    let (wire, ended) = read_for(
        calls.call(None, async { Err("unused".to_owned()) }),
        Duration::from_secs(5),
    )
    .await;
    assert!(ended, "{wire}");
    let refusal = events(&wire);
    assert_eq!(refusal.len(), 2, "{wire}");
    assert_eq!(refusal[0].0, "task_id");
    assert_eq!(refusal[1], ("error".to_owned(), BUSY.to_owned()));
    let (wire, _) = read_for(
        calls.call(Some(&refusal[0].1), async { Err("unused".to_owned()) }),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(
        events(&wire),
        [("error".to_owned(), "unknown task_id".to_owned())],
        "a refused call took no place in the registry"
    );
    smol::Timer::after(Duration::from_millis(50)).await;
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    // One finishes: a new call is admitted again.
    release.send(()).await.unwrap();
    let (wire, ended) = read_for(first, Duration::from_secs(5)).await;
    assert!(ended && wire.contains("event: end"), "{wire}");
    let (wire, ended) = read_for(
        calls.call(None, async {
            Ok(ToolResult::success(ToolOutput::text("again")))
        }),
        Duration::from_secs(5),
    )
    .await;
    assert!(ended && wire.contains("event: end"), "{wire}");
    drop(release);
}

/// A finished task wakes the connections that follow it: twenty calls whose tools finish in
/// reverse order, each followed twice (the call, and a resume by task id while the call
/// still follows), all end with their own result.
async fn calls_that_finish_in_any_order_each_reach_their_followers<R: TestRuntime>() {
    let calls = calls::<R>(TaskConfig::new(ssekit_http::entropy::os_seed()));
    let mut gates = Vec::new();
    let mut followers = Vec::new();
    for i in 0..20 {
        let (open, gate) = async_channel::bounded::<()>(1);
        gates.push(open);
        let mut body = Box::pin(calls.call(None, async move {
            let _ = gate.recv().await;
            Ok(ToolResult::success(ToolOutput::text(format!("result {i}"))))
        }));
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        let first = String::from_utf8(first.to_vec()).unwrap();
        let task_id = events(&first)[0].1.clone();
        let resumed = calls.call(Some(&task_id), async { Err("unused".to_owned()) });
        followers.push((i, body, resumed));
    }
    for gate in gates.iter().rev() {
        gate.send(()).await.unwrap();
    }
    for (i, body, resumed) in followers {
        for (which, body) in [("call", body), ("resume", Box::pin(resumed))] {
            let (wire, ended) = read_for(body, Duration::from_secs(10)).await;
            assert!(ended, "{which} {i} ended: {wire}");
            assert!(
                wire.contains(&format!("result {i}")) && wire.contains("event: end"),
                "{which} {i}: {wire}"
            );
        }
    }
}

on_both_runtimes!(
    a_tool_that_panics_ends_its_call_and_every_resume_in_error,
    calls_past_max_running_are_refused_without_running,
    calls_that_finish_in_any_order_each_reach_their_followers,
);

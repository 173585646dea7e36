//! No client failure stays silent: a wrong port ends, by default, with a typed error after a
//! bounded number of attempts, and every failed attempt is an item the caller sees. On both
//! runtimes, against a closed port on 127.0.0.1.

use std::time::Duration;

use futures_lite::StreamExt;
use ssekit::client::{ReconnectConfig, DEFAULT_MAX_ATTEMPTS};
use ssekit::Instant;
use ssekit_http::client::{Ended, Item, RequestSpec, Step, Target};
use ssekit_http::Error;

/// A loopback port nobody listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The default policy, with only the first wait shortened so that the test is quick: the
/// attempt limit is the default one.
fn quick_default() -> ReconnectConfig {
    ReconnectConfig::default().retry_timeout(Duration::from_millis(5))
}

/// What a run over `items` saw: failed attempts, waits, and the error that ended it.
fn tally(items: Vec<Result<Item, Error>>) -> (usize, usize, Option<Error>) {
    let mut failed = 0;
    let mut waits = 0;
    let mut end = None;
    for item in items {
        match item {
            Ok(Item::Disconnected(Ended::Failed(_))) => failed += 1,
            Ok(Item::Reconnecting { .. }) => waits += 1,
            Ok(other) => panic!("a closed port gave {other:?}"),
            Err(e) => end = Some(e),
        }
    }
    (failed, waits, end)
}

fn assert_gave_up(what: &str, (failed, waits, end): (usize, usize, Option<Error>)) {
    let retries = DEFAULT_MAX_ATTEMPTS as usize;
    assert_eq!(failed, retries + 1, "{what}: every attempt is an item");
    assert_eq!(waits, retries, "{what}: every wait is an item");
    match end {
        Some(Error::Exhausted { attempts, last }) => {
            assert_eq!(attempts, DEFAULT_MAX_ATTEMPTS, "{what}");
            // The cause is kept as a type: a refused TCP connection, whatever the client.
            let refused =
                std::iter::successors(Some(&*last as &dyn std::error::Error), |e| e.source()).any(
                    |e| {
                        e.downcast_ref::<std::io::Error>()
                            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
                    },
                );
            assert!(
                refused,
                "{what}: the last failure is not the refused connection: {last:?}"
            );
        }
        other => panic!("{what}: expected a typed give-up, got {other:?}"),
    }
}

#[test]
fn a_wrong_port_ends_with_a_typed_error_on_hyper() {
    let url = format!("http://127.0.0.1:{}/stream", closed_port());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let items = ssekit_hyper::client::EventSource::get(&url)
            .unwrap()
            .reconnect(quick_default())
            .stream();
        let items = tokio::time::timeout(Duration::from_secs(60), items.collect::<Vec<_>>())
            .await
            .expect("the client gives up on its own");
        assert_gave_up("hyper", tally(items));
        // `.events()`, the README's loop: its only item is the error.
        let mut events = ssekit_hyper::client::EventSource::get(&url)
            .unwrap()
            .reconnect(quick_default())
            .events();
        let first = tokio::time::timeout(Duration::from_secs(60), events.next()).await;
        assert!(
            matches!(first, Ok(Some(Err(Error::Exhausted { .. })))),
            "{first:?}"
        );
        assert!(events.next().await.is_none());
    });
}

#[test]
fn a_wrong_port_ends_with_a_typed_error_on_smol() {
    let url = format!("http://127.0.0.1:{}/stream", closed_port());
    smol::block_on(async {
        let items = ssekit_smol::client::EventSource::get(&url)
            .unwrap()
            .reconnect(quick_default())
            .stream();
        let items =
            futures_lite::future::or(async { Some(items.collect::<Vec<_>>().await) }, async {
                smol::Timer::after(Duration::from_secs(60)).await;
                None
            })
            .await
            .expect("the client gives up on its own");
        assert_gave_up("smol", tally(items));
        let mut events = ssekit_smol::client::EventSource::get(&url)
            .unwrap()
            .reconnect(quick_default())
            .events();
        assert!(matches!(
            events.next().await,
            Some(Err(Error::Exhausted { .. }))
        ));
        assert!(events.next().await.is_none());
    });
}

/// With the default timings, on a clock moved by hand: the give-up comes after waits of
/// 3, 6, 12, 24 and 48 s (plus at most 20 % jitter each), 93 s to 112 s in all.
#[test]
fn with_default_timings_a_refused_client_gives_up_within_two_minutes() {
    let url = format!("http://127.0.0.1:{}/stream", closed_port());
    let mut session = RequestSpec::get(&url, &["http"])
        .unwrap()
        .into_session(Target::Origin);
    let mut now = Instant::ZERO;
    let mut waits = Vec::new();
    let end = loop {
        match session.poll(now) {
            Step::Connect { .. } => {
                session.handle_connect_error(
                    now,
                    std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into(),
                );
            }
            Step::Item(Item::Reconnecting { after }) => waits.push(after),
            Step::Item(_) => {}
            Step::Wait { deadline, .. } => {
                now = deadline.expect("a retry is scheduled");
                session.handle_timeout(now);
            }
            Step::End(end) => break end,
            other => panic!("{other:?}"),
        }
    };
    assert!(
        matches!(end, Some(Error::Exhausted { attempts: 5, .. })),
        "{end:?}"
    );
    let nominal = [3u64, 6, 12, 24, 48];
    assert_eq!(waits.len(), nominal.len());
    for (wait, secs) in waits.iter().zip(nominal) {
        let ms = wait.as_millis() as u64;
        assert!(
            ms >= secs * 1_000 && ms <= secs * 1_200,
            "{wait:?} for {secs} s"
        );
    }
    let total: Duration = waits.iter().sum();
    assert!(total <= Duration::from_secs(112), "{total:?}");
}

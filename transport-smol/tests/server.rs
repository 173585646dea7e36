//! The smol server's bounded channel without sockets. Its response head, `Broadcast`
//! resumption and slow readers are scenarios of the conformance suite
//! (`tests/conformance.rs`), on every server x client pairing.

use std::future::Future;
use std::time::Duration;

use ssekit::Event;
use ssekit_smol::server::{channel, TrySendError};

fn run<T>(fut: impl Future<Output = T>) -> T {
    smol::block_on(futures_lite::future::or(fut, async {
        smol::Timer::after(Duration::from_secs(10)).await;
        panic!("test timed out")
    }))
}

fn numbered(i: usize) -> Event {
    Event::builder()
        .id(i.to_string())
        .unwrap()
        .data(format!("n{i}"))
        .build()
}

#[test]
fn a_full_channel_refuses_and_a_dropped_body_closes_it() {
    let (tx, body) = channel(2);
    tx.try_send(&numbered(1)).unwrap();
    tx.try_send(&numbered(2)).unwrap();
    assert!(matches!(tx.try_send(&numbered(3)), Err(TrySendError::Full)));
    drop(body);
    assert!(tx.is_closed());
    assert!(matches!(
        run(tx.send(&numbered(4))),
        Err(TrySendError::Closed)
    ));
}

//! `SharedBroadcast` over the in-process `MemoryStore`, on each runtime's real timers: a
//! subscriber that comes back with the id of the last event it saw gets what it missed (the
//! example of `ssekit_http::store::SharedBroadcast`, run on tokio and on smol), and a live
//! one gets what is published after it subscribed.

use std::sync::Arc;
use std::time::Duration;

use futures_lite::StreamExt;
use ssekit::Event;
use ssekit_http::runtime::{Frames, Runtime};
use ssekit_http::store::{MemoryStore, SharedBroadcast};

/// The next frame of `frames`, failing the test after 10 s on the runtime's own timer.
async fn next<R: Runtime>(frames: &mut Frames, runtime: &R) -> bytes::Bytes {
    let timeout = async {
        runtime.sleep(Duration::from_secs(10)).await;
        None
    };
    futures_lite::future::or(async { Some(frames.next().await) }, timeout)
        .await
        .expect("no frame within 10 s")
        .expect("the stream ended")
}

async fn missed_then_live<R: Runtime>(runtime: R) {
    let news = SharedBroadcast::new(Arc::new(MemoryStore::default()), "news");
    let id = news.publish(&Event::message("first")).await.unwrap();
    news.publish(&Event::message("second")).await.unwrap();
    let mut missed = news.subscribe(Some(&id), runtime.clone()).await.unwrap();
    assert_eq!(
        next(&mut missed, &runtime).await,
        "id: 2-0\ndata: second\n\n"
    );

    let mut live = news.subscribe(None, runtime.clone()).await.unwrap();
    // From now on: where that is comes first, as an id alone (a reconnect resumes there).
    assert_eq!(next(&mut live, &runtime).await, "id: 2-0\n\n");
    news.publish(&Event::message("third")).await.unwrap();
    assert_eq!(next(&mut live, &runtime).await, "id: 3-0\ndata: third\n\n");
    assert_eq!(
        next(&mut missed, &runtime).await,
        "id: 3-0\ndata: third\n\n"
    );
}

#[tokio::test]
async fn missed_events_then_live_ones_on_tokio() {
    missed_then_live(ssekit_hyper::runtime::Tokio::default()).await;
}

#[test]
fn missed_events_then_live_ones_on_smol() {
    smol::block_on(missed_then_live(ssekit_smol::runtime::Smol::default()));
}

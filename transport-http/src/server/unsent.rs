//! What a response body has handed its server and the server still holds: the bound that
//! keeps an [`SseBody`](super::SseBody) small under any server, not only under
//! [`serve`](super::serve).
//!
//! A server polls a body while its own write buffer has room, and hyper's default buffer
//! takes sixteen frames (of up to [`FRAME_BYTES`] each) before it stops: 256 KiB a stream
//! for a client that reads slowly. So the body counts the bytes of the frames it handed out
//! that are still alive. Each frame it yields owns a share of the count, given back when
//! the server drops the frame (once it is written to the socket, or copied into a buffer of
//! the server's own); while the count leaves no room for another whole frame, the body
//! answers `Pending`, and the drop that makes room wakes it.
//!
//! The bound holds from the first frame the server lets go of on. A consumer that keeps
//! every frame until the end (`http_body_util::BodyExt::collect`, a test reading a whole
//! body) never lets one go early, so it is never made to wait on itself; hyper lets go of
//! its first frames as soon as the socket takes them.
//!
//! How much may be out adapts to the reader, on the runtime's clock: a stream starts
//! cautious, with one frame ([`CAUTIOUS_UNSENT`]) out at most. Once its reader has taken
//! [`TRUST_BYTES`] with no wait of [`SLOW_WAIT`] for the server to let go of its frames, it
//! may have [`MAX_UNSENT`] out: as many bytes as one turn ([`TURN_BYTES`](super::TURN_BYTES))
//! of a fast stream, so that it waits once a turn rather than once a frame (each wait is a
//! trip through the executor's queue and one more write). A wait of [`SLOW_WAIT`] makes it
//! cautious again.
//!
//! Why those figures: a reader that does not read still takes, at first, what the kernel's
//! buffers hold (Linux's send buffer grows to 4 MiB at most, `tcp_wmem`), at the speed of
//! a fast one; past that, every wait is as long as the reader is slow. So a slow reader
//! cannot take [`TRUST_BYTES`] without a long wait. Time alone earns nothing: how long the
//! kernel's buffers take to fill depends on how many streams fill them at once and how busy
//! the machine is (with 1,000 slow readers and a busy neighbour, a rule of "2 s without a
//! slow wait" trusted most of them), and a reader held back by its own pace (a client
//! slower than the server) waits often but never long. A reader that falls behind so costs
//! [`CAUTIOUS_UNSENT`], and no stream ever has more than [`MAX_UNSENT`] out (one event
//! larger than a frame goes out whole, above it).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use atomic_waker::AtomicWaker;
use bytes::Bytes;
use ssekit::Instant;

use super::{FRAME_BYTES, MAX_UNSENT};

/// What a stream may have out until it has shown that its reader keeps up: one frame.
pub(crate) const CAUTIOUS_UNSENT: usize = FRAME_BYTES;

/// How many bytes a stream's reader takes, with no wait of [`SLOW_WAIT`], before the stream
/// may have [`MAX_UNSENT`] out: more than the kernel's buffers hold for a reader that does
/// not read (a 4 MiB send buffer at most, and the peer's receive buffer).
pub(crate) const TRUST_BYTES: u64 = 5 << 20;

/// A wait for room this long tells a reader that is not keeping up.
pub(crate) const SLOW_WAIT: Duration = Duration::from_secs(1);

/// The count of one body's live frames, the body's waker while it waits for room, and how
/// much room its reader has earned.
#[derive(Debug, Default)]
pub(crate) struct Unsent {
    shared: Arc<Shared>,
    /// Whether the reader has taken [`TRUST_BYTES`] without a slow wait.
    trusted: bool,
    /// Bytes handed out since the last slow wait (all, before the first).
    taken: u64,
    /// When the body began to wait for room, while it waits.
    waiting: Option<Instant>,
}

#[derive(Debug, Default)]
struct Shared {
    /// Bytes of the frames handed out and not yet dropped.
    bytes: AtomicUsize,
    /// What `bytes` must fall to for the parked body to go on.
    room: AtomicUsize,
    /// Whether the server has let go of a frame: until then, nothing is bounded.
    released: AtomicBool,
    /// Set while the body waits in `waker`: a frame's drop wakes it only then.
    parked: AtomicBool,
    waker: AtomicWaker,
}

impl Unsent {
    /// `Ready` when another frame fits; otherwise `Pending`, and the drop of a frame that
    /// makes room wakes `cx`'s task. `now` reads the body's clock (only when a wait starts
    /// or ends).
    pub(crate) fn poll_room(
        &mut self,
        cx: &mut Context<'_>,
        now: impl Fn() -> Instant,
    ) -> Poll<()> {
        let released = self.shared.released.load(Ordering::SeqCst);
        if !released || self.shared.bytes.load(Ordering::SeqCst) <= self.room() {
            if let Some(began) = self.waiting.take() {
                self.judge(began, now());
            }
            return Poll::Ready(());
        }
        let room = self.room();
        let shared = &*self.shared;
        shared.room.store(room, Ordering::SeqCst);
        shared.waker.register(cx.waker());
        shared.parked.store(true, Ordering::SeqCst);
        // A drop between the load and `parked` did not see it: look again.
        if shared.bytes.load(Ordering::SeqCst) <= room {
            shared.parked.store(false, Ordering::SeqCst);
            return Poll::Ready(());
        }
        if self.waiting.is_none() {
            self.waiting = Some(now());
        }
        Poll::Pending
    }

    /// Learns from a wait that began at `began` and ended at `ended`.
    fn judge(&mut self, began: Instant, ended: Instant) {
        if ended.saturating_duration_since(began) >= SLOW_WAIT {
            self.trusted = false;
            self.taken = 0;
        } else {
            self.trusted |= self.taken >= TRUST_BYTES;
        }
    }

    /// What the bytes out must be at most for another whole frame to fit.
    fn room(&self) -> usize {
        let limit = if self.trusted {
            MAX_UNSENT
        } else {
            CAUTIOUS_UNSENT
        };
        limit - FRAME_BYTES
    }

    /// `frame`, counted until the server drops it (and every slice of it).
    pub(crate) fn track(&mut self, frame: Bytes) -> Bytes {
        let len = frame.len();
        if len == 0 {
            return frame;
        }
        self.taken = self.taken.saturating_add(len as u64);
        self.shared.bytes.fetch_add(len, Ordering::SeqCst);
        Bytes::from_owner(Held {
            frame,
            shared: Arc::clone(&self.shared),
        })
    }

    /// Bytes handed out and not yet dropped.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.shared.bytes.load(Ordering::SeqCst)
    }
}

/// A frame out with the server: its bytes count against the body until it is dropped.
struct Held {
    frame: Bytes,
    shared: Arc<Shared>,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.frame
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let shared = &*self.shared;
        let len = self.frame.len();
        shared.released.store(true, Ordering::SeqCst);
        let left = shared.bytes.fetch_sub(len, Ordering::SeqCst) - len;
        if left <= shared.room.load(Ordering::SeqCst) && shared.parked.swap(false, Ordering::SeqCst)
        {
            shared.waker.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use super::*;
    use crate::sync::WakeCount;

    fn frame() -> Bytes {
        Bytes::from(vec![b'x'; FRAME_BYTES])
    }

    /// A count whose server has let go of a frame already (so the bound holds).
    fn released() -> Unsent {
        let mut unsent = Unsent::default();
        drop(unsent.track(Bytes::from_static(b": hi\n\n")));
        unsent
    }

    /// Frames taken while there is room, at `at` ms on the body's clock.
    fn fill(unsent: &mut Unsent, cx: &mut Context<'_>, at: u64, out: &mut Vec<Bytes>) -> usize {
        let mut n = 0;
        while unsent.poll_room(cx, || Instant::from_millis(at)).is_ready() {
            out.push(unsent.track(frame()));
            n += 1;
        }
        n
    }

    #[test]
    fn a_new_stream_has_one_frame_out_and_is_woken_when_the_server_lets_go() {
        let count = Arc::new(WakeCount::default());
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut unsent = released();
        let mut out = Vec::new();
        assert_eq!(fill(&mut unsent, &mut cx, 0, &mut out), 1);
        assert_eq!(unsent.bytes(), CAUTIOUS_UNSENT);
        // A slice keeps its frame counted; the last one to go gives it back and wakes.
        let tail = out[0].slice(1..);
        out.clear();
        assert_eq!(count.get(), 0);
        drop(tail);
        assert_eq!(count.get(), 1);
        assert_eq!(unsent.bytes(), 0);
        assert_eq!(fill(&mut unsent, &mut cx, 1, &mut out), 1);
        // Nobody waits: a drop wakes no one.
        let _ = unsent.poll_room(&mut cx, || Instant::from_millis(1));
        assert_eq!(count.get(), 1);
        let spare = unsent.track(Bytes::new());
        assert!(spare.is_empty());
        assert_eq!(unsent.bytes(), FRAME_BYTES);
    }

    #[test]
    fn a_reader_that_keeps_up_earns_a_turn_of_room_and_a_slow_wait_takes_it_back() {
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut unsent = released();
        let mut out = Vec::new();
        let mut at = 0;
        let frames = (TRUST_BYTES as usize).div_ceil(FRAME_BYTES);
        // One frame at a time, each taken within a millisecond: cautious until TRUST_BYTES.
        for _ in 0..frames {
            assert_eq!(fill(&mut unsent, &mut cx, at, &mut out), 1);
            out.clear();
            at += 1;
        }
        assert_eq!(
            fill(&mut unsent, &mut cx, at, &mut out),
            MAX_UNSENT / FRAME_BYTES
        );
        assert_eq!(unsent.bytes(), MAX_UNSENT);
        // The socket stops taking bytes: after a wait of SLOW_WAIT, one frame again.
        at += SLOW_WAIT.as_millis() as u64;
        out.clear();
        assert_eq!(fill(&mut unsent, &mut cx, at, &mut out), 1);
    }

    #[test]
    fn time_alone_earns_no_room() {
        // A reader held back by its own pace: each wait just short of SLOW_WAIT, for over
        // five minutes, one frame short of TRUST_BYTES in all.
        let mut cx = Context::from_waker(Waker::noop());
        let mut unsent = released();
        let mut out = Vec::new();
        let step = SLOW_WAIT.as_millis() as u64 - 1;
        let frames = (TRUST_BYTES as usize).div_ceil(FRAME_BYTES) - 1;
        for i in 0..frames as u64 {
            let at = i * step;
            assert_eq!(fill(&mut unsent, &mut cx, at, &mut out), 1, "at {at} ms");
            out.clear();
        }
        assert!(frames as u64 * step > 300_000);
    }

    #[test]
    fn a_consumer_that_keeps_every_frame_is_never_made_to_wait() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut unsent = Unsent::default();
        let mut out = Vec::new();
        for at in 0..100 {
            assert!(unsent
                .poll_room(&mut cx, || Instant::from_millis(at))
                .is_ready());
            out.push(unsent.track(frame()));
        }
        assert_eq!(unsent.bytes(), 100 * FRAME_BYTES);
        // Once it lets one go, the bound holds.
        out.pop();
        assert!(unsent
            .poll_room(&mut cx, || Instant::from_millis(100))
            .is_pending());
    }

    #[test]
    fn no_reader_earns_room_with_waits_of_slow_wait() {
        let mut cx = Context::from_waker(Waker::noop());
        let mut unsent = released();
        let mut out = Vec::new();
        let mut at = 0;
        for _ in 0..1_000 {
            assert_eq!(fill(&mut unsent, &mut cx, at, &mut out), 1);
            out.clear();
            at += SLOW_WAIT.as_millis() as u64;
        }
    }
}

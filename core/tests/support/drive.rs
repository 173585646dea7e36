//! Drives a decoder the ways a reader may, shared by the proptests and the fuzz targets
//! (which include this file by path): pieces fed as `Bytes` and as slices in turn, drained
//! after each fully, partly or not at all, owned and borrowed frames mixed, and pieces
//! refused as `BufferFull` fed again after draining (backpressure). Whatever the schedule,
//! the [`Outcome`] must be that of one feed drained at once ([`run`] with one piece).
//!
//! One part of an error depends on the pieces: the `size` of a `LineTooLong` raised before
//! the line's end arrived counts the bytes seen so far. The driver checks it (over the limit,
//! within the input fed) and records it as `limit + 1`, the least any split reports.

#![allow(dead_code)]

use bytes::Bytes;
use ssekit::decode::OnLimit;
use ssekit::{Config, DecodeError, Decoder, Frame, StreamEnd};

/// What one stream decoded to: frames and errors in order, how it ended, the last event ID.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub items: Vec<Result<Frame, DecodeError>>,
    pub end: StreamEnd,
    pub last_event_id: String,
}

/// Feeds `pieces` in order (alternately as `Bytes` and as slices, the two ways in), draining
/// after each with `next_frame`; errors are recorded (fail-stop: once).
pub fn run(config: Config, pieces: &[&[u8]]) -> Outcome {
    run_mixed(config, pieces, &[false], &[])
}

/// [`run`], draining with `next_frame_ref` where `borrow` (cycled, one entry per call) says
/// so, and after piece `i` taking only as many frames as `takes[i]` (cycled) says: 0, 1 or 2,
/// or all of them (3), modulo 4; with no `takes`, all. Pieces fed before the last ones were
/// drained queue behind them; a piece refused as `BufferFull` (at the offset where it would
/// have started) is fed again after draining, and may be refused again only by a decoder
/// stopped by an error. Whatever is left is drained after the last piece. Each borrowed
/// frame must equal its owned copy, which is what is recorded. Panics on a broken promise.
pub fn run_mixed(config: Config, pieces: &[&[u8]], borrow: &[bool], takes: &[u8]) -> Outcome {
    let mut decoder = Decoder::with_config(config);
    let mut drain = Drain {
        items: Vec::new(),
        failed: false,
        call: 0,
        borrow,
        accepted: 0,
    };
    // Bytes the decoder has accepted: where a refused piece would have started.
    let mut accepted = 0u64;
    for (i, piece) in pieces.iter().enumerate() {
        let mut drained = false;
        loop {
            let fed = if i % 2 == 0 {
                decoder.feed(Bytes::copy_from_slice(piece))
            } else {
                decoder.feed_slice(piece)
            };
            match fed {
                Ok(()) => {
                    accepted += piece.len() as u64;
                    break;
                }
                Err(DecodeError::BufferFull {
                    offset,
                    size,
                    limit,
                }) if !drained => {
                    let expected = (accepted, config.get_limits().buffered_limit());
                    assert_eq!(
                        (offset, limit),
                        expected,
                        "BufferFull names the refused input"
                    );
                    // Undrained bytes (at least one) and the refused piece, over the limit.
                    assert!(size > limit && size > piece.len(), "BufferFull size {size}");
                    drained = true;
                    drain.take(&mut decoder, usize::MAX);
                }
                Err(err) => {
                    assert!(drain.failed, "refused after draining: {err:?}");
                    break;
                }
            }
        }
        drain.accepted = accepted;
        let take = match takes.get(i % takes.len().max(1)).map(|t| t % 4) {
            Some(t @ 0..=2) => usize::from(t),
            _ => usize::MAX,
        };
        drain.take(&mut decoder, take);
    }
    drain.take(&mut decoder, usize::MAX);
    // Linear work whatever the pieces: scans and copies are bounded multiples of the input
    // (the tests of `decode_limits.rs` pin the tighter figures on chosen streams).
    let (scanned, copied) = (decoder.bytes_scanned(), decoder.bytes_copied());
    assert!(
        scanned <= 2 * accepted,
        "scanned {scanned} of {accepted} bytes"
    );
    assert!(
        copied <= 8 * accepted + 64,
        "copied {copied} of {accepted} bytes"
    );
    let end = match decoder.finish() {
        StreamEnd::Failed(err) => StreamEnd::Failed(comparable(err, accepted)),
        other => other,
    };
    Outcome {
        items: drain.items,
        end,
        last_event_id: decoder.last_event_id().to_string(),
    }
}

/// What [`run_mixed`] has drained so far.
struct Drain<'a> {
    items: Vec<Result<Frame, DecodeError>>,
    failed: bool,
    call: usize,
    borrow: &'a [bool],
    /// Bytes fed so far.
    accepted: u64,
}

/// `err` as the [`Outcome`] records it, after checking its size: over the limit, and for a
/// line, within the `accepted` bytes fed; a line's size is recorded as `limit + 1`.
fn comparable(err: DecodeError, accepted: u64) -> DecodeError {
    match err {
        DecodeError::LineTooLong {
            offset,
            size,
            limit,
        } => {
            assert!(size > limit, "{err:?}");
            assert!(offset + size as u64 <= accepted, "{err:?} past {accepted}");
            DecodeError::LineTooLong {
                offset,
                size: limit + 1,
                limit,
            }
        }
        DecodeError::EventTooLarge { size, limit, .. }
        | DecodeError::BufferFull { size, limit, .. } => {
            assert!(size > limit, "{err:?}");
            err
        }
        other => other,
    }
}

impl Drain<'_> {
    /// Up to `take` frames or errors, until the decoder has nothing more or has failed.
    fn take(&mut self, decoder: &mut Decoder, take: usize) {
        for _ in 0..take {
            if self.failed {
                return;
            }
            self.call += 1;
            let next = if self.borrow.is_empty() || !self.borrow[self.call % self.borrow.len()] {
                decoder.next_frame()
            } else {
                decoder.next_frame_ref().map(|frame| {
                    frame.map(|frame| {
                        let owned = frame.to_frame();
                        assert_eq!(frame, owned, "a borrowed frame equals its copy");
                        owned
                    })
                })
            };
            match next {
                Ok(Some(frame)) => self.items.push(Ok(frame)),
                Ok(None) => return,
                Err(err) => {
                    self.items.push(Err(comparable(err, self.accepted)));
                    // Fail-stop repeats the same error until reset; Resync goes on.
                    if decoder.config().get_on_limit() == OnLimit::FailStop {
                        assert_eq!(decoder.next_frame(), Err(err), "fail-stop must be sticky");
                        self.failed = true;
                    }
                }
            }
        }
    }
}

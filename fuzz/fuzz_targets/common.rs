//! Helpers shared by the fuzz targets.
#![allow(dead_code)]

use arbitrary::Unstructured;
use ssekit::decode::{Mode, OnLimit};
use ssekit::{Config, Limits};

// The decoder driver the core's proptests use: `Outcome`, `run`, `run_mixed`.
#[path = "../../core/tests/support/drive.rs"]
mod drive;
#[allow(unused_imports)] // each target uses some of these
pub use drive::{run, run_mixed};

/// A configuration drawn from the input: either mode, either policy, small limits so they
/// are actually hit (`max_buffered` too, now and then, so feeding applies backpressure).
pub fn config(u: &mut Unstructured) -> Config {
    let mode = if u.arbitrary().unwrap_or(false) {
        Mode::Raw
    } else {
        Mode::Browser
    };
    let on_limit = if u.arbitrary().unwrap_or(false) {
        OnLimit::Resync
    } else {
        OnLimit::FailStop
    };
    let max_line = u.int_in_range(1..=512usize).unwrap_or(512);
    let max_event = u.int_in_range(1..=1024usize).unwrap_or(1024);
    let comments = u.arbitrary().unwrap_or(true);
    let max_buffered = if u.arbitrary().unwrap_or(false) {
        u.int_in_range(1..=64usize).unwrap_or(64)
    } else {
        Limits::default().buffered_limit()
    };
    Config::default()
        .mode(mode)
        .on_limit(on_limit)
        .comments(comments)
        .limits(
            Limits::default()
                .max_line(max_line)
                .max_event(max_event)
                .max_buffered(max_buffered),
        )
}

/// Splits `data` at cut points drawn from the input.
pub fn split<'a>(data: &'a [u8], cuts: &[u16]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) % (data.len() + 1))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        pieces.push(&data[start..cut]);
        start = cut;
    }
    pieces.push(&data[start..]);
    pieces
}

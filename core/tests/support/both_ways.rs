//! One capture validated twice, with owned frames and with borrowed ones: the profile tests'
//! check that `Profile::event` and `Profile::event_ref` agree.

use ssekit::sequence::{Profile, SequenceError, Validator};
use ssekit::Decoder;

/// Decodes `sse` and validates it with owned frames (`Validator::frame`) and with borrowed
/// ones (`Validator::frame_ref`), each to the first error or to `finish`. Both must give the
/// same outcome and the same failure. Returns the outcome and both profiles, owned first, for
/// the caller to compare what else its profile keeps.
pub fn validate_both_ways<P: Profile>(
    profile: impl Fn() -> P,
    sse: &str,
) -> (Result<(), SequenceError>, P, P) {
    let mut owned = Validator::new(profile());
    let mut decoder = Decoder::new();
    decoder.feed_slice(sse.as_bytes()).unwrap();
    let mut owned_result = Ok(());
    while let Some(frame) = decoder.next_frame().unwrap() {
        owned_result = owned.frame(&frame);
        if owned_result.is_err() {
            break;
        }
    }
    let owned_result = owned_result.and_then(|()| owned.finish());

    let mut borrowed = Validator::new(profile());
    let mut decoder = Decoder::new();
    decoder.feed_slice(sse.as_bytes()).unwrap();
    let mut borrowed_result = Ok(());
    while let Some(frame) = decoder.next_frame_ref().unwrap() {
        borrowed_result = borrowed.frame_ref(frame);
        if borrowed_result.is_err() {
            break;
        }
    }
    let borrowed_result = borrowed_result.and_then(|()| borrowed.finish());
    assert_eq!(
        owned_result, borrowed_result,
        "event and event_ref disagree:\n{sse}"
    );
    assert_eq!(owned.profile().failure(), borrowed.profile().failure());
    (owned_result, owned.into_profile(), borrowed.into_profile())
}

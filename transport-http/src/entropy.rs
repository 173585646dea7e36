//! Seeds from the operating system's random number generator, for the transports.
//!
//! The core draws no randomness: it takes seeds, so tests are reproducible. [`os_seed`] is
//! called where a seed must not be guessable or shared between processes and the caller
//! gave none: the jitter of a client's reconnection delays
//! ([`RequestSpec::into_session`](crate::client::RequestSpec::into_session) and each ORS
//! call; equal seeds make a fleet of clients reconnect in lockstep, and a seed the caller
//! sets is kept, for tests) and, in the transports, the key of a server's task ids (an ORS
//! task id is the capability to read a tool call's result) and its session ids.
//!
//! ```
//! let a: [u8; 32] = ssekit_http::entropy::os_seed();
//! let b: [u8; 32] = ssekit_http::entropy::os_seed();
//! assert_ne!(a, b);
//! ```

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// `N` bytes from the OS random number generator (`getrandom(2)`, `BCryptGenRandom`, …).
///
/// Should the OS source fail, which `getrandom` reports only on platforms without one, the
/// bytes come from SipHash under the standard library's per-process random keys (the keys
/// of `HashMap`), which std itself takes from the OS: unpredictable without them, and
/// different in every call and every process.
///
/// # Example
/// ```
/// let seed: u64 = u64::from_le_bytes(ssekit_http::entropy::os_seed());
/// let _ = ssekit::client::ReconnectConfig::default().jitter_seed(seed);
/// ```
pub fn os_seed<const N: usize>() -> [u8; N] {
    let mut seed = [0u8; N];
    if getrandom::getrandom(&mut seed).is_err() {
        let keys = RandomState::new();
        for (block, chunk) in seed.chunks_mut(8).enumerate() {
            let mut hasher = keys.build_hasher();
            hasher.write_usize(block);
            let word = hasher.finish().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
    seed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_between_calls_and_fill_every_length() {
        let a: [u8; 32] = os_seed();
        let b: [u8; 32] = os_seed();
        assert_ne!(a, b);
        let odd: [u8; 13] = os_seed();
        let zero: [u8; 0] = os_seed();
        assert_eq!((odd.len(), zero.len()), (13, 0));
    }
}

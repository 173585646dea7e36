//! A tiny deterministic PRNG (SplitMix64) for the reconnect jitter of
//! [`Reconnect`](crate::client::Reconnect), and nothing else.
//!
//! The core draws no randomness of its own: callers inject a seed (from the OS RNG, a
//! process id, a test constant), and the same seed always gives the same sequence, so
//! every test is reproducible. Jitter only has to spread clients out, so a fast 64-bit
//! generator is enough. It must not make anything an adversary should not predict: its
//! output function is invertible, so one output reveals the state and with it every
//! output after it, whatever the seed. Task ids, which are capabilities, come from
//! ChaCha20 instead (see [`TaskConfig::new`](crate::server::TaskConfig::new)).

/// SplitMix64 (Steele, Lea, Flood 2014): one 64-bit state, any seed (including 0) is fine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub(crate) const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..=max`, uniform up to a negligible bias (multiply-shift, no division loop).
    pub(crate) fn below_or_equal(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            return self.next_u64();
        }
        let range = u128::from(max) + 1;
        ((u128::from(self.next_u64()) * range) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_bounds_hold() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = SplitMix64::new(0);
        for max in [0u64, 1, 2, 10, 1_000, u64::MAX] {
            for _ in 0..100 {
                assert!(r.below_or_equal(max) <= max);
            }
        }
    }

    #[test]
    fn known_first_output_for_seed_zero() {
        // Reference value of SplitMix64 seeded with 0.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }
}

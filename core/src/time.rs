//! The caller's clock: [`Instant`], a point in time in whole milliseconds.
//!
//! The core never reads a clock. Every timer-driven machine ([`Reconnect`](crate::client::Reconnect),
//! [`KeepAlive`](crate::server::KeepAlive), [`TaskRegistry`](crate::server::TaskRegistry)) takes
//! the current time as an argument and answers with deadlines as `Instant`s. The origin is
//! whatever the caller picks (process start, a test's zero); only differences matter.
//!
//! All arithmetic saturates: an `Instant` never wraps and never panics, and subtracting a later
//! instant from an earlier one gives zero. Durations are converted to whole milliseconds,
//! rounding sub-millisecond remainders *up*, so a deadline computed from a duration is never
//! earlier than the duration asked for.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
use core::time::Duration;

/// A point in time: milliseconds since an origin chosen by the caller (smoltcp-style).
///
/// # Example
/// ```
/// use core::time::Duration;
/// use ssekit::time::Instant;
///
/// let start = Instant::from_millis(1_000);
/// let later = start + Duration::from_secs(2);
/// assert_eq!(later.as_millis(), 3_000);
/// assert_eq!(later - start, Duration::from_secs(2));
/// assert_eq!(start - later, Duration::ZERO);             // saturates, never panics
/// assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    millis: u64,
}

impl Instant {
    /// The origin.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::time::Instant::ZERO.as_millis(), 0);
    /// ```
    pub const ZERO: Instant = Instant { millis: 0 };

    /// The latest representable instant; arithmetic saturates here.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::time::Instant::MAX.as_millis(), u64::MAX);
    /// ```
    pub const MAX: Instant = Instant { millis: u64::MAX };

    /// An instant `millis` milliseconds after the origin.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::time::Instant::from_millis(5).as_millis(), 5);
    /// ```
    pub const fn from_millis(millis: u64) -> Self {
        Instant { millis }
    }

    /// An instant `secs` seconds after the origin (saturating).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::time::Instant::from_secs(2).as_millis(), 2_000);
    /// ```
    pub const fn from_secs(secs: u64) -> Self {
        Instant {
            millis: secs.saturating_mul(1_000),
        }
    }

    /// Milliseconds since the origin.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::time::Instant::from_secs(1).as_millis(), 1_000);
    /// ```
    pub const fn as_millis(self) -> u64 {
        self.millis
    }

    /// The time since the origin as a [`Duration`].
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// assert_eq!(ssekit::time::Instant::from_millis(1500).since_origin(), Duration::from_millis(1500));
    /// ```
    pub const fn since_origin(self) -> Duration {
        Duration::from_millis(self.millis)
    }

    /// `self - earlier`, or zero when `earlier` is later than `self`.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::time::Instant;
    /// let (a, b) = (Instant::from_millis(10), Instant::from_millis(25));
    /// assert_eq!(b.saturating_duration_since(a), Duration::from_millis(15));
    /// assert_eq!(a.saturating_duration_since(b), Duration::ZERO);
    /// ```
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_millis(self.millis.saturating_sub(earlier.millis))
    }

    /// `self + duration`, saturating at [`Instant::MAX`]. Sub-millisecond parts round up.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::time::Instant;
    /// assert_eq!(Instant::ZERO.saturating_add(Duration::from_micros(1)), Instant::from_millis(1));
    /// assert_eq!(Instant::MAX.saturating_add(Duration::MAX), Instant::MAX);
    /// ```
    pub fn saturating_add(self, duration: Duration) -> Instant {
        Instant {
            millis: self.millis.saturating_add(millis_ceil(duration)),
        }
    }

    /// `self - duration`, saturating at [`Instant::ZERO`]. Sub-millisecond parts round up.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::time::Instant;
    /// assert_eq!(Instant::from_millis(5).saturating_sub(Duration::from_secs(1)), Instant::ZERO);
    /// ```
    pub fn saturating_sub(self, duration: Duration) -> Instant {
        Instant {
            millis: self.millis.saturating_sub(millis_ceil(duration)),
        }
    }

    /// `self + duration`, or `None` past [`Instant::MAX`]. Sub-millisecond parts round up.
    ///
    /// # Example
    /// ```
    /// use core::time::Duration;
    /// use ssekit::time::Instant;
    /// assert_eq!(Instant::ZERO.checked_add(Duration::from_millis(3)), Some(Instant::from_millis(3)));
    /// assert_eq!(Instant::MAX.checked_add(Duration::from_millis(1)), None);
    /// ```
    pub fn checked_add(self, duration: Duration) -> Option<Instant> {
        let millis = u64::try_from(duration.as_millis()).ok()?;
        let extra = u64::from(!duration.subsec_nanos().is_multiple_of(1_000_000));
        self.millis
            .checked_add(millis)?
            .checked_add(extra)
            .map(Instant::from_millis)
    }
}

/// Whole milliseconds in `duration`, rounding a sub-millisecond remainder up, saturating.
pub(crate) fn millis_ceil(duration: Duration) -> u64 {
    let whole = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        whole.saturating_add(1)
    } else {
        whole
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating; see [`Instant::saturating_add`].
    fn add(self, rhs: Duration) -> Instant {
        self.saturating_add(rhs)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = self.saturating_add(rhs);
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturating; see [`Instant::saturating_sub`].
    fn sub(self, rhs: Duration) -> Instant {
        self.saturating_sub(rhs)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating; see [`Instant::saturating_duration_since`].
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

impl fmt::Display for Instant {
    /// Seconds with millisecond precision, e.g. `12.345s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.millis / 1_000, self.millis % 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn arithmetic_saturates_in_both_directions() {
        assert_eq!(Instant::MAX + Duration::MAX, Instant::MAX);
        assert_eq!(Instant::ZERO - Duration::MAX, Instant::ZERO);
        assert_eq!(Instant::ZERO - Instant::MAX, Duration::ZERO);
        let mut t = Instant::from_millis(u64::MAX - 1);
        t += Duration::from_millis(10);
        assert_eq!(t, Instant::MAX);
    }

    #[test]
    fn sub_millisecond_durations_round_up() {
        assert_eq!(
            Instant::ZERO + Duration::from_nanos(1),
            Instant::from_millis(1)
        );
        assert_eq!(
            Instant::ZERO + Duration::from_micros(1_500),
            Instant::from_millis(2)
        );
        assert_eq!(
            Instant::ZERO + Duration::from_millis(7),
            Instant::from_millis(7)
        );
    }

    #[test]
    fn display_is_seconds_with_millis() {
        assert_eq!(Instant::from_millis(12_345).to_string(), "12.345s");
        assert_eq!(Instant::from_millis(7).to_string(), "0.007s");
    }
}

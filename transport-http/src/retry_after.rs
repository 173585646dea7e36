//! `Retry-After` (RFC 9110 10.2.3) as a wait: [`retry_after`].
//!
//! The header is either a number of seconds or an HTTP date. The client reads no wall clock
//! (the core's time is the caller's `Instant`), so a date is measured from the same
//! response's `Date` header; a date without one is ignored, as are values that do not parse.
//! Dates are read in the preferred IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`), the
//! one RFC 9110 requires senders to use.

use std::time::Duration;

use http::header::{DATE, RETRY_AFTER};
use http::HeaderMap;

/// The wait a response's `Retry-After` asks for: `Retry-After: 120` is two minutes;
/// `Retry-After: <date>` is that date less the response's `Date`, or nothing when the
/// response has no `Date`; a date in the past is no wait. `None` when the header is
/// missing, repeated with different values, or does not parse.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use http::{HeaderMap, HeaderValue};
/// use ssekit_http::retry_after::retry_after;
/// let mut head = HeaderMap::new();
/// head.insert("retry-after", HeaderValue::from_static("120"));
/// assert_eq!(retry_after(&head), Some(Duration::from_secs(120)));
/// head.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:30 GMT"));
/// head.insert("date", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
/// assert_eq!(retry_after(&head), Some(Duration::from_secs(30)));
/// head.remove("date");
/// assert_eq!(retry_after(&head), None);
/// ```
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = single(headers, RETRY_AFTER)?;
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Past u64 seconds it is "for ever" all the same.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = imf_fixdate(value)?;
    let now = imf_fixdate(single(headers, DATE)?)?;
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// The one value of header `name`, trimmed; `None` when it is missing, not text, or given
/// more than once with different values.
fn single(headers: &HeaderMap, name: http::header::HeaderName) -> Option<&str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?.to_str().ok()?.trim();
    values
        .all(|v| v.to_str().is_ok_and(|v| v.trim() == first))
        .then_some(first)
}

/// Seconds since 1970-01-01 of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); the
/// day name is not checked against the date.
fn imf_fixdate(text: &str) -> Option<u64> {
    let rest = text.get(5..)?; // "Sun, "
    if text.get(3..5)? != ", " {
        return None;
    }
    let mut parts = rest.split(' ');
    let day: u64 = number(parts.next()?, 2)?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u64 = number(parts.next()?, 4)?;
    let mut clock = parts.next()?.split(':');
    let hour: u64 = number(clock.next()?, 2)?;
    let minute: u64 = number(clock.next()?, 2)?;
    let second: u64 = number(clock.next()?, 2)?;
    if parts.next()? != "GMT" || parts.next().is_some() || clock.next().is_some() {
        return None;
    }
    if !(1..=31).contains(&day) || year < 1970 || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_since_epoch(year, month, day);
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// A number of exactly `digits` ASCII digits.
fn number(text: &str, digits: usize) -> Option<u64> {
    (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// Days from 1970-01-01 to `year-month-day` (proleptic Gregorian; `year` ≥ 1970).
fn days_since_epoch(year: u64, month: u64, day: u64) -> u64 {
    // Howard Hinnant's days_from_civil, with years starting in March.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y % 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).saturating_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn head(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn dates_are_seconds_since_the_epoch() {
        assert_eq!(imf_fixdate("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            imf_fixdate("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            imf_fixdate("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(1_835_438_400)
        );
    }

    #[test]
    fn bad_values_are_no_wait() {
        for bad in [
            "",
            "-1",
            "1.5",
            " soon",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sü, 06 Nov 1994 08:49:37 GMT",
        ] {
            let map = head(&[
                ("retry-after", bad),
                ("date", "Sun, 06 Nov 1994 08:49:00 GMT"),
            ]);
            assert_eq!(retry_after(&map), None, "{bad:?}");
        }
    }

    #[test]
    fn seconds_past_what_fits_wait_for_ever_and_past_dates_wait_nothing() {
        let huge = head(&[("retry-after", "99999999999999999999999")]);
        assert_eq!(retry_after(&huge), Some(Duration::from_secs(u64::MAX)));
        let past = head(&[
            ("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT"),
            ("date", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ]);
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
    }

    #[test]
    fn a_repeated_header_counts_only_when_its_values_agree() {
        let same = head(&[("retry-after", "5"), ("retry-after", " 5")]);
        assert_eq!(retry_after(&same), Some(Duration::from_secs(5)));
        let different = head(&[("retry-after", "5"), ("retry-after", "50")]);
        assert_eq!(retry_after(&different), None);
    }
}

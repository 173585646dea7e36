//! [`Utf8Bytes`]: a cheaply clonable, reference-counted string backed by [`Bytes`].
//!
//! Decoded fields are handed out as slices of the input buffer; this type is how they stay
//! zero-copy while still being guaranteed UTF-8.

use alloc::string::String;
use core::fmt;
use core::ops::Deref;

use bytes::Bytes;

/// An immutable UTF-8 string that shares its storage with a [`Bytes`] buffer.
///
/// Cloning is a reference-count increment; slicing a decoded stream into fields
/// does not copy. The contents are always valid UTF-8.
///
/// # Example
/// ```
/// use ssekit::Utf8Bytes;
/// let s = Utf8Bytes::from_static("héllo");
/// assert_eq!(s.as_str(), "héllo");
/// assert_eq!(s.len(), 6);
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Utf8Bytes(Bytes);

impl Utf8Bytes {
    /// An empty string; no allocation.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::Utf8Bytes::new().is_empty());
    /// ```
    pub const fn new() -> Self {
        Utf8Bytes(Bytes::new())
    }

    /// Wraps a `&'static str` without copying.
    ///
    /// # Example
    /// ```
    /// let s = ssekit::Utf8Bytes::from_static("ping");
    /// assert_eq!(&*s, "ping");
    /// ```
    pub const fn from_static(s: &'static str) -> Self {
        Utf8Bytes(Bytes::from_static(s.as_bytes()))
    }

    /// Copies a borrowed string into a new buffer.
    ///
    /// # Example
    /// ```
    /// let owned = String::from("x");
    /// let s = ssekit::Utf8Bytes::copy_from_str(&owned);
    /// assert_eq!(s, "x");
    /// ```
    pub fn copy_from_str(s: &str) -> Self {
        Utf8Bytes(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// Checks that `bytes` are UTF-8 and wraps them without copying.
    ///
    /// # Example
    /// ```
    /// use bytes::Bytes;
    /// assert!(ssekit::Utf8Bytes::try_from_bytes(Bytes::from_static(b"ok")).is_ok());
    /// assert!(ssekit::Utf8Bytes::try_from_bytes(Bytes::from_static(b"\xff")).is_err());
    /// ```
    pub fn try_from_bytes(bytes: Bytes) -> Result<Self, core::str::Utf8Error> {
        core::str::from_utf8(&bytes)?;
        Ok(Utf8Bytes(bytes))
    }

    /// Decodes `bytes` as UTF-8 the way a browser does: each maximal invalid
    /// subsequence becomes U+FFFD. Valid input is wrapped without copying.
    ///
    /// # Example
    /// ```
    /// use bytes::Bytes;
    /// let s = ssekit::Utf8Bytes::from_utf8_lossy(Bytes::from_static(b"a\xffb"));
    /// assert_eq!(s, "a\u{FFFD}b");
    /// ```
    pub fn from_utf8_lossy(bytes: Bytes) -> Self {
        // ASCII (the common case for SSE fields) is checked a word at a time, far cheaper than
        // full validation; anything else is validated, and repaired only when invalid.
        if is_ascii(&bytes) || core::str::from_utf8(&bytes).is_ok() {
            Utf8Bytes(bytes)
        } else {
            let repaired: String = String::from_utf8_lossy(&bytes).into_owned();
            Utf8Bytes(Bytes::from(repaired))
        }
    }

    /// Bytes the decoder's line scan found all below 0x80 (see `line_scan`), kept without
    /// a second look. Debug builds (and the fuzz targets, built with debug assertions)
    /// check the claim.
    pub(crate) fn from_scanned_ascii(bytes: Bytes) -> Self {
        debug_assert!(
            bytes.is_ascii(),
            "line scan reported non-ASCII bytes as ASCII"
        );
        Utf8Bytes(bytes)
    }

    /// A zero-copy substring: `None` when `range` is out of bounds or does not fall on
    /// character boundaries. Only the two ends are checked; the contents are already UTF-8.
    ///
    /// # Example
    /// ```
    /// let s = ssekit::Utf8Bytes::from_static("héllo");
    /// assert_eq!(s.slice(0..3).as_deref(), Some("hé"));
    /// assert_eq!(s.slice(0..2), None); // inside 'é'
    /// assert_eq!(s.slice(4..9), None); // out of bounds
    /// ```
    pub fn slice(&self, range: core::ops::Range<usize>) -> Option<Self> {
        self.as_str().get(range.clone())?;
        Some(Utf8Bytes(self.0.slice(range)))
    }

    /// The string.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Utf8Bytes::from_static("a").as_str(), "a");
    /// ```
    #[allow(unsafe_code)]
    pub fn as_str(&self) -> &str {
        // SAFETY: the bytes are valid UTF-8. This is the invariant of the type, kept by this
        // module alone: the field is private, and every constructor either starts from a
        // `str`/`String` (`from_static`, `copy_from_str`, `From<&'static str>`,
        // `From<String>`, the repaired branch of `from_utf8_lossy`), is empty (`new`,
        // `Default`), checks the bytes first (`try_from_bytes` and `from_utf8_lossy`, with
        // `core::str::from_utf8`, or this module's `is_ascii`, which implies UTF-8 and is
        // tested against a planted high byte at every position of every length up to 140 and
        // around its 256-byte switch, covering its block, word, byte and std paths), takes
        // bytes the decoder's line scan found all below 0x80 (`from_scanned_ascii`: see
        // `str_of_scanned_ascii` for why that claim holds; debug builds assert it), or is
        // `slice`, which cuts an already valid string only where `str::get` confirms
        // character boundaries (a substring of UTF-8 between two boundaries is UTF-8). `Bytes` is an immutable
        // view, and nothing here hands out a way to change the bytes. Checking again here
        // would make every `data()` call O(n). Every fuzz target exercises this path.
        unsafe { core::str::from_utf8_unchecked(&self.0) }
    }

    /// The underlying bytes, sharing storage.
    ///
    /// # Example
    /// ```
    /// let s = ssekit::Utf8Bytes::from_static("ab");
    /// assert_eq!(&s.as_bytes()[..], b"ab");
    /// ```
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// Consumes the string and returns its bytes, sharing storage.
    ///
    /// # Example
    /// ```
    /// let b = ssekit::Utf8Bytes::from_static("ab").into_bytes();
    /// assert_eq!(&b[..], b"ab");
    /// ```
    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

/// `bytes` as a string when they are UTF-8: the decoder's check for borrowed frames, with
/// the same ASCII fast path as [`Utf8Bytes::from_utf8_lossy`] (about 8x cheaper than
/// `core::str::from_utf8` on a 4 KiB chunk, measured with callgrind on `ors-chunks`).
#[allow(unsafe_code)]
#[inline]
pub(crate) fn str_of(bytes: &[u8]) -> Option<&str> {
    if is_ascii(bytes) {
        // SAFETY: every byte is below 0x80, and a sequence of such bytes is valid UTF-8 (each
        // is a one-byte character). `is_ascii` is the same function `as_str`'s argument
        // relies on, tested against a planted high byte at every position of every length
        // up to 80 and around its 256-byte switch. The `decode` and `decode_split` fuzz
        // targets drain with `next_frame_ref`, which reaches this line for every field.
        Some(unsafe { core::str::from_utf8_unchecked(bytes) })
    } else {
        core::str::from_utf8(bytes).ok()
    }
}

/// `bytes` as a string, given that the decoder's line scan found them all below 0x80
/// (`line_scan::LineEnd::ascii`, carried to here by the decoder's `Value::ascii`).
#[allow(unsafe_code)]
#[inline(always)]
pub(crate) fn str_of_scanned_ascii(bytes: &[u8]) -> &str {
    debug_assert!(
        bytes.is_ascii(),
        "line scan reported non-ASCII bytes as ASCII"
    );
    // SAFETY: bytes all below 0x80 are valid UTF-8 (each is a one-byte character). The
    // caller's claim comes from `line_scan::scan_line`, whose `ascii` is true only when the
    // high-bit mask of every 16-byte block up to the line ending was zero (its tests plant a
    // high byte at every position of every line length below 300 and check that it is
    // seen), and the decoder gives `ascii: true` only to values that lie inside such a
    // line, to a data line that `is_ascii` below checked (one the scan did not see whole),
    // or to joined data made only of such values. A value kept as a range of the
    // piece it was found in is only read against that piece: the decoder replaces its
    // current piece only after `FieldState::detach` has turned such ranges into shared
    // slices of the same bytes (a range outside the piece reads as empty, which is ASCII).
    // The `decode`, `decode_split` and `decode_reference` fuzz targets run with debug
    // assertions, so the assertion above checks the claim for every field they decode.
    unsafe { core::str::from_utf8_unchecked(bytes) }
}

/// Whether every byte is below 0x80. ORs the input together 16 bytes at a time (two
/// independent 8-byte chains, unrolled four times) and tests the high bits once; the last
/// block overlaps the one before it instead of finishing byte by byte, and 8-15 bytes are two
/// overlapping words. About twice as fast as `<[u8]>::is_ascii` on the 30-150-byte fields
/// typical of SSE (measured with callgrind on the `tokens` workload), and 14% more `tokens`
/// events per second than the 8-byte version it replaced (`decode_once`, best of five).
/// From 256 bytes on, [`is_ascii_long`].
pub(crate) fn is_ascii(bytes: &[u8]) -> bool {
    if bytes.len() >= 256 {
        return is_ascii_long(bytes);
    }
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    if let Some(last) = bytes.last_chunk::<16>() {
        let word = |block: &[u8]| u128::from_ne_bytes(block.try_into().unwrap_or_default());
        let acc = bytes
            .chunks_exact(16)
            .fold(u128::from_ne_bytes(*last), |acc, block| acc | word(block));
        return acc & (u128::from(HIGH_BITS) << 64 | u128::from(HIGH_BITS)) == 0;
    }
    let Some(last) = bytes.last_chunk::<8>() else {
        return bytes.iter().fold(0, |acc, &b| acc | b) < 0x80;
    };
    let first = bytes.first_chunk::<8>().unwrap_or(last);
    (u64::from_ne_bytes(*first) | u64::from_ne_bytes(*last)) & HIGH_BITS == 0
}

/// [`is_ascii`] for long fields: ORs 256 bytes, then 64, at a time (folds of a fixed length,
/// which LLVM turns into vector ORs), and ends with the last 64 bytes, overlapping the blocks
/// before them instead of finishing byte by byte.
///
/// `<[u8]>::is_ascii` (Rust 1.95) is as fast at some lengths and up to 8x slower at others,
/// where it finishes a byte at a time. Checking one buffer again and again in a standalone
/// loop (2026-11-26, Intel Xeon, GB/s, std against this): 300 bytes 10-14 against 92-102,
/// 500 bytes 15-19 against 90, 1,000 bytes 29-48 against 105-108, 3,000 bytes 47-50 against
/// 124-126; 4 KiB 105-117 against 124-128, 16 KiB 149-151 against 127, 64 KiB 95-97 against
/// 92. Data lines of a few hundred bytes to a few KiB (Responses snapshots, tool-call
/// arguments) are common in the streams ssekit is for.
fn is_ascii_long(bytes: &[u8]) -> bool {
    fn any_high(block: &[u8]) -> bool {
        block.iter().fold(0, |acc, &b| acc | b) >= 0x80
    }
    let Some(last) = bytes.last_chunk::<64>() else {
        return !any_high(bytes);
    };
    let mut groups = bytes.chunks_exact(256);
    if groups.any(any_high) {
        return false;
    }
    !groups.remainder().chunks_exact(64).any(any_high) && !any_high(last)
}

impl Deref for Utf8Bytes {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Utf8Bytes {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for Utf8Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Utf8Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Utf8Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<&'static str> for Utf8Bytes {
    fn from(s: &'static str) -> Self {
        Utf8Bytes::from_static(s)
    }
}

impl From<String> for Utf8Bytes {
    fn from(s: String) -> Self {
        Utf8Bytes(Bytes::from(s))
    }
}

impl From<Utf8Bytes> for Bytes {
    fn from(s: Utf8Bytes) -> Bytes {
        s.0
    }
}

impl PartialEq<str> for Utf8Bytes {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Utf8Bytes {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_replaces_each_maximal_invalid_subpart_like_a_browser() {
        // E2 82 is a truncated 3-byte sequence: one U+FFFD. FF is never valid: one U+FFFD.
        let s = Utf8Bytes::from_utf8_lossy(Bytes::from_static(b"\xE2\x82x\xFFy"));
        assert_eq!(s, "\u{FFFD}x\u{FFFD}y");
    }

    #[test]
    fn slice_is_zero_copy_and_only_cuts_at_character_boundaries() {
        let s = Utf8Bytes::from(alloc::string::String::from("a€b"));
        let mid = s.slice(1..4).unwrap();
        assert_eq!(mid, "€");
        assert_eq!(mid.as_bytes().as_ptr(), s.as_bytes()[1..].as_ptr());
        #[allow(clippy::reversed_empty_ranges)] // a reversed range must be refused, not panic
        for bad in [1..2, 2..4, 0..6, 5..4] {
            assert_eq!(s.slice(bad.clone()), None, "{bad:?}");
        }
        assert_eq!(s.slice(5..5).as_deref(), Some(""));
    }

    #[test]
    fn is_ascii_agrees_with_std_at_every_length_and_position() {
        // Both sides of the switch to the long check at 256 bytes, and in the long check
        // every way its 256- and 64-byte blocks and its overlapping last block can fall.
        for len in (0..140)
            .chain(250..262)
            .chain([319, 320, 321, 383, 511, 512, 513, 700])
        {
            let clean = alloc::vec![b'a'; len];
            assert!(is_ascii(&clean));
            for at in 0..len {
                let mut dirty = clean.clone();
                dirty[at] = 0x80 | (at as u8 & 0x7f);
                assert!(!is_ascii(&dirty), "len {len} at {at}");
            }
        }
    }

    #[test]
    fn valid_input_is_not_copied() {
        let b = Bytes::from_static(b"abc");
        let s = Utf8Bytes::from_utf8_lossy(b.clone());
        assert_eq!(s.as_bytes().as_ptr(), b.as_ptr());
    }
}

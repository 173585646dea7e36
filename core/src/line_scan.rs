//! The decoder's hot line scan: where the next line ends, and whether its bytes are ASCII,
//! in one pass.
//!
//! A borrowed frame's fields must be `&str`, so every value is checked for UTF-8 before it
//! is handed out; on the `tokens` workload that check was a fifth of the time of an event,
//! a second pass over bytes the line scan had just read. Here the scan reads 32 bytes per
//! step with SSE2 (part of every x86-64 CPU) and keeps, beside the line-ending mask, the
//! bytes' high bits. A line found this way within its first [`SHORT`] bytes comes with
//! `ascii`: none of its bytes is 0x80 or above, so it is UTF-8 and needs no other check.
//! Longer lines (where `memchr2`'s unrolled AVX2 loop wins) and other targets report
//! `ascii: false`, which only means "not known": the value is then checked as before.
//!
//! Tiny pieces (up to 16 bytes) are looked at once, as they are fed: [`WordPair`] gives their
//! line endings and high bytes from one SSE2 vector of their two 8-byte words, and
//! [`TailMasks`] keeps those bits for the lines such a piece completes.
//!
//! Measured against `memchr2` plus the separate check (`decode_once`, best of five runs of
//! 200 decodes, `next_frame_ref`): `tokens` +7% in 16 KiB pieces and +5% in 1460-byte ones,
//! `keepalive-heavy` +12%; the first 256 bytes of each 4 KiB `ors-chunks` line cost 5%
//! there, since SSE2 reads them slower than AVX2.

/// A line found by [`scan_line`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineEnd {
    /// Index of the line's CR or LF in the scanned slice, if there is one.
    pub(crate) at: Option<usize>,
    /// `true` only if every byte before `at` is below 0x80, or every byte of the slice when
    /// it holds no ending; `false` means one is not, or that it is not known.
    pub(crate) ascii: bool,
}

/// How many leading bytes are read here before the rest goes to `memchr2`.
const SHORT: usize = 256;

/// [`scan_line_head`]'s answer for a line that its first [`SHORT`] bytes do not end, in a
/// slice longer than that: whether those bytes are ASCII. The rest of the slice is read
/// with [`scan_long`], or with a copy that scans as it goes, and the two answers joined
/// ([`join`](Self::join)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LongLine {
    head_ascii: bool,
}

impl LongLine {
    /// The bytes read so far and the rest of `bytes`, the slice it was found in.
    ///
    /// ```ignore
    /// let (head, tail) = long.split(bytes);
    /// assert_eq!(head.len(), 256);
    /// ```
    pub(crate) fn split(self, bytes: &[u8]) -> (&[u8], &[u8]) {
        bytes.split_at(SHORT.min(bytes.len()))
    }

    /// The line's end and ASCII-ness in the whole slice, from those in the rest of it.
    ///
    /// ```ignore
    /// let found = long.join(scan_long(long.split(bytes).1));
    /// ```
    pub(crate) fn join(self, tail: LineEnd) -> LineEnd {
        LineEnd {
            at: tail.at.map(|at| SHORT + at),
            ascii: tail.ascii && self.head_ascii,
        }
    }
}

/// Finds the first CR or LF of `bytes`, and says whether the bytes before it are ASCII.
///
/// ```ignore
/// assert_eq!(scan_line(b"data: x\r\n"), LineEnd { at: Some(7), ascii: true });
/// ```
#[inline(always)]
pub(crate) fn scan_line(bytes: &[u8]) -> LineEnd {
    match scan_line_head(bytes) {
        Ok(found) => found,
        Err(long) => long.join(scan_long(long.split(bytes).1)),
    }
}

/// [`scan_line`] up to its first [`SHORT`] bytes: `Err` when none of them ends the line
/// and the slice goes on past them, for the caller to read the rest.
///
/// ```ignore
/// assert_eq!(scan_line_head(b"data: x\r\n"), Ok(scan_line(b"data: x\r\n")));
/// ```
#[inline(always)]
pub(crate) fn scan_line_head(bytes: &[u8]) -> Result<LineEnd, LongLine> {
    match bytes.first() {
        // A blank line (every event ends with one) needs no vector: its first byte is
        // already the line ending.
        Some(b'\n' | b'\r') => Ok(LineEnd {
            at: Some(0),
            ascii: true,
        }),
        None => Ok(LineEnd {
            at: None,
            ascii: true,
        }),
        Some(_) => scan_after_first(bytes),
    }
}

/// The line endings and high bytes of a piece of 8 to 16 bytes seen as its first and last 8
/// bytes, little-endian words that overlap when it is shorter than 16: bit `i` for byte `i`
/// of `first`, bit `8 + i` for byte `i` of `last`. Every byte of the piece is in one word or
/// both, so whether it holds a line ending or a high byte is one test of these bits.
///
/// ```ignore
/// let pair = WordPair::of(u64::from_le_bytes(*b"data: x\n"), u64::from_le_bytes(*b"a: x\n\xc3\xa9!"));
/// assert!(pair.has_ending() && !pair.is_ascii());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WordPair {
    endings: u32,
    highs: u32,
}

impl WordPair {
    /// The masks of the words `first` and `last`.
    #[inline(always)]
    pub(crate) fn of(first: u64, last: u64) -> Self {
        let (endings, highs) = word_pair_masks(first, last);
        WordPair { endings, highs }
    }

    /// Whether a byte of either word is CR or LF.
    #[inline(always)]
    pub(crate) fn has_ending(self) -> bool {
        self.endings != 0
    }

    /// Whether every byte of both words is below 0x80.
    #[inline(always)]
    pub(crate) fn is_ascii(self) -> bool {
        self.highs == 0
    }
}

/// Where the line endings and the high bytes (0x80 and above) of a tiny piece lie, one bit
/// per byte, aligned to the piece's end: bit `SPAN - len + i` stands for `piece[i]`.
///
/// The decoder copies a tiny piece onto the end of its held buffer and computes these from
/// the words it has just loaded to copy it; the lines the piece completes are then found with
/// a `trailing_zeros` instead of a byte loop. Aligned to the end, the bits stay right when
/// the buffer lets go of bytes before the piece.
///
/// ```ignore
/// let masks = TailMasks::of_bytes(b"a\n\xc3b");
/// assert_eq!(masks.line_end(4), LineEnd { at: Some(1), ascii: true });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TailMasks {
    endings: u32,
    highs: u32,
}

impl TailMasks {
    /// The most bytes the masks cover: the largest tiny piece.
    pub(crate) const SPAN: usize = 16;

    /// The masks of a one-byte piece that is a line ending (CR or LF).
    pub(crate) const LAST_BYTE_ENDS_LINE: Self = TailMasks {
        endings: 1 << (Self::SPAN - 1),
        highs: 0,
    };

    /// The masks of a piece of `len` bytes, 8 to [`SPAN`](Self::SPAN), from those of its two
    /// words.
    #[inline(always)]
    pub(crate) fn of_words(pair: WordPair, len: usize) -> Self {
        let (last_at, align) = (len.saturating_sub(8), Self::SPAN.saturating_sub(len));
        // Bits 0-7 stand for `first`'s bytes, 8-15 for `last`'s: move those to the piece's end.
        let place = |bits: u32| ((bits & 0xff) | (bits >> 8) << last_at) << align;
        TailMasks {
            endings: place(pair.endings),
            highs: place(pair.highs),
        }
    }

    /// The masks of a piece of up to [`SPAN`](Self::SPAN) bytes, a byte at a time.
    pub(crate) fn of_bytes(piece: &[u8]) -> Self {
        let align = Self::SPAN.saturating_sub(piece.len());
        let mut masks = TailMasks::default();
        for (i, &byte) in piece.iter().take(Self::SPAN).enumerate() {
            let bit = 1u32 << (align + i);
            if byte == b'\n' || byte == b'\r' {
                masks.endings |= bit;
            }
            if !byte.is_ascii() {
                masks.highs |= bit;
            }
        }
        masks
    }

    /// Whether the masks show a line ending.
    #[inline(always)]
    pub(crate) fn has_ending(self) -> bool {
        self.endings != 0
    }

    /// What [`scan_line`] reports for the last `unscanned` bytes covered, at most
    /// [`SPAN`](Self::SPAN) (more count as that many).
    #[inline(always)]
    pub(crate) fn line_end(self, unscanned: usize) -> LineEnd {
        let shift = Self::SPAN.saturating_sub(unscanned) as u32;
        let endings = self.endings >> shift;
        if endings == 0 {
            return LineEnd {
                at: None,
                ascii: self.highs >> shift == 0,
            };
        }
        let at = endings.trailing_zeros();
        let before = (1u32 << at) - 1;
        LineEnd {
            at: Some(at as usize),
            ascii: (self.highs >> shift) & before == 0,
        }
    }

    /// Whether any of the last `unscanned` bytes covered is 0x80 or above.
    #[inline(always)]
    pub(crate) fn any_high(self, unscanned: usize) -> bool {
        self.highs >> Self::SPAN.saturating_sub(unscanned) != 0
    }
}

/// The line endings and the high bytes of two words (little-endian order), bit `i` for byte
/// `i` of `first` and bit `8 + i` for byte `i` of `last`: one SSE2 vector of both.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn word_pair_masks(first: u64, last: u64) -> (u32, u32) {
    sse2::word_pair_masks(first, last)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn word_pair_masks(first: u64, last: u64) -> (u32, u32) {
    word_pair_masks_portable(first, last)
}

/// The line endings and the high bytes of two words, as the SSE2 version: a word at a time
/// (elsewhere than x86-64, and in the tests there).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
fn word_pair_masks_portable(first: u64, last: u64) -> (u32, u32) {
    let ((first_endings, first_highs), (last_endings, last_highs)) =
        (word_masks(first), word_masks(last));
    (
        first_endings | last_endings << 8,
        first_highs | last_highs << 8,
    )
}

/// Each byte's high bit.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The line endings and the high bytes of the 8 bytes of `word` (little-endian order), bit
/// `i` for byte `i`.
#[inline(always)]
fn word_masks(word: u64) -> (u32, u32) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW_BITS: u64 = !HIGH_BITS;
    // The high bit of a byte of `nonzero(x)` is set iff that byte of `x` is not zero: the low
    // seven bits plus 0x7f carry into it unless they are all zero, and no sum leaves its byte.
    let nonzero = |x: u64| ((x & LOW_BITS) + LOW_BITS) | x;
    let lf = word ^ (ONES * u64::from(b'\n'));
    let cr = word ^ (ONES * u64::from(b'\r'));
    let endings = !(nonzero(lf) & nonzero(cr)) & HIGH_BITS;
    (
        gather_high_bits(endings),
        gather_high_bits(word & HIGH_BITS),
    )
}

/// The high bits of the 8 bytes of `flags` (its other bits clear) as 8 bits, byte `i`'s at
/// bit `i`: each flag, moved to its byte's lowest bit, is multiplied into the top byte at its
/// own position, and no two products meet.
#[inline(always)]
fn gather_high_bits(flags: u64) -> u32 {
    ((flags >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn scan_after_first(bytes: &[u8]) -> Result<LineEnd, LongLine> {
    if bytes.len() < 16 {
        return Ok(scan_bytewise(bytes));
    }
    sse2::scan(bytes)
}

/// A slice shorter than one vector, byte by byte.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn scan_bytewise(bytes: &[u8]) -> LineEnd {
    let at = bytes.iter().position(|&b| b == b'\n' || b == b'\r');
    let line = bytes.get(..at.unwrap_or(bytes.len())).unwrap_or_default();
    LineEnd {
        at,
        ascii: line.is_ascii(),
    }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn scan_after_first(bytes: &[u8]) -> Result<LineEnd, LongLine> {
    Ok(LineEnd {
        at: memchr::memchr2(b'\n', b'\r', bytes),
        ascii: false,
    })
}

/// [`scan_line`] for the rest of a piece that continues a line begun in an earlier one: a
/// long rest goes to [`scan_long`] from its first byte. Such a line is long already, so its
/// ending is rarely near, and the SSE2 steps over the first [`SHORT`] bytes cost more than
/// the call (on `big-data` in 1460-byte pieces they were a fifth of the instructions).
#[inline(always)]
pub(crate) fn scan_continued(bytes: &[u8]) -> LineEnd {
    if bytes.len() > SHORT {
        scan_long(bytes)
    } else {
        scan_line(bytes)
    }
}

/// [`scan_line`] for the part of a long line past its first [`SHORT`] bytes, and for a
/// piece that continues a line begun in an earlier one: where the first CR or LF is, and
/// whether the bytes before it (all of them, when there is none) are ASCII, in one pass.
///
/// With `std` on x86-64 CPUs that have AVX2 (detected at run time, once) this reads 64 bytes
/// per step, the line endings and the high bits together, so a long line is read once instead
/// of twice (by `memchr2` for its end, then by an ASCII or UTF-8 check when it is handed out).
/// Elsewhere it is `memchr2` alone, and `ascii` is `false` ("not known"), as before.
///
/// ```ignore
/// assert_eq!(scan_long(b"abc\n"), LineEnd { at: Some(3), ascii: true }); // with AVX2
/// ```
#[inline(never)]
pub(crate) fn scan_long(bytes: &[u8]) -> LineEnd {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        return avx2::scan(bytes);
    }
    LineEnd {
        at: memchr::memchr2(b'\n', b'\r', bytes),
        ascii: false,
    }
}

/// Whether [`scan_long`] reports the ASCII-ness of what it reads on this CPU: with `std` on
/// x86-64 with AVX2, where it is the AVX2 kernel (as `line_copy`'s fused copy is).
///
/// ```ignore
/// let _exact = long_scan_knows_ascii();
/// ```
#[inline]
pub(crate) fn long_scan_knows_ascii() -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        return true;
    }
    false
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
pub(crate) mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8, _mm256_setzero_si256,
    };

    use super::LineEnd;

    /// [`super::scan_long`] on a CPU with AVX2.
    #[inline(always)]
    pub(super) fn scan(bytes: &[u8]) -> LineEnd {
        // SAFETY: `scan_avx2` requires the `avx2` target feature, and its only caller,
        // `scan_long`, calls this only after `is_x86_feature_detected!("avx2")` returned
        // true, so the CPU running it has AVX2. The function reads memory only through
        // `load`, from references to 32 initialized bytes.
        #[allow(unsafe_code)]
        unsafe {
            scan_avx2(bytes)
        }
    }

    /// The 32 bytes of `block` as a vector (also the loads of `line_copy`).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn load(block: &[u8; 32]) -> __m256i {
        // SAFETY: the pointer comes from a reference to 32 initialized bytes, so it is valid
        // for a 32-byte read, and `_mm256_loadu_si256` has no alignment requirement.
        #[allow(unsafe_code)]
        unsafe {
            _mm256_loadu_si256(block.as_ptr().cast())
        }
    }

    /// Reads 64 bytes per step (one test for both halves; the high bits are or-ed into a
    /// vector and read once at the end), then the last 32 bytes, overlapping bytes already
    /// read (which held no line ending, and whose high bits are already in), and a slice
    /// shorter than 32 bytes a byte at a time.
    #[target_feature(enable = "avx2")]
    fn scan_avx2(bytes: &[u8]) -> LineEnd {
        let lf = _mm256_set1_epi8(b'\n' as i8);
        let cr = _mm256_set1_epi8(b'\r' as i8);
        let ending =
            |v: __m256i| _mm256_or_si256(_mm256_cmpeq_epi8(v, lf), _mm256_cmpeq_epi8(v, cr));
        let mask = |v: __m256i| u64::from(_mm256_movemask_epi8(v) as u32);
        let mut high = _mm256_setzero_si256();
        // The line ends in the bytes at `base` whose endings and high bits are `endings` and
        // `bits`: its ASCII-ness is the high bits before the ending there and all of `high`.
        let found = |base: usize, endings: u64, bits: u64, high: __m256i| {
            let at = endings.trailing_zeros();
            let before = (1u64 << at) - 1;
            LineEnd {
                at: Some(base + at as usize),
                ascii: (bits & before) | mask(high) == 0,
            }
        };
        let mut base = 0;
        // 128 bytes a step while they last: one test for four vectors, as `memchr2` does.
        for quad in bytes.chunks_exact(128) {
            let at = |i: usize| quad.get(i..).and_then(|rest| rest.first_chunk::<32>());
            let (Some(a), Some(b), Some(c), Some(d)) = (at(0), at(32), at(64), at(96)) else {
                break;
            };
            let (a, b, c, d) = (load(a), load(b), load(c), load(d));
            let any = _mm256_or_si256(
                _mm256_or_si256(ending(a), ending(b)),
                _mm256_or_si256(ending(c), ending(d)),
            );
            if mask(any) != 0 {
                break; // the 64-byte steps below find it
            }
            high = _mm256_or_si256(
                high,
                _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)),
            );
            base += 128;
        }
        for pair in bytes.get(base..).unwrap_or_default().chunks_exact(64) {
            let (Some(low), Some(up)) = (pair.first_chunk::<32>(), pair.last_chunk::<32>()) else {
                break;
            };
            let (low, up) = (load(low), load(up));
            let (low_end, up_end) = (ending(low), ending(up));
            if mask(_mm256_or_si256(low_end, up_end)) != 0 {
                let endings = mask(low_end) | mask(up_end) << 32;
                let bits = mask(low) | mask(up) << 32;
                return found(base, endings, bits, high);
            }
            high = _mm256_or_si256(high, _mm256_or_si256(low, up));
            base += 64;
        }
        let len = bytes.len();
        if len < 32 {
            let at = bytes.iter().position(|&b| b == b'\n' || b == b'\r');
            let line = bytes.get(..at.unwrap_or(len)).unwrap_or_default();
            return LineEnd {
                at,
                ascii: line.is_ascii(),
            };
        }
        // Fewer than 64 bytes left: one or two 32-byte blocks, the last ending at the end.
        let mut start = base;
        while start < len {
            let from = start.min(len - 32);
            let Some(block) = bytes.get(from..).and_then(|rest| rest.first_chunk::<32>()) else {
                break;
            };
            let vector = load(block);
            let endings = mask(ending(vector));
            if endings != 0 {
                return found(from, endings, mask(vector), high);
            }
            high = _mm256_or_si256(high, vector);
            start = from + 32;
        }
        LineEnd {
            at: None,
            ascii: mask(high) == 0,
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        _mm_set_epi64x, _mm_setzero_si128,
    };

    use super::{LineEnd, LongLine, SHORT};

    /// [`super::scan_line_head`] past the first byte, for a slice of at least 16 bytes.
    #[inline(always)]
    pub(super) fn scan(bytes: &[u8]) -> Result<LineEnd, LongLine> {
        // SAFETY: `scan_sse2` only requires the `sse2` target feature, and this module is
        // compiled only where `target_feature = "sse2"` is enabled for the whole crate (it is
        // part of the x86-64 baseline), so every CPU this code runs on has it.
        #[allow(unsafe_code)]
        unsafe {
            scan_sse2(bytes)
        }
    }

    /// [`super::word_pair_masks`]: both words in one vector, compared to LF and CR.
    #[inline(always)]
    pub(super) fn word_pair_masks(first: u64, last: u64) -> (u32, u32) {
        // SAFETY: as in `scan`: `pair_masks_sse2` requires only `sse2`, which this module's
        // `cfg` guarantees every CPU running it has. It reads no memory.
        #[allow(unsafe_code)]
        unsafe {
            pair_masks_sse2(first, last)
        }
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn pair_masks_sse2(first: u64, last: u64) -> (u32, u32) {
        let vector = _mm_set_epi64x(last as i64, first as i64);
        let lf = _mm_set1_epi8(b'\n' as i8);
        let cr = _mm_set1_epi8(b'\r' as i8);
        let endings = _mm_or_si128(_mm_cmpeq_epi8(vector, lf), _mm_cmpeq_epi8(vector, cr));
        (
            _mm_movemask_epi8(endings) as u32,
            _mm_movemask_epi8(vector) as u32,
        )
    }

    /// The 16 bytes of `block` as a vector.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(block: &[u8; 16]) -> __m128i {
        // SAFETY: the pointer comes from a reference to 16 initialized bytes, so it is valid
        // for a 16-byte read, and `_mm_loadu_si128` has no alignment requirement.
        #[allow(unsafe_code)]
        unsafe {
            _mm_loadu_si128(block.as_ptr().cast())
        }
    }

    /// Reads 32 bytes per step (one test for both halves), then a last 16-byte block, up to
    /// [`SHORT`] bytes; the high bits are or-ed into a vector and read once at the end.
    #[inline(never)]
    #[target_feature(enable = "sse2")]
    fn scan_sse2(bytes: &[u8]) -> Result<LineEnd, LongLine> {
        let lf = _mm_set1_epi8(b'\n' as i8);
        let cr = _mm_set1_epi8(b'\r' as i8);
        let ending = |v: __m128i| _mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr));
        let mask = |v: __m128i| _mm_movemask_epi8(v) as u32;
        let mut high = _mm_setzero_si128();
        // The line ends in the 32 bytes at `base` (halves `low`, `up`): its ASCII-ness is
        // the high bits before it there and all those of earlier blocks.
        let found = |base: usize, endings: u32, bits: u32, high: __m128i| {
            let at = endings.trailing_zeros();
            let before = (1u64 << at) as u32 - 1;
            LineEnd {
                at: Some(base + at as usize),
                ascii: (bits & before) | mask(high) == 0,
            }
        };
        let short = bytes.get(..bytes.len().min(SHORT)).unwrap_or_default();
        let mut read = 0;
        for pair in short.chunks_exact(32) {
            let (low, up) = pair.split_at(16);
            let (Ok(low), Ok(up)) = (<&[u8; 16]>::try_from(low), <&[u8; 16]>::try_from(up)) else {
                break;
            };
            let (low, up) = (load(low), load(up));
            let (low_end, up_end) = (ending(low), ending(up));
            if mask(_mm_or_si128(low_end, up_end)) != 0 {
                let endings = mask(low_end) | mask(up_end) << 16;
                let bits = mask(low) | mask(up) << 16;
                return Ok(found(read, endings, bits, high));
            }
            high = _mm_or_si128(high, _mm_or_si128(low, up));
            read += 32;
        }
        if bytes.len() > SHORT && read == SHORT {
            return Err(LongLine {
                head_ascii: mask(high) == 0,
            });
        }
        // Fewer than 32 bytes left (at least 16 in all): one or two 16-byte blocks, the last
        // one ending at the slice's end. A block may overlap bytes already read, which held
        // no line ending and whose high bits are already in `high`, so reading them again
        // changes neither answer.
        let mut start = read;
        while start < bytes.len() {
            let from = start.min(bytes.len().saturating_sub(16));
            let Some(block) = bytes
                .get(from..from + 16)
                .and_then(|block| <&[u8; 16]>::try_from(block).ok())
            else {
                break;
            };
            let vector = load(block);
            let endings = mask(ending(vector));
            if endings != 0 {
                return Ok(found(from, endings, mask(vector), high));
            }
            high = _mm_or_si128(high, vector);
            start = from + 16;
        }
        Ok(LineEnd {
            at: None,
            ascii: mask(high) == 0,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{
        long_scan_knows_ascii, scan_line, scan_long, word_pair_masks, word_pair_masks_portable,
        LineEnd, TailMasks, WordPair,
    };
    use alloc::format;
    use alloc::vec;
    use alloc::vec::Vec;

    fn naive(bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&b| b == b'\n' || b == b'\r')
    }

    /// The ending must be exact; `ascii` may be false when unknown, never true wrongly.
    fn check(bytes: &[u8], label: &str) -> LineEnd {
        let got = scan_line(bytes);
        assert_eq!(got.at, naive(bytes), "{label}");
        if got.ascii {
            let line = &bytes[..got.at.unwrap_or(bytes.len())];
            assert!(line.is_ascii(), "{label}: {line:?} reported ASCII");
        }
        got
    }

    #[test]
    fn finds_the_first_cr_or_lf_at_every_position_and_length() {
        for len in 0..300 {
            for at in 0..=len {
                for ending in [b'\n', b'\r'] {
                    let mut bytes = vec![b'x'; len];
                    if at < len {
                        bytes[at] = ending;
                    }
                    // A second ending later must not be what is found.
                    if at + 3 < len {
                        bytes[at + 3] = b'\n';
                    }
                    let got = check(&bytes, &format!("len {len} at {at}"));
                    // Short ASCII lines are known to be ASCII.
                    if at < len && at < 256 {
                        assert!(got.ascii, "len {len} at {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_high_byte_anywhere_in_the_line_is_seen_and_one_after_it_is_not() {
        for len in 1..300 {
            for high in 0..len {
                let mut bytes = vec![b'a'; len + 40];
                bytes[len] = b'\n';
                bytes[high] = 0x80 | (high as u8 & 0x7f);
                let got = check(&bytes, &format!("line {len}, high byte at {high}"));
                assert!(!got.ascii, "line {len}, high byte at {high}");
                // The same byte after the line ending does not make the line non-ASCII.
                let mut after = vec![b'a'; len + 40];
                after[len] = b'\n';
                after[len + 1 + high % 39] = 0xff;
                let got = check(&after, &format!("line {len}, high byte after"));
                let known = len < 256 || long_scan_knows_ascii();
                assert_eq!(got.ascii, known, "line {len}, high byte after");
            }
        }
    }

    #[test]
    fn slices_shorter_than_a_vector_report_the_ending_and_ascii_exactly() {
        for len in 1..16 {
            for at in 0..=len {
                for high in 0..len {
                    for ending in [b'\n', b'\r'] {
                        let mut bytes = vec![b'a'; len];
                        bytes[high] = 0xc3;
                        if at < len {
                            bytes[at] = ending;
                        }
                        let label = format!("len {len}, ending at {at}, high byte at {high}");
                        let got = check(&bytes, &label);
                        // Below one vector the answer is exact: ASCII unless the high byte
                        // is before the ending.
                        let line_end = got.at.unwrap_or(len);
                        let expected = got.at.is_some() && (high >= line_end || high == at);
                        assert_eq!(got.ascii, expected, "{label}");
                    }
                }
            }
        }
    }

    /// `scan_long` against a byte loop: the ending exactly, and ASCII-ness exactly where it
    /// reports it (with AVX2), `false` elsewhere.
    fn check_long(bytes: &[u8], label: &str) {
        let got = scan_long(bytes);
        let at = naive(bytes);
        let line = &bytes[..at.unwrap_or(bytes.len())];
        let expected = LineEnd {
            at,
            ascii: long_scan_knows_ascii() && line.is_ascii(),
        };
        assert_eq!(got, expected, "{label}");
    }

    /// Calls `check` on slices of each length with a CR or LF (or none) at `at` and a high
    /// byte (0x80, 0xff or 0xc3) at `high`, every pair of places in short slices and about
    /// `per_line` in longer ones (the last ones always, and up to `dense_until` bytes every
    /// place around each 32-byte boundary), a second ending right after the first; then on
    /// every suffix of the bytes other than CR and LF, and of those made ASCII.
    pub(crate) fn each_line_case(
        lengths: impl Iterator<Item = usize>,
        per_line: usize,
        dense_until: usize,
        mut check: impl FnMut(&[u8], &str),
    ) {
        for len in lengths {
            let step = (len / per_line).max(1);
            let places = move || {
                (0..=len).filter(move |i| {
                    i % step == 0 || len - i < 3 || (len <= dense_until && (i + 1) % 32 < 3)
                })
            };
            for at in places() {
                for high in places() {
                    let kinds = [(b'\n', 0x80), (b'\r', 0xff), (b'\n', 0xc3)];
                    let (ending, byte) = kinds[(at + high) % 3];
                    let mut bytes = vec![b'a'; len];
                    if high < len {
                        bytes[high] = byte;
                    }
                    if at < len {
                        bytes[at] = ending;
                    }
                    // A later ending must not be the one found.
                    if at + 1 < len {
                        bytes[at + 1] = b'\n';
                    }
                    check(&bytes, &format!("len {len} at {at} high {high}"));
                }
            }
        }
        let bytes: Vec<u8> = (0..=255u8).filter(|b| *b != b'\n' && *b != b'\r').collect();
        for cut in 0..bytes.len() {
            check(&bytes[cut..], "no ending");
            let ascii: Vec<u8> = bytes[cut..].iter().map(|b| b & 0x7f).collect();
            check(&ascii, "no ending, ASCII");
        }
    }

    #[test]
    fn the_long_scan_finds_the_ending_and_every_high_byte_before_it() {
        // Lengths around the 32- and 64-byte steps and their tails; an ending (or none) at
        // every place, a high byte at every place before, at and after it.
        let lengths = (0..72).chain([95, 96, 97, 127, 128, 129, 255, 256, 257, 320, 1000, 4096]);
        each_line_case(lengths, 40, 0, check_long);
    }

    #[test]
    fn bytes_near_cr_and_lf_are_not_line_endings() {
        let bytes: Vec<u8> = (0..=255u8).filter(|b| *b != b'\n' && *b != b'\r').collect();
        for cut in 0..bytes.len() {
            assert_eq!(check(&bytes[cut..], "no ending").at, None);
        }
    }

    /// The masks of a piece, made from its words (8 bytes and more) or its bytes.
    fn masks_of(piece: &[u8]) -> TailMasks {
        let bytewise = TailMasks::of_bytes(piece);
        if let (Some(first), Some(last)) = (piece.first_chunk::<8>(), piece.last_chunk::<8>()) {
            let pair = WordPair::of(u64::from_le_bytes(*first), u64::from_le_bytes(*last));
            assert_eq!(pair.has_ending(), bytewise.has_ending(), "{piece:?}");
            assert_eq!(pair.is_ascii(), piece.is_ascii(), "{piece:?}");
            assert_eq!(
                TailMasks::of_words(pair, piece.len()),
                bytewise,
                "{piece:?}"
            );
        }
        if let [byte @ (b'\n' | b'\r')] = piece {
            assert_eq!(TailMasks::LAST_BYTE_ENDS_LINE, bytewise, "{byte}");
        }
        bytewise
    }

    #[test]
    fn tail_masks_answer_as_the_scan_does_for_every_suffix_of_a_piece() {
        for len in 1..=TailMasks::SPAN {
            for ending_at in 0..=len {
                for high_at in 0..=len {
                    for (ending, high) in [(b'\n', 0xc3), (b'\r', 0xff), (b'\n', 0x80)] {
                        let mut piece = vec![b'a'; len];
                        if high_at < len {
                            piece[high_at] = high;
                        }
                        if ending_at < len {
                            piece[ending_at] = ending;
                        }
                        // A second ending later: the first is the one reported.
                        if ending_at + 2 < len {
                            piece[ending_at + 2] = b'\r';
                        }
                        let masks = masks_of(&piece);
                        assert_eq!(masks.has_ending(), ending_at < len, "{piece:?}");
                        for unscanned in 0..=len {
                            let rest = &piece[len - unscanned..];
                            let label = format!("{piece:?}, last {unscanned}");
                            assert_eq!(masks.line_end(unscanned), scan_line(rest), "{label}");
                            assert_eq!(masks.any_high(unscanned), !rest.is_ascii(), "{label}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tail_masks_see_no_ending_in_bytes_near_cr_and_lf() {
        let bytes: Vec<u8> = (0..=255u8).filter(|b| *b != b'\n' && *b != b'\r').collect();
        for piece in bytes.chunks(TailMasks::SPAN).chain(bytes.chunks(11)) {
            let masks = masks_of(piece);
            assert!(!masks.has_ending(), "{piece:?}");
            assert_eq!(masks.any_high(piece.len()), !piece.is_ascii(), "{piece:?}");
        }
    }

    #[test]
    fn word_pair_masks_agree_with_the_portable_ones_on_every_byte_value() {
        // Every byte value at every position of both words, next to its neighbours.
        for value in 0..=255u8 {
            for at in 0..8 {
                let mut first = [b'a'; 8];
                let mut last = [0x0b; 8];
                first[at] = value;
                last[7 - at] = value;
                last[at] = value.wrapping_add(1);
                let (first, last) = (u64::from_le_bytes(first), u64::from_le_bytes(last));
                let expected = word_pair_masks_portable(first, last);
                assert_eq!(word_pair_masks(first, last), expected, "{value:#x} at {at}");
                let naive = |word: u64, bit: u32| {
                    word.to_le_bytes()
                        .iter()
                        .enumerate()
                        .fold((0, 0), |(e, h), (i, &b)| {
                            let at = 1 << (bit + i as u32);
                            (
                                e | if b == b'\n' || b == b'\r' { at } else { 0 },
                                h | if b >= 0x80 { at } else { 0 },
                            )
                        })
                };
                let ((fe, fh), (le, lh)) = (naive(first, 0), naive(last, 8));
                assert_eq!(expected, (fe | le, fh | lh), "{value:#x} at {at}");
            }
        }
    }
}

//! The line scan fused with the copy that follows it: bytes are put into a buffer's spare
//! room while their first CR or LF (and, for the decoder, their high bits) are looked for,
//! one pass where there were two.
//!
//! Two places copy a line they have just scanned. The encoder copies each event's data into
//! the caller's buffer after finding its first line break; the decoder copies every piece
//! that continues a line cut by piece boundaries into its line buffer after finding where
//! the line ends (a 64 KiB line read in 1460-byte pieces is 45 such pieces). A copy that does
//! not look at the bytes (`memcpy`) costs about what the scan costs, so each paid twice.
//!
//! [`put_line`] does both at once with `std` on x86-64 CPUs that have AVX2 (detected at run
//! time): 32 bytes are loaded, stored into the spare room the buffer offers
//! ([`BufMut::chunk_mut`]) and compared with CR and LF, 128 bytes a step; the buffer then
//! takes exactly the bytes before the ending ([`BufMut::advance_mut`]). Bytes stored past
//! the ending stay in the spare room, unclaimed. Elsewhere (`no_std`, other targets, no
//! AVX2, or a buffer that offers less room than the bytes) it is the scan and then
//! [`BufMut::put_slice`], as before.

use bytes::BufMut;

use crate::line_scan::{scan_continued, LineEnd};

/// Puts the bytes of `src` before its first CR or LF (all of them when it has none) into
/// `out`, and returns where that ending is and whether the bytes put are ASCII (`false`:
/// one is not, or it is not known).
///
/// With `std` on a CPU with AVX2, when `out` offers room for all of `src` in one
/// [`chunk_mut`](BufMut::chunk_mut), the bytes are copied as they are scanned, and `ascii`
/// is exact. Otherwise `src` is scanned with [`scan_continued`] and the line copied with
/// [`put_slice`](BufMut::put_slice).
///
/// ```ignore
/// let mut out = Vec::with_capacity(16);
/// assert_eq!(put_line(&mut out, b"abc\ndef"), LineEnd { at: Some(3), ascii: true });
/// assert_eq!(out, b"abc");
/// ```
#[inline]
pub(crate) fn put_line<B: BufMut + ?Sized>(out: &mut B, src: &[u8]) -> LineEnd {
    put::<true, B>(out, b"", src)
}

/// [`put_line`] with `prefix` put first: the encoder's `data: `, written into the same room
/// as the line when the copy is fused, so the buffer's length moves once for both. The
/// encoder needs no ASCII-ness, and the fused copy does not look for it here (`ascii` is
/// `false`; without AVX2 it is what the scan found).
///
/// ```ignore
/// let mut out = Vec::with_capacity(16);
/// assert_eq!(put_line_after(&mut out, b"data: ", b"abc\ndef").at, Some(3));
/// assert_eq!(out, b"data: abc");
/// ```
#[inline]
pub(crate) fn put_line_after<B: BufMut + ?Sized>(
    out: &mut B,
    prefix: &[u8],
    src: &[u8],
) -> LineEnd {
    put::<false, B>(out, prefix, src)
}

/// [`put_line_after`], and with `ASCII` the bytes' ASCII-ness looked for as they are copied.
#[inline(always)]
fn put<const ASCII: bool, B: BufMut + ?Sized>(out: &mut B, prefix: &[u8], src: &[u8]) -> LineEnd {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if !src.is_empty() && std::is_x86_feature_detected!("avx2") {
        let spare = out.chunk_mut();
        if spare.len() >= prefix.len().saturating_add(src.len()) {
            // SAFETY: `as_uninit_slice_mut` is unsafe only because the slice may be backed by
            // initialized memory (a `&mut [u8]` buffer), into which no uninitialized byte may
            // be written. Only copies of bytes of `prefix` and `src` are written into it (here
            // and by `avx2::copy_line`), which are initialized, and it is never read.
            #[allow(unsafe_code)]
            let dst = unsafe { spare.as_uninit_slice_mut() };
            let (head, rest) = dst.split_at_mut(prefix.len().min(dst.len()));
            for (to, &byte) in head.iter_mut().zip(prefix) {
                to.write(byte);
            }
            let found = avx2::copy_line::<ASCII>(src, rest);
            // Never fewer than `src.len()` (checked above): what the copy covered.
            let copied = src.len().min(rest.len());
            let claimed = found.at.unwrap_or(copied);
            let put = head.len() + claimed;
            debug_assert_eq!(found.at, memchr::memchr2(b'\n', b'\r', src), "{src:?}");
            debug_assert!(
                !found.ascii || src.get(..claimed).is_some_and(<[u8]>::is_ascii),
                "{src:?} reported ASCII"
            );
            // SAFETY: `advance_mut(n)` requires the first `n` bytes of the last `chunk_mut`
            // to be initialized, and `n` to be at most `remaining_mut`. That chunk starts
            // with `head`, all of `prefix` written above (`head.len() == prefix.len()`, as the
            // chunk has room for more), then `rest`, into whose first `claimed` bytes
            // `copy_line` has copied `src[..claimed]`: it copies every byte before the ending
            // it reports, or, when it reports none, all `copied` bytes it was given room for.
            // So `put = head.len() + claimed` bytes are initialized, at most
            // `spare.len() <= remaining_mut`. Nothing touched `out` since `chunk_mut`.
            #[allow(unsafe_code)]
            unsafe {
                out.advance_mut(put)
            };
            return found;
        }
    }
    out.put_slice(prefix);
    let found = scan_continued(src);
    out.put_slice(src.get(..found.at.unwrap_or(src.len())).unwrap_or_default());
    found
}

/// Whether [`put_line`] copies as it scans on this CPU, given a buffer with room for all of
/// `src` (and then reports the ASCII-ness of what it copies): with `std` on x86-64 with
/// AVX2. Elsewhere a copy made only in case it is needed costs a pass of its own.
///
/// ```ignore
/// let _one_pass = copy_is_fused();
/// ```
#[inline]
pub(crate) fn copy_is_fused() -> bool {
    // Both kernels are AVX2, chosen on the same run-time detection.
    crate::line_scan::long_scan_knows_ascii()
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
        _mm256_setzero_si256, _mm256_storeu_si256,
    };
    use core::mem::MaybeUninit;

    use crate::line_scan::avx2::load;
    use crate::line_scan::LineEnd;

    /// [`super::put_line`]'s copy on a CPU with AVX2: copies `src` into the start of `dst`
    /// (which must be at least as long) up to and including the 32-byte block that holds its
    /// first CR or LF, and returns where that is and whether the bytes before it are ASCII.
    /// Every byte before the ending is copied; bytes after it may be.
    #[inline(always)]
    pub(super) fn copy_line<const ASCII: bool>(src: &[u8], dst: &mut [MaybeUninit<u8>]) -> LineEnd {
        // SAFETY: `copy_line_avx2` requires the `avx2` target feature, and its only caller,
        // `put_line`, calls this only after `is_x86_feature_detected!("avx2")` returned true,
        // so the CPU running it has AVX2. It reads memory only through `load`, from
        // references to 32 initialized bytes, and writes it only through `store`, to
        // references to 32 bytes of `dst`.
        #[allow(unsafe_code)]
        unsafe {
            copy_line_avx2::<ASCII>(src, dst)
        }
    }

    /// Stores `vector` into the 32 bytes of `block`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn store(block: &mut [MaybeUninit<u8>; 32], vector: __m256i) {
        // SAFETY: the pointer comes from an exclusive reference to 32 bytes, so it is valid
        // for a 32-byte write; `_mm256_storeu_si256` has no alignment requirement, and
        // writing initialized bytes into `MaybeUninit<u8>` is always allowed.
        #[allow(unsafe_code)]
        unsafe {
            _mm256_storeu_si256(block.as_mut_ptr().cast(), vector)
        }
    }

    /// 128 bytes a step (four loads, four stores, one test for the four), then 32 bytes a
    /// step, then the last 32 bytes of `src`, which overlap bytes already copied (they held
    /// no line ending, and are stored again unchanged). Fewer than 32 bytes in all are
    /// copied a byte at a time. (Ending with an overlapping 128-byte step instead cost the
    /// encoder of `tokens` 10% more instructions and was slower.)
    #[target_feature(enable = "avx2")]
    fn copy_line_avx2<const ASCII: bool>(src: &[u8], dst: &mut [MaybeUninit<u8>]) -> LineEnd {
        let len = src.len().min(dst.len());
        debug_assert_eq!(len, src.len(), "room for all of `src`");
        let (src, dst) = (
            src.get(..len).unwrap_or_default(),
            dst.get_mut(..len).unwrap_or_default(),
        );
        let lf = _mm256_set1_epi8(b'\n' as i8);
        let cr = _mm256_set1_epi8(b'\r' as i8);
        let ending =
            |v: __m256i| _mm256_or_si256(_mm256_cmpeq_epi8(v, lf), _mm256_cmpeq_epi8(v, cr));
        let mask = |v: __m256i| u64::from(_mm256_movemask_epi8(v) as u32);
        // The line ends in the bytes at `base` whose endings and high bits are `endings`
        // and `bits`: its ASCII-ness is the high bits before the ending there and all of
        // `high`, those of the bytes before `base`.
        let found = |base: usize, endings: u64, bits: u64, high: __m256i| {
            let at = endings.trailing_zeros();
            let before = (1u64 << at) - 1;
            LineEnd {
                at: Some(base + at as usize),
                ascii: ASCII && (bits & before) | mask(high) == 0,
            }
        };
        let mut high = _mm256_setzero_si256();
        if len < 32 {
            return bytewise::<ASCII>(src, dst, 0, high);
        }
        let mut base = 0;
        for (from, to) in src.chunks_exact(128).zip(dst.chunks_exact_mut(128)) {
            let part = |i: usize| from.get(i..).and_then(|rest| rest.first_chunk::<32>());
            let (Some(a), Some(b), Some(c), Some(d)) = (part(0), part(32), part(64), part(96))
            else {
                break; // never (a chunk of 128); the 32-byte steps go on from `base`
            };
            let Some((to_a, to)) = to.split_first_chunk_mut::<32>() else {
                break;
            };
            let Some((to_b, to)) = to.split_first_chunk_mut::<32>() else {
                break;
            };
            let Some((to_c, to)) = to.split_first_chunk_mut::<32>() else {
                break;
            };
            let Some(to_d) = to.first_chunk_mut::<32>() else {
                break;
            };
            let (a, b, c, d) = (load(a), load(b), load(c), load(d));
            store(to_a, a);
            store(to_b, b);
            store(to_c, c);
            store(to_d, d);
            let (end_a, end_b, end_c, end_d) = (ending(a), ending(b), ending(c), ending(d));
            let any = _mm256_or_si256(_mm256_or_si256(end_a, end_b), _mm256_or_si256(end_c, end_d));
            if mask(any) != 0 {
                let endings = mask(end_a) | mask(end_b) << 32;
                if endings != 0 {
                    return found(base, endings, mask(a) | mask(b) << 32, high);
                }
                if ASCII {
                    high = _mm256_or_si256(high, _mm256_or_si256(a, b));
                }
                let endings = mask(end_c) | mask(end_d) << 32;
                return found(base + 64, endings, mask(c) | mask(d) << 32, high);
            }
            if ASCII {
                high = _mm256_or_si256(
                    high,
                    _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d)),
                );
            }
            base += 128;
        }
        // Fewer than 128 bytes left: 32 at a time, the last block ending at the end.
        while base < len {
            let from = base.min(len - 32);
            let (Some(block), Some(to)) = (
                src.get(from..).and_then(|rest| rest.first_chunk::<32>()),
                dst.get_mut(from..)
                    .and_then(|rest| rest.first_chunk_mut::<32>()),
            ) else {
                // Never (`from + 32 <= len`, the length of both); if it were, the rest is
                // copied here, so every byte claimed is still written.
                return bytewise::<ASCII>(src, dst, base, high);
            };
            let vector = load(block);
            store(to, vector);
            let endings = mask(ending(vector));
            if endings != 0 {
                return found(from, endings, mask(vector), high);
            }
            if ASCII {
                high = _mm256_or_si256(high, vector);
            }
            base = from + 32;
        }
        LineEnd {
            at: None,
            ascii: ASCII && mask(high) == 0,
        }
    }

    /// The rest of the copy from `base`, a byte at a time (`src` and `dst` are as long), for
    /// slices shorter than a vector; `high` holds the high bits of the bytes before `base`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn bytewise<const ASCII: bool>(
        src: &[u8],
        dst: &mut [MaybeUninit<u8>],
        base: usize,
        high: __m256i,
    ) -> LineEnd {
        let rest = src.get(base..).unwrap_or_default();
        let at = rest.iter().position(|&b| b == b'\n' || b == b'\r');
        let line = rest.get(..at.unwrap_or(rest.len())).unwrap_or_default();
        for (to, &byte) in dst.get_mut(base..).unwrap_or_default().iter_mut().zip(line) {
            to.write(byte);
        }
        LineEnd {
            at: at.map(|at| base + at),
            ascii: ASCII && line.is_ascii() && _mm256_movemask_epi8(high) == 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_is_fused, put_line, put_line_after};
    use crate::line_scan::tests::each_line_case;
    use crate::line_scan::LineEnd;
    use alloc::vec;
    use alloc::vec::Vec;
    use bytes::{BufMut, BytesMut};

    fn naive(bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&b| b == b'\n' || b == b'\r')
    }

    /// `put_line` into buffers with room (the fused copy where the CPU has AVX2), without
    /// room, and into a slice, against a byte loop: the ending exactly, the bytes before it
    /// put and no others, ASCII-ness exactly where it is known and never claimed wrongly.
    fn check(src: &[u8], label: &str) {
        let at = naive(src);
        let line = &src[..at.unwrap_or(src.len())];
        // Room for all of `src` behind bytes already there.
        let mut vec = Vec::with_capacity(src.len() + 3);
        vec.extend_from_slice(b"ab:");
        let got = put_line(&mut vec, src);
        // With AVX2 and room, ASCII-ness is exact; otherwise it is never claimed wrongly.
        let exact = copy_is_fused() && !src.is_empty();
        let expected = LineEnd {
            at,
            ascii: if exact { line.is_ascii() } else { got.ascii },
        };
        assert_eq!(got, expected, "{label}: Vec with room");
        assert!(!got.ascii || line.is_ascii(), "{label}: ASCII claimed");
        assert_eq!(&vec[..3], b"ab:", "{label}");
        assert_eq!(&vec[3..], line, "{label}: Vec with room");
        // With a prefix, into the same room, and without room for the prefix too.
        for room in [src.len() + 6, src.len() + 5] {
            let mut vec = Vec::with_capacity(room);
            let got = put_line_after(&mut vec, b"data: ", src);
            assert_eq!(got.at, at, "{label}: prefix, room {room}");
            assert!(!got.ascii || line.is_ascii(), "{label}: ASCII claimed");
            assert_eq!(&vec[..6], b"data: ", "{label}: prefix, room {room}");
            assert_eq!(&vec[6..], line, "{label}: prefix, room {room}");
        }
        // No room: the scan, then `put_slice`.
        let mut tight: Vec<u8> = Vec::new();
        let got = put_line(&mut tight, src);
        assert_eq!(got.at, at, "{label}: Vec without room");
        assert!(!got.ascii || line.is_ascii(), "{label}: ASCII claimed");
        assert_eq!(tight, line, "{label}: Vec without room");
        // A `BytesMut` with room, as the decoder's line buffer.
        let mut bytes = BytesMut::with_capacity(src.len() + 1);
        bytes.put_u8(b'>');
        assert_eq!(put_line(&mut bytes, src), expected, "{label}: BytesMut");
        assert_eq!(&bytes[1..], line, "{label}: BytesMut");
        // A slice: the caller's bytes past the line are not claimed, and bytes written past
        // it stay within the room `src` would take.
        let mut backing = vec![0xeeu8; src.len() + 40];
        let mut slice = &mut backing[..];
        assert_eq!(put_line(&mut slice, src), expected, "{label}: slice");
        assert_eq!(slice.len(), src.len() + 40 - line.len(), "{label}: slice");
        assert_eq!(&backing[..line.len()], line, "{label}: slice");
        assert!(
            backing[src.len()..].iter().all(|&b| b == 0xee),
            "{label}: wrote past the room of `src`"
        );
    }

    #[test]
    fn put_line_copies_the_line_and_finds_its_ending_and_every_high_byte_before_it() {
        // Lengths around the 32-byte blocks and the 128-byte steps; an ending (or none) at
        // every place, a high byte at every place before, at and after it; in longer slices
        // about 50 places, and up to 520 bytes every place around each 32-byte boundary.
        let lengths = (0..72)
            .chain([
                95, 96, 97, 127, 128, 129, 159, 160, 161, 191, 192, 193, 255, 256, 257,
            ])
            .chain([300, 383, 384, 385, 511, 512, 513, 1000, 4096]);
        each_line_case(lengths, 50, 520, check);
    }

    #[test]
    fn put_line_of_nothing_puts_nothing_and_allocates_nothing() {
        let mut out: Vec<u8> = Vec::new();
        let got = put_line(&mut out, b"");
        assert_eq!(
            got,
            LineEnd {
                at: None,
                ascii: true
            }
        );
        assert_eq!(out.capacity(), 0);
    }
}

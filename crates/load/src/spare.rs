//! Writing a request into its connection's output: pieces of constant size into space
//! reserved once for the whole request.
//!
//! `Vec::extend_from_slice` checks the capacity, updates the length and (for a length
//! known only at run time) calls `memcpy`, once per piece; a GET is four or five pieces,
//! its key name two. Here a request reserves its largest size once, and each piece is a
//! copy of a size known to the compiler (a key prefix copied as a fixed-size block of which
//! only its own length counts), so no piece calls out. Hand-written: `itoa` formats into
//! a buffer of its own, to be copied again, and no crate writes into spare capacity.
use std::ptr;

/// Longest decimal of a `u64`.
pub const MAX_DECIMAL: usize = 20;

/// Two-digit pairs "00".."99", for writing decimals two digits at a time.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// 10^i, for counting digits (32 entries, of which 20 are used: an index masked to 5 bits
/// needs no bounds check).
const POW10: [u64; 32] = {
    let mut p = [u64::MAX; 32];
    p[0] = 1;
    let mut i = 1;
    while i < 20 {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

/// A number and the length of its decimal, computed once for the request's header and
/// its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    value: u64,
    /// Always the number of digits of `value`: a writer relies on it.
    len: usize,
}

impl Decimal {
    #[inline]
    pub fn of(value: u64) -> Decimal {
        // log10 from log2 (1233/4096 ≈ log10(2)), corrected by one comparison; a third of
        // `u64::ilog10`'s instructions; `| 1` makes 0 a one-digit number like 1 (and
        // changes no other count: every power of ten past 1 is even)
        let v = value | 1;
        let t = ((64 - v.leading_zeros() as usize) * 1233) >> 12;
        Decimal { value, len: t + 1 - (v < POW10[t & 31]) as usize }
    }

    /// Digits in the decimal.
    #[inline]
    pub fn digits(self) -> usize {
        self.len
    }
}

/// Appends to `out` within room reserved up front; the bytes written become part of
/// `out` when the writer is dropped.
pub struct SpareWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Length of `out` so far (written bytes past `out.len()` count from the drop on).
    len: usize,
    /// End of the reserved room: every write stays below it (checked: the writer is safe).
    end: usize,
}

impl<'a> SpareWriter<'a> {
    /// A writer with room for `room` more bytes of `out`.
    #[inline]
    pub fn new(out: &'a mut Vec<u8>, room: usize) -> SpareWriter<'a> {
        out.reserve(room);
        let len = out.len();
        SpareWriter { out, len, end: len + room }
    }

    /// Bytes of `out` written so far, these included: where the next write goes.
    #[inline]
    pub fn pos(&self) -> usize {
        self.len
    }

    /// Append `bytes`.
    #[inline(always)]
    pub fn put<const N: usize>(&mut self, bytes: &[u8; N]) {
        self.put_first(bytes, N);
    }

    /// Append the first `n` bytes of `bytes`, by a copy of all `N` (so there must be room
    /// for `N`; what follows the first `n` is then overwritten or left beyond the end).
    #[inline(always)]
    pub fn put_first<const N: usize>(&mut self, bytes: &[u8; N], n: usize) {
        assert!(self.len + N <= self.end, "a request outgrew its reservation");
        let n = n.min(N);
        // SAFETY: `len + N <= end <= out.capacity()` (reserved in `new`); the regions are
        // distinct (`bytes` is not borrowed from `out`, which is borrowed mutably).
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.out.as_mut_ptr().add(self.len), N) };
        self.len += n;
    }

    /// Append `bytes`, of any length (a call into `memcpy`).
    #[inline]
    pub fn put_slice(&mut self, bytes: &[u8]) {
        assert!(self.len + bytes.len() <= self.end, "a request outgrew its reservation");
        // SAFETY: as in `put_first`.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.out.as_mut_ptr().add(self.len), bytes.len()) };
        self.len += bytes.len();
    }

    /// Append `d` in decimal.
    #[inline(always)]
    pub fn put_decimal(&mut self, d: Decimal) {
        assert!(self.len + d.len <= self.end, "a request outgrew its reservation");
        // SAFETY: the `d.len` digits land in `out[len..len + d.len]`, within the
        // reservation; each write lands below the previous one and at or above `len`,
        // since `d.len` is the number of digits of `d.value` (`Decimal::of`).
        unsafe {
            let start = self.out.as_mut_ptr().add(self.len);
            let mut p = start.add(d.len);
            let mut v = d.value;
            while v >= 100 {
                let pair = (v % 100) as usize * 2;
                v /= 100;
                p = p.sub(2);
                ptr::copy_nonoverlapping(PAIRS.as_ptr().add(pair), p, 2);
            }
            if v >= 10 {
                ptr::copy_nonoverlapping(PAIRS.as_ptr().add(v as usize * 2), start, 2);
            } else {
                *start = b'0' + v as u8;
            }
        }
        self.len += d.len;
    }
}

impl Drop for SpareWriter<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `out[..len]` is initialised: `out`'s own bytes, then the ones written here.
        unsafe { self.out.set_len(self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_match_the_standard_formatting() {
        let mut out = b"x".to_vec();
        let vs = [0, 1, 9, 10, 99, 100, 101, 999, 1000, 65_535, 100_000, 4_294_967_296, 12_345_678_901, u64::MAX];
        for v in vs {
            out.truncate(1);
            let mut w = SpareWriter::new(&mut out, MAX_DECIMAL);
            w.put_decimal(Decimal::of(v));
            assert_eq!(w.pos(), 1 + v.to_string().len());
            drop(w);
            assert_eq!(out, format!("x{v}").as_bytes(), "{v}");
        }
        for k in 0..20 {
            for v in [10u64.pow(k), 10u64.pow(k) - 1, 10u64.pow(k) + 1, (1u64 << (3 * k + 2)) + 7] {
                assert_eq!(Decimal::of(v).digits(), v.to_string().len(), "{v}");
            }
        }
    }

    #[test]
    fn a_padded_piece_counts_only_its_own_length() {
        let mut out = Vec::new();
        let mut w = SpareWriter::new(&mut out, 40);
        let mut pad = [b'#'; 32];
        pad[..4].copy_from_slice(b"key-");
        w.put_first(&pad, 4);
        w.put_decimal(Decimal::of(42));
        w.put(b"\r\n");
        w.put_slice(b"tail");
        drop(w);
        assert_eq!(out, b"key-42\r\ntail");
    }

    #[test]
    #[should_panic(expected = "outgrew its reservation")]
    fn writing_past_the_reservation_panics() {
        let mut out = Vec::new();
        let mut w = SpareWriter::new(&mut out, 8);
        w.put(b"0123");
        w.put(b"45678");
    }
}

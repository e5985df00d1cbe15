//! `memmove`: copy bandwidth under controlled cache and TLB pressure (the router
//! performance-index experiment's mmbm).
//!
//! An arena of [`ARENA_BLOCKS`] blocks of [`BLOCK_SIZE`] = 4096 + 64 bytes (so that
//! consecutive blocks drift across page boundaries, like the router's 9 KiB buffers)
//! is used as a ring of the first `buffers` blocks. Each copy moves `copy_size` bytes
//! from the start of one block to the start of the block on the opposite side of the
//! ring; the ring position steps back by [`RING_STEP`] each time, so neighbouring
//! blocks are used as far apart in time as possible and, the step not dividing the
//! buffer count, every block is used. The working set (`buffers` pages) decides
//! whether copies hit the caches and the TLB — the five [`CASES`] are mmbm's.
//!
//! Copies go through `memmove` (`std::ptr::copy` with a run-time size). After timing,
//! the copy sequence is replayed on block labels and every byte of the working set is
//! checked against the content it must hold.
use crate::pagebuf::{PageBuf, Pages};
use crate::timing;
use crate::ProbeError;
use std::hint::black_box;
use std::time::Duration;

pub const ARENA_BLOCKS: usize = 8192;
pub const BLOCK_SIZE: usize = 4096 + 64;
pub const RING_STEP: usize = 5;

/// A named copy case: `copy_size` bytes per copy over a ring of `buffers` blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub name: &'static str,
    pub copy_size: usize,
    pub buffers: usize,
}

/// mmbm's cases; `small_tlbmiss` is the one the router performance-index
/// experiment's model uses (the router's steady state: small packets, TLB misses, L2 hits).
pub const CASES: [Case; 5] = [
    Case { name: "small_no_miss", copy_size: 172, buffers: 128 },
    Case { name: "small_tlbmiss", copy_size: 172, buffers: 3549 },
    Case { name: "large_no_miss", copy_size: 4096, buffers: 128 },
    Case { name: "large_cachemiss", copy_size: 4096, buffers: 1024 },
    Case { name: "large_allmiss", copy_size: 4096, buffers: 3071 },
];

/// Copy sizes (bytes) of the default sweep.
pub const SWEEP_SIZES: [usize; 6] = [64, 172, 512, 1024, 2048, 4096];
/// Buffer counts of the default sweep (none a multiple of the ring step).
pub const SWEEP_BUFFERS: [usize; 13] = [16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8191];

pub fn case(name: &str) -> Option<Case> {
    CASES.iter().copied().find(|c| c.name == name)
}

/// One timed measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemmoveResult {
    pub copy_size: usize,
    pub buffers: usize,
    pub copies: u64,
    pub seconds: f64,
    /// Bytes copied per second, in MiB/s (2^20 bytes), as mmbm reports.
    pub mib_per_sec: f64,
    pub copies_per_sec: f64,
    /// Thread CPU seconds during the timed interval.
    pub cpu_seconds: f64,
    /// Blocks whose every byte was checked after the run.
    pub verified_blocks: usize,
}

/// The arena, allocated once and reused by every case.
pub struct Arena {
    mem: PageBuf,
}

/// Position in the ring; shared by the timed copies and their replay.
#[derive(Clone, Copy)]
struct Ring {
    last: usize,
    n: usize,
    half: usize,
}

impl Ring {
    fn new(n: usize) -> Ring {
        Ring { last: 0, n, half: n / 2 }
    }

    /// (destination, source) of the next copy.
    #[inline(always)]
    fn next(&mut self) -> (usize, usize) {
        self.last = if self.last >= RING_STEP { self.last - RING_STEP } else { self.last + self.n - RING_STEP };
        let mut src = self.last + self.half;
        if src >= self.n {
            src -= self.n;
        }
        (self.last, src)
    }
}

/// The byte at offset `j` of a block whose content came from block `origin`.
#[inline]
fn pattern(origin: usize, j: usize) -> u8 {
    let h = (origin as u32 ^ 0x5bd1_e995).wrapping_mul(0x9e37_79b1);
    ((h >> ((j % 4) * 8)) as u8) ^ (j as u8)
}

impl Arena {
    pub fn new(pages: Pages) -> Result<Arena, ProbeError> {
        Ok(Arena { mem: PageBuf::new(ARENA_BLOCKS * BLOCK_SIZE, pages)? })
    }

    /// Times copies of `copy_size` bytes over a ring of `buffers` blocks for about
    /// `duration`, then verifies the working set's content.
    pub fn measure(
        &mut self,
        copy_size: usize,
        buffers: usize,
        duration: Duration,
    ) -> Result<MemmoveResult, ProbeError> {
        check_args(copy_size, buffers)?;
        self.prime(buffers);
        let base = self.mem.as_mut_ptr();
        let mut ring = Ring::new(buffers);
        let mut copies: u64 = 0;
        let t = timing::run_for(duration, 1024, |n| {
            let base = black_box(base);
            let size = black_box(copy_size);
            for _ in 0..n {
                let (dst, src) = ring.next();
                // SAFETY: dst, src < buffers ≤ ARENA_BLOCKS and size ≤ BLOCK_SIZE: both
                // ranges lie inside the arena.
                unsafe { std::ptr::copy(base.add(src * BLOCK_SIZE), base.add(dst * BLOCK_SIZE), size) };
            }
            copies += n;
        });
        let verified_blocks = self.verify(copy_size, buffers, copies)?;
        let bytes = t.ops as f64 * copy_size as f64;
        Ok(MemmoveResult {
            copy_size,
            buffers,
            copies: t.ops,
            seconds: t.seconds,
            mib_per_sec: bytes / (1024.0 * 1024.0) / t.seconds,
            copies_per_sec: t.ops as f64 / t.seconds,
            cpu_seconds: t.cpu_seconds,
            verified_blocks,
        })
    }

    /// Fills each block of the working set with its own pattern (which also brings
    /// it into the caches, as in a steady state).
    fn prime(&mut self, buffers: usize) {
        let mem = self.mem.as_mut_slice();
        for b in 0..buffers {
            let block = &mut mem[b * BLOCK_SIZE..(b + 1) * BLOCK_SIZE];
            for (j, x) in block.iter_mut().enumerate() {
                *x = pattern(b, j);
            }
        }
    }

    /// Replays `copies` copies on labels and checks every byte of the working set.
    fn verify(&self, copy_size: usize, buffers: usize, copies: u64) -> Result<usize, ProbeError> {
        let mut origin: Vec<usize> = (0..buffers).collect();
        let mut ring = Ring::new(buffers);
        for _ in 0..copies {
            let (dst, src) = ring.next();
            origin[dst] = origin[src];
        }
        let mem = self.mem.as_slice();
        for b in 0..buffers {
            let block = &mem[b * BLOCK_SIZE..(b + 1) * BLOCK_SIZE];
            for (j, &x) in block.iter().enumerate() {
                let from = if j < copy_size { origin[b] } else { b };
                if x != pattern(from, j) {
                    return Err(ProbeError::Validation(format!(
                        "memmove block {b} byte {j} holds {x:#04x}, expected {:#04x} (content of block {from}) \
                         after {copies} copies of {copy_size} B over {buffers} buffers",
                        pattern(from, j)
                    )));
                }
            }
        }
        Ok(buffers)
    }
}

fn check_args(copy_size: usize, buffers: usize) -> Result<(), ProbeError> {
    if copy_size == 0 || copy_size > BLOCK_SIZE {
        return Err(ProbeError::InvalidArgument(format!(
            "copy size {copy_size} B: must be 1..={BLOCK_SIZE} B (one block)"
        )));
    }
    if !(2..=ARENA_BLOCKS).contains(&buffers) {
        return Err(ProbeError::InvalidArgument(format!(
            "buffer count {buffers}: must be 2..={ARENA_BLOCKS} (the arena's blocks)"
        )));
    }
    if buffers.is_multiple_of(RING_STEP) {
        return Err(ProbeError::InvalidArgument(format!(
            "buffer count {buffers} is a multiple of the ring step {RING_STEP}: some buffers would never be used \
             (use {} or {})",
            buffers - 1,
            buffers + 1
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_visits_every_buffer_with_opposite_source() {
        for n in [128usize, 3549, 1024, 3071, 7] {
            let mut ring = Ring::new(n);
            let mut seen = vec![false; n];
            for _ in 0..n {
                let (d, s) = ring.next();
                assert_eq!((d + n / 2) % n, s);
                seen[d] = true;
            }
            assert!(seen.iter().all(|&x| x), "n={n}");
        }
    }

    #[test]
    fn cases_are_mmbm() {
        let c = case("small_tlbmiss").unwrap();
        assert_eq!((c.copy_size, c.buffers), (172, 3549));
        assert!(case("nope").is_none());
        for c in CASES {
            assert!(check_args(c.copy_size, c.buffers).is_ok());
        }
        for b in SWEEP_BUFFERS {
            assert!(check_args(64, b).is_ok(), "{b}");
        }
    }

    #[test]
    fn measures_and_verifies_small_case() {
        let mut a = Arena::new(Pages::Base).unwrap();
        let r = a.measure(172, 128, Duration::from_millis(20)).unwrap();
        assert!(r.copies > 0 && r.mib_per_sec > 0.0 && r.mib_per_sec.is_finite());
        assert_eq!(r.verified_blocks, 128);
        assert!((r.mib_per_sec - r.copies_per_sec * 172.0 / 1048576.0).abs() < 1e-6 * r.mib_per_sec);
    }

    #[test]
    fn verification_detects_a_corrupted_byte() {
        let mut a = Arena::new(Pages::Base).unwrap();
        a.prime(128);
        assert!(a.verify(172, 128, 0).is_ok());
        a.mem.as_mut_slice()[3 * BLOCK_SIZE + 100] ^= 0xff;
        let err = a.verify(172, 128, 0).unwrap_err();
        assert!(err.to_string().contains("block 3 byte 100"), "{err}");
    }

    #[test]
    fn verification_detects_a_missing_copy() {
        let mut a = Arena::new(Pages::Base).unwrap();
        a.prime(16);
        // No copy was made; claiming one must fail (the destination would hold the
        // source's content).
        let err = a.verify(64, 16, 1).unwrap_err();
        assert!(err.to_string().contains("after 1 copies"), "{err}");
    }

    #[test]
    fn rejects_bad_arguments() {
        let mut a = Arena::new(Pages::Base).unwrap();
        assert!(a.measure(0, 128, Duration::from_millis(1)).is_err());
        assert!(a.measure(172, 1, Duration::from_millis(1)).is_err());
        assert!(a.measure(172, 8193, Duration::from_millis(1)).is_err());
        let e = a.measure(172, 1000, Duration::from_millis(1)).unwrap_err();
        assert!(e.to_string().contains("multiple of the ring step"), "{e}");
    }
}

//! `latency`: dependent pointer chase, in nanoseconds per access, over working sets of
//! growing size — the load-to-use latency of each level of the cache and TLB hierarchy.
//!
//! The working set is cut into 64-byte lines; each line holds the address of the next
//! one, and the lines form a single cycle, so each load depends on the previous one and
//! hardware prefetchers cannot guess the next address. Two orders:
//! * [`Order::PageLocal`]: pages in random order, and all lines of a page, in random
//!   order, before the next page — one TLB miss per 64 accesses at most, so the curve
//!   shows the data caches;
//! * [`Order::Random`]: all lines in one random order across the working set — once it
//!   exceeds the TLB's reach, nearly every access also misses the TLB.
//!
//! The difference between the two curves at a given size is the TLB's cost.
use crate::pagebuf::{page_size, PageBuf, Pages};
use crate::rng::SplitMix64;
use crate::timing;
use crate::ProbeError;
use std::hint::black_box;
use std::time::Duration;

pub const LINE: usize = 64;
pub const MIN_SIZE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    PageLocal,
    Random,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::PageLocal => "page",
            Order::Random => "random",
        }
    }

    pub fn parse(s: &str) -> Option<Order> {
        match s {
            "page" => Some(Order::PageLocal),
            "random" => Some(Order::Random),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyPoint {
    pub size_bytes: usize,
    pub order: Order,
    pub accesses: u64,
    pub seconds: f64,
    /// Thread CPU seconds during the timed interval.
    pub cpu_seconds: f64,
    pub ns_per_access: f64,
}

/// Working-set sizes from `min` to `max` bytes: powers of two, with
/// `points_per_octave` − 1 geometric points between them, rounded to whole lines.
pub fn sizes(min: usize, max: usize, points_per_octave: usize) -> Result<Vec<usize>, ProbeError> {
    if min < MIN_SIZE || max < min {
        return Err(ProbeError::InvalidArgument(format!("working sets {min}..{max} B: need {MIN_SIZE} ≤ min ≤ max")));
    }
    let ppo = points_per_octave.clamp(1, 8);
    let mut out: Vec<usize> = Vec::new();
    let mut k = 0u32;
    loop {
        let s = (min as f64 * 2f64.powf(k as f64 / ppo as f64)).round() as usize / LINE * LINE;
        if s > max {
            break;
        }
        if out.last() != Some(&s) {
            out.push(s);
        }
        k += 1;
    }
    if out.last() != Some(&(max / LINE * LINE)) {
        out.push(max / LINE * LINE);
    }
    Ok(out)
}

/// The order in which lines are visited (a permutation of `0..lines`).
fn visit_order(lines: usize, order: Order, rng: &mut SplitMix64) -> Vec<u32> {
    let per_page = page_size() / LINE;
    match order {
        Order::Random => {
            let mut v: Vec<u32> = (0..lines as u32).collect();
            rng.shuffle(&mut v);
            v
        }
        Order::PageLocal => {
            let pages = lines.div_ceil(per_page);
            let mut page_order: Vec<u32> = (0..pages as u32).collect();
            rng.shuffle(&mut page_order);
            let mut v = Vec::with_capacity(lines);
            let mut within: Vec<u32> = Vec::with_capacity(per_page);
            for p in page_order {
                let first = p as usize * per_page;
                let last = (first + per_page).min(lines);
                within.clear();
                within.extend(first as u32..last as u32);
                rng.shuffle(&mut within);
                v.extend_from_slice(&within);
            }
            v
        }
    }
}

/// Times a chase over `size_bytes` for about `duration`.
pub fn chase(
    size_bytes: usize,
    order: Order,
    duration: Duration,
    pages: Pages,
    seed: u64,
) -> Result<LatencyPoint, ProbeError> {
    if size_bytes < MIN_SIZE {
        return Err(ProbeError::InvalidArgument(format!("working set {size_bytes} B: must be at least {MIN_SIZE} B")));
    }
    let lines = size_bytes / LINE;
    let mut mem = PageBuf::new(lines * LINE, pages)?;
    let base = mem.as_mut_ptr();
    let mut rng = SplitMix64::new(seed ^ size_bytes as u64);
    let visit = visit_order(lines, order, &mut rng);
    for w in 0..lines {
        let from = visit[w] as usize;
        let to = visit[(w + 1) % lines] as usize;
        // SAFETY: both lines lie in `mem`, whose start is page aligned.
        unsafe { (base.add(from * LINE) as *mut *const u8).write(base.add(to * LINE)) };
    }
    verify_cycle(&mem, &visit)?;

    // SAFETY: the line lies in `mem`.
    let mut p: *const u8 = unsafe { base.add(visit[0] as usize * LINE) };
    let t = timing::run_for(duration, 1024, |n| {
        let mut q = black_box(p);
        for _ in 0..n / 8 {
            // SAFETY: every line holds the address of a line of `mem`.
            unsafe {
                q = *(q as *const *const u8);
                q = *(q as *const *const u8);
                q = *(q as *const *const u8);
                q = *(q as *const *const u8);
                q = *(q as *const *const u8);
                q = *(q as *const *const u8);
                q = *(q as *const *const u8);
                q = *(q as *const *const u8);
            }
        }
        p = black_box(q);
    });
    let off = (p as usize).wrapping_sub(base as usize);
    if off >= lines * LINE || !off.is_multiple_of(LINE) {
        return Err(ProbeError::Validation(format!(
            "pointer chase ended outside its working set (offset {off} of {} B)",
            lines * LINE
        )));
    }
    let accesses = t.ops / 8 * 8;
    Ok(LatencyPoint {
        size_bytes: lines * LINE,
        order,
        accesses,
        seconds: t.seconds,
        cpu_seconds: t.cpu_seconds,
        ns_per_access: t.seconds * 1e9 / accesses as f64,
    })
}

/// Checks that the links form one cycle through every line: each line visited once,
/// each pointing at its successor in the visit order.
fn verify_cycle(mem: &PageBuf, visit: &[u32]) -> Result<(), ProbeError> {
    let lines = visit.len();
    let base = mem.as_slice().as_ptr();
    let mut seen = vec![false; lines];
    for w in 0..lines {
        let from = visit[w] as usize;
        if from >= lines || std::mem::replace(&mut seen[from], true) {
            return Err(ProbeError::Validation(format!("pointer chase visits line {from} twice or out of range")));
        }
        let to = visit[(w + 1) % lines] as usize;
        let stored = unsafe { (base.add(from * LINE) as *const *const u8).read() };
        if stored != unsafe { base.add(to * LINE) } {
            return Err(ProbeError::Validation(format!("pointer chase line {from} does not link to line {to}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_local_order_stays_within_pages() {
        let per_page = page_size() / LINE;
        let lines = per_page * 5 + 3;
        let v = visit_order(lines, Order::PageLocal, &mut SplitMix64::new(3));
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..lines as u32).collect::<Vec<_>>());
        // Page changes happen exactly pages - 1 times.
        let changes = v.windows(2).filter(|w| w[0] as usize / per_page != w[1] as usize / per_page).count();
        assert_eq!(changes, 5);
    }

    #[test]
    fn random_order_crosses_pages() {
        let per_page = page_size() / LINE;
        let lines = per_page * 64;
        let v = visit_order(lines, Order::Random, &mut SplitMix64::new(3));
        let changes = v.windows(2).filter(|w| w[0] as usize / per_page != w[1] as usize / per_page).count();
        assert!(changes > lines * 9 / 10, "{changes} of {lines}");
    }

    #[test]
    fn sizes_span_the_range() {
        let s = sizes(4096, 1 << 20, 1).unwrap();
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(1 << 20)));
        assert_eq!(s.len(), 9);
        let s2 = sizes(4096, 1 << 20, 2).unwrap();
        assert_eq!(s2.len(), 17);
        assert!(s2.windows(2).all(|w| w[0] < w[1]));
        assert!(sizes(100, 1 << 20, 1).is_err());
    }

    #[test]
    fn chase_is_sane() {
        for order in [Order::PageLocal, Order::Random] {
            let r = chase(64 * 1024, order, Duration::from_millis(10), Pages::Base, 1).unwrap();
            assert!(r.ns_per_access > 0.05 && r.ns_per_access < 10_000.0, "{r:?}");
            assert_eq!(r.accesses % 8, 0);
            assert_eq!(r.size_bytes, 64 * 1024);
        }
    }

    #[test]
    fn rejects_tiny_working_set() {
        assert!(chase(1024, Order::Random, Duration::from_millis(1), Pages::Base, 1).is_err());
    }
}

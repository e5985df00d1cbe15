//! `cpu`: a single-core integer workload of perflab's own design, in the spirit of
//! CoreMark's mix (it is *not* CoreMark and its scores are not comparable with it).
//!
//! One iteration is a pure function of a 32-bit seed. It builds its inputs from the
//! seed, then runs four kernels whose results are folded into a CRC-16:
//! * a 64-node index-linked list: reversal, searches with move-to-front, and two
//!   bottom-up merge sorts (by value, then by key);
//! * 10×10 integer matrices: product, scalar add, matrix-vector product, bit fields;
//! * a state machine that classifies number-like tokens (integers, decimals,
//!   exponents, hex, junk) in a generated text, before and after corrupting it;
//! * the CRC-16/CCITT itself, computed bit by bit.
//!
//! Timed runs cycle through [`SEEDS`] (hidden from the optimiser) and fold every
//! iteration's CRC; the fold is then compared with the fold of [`GOLDEN`] results, so
//! a single miscomputed iteration invalidates the score.
use crate::rng::SplitMix64;
use crate::timing;
use crate::ProbeError;
use std::hint::black_box;
use std::time::Duration;

/// Seeds cycled through by timed runs.
pub const SEEDS: [u32; 8] =
    [0x0000_0001, 0x0000_3415, 0x0066_0066, 0x1234_5678, 0x7fff_ffff, 0x8000_0000, 0xdead_beef, 0x0bad_f00d];

/// The CRC each seed's iteration must produce on every platform.
pub const GOLDEN: [u16; 8] = [0xad2c, 0x0a1d, 0xd5eb, 0xa508, 0x3f2b, 0x2ba8, 0xb620, 0xa5ee];

const LIST_LEN: usize = 64;
const NIL: u8 = u8::MAX;
const MAT_N: usize = 10;
const TEXT_LEN: usize = 384;

/// Result of a timed run; `checksum` is the fold that was validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuResult {
    pub iterations: u64,
    pub seconds: f64,
    pub iter_per_sec: f64,
    /// Thread CPU seconds during the timed interval (see `seconds` for wall time).
    pub cpu_seconds: f64,
    pub checksum: u64,
}

/// Runs the workload on the calling thread for about `duration` (after calibration)
/// and returns iterations per second; errors if any result differs from [`GOLDEN`].
pub fn run(duration: Duration) -> Result<CpuResult, ProbeError> {
    validate()?;
    let mut count: u64 = 0;
    let mut fold: u64 = 0;
    let t = timing::run_for(duration, 16, |n| {
        for _ in 0..n {
            let seed = black_box(SEEDS[(count % SEEDS.len() as u64) as usize]);
            fold = fold_step(fold, iteration(seed));
            count += 1;
        }
    });
    let expected = (0..count).fold(0u64, |f, i| fold_step(f, GOLDEN[(i % GOLDEN.len() as u64) as usize]));
    if fold != expected {
        return Err(ProbeError::Validation(format!(
            "cpu workload checksum {fold:#018x} after {count} iterations, expected {expected:#018x}: \
             the CPU or the build miscomputed; do not use this score"
        )));
    }
    Ok(CpuResult {
        iterations: t.ops,
        seconds: t.seconds,
        iter_per_sec: t.ops as f64 / t.seconds,
        cpu_seconds: t.cpu_seconds,
        checksum: fold,
    })
}

/// Checks each seed's iteration against [`GOLDEN`].
pub fn validate() -> Result<(), ProbeError> {
    for (i, (&seed, &want)) in SEEDS.iter().zip(GOLDEN.iter()).enumerate() {
        let got = iteration(black_box(seed));
        if got != want {
            return Err(ProbeError::Validation(format!(
                "cpu workload seed #{i} ({seed:#x}) gave CRC {got:#06x}, expected {want:#06x}"
            )));
        }
    }
    Ok(())
}

fn fold_step(fold: u64, crc: u16) -> u64 {
    fold.wrapping_mul(0x100_0000_01b3).wrapping_add(crc as u64 + 1)
}

/// One iteration: a pure function of `seed`.
pub fn iteration(seed: u32) -> u16 {
    let mut rng = SplitMix64::new(seed as u64);
    let l = list_kernel(&mut rng);
    let m = matrix_kernel(&mut rng);
    let s = state_kernel(&mut rng);
    let mut crc = crc16_u16(0xffff, l);
    crc = crc16_u16(crc, m);
    crc16_u16(crc, s)
}

// ---------------------------------------------------------------- CRC-16/CCITT

/// CRC-16/CCITT (polynomial 0x1021), one byte, bit by bit on purpose: it is part of the workload.
pub fn crc16_byte(mut crc: u16, byte: u8) -> u16 {
    crc ^= (byte as u16) << 8;
    for _ in 0..8 {
        crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
    }
    crc
}

pub fn crc16_u16(crc: u16, v: u16) -> u16 {
    crc16_byte(crc16_byte(crc, v as u8), (v >> 8) as u8)
}

fn crc16_u32(crc: u16, v: u32) -> u16 {
    crc16_u16(crc16_u16(crc, v as u16), (v >> 16) as u16)
}

// ---------------------------------------------------------------- linked list

#[derive(Clone, Copy, Default)]
struct Node {
    next: u8,
    key: i16,
    val: i16,
}

struct List {
    nodes: [Node; LIST_LEN],
    head: u8,
}

impl List {
    fn build(rng: &mut SplitMix64) -> List {
        let mut nodes = [Node::default(); LIST_LEN];
        for (i, n) in nodes.iter_mut().enumerate() {
            n.key = (rng.below(2000) as i16) - 1000;
            n.val = rng.next_u32() as i16;
            n.next = if i + 1 < LIST_LEN { (i + 1) as u8 } else { NIL };
        }
        List { nodes, head: 0 }
    }

    fn reverse(&mut self) {
        let mut prev = NIL;
        let mut cur = self.head;
        while cur != NIL {
            let next = self.nodes[cur as usize].next;
            self.nodes[cur as usize].next = prev;
            prev = cur;
            cur = next;
        }
        self.head = prev;
    }

    /// Finds `key`; a found node moves to the front. Returns (steps walked, found).
    fn find_move_to_front(&mut self, key: i16) -> (u16, bool) {
        let mut prev = NIL;
        let mut cur = self.head;
        let mut steps = 0u16;
        while cur != NIL {
            if self.nodes[cur as usize].key == key {
                if prev != NIL {
                    self.nodes[prev as usize].next = self.nodes[cur as usize].next;
                    self.nodes[cur as usize].next = self.head;
                    self.head = cur;
                }
                return (steps, true);
            }
            prev = cur;
            cur = self.nodes[cur as usize].next;
            steps += 1;
        }
        (steps, false)
    }

    /// Bottom-up merge sort of the linked list (stable) by `rank`.
    fn sort_by(&mut self, rank: impl Fn(&Node) -> i32) {
        let mut width = 1usize;
        loop {
            let mut merges = 0;
            let mut p = self.head;
            let mut new_head = NIL;
            let mut tail = NIL;
            while p != NIL {
                merges += 1;
                let mut q = p;
                let mut psize = 0;
                while psize < width && q != NIL {
                    psize += 1;
                    q = self.nodes[q as usize].next;
                }
                let mut qsize = width;
                while psize > 0 || (qsize > 0 && q != NIL) {
                    let take_p = if psize == 0 {
                        false
                    } else if qsize == 0 || q == NIL {
                        true
                    } else {
                        rank(&self.nodes[p as usize]) <= rank(&self.nodes[q as usize])
                    };
                    let e;
                    if take_p {
                        e = p;
                        p = self.nodes[p as usize].next;
                        psize -= 1;
                    } else {
                        e = q;
                        q = self.nodes[q as usize].next;
                        qsize -= 1;
                    }
                    if tail == NIL {
                        new_head = e;
                    } else {
                        self.nodes[tail as usize].next = e;
                    }
                    tail = e;
                }
                p = q;
            }
            if tail != NIL {
                self.nodes[tail as usize].next = NIL;
            }
            self.head = new_head;
            if merges <= 1 {
                return;
            }
            width *= 2;
        }
    }

    fn crc(&self, mut crc: u16) -> u16 {
        let mut cur = self.head;
        while cur != NIL {
            let n = self.nodes[cur as usize];
            crc = crc16_u16(crc, n.key as u16);
            crc = crc16_u16(crc, n.val as u16);
            cur = n.next;
        }
        crc
    }
}

fn list_kernel(rng: &mut SplitMix64) -> u16 {
    let mut list = List::build(rng);
    list.reverse();
    let mut crc = list.crc(0);
    for q in 0..8 {
        let probe = list.nodes[rng.below(LIST_LEN as u64) as usize].key;
        // Odd searches look for a neighbour key, which is often absent.
        let key = if q % 2 == 1 { probe.wrapping_add(1) } else { probe };
        let (steps, found) = list.find_move_to_front(key);
        crc = crc16_u16(crc, steps);
        crc = crc16_byte(crc, found as u8);
    }
    list.sort_by(|n| n.val as i32);
    crc = list.crc(crc);
    list.sort_by(|n| n.key as i32);
    list.crc(crc)
}

// ---------------------------------------------------------------- matrices

fn matrix_kernel(rng: &mut SplitMix64) -> u16 {
    let mut a = [[0i16; MAT_N]; MAT_N];
    let mut b = [[0i16; MAT_N]; MAT_N];
    let mut v = [0i16; MAT_N];
    for i in 0..MAT_N {
        for j in 0..MAT_N {
            a[i][j] = (rng.next_u32() & 0x3ff) as i16 - 512;
            b[i][j] = (rng.next_u32() & 0x3ff) as i16 - 512;
        }
        v[i] = (rng.next_u32() & 0xff) as i16 - 128;
    }
    let scalar = (rng.next_u32() & 0x7f) as i16;

    let mut c = [[0i32; MAT_N]; MAT_N];
    for i in 0..MAT_N {
        for j in 0..MAT_N {
            let mut s = 0i32;
            for k in 0..MAT_N {
                s = s.wrapping_add(a[i][k] as i32 * b[k][j] as i32);
            }
            c[i][j] = s;
        }
    }
    for row in a.iter_mut() {
        for x in row.iter_mut() {
            *x = x.wrapping_add(scalar);
        }
    }
    let mut crc = 0u16;
    for row in a.iter() {
        let mut w = 0i32;
        for (x, y) in row.iter().zip(v.iter()) {
            w = w.wrapping_add(*x as i32 * *y as i32);
        }
        crc = crc16_u32(crc, w as u32);
    }
    // Bit-field extraction over the product, as a mix of shifts, masks and branches.
    let mut fields = 0u32;
    let mut negatives = 0u16;
    for row in c.iter() {
        for &x in row.iter() {
            fields = fields.wrapping_add(((x >> 3) & 0x7f) as u32 * (((x >> 11) & 0x0f) as u32 + 1));
            if x < 0 {
                negatives += 1;
            }
        }
    }
    crc = crc16_u32(crc, fields);
    crc = crc16_u16(crc, negatives);
    for (i, row) in c.iter().enumerate() {
        crc = crc16_u32(crc, row[i] as u32);
    }
    crc
}

// ---------------------------------------------------------------- state machine

#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    Start,
    Sign,
    Int,
    Zero,
    HexX,
    Hex,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpInt,
    Invalid,
}

/// Token classes counted by the state machine.
const CLASSES: usize = 5; // int, decimal, scientific, hex, invalid

fn step(s: St, c: u8) -> St {
    use St::*;
    match s {
        Start => match c {
            b'+' | b'-' => Sign,
            b'0' => Zero,
            b'1'..=b'9' => Int,
            b'.' => Dot,
            _ => Invalid,
        },
        Sign => match c {
            b'0'..=b'9' => Int,
            b'.' => Dot,
            _ => Invalid,
        },
        Zero => match c {
            b'x' | b'X' => HexX,
            b'0'..=b'9' => Int,
            b'.' => Dot,
            b'e' | b'E' => Exp,
            _ => Invalid,
        },
        Int => match c {
            b'0'..=b'9' => Int,
            b'.' => Dot,
            b'e' | b'E' => Exp,
            _ => Invalid,
        },
        HexX | Hex => match c {
            b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => Hex,
            _ => Invalid,
        },
        Dot | Frac => match c {
            b'0'..=b'9' => Frac,
            b'e' | b'E' => Exp,
            _ => Invalid,
        },
        Exp => match c {
            b'+' | b'-' => ExpSign,
            b'0'..=b'9' => ExpInt,
            _ => Invalid,
        },
        ExpSign | ExpInt => match c {
            b'0'..=b'9' => ExpInt,
            _ => Invalid,
        },
        Invalid => Invalid,
    }
}

fn class_of(s: St) -> usize {
    match s {
        St::Int | St::Zero => 0,
        St::Frac => 1,
        St::ExpInt => 2,
        St::Hex => 3,
        _ => 4,
    }
}

fn push_digits(text: &mut [u8; TEXT_LEN], len: &mut usize, mut v: u32, radix: u32) {
    let mut tmp = [0u8; 10];
    let mut n = 0;
    loop {
        let d = (v % radix) as u8;
        tmp[n] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
        n += 1;
        v /= radix;
        if v == 0 {
            break;
        }
    }
    while n > 0 && *len < TEXT_LEN {
        n -= 1;
        text[*len] = tmp[n];
        *len += 1;
    }
}

fn push(text: &mut [u8; TEXT_LEN], len: &mut usize, b: u8) {
    if *len < TEXT_LEN {
        text[*len] = b;
        *len += 1;
    }
}

fn generate_text(rng: &mut SplitMix64) -> ([u8; TEXT_LEN], usize) {
    let mut text = [0u8; TEXT_LEN];
    let mut len = 0;
    while len + 16 < TEXT_LEN {
        let r = rng.next_u32();
        match r % 6 {
            0 => push_digits(&mut text, &mut len, r >> 8 & 0xffff, 10),
            1 => {
                push(&mut text, &mut len, if r & 0x100 != 0 { b'-' } else { b'+' });
                push_digits(&mut text, &mut len, r >> 12 & 0xfff, 10);
            }
            2 => {
                push_digits(&mut text, &mut len, r >> 16 & 0xff, 10);
                push(&mut text, &mut len, b'.');
                push_digits(&mut text, &mut len, r >> 8 & 0xff, 10);
            }
            3 => {
                push_digits(&mut text, &mut len, r >> 20 & 0xf, 10);
                push(&mut text, &mut len, b'.');
                push_digits(&mut text, &mut len, r >> 8 & 0xfff, 10);
                push(&mut text, &mut len, b'e');
                if r & 0x80 != 0 {
                    push(&mut text, &mut len, b'-');
                }
                push_digits(&mut text, &mut len, r >> 4 & 0x7, 10);
            }
            4 => {
                push(&mut text, &mut len, b'0');
                push(&mut text, &mut len, b'x');
                push_digits(&mut text, &mut len, r >> 8, 16);
            }
            _ => {
                for k in 0..(1 + (r >> 8) % 4) {
                    push(&mut text, &mut len, b"q$#z.e+-"[((r >> (12 + 3 * k)) & 7) as usize]);
                }
            }
        }
        push(&mut text, &mut len, b',');
    }
    (text, len)
}

/// Counts token classes and state transitions in `text`; returns their CRC.
fn scan(text: &[u8], mut crc: u16) -> u16 {
    let mut counts = [0u16; CLASSES];
    let mut transitions = 0u16;
    let mut s = St::Start;
    for &c in text {
        if c == b',' {
            counts[class_of(s)] += 1;
            s = St::Start;
            continue;
        }
        let t = step(s, c);
        if t != s {
            transitions = transitions.wrapping_add(1);
        }
        s = t;
    }
    counts[class_of(s)] += 1;
    for c in counts {
        crc = crc16_u16(crc, c);
    }
    crc16_u16(crc, transitions)
}

fn state_kernel(rng: &mut SplitMix64) -> u16 {
    let (mut text, len) = generate_text(rng);
    let mut crc = scan(&text[..len], 0);
    // Corrupt every k-th byte and scan again: different paths through the machine.
    let k = 3 + rng.below(5) as usize;
    let mut i = 0;
    while i < len {
        text[i] ^= 0x01;
        i += k;
    }
    crc = scan(&text[..len], crc);
    let mut i = 1;
    while i < len {
        text[i] = text[i].wrapping_add(1) | 0x20;
        i += k + 1;
    }
    scan(&text[..len], crc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_results_hold() {
        validate().unwrap();
    }

    #[test]
    fn iterations_differ_by_seed_and_are_deterministic() {
        let a: Vec<u16> = SEEDS.iter().map(|&s| iteration(s)).collect();
        let b: Vec<u16> = SEEDS.iter().map(|&s| iteration(s)).collect();
        assert_eq!(a, b);
        let mut u = a.clone();
        u.sort();
        u.dedup();
        assert_eq!(u.len(), SEEDS.len());
    }

    #[test]
    fn list_sort_orders_by_rank() {
        let mut rng = SplitMix64::new(9);
        let mut l = List::build(&mut rng);
        l.sort_by(|n| n.val as i32);
        let mut cur = l.head;
        let mut prev = i32::MIN;
        let mut count = 0;
        while cur != NIL {
            let v = l.nodes[cur as usize].val as i32;
            assert!(v >= prev);
            prev = v;
            cur = l.nodes[cur as usize].next;
            count += 1;
        }
        assert_eq!(count, LIST_LEN);
    }

    #[test]
    fn state_machine_classifies_tokens() {
        let classes = |s: &str| {
            let mut st = St::Start;
            for &c in s.as_bytes() {
                st = step(st, c);
            }
            class_of(st)
        };
        assert_eq!(classes("1234"), 0);
        assert_eq!(classes("-12"), 0);
        assert_eq!(classes("3.25"), 1);
        assert_eq!(classes("1.5e-3"), 2);
        assert_eq!(classes("0x1f"), 3);
        assert_eq!(classes("0x"), 4);
        assert_eq!(classes("q$"), 4);
    }

    #[test]
    fn crc16_matches_the_ccitt_check_value() {
        // CRC-16/CCITT-FALSE of "123456789" is 0x29b1.
        let crc = b"123456789".iter().fold(0xffffu16, |c, &b| crc16_byte(c, b));
        assert_eq!(crc, 0x29b1);
    }

    #[test]
    fn timed_run_validates() {
        let r = run(Duration::from_millis(30)).unwrap();
        assert!(r.iterations > 0 && r.iter_per_sec > 0.0 && r.iter_per_sec.is_finite());
    }
}

//! Per-client request streams: which command, which key, which value size.
//!
//! Semantics follow memtier_benchmark: each client (connection) owns its generators;
//! a ratio cycle sends its SETs first, then its GETs; `S` and `P` walk keys in order
//! and wrap; without `distinct_client_seed` all clients draw the same random keys.
use crate::config::{Config, KeyPattern, Requests, SizePattern};
use crate::spare::{Decimal, SpareWriter, MAX_DECIMAL};
use crate::zipf::Zipf;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::ops::Range;

/// The random generator of every stream: pinned so a seed means the same keys in every build.
pub type StreamRng = Xoshiro256PlusPlus;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Set,
    Get,
}

/// Slice `i` of `n` of [min, max] for the `P` pattern: contiguous, sizes differing by at most one.
pub fn parallel_slice(min: u64, max: u64, n: u64, i: u64) -> (u64, u64) {
    let count = (max - min + 1) as u128;
    let lo = min + (count * i as u128 / n as u128) as u64;
    let hi = min + (count * (i as u128 + 1) / n as u128) as u64 - 1;
    (lo, hi)
}

/// Key names: the configured prefix, then the key's index in decimal (memtier's
/// `memtier-123`), written straight into a request (`put`).
#[derive(Debug, Clone)]
pub struct KeyNames {
    prefix: Vec<u8>,
    /// The prefix padded to `PREFIX_BLOCK` bytes, copied as a block of constant size;
    /// `None` for a longer prefix.
    block: Option<[u8; PREFIX_BLOCK]>,
    /// `name`'s buffer.
    buf: Vec<u8>,
}

/// Prefixes up to this long are copied as one block of this size.
const PREFIX_BLOCK: usize = 32;

impl KeyNames {
    pub fn new(prefix: &str) -> KeyNames {
        let prefix = prefix.as_bytes().to_vec();
        let block = (prefix.len() <= PREFIX_BLOCK).then(|| {
            let mut b = [0u8; PREFIX_BLOCK];
            b[..prefix.len()].copy_from_slice(&prefix);
            b
        });
        KeyNames { prefix, block, buf: Vec::new() }
    }

    /// Length of the name of the key whose index is `index`.
    #[inline]
    pub fn len(&self, index: Decimal) -> usize {
        self.prefix.len() + index.digits()
    }

    /// Room that `put` needs in its writer (its block copy may write past the name).
    #[inline]
    pub fn room(&self) -> usize {
        self.prefix.len().max(PREFIX_BLOCK) + MAX_DECIMAL
    }

    /// Write the name of the key whose index is `index`; returns where it went (in the
    /// writer's vector).
    #[inline(always)]
    pub fn put(&self, w: &mut SpareWriter<'_>, index: Decimal) -> Range<usize> {
        let start = w.pos();
        match &self.block {
            Some(b) => w.put_first(b, self.prefix.len()),
            None => w.put_slice(&self.prefix),
        }
        w.put_decimal(index);
        start..w.pos()
    }

    /// The name of key `key`.
    pub fn name(&mut self, key: u64) -> &[u8] {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        self.put(&mut SpareWriter::new(&mut buf, self.room()), Decimal::of(key));
        self.buf = buf;
        &self.buf
    }
}

/// Keys of one command of one client.
#[derive(Debug, Clone)]
pub struct KeyGen {
    pattern: KeyPattern,
    lo: u64,
    hi: u64,
    next: u64,
    /// The Gaussian pattern's median and standard deviation, in keys.
    median: f64,
    stddev: f64,
    /// The range as floats, for the Gaussian pattern's check of a draw.
    lo_f: f64,
    hi_f: f64,
    /// round(x) is in [lo, hi] exactly when x is in [round_lo, round_hi): [lo - 0.5,
    /// hi + 0.5), but (-0.5, 0.5) for lo = 0 (-0.5 rounds to -1). Both ends are exact
    /// below 2^52; from there on the range is empty and every draw takes the slow path.
    round_lo: f64,
    round_hi: f64,
    zipf: Option<Zipf>,
}

/// Redraws allowed before a Gaussian key is clamped instead (only reachable with a
/// median far in a tail; keeps a pathological configuration from spinning).
const MAX_REDRAWS: u32 = 1000;

impl KeyGen {
    pub fn new(cfg: &Config, pattern: KeyPattern, client: u64) -> KeyGen {
        let (mut lo, mut hi) = (cfg.key_min, cfg.key_max);
        if pattern == KeyPattern::Parallel {
            (lo, hi) = parallel_slice(cfg.key_min, cfg.key_max, cfg.total_clients(), client);
        }
        // a one-key range gives stddev 0: always the median
        let median = cfg.key_median.unwrap_or((cfg.key_min as f64 + cfg.key_max as f64) / 2.0);
        let stddev = cfg.key_stddev.unwrap_or((cfg.key_max - cfg.key_min) as f64 / 6.0);
        let zipf = (pattern == KeyPattern::Zipf).then(|| {
            lo = lo.max(1);
            Zipf::new(lo, hi, cfg.key_zipf_exp)
        });
        let (lo_f, hi_f) = (lo as f64, hi as f64);
        let round_lo = if lo == 0 { -0.499_999_999_999_999_94 } else { lo_f - 0.5 }; // the next f64 above -0.5
        let round_hi = if hi_f < 4_503_599_627_370_496.0 { hi_f + 0.5 } else { f64::NEG_INFINITY };
        KeyGen { pattern, lo, hi, next: lo, median, stddev, lo_f, hi_f, round_lo, round_hi, zipf }
    }

    /// Number of keys this generator can produce.
    pub fn range_len(&self) -> u64 {
        self.hi - self.lo + 1
    }

    pub fn range(&self) -> (u64, u64) {
        (self.lo, self.hi)
    }

    #[inline]
    pub fn next_key<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        match self.pattern {
            KeyPattern::Sequential | KeyPattern::Parallel => {
                let k = self.next;
                self.next = if k >= self.hi { self.lo } else { k + 1 };
                k
            }
            KeyPattern::Random => rng.random_range(self.lo..=self.hi),
            KeyPattern::Gaussian => {
                let x = self.gaussian(rng);
                if x >= self.round_lo && x < self.round_hi {
                    // x's whole part fits an i64, whose conversion is cheaper than a u64's
                    let t = x as i64;
                    return (t + (x - t as f64 >= 0.5) as i64) as u64;
                }
                self.redraw_gaussian(x, rng)
            }
            KeyPattern::Zipf => self.zipf(rng),
        }
    }

    /// A Gaussian draw `first` fell outside the range (0.27% of draws at the default
    /// deviation), or the range reaches 2^52: round it as `f64::round`, and draw again
    /// while it is outside, out of the hot path.
    #[cold]
    #[inline(never)]
    fn redraw_gaussian<R: Rng + ?Sized>(&self, first: f64, rng: &mut R) -> u64 {
        let x = round(first);
        if x >= self.lo_f && x <= self.hi_f {
            return x as u64;
        }
        for _ in 1..MAX_REDRAWS {
            let x = round(self.gaussian(rng));
            if x >= self.lo_f && x <= self.hi_f {
                return x as u64;
            }
        }
        (round(self.gaussian(rng)).max(self.lo_f) as u64).min(self.hi)
    }

    #[inline(never)]
    fn zipf<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.zipf.as_ref().expect("zipf").sample(rng)
    }

    /// One draw of N(median, stddev²), as `rand_distr::Normal` draws it (the same stream).
    #[inline]
    fn gaussian<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let z: f64 = rng.sample(StandardNormal);
        self.median + self.stddev * z
    }
}

/// `x.round()` (half away from zero), without the call into libm that `f64::round` is on
/// the baseline x86-64 target (no SSE4.1): a Gaussian key rounds one draw per request.
#[inline]
fn round(x: f64) -> f64 {
    // from 2^52 on every f64 is a whole number; NaN and infinities are returned as they are
    if x.is_nan() || x.abs() >= 4_503_599_627_370_496.0 {
        return x;
    }
    let t = (x as i64 as f64).copysign(x); // toward zero (-0.0 as round gives it)
    let d = x - t; // exact (Sterbenz), in (-1, 1)
    if d >= 0.5 {
        t + 1.0
    } else if d <= -0.5 {
        t - 1.0
    } else {
        t
    }
}

/// Value sizes.
#[derive(Debug, Clone)]
pub struct SizeGen {
    min: u32,
    max: u32,
    pattern: SizePattern,
    key_min: u64,
    key_span: f64,
}

impl SizeGen {
    pub fn new(cfg: &Config) -> SizeGen {
        SizeGen {
            min: cfg.data_size_min,
            max: cfg.data_size_max,
            pattern: cfg.data_size_pattern,
            key_min: cfg.key_min,
            key_span: (cfg.key_max - cfg.key_min) as f64,
        }
    }

    pub fn size<R: Rng + ?Sized>(&self, key: u64, rng: &mut R) -> u32 {
        if self.min == self.max {
            return self.min;
        }
        match self.pattern {
            SizePattern::Random => rng.random_range(self.min.max(1)..=self.max),
            SizePattern::Sequential => {
                let frac = if self.key_span > 0.0 { (key - self.key_min) as f64 / self.key_span } else { 0.0 };
                (self.min as f64 + (self.max - self.min) as f64 * frac).round().max(1.0) as u32
            }
        }
    }
}

/// Everything one client sends, in order.
#[derive(Debug, Clone)]
pub struct Workload {
    set_keys: KeyGen,
    get_keys: KeyGen,
    ratio: [u32; 2],
    cycle: u32,
    sizes: SizeGen,
    rng: StreamRng,
}

/// Seed of client `client`'s streams given the run's resolved seed.
pub fn client_seed(cfg: &Config, seed: u64, client: u64) -> u64 {
    if cfg.distinct_client_seed {
        seed.wrapping_add(client)
    } else {
        seed
    }
}

impl Workload {
    pub fn new(cfg: &Config, seed: u64, client: u64) -> Workload {
        Workload {
            set_keys: KeyGen::new(cfg, cfg.key_pattern[0], client),
            get_keys: KeyGen::new(cfg, cfg.key_pattern[1], client),
            ratio: cfg.ratio,
            cycle: 0,
            sizes: SizeGen::new(cfg),
            rng: StreamRng::seed_from_u64(client_seed(cfg, seed, client)),
        }
    }

    /// Next command, key index and (for SET) value size.
    #[inline(always)]
    pub fn next_request(&mut self) -> (Op, u64, u32) {
        let [sets, gets] = self.ratio;
        let op = if self.cycle < sets { Op::Set } else { Op::Get };
        self.cycle += 1;
        if self.cycle >= sets + gets {
            self.cycle = 0;
        }
        match op {
            Op::Set => {
                let k = self.set_keys.next_key(&mut self.rng);
                (op, k, self.sizes.size(k, &mut self.rng))
            }
            Op::Get => (op, self.get_keys.next_key(&mut self.rng), 0),
        }
    }

    /// Measured requests this client sends, `None` when the run is time-limited.
    pub fn quota(&self, cfg: &Config) -> Option<u64> {
        match cfg.effective_requests()? {
            Requests::PerClient(n) => Some(n),
            // validation guarantees one command only with allkeys
            Requests::AllKeys => {
                Some(if cfg.ratio[0] > 0 { self.set_keys.range_len() } else { self.get_keys.range_len() })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, Normal};

    #[test]
    fn gaussian_keys_are_rand_distr_normal_draws_rounded() {
        // the stream a seed names must not change with the sampler's plumbing; the second
        // range starts at 0 and has half its draws outside, the third reaches past 2^52
        for (lo, hi, median, stddev) in
            [(1, 100_000, None, None), (0, 9, Some(0.0), Some(3.0)), (1 << 53, (1 << 53) + 1000, None, None)]
        {
            let mut c = cfg("G:G");
            (c.key_min, c.key_max, c.key_median, c.key_stddev) = (lo, hi, median, stddev);
            let mut keys = KeyGen::new(&c, KeyPattern::Gaussian, 0);
            let m = median.unwrap_or((lo as f64 + hi as f64) / 2.0);
            let n: Normal<f64> = Normal::new(m, stddev.unwrap_or((hi - lo) as f64 / 6.0)).unwrap();
            let (mut a, mut b) = (StreamRng::seed_from_u64(11), StreamRng::seed_from_u64(11));
            for _ in 0..100_000 {
                let want = loop {
                    let x = n.sample(&mut b).round();
                    if x >= lo as f64 && x <= hi as f64 {
                        break x as u64;
                    }
                };
                assert_eq!(keys.next_key(&mut a), want, "[{lo}, {hi}]");
            }
        }
    }

    #[test]
    fn round_is_f64_round() {
        let mut xs = vec![0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 0.49999999999999994, -0.49999999999999994];
        xs.extend([4503599627370495.5, 4503599627370496.0, 1e300, -1e300, f64::INFINITY, f64::NEG_INFINITY]);
        let mut rng = StreamRng::seed_from_u64(7);
        let n = Normal::new(50_000.0, 16_666.0).unwrap();
        xs.extend((0..100_000).map(|_| n.sample(&mut rng)));
        xs.extend((0..10_000).map(|i| i as f64 / 4.0 - 1250.0));
        for x in xs {
            assert_eq!(round(x).to_bits(), x.round().to_bits(), "{x}");
        }
        assert!(round(f64::NAN).is_nan());
    }
    use std::collections::HashSet;

    fn cfg(pattern: &str) -> Config {
        let p = |c| match c {
            'S' => KeyPattern::Sequential,
            'R' => KeyPattern::Random,
            'G' => KeyPattern::Gaussian,
            'P' => KeyPattern::Parallel,
            _ => KeyPattern::Zipf,
        };
        let mut chars = pattern.chars();
        let (a, b) = (chars.next().unwrap(), chars.nth(1).unwrap());
        Config { key_pattern: [p(a), p(b)], key_min: 1, key_max: 1000, threads: 3, clients: 7, ..Config::default() }
    }

    #[test]
    fn parallel_slices_cover_range_exactly_once() {
        for (min, max, n) in [(1u64, 1000u64, 21u64), (0, 9, 10), (5, 5, 1), (1, 2_000_000, 3)] {
            let mut next = min;
            for i in 0..n {
                let (lo, hi) = parallel_slice(min, max, n, i);
                assert_eq!(lo, next);
                assert!(hi >= lo);
                next = hi + 1;
            }
            assert_eq!(next, max + 1);
        }
    }

    #[test]
    fn allkeys_with_p_writes_every_key_once() {
        let mut c = cfg("P:P");
        c.ratio = [1, 0];
        c.requests = Some(Requests::AllKeys);
        let mut seen = HashSet::new();
        for client in 0..c.total_clients() {
            let mut w = Workload::new(&c, 1, client);
            for _ in 0..w.quota(&c).unwrap() {
                let (op, k, size) = w.next_request();
                assert_eq!(op, Op::Set);
                assert_eq!(size, 32);
                assert!(seen.insert(k), "key {k} twice");
            }
        }
        assert_eq!(seen.len(), 1000);
        assert_eq!(*seen.iter().min().unwrap(), 1);
        assert_eq!(*seen.iter().max().unwrap(), 1000);
    }

    #[test]
    fn ratio_cycle_sets_first() {
        let mut c = cfg("S:S");
        c.ratio = [2, 3];
        let mut w = Workload::new(&c, 1, 0);
        let ops: Vec<Op> = (0..10).map(|_| w.next_request().0).collect();
        use Op::*;
        assert_eq!(ops, vec![Set, Set, Get, Get, Get, Set, Set, Get, Get, Get]);
    }

    #[test]
    fn sequential_wraps() {
        let mut c = cfg("S:S");
        c.key_max = 3;
        let mut w = Workload::new(&c, 1, 0);
        c.ratio = [1, 0];
        let mut w2 = Workload::new(&c, 1, 0);
        let _ = &mut w;
        let keys: Vec<u64> = (0..7).map(|_| w2.next_request().1).collect();
        assert_eq!(keys, vec![1, 2, 3, 1, 2, 3, 1]);
    }

    #[test]
    fn gaussian_moments_and_bounds() {
        let mut c = cfg("G:G");
        c.key_max = 100_000;
        let mut g = KeyGen::new(&c, KeyPattern::Gaussian, 0);
        let mut rng = StreamRng::seed_from_u64(3);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| g.next_key(&mut rng) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        let (m0, s0) = (50_000.5, 99_999.0 / 6.0);
        assert!((mean - m0).abs() < 5.0 * s0 / (n as f64).sqrt(), "mean {mean}");
        // truncation at ±3σ shrinks the stddev by ~1.3%
        assert!((sd / s0 - 0.9866).abs() < 0.01, "sd {sd}");
        assert!(xs.iter().all(|&x| (1.0..=100_000.0).contains(&x)));
        // explicit median/stddev, narrow enough not to be truncated
        c.key_median = Some(30_000.0);
        c.key_stddev = Some(1000.0);
        let mut g = KeyGen::new(&c, KeyPattern::Gaussian, 0);
        let xs: Vec<f64> = (0..n).map(|_| g.next_key(&mut rng) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        assert!((mean - 30_000.0).abs() < 15.0, "mean {mean}");
        assert!((sd - 1000.0).abs() < 10.0, "sd {sd}");
    }

    #[test]
    fn seeds_same_or_distinct() {
        let c = cfg("R:R");
        let draw = |c: &Config, client| {
            let mut w = Workload::new(c, 42, client);
            (0..20).map(|_| w.next_request().1).collect::<Vec<_>>()
        };
        assert_eq!(draw(&c, 0), draw(&c, 5));
        let mut d = c.clone();
        d.distinct_client_seed = true;
        assert_ne!(draw(&d, 0), draw(&d, 5));
        assert_eq!(draw(&d, 5), draw(&d, 5));
    }

    #[test]
    fn size_patterns() {
        let mut c = cfg("S:S");
        c.data_size_min = 10;
        c.data_size_max = 20;
        let mut rng = StreamRng::seed_from_u64(1);
        let s = SizeGen::new(&c);
        let sizes: HashSet<u32> = (0..1000).map(|i| s.size(1 + i % 1000, &mut rng)).collect();
        assert_eq!(sizes, (10..=20).collect());
        c.data_size_pattern = SizePattern::Sequential;
        let s = SizeGen::new(&c);
        assert_eq!(s.size(1, &mut rng), 10);
        assert_eq!(s.size(1000, &mut rng), 20);
        assert_eq!(s.size(500, &mut rng), 15);
    }

    #[test]
    fn zipf_keys_favour_small_indices() {
        let c = cfg("Z:Z");
        let mut g = KeyGen::new(&c, KeyPattern::Zipf, 0);
        let mut rng = StreamRng::seed_from_u64(9);
        let ones = (0..10_000).filter(|_| g.next_key(&mut rng) == 1).count();
        // P(1) = 1/H(1000) ≈ 0.1336 for s = 1
        assert!((ones as f64 / 10_000.0 - 0.1336).abs() < 0.015, "{ones}");
    }
}

//! Latency histograms: HDR histograms in nanoseconds, mergeable exactly, stored as
//! the standard HdrHistogram V2 compressed encoding (base64), which other HDR tools
//! and the `hdrhistogram` Python package read.
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Largest latency tracked exactly (1 hour); larger values are recorded as this.
pub const MAX_NS: u64 = 3_600_000_000_000;
/// 3 significant digits: values are exact to within 0.1%.
pub const SIGFIG: u8 = 3;
pub const ENCODING: &str = "hdr-v2-deflate-base64";

/// HDR's bucketing for a lowest discernible value of 1 and [`SIGFIG`] digits: 2^11 sub-buckets
/// (the least power of two over 2·10^3), the top half of them in every bucket past the first.
const SUB_BUCKET_BITS: u32 = 11;
const HALF_BITS: u32 = SUB_BUCKET_BITS - 1;
const SUB_BUCKET_MASK: u64 = (1 << SUB_BUCKET_BITS) - 1;

/// Counts in HDR's index space: recording is a few instructions, where `Histogram::record`
/// takes about 60 with the checks of a histogram that may resize or move its range (a
/// reply's cost matters at a million a second). Every query and the encoding go through a
/// `hdrhistogram::Histogram` built from the counts, so the figures are HDR's own.
#[derive(Debug, Clone)]
pub struct LatencyHist {
    counts: Vec<u64>,
    total: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist::new()
    }
}

/// The index of `ns` in HDR's counts array (`Histogram::index_for`).
#[inline]
fn index_of(ns: u64) -> usize {
    let bucket = 64 - SUB_BUCKET_BITS - (ns | SUB_BUCKET_MASK).leading_zeros();
    let sub = (ns >> bucket) as usize;
    (((bucket + 1) as usize) << HALF_BITS) + sub - (1 << HALF_BITS)
}

/// The lowest value counted at `index` (`Histogram::value_for`).
fn value_at(index: usize) -> u64 {
    let mut bucket = (index >> HALF_BITS) as i64 - 1;
    let mut sub = (index & ((1 << HALF_BITS) - 1)) as u64 + (1 << HALF_BITS);
    if bucket < 0 {
        sub -= 1 << HALF_BITS;
        bucket = 0;
    }
    sub << bucket
}

/// A [`LatencyHist`] read as HDR reads it; every figure is 0 when it is empty.
pub struct HistView(Histogram<u64>);

impl HistView {
    /// Value at quantile q in [0, 1], in ns.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.value_at_quantile(q)
        }
    }

    pub fn max_ns(&self) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.max()
        }
    }

    pub fn min_ns(&self) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.min()
        }
    }
}

impl LatencyHist {
    pub fn new() -> Self {
        LatencyHist { counts: vec![0; index_of(MAX_NS) + 1], total: 0 }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[index_of(ns.clamp(1, MAX_NS))] += 1;
        self.total += 1;
    }

    pub fn add(&mut self, other: &LatencyHist) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The counts as an HDR histogram.
    fn hdr(&self) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, MAX_NS, SIGFIG).expect("valid bounds");
        for (i, &n) in self.counts.iter().enumerate().filter(|(_, &n)| n > 0) {
            h.record_n(value_at(i), n).expect("within bounds");
        }
        h
    }

    /// The counts as an HDR histogram, to read quantiles from (build it once per reading).
    pub fn view(&self) -> HistView {
        HistView(self.hdr())
    }

    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(&self.hdr(), &mut bytes).expect("serialise to memory");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    pub fn decode(text: &str) -> Result<LatencyHist, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram does not decode: {e:?}"))?;
        let mut out = LatencyHist::new();
        for v in h.iter_recorded() {
            let ns = h.lowest_equivalent(v.value_iterated_to());
            if ns > MAX_NS {
                return Err(format!("histogram out of range: a value of {ns} ns"));
            }
            out.counts[index_of(ns.max(1))] += v.count_at_value();
            out.total += v.count_at_value();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn counts_are_hdr_histogram_buckets() {
        // every value lands where HDR would put it, so the figures are HDR's own
        let hdr = Histogram::<u64>::new_with_bounds(1, MAX_NS, SIGFIG).unwrap();
        let mut values: Vec<u64> = (1..5000).collect();
        for b in 11..42 {
            values.extend([(1u64 << b) - 1, 1 << b, (1 << b) + 1]);
        }
        values.extend([MAX_NS - 1, MAX_NS]);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        values.extend((0..100_000).map(|_| rng.random_range(1..=MAX_NS) >> rng.random_range(0..40)).filter(|&v| v > 0));
        let (mut ours, mut theirs) = (LatencyHist::new(), hdr.clone());
        for &v in &values {
            assert_eq!(value_at(index_of(v)), hdr.lowest_equivalent(v), "{v}");
            assert!(index_of(v) < ours.counts.len(), "{v}");
            ours.record(v);
            theirs.record(v).unwrap();
        }
        assert_eq!(ours.count(), theirs.len());
        let view = ours.view();
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(view.quantile_ns(q), theirs.value_at_quantile(q), "q {q}");
        }
        assert_eq!((view.min_ns(), view.max_ns()), (theirs.min(), theirs.max()));
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(&theirs, &mut bytes).unwrap();
        assert_eq!(ours.encode(), base64::engine::general_purpose::STANDARD.encode(bytes));
    }

    #[test]
    fn record_merge_roundtrip() {
        let mut a = LatencyHist::new();
        let mut b = LatencyHist::new();
        for i in 1..=1000u64 {
            a.record(i * 1000);
            b.record(i * 1_000_000);
        }
        b.record(0);
        b.record(u64::MAX);
        a.add(&b);
        assert_eq!(a.count(), 2002);
        let (av, d) = (a.view(), LatencyHist::decode(&a.encode()).unwrap());
        let q = av.quantile_ns(0.5);
        assert!((990_000..=1_010_000).contains(&q), "{q}");
        assert_eq!(av.max_ns(), d.view().max_ns());
        assert_eq!(d.count(), a.count());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(d.view().quantile_ns(q), av.quantile_ns(q));
        }
        assert!(LatencyHist::decode("not base64!").is_err());
    }
}

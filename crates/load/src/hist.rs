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

#[derive(Debug, Clone)]
pub struct LatencyHist {
    h: Histogram<u64>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist::new()
    }
}

impl LatencyHist {
    pub fn new() -> Self {
        LatencyHist { h: Histogram::new_with_bounds(1, MAX_NS, SIGFIG).expect("valid bounds") }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.h.saturating_record(ns.clamp(1, MAX_NS));
    }

    pub fn add(&mut self, other: &LatencyHist) {
        self.h.add(&other.h).expect("same bounds");
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Value at quantile q in [0, 1], in ns (0 when empty).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.value_at_quantile(q)
        }
    }

    pub fn max_ns(&self) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.max()
        }
    }

    pub fn min_ns(&self) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.min()
        }
    }

    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(&self.h, &mut bytes).expect("serialise to memory");
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
        out.h.add(&h).map_err(|e| format!("histogram out of range: {e:?}"))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let q = a.quantile_ns(0.5);
        assert!((990_000..=1_010_000).contains(&q), "{q}");
        assert_eq!(a.max_ns(), LatencyHist::decode(&a.encode()).unwrap().max_ns());
        let d = LatencyHist::decode(&a.encode()).unwrap();
        assert_eq!(d.count(), a.count());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(d.quantile_ns(q), a.quantile_ns(q));
        }
        assert!(LatencyHist::decode("not base64!").is_err());
    }
}

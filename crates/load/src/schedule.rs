//! Open-loop send times of one connection.
//!
//! Each connection gets rate/N of the total rate. Constant arrivals are evenly
//! spaced and the N connections are staggered so that the total is evenly spaced
//! too; Poisson arrivals have exponential gaps, and N independent Poisson processes
//! add up to one of the total rate.
use crate::config::Arrivals;
use crate::keys::StreamRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};

#[derive(Debug, Clone)]
pub struct Schedule {
    origin: f64,
    gap: f64,
    k: u64,
    next: u64,
    rng: Option<StreamRng>,
}

impl Schedule {
    /// `gap_ns`: mean time between this connection's sends; `phase` in [0, 1) staggers
    /// constant arrivals; `seed` drives Poisson gaps.
    pub fn new(start_ns: u64, gap_ns: f64, phase: f64, arrivals: Arrivals, seed: u64) -> Schedule {
        let mut s = Schedule { origin: start_ns as f64 + phase * gap_ns, gap: gap_ns, k: 0, next: 0, rng: None };
        if arrivals == Arrivals::Poisson {
            s.origin = start_ns as f64;
            s.rng = Some(StreamRng::seed_from_u64(seed));
        }
        s.advance_from(s.origin);
        s
    }

    fn advance_from(&mut self, base: f64) {
        match self.rng.as_mut() {
            Some(rng) => {
                let e: f64 = Exp1.sample(rng);
                self.origin = base + e * self.gap;
                self.next = self.origin as u64;
            }
            None => {
                self.next = (self.origin + self.k as f64 * self.gap) as u64;
            }
        }
    }

    /// Intended send time of the next request (CLOCK_MONOTONIC ns).
    #[inline]
    pub fn next(&self) -> u64 {
        self.next
    }

    pub fn advance(&mut self) {
        self.k += 1;
        let base = self.origin;
        self.advance_from(base);
    }

    /// Expected number of sends in [from, to) not yet taken, for reporting unsent requests.
    pub fn remaining_before(&self, from: u64, to: u64) -> u64 {
        let start = self.next.max(from);
        if start >= to {
            return 0;
        }
        ((to - start) as f64 / self.gap).ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_is_even_and_staggered() {
        let mut a = Schedule::new(1000, 100.0, 0.0, Arrivals::Constant, 0);
        let mut b = Schedule::new(1000, 100.0, 0.5, Arrivals::Constant, 0);
        let mut ta = vec![];
        let mut tb = vec![];
        for _ in 0..5 {
            ta.push(a.next());
            tb.push(b.next());
            a.advance();
            b.advance();
        }
        assert_eq!(ta, vec![1000, 1100, 1200, 1300, 1400]);
        assert_eq!(tb, vec![1050, 1150, 1250, 1350, 1450]);
        assert_eq!(a.remaining_before(0, 2000), 5);
    }

    #[test]
    fn poisson_has_the_right_mean_and_dispersion() {
        let mut s = Schedule::new(0, 1000.0, 0.0, Arrivals::Poisson, 11);
        let n = 100_000;
        let mut prev = 0u64;
        let mut gaps = Vec::with_capacity(n);
        for _ in 0..n {
            gaps.push((s.next() - prev) as f64);
            prev = s.next();
            s.advance();
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 1000.0).abs() < 15.0, "{mean}");
        // exponential: coefficient of variation 1
        assert!((var.sqrt() / mean - 1.0).abs() < 0.03, "{}", var.sqrt() / mean);
    }
}

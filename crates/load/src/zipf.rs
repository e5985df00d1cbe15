//! Zipf sampler over an integer interval [a, b], P(k) ∝ k^-s.
//!
//! Hand-written because `rand_distr::Zipf` is rank-based over 1..=n, whereas
//! memtier_benchmark weights the absolute key index within [key_min, key_max].
//! Method: rejection-inversion (Hörmann & Derflinger, ACM TOMACS 6(3), 1996),
//! which needs O(1) memory and ~1.1 uniform draws per sample for any range.
use rand::Rng;

#[derive(Debug, Clone)]
pub struct Zipf {
    a: f64,
    b: f64,
    s: f64,
    h_lo: f64,
    h_hi: f64,
    squeeze: f64,
}

impl Zipf {
    /// `a >= 1`, `a <= b`, `s > 0`.
    pub fn new(a: u64, b: u64, s: f64) -> Zipf {
        assert!(a >= 1 && a <= b && s > 0.0);
        let (a, b) = (a as f64, b as f64);
        let mut z = Zipf { a, b, s, h_lo: 0.0, h_hi: 0.0, squeeze: 0.0 };
        z.h_lo = z.big_h(a + 0.5) - z.h(a);
        z.h_hi = z.big_h(b + 0.5);
        z.squeeze = a + 1.0 - z.big_h_inv(z.big_h(a + 1.5) - z.h(a + 1.0));
        z
    }

    /// Unnormalised density x^-s.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// An antiderivative of h: x^(1-s)/(1-s), or ln x when s = 1.
    fn big_h(&self, x: f64) -> f64 {
        let l = x.ln();
        let t = (1.0 - self.s) * l;
        // (e^t - 1)/(1-s) + const; expm1 keeps precision when s is near 1.
        if t.abs() < 1e-8 {
            l * (1.0 + t / 2.0)
        } else {
            t.exp_m1() / (1.0 - self.s)
        }
    }

    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        // inverse of the above: x = exp(ln(1 + t)/(1-s))
        if t.abs() < 1e-8 {
            (y * (1.0 - t / 2.0)).exp()
        } else {
            (t.ln_1p() / (1.0 - self.s)).exp()
        }
    }

    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            let u = self.h_hi + rng.random::<f64>() * (self.h_lo - self.h_hi);
            let x = self.big_h_inv(u);
            let k = x.round().clamp(self.a, self.b);
            if k - x <= self.squeeze || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn check(a: u64, b: u64, s: f64) {
        let z = Zipf::new(a, b, s);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let n = 400_000;
        let mut counts = vec![0u64; (b - a + 1) as usize];
        for _ in 0..n {
            let k = z.sample(&mut rng);
            assert!(k >= a && k <= b);
            counts[(k - a) as usize] += 1;
        }
        let weights: Vec<f64> = (a..=b).map(|k| (k as f64).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        // each frequency within 5 standard errors of its probability
        for (i, c) in counts.iter().enumerate() {
            let p = weights[i] / total;
            let se = (p * (1.0 - p) / n as f64).sqrt();
            let f = *c as f64 / n as f64;
            assert!((f - p).abs() < 5.0 * se + 1e-9, "k={} f={f} p={p} (a={a} b={b} s={s})", a + i as u64);
        }
    }

    #[test]
    fn matches_exact_pmf() {
        check(1, 30, 1.0);
        check(1, 30, 0.6);
        check(5, 60, 1.3);
        check(100, 140, 2.5);
        check(1, 1, 1.0);
        check(1, 30, 1.0 + 1e-9);
    }
}

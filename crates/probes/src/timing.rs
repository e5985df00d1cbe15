//! Calibrated timing: grow the batch until one batch is long enough to time, then run
//! batches until the target duration is spent.
use std::time::{Duration, Instant};

/// Operations done and the time they took, excluding calibration.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub ops: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds of the calling thread over the same interval; well below `seconds`
    /// means the thread was preempted (a shared core) and the rate is too low.
    pub cpu_seconds: f64,
}

/// CPU time consumed by the calling thread, in seconds.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs `kernel(n)` (which must do `n` operations) for about `target`, after a
/// calibration phase that doubles `n` from `start` until one batch takes ≥ 1/8 of the
/// target (that phase doubles as warm-up and is not counted).
pub fn run_for(target: Duration, start: u64, mut kernel: impl FnMut(u64)) -> Timed {
    let target = target.max(Duration::from_millis(1));
    let mut n = start.max(1);
    loop {
        let t0 = Instant::now();
        kernel(n);
        let el = t0.elapsed();
        if el >= target / 8 || n >= u64::MAX / 4 {
            break;
        }
        n = n.saturating_mul(2);
    }
    let mut ops = 0u64;
    let c0 = thread_cpu_seconds();
    let t0 = Instant::now();
    loop {
        kernel(n);
        ops += n;
        if t0.elapsed() >= target {
            break;
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    Timed { ops, seconds, cpu_seconds: thread_cpu_seconds() - c0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_whole_batches_for_at_least_the_target() {
        let mut calls = Vec::new();
        let t = run_for(Duration::from_millis(20), 4, |n| {
            calls.push(n);
            std::hint::black_box((0..n * 1000).fold(0u64, |a, b| a ^ b));
        });
        // Calibration doubles the batch; timed batches then repeat the final size.
        assert!(calls.windows(2).all(|w| w[1] == w[0] * 2 || w[1] == w[0]));
        let last = *calls.last().unwrap();
        assert_eq!(t.ops % last, 0);
        assert!(t.seconds >= 0.020 && t.ops > 0);
        assert!(t.cpu_seconds > 0.0 && t.cpu_seconds <= t.seconds * 1.05);
    }
}

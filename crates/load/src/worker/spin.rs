//! Spin before sleeping. A round of either I/O loop that finds nothing to do while requests
//! are in flight may spin — watch for a completion without sleeping (io_uring: the ring's
//! `IORING_SQ_TASKRUN` flag, which the kernel sets the moment a receive is ready; epoll:
//! `epoll_wait` with no timeout) — for up to a limit, and sleep only if nothing came.
//!
//! Why: with few requests in flight, the client and the server take turns, and each turn
//! that ends in a sleep is paid twice: the client's sleep and wake-up, and the server's
//! wake-up of it from its send (an interrupt between CPUs; on a VM an exit to the
//! hypervisor). Where that costs more than the spin, spinning saves CPU on both sides and
//! the server answers sooner: at redis pipeline 1 with 4 connections (client and server
//! pinned to CPUs of their own) a 20 µs spin doubled throughput and lowered the CPU per
//! request of the client and of redis. But a spinning client also takes its replies one
//! at a time, where a sleeping one finds several at each wake-up: with 32 requests in
//! flight (memtier's `-c 4 --pipeline 8`) the spin saw nearly every reply come and still
//! cost the client 25–40% more CPU per request; against memcached at pipeline 8 with one
//! connection (memcached asleep between batches) a 20 µs spin saw fewer than 2 replies in
//! 1,000.
//! A rule on how many spins see a reply tells the second apart, not the first; what the
//! client pays per reply tells both.
//!
//! So `auto` measures it: time is cut in epochs of `EPOCH_NS`, and in every cycle of
//! `CYCLE` epochs two adjacent ones (in alternating order) run one with spinning and one
//! without; the rest of the cycle spins if an average of those pairs says spinning costs
//! less (by `MARGIN`), and does not if it says it costs more. An epoch's cost is its CPU
//! per reply over the `THROUGHPUT_WEIGHT` power of its replies per second: what the client
//! pays per reply decides, unless spinning buys four times as much throughput (in log
//! terms) as it adds per reply. Under a fixed rate the replies are the same in both modes
//! and the CPU alone decides. With one request in flight the CPU per reply of the two
//! modes differed by less than the noise between epochs (one pair's log ratio from −0.78
//! to +0.35 in 20 pairs on this VM) and the throughput did not (2.6–7.6× the replies in 12
//! of the 13 pairs where they were logged, at redis pipeline 1; the 13th fell in a stall):
//! there the throughput decides. At memcache_binary pipeline 8 with one connection spinning
//! cost 20–35% more per reply for 1.9–2.2× the replies, and the client mostly sleeps.
//! Once the difference is large, cycles are longer (`LONG_CYCLE`): the probes of the mode
//! that loses cost less.
//! Spinning is considered only with at most `AUTO_MAX_INFLIGHT` requests in flight on the
//! worker; beyond that, a round never spins and nothing is probed. A fixed spin (`spin =
//! N` µs) spins before every wait with requests in flight, whatever it costs.
use crate::config::{Spin, SpinPolicy};

/// `auto`'s spin: long enough for a reply when client and server take turns one request
/// at a time (on the machine it was measured on, a reply came 20–30 µs after its request
/// at redis pipeline 1 with one connection: 20 µs caught 42–54% of them, 50 µs 98–99%).
/// A longer limit costs only in the probes of the mode that loses.
pub(crate) const AUTO_NS: u64 = 50_000;
/// `auto` spins only with at most this many requests in flight on the worker (spinning
/// never paid beyond: redis at pipeline 1 with 16 connections, −8% throughput).
pub(crate) const AUTO_MAX_INFLIGHT: usize = 8;
/// An epoch, and the fewest replies one must see to count (a slow server's epochs last
/// until it has answered that many).
pub(crate) const EPOCH_NS: u64 = 20_000_000;
const EPOCH_REPLIES: u64 = 32;
/// Epochs per cycle: 2 probe the modes, the rest follow the verdict. While the modes are
/// within `CLEAR` of each other (as a log ratio: 15%) the one that loses costs less than
/// that in 1 epoch of 8, and a pair comes every 160 ms (a 4 s run sees 25); once they
/// are not, in 1 of 64.
pub(crate) const CYCLE: u32 = 8;
pub(crate) const LONG_CYCLE: u32 = 64;
const CLEAR: f64 = 0.15;
/// Pairs before a difference can count as clear (one pair's log ratio ranged from −0.78
/// to +0.35 at redis pipeline 1 with one connection, where spinning tripled throughput).
const CLEAR_PAIRS: u32 = 8;
/// Weight of the newest pair in the running mean of ln(cost spinning / not) (after the
/// first four, which weigh alike), and how far from 0 that mean must be to change the
/// mode.
const NEW_PAIR: f64 = 0.25;
/// How much an epoch's replies per second weigh against its CPU per reply (as a power).
const THROUGHPUT_WEIGHT: f64 = 0.25;
const MARGIN: f64 = 0.02;

/// One worker's spin policy: the setting, and under `auto` the epochs measured so far.
#[derive(Debug)]
pub(super) struct Spinner {
    /// Fixed spin, ns (0: none); unused under `auto`.
    fixed_ns: u64,
    auto: bool,
    /// This epoch spins (auto), its index in the cycle, when it ends (0: not begun).
    spinning: bool,
    epoch: u32,
    epoch_end: u64,
    /// The thread's CPU time, the time and the replies at the start of this epoch.
    cpu0: u64,
    t0: u64,
    replies0: u64,
    /// The probe pair's costs so far: [not spinning, spinning].
    probe: [Option<f64>; 2],
    /// Running mean of ln(cost spinning / not spinning) over the pairs, and the pairs
    /// seen.
    lean: f64,
    pairs: u32,
    /// What the epochs after the probes do, and which probe goes first this cycle.
    choice: bool,
    spin_first: bool,
    /// This cycle's length in epochs.
    cycle: u32,
}

impl Spinner {
    pub(super) fn new(setting: Spin) -> Spinner {
        let (fixed_ns, auto) = match setting {
            Spin::Policy(SpinPolicy::Auto) => (0, true),
            Spin::Policy(SpinPolicy::Off) => (0, false),
            Spin::Micros(us) => ((us * 1000.0).round() as u64, false),
        };
        Spinner {
            fixed_ns,
            auto,
            spinning: true,
            epoch: 0,
            epoch_end: 0,
            cpu0: 0,
            t0: 0,
            replies0: 0,
            probe: [None, None],
            lean: 0.0,
            pairs: 0,
            choice: false,
            spin_first: true,
            cycle: CYCLE,
        }
    }

    /// How long a wait with `inflight` requests in flight (and nothing there yet) spins, ns.
    pub(super) fn limit(&self, inflight: usize) -> u64 {
        match (inflight, self.auto) {
            (0, _) => 0,
            (_, false) => self.fixed_ns,
            (n, true) if n <= AUTO_MAX_INFLIGHT && self.spinning => AUTO_NS,
            _ => 0,
        }
    }

    /// The start of a round at `now`, with `replies` received so far by the worker; `cpu`
    /// reads the thread's CPU time (ns), only when an epoch ends. Under `auto`, ends the
    /// epoch when it is due: notes what it cost and sets the next one's mode.
    pub(super) fn tick(&mut self, now: u64, replies: u64, cpu: impl FnOnce() -> u64) {
        if !self.auto || now < self.epoch_end {
            return;
        }
        let used = cpu();
        if self.epoch_end != 0 {
            let n = replies - self.replies0;
            if n < EPOCH_REPLIES {
                return; // too few replies to say what they cost: the epoch goes on
            }
            let (cpu_per_reply, replies_per_ns) =
                ((used - self.cpu0) as f64 / n as f64, n as f64 / (now - self.t0).max(1) as f64);
            self.ended(cpu_per_reply / replies_per_ns.powf(THROUGHPUT_WEIGHT));
        }
        self.epoch_end = now + EPOCH_NS;
        self.t0 = now;
        self.cpu0 = used;
        self.replies0 = replies;
    }

    /// The epoch ended at `cost` (CPU per reply over a power of the replies per second):
    /// the next one's mode.
    fn ended(&mut self, cost: f64) {
        if self.epoch < 2 {
            self.probe[self.spinning as usize] = Some(cost.max(1.0));
            if let [Some(off), Some(on)] = self.probe {
                let d = (on / off).ln();
                // The plain mean of the first pairs, then a running one.
                self.lean += (d - self.lean) * NEW_PAIR.max(1.0 / (self.pairs + 1) as f64);
                self.pairs += 1;
                if self.lean < -MARGIN {
                    self.choice = true;
                } else if self.lean > MARGIN {
                    self.choice = false;
                }
                self.probe = [None, None];
            }
        }
        self.epoch = (self.epoch + 1) % self.cycle;
        self.spinning = match self.epoch {
            0 => {
                let clear = self.pairs >= CLEAR_PAIRS && self.lean.abs() > CLEAR;
                self.cycle = if clear { LONG_CYCLE } else { CYCLE };
                self.spin_first = !self.spin_first;
                self.spin_first
            }
            1 => !self.spin_first,
            _ => self.choice,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive `s` through `epochs` epochs in which a reply costs `cost(spinning)` ns; returns
    /// how many of them spun, after the probes.
    fn run(s: &mut Spinner, epochs: u32, mut cost: impl FnMut(bool) -> f64) -> (u32, u32) {
        run_replies(s, epochs, |on| (cost(on), 1000))
    }

    /// As `run`, with an epoch's replies too: `epoch(spinning)` is (CPU ns per reply,
    /// replies).
    fn run_replies(s: &mut Spinner, epochs: u32, mut epoch: impl FnMut(bool) -> (f64, u64)) -> (u32, u32) {
        let (mut now, mut cpu, mut replies) = (1_000_000_000u64, 0u64, 0u64);
        s.tick(now, replies, || cpu);
        let (mut spun, mut following) = (0, 0);
        for _ in 0..epochs {
            let spinning = s.limit(1) > 0;
            if s.epoch >= 2 {
                following += 1;
                spun += spinning as u32;
            }
            let (cost, n) = epoch(spinning);
            replies += n;
            cpu += (n as f64 * cost) as u64;
            now += EPOCH_NS;
            s.tick(now, replies, || cpu);
        }
        (spun, following)
    }

    fn auto() -> Spinner {
        Spinner::new(Spin::Policy(SpinPolicy::Auto))
    }

    #[test]
    fn auto_spins_when_spinning_costs_less_per_reply_and_not_when_more() {
        let (spun, following) = run(&mut auto(), 10 * CYCLE, |on| if on { 9000.0 } else { 10000.0 });
        assert_eq!((spun, following), (10 * (CYCLE - 2), 10 * (CYCLE - 2)));
        let (spun, following) = run(&mut auto(), 10 * CYCLE, |on| if on { 1080.0 } else { 1000.0 });
        assert_eq!((spun, following), (0, 10 * (CYCLE - 2)));
    }

    #[test]
    fn auto_spins_when_spinning_buys_more_throughput_than_it_costs_per_reply() {
        // One request in flight: spinning costs 10% more CPU per reply and answers 2.5× as
        // many requests; then spins that buy 5% and 100% more replies for 20% and 30% more
        // CPU each (the second: memcached at pipeline 8 with one connection).
        let (spun, following) =
            run_replies(&mut auto(), 10 * CYCLE, |on| if on { (11000.0, 500) } else { (10000.0, 200) });
        assert!(following >= 10 * (CYCLE - 2) && spun == following, "{spun} of {following}");
        let (spun, following) =
            run_replies(&mut auto(), 10 * CYCLE, |on| if on { (12000.0, 210) } else { (10000.0, 200) });
        assert!(following >= 10 * (CYCLE - 2) && spun == 0, "{spun} of {following}");
        let (spun, following) =
            run_replies(&mut auto(), 10 * CYCLE, |on| if on { (13000.0, 400) } else { (10000.0, 200) });
        assert!(following >= 10 * (CYCLE - 2) && spun == 0, "{spun} of {following}");
    }

    #[test]
    fn a_clear_difference_is_probed_less_often() {
        for (on, off) in [(6000.0, 8000.0), (1400.0, 1000.0)] {
            let short = CLEAR_PAIRS * CYCLE;
            let (_, following) = run(&mut auto(), 4 * LONG_CYCLE + short, |s| if s { on } else { off });
            // short cycles until `CLEAR_PAIRS` pairs are in, then long ones
            assert_eq!(following, CLEAR_PAIRS * (CYCLE - 2) + 4 * (LONG_CYCLE - 2));
        }
    }

    #[test]
    fn each_cycle_probes_both_modes_in_alternating_order() {
        let mut s = auto();
        let mut order = vec![];
        run(&mut s, 0, |_| 1.0);
        for _ in 0..4 * CYCLE {
            if s.epoch < 2 {
                order.push(s.limit(1) > 0);
            }
            let (before, end, replies, cpu) = (s.epoch, s.epoch_end, s.replies0 + 100, s.cpu0 + 100_000);
            s.tick(end, replies, || cpu);
            assert_eq!(s.epoch, (before + 1) % CYCLE);
        }
        assert_eq!(order, [true, false, false, true, true, false, false, true]);
    }

    #[test]
    fn auto_chooses_right_through_noise_from_epoch_to_epoch() {
        // each epoch's cost off by up to ±25% (a uniform draw), the truth 15% apart
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut noise = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            0.75 + 0.5 * (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for (on, off, spins) in [(8500.0, 10000.0, true), (11500.0, 10000.0, false)] {
            let (spun, following) = run(&mut auto(), 100 * CYCLE, |s| noise() * if s { on } else { off });
            let right = if spins { spun } else { following - spun };
            assert!(right as f64 > 0.9 * following as f64, "{right} of {following}");
        }
    }

    #[test]
    fn an_epoch_lasts_until_it_has_enough_replies() {
        let mut s = auto();
        s.tick(1, 0, || 0);
        s.tick(1 + EPOCH_NS, EPOCH_REPLIES - 1, || 5);
        assert_eq!(s.epoch, 0);
        s.tick(2 + EPOCH_NS, EPOCH_REPLIES, || 7);
        assert_eq!(s.epoch, 1);
    }

    #[test]
    fn auto_spins_only_with_few_requests_in_flight_and_fixed_or_off_always_or_never() {
        let s = auto();
        assert!(s.spinning);
        assert_eq!((s.limit(0), s.limit(1), s.limit(AUTO_MAX_INFLIGHT)), (0, AUTO_NS, AUTO_NS));
        assert_eq!(s.limit(AUTO_MAX_INFLIGHT + 1), 0);
        let mut fixed = Spinner::new(Spin::Micros(7.5));
        let mut off = Spinner::new(Spin::Policy(SpinPolicy::Off));
        for s in [&mut fixed, &mut off] {
            run(s, 3 * CYCLE, |on| if on { 1.0 } else { 1e6 });
        }
        assert_eq!((fixed.limit(0), fixed.limit(1), fixed.limit(400)), (0, 7500, 7500));
        assert_eq!((off.limit(1), off.limit(400)), (0, 0));
    }
}

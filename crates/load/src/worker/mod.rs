//! One worker thread: its connections, one mio event loop, its own statistics.
//!
//! Lifecycle: connect every connection (bounded by `connect_timeout`), report ready,
//! wait for the common start time, then send and receive until the request quota or
//! the time is used up, the run is stopped, or a fault aborts it.
//!
//! Timestamps are taken per read() and per write() call, so every request carries
//! its own send time (the write that finished sending it) and reply time (the read
//! that delivered the end of its reply: when its bytes arrived, by the kernel's receive
//! timestamp, where the socket has one — `rxtime` — else when the read ran).
//!
//! Two I/O loops drive the same connection logic: `epoll` (a mio event loop, read() and
//! write() per connection) and `uring` (io_uring: every send of a round and the wait in
//! one system call, multishot receives into a provided buffer ring). Both hand the bytes
//! they receive to `receive` and report the bytes they send to `send`, so the request and
//! reply state machine exists once.
//!
//! Concerns by module: `conn` (connection states, connecting, faults), `send` (request
//! scheduling, encoding, and accounting of what was sent), `receive` (parsing replies),
//! `stats` (recording what was measured), `spin` (whether a round with nothing to do spins
//! before it sleeps), `epoll` and `uring` (the two I/O loops); this one
//! holds the worker and the parts of its loop both share.
mod conn;
mod epoll;
mod receive;
mod send;
mod spin;
mod stats;
mod uring;

use crate::clock::TimerFd;
use crate::keys::KeyNames;
use crate::plan::{Plan, Shared};
use crate::rxtime;
use crate::schedule::Schedule;
use crate::stats::{ThreadStats, KIND_TIMEOUT};
use conn::{Conn, Fault, State};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::Ordering;

pub(super) const TIMER: Token = Token(usize::MAX);
/// Longest sleep in poll: bounds how late a stop or abort is noticed.
const MAX_POLL_NS: u64 = 10_000_000;
/// How often idle connections are checked for response timeouts and the end of the run.
pub(super) const HOUSEKEEPING_NS: u64 = 50_000_000;
const READ_CHUNK: usize = 256 * 1024;

pub(crate) struct Worker<'a> {
    index: usize,
    plan: &'a Plan,
    shared: &'a Shared,
    poll: Poll,
    events: Events,
    ready: Vec<(usize, bool, bool)>,
    dirty: Vec<usize>,
    conns: Vec<Conn>,
    stats: ThreadStats,
    scratch: Vec<u8>,
    keys: KeyNames,
    timers: BinaryHeap<Reverse<(u64, usize)>>,
    timerfd: Option<TimerFd>,
    start: u64,
    mstart: u64,
    end: Option<u64>,
    active: usize,
    done_count: u64,
    cpu_at_start: Option<(u64, u64, u64)>,
    /// The io_uring backend's state; `None`: the epoll loop runs.
    uring: Option<Box<uring::UringIo>>,
    /// Every socket has the kernel stamp what it receives (`rxtime`): replies are timed
    /// by their arrival, so the io_uring loop may wait to read several at once.
    rx_stamps: bool,
    rx_clock: rxtime::Clock,
    /// Control-message buffer of the epoll loop's reads.
    control: Vec<u8>,
    /// Requests in flight on all of this worker's connections, and the connections with
    /// any (those a reply may still come on).
    inflight_total: usize,
    awaiting: usize,
    /// Whether a round with nothing to do spins before it sleeps (`spin`).
    spinner: spin::Spinner,
}

impl<'a> Worker<'a> {
    pub(crate) fn new(index: usize, plan: &'a Plan, shared: &'a Shared) -> io::Result<Worker<'a>> {
        let cfg = &plan.config;
        let first = index as u64 * cfg.clients as u64;
        let conns = (0..cfg.clients as u64).map(|i| Conn::new(plan, first + i)).collect();
        let poll = Poll::new()?;
        let uring = if plan.uring { Some(Box::new(uring::UringIo::new(cfg.clients as usize)?)) } else { None };
        let timerfd = if cfg.is_open_loop() && uring.is_none() {
            let t = TimerFd::new()?;
            poll.registry().register(&mut SourceFd(&t.raw_fd()), TIMER, Interest::READABLE)?;
            Some(t)
        } else {
            None
        };
        Ok(Worker {
            index,
            plan,
            shared,
            poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            dirty: Vec::with_capacity(1024),
            conns,
            stats: ThreadStats::new(cfg.is_open_loop(), plan.servers.len()),
            scratch: if uring.is_none() { vec![0u8; READ_CHUNK] } else { Vec::new() },
            keys: KeyNames::new(&cfg.key_prefix),
            timers: BinaryHeap::new(),
            timerfd,
            start: 0,
            mstart: 0,
            end: None,
            active: 0,
            done_count: 0,
            cpu_at_start: None,
            uring,
            rx_stamps: true,
            rx_clock: rxtime::Clock::default(),
            control: vec![0u8; rxtime::cmsg_space()],
            inflight_total: 0,
            awaiting: 0,
            spinner: spin::Spinner::new(cfg.spin),
        })
    }

    /// Run this worker's part of the run to its end and return what it measured.
    pub(crate) fn run(mut self) -> ThreadStats {
        let connected = self.connect_all();
        self.shared.worker_ready();
        if connected && self.wait_for_start() {
            if self.uring.is_some() {
                self.uring_loop();
            } else {
                self.epoll_loop();
            }
        }
        self.finish()
    }

    fn aborted(&self) -> bool {
        self.shared.abort.load(Ordering::Relaxed)
    }

    fn wait_for_start(&mut self) -> bool {
        loop {
            if self.aborted() {
                return false;
            }
            let go = self.shared.go_ns.load(Ordering::Acquire);
            if go != 0 {
                self.start = go;
                self.mstart = go + self.plan.warmup_ns;
                self.end = self.plan.test_ns.map(|t| self.mstart + t);
                return true;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }

    /// At the common start: every connection active, open-loop schedules set, first sends.
    fn begin(&mut self, now: u64) {
        self.active = self.conns.len();
        if self.plan.warmup_ns == 0 {
            self.take_cpu_start(now);
        }
        let n = self.plan.total_clients as f64;
        for i in 0..self.conns.len() {
            self.conns[i].last_activity = now;
            if let Some(gap) = self.plan.open_loop_gap_ns {
                let client = self.conns[i].client;
                let phase = client as f64 / n;
                let seed = self.plan.seed ^ 0x9E37_79B9_7F4A_7C15 ^ client.wrapping_mul(0xD1B5_4A32_D192_ED03);
                self.conns[i].schedule = Some(Schedule::new(self.start, gap, phase, self.plan.config.arrivals, seed));
            }
            self.pump(i, now);
            self.check_done(i, now);
        }
    }

    /// The start of every round of either loop, at `now`: timers due, the CPU clock at the
    /// start of the measured window, housekeeping. Returns when to wake at the latest, or
    /// `None` when the run is over for this worker.
    fn prepare_round(&mut self, now: u64, next_housekeeping: &mut u64) -> Option<u64> {
        if self.aborted() || self.active == 0 {
            return None;
        }
        self.rx_clock.refresh_at(now);
        self.spinner.tick(now, self.done_count, crate::clock::thread_cpu_clock_ns);
        self.fire_timers(now);
        if self.active == 0 {
            return None;
        }
        if self.cpu_at_start.is_none() && now >= self.mstart {
            self.take_cpu_start(now);
        }
        if now >= *next_housekeeping {
            *next_housekeeping = now + HOUSEKEEPING_NS;
            self.housekeeping(now);
            if self.active == 0 || self.aborted() {
                return None;
            }
        }
        let mut wake = (*next_housekeeping).min(now + MAX_POLL_NS);
        if let Some(e) = self.end {
            if e > now {
                wake = wake.min(e);
            }
        }
        if self.cpu_at_start.is_none() {
            wake = wake.min(self.mstart.max(now));
        }
        if let Some(&Reverse((t, _))) = self.timers.peek() {
            wake = wake.min(t.max(now));
        }
        Some(wake)
    }

    /// A spin of `ns` ended, with something come (`caught`) or not: account for it.
    fn spun(&mut self, caught: bool, ns: u64) {
        self.stats.spins += 1;
        self.stats.spins_caught += caught as u64;
        self.stats.spin_ns += ns;
    }

    /// After a round of reads, at `now`: let every connection noted in `dirty` send what it may.
    fn pump_dirty(&mut self, dirty: &mut Vec<usize>, now: u64) {
        for &i in dirty.iter() {
            self.conns[i].dirty = false;
            if self.conns[i].state == State::Running {
                self.pump(i, now);
                self.check_done(i, now);
            }
        }
        dirty.clear();
    }

    /// Connection `i` received something: note it in `dirty` (pumped once, after all reads).
    fn mark_dirty(&mut self, i: usize, dirty: &mut Vec<usize>) {
        let c = &mut self.conns[i];
        if c.state == State::Running && !c.dirty {
            c.dirty = true;
            dirty.push(i);
        }
    }

    fn fire_timers(&mut self, now: u64) {
        while let Some(&Reverse((t, i))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            if self.conns[i].timer_at != t || self.conns[i].state != State::Running {
                continue; // superseded
            }
            self.conns[i].timer_at = 0;
            self.pump(i, now);
            self.check_done(i, now);
        }
    }

    fn housekeeping(&mut self, now: u64) {
        let rt = self.plan.response_timeout_ns;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.state != State::Running {
                continue;
            }
            if !c.inflight.is_empty() && now.saturating_sub(c.last_activity) > rt {
                let msg = format!(
                    "{} stopped answering: no reply for {:.1} s (response_timeout) with {} request(s) in flight on a connection that had {} replies",
                    self.plan.server_names[c.server],
                    rt as f64 / 1e9,
                    c.inflight.len(),
                    c.replies
                );
                self.fault(i, Fault::Broken(KIND_TIMEOUT, msg));
                return;
            }
            self.check_done(i, now);
        }
    }
}

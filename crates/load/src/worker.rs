//! One worker thread: its connections, one mio event loop, its own statistics.
//!
//! Lifecycle: connect every connection (bounded by `connect_timeout`), report ready,
//! wait for the common start time, then send and receive until the request quota or
//! the time is used up, the run is stopped, or a fault aborts it.
//!
//! Timestamps are taken per read() and per write() call, so every request carries
//! its own send time (the write that finished sending it) and reply time (the read
//! that delivered the end of its reply).
use crate::clock::{now_ns, thread_cpu_ns, TimerFd};
use crate::config::Protocol;
use crate::keys::{Op, Workload};
use crate::plan::{Plan, Shared};
use crate::protocol::{self, Parsed, Reply};
use crate::schedule::Schedule;
use crate::stats::{ThreadStats, KIND_CLOSED, KIND_CONNECTION, KIND_INVALID, KIND_TIMEOUT};
use crate::value::is_value_of;
use mio::event::Event;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

const TIMER: Token = Token(usize::MAX);
/// Connects in progress per thread at once (keeps the server's accept backlog from overflowing).
const CONNECT_WINDOW: usize = 256;
/// Longest sleep in poll: bounds how late a stop or abort is noticed.
const MAX_POLL_NS: u64 = 10_000_000;
/// How often idle connections are checked for response timeouts and the end of the run.
const HOUSEKEEPING_NS: u64 = 50_000_000;
const READ_CHUNK: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    NotStarted,
    Connecting(u64),
    Running,
    /// Finished its share of the work.
    Done,
    /// Failed; its socket is closed.
    Dead,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    op: Op,
    opaque: u32,
    req_len: u32,
    key: u64,
    /// Latency origin: intended send time (open loop) or actual send time (closed loop).
    intended: u64,
    /// Time of the write() that sent the request's last byte; 0 while unsent.
    sent: u64,
    /// Offset just past this request in the connection's output stream.
    wend: u64,
    measured: bool,
}

struct Conn {
    stream: Option<TcpStream>,
    server: usize,
    client: u64,
    state: State,
    wbuf: Vec<u8>,
    wpos: usize,
    encoded: u64,
    written: u64,
    /// Bytes of a reply not yet complete.
    rbuf: Vec<u8>,
    inflight: VecDeque<Pending>,
    /// Index in `inflight` of the first request not yet fully written.
    first_unsent: usize,
    workload: Workload,
    /// Measured requests left to send; `None`: time-limited.
    quota: Option<u64>,
    schedule: Option<Schedule>,
    /// Time the timer heap holds for this connection (0: none).
    timer_at: u64,
    /// Last reply, or when the first request of a burst went out: the response-timeout clock.
    last_activity: u64,
    seq: u32,
    replies: u64,
    /// Queued in the worker's `dirty` list (to be pumped after this round of reads).
    dirty: bool,
}

enum Fault {
    Connect(String),
    /// A connection that worked failed; its requests in flight are lost, counted under the
    /// kind (`stats::KIND_*`).
    Broken(&'static str, String),
}

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
    keybuf: Vec<u8>,
    timers: BinaryHeap<Reverse<(u64, usize)>>,
    timerfd: Option<TimerFd>,
    start: u64,
    mstart: u64,
    end: Option<u64>,
    active: usize,
    done_count: u64,
    cpu_at_start: Option<(u64, u64, u64)>,
}

impl<'a> Worker<'a> {
    pub(crate) fn new(index: usize, plan: &'a Plan, shared: &'a Shared) -> io::Result<Worker<'a>> {
        let cfg = &plan.config;
        let first = index as u64 * cfg.clients as u64;
        let conns = (0..cfg.clients as u64)
            .map(|i| {
                let client = first + i;
                let workload = Workload::new(cfg, plan.seed, client);
                let quota = workload.quota(cfg);
                Conn {
                    stream: None,
                    server: (client % plan.servers.len() as u64) as usize,
                    client,
                    state: State::NotStarted,
                    wbuf: Vec::new(),
                    wpos: 0,
                    encoded: 0,
                    written: 0,
                    rbuf: Vec::new(),
                    inflight: VecDeque::with_capacity(cfg.pipeline.min(64) as usize),
                    first_unsent: 0,
                    workload,
                    quota,
                    schedule: None,
                    timer_at: 0,
                    last_activity: 0,
                    seq: 0,
                    replies: 0,
                    dirty: false,
                }
            })
            .collect();
        let poll = Poll::new()?;
        let timerfd = if cfg.is_open_loop() {
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
            scratch: vec![0u8; READ_CHUNK],
            keybuf: Vec::with_capacity(cfg.key_prefix.len() + 20),
            timers: BinaryHeap::new(),
            timerfd,
            start: 0,
            mstart: 0,
            end: None,
            active: 0,
            done_count: 0,
            cpu_at_start: None,
        })
    }

    /// Run this worker's part of the run to its end and return what it measured.
    pub(crate) fn run(mut self) -> ThreadStats {
        let connected = self.connect_all();
        self.shared.worker_ready();
        if connected && self.wait_for_start() {
            self.main_loop();
        }
        self.finish()
    }

    fn aborted(&self) -> bool {
        self.shared.abort.load(Ordering::Relaxed)
    }

    fn publish(&self) {
        let p = &self.shared.progress[self.index];
        p.done.store(self.done_count, Ordering::Relaxed);
        p.errors.store(self.stats.error_kinds.total(), Ordering::Relaxed);
    }

    // ----- connecting -------------------------------------------------------------

    fn start_connect(&mut self, i: usize) -> Result<(), Fault> {
        let plan = self.plan;
        let c = &mut self.conns[i];
        let dest = plan.servers[c.server];
        let source = plan.source_for(c.client);
        let mut stream = crate::net::start_connect(&dest, source).map_err(|e| {
            Fault::Connect(format!(
                "cannot connect to {}{}: {e}",
                plan.server_names[c.server],
                source.map(|s| format!(" from {s}")).unwrap_or_default()
            ))
        })?;
        self.poll
            .registry()
            .register(&mut stream, Token(i), Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| Fault::Connect(format!("cannot register a socket: {e}")))?;
        c.stream = Some(stream);
        c.state = State::Connecting(now_ns());
        Ok(())
    }

    /// Is connection `i`'s connect finished? Err: it failed.
    fn check_connected(&mut self, i: usize) -> Result<bool, Fault> {
        let name = &self.plan.server_names[self.conns[i].server];
        let s = self.conns[i].stream.as_ref().expect("socket");
        if let Ok(Some(e)) | Err(e) = s.take_error() {
            return Err(Fault::Connect(format!("cannot connect to {name}: {e}")));
        }
        match s.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(Fault::Connect(format!("cannot connect to {name}: {e}"))),
        }
    }

    fn connect_all(&mut self) -> bool {
        let n = self.conns.len();
        let timeout = self.plan.connect_timeout_ns;
        let (mut next, mut connecting, mut connected) = (0usize, 0usize, 0usize);
        let mut last_check = now_ns();
        while connected < n {
            while connecting < CONNECT_WINDOW && next < n {
                if let Err(f) = self.start_connect(next) {
                    self.fault(next, f);
                    return false;
                }
                next += 1;
                connecting += 1;
            }
            if self.aborted() {
                return false;
            }
            if let Err(e) = self.poll.poll(&mut self.events, Some(std::time::Duration::from_millis(10))) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.shared.set_fault(format!("event loop failed: {e}"));
                    return false;
                }
            }
            let ready: Vec<usize> = self.events.iter().map(|e| e.token().0).collect();
            for i in ready {
                if i >= n || !matches!(self.conns[i].state, State::Connecting(_)) {
                    continue;
                }
                match self.check_connected(i) {
                    Ok(true) => {
                        self.conns[i].state = State::Running;
                        self.stats.connections += 1;
                        self.stats.per_server[self.conns[i].server].connections += 1;
                        connecting -= 1;
                        connected += 1;
                    }
                    Ok(false) => {}
                    Err(f) => {
                        self.fault(i, f);
                        return false;
                    }
                }
            }
            self.shared.progress[self.index].connected.store(connected as u64, Ordering::Relaxed);
            let now = now_ns();
            if now - last_check > 100_000_000 {
                last_check = now;
                for i in 0..next {
                    if let State::Connecting(t) = self.conns[i].state {
                        if now - t > timeout {
                            let msg = format!(
                                "cannot connect to {}: no answer within {:.1} s (connect_timeout)",
                                self.plan.server_names[self.conns[i].server],
                                timeout as f64 / 1e9
                            );
                            self.fault(i, Fault::Connect(msg));
                            return false;
                        }
                    }
                }
            }
        }
        true
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

    // ----- main loop --------------------------------------------------------------

    fn main_loop(&mut self) {
        let now = now_ns();
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
        let mut next_housekeeping = now + HOUSEKEEPING_NS;
        loop {
            if self.aborted() || self.active == 0 {
                break;
            }
            let now = now_ns();
            self.fire_timers(now);
            if self.active == 0 {
                break;
            }
            if self.cpu_at_start.is_none() && now >= self.mstart {
                self.take_cpu_start(now);
            }
            if now >= next_housekeeping {
                next_housekeeping = now + HOUSEKEEPING_NS;
                self.housekeeping(now);
                if self.active == 0 || self.aborted() {
                    break;
                }
            }
            let mut wake = next_housekeeping.min(now + MAX_POLL_NS);
            if let Some(e) = self.end {
                if e > now {
                    wake = wake.min(e);
                }
            }
            if self.cpu_at_start.is_none() {
                wake = wake.min(self.mstart.max(now));
            }
            if let Some(&Reverse((t, _))) = self.timers.peek() {
                if let Some(tfd) = self.timerfd.as_mut() {
                    if t < wake {
                        let _ = tfd.arm(t);
                    }
                }
            }
            // mio rounds the timeout up to whole milliseconds; the timerfd gives open-loop precision
            let timeout = std::time::Duration::from_nanos(wake.saturating_sub(now));
            self.stats.polls += 1;
            if let Err(e) = self.poll.poll(&mut self.events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.shared.set_fault(format!("event loop failed: {e}"));
                    break;
                }
            }
            // Read everything that is ready, then look once more (without waiting) for replies
            // that arrived meanwhile, and only then send: a connection's replies often come in
            // several segments, and refilling after each would split its pipeline into small
            // batches (more work for the server per request). Reads stay immediate, so reply
            // timestamps are unchanged.
            let mut dirty = std::mem::take(&mut self.dirty);
            self.drain_events(&mut dirty);
            if !dirty.is_empty() {
                self.stats.polls += 1;
                if self.poll.poll(&mut self.events, Some(std::time::Duration::ZERO)).is_ok() {
                    self.drain_events(&mut dirty);
                }
            }
            let now = now_ns();
            for &i in &dirty {
                self.conns[i].dirty = false;
                if self.conns[i].state == State::Running {
                    self.pump(i, now);
                    self.check_done(i, now);
                }
            }
            dirty.clear();
            self.dirty = dirty;
            self.publish();
        }
        self.publish();
    }

    /// Handle the events of the last poll: read what is readable; note in `dirty` the
    /// connections that may send (they are pumped once, after all reads).
    fn drain_events(&mut self, dirty: &mut Vec<usize>) {
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        ready.extend(
            self.events
                .iter()
                .map(|e: &Event| (e.token().0, e.is_readable() || e.is_read_closed() || e.is_error(), e.is_writable())),
        );
        for &(i, readable, writable) in &ready {
            if i == TIMER.0 {
                if let Some(t) = self.timerfd.as_mut() {
                    t.clear();
                }
                continue;
            }
            if !matches!(self.conns[i].state, State::Running | State::Done) {
                continue;
            }
            if readable {
                if let Err(f) = self.read_ready(i) {
                    self.fault(i, f);
                    continue;
                }
            }
            let c = &mut self.conns[i];
            if c.state == State::Running && (readable || writable) && !c.dirty {
                c.dirty = true;
                dirty.push(i);
            }
        }
        self.ready = ready;
    }

    fn take_cpu_start(&mut self, now: u64) {
        let (u, s) = thread_cpu_ns();
        self.cpu_at_start = Some((u, s, now));
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

    /// May this connection start another request whose latency origin is `t`?
    fn may_send(&self, i: usize, t: u64) -> bool {
        let c = &self.conns[i];
        if let Some(e) = self.end {
            if t >= e {
                return false;
            }
        }
        match c.quota {
            Some(q) => q > 0 || t < self.mstart,
            None => true,
        }
    }

    fn check_done(&mut self, i: usize, now: u64) {
        let c = &self.conns[i];
        if c.state != State::Running || !c.inflight.is_empty() {
            return;
        }
        let finished = match self.end {
            Some(e) => now >= e || c.schedule.as_ref().is_some_and(|s| s.next() >= e),
            None => c.quota == Some(0) && now >= self.mstart,
        };
        if finished {
            self.conns[i].state = State::Done;
            self.active -= 1;
        }
    }

    /// Queue as many requests as the pipeline and the schedule allow, then write.
    fn pump(&mut self, i: usize, now: u64) {
        let pipeline = self.plan.config.pipeline as usize;
        if self.conns[i].schedule.is_some() {
            while self.conns[i].inflight.len() < pipeline {
                let due = self.conns[i].schedule.as_ref().unwrap().next();
                if due > now || !self.may_send(i, due) {
                    break;
                }
                self.queue(i, now, due);
                self.conns[i].schedule.as_mut().unwrap().advance();
            }
            let c = &mut self.conns[i];
            let due = c.schedule.as_ref().unwrap().next();
            if c.inflight.len() < pipeline && c.timer_at != due && due > now && !matches!(self.end, Some(e) if due >= e)
            {
                let more = match c.quota {
                    Some(q) => q > 0 || due < self.mstart,
                    None => true,
                };
                if more {
                    c.timer_at = due;
                    self.timers.push(Reverse((due, i)));
                }
            }
        } else {
            while self.conns[i].inflight.len() < pipeline && self.may_send(i, now) {
                self.queue(i, now, now);
            }
        }
        if let Err(f) = self.flush(i) {
            self.fault(i, f);
        }
    }

    fn queue(&mut self, i: usize, now: u64, intended: u64) {
        let plan = self.plan;
        let c = &mut self.conns[i];
        let (op, key, size) = c.workload.next_request();
        self.keybuf.clear();
        self.keybuf.extend_from_slice(plan.config.key_prefix.as_bytes());
        self.keybuf.extend_from_slice(itoa::Buffer::new().format(key).as_bytes());
        let opaque = c.seq;
        c.seq = c.seq.wrapping_add(1);
        let len = protocol::encode(plan.config.protocol, &mut c.wbuf, op, &self.keybuf, size as usize, opaque);
        c.encoded += len as u64;
        let measured = intended >= self.mstart && !matches!(self.end, Some(e) if intended >= e);
        if measured {
            if let Some(q) = c.quota.as_mut() {
                *q -= 1;
            }
        }
        if c.inflight.is_empty() {
            c.last_activity = now;
        }
        c.inflight.push_back(Pending {
            op,
            opaque,
            req_len: len as u32,
            key,
            intended,
            sent: 0,
            wend: c.encoded,
            measured,
        });
    }

    fn flush(&mut self, i: usize) -> Result<(), Fault> {
        let open_loop = self.plan.open_loop_gap_ns.is_some();
        let late_ns = self.plan.late_ns;
        let c = &mut self.conns[i];
        while c.wpos < c.wbuf.len() {
            let t = now_ns();
            self.stats.writes += 1;
            let r = c.stream.as_mut().expect("socket").write(&c.wbuf[c.wpos..]);
            match r {
                Ok(n) => {
                    c.wpos += n;
                    c.written += n as u64;
                    while c.first_unsent < c.inflight.len() && c.inflight[c.first_unsent].wend <= c.written {
                        let p = &mut c.inflight[c.first_unsent];
                        p.sent = t;
                        if !open_loop {
                            p.intended = t;
                        } else if p.measured && t.saturating_sub(p.intended) > late_ns {
                            self.stats.late += 1;
                        }
                        c.first_unsent += 1;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Fault::Broken(
                        KIND_CONNECTION,
                        format!("{}: sending failed: {e}", self.plan.server_names[c.server]),
                    ))
                }
            }
        }
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
        }
        Ok(())
    }

    fn read_ready(&mut self, i: usize) -> Result<(), Fault> {
        loop {
            self.stats.reads += 1;
            let r = self.conns[i].stream.as_mut().expect("socket").read(&mut self.scratch);
            match r {
                Ok(0) => {
                    let c = &self.conns[i];
                    if c.state == State::Done && c.inflight.is_empty() {
                        return Ok(()); // closed after our work was done: harmless
                    }
                    return Err(Fault::Broken(
                        KIND_CLOSED,
                        format!(
                            "{} closed the connection ({} replies received on it, {} request(s) in flight)",
                            self.plan.server_names[c.server],
                            c.replies,
                            c.inflight.len()
                        ),
                    ));
                }
                Ok(n) => {
                    let now = now_ns();
                    self.process(i, n, now)?;
                    if n < self.scratch.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let c = &self.conns[i];
                    return Err(Fault::Broken(
                        KIND_CONNECTION,
                        format!(
                            "{}: connection failed: {e} ({} replies received on it, {} request(s) in flight)",
                            self.plan.server_names[c.server],
                            c.replies,
                            c.inflight.len()
                        ),
                    ));
                }
            }
        }
    }

    /// Consume `n` new bytes in `scratch` (after any buffered partial reply).
    fn process(&mut self, i: usize, n: usize, now: u64) -> Result<(), Fault> {
        let mut held = std::mem::take(&mut self.conns[i].rbuf);
        let from_held = !held.is_empty();
        if from_held {
            held.extend_from_slice(&self.scratch[..n]);
        }
        let scratch = std::mem::take(&mut self.scratch);
        let data: &[u8] = if from_held { &held } else { &scratch[..n] };
        let result = self.consume(i, data, now);
        let pos = match result {
            Ok(p) => p,
            Err(f) => {
                self.scratch = scratch;
                return Err(f);
            }
        };
        if from_held {
            held.drain(..pos);
        } else {
            held.extend_from_slice(&scratch[pos..n]);
        }
        self.scratch = scratch;
        self.conns[i].rbuf = held;
        Ok(())
    }

    /// Parse and record complete replies in `data`; returns the bytes consumed.
    fn consume(&mut self, i: usize, data: &[u8], now: u64) -> Result<usize, Fault> {
        let proto = self.plan.config.protocol;
        let mut pos = 0;
        while pos < data.len() {
            let Some(&p) = self.conns[i].inflight.front() else {
                return Err(
                    self.garbage(i, format!("bytes with no request outstanding: {}", protocol::excerpt(&data[pos..])))
                );
            };
            if p.sent == 0 {
                return Err(self
                    .garbage(i, format!("a reply before the request was sent: {}", protocol::excerpt(&data[pos..]))));
            }
            match protocol::parse(proto, &data[pos..], p.op, p.opaque) {
                Parsed::Incomplete => break,
                Parsed::Invalid(msg) => return Err(self.garbage(i, msg)),
                Parsed::Complete { len, reply } => {
                    self.record(i, &p, &reply, &data[pos..pos + len], now, proto);
                    let c = &mut self.conns[i];
                    c.inflight.pop_front();
                    c.first_unsent -= 1;
                    pos += len;
                }
            }
        }
        Ok(pos)
    }

    fn garbage(&self, i: usize, msg: String) -> Fault {
        let c = &self.conns[i];
        Fault::Broken(
            KIND_INVALID,
            format!(
                "{} sent an invalid {} reply after {} good ones: {msg}",
                self.plan.server_names[c.server],
                self.plan.config.protocol.name(),
                c.replies
            ),
        )
    }

    fn record(&mut self, i: usize, p: &Pending, reply: &Reply, bytes: &[u8], now: u64, proto: Protocol) {
        let c = &mut self.conns[i];
        c.replies += 1;
        c.last_activity = now;
        self.done_count += 1;
        if let Reply::Error { start, end, status } = *reply {
            let (kind, message) = protocol::error_kind(proto, &bytes[start..end], status);
            self.stats.error_kinds.add(&kind, message, p.measured, 1);
        }
        if !p.measured {
            self.stats.warmup_requests += 1;
            return;
        }
        let server = c.server;
        let s = match p.op {
            Op::Set => &mut self.stats.sets,
            Op::Get => &mut self.stats.gets,
        };
        s.bytes_tx += p.req_len as u64;
        s.bytes_rx += bytes.len() as u64;
        if let Reply::Error { start, end, .. } = *reply {
            s.error_replies += 1;
            self.stats.per_server[server].errors += 1;
            if self.stats.error_reply_sample.is_none() {
                let text = String::from_utf8_lossy(&bytes[start..end]).trim().to_string();
                self.stats.error_reply_sample =
                    Some(format!("{} {}", if p.op == Op::Set { "SET" } else { "GET" }, text));
            }
            // a reply all the same: the measured window (and so every rate) runs to it
            self.stats.last_reply_ns = now;
            return;
        }
        s.requests += 1;
        match *reply {
            Reply::Hit { start, end } => {
                s.hits += 1;
                if self.plan.config.verify {
                    self.keybuf.clear();
                    self.keybuf.extend_from_slice(self.plan.config.key_prefix.as_bytes());
                    self.keybuf.extend_from_slice(itoa::Buffer::new().format(p.key).as_bytes());
                    // content only: a read phase need not know the sizes a populate phase wrote
                    if !is_value_of(&self.keybuf, &bytes[start..end]) {
                        self.stats.verify_failures += 1;
                    }
                }
            }
            Reply::Miss => s.misses += 1,
            _ => {}
        }
        let corrected = now.saturating_sub(p.intended);
        s.latency_sum_ns += corrected;
        s.hist.record(corrected);
        if let Some(h) = s.hist_uncorrected.as_mut() {
            let actual = now.saturating_sub(p.sent);
            s.latency_sum_uncorrected_ns += actual;
            h.record(actual);
        }
        self.stats.per_server[server].requests += 1;
        self.stats.last_reply_ns = now;
    }

    fn fault(&mut self, i: usize, f: Fault) {
        let c = &mut self.conns[i];
        if c.state == State::Dead {
            return;
        }
        if matches!(c.state, State::Running | State::Done) {
            self.active = self.active.saturating_sub((c.state == State::Running) as usize);
        }
        c.state = State::Dead;
        let kind = match f {
            Fault::Connect(_) => "connect failed",
            Fault::Broken(kind, _) => kind,
        };
        for p in c.inflight.drain(..) {
            self.stats.error_kinds.add(kind.as_bytes(), b"", p.measured, 1);
            if p.measured {
                match p.op {
                    Op::Set => self.stats.sets.lost += 1,
                    Op::Get => self.stats.gets.lost += 1,
                }
                self.stats.per_server[c.server].errors += 1;
            } else {
                self.stats.warmup_lost += 1;
            }
        }
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        self.stats.connection_failures += 1;
        let msg = match f {
            Fault::Connect(m) | Fault::Broken(_, m) => m,
        };
        self.shared.set_fault(msg);
    }

    fn finish(mut self) -> ThreadStats {
        let now = now_ns();
        if let Some((u0, s0, t0)) = self.cpu_at_start {
            let (u1, s1) = thread_cpu_ns();
            self.stats.cpu_user_ns = u1.saturating_sub(u0);
            self.stats.cpu_sys_ns = s1.saturating_sub(s0);
            self.stats.wall_ns = now.saturating_sub(t0);
        }
        let cut_short = self.aborted();
        for c in &self.conns {
            if matches!(c.state, State::Running | State::Done) {
                self.stats.unfinished += c.inflight.iter().filter(|p| p.measured).count() as u64;
                if let (Some(s), Some(e), false) = (c.schedule.as_ref(), self.end, cut_short) {
                    self.stats.unsent += s.remaining_before(self.mstart, e);
                }
            }
        }
        self.publish();
        self.stats
    }
}

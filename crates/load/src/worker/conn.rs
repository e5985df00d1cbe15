//! A worker's connections: their state machine (not started → connecting → running →
//! done, or dead after a fault), opening them all within `connect_timeout`, and a fault
//! ending one (its requests in flight counted as lost).
use super::Worker;
use crate::clock::now_ns;
use crate::keys::{Op, Workload};
use crate::plan::Plan;
use crate::schedule::Schedule;
use mio::net::TcpStream;
use mio::{Interest, Token};
use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

/// Connects in progress per thread at once (keeps the server's accept backlog from overflowing).
const CONNECT_WINDOW: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    NotStarted,
    Connecting(u64),
    Running,
    /// Finished its share of the work.
    Done,
    /// Failed; its socket is closed.
    Dead,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Pending {
    pub(super) op: Op,
    pub(super) opaque: u32,
    pub(super) req_len: u32,
    pub(super) key: u64,
    /// Latency origin: intended send time (open loop) or actual send time (closed loop).
    pub(super) intended: u64,
    /// Time of the write() that sent the request's last byte; 0 while unsent.
    pub(super) sent: u64,
    /// Offset just past this request in the connection's output stream.
    pub(super) wend: u64,
    pub(super) measured: bool,
}

pub(super) struct Conn {
    pub(super) stream: Option<TcpStream>,
    pub(super) server: usize,
    pub(super) client: u64,
    pub(super) state: State,
    pub(super) wbuf: Vec<u8>,
    pub(super) wpos: usize,
    /// io_uring: the bytes of the send in flight (`sending`); new requests go to `wbuf` meanwhile.
    pub(super) sbuf: Vec<u8>,
    pub(super) sending: bool,
    pub(super) encoded: u64,
    pub(super) written: u64,
    /// Bytes of a reply not yet complete.
    pub(super) rbuf: Vec<u8>,
    pub(super) inflight: VecDeque<Pending>,
    /// Index in `inflight` of the first request not yet fully written.
    pub(super) first_unsent: usize,
    pub(super) workload: Workload,
    /// Measured requests left to send; `None`: time-limited.
    pub(super) quota: Option<u64>,
    pub(super) schedule: Option<Schedule>,
    /// Time the timer heap holds for this connection (0: none).
    pub(super) timer_at: u64,
    /// Last reply, or when the first request of a burst went out: the response-timeout clock.
    pub(super) last_activity: u64,
    pub(super) seq: u32,
    pub(super) replies: u64,
    /// Queued in the worker's `dirty` list (to be pumped after this round of reads).
    pub(super) dirty: bool,
}

pub(super) enum Fault {
    Connect(String),
    /// A connection that worked failed; its requests in flight are lost, counted under the
    /// kind (`stats::KIND_*`).
    Broken(&'static str, String),
}

impl Conn {
    /// Client `client`'s connection, not yet started, with its own workload.
    pub(super) fn new(plan: &Plan, client: u64) -> Conn {
        let cfg = &plan.config;
        let workload = Workload::new(cfg, plan.seed, client);
        let quota = workload.quota(cfg);
        Conn {
            stream: None,
            server: (client % plan.servers.len() as u64) as usize,
            client,
            state: State::NotStarted,
            wbuf: Vec::new(),
            wpos: 0,
            sbuf: Vec::new(),
            sending: false,
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
    }
}

impl Worker<'_> {
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
        self.rx_stamps &= crate::rxtime::enable(stream.as_raw_fd());
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

    pub(super) fn connect_all(&mut self) -> bool {
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

    pub(super) fn fault(&mut self, i: usize, f: Fault) {
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
        self.inflight_total -= c.inflight.len();
        self.awaiting -= !c.inflight.is_empty() as usize;
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
            if self.uring.is_some() {
                // completes the receive (and any send) the ring holds on it; closing would not
                use std::os::fd::AsRawFd;
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
                self.uring_unregister(i);
            }
            let _ = self.poll.registry().deregister(&mut s);
        }
        self.stats.connection_failures += 1;
        let msg = match f {
            Fault::Connect(m) | Fault::Broken(_, m) => m,
        };
        self.shared.set_fault(msg);
    }
}

//! Counters one worker thread keeps, merged once at the end of a run.
use crate::hist::LatencyHist;

/// One command (SET or GET), measured requests only.
#[derive(Debug, Clone, Default)]
pub struct OpStats {
    /// Requests answered without an error reply (hits and misses included).
    pub requests: u64,
    pub hits: u64,
    pub misses: u64,
    /// Error replies (SERVER_ERROR, -ERR, binary status ≠ 0/1).
    pub error_replies: u64,
    /// Requests lost without a reply (in flight on a connection that failed).
    pub lost: u64,
    pub bytes_tx: u64,
    pub bytes_rx: u64,
    /// Σ latency of `requests`, ns (from the intended send time in open loop).
    pub latency_sum_ns: u64,
    /// Σ latency from the actual send, ns (open loop only).
    pub latency_sum_uncorrected_ns: u64,
    pub hist: LatencyHist,
    /// Open loop only: latency from the actual send.
    pub hist_uncorrected: Option<LatencyHist>,
}

impl OpStats {
    pub fn new(open_loop: bool) -> OpStats {
        OpStats { hist_uncorrected: open_loop.then(LatencyHist::new), ..Default::default() }
    }

    pub fn merge(&mut self, o: &OpStats) {
        self.requests += o.requests;
        self.hits += o.hits;
        self.misses += o.misses;
        self.error_replies += o.error_replies;
        self.lost += o.lost;
        self.bytes_tx += o.bytes_tx;
        self.bytes_rx += o.bytes_rx;
        self.latency_sum_ns += o.latency_sum_ns;
        self.latency_sum_uncorrected_ns += o.latency_sum_uncorrected_ns;
        self.hist.add(&o.hist);
        if let (Some(a), Some(b)) = (self.hist_uncorrected.as_mut(), o.hist_uncorrected.as_ref()) {
            a.add(b);
        }
    }

    /// Requests that did not complete: error replies plus lost ones.
    pub fn errors(&self) -> u64 {
        self.error_replies + self.lost
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ServerStats {
    pub connections: u64,
    pub requests: u64,
    pub errors: u64,
}

/// Everything one worker thread measured.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    pub sets: OpStats,
    pub gets: OpStats,
    /// Open loop: measured requests sent later than `late_threshold` after their intended time.
    pub late: u64,
    /// Open loop: requests due inside the measured window but never sent.
    pub unsent: u64,
    /// Measured requests still awaiting a reply when the run stopped.
    pub unfinished: u64,
    pub verify_failures: u64,
    pub warmup_requests: u64,
    pub connections: u64,
    pub connection_failures: u64,
    /// Time of the last measured reply (CLOCK_MONOTONIC ns), 0 when none.
    pub last_reply_ns: u64,
    /// Measured part of the thread's life: user and system CPU, and wall time, in ns.
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    pub wall_ns: u64,
    pub per_server: Vec<ServerStats>,
    /// First error reply seen, for the report.
    pub error_reply_sample: Option<String>,
    /// Client work, whole run: read() and write() calls on sockets, and event-loop wakeups.
    pub reads: u64,
    pub writes: u64,
    pub polls: u64,
}

impl ThreadStats {
    pub fn new(open_loop: bool, servers: usize) -> ThreadStats {
        ThreadStats {
            sets: OpStats::new(open_loop),
            gets: OpStats::new(open_loop),
            late: 0,
            unsent: 0,
            unfinished: 0,
            verify_failures: 0,
            warmup_requests: 0,
            connections: 0,
            connection_failures: 0,
            last_reply_ns: 0,
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            wall_ns: 0,
            per_server: vec![ServerStats::default(); servers],
            error_reply_sample: None,
            reads: 0,
            writes: 0,
            polls: 0,
        }
    }
}

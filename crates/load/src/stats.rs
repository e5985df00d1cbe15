//! Counters one worker thread keeps, merged once at the end of a run.
use crate::hist::LatencyHist;
use crate::keys::Op;

/// Longest error kind kept (bytes of the server's text); longer ones are cut.
pub const MAX_KIND_BYTES: usize = 120;
/// Longest example message kept per kind (bytes).
pub const MAX_EXAMPLE_BYTES: usize = 200;
/// Distinct kinds kept per run; failures of further kinds are counted under `OTHER_KIND`.
pub const MAX_KINDS: usize = 32;
pub const OTHER_KIND: &str = "other error kinds";

/// Requests lost because their connection was closed by the server.
pub const KIND_CLOSED: &str = "connection closed";
/// Requests lost because reading or writing their connection failed (reset, …).
pub const KIND_CONNECTION: &str = "connection error";
/// Requests lost because the server did not answer within `response_timeout`.
pub const KIND_TIMEOUT: &str = "response timeout";
/// Requests lost because the server's reply stream could not be parsed.
pub const KIND_INVALID: &str = "invalid reply";

/// Failed requests of one kind: an error reply (the kind names it, see
/// `protocol::error_kind`) or requests lost with their connection (`KIND_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorKindCount {
    /// The key the kind is matched by: its bytes as the server sent them (cut to `MAX_KIND_BYTES`).
    key: Vec<u8>,
    pub kind: String,
    /// Failed requests of this kind, warmup included.
    pub count: u64,
    /// Of `count`, those sent during the warmup.
    pub warmup: u64,
    /// The first message of this kind, when it says more than the kind.
    pub example: Option<String>,
}

/// Failed requests by kind. Few kinds are expected, so a short vector searched linearly;
/// a kind's text is allocated only the first time it is seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorTally {
    kinds: Vec<ErrorKindCount>,
}

fn cut(b: &[u8], max: usize) -> &[u8] {
    &b[..b.len().min(max)]
}

fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if !first.is_ascii_whitespace() {
            break;
        }
        b = rest;
    }
    while let [rest @ .., last] = b {
        if !last.is_ascii_whitespace() {
            break;
        }
        b = rest;
    }
    b
}

impl ErrorTally {
    /// Count `n` failed requests of `kind`; `message` (may be empty) is kept as the kind's example.
    pub fn add(&mut self, kind: &[u8], message: &[u8], measured: bool, n: u64) {
        if n == 0 {
            return;
        }
        let k = self.slot(kind, message);
        k.count += n;
        if !measured {
            k.warmup += n;
        }
    }

    pub fn merge(&mut self, o: &ErrorTally) {
        for k in &o.kinds {
            let s = self.slot(&k.key, k.example.as_deref().unwrap_or("").as_bytes());
            s.count += k.count;
            s.warmup += k.warmup;
        }
    }

    /// The counter of `kind` (created when new; `OTHER_KIND`'s once `MAX_KINDS` exist).
    fn slot(&mut self, kind: &[u8], message: &[u8]) -> &mut ErrorKindCount {
        let mut key = cut(kind, MAX_KIND_BYTES);
        if !self.kinds.iter().any(|k| k.key == key) && self.kinds.len() >= MAX_KINDS {
            key = OTHER_KIND.as_bytes();
        }
        let pos = match self.kinds.iter().position(|k| k.key == key) {
            Some(p) => p,
            None => {
                let message = cut(trim(message), MAX_EXAMPLE_BYTES);
                let example = (!message.is_empty() && message != key && key != OTHER_KIND.as_bytes())
                    .then(|| String::from_utf8_lossy(message).into_owned());
                let kind = String::from_utf8_lossy(key).into_owned();
                self.kinds.push(ErrorKindCount { key: key.to_vec(), kind, count: 0, warmup: 0, example });
                self.kinds.len() - 1
            }
        };
        &mut self.kinds[pos]
    }

    /// Failed requests, warmup included.
    pub fn total(&self) -> u64 {
        self.kinds.iter().map(|k| k.count).sum()
    }

    /// Failed requests sent during the warmup.
    pub fn warmup(&self) -> u64 {
        self.kinds.iter().map(|k| k.warmup).sum()
    }

    /// The kinds, most frequent first (ties by name).
    pub fn sorted(&self) -> Vec<ErrorKindCount> {
        let mut v = self.kinds.clone();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.kind.cmp(&b.kind)));
        v
    }
}

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
    /// Every failed request (error reply or lost), warmup included, by kind.
    pub error_kinds: ErrorTally,
    /// Warmup requests lost with their connection.
    pub warmup_lost: u64,
    /// Client work, whole run: read() and write() calls on sockets, and event-loop wakeups.
    pub reads: u64,
    pub writes: u64,
    pub polls: u64,
    /// Spins before sleeping (`worker::spin`), those that saw something come, their time.
    pub spins: u64,
    pub spins_caught: u64,
    pub spin_ns: u64,
}

impl ThreadStats {
    /// The counters of command `op`.
    #[inline]
    pub fn of(&mut self, op: Op) -> &mut OpStats {
        match op {
            Op::Set => &mut self.sets,
            Op::Get => &mut self.gets,
        }
    }

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
            error_kinds: ErrorTally::default(),
            warmup_lost: 0,
            reads: 0,
            writes: 0,
            polls: 0,
            spins: 0,
            spins_caught: 0,
            spin_ns: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_counts_by_kind_and_merges() {
        let mut a = ErrorTally::default();
        a.add(b"SERVER_ERROR object too large for cache", b"", true, 4);
        a.add(b"OOM", b"OOM command not allowed when used memory > 'maxmemory'.", false, 2);
        a.add(b"OOM", b"another text", true, 1);
        a.add(b"x", b"", true, 0); // nothing failed: no kind
        assert_eq!((a.total(), a.warmup()), (7, 2));
        let s = a.sorted();
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].kind.as_str(), s[0].count, s[0].example.as_deref()),
            ("SERVER_ERROR object too large for cache", 4, None)
        );
        assert_eq!((s[1].kind.as_str(), s[1].count, s[1].warmup), ("OOM", 3, 2));
        assert_eq!(s[1].example.as_deref(), Some("OOM command not allowed when used memory > 'maxmemory'."));
        let mut b = ErrorTally::default();
        b.add(KIND_CLOSED.as_bytes(), b"", true, 3);
        b.add(b"OOM", b"", false, 5);
        b.merge(&a);
        assert_eq!((b.total(), b.warmup()), (15, 7));
        let s = b.sorted();
        assert_eq!(
            s.iter().map(|k| (k.kind.as_str(), k.count, k.warmup)).collect::<Vec<_>>(),
            vec![("OOM", 8, 7), ("SERVER_ERROR object too large for cache", 4, 0), (KIND_CLOSED, 3, 0)]
        );
    }

    #[test]
    fn tally_bounds_kinds_and_their_text() {
        let mut t = ErrorTally::default();
        for i in 0..(MAX_KINDS + 10) {
            t.add(format!("ERR{i}").as_bytes(), b"", i % 2 == 0, 1);
        }
        let s = t.sorted();
        assert_eq!(s.len(), MAX_KINDS + 1);
        assert_eq!(s[0].kind, OTHER_KIND);
        assert_eq!((s[0].count, s[0].warmup), (10, 5));
        assert_eq!(t.total(), (MAX_KINDS + 10) as u64);
        let mut t = ErrorTally::default();
        t.add(&[b'E'; 1000], &[b'm'; 1000], true, 1);
        t.add(&[b'E'; 500], b"", true, 1); // the same kind once cut
        let s = t.sorted();
        assert_eq!((s.len(), s[0].kind.len(), s[0].count), (1, MAX_KIND_BYTES, 2));
        assert_eq!(s[0].example.as_ref().map(String::len), Some(MAX_EXAMPLE_BYTES));
        // bytes that are not UTF-8 are kept readable
        let mut t = ErrorTally::default();
        t.add(b"SERVER_ERROR \xff\x1b", b"", true, 1);
        t.add(b"SERVER_ERROR \xff\x1b[2J", b"", true, 1);
        assert_eq!(t.sorted().len(), 2);
    }
}

//! A validated run, resolved once and shared read-only by the workers, plus the
//! few atomics through which workers and the coordinating thread talk.
use crate::config::Config;
use crate::net;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

pub(crate) struct Plan {
    pub config: Config,
    /// Seed in force (drawn from the clock when `randomize`).
    pub seed: u64,
    pub servers: Vec<SocketAddr>,
    pub server_names: Vec<String>,
    pub total_clients: u64,
    pub conns_per_server: Vec<u64>,
    /// Open loop: mean gap between one connection's sends, ns.
    pub open_loop_gap_ns: Option<f64>,
    pub warmup_ns: u64,
    pub test_ns: Option<u64>,
    pub connect_timeout_ns: u64,
    pub response_timeout_ns: u64,
    pub late_ns: u64,
    /// The workers run the io_uring backend (else epoll); decided by `engine::run`.
    pub uring: bool,
}

fn ns(secs: f64) -> u64 {
    (secs * 1e9).round() as u64
}

impl Plan {
    pub fn new(config: &Config, servers: Vec<SocketAddr>, seed: u64) -> Plan {
        let total = config.total_clients();
        let s = servers.len() as u64;
        let conns_per_server = (0..s).map(|i| total / s + u64::from(i < total % s)).collect();
        Plan {
            config: config.clone(),
            seed,
            server_names: config.servers.clone(),
            servers,
            total_clients: total,
            conns_per_server,
            open_loop_gap_ns: config.rate.map(|r| total as f64 * 1e9 / r),
            warmup_ns: ns(config.warmup),
            test_ns: config.test_time.map(ns),
            connect_timeout_ns: ns(config.connect_timeout),
            response_timeout_ns: ns(config.response_timeout),
            late_ns: ns(config.late_threshold),
            uring: false,
        }
    }

    /// Local address for client `client`'s connection (None: the kernel picks).
    pub fn source_for(&self, client: u64) -> Option<IpAddr> {
        let srcs = &self.config.source_addresses;
        if !srcs.is_empty() {
            return Some(srcs[(client % srcs.len() as u64) as usize]);
        }
        let s = self.servers.len() as u64;
        let server = (client % s) as usize;
        net::auto_source(&self.servers[server], client / s, self.conns_per_server[server])
    }

    /// Measured requests the whole run will send, when that is known in advance.
    pub fn planned_requests(&self) -> Option<u64> {
        use crate::keys::Workload;
        self.config.effective_requests()?;
        Some(
            (0..self.total_clients)
                .map(|c| Workload::new(&self.config, self.seed, c).quota(&self.config).unwrap_or(0))
                .sum(),
        )
    }
}

#[derive(Default)]
pub(crate) struct ThreadProgress {
    pub done: AtomicU64,
    pub errors: AtomicU64,
    pub connected: AtomicU64,
}

pub(crate) struct Shared {
    /// Every worker stops as soon as it sees this.
    pub abort: AtomicBool,
    /// The stop came from the caller, not from a fault.
    pub stopped: AtomicBool,
    pub fault: Mutex<Option<String>>,
    pub ready: AtomicUsize,
    /// Workers that have ended.
    pub finished: AtomicUsize,
    /// Common start time (CLOCK_MONOTONIC ns); 0 until every worker is connected.
    pub go_ns: AtomicU64,
    pub progress: Vec<ThreadProgress>,
    /// The thread running `run()`: workers wake it when they are ready and when they end.
    pub coordinator: std::thread::Thread,
}

impl Shared {
    pub fn new(threads: usize) -> Shared {
        Shared {
            abort: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            fault: Mutex::new(None),
            ready: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            go_ns: AtomicU64::new(0),
            progress: (0..threads).map(|_| ThreadProgress::default()).collect(),
            coordinator: std::thread::current(),
        }
    }

    /// Record the first fault and make every worker stop.
    pub fn set_fault(&self, msg: String) {
        let mut f = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(msg);
        }
        self.abort.store(true, Ordering::SeqCst);
        self.coordinator.unpark();
    }

    /// A worker has ended (its statistics are final).
    pub fn worker_finished(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
        self.coordinator.unpark();
    }

    /// A worker is connected and waits for the start.
    pub fn worker_ready(&self) {
        self.ready.fetch_add(1, Ordering::SeqCst);
        self.coordinator.unpark();
    }
}

//! `run`: start the workers, give them a common start, report progress to the
//! caller's observer from the calling thread, and assemble the result.
use crate::clock::now_ns;
use crate::config::{Config, ConfigError, IoBackend};
use crate::net;
use crate::plan::{Plan, Shared};
use crate::result::RunResult;
use crate::stats::ThreadStats;
use crate::worker::Worker;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::thread::ScopedJoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Connecting,
    Warmup,
    Measuring,
    /// Past the planned end: waiting for the last replies.
    Finishing,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Connecting => "connecting",
            Phase::Warmup => "warmup",
            Phase::Measuring => "measuring",
            Phase::Finishing => "finishing",
        }
    }
}

/// A snapshot handed to the observer every `RunOptions::tick`.
#[derive(Debug, Clone)]
pub struct Progress {
    pub phase: Phase,
    /// Seconds since the start (0 while connecting).
    pub elapsed_s: f64,
    /// warmup + test_time, when the run is time-limited.
    pub planned_s: Option<f64>,
    /// Replies received so far, warmup included.
    pub requests_done: u64,
    /// Measured requests the run will send, when known.
    pub requests_planned: Option<u64>,
    /// Replies per second over about the last second.
    pub ops_per_sec: f64,
    /// Replies per second since the start.
    pub ops_per_sec_avg: f64,
    /// Failed requests so far (error replies and requests lost), warmup included.
    pub errors: u64,
    pub connections: u64,
    pub connections_planned: u64,
}

/// What the observer wants after a progress snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    /// Stop the run now and return what was measured so far.
    Stop,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How often the observer is called.
    pub tick: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { tick: Duration::from_millis(200) }
    }
}

/// Run the load described by `config`; returns its result, also when it was stopped or
/// failed part-way (see `RunResult::status`). Only an invalid configuration, an
/// unresolvable server or too low a file-descriptor limit is an `Err`.
pub fn run(
    config: &Config,
    opts: &RunOptions,
    observer: &mut dyn FnMut(&Progress) -> Control,
) -> Result<RunResult, ConfigError> {
    config.validate()?;
    let servers = config
        .servers
        .iter()
        .map(|s| net::resolve(s).map_err(|m| ConfigError::new("server", m)))
        .collect::<Result<Vec<_>, _>>()?;
    let fds = config.total_clients() + 16 * config.threads as u64 + 64;
    net::ensure_fd_limit(fds).map_err(|m| ConfigError::new("clients", m))?;
    let mut plan = Plan::new(config, servers, run_seed(config));
    plan.uring = use_uring(config.io)?;
    let threads = config.threads as usize;
    let shared = Shared::new(threads);
    let planned = Planned { requests: plan.planned_requests(), seconds: config.test_time.map(|t| t + config.warmup) };

    let (stats, start) = std::thread::scope(|scope| {
        let handles = spawn_workers(scope, &plan, &shared, threads);
        let start = supervise(&plan, &shared, &handles, opts, observer, &planned);
        (join_workers(handles, &plan, &shared), start)
    });
    let fault = shared.fault.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let stopped = shared.stopped.load(Ordering::SeqCst);
    let mstart = if start.go == 0 { 0 } else { start.go + plan.warmup_ns };
    Ok(RunResult::assemble(&plan, stats, mstart, start.started_unix, fault, stopped))
}

/// Whether the workers run the io_uring backend: `auto` where the kernel allows it;
/// `uring` where it does not is a configuration error saying why.
fn use_uring(io: IoBackend) -> Result<bool, ConfigError> {
    match io {
        IoBackend::Epoll => Ok(false),
        IoBackend::Auto => Ok(crate::uring::available().is_ok()),
        IoBackend::Uring => crate::uring::available().map(|()| true).map_err(|why| {
            ConfigError::new("io", format!("io_uring is not available here ({why}); use \"auto\" or \"epoll\""))
        }),
    }
}

/// The run's seed: the configured one, or one from the clock and pid with `randomize`.
fn run_seed(config: &Config) -> u64 {
    if config.randomize {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        (t.as_nanos() as u64) ^ ((std::process::id() as u64) << 32)
    } else {
        config.seed
    }
}

/// What the run is planned to do, when known (for progress snapshots).
struct Planned {
    /// Measured requests the run will send.
    requests: Option<u64>,
    /// warmup + test_time, when the run is time-limited.
    seconds: Option<f64>,
}

/// When the workers were let go: `now_ns` (0: never, e.g. a worker failed to set up) and
/// the wall clock then.
struct Start {
    go: u64,
    started_unix: f64,
}

/// One worker thread per `threads`; a worker that cannot be set up records the fault and
/// returns empty statistics.
fn spawn_workers<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    plan: &'env Plan,
    shared: &'env Shared,
    threads: usize,
) -> Vec<ScopedJoinHandle<'scope, ThreadStats>> {
    (0..threads)
        .map(|t| {
            std::thread::Builder::new()
                .name(format!("perflab-load-{t}"))
                .spawn_scoped(scope, move || {
                    let stats = match Worker::new(t, plan, shared) {
                        Ok(w) => w.run(),
                        Err(e) => {
                            shared.set_fault(format!("cannot set up worker thread {t}: {e}"));
                            shared.worker_ready();
                            ThreadStats::new(plan.open_loop_gap_ns.is_some(), plan.servers.len())
                        }
                    };
                    shared.worker_finished();
                    stats
                })
                .expect("spawn worker thread")
        })
        .collect()
}

/// From the calling thread until every worker has ended: give the workers a common start
/// once all are ready, and hand the observer a progress snapshot every tick (stopping the
/// run when it asks).
fn supervise(
    plan: &Plan,
    shared: &Shared,
    handles: &[ScopedJoinHandle<'_, ThreadStats>],
    opts: &RunOptions,
    observer: &mut dyn FnMut(&Progress) -> Control,
    planned: &Planned,
) -> Start {
    let threads = handles.len();
    let mut start = Start { go: 0, started_unix: 0.0 };
    let tick = opts.tick.as_nanos().max(1_000_000) as u64;
    let mut next_tick = now_ns() + tick;
    let mut window: VecDeque<(u64, u64)> = VecDeque::new();
    loop {
        if shared.finished.load(Ordering::SeqCst) == threads || handles.iter().all(|h| h.is_finished()) {
            break;
        }
        let now = now_ns();
        if start.go == 0 && shared.ready.load(Ordering::SeqCst) == threads && !shared.abort.load(Ordering::SeqCst) {
            start.go = now;
            start.started_unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
            shared.go_ns.store(start.go, Ordering::Release);
        }
        if now >= next_tick {
            next_tick = now + tick;
            let p = snapshot(plan, shared, start.go, now, planned.seconds, planned.requests, &mut window);
            if observer(&p) == Control::Stop {
                shared.stopped.store(true, Ordering::SeqCst);
                shared.abort.store(true, Ordering::SeqCst);
            }
        }
        // workers unpark this thread when they become ready and when they end
        let wait = next_tick.saturating_sub(now_ns());
        if wait > 0 {
            std::thread::park_timeout(Duration::from_nanos(wait));
        }
    }
    start
}

/// Each worker's statistics; a worker that panicked records the fault and counts as empty.
fn join_workers(handles: Vec<ScopedJoinHandle<'_, ThreadStats>>, plan: &Plan, shared: &Shared) -> Vec<ThreadStats> {
    handles
        .into_iter()
        .enumerate()
        .map(|(t, h)| {
            h.join().unwrap_or_else(|_| {
                shared.set_fault(format!("internal error: worker thread {t} panicked"));
                ThreadStats::new(plan.open_loop_gap_ns.is_some(), plan.servers.len())
            })
        })
        .collect()
}

fn snapshot(
    plan: &Plan,
    shared: &Shared,
    go: u64,
    now: u64,
    planned_s: Option<f64>,
    requests_planned: Option<u64>,
    window: &mut VecDeque<(u64, u64)>,
) -> Progress {
    let sum = |f: fn(&crate::plan::ThreadProgress) -> u64| shared.progress.iter().map(f).sum::<u64>();
    let done = sum(|p| p.done.load(Ordering::Relaxed));
    let errors = sum(|p| p.errors.load(Ordering::Relaxed));
    let connections = sum(|p| p.connected.load(Ordering::Relaxed));
    let elapsed_ns = if go == 0 { 0 } else { now - go };
    let phase = if go == 0 {
        Phase::Connecting
    } else if elapsed_ns < plan.warmup_ns {
        Phase::Warmup
    } else if plan.test_ns.is_some_and(|t| elapsed_ns >= plan.warmup_ns + t) {
        Phase::Finishing
    } else {
        Phase::Measuring
    };
    window.push_back((now, done));
    while window.len() > 2 && now - window[1].0 >= 1_000_000_000 {
        window.pop_front();
    }
    let (t0, d0) = window[0];
    let avg = if elapsed_ns > 0 { done as f64 * 1e9 / elapsed_ns as f64 } else { 0.0 };
    // until a second snapshot exists, the recent rate is the average so far
    let ops_per_sec = if now > t0 && window.len() > 1 { (done - d0) as f64 * 1e9 / (now - t0) as f64 } else { avg };
    Progress {
        phase,
        elapsed_s: elapsed_ns as f64 / 1e9,
        planned_s,
        requests_done: done,
        requests_planned,
        ops_per_sec,
        ops_per_sec_avg: avg,
        errors,
        connections,
        connections_planned: plan.total_clients,
    }
}

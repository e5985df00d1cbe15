//! The outcome of a run: merged counters and histograms, the flat metrics derived
//! from them, warnings, and the versioned JSON document that carries all of it.
//!
//! JSON format "perflab-kv-result", version 1 (see `to_json`). Change log:
//! - 1: first version. Added since, optional for readers: `errors` (failed requests by kind),
//!   `errors.warmup_by_kind` (each kind's warmup share, so that results merge exactly),
//!   `io` (the workers' I/O loop that ran: "uring" or "epoll"; "mixed" in a merge of both;
//!   absent: "epoll", the only one before).
use crate::clock::{max_rss_kb, rss_kb};
use crate::config::Config;
use crate::hist::{LatencyHist, ENCODING, SIGFIG};
use crate::plan::Plan;
use crate::stats::{ErrorKindCount, ErrorTally, OpStats, ThreadStats};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

mod merge;

pub const FORMAT: &str = "perflab-kv-result";
pub const VERSION: u32 = 1;

/// A client thread busier than this fraction of a core may be the bottleneck.
pub const SATURATION: f64 = 0.90;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Ran to its request count or test time.
    Complete,
    /// Stopped by the caller; results cover what ran.
    Stopped,
    /// A fault ended it (see `error`); results cover what completed before.
    Failed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
        }
    }
}

/// A typed remark on the result, saying what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, Copy)]
pub struct ThreadCpu {
    pub user_s: f64,
    pub system_s: f64,
    pub wall_s: f64,
}

impl ThreadCpu {
    /// Fraction of one core this thread used while measuring.
    pub fn utilization(&self) -> f64 {
        if self.wall_s > 0.0 {
            (self.user_s + self.system_s) / self.wall_s
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerSummary {
    pub server: String,
    pub address: String,
    pub connections: u64,
    pub requests: u64,
    pub errors: u64,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub config: Config,
    pub seed: u64,
    /// The workers' I/O loop: "uring" or "epoll" ("mixed" when merged results differ).
    pub io: String,
    pub status: Status,
    pub error: Option<String>,
    /// Wall-clock time of the common start (Unix seconds; 0 if it never started).
    pub started_unix_s: f64,
    pub warmup_s: f64,
    /// Measured window: from the end of the warmup to the last measured reply.
    pub duration_s: f64,
    pub sets: OpStats,
    pub gets: OpStats,
    pub late_requests: u64,
    pub unsent_requests: u64,
    pub unfinished_requests: u64,
    pub verify_failures: u64,
    pub warmup_requests: u64,
    pub connections: u64,
    pub connection_failures: u64,
    pub error_reply_sample: Option<String>,
    /// Every failed request (error replies and requests lost with their connection),
    /// warmup included, by kind, most frequent first.
    pub error_kinds: Vec<ErrorKindCount>,
    /// Warmup requests lost with their connection.
    pub warmup_lost: u64,
    pub threads: Vec<ThreadCpu>,
    pub max_rss_kb: u64,
    pub rss_kb: u64,
    pub servers: Vec<ServerSummary>,
    pub warnings: Vec<Warning>,
    /// Socket reads, writes and event-loop wakeups of all threads (whole run).
    pub reads: u64,
    pub writes: u64,
    pub polls: u64,
    /// Spins before sleeping (all threads, whole run), those that saw a completion come,
    /// and the seconds they took.
    pub spins: u64,
    pub spins_caught: u64,
    pub spin_s: f64,
}

impl RunResult {
    pub(crate) fn assemble(
        plan: &Plan,
        stats: Vec<ThreadStats>,
        mstart: u64,
        started_unix_s: f64,
        fault: Option<String>,
        stopped: bool,
    ) -> RunResult {
        let mut r = RunResult::empty(plan, started_unix_s, fault, stopped);
        let mut last_reply = 0;
        let mut kinds = ErrorTally::default();
        for t in &stats {
            kinds.merge(&t.error_kinds);
            last_reply = last_reply.max(t.last_reply_ns);
            r.add_thread(t);
        }
        r.error_kinds = kinds.sorted();
        // A timed run that ran to its end measured the whole test time, replies after it extend
        // the window: the last reply's arrival (the kernel's time) can precede the end by a
        // scheduling delay when the worker woke late to send the next request.
        let ran_to_end = plan.test_ns.filter(|_| r.status == Status::Complete);
        let window_end = last_reply.max(ran_to_end.map_or(0, |t| mstart + t));
        if mstart > 0 && window_end > mstart {
            r.duration_s = (window_end - mstart) as f64 / 1e9;
        }
        r.warnings = r.compute_warnings();
        r
    }

    /// A result with nothing counted yet: the plan's configuration and servers, how it ended.
    fn empty(plan: &Plan, started_unix_s: f64, fault: Option<String>, stopped: bool) -> RunResult {
        let open = plan.open_loop_gap_ns.is_some();
        let servers = plan
            .server_names
            .iter()
            .zip(&plan.servers)
            .map(|(n, a)| ServerSummary {
                server: n.clone(),
                address: a.to_string(),
                connections: 0,
                requests: 0,
                errors: 0,
            })
            .collect();
        RunResult {
            config: plan.config.clone(),
            seed: plan.seed,
            io: if plan.uring { "uring" } else { "epoll" }.to_string(),
            status: if fault.is_some() {
                Status::Failed
            } else if stopped {
                Status::Stopped
            } else {
                Status::Complete
            },
            error: fault,
            started_unix_s,
            warmup_s: plan.config.warmup,
            duration_s: 0.0,
            sets: OpStats::new(open),
            gets: OpStats::new(open),
            late_requests: 0,
            unsent_requests: 0,
            unfinished_requests: 0,
            verify_failures: 0,
            warmup_requests: 0,
            connections: 0,
            connection_failures: 0,
            error_reply_sample: None,
            error_kinds: Vec::new(),
            warmup_lost: 0,
            threads: Vec::new(),
            max_rss_kb: max_rss_kb(),
            rss_kb: rss_kb(),
            servers,
            warnings: Vec::new(),
            reads: 0,
            writes: 0,
            polls: 0,
            spins: 0,
            spins_caught: 0,
            spin_s: 0.0,
        }
    }

    /// Add one worker thread's counters (its error kinds are merged by the caller).
    fn add_thread(&mut self, t: &ThreadStats) {
        self.warmup_lost += t.warmup_lost;
        self.sets.merge(&t.sets);
        self.gets.merge(&t.gets);
        self.late_requests += t.late;
        self.unsent_requests += t.unsent;
        self.unfinished_requests += t.unfinished;
        self.verify_failures += t.verify_failures;
        self.warmup_requests += t.warmup_requests;
        self.connections += t.connections;
        self.connection_failures += t.connection_failures;
        if self.error_reply_sample.is_none() {
            self.error_reply_sample.clone_from(&t.error_reply_sample);
        }
        self.reads += t.reads;
        self.writes += t.writes;
        self.polls += t.polls;
        self.spins += t.spins;
        self.spins_caught += t.spins_caught;
        self.spin_s += t.spin_ns as f64 / 1e9;
        self.threads.push(ThreadCpu {
            user_s: t.cpu_user_ns as f64 / 1e9,
            system_s: t.cpu_sys_ns as f64 / 1e9,
            wall_s: t.wall_ns as f64 / 1e9,
        });
        for (s, ps) in self.servers.iter_mut().zip(&t.per_server) {
            s.connections += ps.connections;
            s.requests += ps.requests;
            s.errors += ps.errors;
        }
    }

    pub fn is_open_loop(&self) -> bool {
        self.config.rate.is_some()
    }

    /// Requests answered (hits, misses, stores), measured window only.
    pub fn requests(&self) -> u64 {
        self.sets.requests + self.gets.requests
    }

    /// Failed requests of the measured window (error replies plus requests lost with their connection).
    pub fn errors(&self) -> u64 {
        self.sets.errors() + self.gets.errors()
    }

    /// Failed requests of the whole run, warmup included: the sum over `error_kinds`.
    pub fn failed_requests(&self) -> u64 {
        self.error_kinds.iter().map(|k| k.count).sum()
    }

    /// Requests of the whole run, warmup included, that were answered or lost (so not the
    /// ones still in flight or never sent when the run ended).
    pub fn attempted_requests(&self) -> u64 {
        self.requests() + self.errors() + self.warmup_requests + self.warmup_lost
    }

    /// "SERVER_ERROR object too large for cache (20,000), connection closed (8)": the
    /// most frequent kinds, at most `max`, then how many more kinds there were.
    pub fn describe_error_kinds(&self, max: usize) -> String {
        let mut parts: Vec<String> =
            self.error_kinds.iter().take(max).map(|k| format!("{} ({})", k.kind, thousands(k.count))).collect();
        if self.error_kinds.len() > max {
            parts.push(format!("and {} more kind(s)", self.error_kinds.len() - max));
        }
        parts.join(", ")
    }

    pub fn cpu_s(&self) -> f64 {
        self.threads.iter().map(|t| t.user_s + t.system_s).sum()
    }

    /// Latency histogram of all commands (from the intended send time in open loop).
    pub fn total_hist(&self) -> LatencyHist {
        let mut h = self.sets.hist.clone();
        h.add(&self.gets.hist);
        h
    }

    fn compute_warnings(&self) -> Vec<Warning> {
        let mut w = Vec::new();
        for (i, t) in self.threads.iter().enumerate() {
            if t.wall_s > 0.5 && t.utilization() >= SATURATION {
                w.push(Warning {
                    code: "client_cpu_saturated",
                    message: format!(
                        "client thread {i} used {:.0}% of a CPU core: the load generator, not the server, may be the limit; add threads (-t) or run the client on other cores",
                        100.0 * t.utilization()
                    ),
                });
                break;
            }
        }
        let failed = self.failed_requests();
        if failed > 0 {
            let example = self
                .error_kinds
                .first()
                .and_then(|k| k.example.as_ref())
                .map(|s| format!("; e.g. \"{s}\""))
                .unwrap_or_default();
            let warmup = self.error_kinds.iter().map(|k| k.warmup).sum::<u64>();
            w.push(Warning {
                code: "errors",
                message: format!(
                    "{} of {} request(s) failed{}: {}{example}",
                    thousands(failed),
                    thousands(self.attempted_requests()),
                    if warmup > 0 { format!(" ({} in the warmup)", thousands(warmup)) } else { String::new() },
                    self.describe_error_kinds(3)
                ),
            });
        }
        if self.verify_failures > 0 {
            w.push(Warning {
                code: "verify_failures",
                message: format!(
                    "{} GET hit(s) returned a value other than the one written for that key",
                    self.verify_failures
                ),
            });
        }
        let n = self.requests();
        if self.is_open_loop() && n > 0 {
            let late = self.late_requests as f64 / n as f64;
            if late > 0.01 {
                w.push(Warning {
                    code: "late_requests",
                    message: format!(
                        "{:.1}% of requests were sent more than {} ms after their intended time: the server (or client) fell behind the rate; the corrected latencies include that wait",
                        100.0 * late,
                        self.config.late_threshold * 1e3
                    ),
                });
            }
            if let (Some(rate), true) = (self.config.rate, self.duration_s > 0.0) {
                let achieved = n as f64 / self.duration_s;
                if achieved < 0.95 * rate {
                    w.push(Warning {
                        code: "rate_not_reached",
                        message: format!(
                            "achieved {achieved:.0} requests/s of the {rate:.0} asked for ({} never sent): the system could not sustain the rate",
                            self.unsent_requests
                        ),
                    });
                }
            }
        }
        if n > 0 && n < 1000 {
            w.push(Warning {
                code: "few_requests",
                message: format!(
                    "only {n} requests were measured: p99.9 needs at least 1,000 (and p99 100) to mean anything; run longer or with more requests"
                ),
            });
        }
        w
    }

    /// Requests in flight per connection, on average over the measured window: by Little's
    /// law, the time the answered requests spent between their send and their reply (from
    /// the actual send, also in open loop), over the window and the connections. Closed loop
    /// with pipeline P against a server much slower than the client: about P, as with
    /// memtier's `--pipeline`.
    pub fn avg_in_flight_per_connection(&self) -> f64 {
        let sum = if self.sets.hist_uncorrected.is_some() {
            self.sets.latency_sum_uncorrected_ns + self.gets.latency_sum_uncorrected_ns
        } else {
            self.sets.latency_sum_ns + self.gets.latency_sum_ns
        };
        if self.duration_s > 0.0 && self.connections > 0 {
            sum as f64 / 1e9 / self.duration_s / self.connections as f64
        } else {
            0.0
        }
    }

    /// Flat metrics, names carrying their units. Rates are per second of the measured window.
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        let d = self.duration_s;
        let per_s = |x: u64| if d > 0.0 { x as f64 / d } else { 0.0 };
        let ms = |ns: u64| ns as f64 / 1e6;
        let avg = |sum: u64, n: u64| if n > 0 { sum as f64 / n as f64 / 1e6 } else { 0.0 };
        let kb = |s: &OpStats| if d > 0.0 { (s.bytes_rx + s.bytes_tx) as f64 / 1024.0 / d } else { 0.0 };
        let mut put = |k: &str, v: f64| {
            m.insert(k.to_string(), v);
        };
        let total = self.total_hist().view();
        let mut total_unc = None;
        if let (Some(a), Some(b)) = (&self.sets.hist_uncorrected, &self.gets.hist_uncorrected) {
            let mut h = a.clone();
            h.add(b);
            total_unc = Some(h.view());
        }
        let pct = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)];
        let n = self.requests();
        put("ops_per_sec", per_s(n));
        put("hits_per_sec", per_s(self.gets.hits));
        put("misses_per_sec", per_s(self.gets.misses));
        put(
            "kb_per_sec",
            if d > 0.0 {
                (self.sets.bytes_rx + self.sets.bytes_tx + self.gets.bytes_rx + self.gets.bytes_tx) as f64 / 1024.0 / d
            } else {
                0.0
            },
        );
        put("avg_latency_ms", avg(self.sets.latency_sum_ns + self.gets.latency_sum_ns, n));
        for (name, q) in pct {
            put(&format!("{name}_latency_ms"), ms(total.quantile_ns(q)));
        }
        put("max_latency_ms", ms(total.max_ns()));
        for (prefix, s) in [("sets", &self.sets), ("gets", &self.gets)] {
            put(&format!("{prefix}_ops_per_sec"), per_s(s.requests));
            put(&format!("{prefix}_avg_latency_ms"), avg(s.latency_sum_ns, s.requests));
            let h = s.hist.view();
            for (name, q) in pct {
                put(&format!("{prefix}_{name}_latency_ms"), ms(h.quantile_ns(q)));
            }
            put(&format!("{prefix}_max_latency_ms"), ms(h.max_ns()));
            put(&format!("{prefix}_kb_per_sec"), kb(s));
            put(&format!("{prefix}_errors"), s.errors() as f64);
        }
        put("gets_hits_per_sec", per_s(self.gets.hits));
        put("gets_misses_per_sec", per_s(self.gets.misses));
        let lookups = self.gets.hits + self.gets.misses;
        if lookups > 0 {
            put("hit_ratio", self.gets.hits as f64 / lookups as f64);
        }
        put("requests", n as f64);
        put("duration_s", d);
        put("errors", self.errors() as f64);
        put("connection_failures", self.connection_failures as f64);
        put("connections", self.connections as f64);
        put("avg_in_flight_per_connection", self.avg_in_flight_per_connection());
        put("verify_failures", self.verify_failures as f64);
        let cpu = self.cpu_s();
        put("client_cpu_s", cpu);
        put("client_cpu_us_per_request", if n > 0 { cpu * 1e6 / n as f64 } else { 0.0 });
        put("client_cpu_max_thread_utilization", self.threads.iter().map(|t| t.utilization()).fold(0.0, f64::max));
        if let Some(rate) = self.config.rate {
            put("target_rate_per_sec", rate);
            put("late_requests", self.late_requests as f64);
            put("unsent_requests", self.unsent_requests as f64);
            if let Some(h) = &total_unc {
                put(
                    "avg_uncorrected_latency_ms",
                    avg(self.sets.latency_sum_uncorrected_ns + self.gets.latency_sum_uncorrected_ns, n),
                );
                for (name, q) in pct {
                    put(&format!("{name}_uncorrected_latency_ms"), ms(h.quantile_ns(q)));
                }
                put("max_uncorrected_latency_ms", ms(h.max_ns()));
            }
        }
        m
    }

    fn op_json(s: &OpStats, gets: bool) -> Value {
        let mut o = json!({
            "requests": s.requests,
            "error_replies": s.error_replies,
            "lost": s.lost,
            "bytes_tx": s.bytes_tx,
            "bytes_rx": s.bytes_rx,
            "latency_sum_ns": s.latency_sum_ns,
        });
        if gets {
            o["hits"] = json!(s.hits);
            o["misses"] = json!(s.misses);
        }
        if s.hist_uncorrected.is_some() {
            o["latency_sum_uncorrected_ns"] = json!(s.latency_sum_uncorrected_ns);
        }
        o
    }

    /// `errors`: failed requests of the whole run by kind. `total` (warmup included) is the sum of
    /// `by_kind`; `measured` is the measured window's part (the metric `errors`), `warmup` the
    /// rest; `attempted` counts the requests answered or lost; `examples` holds a kind's first
    /// message where it says more than the kind (Redis's whole error line, the body of a
    /// binary-protocol error).
    fn errors_json(&self) -> Value {
        let mut by_kind = Map::new();
        let mut warmup_by_kind = Map::new();
        let mut examples = Map::new();
        for k in &self.error_kinds {
            by_kind.insert(k.kind.clone(), json!(k.count));
            warmup_by_kind.insert(k.kind.clone(), json!(k.warmup));
            if let Some(e) = &k.example {
                examples.insert(k.kind.clone(), json!(e));
            }
        }
        let total = self.failed_requests();
        json!({
            "total": total,
            "measured": self.errors(),
            "warmup": total.saturating_sub(self.errors()),
            "attempted": self.attempted_requests(),
            "by_kind": Value::Object(by_kind),
            "warmup_by_kind": Value::Object(warmup_by_kind),
            "examples": Value::Object(examples),
        })
    }

    /// The whole result as the versioned JSON document "perflab-kv-result" v1.
    pub fn to_json(&self) -> Value {
        let mut config = self.config.to_json();
        config["seed"] = json!(self.seed);
        let mut hist = Map::new();
        hist.insert("unit".into(), json!("ns"));
        hist.insert("encoding".into(), json!(ENCODING));
        hist.insert("significant_digits".into(), json!(SIGFIG));
        hist.insert("sets".into(), json!(self.sets.hist.encode()));
        hist.insert("gets".into(), json!(self.gets.hist.encode()));
        if let (Some(a), Some(b)) = (&self.sets.hist_uncorrected, &self.gets.hist_uncorrected) {
            hist.insert("sets_uncorrected".into(), json!(a.encode()));
            hist.insert("gets_uncorrected".into(), json!(b.encode()));
        }
        let metrics: Map<String, Value> = self.metrics().into_iter().map(|(k, v)| (k, json!(v))).collect();
        json!({
            "format": FORMAT,
            "version": VERSION,
            "status": self.status.name(),
            "error": self.error,
            "io": self.io,
            "mode": if self.is_open_loop() { "open" } else { "closed" },
            "config": config,
            "started_unix_s": self.started_unix_s,
            "warmup_s": self.warmup_s,
            "duration_s": self.duration_s,
            "connections": self.connections,
            "connection_failures": self.connection_failures,
            "sets": Self::op_json(&self.sets, false),
            "gets": Self::op_json(&self.gets, true),
            "late_requests": self.late_requests,
            "unsent_requests": self.unsent_requests,
            "unfinished_requests": self.unfinished_requests,
            "verify_failures": self.verify_failures,
            "warmup_requests": self.warmup_requests,
            "error_reply_sample": self.error_reply_sample,
            "errors": self.errors_json(),
            "client": {
                "cpu_s": self.cpu_s(),
                "threads": self.threads.iter().map(|t| json!({
                    "user_s": t.user_s, "system_s": t.system_s, "wall_s": t.wall_s,
                    "utilization": t.utilization(),
                })).collect::<Vec<_>>(),
                "max_rss_kb": self.max_rss_kb,
                "rss_kb": self.rss_kb,
                "syscalls": {"reads": self.reads, "writes": self.writes, "polls": self.polls},
                "spin": {"spins": self.spins, "caught": self.spins_caught, "seconds": self.spin_s},
            },
            "servers": self.servers.iter().map(|s| json!({
                "server": s.server, "address": s.address, "connections": s.connections,
                "requests": s.requests, "errors": s.errors,
            })).collect::<Vec<_>>(),
            "histograms": Value::Object(hist),
            "metrics": Value::Object(metrics),
            "warnings": self.warnings.iter().map(|w| json!({"code": w.code, "message": w.message})).collect::<Vec<_>>(),
        })
    }
}

/// 12345678 → "12,345,678".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && i % 3 == digits.len() % 3 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn thread(requests: u64, lat_ns: u64, cpu_ns: u64, wall_ns: u64, last_reply: u64) -> ThreadStats {
        let mut t = ThreadStats::new(false, 1);
        for _ in 0..requests {
            t.gets.requests += 1;
            t.gets.hits += 1;
            t.gets.bytes_rx += 100;
            t.gets.bytes_tx += 20;
            t.gets.latency_sum_ns += lat_ns;
            t.gets.hist.record(lat_ns);
        }
        t.cpu_user_ns = cpu_ns;
        t.wall_ns = wall_ns;
        t.last_reply_ns = last_reply;
        t.connections = 2;
        t
    }

    #[test]
    fn metrics_from_merged_threads() {
        let cfg = Config { servers: vec!["127.0.0.1:1".into()], threads: 2, clients: 2, ..Config::default() };
        let plan = Plan::new(&cfg, vec!["127.0.0.1:1".parse().unwrap()], 1);
        let mstart = 1_000_000_000;
        let stats = vec![
            thread(3000, 100_000, 500_000_000, 2_000_000_000, mstart + 2_000_000_000),
            thread(1000, 1_000_000, 1_950_000_000, 2_000_000_000, mstart + 1_000_000_000),
        ];
        let r = RunResult::assemble(&plan, stats, mstart, 0.0, None, false);
        let m = r.metrics();
        assert_eq!(r.status, Status::Complete);
        assert_eq!(m["requests"], 4000.0);
        assert_eq!(m["duration_s"], 2.0);
        assert_eq!(m["ops_per_sec"], 2000.0);
        assert_eq!(m["hits_per_sec"], 2000.0);
        assert_eq!(m["hit_ratio"], 1.0);
        assert!((m["avg_latency_ms"] - 0.325).abs() < 1e-12);
        // Little's law: 1.3 s of requests in flight over a 2 s window on 4 connections
        assert!((m["avg_in_flight_per_connection"] - 1.3 / 2.0 / 4.0).abs() < 1e-12);
        assert!((m["p50_latency_ms"] - 0.1).abs() < 0.0002);
        assert!((m["p99_latency_ms"] - 1.0).abs() < 0.001);
        assert!((m["kb_per_sec"] - 4000.0 * 120.0 / 1024.0 / 2.0).abs() < 1e-9);
        assert!((m["client_cpu_us_per_request"] - 2.45e9 / 4000.0 / 1e3).abs() < 1e-9);
        assert!((m["client_cpu_max_thread_utilization"] - 0.975).abs() < 1e-12);
        assert_eq!(m["sets_ops_per_sec"], 0.0);
        let codes: Vec<_> = r.warnings.iter().map(|w| w.code).collect();
        assert_eq!(codes, vec!["client_cpu_saturated"]);
        assert!(r.warnings[0].message.contains("thread 1 used 98%"));
        let doc = r.to_json();
        assert_eq!(doc["format"], FORMAT);
        assert_eq!(doc["gets"]["hits"], 4000);
        assert_eq!(LatencyHist::decode(doc["histograms"]["gets"].as_str().unwrap()).unwrap().count(), 4000);
    }

    #[test]
    fn a_timed_run_measures_its_whole_test_time() {
        let cfg = Config {
            servers: vec!["127.0.0.1:1".into()],
            threads: 1,
            clients: 1,
            requests: None,
            test_time: Some(2.0),
            ..Config::default()
        };
        let plan = Plan::new(&cfg, vec!["127.0.0.1:1".parse().unwrap()], 1);
        let mstart = 1_000_000_000;
        // the last reply arrived 2 ms before the end: the worker woke late to send the next one
        let early = || vec![thread(1000, 100_000, 1, 1, mstart + 1_998_000_000)];
        let r = RunResult::assemble(&plan, early(), mstart, 0.0, None, false);
        assert_eq!(r.metrics()["duration_s"], 2.0);
        // replies after the end extend the window
        let late = vec![thread(1000, 100_000, 1, 1, mstart + 2_003_000_000)];
        let r = RunResult::assemble(&plan, late, mstart, 0.0, None, false);
        assert!((r.metrics()["duration_s"] - 2.003).abs() < 1e-12);
        // a stopped run measured only until its last reply
        let r = RunResult::assemble(&plan, early(), mstart, 0.0, None, true);
        assert!((r.metrics()["duration_s"] - 1.998).abs() < 1e-12);
    }

    #[test]
    fn failed_runs_and_small_samples_warn() {
        let cfg = Config { servers: vec!["127.0.0.1:1".into()], threads: 1, clients: 1, ..Config::default() };
        let plan = Plan::new(&cfg, vec!["127.0.0.1:1".parse().unwrap()], 1);
        let mut t = thread(10, 50_000, 1000, 1000, 5_000_000);
        t.sets.lost = 3;
        t.error_kinds.add(crate::stats::KIND_CLOSED.as_bytes(), b"", true, 3);
        let r = RunResult::assemble(&plan, vec![t], 1_000_000, 0.0, Some("boom".into()), false);
        assert_eq!(r.status, Status::Failed);
        assert_eq!(r.error.as_deref(), Some("boom"));
        assert_eq!(r.metrics()["errors"], 3.0);
        let codes: Vec<_> = r.warnings.iter().map(|w| w.code).collect();
        assert_eq!(codes, vec!["errors", "few_requests"]);
        assert_eq!(r.warnings[0].message, "3 of 13 request(s) failed: connection closed (3)");
        // nothing measured: rates are 0, not NaN
        let r = RunResult::assemble(&plan, vec![ThreadStats::new(false, 1)], 0, 0.0, None, true);
        assert_eq!(r.status, Status::Stopped);
        assert!(r.metrics().values().all(|v| v.is_finite()));
    }

    #[test]
    fn failed_requests_by_kind_across_threads() {
        let cfg = Config { servers: vec!["127.0.0.1:1".into()], threads: 2, clients: 1, ..Config::default() };
        let plan = Plan::new(&cfg, vec!["127.0.0.1:1".parse().unwrap()], 1);
        let big = b"SERVER_ERROR object too large for cache";
        let mut a = thread(1000, 50_000, 1000, 1000, 5_000_000);
        a.sets.error_replies = 1500;
        a.error_kinds.add(big, b"", true, 1500);
        a.warmup_requests = 20; // 20 warmup replies, 5 of them errors
        a.error_kinds.add(big, b"", false, 5);
        let mut b = thread(1000, 50_000, 1000, 1000, 5_000_000);
        b.sets.error_replies = 1000;
        b.error_kinds.add(big, b"", true, 1000);
        b.gets.lost = 2;
        b.error_kinds.add(crate::stats::KIND_TIMEOUT.as_bytes(), b"", true, 2);
        b.warmup_lost = 1;
        b.error_kinds.add(crate::stats::KIND_TIMEOUT.as_bytes(), b"", false, 1);
        let r = RunResult::assemble(&plan, vec![a, b], 1_000_000, 0.0, None, false);
        assert_eq!(r.status, Status::Complete); // error replies are no fault: the caller judges them
        assert_eq!(r.errors(), 2502);
        assert_eq!(r.failed_requests(), 2508);
        assert_eq!(r.attempted_requests(), 2000 + 2502 + 20 + 1);
        assert_eq!(r.describe_error_kinds(1), "SERVER_ERROR object too large for cache (2,505), and 1 more kind(s)");
        let w = r.warnings.iter().find(|w| w.code == "errors").expect("errors warning");
        assert_eq!(
            w.message,
            "2,508 of 4,523 request(s) failed (6 in the warmup): SERVER_ERROR object too large for cache (2,505), response timeout (3)"
        );
        let doc = r.to_json();
        assert_eq!(doc["errors"]["total"], 2508);
        assert_eq!(doc["errors"]["measured"], 2502);
        assert_eq!(doc["errors"]["warmup"], 6);
        assert_eq!(doc["errors"]["attempted"], 4523);
        assert_eq!(doc["errors"]["by_kind"][std::str::from_utf8(big).unwrap()], 2505);
        assert_eq!(doc["errors"]["by_kind"]["response timeout"], 3);
        assert_eq!(doc["metrics"]["errors"], 2502.0);
        // nothing failed: an empty tally and no warning
        let r = RunResult::assemble(&plan, vec![thread(2000, 1, 1, 1, 5_000_000)], 1_000_000, 0.0, None, false);
        assert_eq!((r.failed_requests(), r.to_json()["errors"]["by_kind"].as_object().unwrap().len()), (0, 0));
        assert!(r.warnings.iter().all(|w| w.code != "errors"));
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}

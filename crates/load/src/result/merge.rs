//! Several load processes' results as one: the processes of a load spread over client hosts
//! (and several processes per host) each write a "perflab-kv-result" document; merged, their
//! counts are summed, their HDR histograms added — so the percentiles are those of every
//! request of every process together, never averaged percentiles — and the metrics derived
//! by the same `RunResult::metrics` as a single process's.
//!
//! Throughput of the merge is the sum of each process's own rate (requests over its own
//! measured window, timed on its own clock, so clock offsets between hosts do not enter):
//! the merged `duration_s` is the window that gives that sum, Σ requests / Σ rates.
use super::{RunResult, ServerSummary, Status, ThreadCpu};
use crate::config::Config;
use crate::hist::LatencyHist;
use crate::stats::{ErrorTally, OpStats};
use serde_json::Value;

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("result has no '{key}'"))
}

fn uint(v: &Value, key: &str) -> Result<u64, String> {
    field(v, key)?.as_u64().ok_or_else(|| format!("result's '{key}' is not a count"))
}

fn uint_or_zero(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn float(v: &Value, key: &str) -> Result<f64, String> {
    field(v, key)?.as_f64().ok_or_else(|| format!("result's '{key}' is not a number"))
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn histogram(hists: &Value, key: &str) -> Result<Option<LatencyHist>, String> {
    match hists.get(key).and_then(Value::as_str) {
        Some(t) => LatencyHist::decode(t).map(Some).map_err(|e| format!("histogram '{key}': {e}")),
        None => Ok(None),
    }
}

fn op_stats(doc: &Value, op: &str) -> Result<OpStats, String> {
    let o = field(doc, op)?;
    let hists = field(doc, "histograms")?;
    Ok(OpStats {
        requests: uint(o, "requests")?,
        hits: uint_or_zero(o, "hits"),
        misses: uint_or_zero(o, "misses"),
        error_replies: uint(o, "error_replies")?,
        lost: uint(o, "lost")?,
        bytes_tx: uint(o, "bytes_tx")?,
        bytes_rx: uint(o, "bytes_rx")?,
        latency_sum_ns: uint(o, "latency_sum_ns")?,
        latency_sum_uncorrected_ns: uint_or_zero(o, "latency_sum_uncorrected_ns"),
        hist: histogram(hists, op)?.ok_or_else(|| format!("result has no '{op}' histogram"))?,
        hist_uncorrected: histogram(hists, &format!("{op}_uncorrected"))?,
    })
}

fn status(name: &str) -> Result<Status, String> {
    match name {
        "complete" => Ok(Status::Complete),
        "stopped" => Ok(Status::Stopped),
        "failed" => Ok(Status::Failed),
        other => Err(format!("unknown status '{other}'")),
    }
}

/// Failed requests by kind; a kind's warmup share from `warmup_by_kind` where written.
fn error_tally(doc: &Value) -> ErrorTally {
    let mut tally = ErrorTally::default();
    let Some(e) = doc.get("errors") else { return tally };
    let examples = e.get("examples");
    let warmups = e.get("warmup_by_kind");
    if let Some(kinds) = e.get("by_kind").and_then(Value::as_object) {
        for (kind, n) in kinds {
            let n = n.as_u64().unwrap_or(0);
            let warmup = warmups.and_then(|w| w.get(kind)).and_then(Value::as_u64).unwrap_or(0).min(n);
            let example = examples.and_then(|x| x.get(kind)).and_then(Value::as_str).unwrap_or("");
            tally.add(kind.as_bytes(), example.as_bytes(), false, warmup);
            tally.add(kind.as_bytes(), example.as_bytes(), true, n - warmup);
        }
    }
    tally
}

impl RunResult {
    /// A result read back from its JSON document (`to_json`); Err names what is missing.
    pub fn from_json(doc: &Value) -> Result<RunResult, String> {
        if doc.get("format").and_then(Value::as_str) != Some(super::FORMAT) {
            return Err(format!("not a {} document", super::FORMAT));
        }
        let config = Config::from_json(&field(doc, "config")?.to_string()).map_err(|e| e.message)?;
        let client = field(doc, "client")?;
        let calls = client.get("syscalls").cloned().unwrap_or(Value::Null);
        let spin = client.get("spin").cloned().unwrap_or(Value::Null);
        let threads = client
            .get("threads")
            .and_then(Value::as_array)
            .map(|ts| {
                ts.iter()
                    .map(|t| ThreadCpu {
                        user_s: t.get("user_s").and_then(Value::as_f64).unwrap_or(0.0),
                        system_s: t.get("system_s").and_then(Value::as_f64).unwrap_or(0.0),
                        wall_s: t.get("wall_s").and_then(Value::as_f64).unwrap_or(0.0),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let servers = doc
            .get("servers")
            .and_then(Value::as_array)
            .map(|ss| {
                ss.iter()
                    .map(|s| ServerSummary {
                        server: text(s, "server").unwrap_or_default(),
                        address: text(s, "address").unwrap_or_default(),
                        connections: uint_or_zero(s, "connections"),
                        requests: uint_or_zero(s, "requests"),
                        errors: uint_or_zero(s, "errors"),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut r = RunResult {
            seed: config.seed,
            config,
            io: text(doc, "io").unwrap_or_else(|| "epoll".to_string()),
            status: status(field(doc, "status")?.as_str().unwrap_or(""))?,
            error: text(doc, "error"),
            started_unix_s: float(doc, "started_unix_s")?,
            warmup_s: float(doc, "warmup_s")?,
            duration_s: float(doc, "duration_s")?,
            sets: op_stats(doc, "sets")?,
            gets: op_stats(doc, "gets")?,
            late_requests: uint_or_zero(doc, "late_requests"),
            unsent_requests: uint_or_zero(doc, "unsent_requests"),
            unfinished_requests: uint_or_zero(doc, "unfinished_requests"),
            verify_failures: uint_or_zero(doc, "verify_failures"),
            warmup_requests: uint_or_zero(doc, "warmup_requests"),
            connections: uint_or_zero(doc, "connections"),
            connection_failures: uint_or_zero(doc, "connection_failures"),
            error_reply_sample: text(doc, "error_reply_sample"),
            error_kinds: error_tally(doc).sorted(),
            warmup_lost: 0,
            threads,
            max_rss_kb: uint_or_zero(client, "max_rss_kb"),
            rss_kb: uint_or_zero(client, "rss_kb"),
            servers,
            warnings: Vec::new(),
            reads: uint_or_zero(&calls, "reads"),
            writes: uint_or_zero(&calls, "writes"),
            polls: uint_or_zero(&calls, "polls"),
            spins: uint_or_zero(&spin, "spins"),
            spins_caught: uint_or_zero(&spin, "caught"),
            spin_s: spin.get("seconds").and_then(Value::as_f64).unwrap_or(0.0),
        };
        // attempted = measured answered + measured failed + warmup answered + warmup lost
        let attempted = doc.get("errors").map(|e| uint_or_zero(e, "attempted")).unwrap_or(0);
        r.warmup_lost = attempted.saturating_sub(r.requests() + r.errors() + r.warmup_requests);
        r.warnings = r.compute_warnings();
        Ok(r)
    }

    /// The results of load processes that ran at the same time, as one (see the module's
    /// documentation). The first part's configuration stands for the merge; `status` is the
    /// worst of the parts (failed, then stopped), `error` the first part's error.
    pub fn merge(parts: &[RunResult]) -> Result<RunResult, String> {
        let first = parts.first().ok_or("no results to merge")?;
        let open = first.is_open_loop();
        if parts.iter().any(|p| p.is_open_loop() != open) {
            return Err("cannot merge open-loop and closed-loop results".into());
        }
        let mut m = first.clone();
        m.sets = OpStats::new(open);
        m.gets = OpStats::new(open);
        m.threads.clear();
        m.servers.clear();
        let mut kinds = ErrorTally::default();
        let mut rate = 0.0;
        for p in parts {
            m.sets.merge(&p.sets);
            m.gets.merge(&p.gets);
            if p.duration_s > 0.0 {
                rate += p.requests() as f64 / p.duration_s;
            }
            for k in &p.error_kinds {
                let example = k.example.as_deref().unwrap_or("").as_bytes();
                kinds.add(k.kind.as_bytes(), example, false, k.warmup);
                kinds.add(k.kind.as_bytes(), example, true, k.count - k.warmup);
            }
            m.threads.extend_from_slice(&p.threads);
            for s in &p.servers {
                match m.servers.iter_mut().find(|t| t.server == s.server) {
                    Some(t) => {
                        t.connections += s.connections;
                        t.requests += s.requests;
                        t.errors += s.errors;
                    }
                    None => m.servers.push(s.clone()),
                }
            }
            if p.status == Status::Failed || (p.status == Status::Stopped && m.status == Status::Complete) {
                m.status = p.status;
            }
            if p.io != m.io {
                m.io = "mixed".to_string();
            }
            if m.error.is_none() {
                m.error.clone_from(&p.error);
            }
            if m.error_reply_sample.is_none() {
                m.error_reply_sample.clone_from(&p.error_reply_sample);
            }
        }
        let sum = |f: fn(&RunResult) -> u64| parts.iter().map(f).sum::<u64>();
        m.late_requests = sum(|p| p.late_requests);
        m.unsent_requests = sum(|p| p.unsent_requests);
        m.unfinished_requests = sum(|p| p.unfinished_requests);
        m.verify_failures = sum(|p| p.verify_failures);
        m.warmup_requests = sum(|p| p.warmup_requests);
        m.warmup_lost = sum(|p| p.warmup_lost);
        m.connections = sum(|p| p.connections);
        m.connection_failures = sum(|p| p.connection_failures);
        m.reads = sum(|p| p.reads);
        m.writes = sum(|p| p.writes);
        m.polls = sum(|p| p.polls);
        m.spins = sum(|p| p.spins);
        m.spins_caught = sum(|p| p.spins_caught);
        m.spin_s = parts.iter().map(|p| p.spin_s).sum();
        m.max_rss_kb = parts.iter().map(|p| p.max_rss_kb).max().unwrap_or(0);
        m.rss_kb = parts.iter().map(|p| p.rss_kb).max().unwrap_or(0);
        m.started_unix_s = parts.iter().map(|p| p.started_unix_s).fold(f64::INFINITY, f64::min);
        m.error_kinds = kinds.sorted();
        let n = m.requests();
        m.duration_s =
            if n > 0 && rate > 0.0 { n as f64 / rate } else { parts.iter().map(|p| p.duration_s).fold(0.0, f64::max) };
        m.warnings = m.compute_warnings();
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ErrorTally;

    fn part(requests: u64, duration_s: f64, lat_ns: &[u64], failed: u64) -> RunResult {
        let mut gets = OpStats::new(false);
        gets.requests = requests;
        gets.hits = requests;
        gets.bytes_rx = requests * 100;
        for &l in lat_ns {
            gets.hist.record(l);
            gets.latency_sum_ns += l;
        }
        let mut kinds = ErrorTally::default();
        kinds.add(b"SERVER_ERROR out of memory", b"", true, failed);
        RunResult {
            config: Config::default(),
            seed: 1,
            io: "epoll".to_string(),
            status: Status::Complete,
            error: None,
            started_unix_s: 100.0,
            warmup_s: 0.0,
            duration_s,
            sets: OpStats::new(false),
            gets,
            late_requests: 0,
            unsent_requests: 0,
            unfinished_requests: 0,
            verify_failures: 0,
            warmup_requests: 5,
            connections: 50,
            connection_failures: 0,
            error_reply_sample: None,
            error_kinds: kinds.sorted(),
            warmup_lost: 0,
            threads: vec![ThreadCpu { user_s: 0.1, system_s: 0.2, wall_s: 1.0 }],
            max_rss_kb: 1000,
            rss_kb: 900,
            servers: vec![],
            warnings: vec![],
            reads: 10,
            writes: 10,
            polls: 10,
            spins: 4,
            spins_caught: 3,
            spin_s: 0.001,
        }
    }

    #[test]
    fn json_round_trip_keeps_metrics() {
        let a = part(1000, 2.0, &[1_000, 2_000, 50_000], 3);
        let back = RunResult::from_json(&a.to_json()).unwrap();
        assert_eq!(back.metrics(), a.metrics());
        assert_eq!(back.failed_requests(), 3);
        assert_eq!(back.to_json()["errors"], a.to_json()["errors"]);
        assert_eq!(back.to_json()["client"]["spin"], a.to_json()["client"]["spin"]);
        let merged = RunResult::merge(&[a.clone(), back]).unwrap();
        assert_eq!((merged.spins, merged.spins_caught, merged.spin_s), (8, 6, 0.002));
    }

    #[test]
    fn merge_sums_rates_and_pools_histograms() {
        // one process: 1000 requests in 2 s, fast; the other: 3000 in 1 s, one slow tail
        let a = part(1000, 2.0, &[1_000; 99], 0);
        let mut slow = vec![1_000; 98];
        slow.push(9_000_000);
        slow.push(9_000_000);
        let b = part(3000, 1.0, &slow, 2);
        let m = RunResult::merge(&[a.clone(), b.clone()]).unwrap();
        let metrics = m.metrics();
        assert!((metrics["ops_per_sec"] - (500.0 + 3000.0)).abs() < 1e-6);
        assert_eq!(metrics["requests"], 4000.0);
        // 2 of 199 samples are slow: p99 of the pooled requests is slow, p50 fast
        assert!(metrics["p99_latency_ms"] > 8.0, "{metrics:?}");
        assert!(metrics["p50_latency_ms"] < 0.01);
        assert_eq!(m.connections, 100);
        assert_eq!(m.threads.len(), 2);
        assert_eq!(m.failed_requests(), 2);
        assert_eq!(m.warmup_requests, 10);
        // merging is the same through the JSON documents
        let ja = RunResult::from_json(&a.to_json()).unwrap();
        let jb = RunResult::from_json(&b.to_json()).unwrap();
        assert_eq!(RunResult::merge(&[ja, jb]).unwrap().metrics(), metrics);
    }

    #[test]
    fn merge_takes_the_worst_status() {
        let a = part(10, 1.0, &[1_000], 0);
        let mut b = part(10, 1.0, &[1_000], 0);
        b.status = Status::Failed;
        b.error = Some("connection refused".into());
        let m = RunResult::merge(&[a, b]).unwrap();
        assert_eq!(m.status, Status::Failed);
        assert_eq!(m.error.as_deref(), Some("connection refused"));
        assert!(RunResult::merge(&[]).is_err());
    }
}

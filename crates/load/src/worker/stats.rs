//! What a worker measures: each reply into its `ThreadStats` (latencies, hits, errors,
//! verification), its CPU time over the measured window, the progress it publishes and
//! its totals at the end.
use super::conn::{Pending, State};
use super::Worker;
use crate::clock::{now_ns, thread_cpu_ns};
use crate::config::Protocol;
use crate::keys::Op;
use crate::protocol::{self, Reply};
use crate::stats::ThreadStats;
use crate::value::is_value_of;
use std::sync::atomic::Ordering;

impl Worker<'_> {
    pub(super) fn publish(&self) {
        let p = &self.shared.progress[self.index];
        p.done.store(self.done_count, Ordering::Relaxed);
        p.errors.store(self.stats.error_kinds.total(), Ordering::Relaxed);
    }

    pub(super) fn take_cpu_start(&mut self, now: u64) {
        let (u, s) = thread_cpu_ns();
        self.cpu_at_start = Some((u, s, now));
    }

    /// Count the measured reply `reply` (not an error; `len` bytes, at `now`) to `p`.
    #[inline(always)]
    pub(super) fn record(&mut self, p: &Pending, reply: &Reply, len: usize, now: u64) {
        let s = self.stats.of(p.op);
        s.bytes_tx += p.req_len as u64;
        s.bytes_rx += len as u64;
        s.requests += 1;
        match *reply {
            Reply::Hit { .. } => s.hits += 1,
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
    }

    /// Does a hit's value (`value`) match what was written for key `key`? Content only: a
    /// read phase need not know the sizes a populate phase wrote.
    #[inline(never)]
    pub(super) fn verify(&mut self, key: u64, value: &[u8]) {
        if !is_value_of(self.keys.name(key), value) {
            self.stats.verify_failures += 1;
        }
    }

    /// [`record`](Self::record) for an error reply (`text` its message, `status` the binary
    /// protocol's status, `len` its size) to `p` from server `server`.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_error(
        &mut self,
        p: &Pending,
        server: usize,
        text: &[u8],
        status: u16,
        len: usize,
        now: u64,
        proto: Protocol,
    ) {
        let (kind, message) = protocol::error_kind(proto, text, status);
        self.stats.error_kinds.add(&kind, message, p.measured, 1);
        if !p.measured {
            self.stats.warmup_requests += 1;
            return;
        }
        let s = self.stats.of(p.op);
        s.bytes_tx += p.req_len as u64;
        s.bytes_rx += len as u64;
        s.error_replies += 1;
        self.stats.per_server[server].errors += 1;
        if self.stats.error_reply_sample.is_none() {
            let text = String::from_utf8_lossy(text).trim().to_string();
            self.stats.error_reply_sample = Some(format!("{} {}", if p.op == Op::Set { "SET" } else { "GET" }, text));
        }
        // a reply all the same: the measured window (and so every rate) runs to it
        self.stats.last_reply_ns = now;
    }

    pub(super) fn finish(mut self) -> ThreadStats {
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

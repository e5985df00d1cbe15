//! Request scheduling and sending: how many requests a connection may have in flight,
//! when the next is due (closed loop: at once; open loop: its schedule, with a timer),
//! encoding them, handing them to the backend, and accounting for what went out (each
//! request's send time).
use super::conn::{Fault, Pending, State};
use super::Worker;
use crate::config::Protocol;
use crate::protocol;
use std::cmp::Reverse;

impl Worker<'_> {
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

    pub(super) fn check_done(&mut self, i: usize, now: u64) {
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
    pub(super) fn pump(&mut self, i: usize, now: u64) {
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
            // Keep the whole pipeline outstanding, as memtier does: every reply answered since
            // the last send is replaced, all in one send. `pump` runs once per connection per
            // round of reads (`pump_dirty`), after everything that had arrived was read, so a
            // batch answered in several segments is refilled in one write, not one per reply.
            let c = &self.conns[i];
            let mut n = pipeline.saturating_sub(c.inflight.len());
            if matches!(self.end, Some(e) if now >= e) {
                n = 0;
            }
            let measured = now >= self.mstart;
            if let (Some(q), true) = (c.quota, measured) {
                n = n.min(q as usize);
            }
            if n > 0 {
                self.start_requests(i, now, n, measured);
            }
        }
        if let Err(f) = self.flush(i) {
            self.fault(i, f);
        }
    }

    /// Queue one request whose latency origin is `intended` (open loop: its schedule).
    fn queue(&mut self, i: usize, now: u64, intended: u64) {
        let measured = intended >= self.mstart && !matches!(self.end, Some(e) if intended >= e);
        self.start_requests(i, now, 1, measured);
        self.conns[i].inflight.back_mut().expect("a request just queued").intended = intended;
    }

    /// Queue connection `i`'s next `n` requests at `now`, `measured` or not, all encoded
    /// into its output; each one's latency origin is its send (closed loop; `queue` sets an
    /// open loop's).
    fn start_requests(&mut self, i: usize, now: u64, n: usize, measured: bool) {
        // one loop per protocol, each with its encoder inlined
        match self.plan.config.protocol {
            Protocol::MemcacheText => self.start_requests_with(i, now, n, measured, Protocol::MemcacheText),
            Protocol::MemcacheBinary => self.start_requests_with(i, now, n, measured, Protocol::MemcacheBinary),
            Protocol::Redis => self.start_requests_with(i, now, n, measured, Protocol::Redis),
        }
    }

    /// [`start_requests`](Self::start_requests) for the protocol `proto`, a constant in
    /// each of its calls.
    #[inline(always)]
    fn start_requests_with(&mut self, i: usize, now: u64, n: usize, measured: bool, proto: Protocol) {
        let c = &mut self.conns[i];
        if c.inflight.is_empty() {
            c.last_activity = now;
            self.awaiting += 1;
        }
        if let (Some(q), true) = (c.quota.as_mut(), measured) {
            *q -= n as u64;
        }
        self.inflight_total += n;
        c.inflight.reserve(n);
        for _ in 0..n {
            let (op, key, size) = c.workload.next_request();
            let opaque = c.seq;
            c.seq = c.seq.wrapping_add(1);
            let len = protocol::encode(proto, &mut c.wbuf, op, &self.keys, key, size as usize, opaque);
            c.encoded += len as u64;
            c.inflight.push_back(Pending {
                op,
                opaque,
                req_len: len as u32,
                key,
                intended: now,
                sent: 0,
                wend: c.encoded,
                measured,
            });
        }
    }

    /// Send what connection `i` has encoded: now (epoll), or queued for the next submit (io_uring).
    fn flush(&mut self, i: usize) -> Result<(), Fault> {
        if self.uring.is_some() {
            self.uring_send(i)
        } else {
            self.write_out(i)
        }
    }

    /// `n` more bytes of connection `i`'s output went out at `t`: every request they
    /// complete is sent at `t` (closed loop: its latency origin; open loop: late or not).
    pub(super) fn wrote(&mut self, i: usize, n: usize, t: u64) {
        let open_loop = self.plan.open_loop_gap_ns.is_some();
        let late_ns = self.plan.late_ns;
        let c = &mut self.conns[i];
        c.written += n as u64;
        let mut sent = 0;
        for p in c.inflight.range_mut(c.first_unsent..) {
            if p.wend > c.written {
                break;
            }
            p.sent = t;
            if !open_loop {
                p.intended = t;
            } else if p.measured && t.saturating_sub(p.intended) > late_ns {
                self.stats.late += 1;
            }
            sent += 1;
        }
        c.first_unsent += sent;
    }
}

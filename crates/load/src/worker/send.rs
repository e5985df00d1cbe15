//! Request scheduling and sending: how many requests a connection may have in flight,
//! when the next is due (closed loop: at once; open loop: its schedule, with a timer),
//! encoding them, handing them to the backend, and accounting for what went out (each
//! request's send time).
use super::conn::{Fault, Pending, State};
use super::Worker;
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
        let opaque = c.seq;
        c.seq = c.seq.wrapping_add(1);
        let len = protocol::encode(plan.config.protocol, &mut c.wbuf, op, self.keys.name(key), size as usize, opaque);
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
        self.inflight_total += 1;
        self.awaiting += c.inflight.is_empty() as usize;
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
}

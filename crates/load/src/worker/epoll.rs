//! The epoll backend: one mio event loop over the worker's sockets, read() and write() per
//! connection, a timerfd for open-loop sends between milliseconds.
use super::conn::{Fault, State};
use super::{Worker, HOUSEKEEPING_NS, TIMER};
use crate::clock::now_ns;
use crate::rxtime;
use crate::stats::KIND_CONNECTION;
use mio::event::Event;
use std::cmp::Reverse;
use std::io::{self, Write};
use std::os::fd::AsRawFd;

impl Worker<'_> {
    pub(super) fn epoll_loop(&mut self) {
        let mut now = now_ns();
        self.begin(now);
        let mut next_housekeeping = now + HOUSEKEEPING_NS;
        // One clock read a round besides the reads' own: after the reads, which serves the
        // sends they allow and the next round's timers and wait alike (as in the io_uring loop).
        while let Some(wake) = self.prepare_round(now, &mut next_housekeeping) {
            if let (Some(&Reverse((t, _))), Some(tfd)) = (self.timers.peek(), self.timerfd.as_mut()) {
                if t <= wake {
                    let _ = tfd.arm(t);
                }
            }
            // mio rounds the timeout up to whole milliseconds; the timerfd gives open-loop precision
            let timeout = std::time::Duration::from_nanos(wake.saturating_sub(now));
            let spin = self.spinner.limit(self.inflight_total).min(wake.saturating_sub(now));
            self.stats.polls += 1;
            let r =
                if spin > 0 { self.epoll_spin(spin, timeout) } else { self.poll.poll(&mut self.events, Some(timeout)) };
            if let Err(e) = r {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.shared.set_fault(format!("event loop failed: {e}"));
                    break;
                }
            }
            // Read everything that is ready, then look once more (without waiting) for replies
            // that arrived meanwhile, and only then send: a connection's replies often come in
            // several segments, and refilling after each would split its pipeline into small
            // batches (more work for the server per request). Reads stay immediate, so reply
            // timestamps are unchanged.
            let mut dirty = std::mem::take(&mut self.dirty);
            self.drain_events(&mut dirty);
            if !dirty.is_empty() {
                self.stats.polls += 1;
                if self.poll.poll(&mut self.events, Some(std::time::Duration::ZERO)).is_ok() {
                    self.drain_events(&mut dirty);
                }
            }
            now = now_ns();
            self.pump_dirty(&mut dirty, now);
            self.dirty = dirty;
            self.publish();
        }
        self.publish();
    }

    /// Poll without sleeping until something is ready or `limit` ns have passed (`spin`),
    /// then, if nothing came, wait up to `timeout` as usual. Events there at once are no
    /// spin: the round had something to do.
    fn epoll_spin(&mut self, limit: u64, timeout: std::time::Duration) -> io::Result<()> {
        self.poll.poll(&mut self.events, Some(std::time::Duration::ZERO))?;
        if !self.events.is_empty() {
            return Ok(());
        }
        let start = now_ns();
        let (deadline, mut t, mut caught) = (start + limit, start, false);
        while t < deadline {
            self.stats.polls += 1;
            self.poll.poll(&mut self.events, Some(std::time::Duration::ZERO))?;
            t = now_ns();
            if !self.events.is_empty() {
                caught = true;
                break;
            }
        }
        self.spun(caught, t - start);
        if caught {
            return Ok(());
        }
        self.stats.polls += 1;
        self.poll.poll(&mut self.events, Some(timeout.saturating_sub(std::time::Duration::from_nanos(t - start))))
    }

    /// Handle the events of the last poll: read what is readable; note in `dirty` the
    /// connections that may send (they are pumped once, after all reads).
    fn drain_events(&mut self, dirty: &mut Vec<usize>) {
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        ready.extend(
            self.events
                .iter()
                .map(|e: &Event| (e.token().0, e.is_readable() || e.is_read_closed() || e.is_error(), e.is_writable())),
        );
        for &(i, readable, writable) in &ready {
            if i == TIMER.0 {
                if let Some(t) = self.timerfd.as_mut() {
                    t.clear();
                }
                continue;
            }
            if !matches!(self.conns[i].state, State::Running | State::Done) {
                continue;
            }
            if readable {
                if let Err(f) = self.read_ready(i) {
                    self.fault(i, f);
                    continue;
                }
            }
            if readable || writable {
                self.mark_dirty(i, dirty);
            }
        }
        self.ready = ready;
    }

    /// Read what connection `i`'s socket holds and hand it to `received`, timed by the
    /// kernel's receive timestamp where the socket has one (`rxtime`).
    fn read_ready(&mut self, i: usize) -> Result<(), Fault> {
        let fd = self.conns[i].stream.as_ref().expect("socket").as_raw_fd();
        loop {
            self.stats.reads += 1;
            let r = rxtime::recv(fd, &mut self.scratch, &mut self.control);
            match r {
                Ok((0, _)) => return self.closed(i),
                Ok((n, clen)) => {
                    let now = self.rx_clock.arrival(&self.control[..clen], now_ns());
                    let scratch = std::mem::take(&mut self.scratch);
                    let r = self.received(i, &scratch[..n], now);
                    self.scratch = scratch;
                    r?;
                    if n < self.scratch.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.read_failed(i, &e)),
            }
        }
    }

    /// Write connection `i`'s encoded requests until done or the socket is full.
    pub(super) fn write_out(&mut self, i: usize) -> Result<(), Fault> {
        while self.conns[i].wpos < self.conns[i].wbuf.len() {
            let t = now_ns();
            self.stats.writes += 1;
            let c = &mut self.conns[i];
            let r = c.stream.as_mut().expect("socket").write(&c.wbuf[c.wpos..]);
            match r {
                Ok(n) => {
                    self.conns[i].wpos += n;
                    self.wrote(i, n, t);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let name = &self.plan.server_names[self.conns[i].server];
                    return Err(Fault::Broken(KIND_CONNECTION, format!("{name}: sending failed: {e}")));
                }
            }
        }
        let c = &mut self.conns[i];
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
        }
        Ok(())
    }
}

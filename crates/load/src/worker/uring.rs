//! The io_uring backend. Connections are opened as in the epoll backend, then leave epoll.
//! From then on one `io_uring_enter` per round submits every send queued since the last
//! one and waits (until a completion or the next timer); each connection has one
//! multishot receive armed, which fills buffers from the worker's provided buffer ring;
//! its bytes go to the shared `received`, and the buffer goes straight back. Sockets are
//! registered with the ring (connection `i` is fixed file `i`), so that an operation does
//! not look its file up and take a reference to it each time.
//!
//! A connection has at most one send in flight (io_uring does not order two sends on one
//! socket), from `sbuf`; requests encoded meanwhile wait in `wbuf` and go when it
//! completes. Sends use MSG_WAITALL, so a send completes whole or the connection has
//! failed. Sends that complete at once post their completions during the submit, so the
//! wait asks for one completion more than the sends it submits: a round is one system call.
//! A request's send time is taken just before the `io_uring_enter` that submits it.
//!
//! Replies are timed by the kernel's receive timestamps (`rxtime`; the receives are then
//! multishot `recvmsg`, the stamp a control message before the bytes), so the loop need not
//! read a reply the moment it comes to time it right. It uses that to read in batches where
//! the server answers a pipeline in pieces (memcached answers each text GET with a segment
//! of its own): there, waking at every segment made the client sleep and wake (and the
//! server pay for waking it) several times per batch of requests, and send at each the
//! few requests its few replies made room for. When most receives are such pieces
//! (`Piecemeal`), a round that finds nothing to do waits until every connection awaiting
//! replies has some, or `BATCH_WAIT_US`, before it takes what has come (`wait_for`): the
//! client's own timer wakes it, about once per batch. Where each receive brings a whole batch (binary
//! protocol, redis) or a pipeline of 1 or 2, rounds return at the first completion as before.
use super::conn::{Fault, State};
use super::{Worker, HOUSEKEEPING_NS};
use crate::clock::now_ns;
use crate::rxtime;
use crate::stats::KIND_CONNECTION;
use crate::uring::{new_ring, BufRing, BUF_GROUP};
use io_uring::types::{Fd, Fixed, RecvMsgOut, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};
use std::io;
use std::os::fd::AsRawFd;

const RECV: u64 = 1;
const SEND: u64 = 2;
const BUF_SIZE: usize = 16 * 1024;
/// How long the end of a run waits for the kernel to give back every operation.
const DRAIN_NS: u64 = 2_000_000_000;
/// The longest a round with nothing to do waits for more than one completion.
const BATCH_WAIT_US: u32 = 50;
/// Fewer requests in flight than this: no batching (the server could run out of work
/// while the client holds back the replies it has, and with them the next requests).
const BATCH_MIN_INFLIGHT: usize = 32;

/// What a round's `io_uring_enter` waits for, after submitting `sends` sends (which
/// complete during the submit): completions, and the longest it waits for them before it
/// takes fewer (µs, 0: no such wait). `pending`: completions are there already; `awaiting`:
/// connections with requests in flight, `inflight`: their requests; `can_batch`: replies
/// are timed by their arrival and the kernel has a minimum wait.
pub(super) fn wait_for(sends: usize, pending: bool, awaiting: usize, inflight: usize, can_batch: bool) -> (usize, u32) {
    if pending || !can_batch || awaiting < 2 || inflight < BATCH_MIN_INFLIGHT {
        (sends + 1, 0)
    } else {
        (sends + awaiting, BATCH_WAIT_US)
    }
}

/// Whether receives come in pieces: an average over the last ~16 receives of those that
/// completed less than half a pipeline's worth of replies (closed loop, pipeline ≥ 3),
/// with hysteresis so that batched waits — which make receives larger —
/// do not turn themselves off at once.
#[derive(Debug, Default)]
pub(super) struct Piecemeal {
    share: f32,
    on: bool,
}

impl Piecemeal {
    const ON: f32 = 0.5;
    const OFF: f32 = 0.15;

    /// One more receive, a piece or not; returns whether waits should batch.
    pub(super) fn note(&mut self, piece: bool) -> bool {
        self.share += (piece as u32 as f32 - self.share) / 16.0;
        self.on = if self.on { self.share > Self::OFF } else { self.share > Self::ON };
        self.on
    }

    pub(super) fn on(&self) -> bool {
        self.on
    }
}

pub(crate) struct UringIo {
    // Field order is drop order: the ring goes before the buffers it points into.
    ring: IoUring,
    bufs: BufRing,
    /// Connections whose send was queued since the last submit (stamped at it).
    unstamped: Vec<usize>,
    /// Connections whose multishot receive ended and must be armed again.
    rearm: Vec<usize>,
    cqes: Vec<(u64, i32, u32)>,
    /// Operations the kernel holds (armed receives, sends in flight).
    ops: usize,
    /// Connection `i`'s socket is registered with the ring as fixed file `i` (no lookup
    /// of the file per operation); false where registering failed: plain descriptors.
    fixed: bool,
    /// Receives are `recvmsg` with room for a receive timestamp (`msghdr` the template the
    /// kernel reads the room from); false: plain receives, timed when the loop reads them.
    stamped: bool,
    msghdr: Box<libc::msghdr>,
    /// The kernel has a minimum wait (`IORING_FEAT_MIN_TIMEOUT`, Linux 6.12) and wakes a
    /// waiting ring only once enough receives are ready (deferred task running): rounds
    /// may wait for batches (`wait_for`).
    can_batch: bool,
    piecemeal: Piecemeal,
    /// Deferred task running: the ring's `IORING_SQ_TASKRUN` flag says a completion is
    /// ready to post, which a spin before sleeping watches (without it: no spin).
    deferred: bool,
}

impl UringIo {
    /// A ring and a buffer ring for a worker of `conns` connections.
    pub(crate) fn new(conns: usize) -> io::Result<UringIo> {
        let cq = (4 * conns).next_power_of_two().clamp(4096, 65536) as u32;
        let (ring, deferred) = new_ring(1024, cq)?;
        // two buffers a connection: the kernel takes them in turn, and each receive writes
        // the start of the next, so fewer buffers keep those starts in the CPU's cache (with
        // 64 at 4 connections, copying replies to them cost a third more in the kernel)
        let count = (2 * conns).next_power_of_two().clamp(8, 1024) as u16;
        let bufs = BufRing::new(&ring, count, BUF_SIZE)?;
        // SAFETY: msghdr is plain data; only its name and control lengths are read.
        let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msghdr.msg_controllen = rxtime::cmsg_space() as _;
        let can_batch = deferred && ring.params().is_feature_min_timeout();
        Ok(UringIo {
            ring,
            bufs,
            unstamped: Vec::new(),
            rearm: Vec::new(),
            cqes: Vec::with_capacity(1024),
            ops: 0,
            fixed: false,
            stamped: false,
            msghdr,
            can_batch,
            piecemeal: Piecemeal::default(),
            deferred,
        })
    }
}

fn user_data(i: usize, kind: u64) -> u64 {
    (i as u64) << 2 | kind
}

impl Worker<'_> {
    fn uring(&mut self) -> &mut UringIo {
        self.uring.as_mut().expect("io_uring backend")
    }

    pub(super) fn uring_loop(&mut self) {
        if let Err(e) = self.uring_take_over() {
            self.shared.set_fault(format!("io_uring: {e}"));
            return;
        }
        let mut now = now_ns();
        self.begin(now);
        let mut next_housekeeping = now + HOUSEKEEPING_NS;
        let mut dirty = std::mem::take(&mut self.dirty);
        // Two clock reads a round: just before the submit (the sends' time, in `uring_enter`)
        // and just after the wait, which serves the completions, the sends they allow and the
        // next round's timers alike (they are microseconds apart).
        while let Some(wake) = self.prepare_round(now, &mut next_housekeeping) {
            self.stats.polls += 1;
            if let Err(e) = self.uring_enter(wake, true) {
                self.shared.set_fault(format!("io_uring event loop failed: {e}"));
                break;
            }
            now = now_ns();
            self.uring_complete(&mut dirty, now);
            self.pump_dirty(&mut dirty, now);
            self.publish();
        }
        self.dirty = dirty;
        self.publish();
        self.uring_close_all();
    }

    /// Move every connection from epoll to the ring: its socket registered as a fixed
    /// file (where the kernel lets us), a multishot receive for each.
    fn uring_take_over(&mut self) -> io::Result<()> {
        let fds: Vec<i32> = self.conns.iter().map(|c| c.stream.as_ref().map_or(-1, |s| s.as_raw_fd())).collect();
        let sub = self.uring().ring.submitter();
        self.uring().fixed = !fds.is_empty() && sub.register_files(&fds).is_ok();
        let stamped = self.rx_stamps;
        let u = self.uring();
        u.stamped = stamped;
        u.can_batch &= stamped;
        for i in 0..self.conns.len() {
            if let Some(s) = self.conns[i].stream.as_mut() {
                self.poll.registry().deregister(s)?;
                self.uring_arm(i)?;
            }
        }
        Ok(())
    }

    /// Connection `i` failed: its slot in the ring's file table lets go of the socket (the
    /// operations still on it hold their own reference until they complete).
    pub(super) fn uring_unregister(&mut self, i: usize) {
        if self.uring().fixed {
            let _ = self.uring().ring.submitter().register_files_update(i as u32, &[-1]);
        }
    }

    fn uring_arm(&mut self, i: usize) -> io::Result<()> {
        let fd = self.conns[i].stream.as_ref().expect("socket").as_raw_fd();
        let u = self.uring();
        let msg: *const libc::msghdr = &*u.msghdr;
        let e = match (u.fixed, u.stamped) {
            (true, true) => opcode::RecvMsgMulti::new(Fixed(i as u32), msg, BUF_GROUP).build(),
            (false, true) => opcode::RecvMsgMulti::new(Fd(fd), msg, BUF_GROUP).build(),
            (true, false) => opcode::RecvMulti::new(Fixed(i as u32), BUF_GROUP).build(),
            (false, false) => opcode::RecvMulti::new(Fd(fd), BUF_GROUP).build(),
        };
        let e = e.user_data(user_data(i, RECV));
        self.uring_push(&e)?;
        self.uring().ops += 1;
        Ok(())
    }

    /// Queue `e`, submitting what is queued first when the submission queue is full.
    fn uring_push(&mut self, e: &squeue::Entry) -> io::Result<()> {
        // SAFETY: every buffer an entry points to (a connection's `sbuf`, the buffer ring)
        // stays in place until its completion has been reaped.
        while unsafe { self.uring().ring.submission().push(e) }.is_err() {
            self.stamp_sends();
            self.uring().ring.submit()?;
        }
        Ok(())
    }

    /// Queue connection `i`'s encoded requests unless a send of it may be in flight.
    pub(super) fn uring_send(&mut self, i: usize) -> Result<(), Fault> {
        if self.conns[i].wbuf.is_empty() || self.conns[i].sending {
            return Ok(());
        }
        let fixed = self.uring().fixed;
        let c = &mut self.conns[i];
        std::mem::swap(&mut c.wbuf, &mut c.sbuf);
        c.wbuf.clear();
        c.sending = true;
        let (buf, len) = (c.sbuf.as_ptr(), c.sbuf.len() as u32);
        let e = if fixed {
            opcode::Send::new(Fixed(i as u32), buf, len)
        } else {
            opcode::Send::new(Fd(c.stream.as_ref().expect("socket").as_raw_fd()), buf, len)
        };
        let e = e.flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL).build().user_data(user_data(i, SEND));
        self.stats.writes += 1;
        self.uring_push(&e).map_err(|e| Fault::Broken(KIND_CONNECTION, format!("io_uring: {e}")))?;
        let u = self.uring();
        u.unstamped.push(i);
        u.ops += 1;
        Ok(())
    }

    /// The sends about to be submitted leave now: their requests' send time.
    fn stamp_sends(&mut self) {
        self.stamp_sends_at(now_ns());
    }

    /// The sends about to be submitted leave at `t`.
    fn stamp_sends_at(&mut self, t: u64) {
        let queued = std::mem::take(&mut self.uring().unstamped);
        for &i in &queued {
            let n = self.conns[i].sbuf.len();
            self.wrote(i, n, t);
        }
        let mut queued = queued;
        queued.clear();
        self.uring().unstamped = queued;
    }

    /// Submit what is queued and wait for completions (`wait_for`), at most until `wake`;
    /// with `spin`, spin first where the spin policy says (`spin`).
    fn uring_enter(&mut self, wake: u64, spin: bool) -> io::Result<()> {
        // sends that complete at once post their completions during the submit: wait for
        // more (replies), not for them
        let sends = self.uring().unstamped.len();
        let now = now_ns();
        self.stamp_sends_at(now);
        let wait = wake.saturating_sub(now);
        let (awaiting, inflight) = (self.awaiting, self.inflight_total);
        let u = self.uring();
        let r = if wait == 0 {
            u.ring.submit()
        } else {
            let pending = !u.ring.completion().is_empty() || u.ring.submission().taskrun();
            let batch = u.can_batch && u.piecemeal.on();
            let (want, min_wait_us) = wait_for(sends, pending, awaiting, inflight, batch);
            if spin && !pending && min_wait_us == 0 && u.deferred {
                let limit = self.spinner.limit(inflight).min(wait);
                if limit > 0 {
                    self.uring_spin(limit)?;
                }
            }
            let u = self.uring();
            let ts = Timespec::new().sec(wait / 1_000_000_000).nsec((wait % 1_000_000_000) as u32);
            let mut args = SubmitArgs::new().timespec(&ts);
            // (with the run's next deadline sooner, the deadline ends the wait anyway)
            if min_wait_us > 0 && wait > min_wait_us as u64 * 1000 {
                args = args.min_wait_usec(min_wait_us);
            }
            u.ring.submitter().submit_with_args(want, &args)
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Submit the queued sends, then spin up to `limit` ns until the kernel has a completion
    /// to post (`spin`); the wait that follows takes it without sleeping.
    fn uring_spin(&mut self, limit: u64) -> io::Result<()> {
        let u = self.uring();
        u.ring.submit()?;
        let start = now_ns();
        let (deadline, mut t, mut caught) = (start + limit, start, false);
        while t < deadline {
            if u.ring.submission().taskrun() {
                caught = true;
                break;
            }
            std::hint::spin_loop();
            t = now_ns();
        }
        self.spun(caught, t - start);
        Ok(())
    }

    /// Handle every completion there is (reaped at `now`); note in `dirty` the connections
    /// that received.
    fn uring_complete(&mut self, dirty: &mut Vec<usize>, now: u64) {
        let mut cqes = std::mem::take(&mut self.uring().cqes);
        cqes.clear();
        cqes.extend(self.uring().ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for &(ud, res, flags) in &cqes {
            let i = (ud >> 2) as usize;
            match ud & 3 {
                RECV => self.on_recv(i, res, flags, now, dirty),
                _ => self.on_send(i, res),
            }
        }
        self.uring().cqes = cqes;
        self.uring().bufs.publish();
        for i in std::mem::take(&mut self.uring().rearm) {
            if matches!(self.conns[i].state, State::Running | State::Done) {
                if let Err(e) = self.uring_arm(i) {
                    self.fault(i, Fault::Broken(KIND_CONNECTION, format!("io_uring: {e}")));
                }
            }
        }
    }

    fn on_recv(&mut self, i: usize, res: i32, flags: u32, now: u64, dirty: &mut Vec<usize>) {
        let alive = matches!(self.conns[i].state, State::Running | State::Done);
        // a recvmsg's result counts its header too: no payload is the end of the stream
        let res = if res > 0 && self.uring().stamped && self.payload_len(flags, res as usize) == 0 { 0 } else { res };
        if !cqueue::more(flags) {
            self.uring().ops -= 1;
            // ended without an error (out of buffers, a full completion queue): arm it again
            if alive && (res > 0 || res == -libc::ENOBUFS) {
                self.uring().rearm.push(i);
            }
        }
        let before = self.conns[i].replies;
        let outcome = if res > 0 {
            let bid = cqueue::buffer_select(flags).expect("a provided buffer");
            let r = if alive { self.received_in(i, bid, res as usize, now) } else { Ok(()) };
            self.uring().bufs.recycle(bid);
            r
        } else if res == 0 {
            if let Some(bid) = cqueue::buffer_select(flags) {
                self.uring().bufs.recycle(bid);
            }
            if alive {
                self.closed(i)
            } else {
                Ok(())
            }
        } else if res == -libc::ENOBUFS || !alive {
            Ok(())
        } else {
            Err(self.read_failed(i, &io::Error::from_raw_os_error(-res)))
        };
        match outcome {
            Err(f) => self.fault(i, f),
            Ok(()) if res > 0 => {
                let answered = self.conns[i].replies - before;
                self.note_receive(i, answered);
                self.mark_dirty(i, dirty)
            }
            Ok(()) => {}
        }
    }

    /// Connection `i` received, completing `answered` replies: was it a piece, less than
    /// half of its pipeline's worth (closed loop, a pipeline of 3 or more)?
    fn note_receive(&mut self, i: usize, answered: u64) {
        let p = self.plan.config.pipeline as u64;
        if p < 3 || self.conns[i].schedule.is_some() {
            return;
        }
        self.uring().piecemeal.note(answered * 2 < p);
    }

    /// The payload bytes of a `recvmsg` completion with `flags` and result `n`.
    fn payload_len(&mut self, flags: u32, n: usize) -> usize {
        let Some(bid) = cqueue::buffer_select(flags) else { return 0 };
        let u = self.uring();
        let data = BufRing::data(&u.bufs.mem, u.bufs.size(), bid, n);
        RecvMsgOut::parse(data, &u.msghdr).map_or(0, |out| out.payload_data().len())
    }

    /// Hand buffer `bid`'s first `n` bytes to connection `i`'s reply parser (with
    /// `recvmsg`: the payload after the header and the receive timestamp, which times it).
    fn received_in(&mut self, i: usize, bid: u16, n: usize, now: u64) -> Result<(), Fault> {
        self.stats.reads += 1;
        // moving the Vec out leaves its heap block (and so the kernel's view of it) in place
        let mem = std::mem::take(&mut self.uring().bufs.mem);
        let size = self.uring().bufs.size();
        let data = BufRing::data(&mem, size, bid, n);
        let r = if self.uring().stamped {
            match RecvMsgOut::parse(data, &self.uring().msghdr) {
                Ok(out) => {
                    let at = self.rx_clock.arrival(out.control_data(), now);
                    self.received(i, out.payload_data(), at)
                }
                Err(()) => Err(self.read_failed(i, &io::Error::other("a receive shorter than its header"))),
            }
        } else {
            self.received(i, data, now)
        };
        self.uring().bufs.mem = mem;
        r
    }

    /// A send completed: whole (then the next may go), or the connection failed.
    fn on_send(&mut self, i: usize, res: i32) {
        self.uring().ops -= 1;
        let c = &mut self.conns[i];
        c.sending = false;
        let len = c.sbuf.len();
        c.sbuf.clear();
        if !matches!(c.state, State::Running | State::Done) {
            return;
        }
        if res >= 0 && res as usize == len {
            if let Err(f) = self.uring_send(i) {
                self.fault(i, f);
            }
            return;
        }
        let why =
            if res < 0 { io::Error::from_raw_os_error(-res).to_string() } else { format!("{res} of {len} bytes sent") };
        let msg = format!("{}: sending failed: {why}", self.plan.server_names[c.server]);
        self.fault(i, Fault::Broken(KIND_CONNECTION, msg));
    }

    /// The end: shut every socket (which completes its receive and any send), then wait
    /// until the kernel has given back every operation, so that no buffer it writes into or
    /// reads from is freed under it. Should that take too long, the buffers are leaked.
    fn uring_close_all(&mut self) {
        for c in &self.conns {
            if let Some(s) = c.stream.as_ref() {
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
        let deadline = now_ns() + DRAIN_NS;
        while self.uring().ops > 0 && now_ns() < deadline {
            let _ = self.uring_enter(now_ns() + 100_000_000, false);
            let cqes: Vec<(u64, u32)> = self.uring().ring.completion().map(|c| (c.user_data(), c.flags())).collect();
            for (ud, flags) in cqes {
                let u = self.uring();
                if ud & 3 == SEND || !cqueue::more(flags) {
                    u.ops -= 1;
                }
                if let Some(bid) = cqueue::buffer_select(flags) {
                    u.bufs.recycle(bid);
                }
            }
        }
        if self.uring().ops > 0 {
            std::mem::forget(self.uring.take());
            for c in &mut self.conns {
                std::mem::forget(std::mem::take(&mut c.sbuf));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{wait_for, Piecemeal, BATCH_MIN_INFLIGHT, BATCH_WAIT_US};

    #[test]
    fn waits_batch_only_while_most_receives_are_pieces() {
        let mut p = Piecemeal::default();
        // whole batches (binary protocol, redis): never
        assert!(!(0..100).any(|_| p.note(false)));
        // memcached's text GETs at pipeline 8, a segment per reply: most receives are pieces
        let on_after = (1..100).find(|_| p.note(true)).unwrap();
        assert!((10..20).contains(&on_after), "{on_after}");
        // batched, receives are larger, some still pieces: stays on
        assert!((0..100).all(|k| p.note(k % 3 == 0)));
        // whole batches again: off
        assert!(!(0..100).all(|_| p.note(false)));
        assert!(!p.on());
    }

    #[test]
    fn a_round_with_nothing_to_do_waits_for_a_batch_not_for_one_segment() {
        // 50 connections × pipeline 8 in flight, 3 sends just submitted, nothing there yet:
        // wait until every connection has something, at most BATCH_WAIT_US
        assert_eq!(wait_for(3, false, 50, 400, true), (3 + 50, BATCH_WAIT_US));
        // completions already there: take them at once
        assert_eq!(wait_for(3, true, 50, 400, true), (4, 0));
        // one connection, or too few requests in flight to keep the server busy meanwhile: one reply
        assert_eq!(wait_for(0, false, 1, 400, true), (1, 0));
        assert_eq!(wait_for(0, false, 4, BATCH_MIN_INFLIGHT - 1, true), (1, 0));
        assert_eq!(wait_for(0, false, 4, BATCH_MIN_INFLIGHT, true), (4, BATCH_WAIT_US));
        // replies not timed by their arrival, or no minimum wait in this kernel: never batch
        assert_eq!(wait_for(2, false, 50, 400, false), (3, 0));
    }
}

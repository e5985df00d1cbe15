//! Receiving, whichever backend read the bytes: splitting them into complete replies (a
//! partial one is kept for the next read), matching them to the requests in flight, in
//! order; and what an end of file or a failed read means.
use super::conn::{Fault, State};
use super::Worker;
use crate::config::Protocol;
use crate::keys::Op;
use crate::protocol::{self, Parsed, Reply};
use crate::spare::Decimal;
use crate::stats::{KIND_CLOSED, KIND_CONNECTION, KIND_INVALID};
use std::io;

impl Worker<'_> {
    /// The server closed connection `i` (a read gave end of file): harmless once its work
    /// is done, else a fault.
    pub(super) fn closed(&self, i: usize) -> Result<(), Fault> {
        let c = &self.conns[i];
        if c.state == State::Done && c.inflight.is_empty() {
            return Ok(());
        }
        Err(Fault::Broken(
            KIND_CLOSED,
            format!(
                "{} closed the connection ({} replies received on it, {} request(s) in flight)",
                self.plan.server_names[c.server],
                c.replies,
                c.inflight.len()
            ),
        ))
    }

    /// Receiving on connection `i` failed with `e`.
    pub(super) fn read_failed(&self, i: usize, e: &io::Error) -> Fault {
        let c = &self.conns[i];
        Fault::Broken(
            KIND_CONNECTION,
            format!(
                "{}: connection failed: {e} ({} replies received on it, {} request(s) in flight)",
                self.plan.server_names[c.server],
                c.replies,
                c.inflight.len()
            ),
        )
    }

    /// Consume bytes that connection `i` received at `now` (after any partial reply it
    /// holds): every complete reply is matched and recorded, a partial one is kept.
    pub(super) fn received(&mut self, i: usize, data: &[u8], now: u64) -> Result<(), Fault> {
        let mut held = std::mem::take(&mut self.conns[i].rbuf);
        let r = if held.is_empty() {
            self.consume(i, data, now).map(|pos| held.extend_from_slice(&data[pos..]))
        } else {
            held.extend_from_slice(data);
            self.consume(i, &held, now).map(|pos| {
                held.drain(..pos);
            })
        };
        self.conns[i].rbuf = held;
        r
    }

    /// Parse and record complete replies in `data`; returns the bytes consumed.
    fn consume(&mut self, i: usize, data: &[u8], now: u64) -> Result<usize, Fault> {
        // one loop per protocol, each with its parser inlined: the protocol is chosen once
        // per read, not once per reply
        match self.plan.config.protocol {
            Protocol::MemcacheText => self.consume_with(i, data, now, Protocol::MemcacheText),
            Protocol::MemcacheBinary => self.consume_with(i, data, now, Protocol::MemcacheBinary),
            Protocol::Redis => self.consume_with(i, data, now, Protocol::Redis),
        }
    }

    /// [`consume`](Self::consume) for the protocol `proto`, a constant in each of its calls.
    #[inline(always)]
    fn consume_with(&mut self, i: usize, data: &[u8], now: u64, proto: Protocol) -> Result<usize, Fault> {
        let verify = self.plan.config.verify;
        let server = self.conns[i].server;
        let mut pos = 0;
        // what a read's replies change beyond their statistics is counted here and
        // applied once per read (`answered`)
        let (mut answered, mut measured) = (0, 0);
        let bad = loop {
            if pos == data.len() {
                break None;
            }
            let c = &mut self.conns[i];
            let Some(&p) = c.inflight.front() else {
                break Some(format!("bytes with no request outstanding: {}", protocol::excerpt(&data[pos..])));
            };
            if p.sent == 0 {
                break Some(format!("a reply before the request was sent: {}", protocol::excerpt(&data[pos..])));
            }
            // a text GET's reply echoes the key's name: its length spares a search for its end
            let key_len =
                if proto == Protocol::MemcacheText && p.op == Op::Get { self.keys.len(Decimal::of(p.key)) } else { 0 };
            match protocol::parse(proto, &data[pos..], p.op, p.opaque, key_len) {
                Parsed::Incomplete => break None,
                Parsed::Invalid(msg) => break Some(msg),
                Parsed::Complete { len, reply } => {
                    c.inflight.pop_front();
                    answered += 1;
                    let bytes = &data[pos..pos + len];
                    match reply {
                        Reply::Error { start, end, status } => {
                            self.record_error(&p, server, &bytes[start..end], status, len, now, proto)
                        }
                        _ if !p.measured => self.stats.warmup_requests += 1,
                        _ => {
                            if let (true, Reply::Hit { start, end }) = (verify, &reply) {
                                self.verify(p.key, &bytes[*start..*end]);
                            }
                            self.record(&p, &reply, len, now);
                            measured += 1;
                        }
                    }
                    pos += len;
                }
            }
        };
        self.answered(i, answered, measured, now);
        match bad {
            None => Ok(pos),
            Some(msg) => Err(self.garbage(i, msg)),
        }
    }

    /// Connection `i` got `n` replies at `now`, `measured` of them measured and not
    /// errors: the counts that are not per command.
    #[inline(always)]
    fn answered(&mut self, i: usize, n: usize, measured: u64, now: u64) {
        if n == 0 {
            return;
        }
        let c = &mut self.conns[i];
        c.replies += n as u64;
        c.last_activity = now;
        c.first_unsent -= n;
        self.done_count += n as u64;
        self.inflight_total -= n;
        self.awaiting -= c.inflight.is_empty() as usize;
        if measured > 0 {
            self.stats.per_server[c.server].requests += measured;
            self.stats.last_reply_ns = now;
        }
    }

    fn garbage(&self, i: usize, msg: String) -> Fault {
        let c = &self.conns[i];
        Fault::Broken(
            KIND_INVALID,
            format!(
                "{} sent an invalid {} reply after {} good ones: {msg}",
                self.plan.server_names[c.server],
                self.plan.config.protocol.name(),
                c.replies
            ),
        )
    }
}

//! Receiving, whichever backend read the bytes: splitting them into complete replies (a
//! partial one is kept for the next read), matching them to the requests in flight, in
//! order; and what an end of file or a failed read means.
use super::conn::{Fault, State};
use super::Worker;
use crate::config::Protocol;
use crate::protocol::{self, Parsed};
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
        let mut pos = 0;
        while pos < data.len() {
            let Some(&p) = self.conns[i].inflight.front() else {
                return Err(
                    self.garbage(i, format!("bytes with no request outstanding: {}", protocol::excerpt(&data[pos..])))
                );
            };
            if p.sent == 0 {
                return Err(self
                    .garbage(i, format!("a reply before the request was sent: {}", protocol::excerpt(&data[pos..]))));
            }
            match protocol::parse(proto, &data[pos..], p.op, p.opaque) {
                Parsed::Incomplete => break,
                Parsed::Invalid(msg) => return Err(self.garbage(i, msg)),
                Parsed::Complete { len, reply } => {
                    self.record(i, &p, &reply, &data[pos..pos + len], now, proto);
                    let c = &mut self.conns[i];
                    c.inflight.pop_front();
                    c.first_unsent -= 1;
                    self.inflight_total -= 1;
                    self.awaiting -= c.inflight.is_empty() as usize;
                    pos += len;
                }
            }
        }
        Ok(pos)
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

//! Receiving: reading what a connection's socket holds, splitting it into complete
//! replies (a partial one is kept for the next read) and matching them to the requests
//! in flight, in order.
use super::conn::{Fault, State};
use super::Worker;
use crate::clock::now_ns;
use crate::protocol::{self, Parsed};
use crate::stats::{KIND_CLOSED, KIND_CONNECTION, KIND_INVALID};
use std::io::{self, Read};

impl Worker<'_> {
    pub(super) fn read_ready(&mut self, i: usize) -> Result<(), Fault> {
        loop {
            self.stats.reads += 1;
            let r = self.conns[i].stream.as_mut().expect("socket").read(&mut self.scratch);
            match r {
                Ok(0) => {
                    let c = &self.conns[i];
                    if c.state == State::Done && c.inflight.is_empty() {
                        return Ok(()); // closed after our work was done: harmless
                    }
                    return Err(Fault::Broken(
                        KIND_CLOSED,
                        format!(
                            "{} closed the connection ({} replies received on it, {} request(s) in flight)",
                            self.plan.server_names[c.server],
                            c.replies,
                            c.inflight.len()
                        ),
                    ));
                }
                Ok(n) => {
                    let now = now_ns();
                    self.process(i, n, now)?;
                    if n < self.scratch.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let c = &self.conns[i];
                    return Err(Fault::Broken(
                        KIND_CONNECTION,
                        format!(
                            "{}: connection failed: {e} ({} replies received on it, {} request(s) in flight)",
                            self.plan.server_names[c.server],
                            c.replies,
                            c.inflight.len()
                        ),
                    ));
                }
            }
        }
    }

    /// Consume `n` new bytes in `scratch` (after any buffered partial reply).
    fn process(&mut self, i: usize, n: usize, now: u64) -> Result<(), Fault> {
        let mut held = std::mem::take(&mut self.conns[i].rbuf);
        let from_held = !held.is_empty();
        if from_held {
            held.extend_from_slice(&self.scratch[..n]);
        }
        let scratch = std::mem::take(&mut self.scratch);
        let data: &[u8] = if from_held { &held } else { &scratch[..n] };
        let result = self.consume(i, data, now);
        let pos = match result {
            Ok(p) => p,
            Err(f) => {
                self.scratch = scratch;
                return Err(f);
            }
        };
        if from_held {
            held.drain(..pos);
        } else {
            held.extend_from_slice(&scratch[pos..n]);
        }
        self.scratch = scratch;
        self.conns[i].rbuf = held;
        Ok(())
    }

    /// Parse and record complete replies in `data`; returns the bytes consumed.
    fn consume(&mut self, i: usize, data: &[u8], now: u64) -> Result<usize, Fault> {
        let proto = self.plan.config.protocol;
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

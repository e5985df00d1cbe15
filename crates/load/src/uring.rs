//! io_uring plumbing for the workers' io_uring backend: whether this kernel (and any
//! seccomp filter around us) allows what the backend needs, ring setup, and a provided
//! buffer ring that multishot receives fill.
//!
//! The backend needs: `io_uring_setup`, the SEND and RECV opcodes (checked with the
//! kernel's opcode probe), timeouts on the wait (`IORING_FEAT_EXT_ARG`, 5.11), no dropped
//! completions (`IORING_FEAT_NODROP`), provided buffer rings (5.19) and multishot receive
//! (6.0). Flags such as multishot cannot be probed, so `available` tries them once on a
//! socket pair.
use io_uring::types::{BufRingEntry, Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, IoUring, Probe};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::OnceLock;

/// The buffer group of a worker's provided buffer ring (one ring per io_uring).
pub const BUF_GROUP: u16 = 0;

/// Whether the io_uring backend can run here; Err says why not. Probed once per process.
pub fn available() -> Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    let (ring, _) = new_ring(8, 16).map_err(|e| format!("io_uring_setup failed: {e}"))?;
    let mut p = Probe::new();
    ring.submitter().register_probe(&mut p).map_err(|e| format!("cannot probe io_uring opcodes: {e}"))?;
    for (code, name) in
        [(opcode::Send::CODE, "SEND"), (opcode::RecvMulti::CODE, "RECV"), (opcode::RecvMsgMulti::CODE, "RECVMSG")]
    {
        if !p.is_supported(code) {
            return Err(format!("the kernel's io_uring lacks the {name} operation"));
        }
    }
    let f = ring.params();
    if !f.is_feature_ext_arg() || !f.is_feature_nodrop() || !f.is_feature_skip_cqe_on_success() {
        return Err(
            "the kernel's io_uring lacks wait timeouts, no-drop or skipped completions (Linux ≥ 5.17 needed)".into()
        );
    }
    let mut ring = ring;
    let mut bufs = BufRing::new(&ring, 2, 64).map_err(|e| format!("cannot register a provided buffer ring: {e}"))?;
    let r = try_multishot(&mut ring, &mut bufs);
    drop(ring);
    drop(bufs);
    r
}

/// Arm a multishot receive on one end of a socket pair, write a byte to the other, and
/// check that the receive delivers it in a provided buffer and stays armed.
fn try_multishot(ring: &mut IoUring, bufs: &mut BufRing) -> Result<(), String> {
    let mut fds = [0; 2];
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(format!("socketpair: {}", io::Error::last_os_error()));
    }
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let recv = opcode::RecvMulti::new(Fd(a.as_raw_fd()), BUF_GROUP).build().user_data(1);
    unsafe { ring.submission().push(&recv) }.map_err(|_| "io_uring submission queue full".to_string())?;
    let sent = unsafe { libc::write(b.as_raw_fd(), b"x".as_ptr().cast(), 1) };
    if sent != 1 {
        return Err(format!("socketpair write: {}", io::Error::last_os_error()));
    }
    let ts = Timespec::new().sec(1);
    ring.submitter()
        .submit_with_args(1, &SubmitArgs::new().timespec(&ts))
        .map_err(|e| format!("io_uring_enter: {e}"))?;
    let cqe = ring.completion().next().ok_or("no io_uring completion within 1 s")?;
    let flags = cqe.flags();
    let ok = cqe.result() == 1 && cqueue::buffer_select(flags).is_some() && cqueue::more(flags);
    // end the receive before the ring (and the buffers) go: shutdown completes it
    unsafe { libc::shutdown(a.as_raw_fd(), libc::SHUT_RDWR) };
    let _ = ring.submitter().submit_with_args(1, &SubmitArgs::new().timespec(&ts));
    ring.completion().for_each(drop);
    if let Some(bid) = cqueue::buffer_select(flags) {
        bufs.recycle(bid);
    }
    if ok {
        Ok(())
    } else {
        Err(format!("multishot receive into provided buffers does not work here (result {})", cqe.result()))
    }
}

/// A ring of `entries` submission slots and at least `cq` completion slots, set up for
/// one thread: deferred task running (completions are made only when the thread asks for
/// them, and a waiting thread is woken only once enough are ready) and the flag saying that
/// some are ready, where the kernel has them (Linux 6.1). Returns whether it has.
pub fn new_ring(entries: u32, cq: u32) -> io::Result<(IoUring, bool)> {
    let modern = IoUring::builder()
        .setup_cqsize(cq)
        .setup_clamp()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_taskrun_flag()
        .build(entries);
    match modern {
        Ok(r) => Ok((r, true)),
        Err(_) => Ok((IoUring::builder().setup_cqsize(cq).setup_clamp().build(entries)?, false)),
    }
}

/// Buffers the kernel picks from for multishot receives: `count` buffers of `size` bytes,
/// and the ring through which they are handed (back) to the kernel.
pub struct BufRing {
    ring: *mut BufRingEntry,
    ring_bytes: usize,
    mask: u16,
    tail: u16,
    size: usize,
    /// The buffers, back to back; buffer `bid` is `mem[bid * size ..][.. size]`. The heap
    /// block never moves (the kernel writes into it), even when the Vec itself is moved.
    pub mem: Vec<u8>,
}

impl BufRing {
    /// Register `count` (a power of two) buffers of `size` bytes with `ring` as group `BUF_GROUP`.
    pub fn new(ring: &IoUring, count: u16, size: usize) -> io::Result<BufRing> {
        let ring_bytes = count as usize * std::mem::size_of::<BufRingEntry>();
        // page-aligned, as the kernel wants
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut b = BufRing {
            ring: p.cast(),
            ring_bytes,
            mask: count - 1,
            tail: 0,
            size,
            mem: vec![0u8; count as usize * size],
        };
        // SAFETY: the ring memory is ours until `drop`, which runs after the io_uring is gone.
        unsafe { ring.submitter().register_buf_ring_with_flags(p as u64, count, BUF_GROUP, 0)? };
        for bid in 0..count {
            b.recycle(bid);
        }
        b.publish();
        Ok(b)
    }

    /// Buffer `bid`'s first `n` bytes.
    pub fn data(mem: &[u8], size: usize, bid: u16, n: usize) -> &[u8] {
        &mem[bid as usize * size..][..n]
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Give buffer `bid` back (seen by the kernel after `publish`).
    pub fn recycle(&mut self, bid: u16) {
        let addr = self.mem.as_ptr() as u64 + (bid as usize * self.size) as u64;
        // SAFETY: the slot index is masked into the ring, which the kernel reads only up to the tail.
        let e = unsafe { &mut *self.ring.add((self.tail & self.mask) as usize) };
        e.set_addr(addr);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Make the recycled buffers visible to the kernel.
    pub fn publish(&self) {
        // SAFETY: the tail field of the ring's first entry, shared with the kernel.
        let tail = unsafe { &*(BufRingEntry::tail(self.ring).cast::<AtomicU16>()) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ring.cast(), self.ring_bytes) };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn probe_answers_either_way() {
        // Where io_uring is allowed the probe passes; where not, it says why.
        match super::available() {
            Ok(()) => {}
            Err(m) => assert!(!m.is_empty()),
        }
    }
}

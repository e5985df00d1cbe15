//! The kernel's receive timestamps: when the bytes a read returns reached the socket.
//!
//! A reply's time is when its last bytes arrived, not when the event loop got round to
//! reading them: the loop may then wait to read many replies in one go (fewer wake-ups for
//! the client and for the server that would wake it) without the latencies it measures
//! growing by that wait. With `SO_TIMESTAMPNS_NEW` set on a socket, every read returns, as a
//! control message, the arrival time (CLOCK_REALTIME) of the last segment it consumed; a
//! reply completed by that read arrived at that time or earlier. `Clock` turns it into
//! CLOCK_MONOTONIC, the clock of every other timestamp here. Sockets or kernels without
//! the option (Linux < 5.1), and reads that carry no stamp, fall back to the time of the read.
use crate::clock::now_ns;
use std::io;
use std::os::fd::RawFd;

/// `SO_TIMESTAMPNS_NEW` (asm-generic and MIPS socket.h): a `__kernel_timespec` whatever the
/// width of `time_t`.
const SO_TIMESTAMPNS_NEW: libc::c_int = 64;
/// The control message's payload: `struct __kernel_timespec { s64 tv_sec; s64 tv_nsec; }`.
const STAMP_LEN: usize = 16;

/// Bytes of control buffer a read needs for its timestamp (`CMSG_SPACE` of the payload).
pub fn cmsg_space() -> usize {
    unsafe { libc::CMSG_SPACE(STAMP_LEN as libc::c_uint) as usize }
}

/// Ask the kernel to stamp what socket `fd` receives; false where it cannot.
pub fn enable(fd: RawFd) -> bool {
    let one: libc::c_int = 1;
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_TIMESTAMPNS_NEW,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// The receive timestamp (CLOCK_REALTIME, ns) in control data `control`, if it holds one.
pub fn parse(control: &[u8]) -> Option<u64> {
    if control.is_empty() {
        return None;
    }
    // SAFETY: the CMSG_* walk stays within `msg_control[..msg_controllen]`, which is `control`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_control = control.as_ptr() as *mut libc::c_void;
        msg.msg_controllen = control.len() as _;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let h = std::ptr::read_unaligned(c);
            let data = libc::CMSG_DATA(c);
            let end = data as usize + STAMP_LEN;
            if h.cmsg_level == libc::SOL_SOCKET
                && h.cmsg_type == SO_TIMESTAMPNS_NEW
                && h.cmsg_len as usize >= libc::CMSG_LEN(STAMP_LEN as libc::c_uint) as usize
                && end <= control.as_ptr() as usize + control.len()
            {
                let sec = std::ptr::read_unaligned(data as *const i64);
                let nsec = std::ptr::read_unaligned((data as *const i64).add(1));
                if sec <= 0 || !(0..1_000_000_000).contains(&nsec) {
                    return None;
                }
                return Some(sec as u64 * 1_000_000_000 + nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    None
}

/// recvmsg(2) on socket `fd` into `buf`, the control messages into `control`: the bytes
/// read (0 at end of file) and the length of the control data.
pub fn recv(fd: RawFd, buf: &mut [u8], control: &mut [u8]) -> io::Result<(usize, usize)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr is plain data; it points at `iov` and `control`, which outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len() as _;
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, (msg.msg_controllen as usize).min(control.len())))
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns.
fn realtime_offset_ns() -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    let real = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
    real - now_ns() as i128
}

/// How often `Clock::refresh_at` takes the offset between the clocks again.
const REFRESH_NS: u64 = 1_000_000;

/// Converts receive timestamps to CLOCK_MONOTONIC. The offset between the clocks is taken
/// again by `refresh_at` once a millisecond has passed (the event loop asks every round, and
/// rounds come every few microseconds: two clock reads each time were wasted), so a step of
/// the system clock shows for a millisecond at most.
pub struct Clock {
    offset: i128,
    /// CLOCK_MONOTONIC when the offset was taken.
    at: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock { offset: realtime_offset_ns(), at: now_ns() }
    }
}

impl Clock {
    /// Take the offset between the clocks again if `now` (CLOCK_MONOTONIC) is a
    /// millisecond or more after it was last taken.
    pub fn refresh_at(&mut self, now: u64) {
        if now.wrapping_sub(self.at) >= REFRESH_NS {
            self.offset = realtime_offset_ns();
            self.at = now;
        }
    }

    /// The time of a read done at `read_at` (CLOCK_MONOTONIC) whose control data is
    /// `control`: the stamped arrival when there is one (never later than the read),
    /// else the read's own time.
    pub fn arrival(&self, control: &[u8], read_at: u64) -> u64 {
        match parse(control) {
            Some(real) => {
                let mono = real as i128 - self.offset;
                if mono <= 0 {
                    read_at
                } else {
                    (mono as u64).min(read_at)
                }
            }
            None => read_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_read_is_stamped_with_the_arrival_of_its_bytes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        assert!(enable(rx.as_raw_fd()));
        // the kernel switches stamping on for the whole host a little after the first socket
        // asks, so the first bytes may come unstamped
        let clock = Clock::default();
        let mut buf = [0u8; 64];
        let mut stamped = None;
        for _ in 0..50 {
            let sent = now_ns();
            tx.write_all(b"ping").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let read_at = now_ns();
            let mut control = vec![0u8; cmsg_space()];
            let (n, clen) = recv(rx.as_raw_fd(), &mut buf, &mut control).unwrap();
            assert_eq!(&buf[..n], b"ping");
            if parse(&control[..clen]).is_some() {
                stamped = Some((sent, clock.arrival(&control[..clen], read_at), read_at));
                break;
            }
        }
        let (sent, arrived, read_at) = stamped.expect("no receive timestamp in 50 reads");
        // the bytes arrived after they were sent and well before they were read (20 ms later)
        assert!(arrived + 1_000_000 >= sent, "arrived {arrived} before sent {sent}");
        assert!(arrived + 10_000_000 < read_at, "arrival {arrived} not before the read {read_at}");
    }

    #[test]
    fn the_offset_between_the_clocks_is_taken_again_once_a_millisecond() {
        // the event loop asks every round: two clock reads each time, every few microseconds
        let mut clock = Clock::default();
        let taken = clock.at;
        clock.offset = 0; // stale (the real offset, since 1970, is far from 0)
        clock.refresh_at(taken + REFRESH_NS - 1);
        assert_eq!(clock.offset, 0, "taken again within the millisecond");
        clock.refresh_at(taken + REFRESH_NS);
        assert!(clock.offset > 1_000_000_000, "not taken again after a millisecond");
        assert!(clock.at >= taken + REFRESH_NS);
    }

    #[test]
    fn no_stamp_means_the_time_of_the_read() {
        let clock = Clock::default();
        assert_eq!(clock.arrival(&[], 1234), 1234);
        assert_eq!(parse(&[0u8; 7]), None);
        assert_eq!(clock.arrival(&vec![0u8; cmsg_space()], 99), 99);
    }
}

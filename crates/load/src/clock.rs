//! Monotonic time in nanoseconds (CLOCK_MONOTONIC, the clock timerfd uses too),
//! process CPU accounting, and a timerfd for sub-millisecond open-loop wakeups.
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Nanoseconds on CLOCK_MONOTONIC (vDSO; ~20 ns per call).
#[inline]
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The calling thread's CPU clock, ns (CLOCK_THREAD_CPUTIME_ID: a system call, exact, where
/// `thread_cpu_ns` splits user and system time at the resolution of rusage).
pub fn thread_cpu_clock_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// User and system CPU time of the calling thread, in ns.
pub fn thread_cpu_ns() -> (u64, u64) {
    rusage(libc::RUSAGE_THREAD)
}

fn rusage(who: libc::c_int) -> (u64, u64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// Peak resident set size of this process, in KiB.
pub fn max_rss_kb() -> u64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss as u64
}

/// Current resident set size of this process, in KiB (from /proc/self/statm).
pub fn rss_kb() -> u64 {
    let page_kb = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64) / 1024;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map(|pages| pages * page_kb)
        .unwrap_or(0)
}

/// A one-shot timer on CLOCK_MONOTONIC that becomes readable at an absolute time.
/// epoll_wait's millisecond timeout is too coarse for open-loop send times.
pub struct TimerFd {
    fd: OwnedFd,
    armed_at: u64,
}

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TimerFd { fd: unsafe { OwnedFd::from_raw_fd(fd) }, armed_at: 0 })
    }

    /// Fire at `at_ns` (CLOCK_MONOTONIC); re-arming to the same time is free.
    pub fn arm(&mut self, at_ns: u64) -> io::Result<()> {
        if at_ns == self.armed_at {
            return Ok(());
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
            },
        };
        let r =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed_at = at_ns;
        Ok(())
    }

    /// Acknowledge an expiry (after a readable event).
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, 8) };
        self.armed_at = 0;
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_cpu_counts() {
        let a = now_ns();
        let (u0, s0) = thread_cpu_ns();
        // busy until the thread's CPU time moves (accounting is per scheduler tick), at most 5 s
        let mut x = 0u64;
        let (mut u1, mut s1) = (u0, s0);
        while u1 + s1 == u0 + s0 && now_ns() - a < 5_000_000_000 {
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            (u1, s1) = thread_cpu_ns();
        }
        assert!(now_ns() > a);
        assert!(u1 + s1 > u0 + s0);
        assert!(rss_kb() > 0 && max_rss_kb() > 0);
    }

    #[test]
    fn timerfd_fires_at_absolute_time() {
        let mut t = TimerFd::new().unwrap();
        let at = now_ns() + 2_000_000;
        t.arm(at).unwrap();
        let mut pfd = libc::pollfd { fd: t.raw_fd(), events: libc::POLLIN, revents: 0 };
        let r = unsafe { libc::poll(&mut pfd, 1, 1000) };
        assert_eq!(r, 1);
        assert!(now_ns() >= at);
        t.clear();
    }
}

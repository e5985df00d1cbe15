//! `perflab-exec FD GRACE_MS [-W FD] [-C DIR] PROGRAM [ARGS...]`: run PROGRAM as a child (in
//! DIR, given: a harness with threads cannot switch its own directory safely), write one line
//! `wall_ns user_us system_us maxrss_kib wait_status lingering` to file descriptor FD when
//! it exits, and make sure nothing it started outlives the step's scope.
//!
//! Why a separate small process:
//! * measurement — a child spawned by the Python harness inherits the harness's memory
//!   high-water mark at exec, so its `ru_maxrss` can never be below the harness's own RSS
//!   (~17 MiB). Forked from this tiny process, the figure is the command's own. The clock
//!   is read here, around spawn and wait4, so the harness's start-up cost is not in it.
//! * hygiene — started in a session of its own and marked a *child subreaper*, this process
//!   inherits every orphan the command leaves behind, including daemons that double-fork
//!   and `setsid` (a process-group kill would miss those). When the command exits and
//!   descendants remain, it reports `lingering = 1` and keeps them until it gets SIGTERM
//!   (the harness sends it when the step's scope ends, or on a timeout or Ctrl-C), then
//!   stops them all: SIGTERM to every process group it can see, GRACE_MS to exit, SIGKILL
//!   to whatever is left, every one reaped. If the harness itself dies, the kernel sends
//!   this process SIGTERM (`PR_SET_PDEATHSIG`) and the same clean-up runs. On a host over
//!   SSH the harness is not a parent: `-W FD` names a descriptor whose other end the
//!   harness holds (the session's stdin, which the harness never writes to): when it reads
//!   end-of-file — the harness gone, however it died — the same clean-up runs.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::FromRawFd;

fn die(msg: &str) -> ! {
    eprintln!("perflab-exec: {msg}");
    std::process::exit(127);
}

fn now_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

extern "C" {
    static environ: *const *mut libc::c_char;
}

fn environ_ptr() -> *const *mut libc::c_char {
    // SAFETY: reading the C runtime's environment pointer.
    unsafe { environ }
}

/// The signals this process waits for synchronously (blocked, taken with sigtimedwait).
fn handled_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Spawn the command with the signal state a freshly started program expects: nothing
/// blocked, and default actions for what a Python parent ignores (SIGPIPE, SIGXFSZ) or
/// this process blocks.
fn spawn(argv: &[CString]) -> Result<libc::pid_t, i32> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: attr is initialised by posix_spawnattr_init and destroyed below; the sets
    // are initialised before use; argv is NULL-terminated valid C strings.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        let mut defaults: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut defaults);
        for s in [libc::SIGPIPE, libc::SIGXFSZ, libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut defaults, s);
        }
        libc::posix_spawnattr_setsigmask(&mut attr, &empty);
        // A process group of its own: this process can then signal the command's group
        // without signalling itself.
        libc::posix_spawnattr_setpgroup(&mut attr, 0);
        libc::posix_spawnattr_setsigdefault(&mut attr, &defaults);
        libc::posix_spawnattr_setflags(
            &mut attr,
            (libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETPGROUP) as _,
        );
        let mut pid: libc::pid_t = 0;
        // posix_spawnp: vfork-speed start (glibc uses CLONE_VFORK), no code between fork and exec.
        let rc = libc::posix_spawnp(
            &mut pid,
            ptrs[0],
            std::ptr::null(),
            &attr,
            ptrs.as_ptr() as *const *mut libc::c_char,
            environ_ptr(),
        );
        libc::posix_spawnattr_destroy(&mut attr);
        if rc == 0 {
            Ok(pid)
        } else {
            Err(rc)
        }
    }
}

/// PIDs of this process's children: from /proc/self/task/*/children where the kernel has
/// it, else by scanning /proc for processes whose parent is this one.
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id() as libc::pid_t;
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        return text.split_whitespace().filter_map(|p| p.parse().ok()).collect();
    }
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<libc::pid_t>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // fields after the command name in parentheses: state ppid ...
            let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            if rest.split_whitespace().nth(1).and_then(|s| s.parse::<libc::pid_t>().ok()) == Some(me) {
                out.push(pid);
            }
        }
    }
    out
}

/// Send `sig` to the command's process group (`main` leads it, and it stays valid while any
/// member lives) and to every child of this process and its group (daemons that called
/// setsid head groups of their own). Never to this process's own group.
fn signal_all(main: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill/killpg/getpgid take plain integers; errors (ESRCH) are harmless here.
    unsafe {
        let own = libc::getpgrp();
        libc::killpg(main, sig);
        for pid in children() {
            let pgid = libc::getpgid(pid);
            if pgid > 0 && pgid != own {
                libc::killpg(pgid, sig);
            }
            libc::kill(pid, sig);
        }
    }
}

struct Exec {
    main: libc::pid_t,
    main_status: Option<(libc::c_int, libc::rusage)>,
    t0: u128,
    wall: u128,
    report_fd: Option<i32>,
}

impl Exec {
    /// Reap every exited child; remember the command's own status and rusage.
    /// Returns false once no child is left.
    fn reap(&mut self) -> bool {
        loop {
            let mut status: libc::c_int = 0;
            // SAFETY: zeroed rusage is a valid out-parameter.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: valid pointers.
            let r = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut ru) };
            if r > 0 {
                if r == self.main {
                    self.wall = now_ns() - self.t0;
                    self.main_status = Some((status, ru));
                }
                continue;
            }
            if r == 0 {
                return true;
            }
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false; // ECHILD
        }
    }

    fn report(&mut self, lingering: bool) {
        let (Some(fd), Some((status, ru))) = (self.report_fd.take(), self.main_status) else {
            return;
        };
        #[allow(clippy::useless_conversion)] // time_t and suseconds_t are 32-bit on some targets
        let us = |tv: libc::timeval| i64::from(tv.tv_sec) * 1_000_000 + i64::from(tv.tv_usec);
        // SAFETY: the harness passed this descriptor open for writing; we own it from here.
        let mut out = unsafe { std::fs::File::from_raw_fd(fd) };
        let _ = writeln!(
            out,
            "{} {} {} {} {} {}",
            self.wall,
            us(ru.ru_utime),
            us(ru.ru_stime),
            ru.ru_maxrss,
            status,
            lingering as u8
        );
    }

    /// Wait up to `ms` for a handled signal; returns it (0 on timeout).
    fn wait_signal(set: &libc::sigset_t, ms: u64) -> libc::c_int {
        let ts = libc::timespec { tv_sec: (ms / 1000) as _, tv_nsec: ((ms % 1000) * 1_000_000) as _ };
        // SAFETY: valid set and timespec; info may be null.
        let r = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
        r.max(0)
    }

    /// Stop everything: SIGTERM, up to `grace_ms` to exit, then SIGKILL until none is left.
    fn terminate(&mut self, set: &libc::sigset_t, grace_ms: u64) {
        signal_all(self.main, libc::SIGTERM);
        let deadline = now_ns() + grace_ms as u128 * 1_000_000;
        while self.reap() {
            let left = deadline.saturating_sub(now_ns()) / 1_000_000;
            if left == 0 {
                break;
            }
            Self::wait_signal(set, left.min(50) as u64);
        }
        // Children of killed processes are reparented here: repeat until none is left.
        for _ in 0..1000 {
            if !self.reap() {
                break;
            }
            signal_all(self.main, libc::SIGKILL);
            Self::wait_signal(set, 10);
        }
    }
}

/// Whether descriptor `fd` is at its end (end-of-file, hang-up or an error): the harness
/// that holds its other end is gone. What it may carry is read and dropped.
fn at_end(fd: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    if unsafe { libc::poll(&mut p, 1, 0) } <= 0 {
        return false;
    }
    if p.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
        return true;
    }
    let mut buf = [0u8; 256];
    // SAFETY: reading into a local buffer of its length; POLLIN or POLLHUP: it will not block.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    let again = matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINTR | libc::EAGAIN));
    n == 0 || (n < 0 && !again)
}

fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restoring the default action and unblocking so the signal ends us.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            let mut one: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(libc::WEXITSTATUS(status));
}

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    const USAGE: &str = "usage: perflab-exec FD GRACE_MS [-W FD] [-C DIR] PROGRAM [ARGS...]";
    if args.len() < 3 {
        die(USAGE);
    }
    let fd: i32 = args[0].to_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| die("FD must be a number"));
    let grace_ms: u64 =
        args[1].to_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| die("GRACE_MS must be a number"));
    let mut first = 2;
    let mut watch: Option<i32> = None;
    while args.len() >= first + 3 && matches!(args[first].as_bytes(), b"-C" | b"-W") {
        let value = &args[first + 1];
        if args[first].as_bytes() == b"-W" {
            watch = Some(value.to_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| die("-W FD must be a number")));
        } else if let Err(e) = std::env::set_current_dir(value) {
            eprintln!("perflab-exec: cd {}: {e}", value.to_string_lossy());
            std::process::exit(126);
        }
        first += 2;
    }
    if args.len() <= first {
        die(USAGE);
    }
    let argv: Vec<CString> = args[first..]
        .iter()
        .map(|a| CString::new(a.as_bytes()).unwrap_or_else(|_| die("argument contains a NUL byte")))
        .collect();

    let set = handled_signals();
    // SAFETY: plain prctl/fcntl/sigprocmask calls on this process; failures leave defaults.
    unsafe {
        // The report descriptor and the watched one must not leak into the command.
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        if let Some(w) = watch {
            libc::fcntl(w, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
    }
    let t0 = now_ns();
    let main = match spawn(&argv) {
        Ok(pid) => pid,
        Err(rc) => {
            // Report like a shell does: 127 not found, 126 cannot execute.
            let name = args[first].to_string_lossy();
            eprintln!("perflab-exec: {name}: {}", std::io::Error::from_raw_os_error(rc));
            std::process::exit(if rc == libc::ENOENT { 127 } else { 126 });
        }
    };
    let mut exec = Exec { main, main_status: None, t0, wall: 0, report_fd: Some(fd) };
    let mut terminated = false;
    loop {
        let any_left = exec.reap();
        if exec.main_status.is_some() && exec.report_fd.is_some() {
            exec.report(any_left);
        }
        if !any_left {
            break;
        }
        let sig = Exec::wait_signal(&set, if watch.is_some() { 200 } else { 1000 });
        let harness_gone = watch.is_some_and(at_end);
        if (harness_gone || matches!(sig, libc::SIGTERM | libc::SIGINT | libc::SIGHUP)) && !terminated {
            terminated = true;
            exec.terminate(&set, grace_ms);
        }
    }
    match exec.main_status {
        Some((status, _)) => exit_like(status),
        None => std::process::exit(125),
    }
}

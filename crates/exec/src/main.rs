//! `perflab-exec FD PROGRAM [ARGS...]`: run PROGRAM as a child, then write one line
//! `wall_ns user_us system_us maxrss_kib wait_status` to file descriptor FD and exit
//! with the child's status (or die of the child's signal).
//!
//! Why a separate small process: a child spawned by the Python harness inherits the
//! harness's memory high-water mark at exec, so its `ru_maxrss` can never be below the
//! harness's own RSS (~17 MiB). Forked from this tiny process, the figure is the
//! command's own. The clock is read here, around fork and wait4, so the harness's own
//! start-up cost is not part of the wall time either.

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

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.len() < 2 {
        die("usage: perflab-exec FD PROGRAM [ARGS...]");
    }
    let fd: i32 = args[0].to_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| die("FD must be a number"));
    let argv: Vec<CString> = args[1..]
        .iter()
        .map(|a| CString::new(a.as_bytes()).unwrap_or_else(|_| die("argument contains a NUL byte")))
        .collect();
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());

    // The report descriptor must not leak into the command.
    // SAFETY: fcntl on a descriptor number; failure is harmless (the command just sees it).
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    let t0 = now_ns();
    let mut pid: libc::pid_t = 0;
    // posix_spawnp: vfork-speed start (glibc uses CLONE_VFORK), no code between fork and exec.
    // SAFETY: argv is a NULL-terminated array of valid C strings; environ is the process's.
    let rc = unsafe {
        libc::posix_spawnp(&mut pid, ptrs[0], std::ptr::null(), std::ptr::null(),
                           ptrs.as_ptr() as *const *mut libc::c_char,
                           environ_ptr())
    };
    if rc != 0 {
        // Report like a shell does: 127 not found, 126 cannot execute.
        let name = args[1].to_string_lossy();
        eprintln!("perflab-exec: {name}: {}", std::io::Error::from_raw_os_error(rc));
        std::process::exit(if rc == libc::ENOENT { 127 } else { 126 });
    }
    let mut status: libc::c_int = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers; pid is our child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            die("wait4 failed");
        }
    }
    let wall = now_ns() - t0;
    let us = |tv: libc::timeval| tv.tv_sec as i64 * 1_000_000 + tv.tv_usec as i64;
    // SAFETY: the harness passed this descriptor open for writing.
    let mut out = unsafe { std::fs::File::from_raw_fd(fd) };
    let _ = writeln!(out, "{} {} {} {} {}", wall, us(ru.ru_utime), us(ru.ru_stime), ru.ru_maxrss, status);
    drop(out);
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(libc::WEXITSTATUS(status));
}

//! `perflab-load`: the load engine as one program, for client hosts that have no perflab.
//! perflab stages it over SSH and runs one per load process of a kv phase spread over hosts.
//!
//!     perflab-load [--start-at UNIX_SECONDS] CONFIG_JSON
//!     perflab-load --clock
//!
//! CONFIG_JSON is the engine's normalised configuration (as `perflab._native.kv_run` takes
//! it). With `--start-at`, the process waits until that instant of this host's clock before
//! it connects, so that the processes on several hosts start together. SIGTERM or SIGINT
//! stops the load within a tick; the result (status "stopped") is still written. The result
//! document ("perflab-kv-result") goes to stdout. Exit status: 0 when a result was written
//! (its `status` says how the run went), 2 for a configuration the engine refuses.
//! `--clock` answers each line read from stdin with this host's clock (Unix seconds, to the
//! nanosecond), until end of input: perflab measures the offset between hosts' clocks over
//! one open session, so that a reading costs a round trip on the wire and nothing more.
use perflab_load::{run, Config, Control, RunOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn fail(message: &str) -> ! {
    eprintln!("perflab-load: {message}");
    std::process::exit(2);
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64()
}

/// Sleep until `at` (Unix seconds, this host's clock), waking early when stopped.
fn wait_until(at: f64) {
    while !STOP.load(Ordering::SeqCst) {
        let left = at - unix_now();
        if left <= 0.0 {
            return;
        }
        std::thread::sleep(Duration::from_secs_f64(left.min(0.05)));
    }
}

/// Answer each line of stdin with the clock, at once (flushed), until end of input.
fn clock() {
    use std::io::{BufRead, Write};
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        if writeln!(out, "{}.{:09}", t.as_secs(), t.subsec_nanos()).and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}

fn main() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
    let mut args = std::env::args().skip(1);
    let mut start_at = None;
    let mut config_json = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--clock" => return clock(),
            "--start-at" => {
                let v = args.next().unwrap_or_else(|| fail("--start-at needs a Unix time in seconds"));
                start_at = Some(v.parse::<f64>().unwrap_or_else(|_| fail(&format!("bad --start-at '{v}'"))));
            }
            _ if config_json.is_none() => config_json = Some(a),
            _ => fail("usage: perflab-load [--start-at UNIX_SECONDS] CONFIG_JSON"),
        }
    }
    let text = config_json.unwrap_or_else(|| fail("usage: perflab-load [--start-at UNIX_SECONDS] CONFIG_JSON"));
    let cfg = Config::from_json(&text).unwrap_or_else(|e| fail(&format!("config {}: {}", e.field, e.message)));
    if let Some(at) = start_at {
        wait_until(at);
    }
    let opts = RunOptions::default();
    let outcome =
        run(&cfg, &opts, &mut |_| if STOP.load(Ordering::SeqCst) { Control::Stop } else { Control::Continue });
    match outcome {
        Ok(result) => println!("{}", result.to_json()),
        Err(e) => fail(&format!("config {}: {}", e.field, e.message)),
    }
}

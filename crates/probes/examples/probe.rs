//! Runs the probes without Python: `cargo run -p perflab-probes --release --example probe -- cpu|memmove|latency [core]`.
//! (Users run `perflab probe …`; this is for working on the crate itself.)
use perflab_probes::{affinity, cpu, latency, memmove, pagebuf::Pages};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map(String::as_str).unwrap_or("cpu");
    let _pin = match args.get(2) {
        Some(c) => Some(affinity::pin_current_thread(c.parse()?)?),
        None => None,
    };
    match what {
        "cpu" => {
            for _ in 0..5 {
                let r = cpu::run(Duration::from_secs(1))?;
                println!(
                    "cpu {:.0} iter/s ({} iterations in {:.3} s, on cpu {:.3} s)",
                    r.iter_per_sec, r.iterations, r.seconds, r.cpu_seconds
                );
            }
        }
        "memmove" => {
            let mut arena = memmove::Arena::new(Pages::Base)?;
            for c in memmove::CASES {
                let r = arena.measure(c.copy_size, c.buffers, Duration::from_secs(1))?;
                println!("{:16} {:>10.1} MiB/s  {:>8.2} Mcopies/s", c.name, r.mib_per_sec, r.copies_per_sec / 1e6);
            }
        }
        "latency" => {
            for size in latency::sizes(4096, 256 << 20, 1)? {
                let p = latency::chase(size, latency::Order::PageLocal, Duration::from_millis(200), Pages::Base, 1)?;
                let r = latency::chase(size, latency::Order::Random, Duration::from_millis(200), Pages::Base, 1)?;
                println!("{:>12} B  page {:>7.2} ns  random {:>7.2} ns", size, p.ns_per_access, r.ns_per_access);
            }
        }
        other => return Err(format!("unknown probe {other}: cpu, memmove or latency").into()),
    }
    Ok(())
}

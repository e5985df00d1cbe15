//! perflab-load: a key-value load generator engine.
//!
//! Speaks memcached's text and binary protocols and Redis RESP2 with
//! memtier_benchmark's options and key patterns, in closed loop (a fixed number of
//! requests in flight per connection) or open loop (a target rate, with latency
//! measured from each request's intended send time as well as its actual one).
//! Each worker thread runs one event loop over its connections (io_uring where the
//! kernel allows it, else mio/epoll: `Config::io`) and keeps its own HDR histograms;
//! they are merged when the run ends.
//!
//! ```no_run
//! use perflab_load::{run, Config, Control, RunOptions};
//! let cfg = Config { servers: vec!["127.0.0.1:11211".into()], test_time: Some(5.0), ..Config::default() };
//! let result = run(&cfg, &RunOptions::default(), &mut |_p| Control::Continue).unwrap();
//! println!("{} ops/s", result.metrics()["ops_per_sec"]);
//! ```
pub mod clock;
pub mod config;
pub mod engine;
pub mod hist;
pub mod keys;
pub mod net;
mod plan;
pub mod protocol;
pub mod result;
pub mod rxtime;
pub mod schedule;
pub mod spare;
pub mod stats;
pub mod uring;
pub mod value;
mod worker;
pub mod zipf;

pub use config::{
    Arrivals, Config, ConfigError, IoBackend, KeyPattern, Protocol, Requests, SizePattern, Spin, SpinPolicy,
};
pub use engine::{run, Control, Phase, Progress, RunOptions};
pub use hist::LatencyHist;
pub use result::{RunResult, Status, Warning};

//! End-to-end runs against real servers started on loopback, each with both I/O backends
//! (`both!` makes `name::epoll` and `name::uring` of a test `name(io)`).
mod servers;

use perflab_load::{run, Config, Control, IoBackend, KeyPattern, Protocol, Requests, RunOptions, Status};
use std::time::Instant;

fn quiet(cfg: &Config) -> perflab_load::RunResult {
    let r = run(cfg, &RunOptions::default(), &mut |_| Control::Continue).expect("valid config");
    assert_eq!(r.io, cfg.io.name(), "the backend asked for ran");
    r
}

/// `name::epoll` and `name::uring` running `name(io)`; the io_uring one only where the
/// kernel allows io_uring (it says so on stderr where not).
macro_rules! both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn epoll() {
                super::$name(perflab_load::IoBackend::Epoll);
            }
            #[test]
            fn uring() {
                match perflab_load::uring::available() {
                    Ok(()) => super::$name(perflab_load::IoBackend::Uring),
                    Err(why) => eprintln!("io_uring not available here, not tested: {why}"),
                }
            }
        }
    )*};
}

both!(
    memcache_text_roundtrip,
    memcache_binary_roundtrip,
    redis_roundtrip,
    refused_connection_fails_fast_with_a_message,
    time_limited_run_with_warmup_and_stop,
    error_replies_are_counted_by_kind_and_misses_are_not_errors,
);

fn populate_then_read(proto: Protocol, addr: String, io: IoBackend) {
    let base = Config {
        servers: vec![addr],
        protocol: proto,
        threads: 2,
        clients: 3,
        pipeline: 8,
        key_min: 1,
        key_max: 5000,
        data_size_min: 100,
        data_size_max: 100,
        io,
        ..Config::default()
    };
    let populate = Config {
        ratio: [1, 0],
        requests: Some(Requests::AllKeys),
        key_pattern: [KeyPattern::Parallel, KeyPattern::Parallel],
        ..base.clone()
    };
    let r = quiet(&populate);
    assert_eq!(r.status, Status::Complete, "{:?}", r.error);
    assert_eq!(r.sets.requests, 5000);
    assert_eq!(r.errors(), 0);
    let read = Config {
        ratio: [0, 1],
        requests: Some(Requests::PerClient(2000)),
        key_pattern: [KeyPattern::Gaussian, KeyPattern::Gaussian],
        distinct_client_seed: true,
        verify: true,
        ..base
    };
    let r = quiet(&read);
    assert_eq!(r.status, Status::Complete, "{:?}", r.error);
    assert_eq!(r.gets.requests, 12_000);
    assert_eq!(r.gets.hits, 12_000, "{proto:?}: every key was written");
    assert_eq!(r.verify_failures, 0);
    let m = r.metrics();
    assert!(m["ops_per_sec"] > 0.0);
    assert!(m["p99_latency_ms"] >= m["p50_latency_ms"]);
    assert!(m["kb_per_sec"] > 0.0);
}

fn memcache_text_roundtrip(io: IoBackend) {
    let s = servers::memcached(64);
    populate_then_read(Protocol::MemcacheText, s.addr(), io);
    assert_eq!(servers::memcached_stat(s.port, "curr_items"), 5000);
}

fn memcache_binary_roundtrip(io: IoBackend) {
    let s = servers::memcached(64);
    populate_then_read(Protocol::MemcacheBinary, s.addr(), io);
    assert_eq!(servers::memcached_stat(s.port, "curr_items"), 5000);
}

fn redis_roundtrip(io: IoBackend) {
    let s = servers::redis();
    populate_then_read(Protocol::Redis, s.addr(), io);
}

fn refused_connection_fails_fast_with_a_message(io: IoBackend) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = Config {
        servers: vec![format!("127.0.0.1:{port}")],
        protocol: Protocol::MemcacheText,
        threads: 1,
        clients: 2,
        io,
        ..Config::default()
    };
    let t0 = Instant::now();
    let r = quiet(&cfg);
    assert!(t0.elapsed().as_secs_f64() < 3.0);
    assert_eq!(r.status, Status::Failed);
    assert!(r.error.as_deref().unwrap().contains("refused"), "{:?}", r.error);
    assert!(r.connection_failures >= 1);
    assert_eq!(r.requests(), 0);
}

fn time_limited_run_with_warmup_and_stop(io: IoBackend) {
    let s = servers::memcached(64);
    let cfg = Config {
        servers: vec![s.addr()],
        protocol: Protocol::MemcacheText,
        threads: 1,
        clients: 4,
        test_time: Some(0.6),
        warmup: 0.2,
        key_max: 1000,
        io,
        ..Config::default()
    };
    let t0 = Instant::now();
    let r = quiet(&cfg);
    let took = t0.elapsed().as_secs_f64();
    assert_eq!(r.status, Status::Complete);
    assert!((0.8..3.0).contains(&took), "{took}");
    assert!(r.duration_s >= 0.6 && r.duration_s < 0.7, "{}", r.duration_s);
    assert!(r.warmup_requests > 0);
    let mut ticks = 0;
    let long = Config { test_time: Some(30.0), warmup: 0.0, ..cfg };
    let t0 = Instant::now();
    let r = run(&long, &RunOptions { tick: std::time::Duration::from_millis(50) }, &mut |_| {
        ticks += 1;
        if ticks >= 6 {
            Control::Stop
        } else {
            Control::Continue
        }
    })
    .unwrap();
    assert!(t0.elapsed().as_secs_f64() < 2.0);
    assert_eq!(r.status, Status::Stopped);
    assert!(r.requests() > 0);
}

fn error_replies_are_counted_by_kind_and_misses_are_not_errors(io: IoBackend) {
    let s = servers::memcached(64);
    for (proto, kind) in [
        (Protocol::MemcacheText, "SERVER_ERROR object too large for cache"),
        (Protocol::MemcacheBinary, "value too large"),
    ] {
        // values over memcached's 1 MB item limit: every SET is refused, the connection goes on
        let cfg = Config {
            servers: vec![s.addr()],
            protocol: proto,
            threads: 1,
            clients: 2,
            ratio: [1, 1],
            requests: Some(Requests::PerClient(40)),
            key_min: 1,
            key_max: 1000,
            data_size_min: 2_000_000,
            data_size_max: 2_000_000,
            io,
            ..Config::default()
        };
        let r = quiet(&cfg);
        assert_eq!(r.status, Status::Complete, "{:?}", r.error);
        assert_eq!((r.sets.error_replies, r.sets.requests), (40, 0), "{proto:?}");
        assert_eq!((r.gets.misses, r.gets.errors()), (40, 0), "{proto:?}: a miss is no error");
        assert_eq!(r.failed_requests(), 40);
        assert_eq!(r.error_kinds.len(), 1, "{:?}", r.error_kinds);
        assert_eq!((r.error_kinds[0].kind.as_str(), r.error_kinds[0].count), (kind, 40));
        let doc = r.to_json();
        assert_eq!(doc["errors"]["by_kind"][kind], 40);
        assert_eq!(doc["errors"]["attempted"], 80);
    }
}

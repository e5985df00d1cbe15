//! Real memcached / redis-server on loopback for the integration tests.
#![allow(dead_code)]
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub port: u16,
    _dir: Option<std::path::PathBuf>,
}

impl Server {
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = &self._dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_ready(port: u16, probe: &[u8], expect: &[u8]) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            if s.write_all(probe).is_ok() {
                let mut buf = [0u8; 64];
                if let Ok(n) = s.read(&mut buf) {
                    if buf[..n].starts_with(expect) {
                        return;
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("server on port {port} did not become ready");
}

pub fn memcached(memory_mb: u32) -> Server {
    let port = free_port();
    let child = Command::new("memcached")
        .args([
            "-l",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "0",
            "-m",
            &memory_mb.to_string(),
            "-t",
            "2",
            "-c",
            "4096",
            "-u",
            "root",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("memcached must be installed (apt-get install memcached)");
    wait_ready(port, b"version\r\n", b"VERSION");
    Server { child, port, _dir: None }
}

pub fn redis() -> Server {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("perflab-load-redis-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server must be installed (apt-get install redis-server)");
    wait_ready(port, b"PING\r\n", b"+PONG");
    Server { child, port, _dir: Some(dir) }
}

/// memcached `stats` as (name, value) pairs.
pub fn memcached_stat(port: u16, name: &str) -> u64 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"stats\r\n").unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !out.ends_with(b"END\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        out.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(out).unwrap();
    text.lines().find_map(|l| l.strip_prefix(&format!("STAT {name} ")).map(|v| v.trim().parse().unwrap())).unwrap()
}

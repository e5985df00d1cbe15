//! What a run does: servers, protocol, workload shape and limits.
//!
//! Option names and defaults follow memtier_benchmark (snake_case of its long
//! options). The JSON form (`Config::from_json`) takes normalised values:
//! durations in seconds, ratio and key pattern as pairs.
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;

/// Wire protocol spoken to every server of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    MemcacheText,
    MemcacheBinary,
    /// Redis RESP2 (`SET`/`GET`).
    Redis,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::MemcacheText => "memcache_text",
            Protocol::MemcacheBinary => "memcache_binary",
            Protocol::Redis => "redis",
        }
    }
}

/// How a client picks the next key index (memtier_benchmark's `--key-pattern` letters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyPattern {
    /// `S`: sequential over the range, wrapping, each client on its own.
    #[serde(rename = "S")]
    Sequential,
    /// `R`: uniform over the range.
    #[serde(rename = "R")]
    Random,
    /// `G`: Gaussian around `key_median` with `key_stddev`; draws outside the range are redrawn.
    #[serde(rename = "G")]
    Gaussian,
    /// `P`: parallel; each of the threads × clients clients walks its own slice sequentially.
    #[serde(rename = "P")]
    Parallel,
    /// `Z`: Zipf over the key indices, P(k) ∝ k^-key_zipf_exp (keys ≥ 1).
    #[serde(rename = "Z")]
    Zipf,
}

impl KeyPattern {
    pub fn letter(self) -> char {
        match self {
            KeyPattern::Sequential => 'S',
            KeyPattern::Random => 'R',
            KeyPattern::Gaussian => 'G',
            KeyPattern::Parallel => 'P',
            KeyPattern::Zipf => 'Z',
        }
    }
}

/// How many requests each client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requests {
    /// `-n N`: N measured requests per client (connection).
    PerClient(u64),
    /// `-n allkeys`: with the `P` set pattern every key of the range once across all
    /// clients; with other patterns every client sends one request per key of the range.
    AllKeys,
}

/// How value sizes are chosen when `data_size_min < data_size_max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizePattern {
    /// uniform in [min, max] per request
    #[serde(rename = "R")]
    Random,
    /// grows linearly with the key index from min (key_min) to max (key_max)
    #[serde(rename = "S")]
    Sequential,
}

/// Arrival process of the open loop (`rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// evenly spaced sends per connection, connections staggered
    Constant,
    /// exponential gaps (a Poisson process of the total rate)
    Poisson,
}

/// The I/O loop of the worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoBackend {
    /// io_uring where the kernel allows it (probed at the start), else epoll.
    Auto,
    /// io_uring: batched submission, multishot receive into a provided buffer ring; a
    /// configuration error where the kernel (or a seccomp filter) does not allow it.
    Uring,
    /// A mio/epoll event loop with read() and write() per connection.
    Epoll,
}

impl IoBackend {
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Auto => "auto",
            IoBackend::Uring => "uring",
            IoBackend::Epoll => "epoll",
        }
    }
}

/// Whether a worker with nothing to do spins before it sleeps: waiting for a reply that
/// comes within microseconds by sleeping costs a sleep and a wake-up, paid by both sides
/// (the server's send wakes the client; on a VM an interrupt between CPUs, an exit to the
/// hypervisor). Serialized as "auto", "off", or the microseconds to spin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Spin {
    Policy(SpinPolicy),
    /// Spin this many microseconds before every sleep with requests in flight.
    Micros(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpinPolicy {
    /// Spin (up to 50 µs) while few requests are in flight and probes find that spinning
    /// costs the client less CPU per reply than sleeping, or raises throughput far more
    /// than it raises that (`worker::spin`); otherwise sleep at once.
    Auto,
    /// Never spin.
    Off,
}

impl Spin {
    /// "auto", "off" or the microseconds, as written in a configuration.
    pub fn name(self) -> String {
        match self {
            Spin::Policy(SpinPolicy::Auto) => "auto".into(),
            Spin::Policy(SpinPolicy::Off) => "off".into(),
            Spin::Micros(us) => format!("{us}"),
        }
    }
}

/// The longest fixed spin a configuration may ask for, µs.
pub const MAX_SPIN_US: f64 = 1000.0;

/// A whole run. Build it with `Config::default()` and field updates, or `from_json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// "host:port" of each server; connections are spread over them round-robin.
    pub servers: Vec<String>,
    pub protocol: Protocol,
    /// `[sets, gets]` per cycle of each client (memtier `--ratio SET:GET`).
    pub ratio: [u32; 2],
    /// Request count; `None` with `test_time` set means "until the time is up".
    pub requests: Option<Requests>,
    /// Measured duration in seconds (after the warmup).
    pub test_time: Option<f64>,
    /// Connections per thread (memtier `-c`).
    pub clients: u32,
    pub threads: u32,
    /// Requests in flight per connection.
    pub pipeline: u32,
    pub key_prefix: String,
    pub key_min: u64,
    pub key_max: u64,
    /// `[set pattern, get pattern]`.
    pub key_pattern: [KeyPattern; 2],
    /// Gaussian centre; default the middle of the range.
    pub key_median: Option<f64>,
    /// Gaussian standard deviation; default range/6.
    pub key_stddev: Option<f64>,
    /// Zipf exponent, in (0, 5).
    pub key_zipf_exp: f64,
    /// Value size in bytes: fixed when min == max.
    pub data_size_min: u32,
    pub data_size_max: u32,
    pub data_size_pattern: SizePattern,
    /// Seed of every random stream (unless `randomize`).
    pub seed: u64,
    /// Draw a fresh seed from the clock; the seed used is reported in the result.
    pub randomize: bool,
    /// Each client seeds its streams with seed + client index (else all clients draw the same keys).
    pub distinct_client_seed: bool,
    /// Open loop: total requests per second over all connections. `None`: closed loop.
    pub rate: Option<f64>,
    pub arrivals: Arrivals,
    /// Seconds at the start whose requests are sent but left out of every result.
    pub warmup: f64,
    /// Seconds to establish each connection.
    pub connect_timeout: f64,
    /// Seconds without any response on a connection with requests in flight before the run fails.
    pub response_timeout: f64,
    /// Open loop: a request sent more than this many seconds after its intended time is "late".
    pub late_threshold: f64,
    /// Local addresses to bind connections to, round-robin. Empty: automatic (loopback
    /// destinations with many connections are spread over 127.0.0.0/8 sources).
    pub source_addresses: Vec<IpAddr>,
    /// Check that every GET hit returns the value this generator writes for that key
    /// (content, whatever its length).
    pub verify: bool,
    /// I/O loop of the worker threads: auto (io_uring where available, else epoll), uring, epoll.
    pub io: IoBackend,
    /// Spin before sleeping: auto (few requests in flight, where it is cheaper), off, or µs.
    pub spin: Spin,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            servers: vec!["127.0.0.1:6379".to_string()],
            protocol: Protocol::Redis,
            ratio: [1, 10],
            requests: None,
            test_time: None,
            clients: 50,
            threads: 4,
            pipeline: 1,
            key_prefix: "memtier-".to_string(),
            key_min: 0,
            key_max: 10_000_000,
            key_pattern: [KeyPattern::Random, KeyPattern::Random],
            key_median: None,
            key_stddev: None,
            key_zipf_exp: 1.0,
            data_size_min: 32,
            data_size_max: 32,
            data_size_pattern: SizePattern::Random,
            seed: 5381,
            randomize: false,
            distinct_client_seed: false,
            rate: None,
            arrivals: Arrivals::Constant,
            warmup: 0.0,
            connect_timeout: 5.0,
            response_timeout: 10.0,
            late_threshold: 0.001,
            source_addresses: Vec::new(),
            verify: false,
            io: IoBackend::Auto,
            spin: Spin::Policy(SpinPolicy::Auto),
        }
    }
}

/// An invalid configuration: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        ConfigError { field: field.to_string(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Longest key memcached accepts (its protocol limit).
pub const MAX_MEMCACHE_KEY: usize = 250;
/// Largest value accepted (memcached's default item size limit is 1 MiB).
pub const MAX_DATA_SIZE: u32 = 64 << 20;

/// A validation failure of `field`.
fn err(field: &str, message: String) -> Result<(), ConfigError> {
    Err(ConfigError::new(field, message))
}

impl Config {
    /// Parse the normalised JSON form (unknown keys are errors) and validate it.
    pub fn from_json(text: &str) -> Result<Config, ConfigError> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| {
            let msg = e.to_string();
            // serde names unknown fields in its message: "unknown field `x`, expected ..."
            let field = msg
                .split('`')
                .nth(1)
                .filter(|_| msg.starts_with("unknown field") || msg.starts_with("invalid"))
                .unwrap_or("")
                .to_string();
            ConfigError { field, message: msg }
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("config serialises")
    }

    /// Total connections: threads × clients.
    pub fn total_clients(&self) -> u64 {
        self.threads as u64 * self.clients as u64
    }

    /// Number of key indices in [key_min, key_max].
    pub fn key_count(&self) -> u64 {
        self.key_max - self.key_min + 1
    }

    pub fn is_open_loop(&self) -> bool {
        self.rate.is_some()
    }

    /// Check every field and their combinations; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_connections()?;
        self.validate_mix()?;
        self.validate_keys()?;
        self.validate_values()?;
        self.validate_key_patterns()?;
        self.validate_amount()?;
        self.validate_durations()
    }

    /// Servers, threads and clients: every server gets a connection.
    fn validate_connections(&self) -> Result<(), ConfigError> {
        if self.servers.is_empty() {
            return err("server", "at least one server (host:port) is needed".into());
        }
        for s in &self.servers {
            crate::net::split_host_port(s).map_err(|m| ConfigError::new("server", m))?;
        }
        if self.threads == 0 {
            return err("threads", "must be at least 1".into());
        }
        if self.clients == 0 {
            return err("clients", "must be at least 1 connection per thread".into());
        }
        if self.threads > 1024 {
            return err("threads", format!("{} threads is more than the 1024 supported", self.threads));
        }
        if self.total_clients() > 1_000_000 {
            return err(
                "clients",
                format!(
                    "threads × clients = {} connections is more than the 1,000,000 supported",
                    self.total_clients()
                ),
            );
        }
        if (self.servers.len() as u64) > self.total_clients() {
            return err(
                "server",
                format!(
                    "{} servers but only threads × clients = {} connections: every server needs at least one",
                    self.servers.len(),
                    self.total_clients()
                ),
            );
        }
        Ok(())
    }

    /// Pipeline depth and the SET:GET ratio.
    fn validate_mix(&self) -> Result<(), ConfigError> {
        if self.pipeline == 0 || self.pipeline > 65536 {
            return err("pipeline", format!("must be between 1 and 65536 (got {})", self.pipeline));
        }
        if self.ratio == [0, 0] {
            return err("ratio", "SET:GET cannot be 0:0 (nothing to send)".into());
        }
        Ok(())
    }

    /// Key range and prefix (memcached's key length and characters).
    fn validate_keys(&self) -> Result<(), ConfigError> {
        if self.key_min > self.key_max {
            return err("key_min", format!("key_min ({}) is greater than key_max ({})", self.key_min, self.key_max));
        }
        if self.key_max == u64::MAX {
            return err("key_max", "must be below 2^64-1".into());
        }
        let longest_key = self.key_prefix.len() + self.key_max.to_string().len();
        if self.protocol != Protocol::Redis && longest_key > MAX_MEMCACHE_KEY {
            return err(
                "key_prefix",
                format!("keys up to {longest_key} bytes exceed memcached's {MAX_MEMCACHE_KEY}-byte key limit"),
            );
        }
        if self.protocol != Protocol::Redis && self.key_prefix.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return err("key_prefix", "memcached keys cannot contain spaces or control characters".into());
        }
        Ok(())
    }

    /// Value sizes.
    fn validate_values(&self) -> Result<(), ConfigError> {
        if self.data_size_min == 0 && self.data_size_max == 0 {
            return err("data_size", "must be at least 1 byte".into());
        }
        if self.data_size_min > self.data_size_max {
            return err(
                "data_size",
                format!("range {}-{} is empty (min > max)", self.data_size_min, self.data_size_max),
            );
        }
        if self.data_size_max > MAX_DATA_SIZE {
            return err(
                "data_size",
                format!("{} bytes is more than the {} supported", self.data_size_max, MAX_DATA_SIZE),
            );
        }
        Ok(())
    }

    /// Key patterns and their parameters (Gaussian median and stddev, Zipf exponent).
    fn validate_key_patterns(&self) -> Result<(), ConfigError> {
        for (i, p) in self.key_pattern.iter().enumerate() {
            let field = "key_pattern";
            let which = if i == 0 { "SET" } else { "GET" };
            if *p == KeyPattern::Zipf && self.key_max < 1 {
                return err(field, format!("{which} pattern Z needs key_max >= 1 (Zipf keys are positive)"));
            }
            if *p == KeyPattern::Parallel && self.key_count() < self.total_clients() {
                return err(
                    field,
                    format!(
                        "{which} pattern P splits the {} keys among {} clients: fewer keys than clients",
                        self.key_count(),
                        self.total_clients()
                    ),
                );
            }
        }
        if let Some(m) = self.key_median {
            if !m.is_finite() || m < self.key_min as f64 || m > self.key_max as f64 {
                return err("key_median", format!("{m} is outside the key range [{}, {}]", self.key_min, self.key_max));
            }
        }
        if let Some(s) = self.key_stddev {
            if !s.is_finite() || s <= 0.0 {
                return err("key_stddev", format!("must be a positive number (got {s})"));
            }
        }
        if !(self.key_zipf_exp > 0.0 && self.key_zipf_exp < 5.0) {
            return err("key_zipf_exp", format!("must be within (0, 5) (got {})", self.key_zipf_exp));
        }
        Ok(())
    }

    /// How much to send: requests, test_time, rate (and allkeys' restrictions).
    fn validate_amount(&self) -> Result<(), ConfigError> {
        match self.requests {
            Some(Requests::PerClient(0)) => return err("requests", "must be at least 1".into()),
            Some(Requests::AllKeys) if self.warmup > 0.0 => {
                return err("warmup", "cannot be combined with requests = allkeys (every key is written once)".into())
            }
            Some(Requests::AllKeys) if self.test_time.is_some() => {
                return err("test_time", "cannot be combined with requests = allkeys".into())
            }
            Some(Requests::AllKeys) if self.ratio[0] > 0 && self.ratio[1] > 0 => {
                return err(
                    "ratio",
                    format!(
                        "requests = allkeys walks the key range with one command: ratio must be N:0 (populate) or 0:N (read), not {}:{}",
                        self.ratio[0], self.ratio[1]
                    ),
                )
            }
            _ => {}
        }
        if let Some(t) = self.test_time {
            if !t.is_finite() || t <= 0.0 {
                return err("test_time", format!("must be a positive duration (got {t} s)"));
            }
            if self.requests.is_some() {
                return err("test_time", "give either requests or test_time, not both".into());
            }
        }
        if let Some(r) = self.rate {
            if !r.is_finite() || r <= 0.0 {
                return err("rate", format!("must be a positive number of requests per second (got {r})"));
            }
        }
        Ok(())
    }

    /// Durations: warm-up, timeouts, the late threshold, the spin.
    fn validate_durations(&self) -> Result<(), ConfigError> {
        let secs = [
            ("warmup", self.warmup, true),
            ("connect_timeout", self.connect_timeout, false),
            ("response_timeout", self.response_timeout, false),
            ("late_threshold", self.late_threshold, true),
        ];
        for (name, v, zero_ok) in secs {
            if !v.is_finite() || v < 0.0 || (!zero_ok && v == 0.0) {
                return err(
                    name,
                    format!("must be a {} duration (got {v} s)", if zero_ok { "non-negative" } else { "positive" }),
                );
            }
        }
        if let Spin::Micros(us) = self.spin {
            if !us.is_finite() || us <= 0.0 || us > MAX_SPIN_US {
                return err(
                    "spin",
                    format!("must be \"auto\", \"off\" or microseconds in (0, {MAX_SPIN_US}] (got {us})"),
                );
            }
        }
        Ok(())
    }

    /// Requests per client, or `None` for time-limited runs (after defaults are applied).
    pub fn effective_requests(&self) -> Option<Requests> {
        match (self.requests, self.test_time) {
            (Some(r), _) => Some(r),
            (None, Some(_)) => None,
            (None, None) => Some(Requests::PerClient(10_000)), // memtier's default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_memtier_like() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.ratio, [1, 10]);
        assert_eq!(c.effective_requests(), Some(Requests::PerClient(10_000)));
        assert_eq!(c.total_clients(), 200);
    }

    #[test]
    fn json_roundtrip_and_unknown_fields() {
        let c = Config::from_json(
            r#"{"servers":["127.0.0.1:1"],"protocol":"redis","ratio":[1,0],
            "key_pattern":["P","G"],"requests":"all_keys","key_min":1,"key_max":1000,"clients":1,"threads":1}"#,
        )
        .unwrap();
        assert_eq!(c.protocol, Protocol::Redis);
        assert_eq!(c.key_pattern, [KeyPattern::Parallel, KeyPattern::Gaussian]);
        assert_eq!(c.requests, Some(Requests::AllKeys));
        let e = Config::from_json(r#"{"sever":["x:1"]}"#).unwrap_err();
        assert_eq!(e.field, "sever");
        let e = Config::from_json(r#"{"requests":{"per_client":0}}"#).unwrap_err();
        assert_eq!(e.field, "requests");
    }

    #[test]
    fn spin_is_auto_off_or_microseconds() {
        assert_eq!(Config::default().spin, Spin::Policy(SpinPolicy::Auto));
        for (text, spin) in [
            (r#""auto""#, Spin::Policy(SpinPolicy::Auto)),
            (r#""off""#, Spin::Policy(SpinPolicy::Off)),
            ("12.5", Spin::Micros(12.5)),
        ] {
            let c = Config::from_json(&format!(r#"{{"spin":{text}}}"#)).unwrap();
            assert_eq!(c.spin, spin);
            assert_eq!(Config::from_json(&serde_json::to_string(&c).unwrap()).unwrap().spin, spin);
        }
        assert!(Config::from_json(r#"{"spin":"sometimes"}"#).is_err());
        for bad in [0.0, -1.0, MAX_SPIN_US + 1.0] {
            let c = Config { spin: Spin::Micros(bad), ..Config::default() };
            assert_eq!(c.validate().unwrap_err().field, "spin", "{bad}");
        }
    }

    #[test]
    fn nonsense_is_rejected_naming_the_field() {
        type Breaker = Box<dyn Fn(&mut Config)>;
        let bad: Vec<(&str, Breaker)> = vec![
            (
                "key_min",
                Box::new(|c| {
                    c.key_min = 10;
                    c.key_max = 5
                }),
            ),
            ("ratio", Box::new(|c| c.ratio = [0, 0])),
            ("pipeline", Box::new(|c| c.pipeline = 0)),
            ("key_median", Box::new(|c| c.key_median = Some(2e7))),
            ("key_stddev", Box::new(|c| c.key_stddev = Some(-1.0))),
            ("key_zipf_exp", Box::new(|c| c.key_zipf_exp = 5.0)),
            (
                "data_size",
                Box::new(|c| {
                    c.data_size_min = 10;
                    c.data_size_max = 5
                }),
            ),
            ("server", Box::new(|c| c.servers = vec!["nohost".into()])),
            ("server", Box::new(|c| c.servers = vec!["h:99999".into()])),
            (
                "key_pattern",
                Box::new(|c| {
                    c.key_pattern = [KeyPattern::Parallel; 2];
                    c.key_min = 1;
                    c.key_max = 10
                }),
            ),
            (
                "test_time",
                Box::new(|c| {
                    c.test_time = Some(1.0);
                    c.requests = Some(Requests::PerClient(5))
                }),
            ),
            ("rate", Box::new(|c| c.rate = Some(0.0))),
            (
                "warmup",
                Box::new(|c| {
                    c.requests = Some(Requests::AllKeys);
                    c.warmup = 1.0
                }),
            ),
            (
                "ratio",
                Box::new(|c| {
                    c.requests = Some(Requests::AllKeys);
                    c.ratio = [1, 1]
                }),
            ),
        ];
        for (field, f) in bad {
            let mut c = Config::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
    }
}

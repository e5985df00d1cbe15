"""`KvConfig`: what a key-value load does — the keys of a spec's ``kv = {...}`` phase table.

Field names are memtier_benchmark's long options in snake_case, with its defaults,
so a memtier command line translates one to one (``--key-pattern=G:G`` →
``key_pattern = "G:G"``). Every field is checked on its own by pydantic; the
combinations (key range vs pattern, allkeys vs ratio, …) are checked by the engine
itself, so Python and Rust can never disagree about what is valid. Errors always
carry the field name in their ``loc``.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from perflab.durations import parse_duration

Protocol = Literal["memcache_text", "memcache_binary", "redis"]
PATTERN_LETTERS = "SRGPZ"
DEFAULT_PORTS = {"redis": 6379, "memcache_text": 11211, "memcache_binary": 11211}

_RATIO = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")
_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


#: The longest fixed spin before a wait (the engine's `MAX_SPIN_US`).
MAX_SPIN_S = 1e-3


def _duration(value: Any, *, allow_zero: bool = False) -> float:
    if allow_zero and value in (0, 0.0, "0"):
        return 0.0
    return parse_duration(value)


class KvConfig(BaseModel):
    """A key-value load (memtier_benchmark options; see each field).

    Request count: ``requests`` (per connection, or ``"allkeys"``) or ``test_time``;
    with neither, each connection sends 10,000 requests (memtier's default).
    Closed loop (each connection keeps ``pipeline`` requests in flight) unless
    ``rate`` is given (open loop).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str | list[str] = Field(
        "127.0.0.1",
        description='"host:port", or a list of them: connections are spread round-robin over all '
        "(connection i goes to server i mod n). A host without a port gets `port`.",
    )
    port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="port for servers given without one; default 6379 for redis, 11211 for memcache",
    )
    instances: int = Field(
        1,
        ge=1,
        le=4096,
        description="server processes behind each address, on consecutive ports from its port "
        "(an instance sweep): host:11211 with instances = 3 is host:11211, host:11212 and "
        "host:11213, and the connections are spread over all of them",
    )
    protocol: Protocol = Field(
        "redis", description="memcache_text, memcache_binary or redis (RESP2)"
    )
    ratio: str = Field(
        "1:10", description='"SET:GET": per cycle, each connection sends SET sets then GET gets'
    )
    requests: int | Literal["allkeys"] | None = Field(
        None,
        description='requests per connection, or "allkeys": with key_pattern P every key of '
        "[key_min, key_max] exactly once across all connections (a populate step); "
        "ratio must then be N:0 or 0:N",
    )
    test_time: float | None = Field(
        None, description='measured duration ("20s", "500ms", or seconds), after the warmup'
    )
    clients: int = Field(50, ge=1, description="connections per thread (memtier -c)")
    threads: int = Field(
        4, ge=1, le=1024, description="worker threads, one event loop each (memtier -t)"
    )
    pipeline: int = Field(1, ge=1, le=65536, description="requests in flight per connection")
    key_prefix: str = Field("memtier-", description="keys are key_prefix followed by the key index")
    key_min: int = Field(0, ge=0, description="smallest key index (memtier --key-minimum)")
    key_max: int = Field(10_000_000, ge=0, description="largest key index (memtier --key-maximum)")
    key_pattern: str = Field(
        "R:R",
        description='"SET:GET" patterns: S sequential (each connection from key_min, wrapping), '
        "R uniform, G Gaussian (key_median, key_stddev; draws outside the range are "
        "redrawn), P parallel (each of the threads × clients connections walks its own "
        "slice), Z Zipf (key_zipf_exp). One letter means the same for both",
    )
    key_median: float | None = Field(
        None, description="Gaussian centre (default: middle of the key range)"
    )
    key_stddev: float | None = Field(
        None, gt=0, description="Gaussian standard deviation (default: range/6)"
    )
    key_zipf_exp: float = Field(1.0, gt=0, lt=5, description="Zipf exponent s: P(key k) ∝ k^-s")
    data_size: int | str = Field(
        32,
        description='value size in bytes, or a range "min-max" (sizes drawn per data_size_pattern)',
    )
    data_size_pattern: Literal["R", "S"] = Field(
        "R", description="for a size range: R uniform per request, S growing with the key index"
    )
    seed: int = Field(5381, ge=0, lt=2**64, description="seed of every random stream")
    randomize: bool = Field(
        False, description="draw the seed from the clock (the result records it)"
    )
    distinct_client_seed: bool = Field(
        False,
        description="each connection seeds its streams with seed + its index "
        "(otherwise all connections draw the same random keys, as in memtier)",
    )
    rate: float | None = Field(
        None, gt=0, description="open loop: total requests per second over all connections"
    )
    arrivals: Literal["constant", "poisson"] = Field(
        "constant", description="open-loop arrival process"
    )
    warmup: float = Field(
        0.0, description="duration at the start whose requests are sent but not measured"
    )
    connect_timeout: float = Field(5.0, description="time to establish each connection")
    response_timeout: float = Field(
        10.0,
        description="a connection with requests in flight and no reply for this long fails the run",
    )
    late_threshold: float = Field(
        0.001,
        description="open loop: a request sent more than this after its intended time counts as late",
    )
    source_addresses: list[str] = Field(
        default_factory=list,
        description="local IPs to bind connections to, round-robin; default automatic (loopback "
        "servers with >16,000 connections get sources spread over 127.0.0.0/8)",
    )
    verify: bool = Field(
        False,
        description="check that each GET hit returns the value perflab writes for its "
        "key: key, ':', then 'x' up to the value's length",
    )
    io: Literal["auto", "uring", "epoll"] = Field(
        "auto",
        description="the load generator's I/O loop: auto (io_uring where the kernel allows it, "
        "else epoll), uring (io_uring: batched submission, multishot receive into provided "
        "buffers; an error where unavailable) or epoll; the result says which ran",
    )
    spin: Literal["auto", "off"] | float = Field(
        "auto",
        description="spin before sleeping, when a worker waits for replies: auto (up to 50 µs, "
        "while at most 8 requests are in flight on the worker and probes find spinning costs "
        "less CPU per reply than sleeping, or raises throughput far more than it raises "
        'that), off, or a duration ("20us", at most 1 ms) to spin '
        "before every such wait; spinning saves the client's sleep and the server's wake-up "
        "of it where replies come within microseconds (docs/load-generator.md); the result "
        "counts the spins",
    )

    # ----- single fields -------------------------------------------------------------

    @field_validator("server")
    @classmethod
    def _servers(cls, v: str | list[str]) -> str | list[str]:
        items = [v] if isinstance(v, str) else v
        if not items:
            raise ValueError("at least one server is needed")
        for s in items:
            if not isinstance(s, str) or not s.strip() or " " in s.strip():
                raise ValueError(f"bad server {s!r} (use host:port)")
        return v

    @field_validator("ratio", mode="before")
    @classmethod
    def _ratio(cls, v: Any) -> str:
        if isinstance(v, (list, tuple)) and len(v) == 2:
            v = f"{v[0]}:{v[1]}"
        match = _RATIO.match(v) if isinstance(v, str) else None
        if match is None:
            raise ValueError(f'ratio must be "SET:GET" with whole numbers, e.g. "1:10" (got {v!r})')
        a, b = map(int, match.groups())
        if a == 0 and b == 0:
            raise ValueError('ratio "0:0" sends nothing')
        return f"{a}:{b}"

    @field_validator("requests", mode="before")
    @classmethod
    def _requests(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        if isinstance(v, bool) or (isinstance(v, int) and v < 1):
            raise ValueError(f'requests must be a positive count or "allkeys" (got {v!r})')
        return v

    @field_validator("key_pattern", mode="before")
    @classmethod
    def _pattern(cls, v: Any) -> str:
        if not isinstance(v, str):
            raise ValueError(f'key_pattern must be "SET:GET" letters, e.g. "G:G" (got {v!r})')
        text = v.strip().upper()
        if len(text) == 1:
            text = f"{text}:{text}"
        if not re.fullmatch(rf"[{PATTERN_LETTERS}]:[{PATTERN_LETTERS}]", text):
            raise ValueError(
                f'unknown key pattern {v!r}: use two of S, R, G, P, Z as SET:GET, e.g. "P:P"'
            )
        return text

    @field_validator("data_size", mode="before")
    @classmethod
    def _data_size(cls, v: Any) -> int | str:
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        if isinstance(v, bool):
            raise ValueError('data_size must be a byte count or a range "min-max"')
        if isinstance(v, int):
            if v < 1:
                raise ValueError(f"data_size must be at least 1 byte (got {v})")
            return v
        if isinstance(v, str) and (m := _RANGE.match(v)):
            lo, hi = map(int, m.groups())
            if lo < 1 or lo > hi:
                raise ValueError(f"data_size range {v!r} must have 1 <= min <= max")
            return f"{lo}-{hi}"
        raise ValueError(f'data_size must be a byte count or a range "min-max" (got {v!r})')

    @field_validator("test_time", mode="before")
    @classmethod
    def _test_time(cls, v: Any) -> float | None:
        return None if v is None else _duration(v)

    @field_validator("warmup", "late_threshold", mode="before")
    @classmethod
    def _zero_ok_duration(cls, v: Any) -> float:
        return _duration(v, allow_zero=True)

    @field_validator("spin", mode="before")
    @classmethod
    def _spin(cls, v: Any) -> str | float:
        if v in ("auto", "off"):
            return str(v)
        if isinstance(v, str) and not any(c.isdigit() for c in v):
            raise ValueError(f'must be "auto", "off" or a duration such as "20us" (got {v!r})')
        seconds = _duration(v)
        if seconds > MAX_SPIN_S:
            raise ValueError(f"a spin of at most 1 ms (1000us) before each wait (got {v!r})")
        return seconds

    @field_validator("connect_timeout", "response_timeout", mode="before")
    @classmethod
    def _positive_duration(cls, v: Any) -> float:
        return _duration(v)

    @field_validator("source_addresses")
    @classmethod
    def _sources(cls, v: list[str]) -> list[str]:
        for s in v:
            try:
                ipaddress.ip_address(s)
            except ValueError:
                raise ValueError(f"{s!r} is not an IP address") from None
        return v

    # ----- the whole ---------------------------------------------------------------

    @model_validator(mode="after")
    def _engine_check(self) -> KvConfig:
        from perflab import _native

        try:
            _native.kv_check_config(json.dumps(self.to_engine()))
        except ValueError as e:
            field, message = (
                e.args[0] if len(e.args) == 1 and isinstance(e.args[0], tuple) else e.args
            )
            loc = ENGINE_FIELDS.get(field, field)
            value = getattr(self, loc, None) if loc else None
            raise ValidationError.from_exception_data(
                "KvConfig",
                [
                    InitErrorDetails(
                        type=PydanticCustomError("kv_config", "{message}", {"message": message}),
                        loc=(loc,) if loc else (),
                        input=value,
                    )
                ],
            ) from None
        return self

    @property
    def servers(self) -> list[str]:
        """Servers as "host:port", `port` (or the protocol's default) filled in."""
        items = [self.server] if isinstance(self.server, str) else list(self.server)
        port = self.port or DEFAULT_PORTS[self.protocol]
        given = [_with_port(s.strip(), port) for s in items]
        if self.instances == 1:
            return given
        out = []
        for s in given:
            host, _, first = s.rpartition(":")
            out += [f"{host}:{int(first) + i}" for i in range(self.instances)]
        return out

    @property
    def data_size_range(self) -> tuple[int, int]:
        if isinstance(self.data_size, int):
            return self.data_size, self.data_size
        lo, hi = self.data_size.split("-")
        return int(lo), int(hi)

    def to_engine(self) -> dict[str, Any]:
        """The engine's normalised form (durations in seconds, pairs as lists)."""
        sets, gets = map(int, self.ratio.split(":"))
        lo, hi = self.data_size_range
        if self.requests == "allkeys":
            requests: Any = "all_keys"
        elif self.requests is None:
            requests = None
        else:
            requests = {"per_client": self.requests}
        return {
            "servers": self.servers,
            "protocol": self.protocol,
            "ratio": [sets, gets],
            "requests": requests,
            "test_time": self.test_time,
            "clients": self.clients,
            "threads": self.threads,
            "pipeline": self.pipeline,
            "key_prefix": self.key_prefix,
            "key_min": self.key_min,
            "key_max": self.key_max,
            "key_pattern": self.key_pattern.split(":"),
            "key_median": self.key_median,
            "key_stddev": self.key_stddev,
            "key_zipf_exp": self.key_zipf_exp,
            "data_size_min": lo,
            "data_size_max": hi,
            "data_size_pattern": self.data_size_pattern,
            "seed": self.seed,
            "randomize": self.randomize,
            "distinct_client_seed": self.distinct_client_seed,
            "rate": self.rate,
            "arrivals": self.arrivals,
            "warmup": self.warmup,
            "connect_timeout": self.connect_timeout,
            "response_timeout": self.response_timeout,
            "late_threshold": self.late_threshold,
            "source_addresses": self.source_addresses,
            "verify": self.verify,
            "io": self.io,
            "spin": self.spin if isinstance(self.spin, str) else self.spin * 1e6,
        }

    def describe(self) -> str:
        """One line for humans: protocol, servers, shape of the load."""
        servers = self.servers
        where = servers[0] if len(servers) == 1 else f"{len(servers)} servers ({servers[0]}, …)"
        amount = (
            f"{self.test_time:g} s" + (f" after {self.warmup:g} s warmup" if self.warmup else "")
            if self.test_time
            else "all keys"
            if self.requests == "allkeys"
            else f"{self.requests or 10000} request{'s' if self.requests != 1 else ''}/connection"
        )
        loop = (
            f"open loop {self.rate:g} req/s ({self.arrivals})"
            if self.rate
            else f"closed loop, pipeline {self.pipeline}"
        )
        threads = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        return (
            f"{self.protocol} → {where}: {threads} × {self.clients} connections, "
            f"{loop}, ratio {self.ratio}, keys {self.key_pattern} in [{self.key_min}, {self.key_max}], "
            f"{self.data_size} B values, {amount}"
        )


# engine field → KvConfig field, where they differ
ENGINE_FIELDS = {"servers": "server", "data_size_min": "data_size", "data_size_max": "data_size"}


def _with_port(s: str, port: int) -> str:
    """host → host:port; a bare IPv6 literal gets brackets."""
    if s.startswith("["):
        return s if "]:" in s else f"{s}:{port}"
    if s.count(":") > 1:  # IPv6 literal without port
        return f"[{s}]:{port}"
    return s if ":" in s else f"{s}:{port}"


def validation_messages(err: ValidationError) -> list[tuple[str, str]]:
    """(field path, message) pairs of a KvConfig ValidationError, e.g. ("key_pattern", "unknown …")."""
    out = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(e["loc"][-1]), list(KvConfig.model_fields), n=1)
            msg = "unknown kv option" + (
                f" (did you mean '{close[0]}'?)"
                if close
                else f" (known: {', '.join(KvConfig.model_fields)})"
            )
        out.append((loc, msg))
    return out

//! Wire formats: encode SET/GET requests, parse one reply at a time.
//!
//! Parsers are incremental (`Incomplete` until a whole reply is buffered) and strict:
//! anything that is not a well-formed reply to the request at the head of the
//! pipeline is `Invalid`, because after that the stream cannot be trusted.
use crate::config::Protocol;
use crate::keys::{KeyNames, Op};
use crate::spare::{Decimal, SpareWriter, MAX_DECIMAL};
use crate::value::append_value;
use std::borrow::Cow;

/// What a server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// SET accepted.
    Stored,
    /// GET found the key; the value is `buf[start..end]`.
    Hit { start: usize, end: usize },
    /// GET did not find the key.
    Miss,
    /// The server refused the command (e.g. out of memory); text at `buf[start..end]`,
    /// `status` the binary protocol's status code (0 for the other protocols).
    Error { start: usize, end: usize, status: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed.
    Incomplete,
    /// One reply of `len` bytes.
    Complete { len: usize, reply: Reply },
    /// Not a valid reply: the connection is out of sync or the peer is not this server.
    Invalid(String),
}

/// Longest status/header line accepted before calling the stream garbage.
const MAX_LINE: usize = 4096;
/// Largest value length a reply may announce.
const MAX_VALUE: usize = 1 << 30;

const BIN_REQ: u8 = 0x80;
const BIN_RES: u8 = 0x81;
const BIN_GET: u8 = 0x00;
const BIN_SET: u8 = 0x01;
const BIN_HEADER: usize = 24;
const BIN_KEY_ENOENT: u16 = 0x0001;

/// Append one request for key `key` (its name from `names`); returns its size in bytes.
/// Inlined whole: a loop that sends many requests calls it with its protocol a constant.
#[inline(always)]
pub fn encode(
    proto: Protocol,
    out: &mut Vec<u8>,
    op: Op,
    names: &KeyNames,
    key: u64,
    size: usize,
    opaque: u32,
) -> usize {
    let start = out.len();
    let key = Decimal::of(key);
    match proto {
        Protocol::MemcacheText => encode_text(out, op, names, key, size),
        Protocol::MemcacheBinary => encode_binary(out, op, names, key, size, opaque),
        Protocol::Redis => encode_redis(out, op, names, key, size),
    }
    out.len() - start
}

/// The rest of a text or RESP SET, from its key's name on: the name, `sep`, the value's
/// size, CRLF, the value, CRLF.
fn finish_set<const N: usize>(out: &mut Vec<u8>, names: &KeyNames, key: Decimal, sep: &[u8; N], size: usize) {
    let mut w = SpareWriter::new(out, names.room() + N + MAX_DECIMAL + 2);
    let name = names.put(&mut w, key);
    w.put(sep);
    w.put_decimal(Decimal::of(size as u64));
    w.put(b"\r\n");
    drop(w);
    append_value(out, name, size);
    out.extend_from_slice(b"\r\n");
}

#[inline]
fn encode_text(out: &mut Vec<u8>, op: Op, names: &KeyNames, key: Decimal, size: usize) {
    match op {
        Op::Get => {
            let mut w = SpareWriter::new(out, 4 + names.room() + 2);
            w.put(b"get ");
            names.put(&mut w, key);
            w.put(b"\r\n");
        }
        Op::Set => {
            SpareWriter::new(out, 4).put(b"set ");
            finish_set(out, names, key, b" 0 0 ", size);
        }
    }
}

#[inline]
fn encode_binary(out: &mut Vec<u8>, op: Op, names: &KeyNames, key: Decimal, size: usize, opaque: u32) {
    let set = op == Op::Set;
    let key_len = names.len(key);
    let extras = if set { 8 } else { 0 };
    let body = extras + key_len + if set { size } else { 0 };
    // the header (and a SET's flags and expiry, zero) in one piece: data type, vbucket
    // and cas are zero too
    let mut head = [0u8; BIN_HEADER + 8];
    head[0] = BIN_REQ;
    head[1] = if set { BIN_SET } else { BIN_GET };
    head[2..4].copy_from_slice(&(key_len as u16).to_be_bytes());
    head[4] = extras as u8;
    head[8..12].copy_from_slice(&(body as u32).to_be_bytes());
    head[12..16].copy_from_slice(&opaque.to_be_bytes());
    let mut w = SpareWriter::new(out, head.len() + names.room());
    w.put_first(&head, BIN_HEADER + extras);
    let name = names.put(&mut w, key);
    drop(w);
    if set {
        append_value(out, name, size);
    }
}

#[inline]
fn encode_redis(out: &mut Vec<u8>, op: Op, names: &KeyNames, key: Decimal, size: usize) {
    let key_len = Decimal::of(names.len(key) as u64);
    match op {
        Op::Get => {
            let mut w = SpareWriter::new(out, 15 + MAX_DECIMAL + 2 + names.room() + 2);
            w.put(b"*2\r\n$3\r\nGET\r\n$");
            w.put_decimal(key_len);
            w.put(b"\r\n");
            names.put(&mut w, key);
            w.put(b"\r\n");
        }
        Op::Set => {
            let mut w = SpareWriter::new(out, 15 + MAX_DECIMAL + 2);
            w.put(b"*3\r\n$3\r\nSET\r\n$");
            w.put_decimal(key_len);
            w.put(b"\r\n");
            drop(w);
            finish_set(out, names, key, b"\r\n$", size);
        }
    }
}

/// Parse the reply to `op` (sent with `opaque`, for a key whose name is `key_len` bytes
/// long) at the start of `buf`.
#[inline]
pub fn parse(proto: Protocol, buf: &[u8], op: Op, opaque: u32, key_len: usize) -> Parsed {
    match proto {
        Protocol::MemcacheText => parse_text(buf, op, key_len),
        Protocol::MemcacheBinary => parse_binary(buf, op, opaque),
        Protocol::Redis => parse_redis(buf, op),
    }
}

/// Name of a binary protocol response status (memcached's `protocol_binary.h`).
pub fn binary_status_name(status: u16) -> Option<&'static str> {
    Some(match status {
        0x0001 => "key not found",
        0x0002 => "key exists",
        0x0003 => "value too large",
        0x0004 => "invalid arguments",
        0x0005 => "item not stored",
        0x0006 => "incr/decr on a non-numeric value",
        0x0007 => "vbucket belongs to another server",
        0x0008 => "authentication error",
        0x0009 => "authentication continue",
        0x0081 => "unknown command",
        0x0082 => "out of memory",
        0x0083 => "not supported",
        0x0084 => "internal error",
        0x0085 => "busy",
        0x0086 => "temporary failure",
        _ => return None,
    })
}

/// The kind an error reply is counted under, and the server's message (`text` is the
/// reply's `buf[start..end]` of `Reply::Error`):
/// - memcache text: the status line, e.g. `SERVER_ERROR object too large for cache`,
///   `CLIENT_ERROR bad data chunk`, `ERROR`, `NOT_STORED` (the message adds nothing);
/// - memcache binary: the status by name, e.g. `value too large`, `out of memory`
///   (`status 0x00ab` when unknown); the message is the reply's body;
/// - redis: the error code, i.e. the first word (`OOM`, `WRONGTYPE`, `ERR`); the message
///   is the whole error line.
pub fn error_kind(proto: Protocol, text: &[u8], status: u16) -> (Cow<'_, [u8]>, &[u8]) {
    match proto {
        Protocol::MemcacheText => (Cow::Borrowed(text), &[]),
        Protocol::MemcacheBinary => {
            let kind = match binary_status_name(status) {
                Some(name) => Cow::Borrowed(name.as_bytes()),
                None => Cow::Owned(format!("status 0x{status:04x}").into_bytes()),
            };
            (kind, text)
        }
        Protocol::Redis => {
            let word = text.split(|&b| b == b' ').next().unwrap_or_default();
            let kind = if word.is_empty() { Cow::Borrowed(&b"(empty error reply)"[..]) } else { Cow::Borrowed(word) };
            (kind, text)
        }
    }
}

/// Printable excerpt of bad bytes for an error message.
pub fn excerpt(buf: &[u8]) -> String {
    let n = buf.len().min(40);
    let mut s: String = buf[..n]
        .iter()
        .map(|&b| if (0x20..0x7f).contains(&b) { (b as char).to_string() } else { format!("\\x{b:02x}") })
        .collect();
    if buf.len() > n {
        s.push('…');
    }
    format!("\"{s}\"")
}

/// A reply's error message, formatted out of the hot path (the parsers stay small).
#[cold]
#[inline(never)]
fn cold_format(args: std::fmt::Arguments<'_>) -> String {
    args.to_string()
}

#[cold]
fn invalid(args: std::fmt::Arguments<'_>) -> Parsed {
    Parsed::Invalid(cold_format(args))
}

/// The first line (without CRLF) and the length including CRLF.
fn line(buf: &[u8]) -> Result<Option<(&[u8], usize)>, String> {
    match memchr::memchr(b'\n', &buf[..buf.len().min(MAX_LINE)]) {
        Some(i) if i > 0 && buf[i - 1] == b'\r' => Ok(Some((&buf[..i - 1], i + 1))),
        Some(_) => Err(cold_format(format_args!("line not ended by CRLF: {}", excerpt(buf)))),
        None if buf.len() >= MAX_LINE => {
            Err(cold_format(format_args!("no line end within {MAX_LINE} bytes: {}", excerpt(buf))))
        }
        None => Ok(None),
    }
}

/// A decimal of 1 to 19 digits (no sign, no spaces): one pass over the bytes, where
/// `str::parse` would take two after a UTF-8 check (a text GET parses one per reply).
#[inline]
fn parse_usize(b: &[u8]) -> Option<usize> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let mut v = 0usize;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as usize; // 19 digits stay below 2^64
    }
    Some(v)
}

/// The size field of a GET hit's header line `VALUE <key> <flags> <bytes> [<cas>]`
/// (without its CRLF), `key_len` the length of the key's name the GET sent; `None` where
/// `l` is not such a line.
#[inline]
fn value_size(l: &[u8], key_len: usize) -> Option<usize> {
    let rest = l.strip_prefix(b"VALUE ")?;
    let after = |field: &[u8]| field.iter().position(|&b| b == b' ').map(|i| i + 1);
    // the key: memcached echoes the GET's, so its end is known; looked for where it is not
    let rest = match rest.get(key_len) {
        Some(b' ') => &rest[key_len + 1..],
        _ => &rest[after(rest)?..],
    };
    let rest = &rest[after(rest)?..]; // the flags
    let bytes = match after(rest) {
        Some(i) => &rest[..i - 1], // a cas follows
        None => rest,
    };
    parse_usize(bytes)
}

fn is_text_error(l: &[u8]) -> bool {
    l == b"ERROR" || l.starts_with(b"SERVER_ERROR") || l.starts_with(b"CLIENT_ERROR")
}

#[inline]
fn parse_text(buf: &[u8], op: Op, key_len: usize) -> Parsed {
    let (l, n) = match line(buf) {
        Ok(Some(x)) => x,
        Ok(None) => return Parsed::Incomplete,
        Err(e) => return Parsed::Invalid(e),
    };
    let done = |reply| Parsed::Complete { len: n, reply };
    if is_text_error(l) {
        return done(Reply::Error { start: 0, end: l.len(), status: 0 });
    }
    match op {
        Op::Set => match l {
            b"STORED" => done(Reply::Stored),
            b"NOT_STORED" | b"EXISTS" | b"NOT_FOUND" => done(Reply::Error { start: 0, end: l.len(), status: 0 }),
            _ => invalid(format_args!("unexpected reply to set: {}", excerpt(buf))),
        },
        Op::Get => {
            if l == b"END" {
                return done(Reply::Miss);
            }
            match value_size(l, key_len) {
                Some(len) if len <= MAX_VALUE => {
                    let end = n + len;
                    let total = end + 7; // "\r\nEND\r\n"
                    if buf.len() < total {
                        return Parsed::Incomplete;
                    }
                    if &buf[end..total] != b"\r\nEND\r\n" {
                        return invalid(format_args!(
                            "value of {len} bytes not followed by END: {}",
                            excerpt(&buf[end..])
                        ));
                    }
                    Parsed::Complete { len: total, reply: Reply::Hit { start: n, end } }
                }
                _ => invalid(format_args!("unexpected reply to get: {}", excerpt(buf))),
            }
        }
    }
}

#[inline]
fn parse_binary(buf: &[u8], op: Op, opaque: u32) -> Parsed {
    if buf.is_empty() {
        return Parsed::Incomplete;
    }
    if buf[0] != BIN_RES {
        return invalid(format_args!("not a binary protocol response (magic 0x{:02x}): {}", buf[0], excerpt(buf)));
    }
    if buf.len() < BIN_HEADER {
        return Parsed::Incomplete;
    }
    let u16_at = |i: usize| u16::from_be_bytes([buf[i], buf[i + 1]]) as usize;
    let u32_at = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    let opcode = buf[1];
    let key_len = u16_at(2);
    let extras = buf[4] as usize;
    let status = u16_at(6) as u16;
    let body = u32_at(8) as usize;
    let got_opaque = u32_at(12);
    let want = if op == Op::Get { BIN_GET } else { BIN_SET };
    if opcode != want {
        return invalid(format_args!("reply opcode 0x{opcode:02x} to a request with opcode 0x{want:02x}"));
    }
    if body > MAX_VALUE || extras + key_len > body {
        return invalid(format_args!("reply header announces an impossible body ({body} bytes)"));
    }
    if got_opaque != opaque {
        return invalid(format_args!("reply out of order (opaque {got_opaque}, expected {opaque})"));
    }
    let len = BIN_HEADER + body;
    if buf.len() < len {
        return Parsed::Incomplete;
    }
    let reply = match (status, op) {
        (0, Op::Set) => Reply::Stored,
        (0, Op::Get) => Reply::Hit { start: BIN_HEADER + extras + key_len, end: len },
        (BIN_KEY_ENOENT, Op::Get) => Reply::Miss,
        _ => Reply::Error { start: BIN_HEADER + extras + key_len, end: len, status },
    };
    Parsed::Complete { len, reply }
}

#[inline]
fn parse_redis(buf: &[u8], op: Op) -> Parsed {
    let (l, n) = match line(buf) {
        Ok(Some(x)) => x,
        Ok(None) => return Parsed::Incomplete,
        Err(e) => return Parsed::Invalid(e),
    };
    match (l.first(), op) {
        (Some(b'-'), _) => Parsed::Complete { len: n, reply: Reply::Error { start: 1, end: l.len(), status: 0 } },
        (Some(b'+'), Op::Set) if l == b"+OK" => Parsed::Complete { len: n, reply: Reply::Stored },
        (Some(b'$'), Op::Get) if l == b"$-1" => Parsed::Complete { len: n, reply: Reply::Miss },
        (Some(b'$'), Op::Get) => match parse_usize(&l[1..]) {
            Some(len) if len <= MAX_VALUE => {
                let end = n + len;
                if buf.len() < end + 2 {
                    return Parsed::Incomplete;
                }
                if &buf[end..end + 2] != b"\r\n" {
                    return invalid(format_args!("bulk string of {len} bytes not ended by CRLF"));
                }
                Parsed::Complete { len: end + 2, reply: Reply::Hit { start: n, end } }
            }
            _ => invalid(format_args!("bad bulk string length: {}", excerpt(buf))),
        },
        _ => {
            invalid(format_args!("unexpected reply to {}: {}", if op == Op::Get { "GET" } else { "SET" }, excerpt(buf)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Protocol::*;

    /// Request `op` for key `key` named with `prefix`, after some bytes already queued.
    fn enc(p: Protocol, op: Op, prefix: &str, key: u64, size: usize, opaque: u32) -> Vec<u8> {
        let mut v = b"queued".to_vec();
        let n = encode(p, &mut v, op, &KeyNames::new(prefix), key, size, opaque);
        assert_eq!(n, v.len() - 6);
        v.split_off(6)
    }

    #[test]
    fn text_requests() {
        assert_eq!(enc(MemcacheText, Op::Get, "k", 1, 0, 0), b"get k1\r\n");
        assert_eq!(enc(MemcacheText, Op::Set, "k", 1, 5, 0), b"set k1 0 0 5\r\nk1:xx\r\n");
        // a prefix longer than the block copied whole, key 0, the largest key
        let long = "p".repeat(40);
        assert_eq!(enc(MemcacheText, Op::Get, &long, 0, 0, 0), format!("get {long}0\r\n").as_bytes());
        let want = format!("set {long}{m} 0 0 70\r\n{long}{m}:{x}\r\n", m = u64::MAX, x = "x".repeat(9));
        assert_eq!(enc(MemcacheText, Op::Set, &long, u64::MAX, 70, 0), want.as_bytes());
    }

    #[test]
    fn redis_requests() {
        assert_eq!(enc(Redis, Op::Get, "k", 1, 0, 0), b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n");
        assert_eq!(enc(Redis, Op::Set, "k", 1, 3, 0), b"*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$3\r\nk1:\r\n");
    }

    #[test]
    fn binary_requests() {
        let g = enc(MemcacheBinary, Op::Get, "ab", 7, 0, 7);
        assert_eq!(g.len(), 24 + 3);
        assert_eq!(&g[..2], &[0x80, 0x00]);
        assert_eq!(&g[2..4], &[0, 3]);
        assert_eq!(&g[8..12], &3u32.to_be_bytes());
        assert_eq!(&g[12..16], &7u32.to_be_bytes());
        let s = enc(MemcacheBinary, Op::Set, "ab", 7, 10, 1);
        assert_eq!(s.len(), 24 + 8 + 3 + 10);
        assert_eq!(s[4], 8);
        assert_eq!(&s[8..12], &21u32.to_be_bytes());
        assert_eq!(&s[32..35], b"ab7");
        assert_eq!(&s[35..], b"ab7:xxxxxx");
    }

    #[test]
    fn text_replies() {
        assert_eq!(parse_text(b"STORED\r\n", Op::Set, 1), Parsed::Complete { len: 8, reply: Reply::Stored });
        assert_eq!(parse_text(b"STOR", Op::Set, 1), Parsed::Incomplete);
        assert_eq!(parse_text(b"END\r\nEND\r\n", Op::Get, 1), Parsed::Complete { len: 5, reply: Reply::Miss });
        let hit = b"VALUE k 0 3\r\nabc\r\nEND\r\n";
        assert_eq!(
            parse_text(hit, Op::Get, 1),
            Parsed::Complete { len: hit.len(), reply: Reply::Hit { start: 13, end: 16 } }
        );
        for cut in 0..hit.len() {
            assert_eq!(parse_text(&hit[..cut], Op::Get, 1), Parsed::Incomplete, "cut {cut}");
        }
        let cas = b"VALUE k 0 3 99\r\nabc\r\nEND\r\n";
        assert!(matches!(parse_text(cas, Op::Get, 1), Parsed::Complete { reply: Reply::Hit { .. }, .. }));
        // the GET's key length finds the name's end; a reply with another name is searched
        let named = b"VALUE memtier-12 7 3\r\nabc\r\nEND\r\n";
        for key_len in [10, 1, 3, 11, 100] {
            assert_eq!(
                parse_text(named, Op::Get, key_len),
                Parsed::Complete { len: named.len(), reply: Reply::Hit { start: 22, end: 25 } },
                "key length {key_len}"
            );
        }
        assert_eq!(value_size(b"VALUE k 0 12345678901", 1), Some(12_345_678_901));
        for bad in
            [&b"VALUE k 0"[..], b"VALUE k 0 ", b"VALUE k 0 x3", b"VALUE k 0 -3", b"VALUE k 0 12345678901234567890"]
        {
            assert_eq!(value_size(bad, 1), None, "{}", String::from_utf8_lossy(bad));
        }
        assert!(matches!(
            parse_text(b"SERVER_ERROR out of memory storing object\r\n", Op::Set, 1),
            Parsed::Complete { reply: Reply::Error { .. }, .. }
        ));
        assert!(matches!(parse_text(b"STORED\r\n", Op::Get, 1), Parsed::Invalid(_)));
        assert!(matches!(parse_text(b"HTTP/1.1 200 OK\r\n", Op::Get, 1), Parsed::Invalid(_)));
        assert!(matches!(parse_text(b"VALUE k 0 3\r\nabcdxEND\r\n", Op::Get, 1), Parsed::Invalid(_)));
        assert!(matches!(parse_text(b"garbage\n", Op::Set, 1), Parsed::Invalid(_)));
        assert!(matches!(parse_text(&[b'z'; 5000], Op::Set, 1), Parsed::Invalid(_)));
    }

    #[test]
    fn binary_replies() {
        let mut hit = vec![0x81, 0x00, 0, 0, 4, 0, 0, 0];
        hit.extend_from_slice(&7u32.to_be_bytes());
        hit.extend_from_slice(&5u32.to_be_bytes());
        hit.extend_from_slice(&[0; 8]);
        hit.extend_from_slice(&[0, 0, 0, 0, b'v', b'a', b'l']);
        assert_eq!(
            parse_binary(&hit, Op::Get, 5),
            Parsed::Complete { len: 31, reply: Reply::Hit { start: 28, end: 31 } }
        );
        for cut in 0..hit.len() {
            assert_eq!(parse_binary(&hit[..cut], Op::Get, 5), Parsed::Incomplete);
        }
        assert!(matches!(parse_binary(&hit, Op::Get, 6), Parsed::Invalid(_)));
        assert!(matches!(parse_binary(&hit, Op::Set, 5), Parsed::Invalid(_)));
        let mut miss = vec![0x81, 0x00, 0, 0, 0, 0, 0, 1];
        miss.extend_from_slice(&9u32.to_be_bytes());
        miss.extend_from_slice(&[0; 12]);
        miss.extend_from_slice(b"Not found");
        assert_eq!(parse_binary(&miss, Op::Get, 0), Parsed::Complete { len: 33, reply: Reply::Miss });
        let mut oom = miss.clone();
        oom[1] = 0x01;
        oom[7] = 0x82;
        assert!(matches!(parse_binary(&oom, Op::Set, 0), Parsed::Complete { reply: Reply::Error { .. }, .. }));
        assert!(matches!(parse_binary(b"STORED\r\n", Op::Set, 0), Parsed::Invalid(_)));
    }

    #[test]
    fn redis_replies() {
        assert_eq!(parse_redis(b"+OK\r\n", Op::Set), Parsed::Complete { len: 5, reply: Reply::Stored });
        assert_eq!(parse_redis(b"$-1\r\n", Op::Get), Parsed::Complete { len: 5, reply: Reply::Miss });
        assert_eq!(
            parse_redis(b"$3\r\nabc\r\n", Op::Get),
            Parsed::Complete { len: 9, reply: Reply::Hit { start: 4, end: 7 } }
        );
        assert_eq!(parse_redis(b"$3\r\nabc\r", Op::Get), Parsed::Incomplete);
        assert!(matches!(
            parse_redis(b"-OOM command not allowed\r\n", Op::Set),
            Parsed::Complete { reply: Reply::Error { .. }, .. }
        ));
        assert!(matches!(parse_redis(b"+OK\r\n", Op::Get), Parsed::Invalid(_)));
        assert!(matches!(parse_redis(b":1\r\n", Op::Get), Parsed::Invalid(_)));
        assert!(matches!(parse_redis(b"$3\r\nabcd\r\n", Op::Get), Parsed::Invalid(_)));
    }

    /// The kind and message of the error reply `buf` parses to.
    fn kind_of(p: Protocol, buf: &[u8], op: Op, opaque: u32) -> (String, String) {
        match parse(p, buf, op, opaque, 1) {
            Parsed::Complete { len, reply: Reply::Error { start, end, status } } => {
                assert_eq!(len, buf.len());
                let (kind, msg) = error_kind(p, &buf[start..end], status);
                (String::from_utf8_lossy(&kind).into_owned(), String::from_utf8_lossy(msg).into_owned())
            }
            other => panic!("not an error reply: {other:?}"),
        }
    }

    fn binary_reply(opcode: u8, status: u16, body: &[u8]) -> Vec<u8> {
        let mut r = vec![0x81, opcode, 0, 0, 0, 0];
        r.extend_from_slice(&status.to_be_bytes());
        r.extend_from_slice(&(body.len() as u32).to_be_bytes());
        r.extend_from_slice(&3u32.to_be_bytes());
        r.extend_from_slice(&[0; 8]);
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn text_error_kinds_are_the_status_line() {
        let k = |b: &[u8], op| kind_of(MemcacheText, b, op, 0).0;
        assert_eq!(
            k(b"SERVER_ERROR object too large for cache\r\n", Op::Set),
            "SERVER_ERROR object too large for cache"
        );
        assert_eq!(
            k(b"SERVER_ERROR out of memory storing object\r\n", Op::Set),
            "SERVER_ERROR out of memory storing object"
        );
        assert_eq!(k(b"CLIENT_ERROR bad data chunk\r\n", Op::Set), "CLIENT_ERROR bad data chunk");
        assert_eq!(k(b"ERROR\r\n", Op::Get), "ERROR");
        assert_eq!(k(b"SERVER_ERROR temporary failure\r\n", Op::Get), "SERVER_ERROR temporary failure");
        assert_eq!(k(b"NOT_STORED\r\n", Op::Set), "NOT_STORED");
        assert_eq!(kind_of(MemcacheText, b"ERROR\r\n", Op::Set, 0).1, "");
        // a miss is not an error, and neither are words that merely start like one
        assert_eq!(parse(MemcacheText, b"END\r\n", Op::Get, 0, 1), Parsed::Complete { len: 5, reply: Reply::Miss });
        assert!(matches!(parse(MemcacheText, b"ERRORS\r\n", Op::Set, 0, 1), Parsed::Invalid(_)));
    }

    #[test]
    fn binary_error_kinds_are_status_names() {
        let big = binary_reply(BIN_SET, 0x0003, b"Too large.");
        assert_eq!(kind_of(MemcacheBinary, &big, Op::Set, 3), ("value too large".into(), "Too large.".into()));
        let oom = binary_reply(BIN_SET, 0x0082, b"Out of memory");
        assert_eq!(kind_of(MemcacheBinary, &oom, Op::Set, 3).0, "out of memory");
        let odd = binary_reply(BIN_GET, 0x00ab, b"");
        assert_eq!(kind_of(MemcacheBinary, &odd, Op::Get, 3), ("status 0x00ab".into(), "".into()));
        // "key not found" answering a SET is an error; answering a GET it is a miss
        let nf = binary_reply(BIN_SET, 0x0001, b"Not found");
        assert_eq!(kind_of(MemcacheBinary, &nf, Op::Set, 3).0, "key not found");
        let miss = binary_reply(BIN_GET, 0x0001, b"Not found");
        assert_eq!(
            parse(MemcacheBinary, &miss, Op::Get, 3, 1),
            Parsed::Complete { len: miss.len(), reply: Reply::Miss }
        );
        assert_eq!(binary_status_name(0x0000), None);
    }

    #[test]
    fn redis_error_kinds_are_the_first_word() {
        let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
        assert_eq!(
            kind_of(Redis, oom, Op::Set, 0),
            ("OOM".into(), "OOM command not allowed when used memory > 'maxmemory'.".into())
        );
        let wt = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        assert_eq!(kind_of(Redis, wt, Op::Get, 0).0, "WRONGTYPE");
        assert_eq!(kind_of(Redis, b"-ERR unknown command 'GET'\r\n", Op::Get, 0).0, "ERR");
        assert_eq!(kind_of(Redis, b"-LOADING\r\n", Op::Get, 0), ("LOADING".into(), "LOADING".into()));
        assert_eq!(kind_of(Redis, b"-\r\n", Op::Set, 0).0, "(empty error reply)");
        assert_eq!(parse(Redis, b"$-1\r\n", Op::Get, 0, 1), Parsed::Complete { len: 5, reply: Reply::Miss });
    }

    #[test]
    fn excerpts_escape() {
        assert_eq!(excerpt(b"a\r\n\x00"), "\"a\\x0d\\x0a\\x00\"");
    }
}

//! Value bytes: a deterministic function of the key, so that a reader can check
//! that what comes back is what was written for that very key.
//!
//! The value of size n for key K is the first n bytes of `K ":" "xxxx…"`.

use std::ops::Range;

const FILL: [u8; 4096] = [b'x'; 4096];

/// Append to `out` the value of `size` bytes for the key whose name is `out[key]` (the
/// request's own copy of it).
pub fn append_value(out: &mut Vec<u8>, key: Range<usize>, size: usize) {
    out.reserve(size);
    let head = key.len().min(size);
    out.extend_from_within(key.start..key.start + head);
    let mut left = size - head;
    if left > 0 {
        out.push(b':');
        left -= 1;
    }
    while left > 0 {
        let n = left.min(FILL.len());
        out.extend_from_slice(&FILL[..n]);
        left -= n;
    }
}

/// Does `data` equal the value this generator writes for `key` (of data's length)?
pub fn is_value_of(key: &[u8], data: &[u8]) -> bool {
    let head = key.len().min(data.len());
    if data[..head] != key[..head] {
        return false;
    }
    let rest = &data[head..];
    match rest.split_first() {
        None => true,
        Some((colon, fill)) => *colon == b':' && fill.iter().all(|&b| b == b'x'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_layout_and_check() {
        // the value follows the key's name in the request, as in a SET
        let value = |key: &[u8], size: usize| {
            let mut v = key.to_vec();
            append_value(&mut v, 0..key.len(), size);
            v.split_off(key.len())
        };
        let mut v = value(b"memtier-12", 16);
        assert_eq!(v, b"memtier-12:xxxxx");
        assert!(is_value_of(b"memtier-12", &v));
        assert!(!is_value_of(b"memtier-13", &v));
        v = value(b"memtier-12", 4);
        assert_eq!(v, b"memt");
        assert!(is_value_of(b"memtier-12", &v));
        v = value(b"k", 10_000);
        assert_eq!(v.len(), 10_000);
        assert!(is_value_of(b"k", &v));
        v[5000] = b'y';
        assert!(!is_value_of(b"k", &v));
    }
}

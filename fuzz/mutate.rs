//! Structure-aware mutations: of binary formats (integer fields set to boundary values in the
//! format's byte order, offsets swapped for other offsets of the file, records duplicated, ranges
//! truncated, removed or spliced from another seed) and of text formats (JSON, XML: numbers set to
//! boundary values, strings replaced, balanced elements duplicated or removed, truncation, splicing).

use crate::rng::Rng;

/// What kind of bytes a mutation works on.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    /// Binary, with the byte order of its integer fields and the size of its repeated records
    /// (0: none known).
    Binary {
        /// Integer fields are big-endian (NetCDF-3, HDF4) rather than little-endian (HDF5).
        big_endian: bool,
        /// Bytes per repeated record (HDF4 data descriptors: 12).
        record: usize,
    },
    /// JSON or XML text.
    Text,
}

/// Little-endian binary with no known record size.
pub const LE: Shape = Shape::Binary { big_endian: false, record: 0 };

/// `input` with one to four stacked mutations of `shape`; `others` are seeds to splice from.
pub fn mutate(rng: &mut Rng, input: &[u8], others: &[&[u8]], shape: Shape) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        match shape {
            Shape::Binary { big_endian, record } => binary(rng, &mut out, others, big_endian, record),
            Shape::Text => text(rng, &mut out, others),
        }
    }
    out
}

/// Values integer fields are set to.
fn boundaries(len: usize, old: u64, bits: u32) -> [u64; 12] {
    let max = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let len = len as u64;
    [
        0,
        1,
        2,
        max,
        max - 1,
        max / 2 + 1,
        len,
        len.wrapping_sub(1),
        len + 1,
        old.wrapping_add(1),
        old.wrapping_sub(1),
        old.wrapping_mul(2) | 1,
    ]
}

fn read_int(buf: &[u8], at: usize, width: usize, big_endian: bool) -> u64 {
    let mut v = 0u64;
    for i in 0..width {
        let b = u64::from(buf[if big_endian { at + i } else { at + width - 1 - i }]);
        v = (v << 8) | b;
    }
    v
}

fn write_int(buf: &mut [u8], at: usize, width: usize, big_endian: bool, value: u64) {
    for i in 0..width {
        let byte = (value >> (8 * i)) as u8;
        buf[if big_endian { at + width - 1 - i } else { at + i }] = byte;
    }
}

/// One binary mutation.
fn binary(rng: &mut Rng, buf: &mut Vec<u8>, others: &[&[u8]], big_endian: bool, record: usize) {
    if buf.is_empty() {
        buf.extend((0..1 + rng.below(64)).map(|_| rng.next() as u8));
        return;
    }
    let len = buf.len();
    match rng.below(11) {
        0 => {
            let at = rng.below(len);
            buf[at] ^= 1 << rng.below(8);
        }
        1 => {
            let at = rng.below(len);
            let random = rng.next() as u8;
            buf[at] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xff, random]);
        }
        2 | 3 => set_field(rng, buf, big_endian),
        4 => swap_offset(rng, buf, big_endian),
        5 => buf.truncate(if rng.one_in(2) { rng.below(len) } else { len - 1 - rng.below(len.min(16)) }),
        6 => {
            let (a, b) = range(rng, len, 64);
            buf.drain(a..b);
        }
        7 => duplicate(rng, buf, record),
        8 => splice(rng, buf, others),
        9 => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..n).map(|_| if rng.one_in(2) { 0 } else { rng.next() as u8 }).collect();
            buf.splice(at..at, bytes);
        }
        _ => {
            // Copy a field from elsewhere in the file over another (addresses, sizes, signatures).
            let width = *rng.pick(&[2, 4, 8, 16]);
            if len > width {
                let from = rng.below(len - width);
                let to = rng.below(len - width);
                buf.copy_within(from..from + width, to);
            }
        }
    }
}

/// Sets an integer field (2, 4 or 8 bytes, often aligned) to a boundary value.
fn set_field(rng: &mut Rng, buf: &mut [u8], big_endian: bool) {
    let width = *rng.pick(&[1, 2, 4, 4, 8, 8]);
    if buf.len() < width {
        return;
    }
    let mut at = rng.below(buf.len() - width + 1);
    if rng.one_in(2) {
        at -= at % width;
    }
    let big_endian = if rng.one_in(8) { !big_endian } else { big_endian };
    let old = read_int(buf, at, width, big_endian);
    let value = *rng.pick(&boundaries(buf.len(), old, 8 * width as u32));
    write_int(buf, at, width, big_endian, value);
}

/// Replaces a field that looks like an offset into the file with another such value or a value
/// just past the end.
fn swap_offset(rng: &mut Rng, buf: &mut [u8], big_endian: bool) {
    let width = if big_endian { 4 } else { 8 };
    if buf.len() < 2 * width {
        return;
    }
    let len = buf.len() as u64;
    let candidates: Vec<usize> = (0..=buf.len() - width)
        .step_by(if rng.one_in(2) { 1 } else { width })
        .filter(|&at| {
            let v = read_int(buf, at, width, big_endian);
            v >= 8 && v < len
        })
        .take(4096)
        .collect();
    if candidates.is_empty() {
        return set_field(rng, buf, big_endian);
    }
    let at = *rng.pick(&candidates);
    let other = *rng.pick(&candidates);
    let value = match rng.below(3) {
        0 => read_int(buf, other, width, big_endian),
        1 => len - rng.below(8) as u64,
        _ => read_int(buf, at, width, big_endian).wrapping_add(rng.below(16) as u64).wrapping_sub(8),
    };
    write_int(buf, at, width, big_endian, value);
}

/// A range of at most `max` bytes inside `len`.
fn range(rng: &mut Rng, len: usize, max: usize) -> (usize, usize) {
    let a = rng.below(len);
    let b = (a + 1 + rng.below(max)).min(len);
    (a, b)
}

/// Duplicates a range (a whole record where records are known) at another place.
fn duplicate(rng: &mut Rng, buf: &mut Vec<u8>, record: usize) {
    let len = buf.len();
    let (a, b) = if record > 0 && len >= record {
        let a = rng.below(len / record) * record;
        (a, a + record)
    } else {
        range(rng, len, 256)
    };
    let copy = buf[a..b].to_vec();
    let at = if record > 0 { b } else { rng.below(len + 1) };
    for _ in 0..1 + rng.below(3) {
        buf.splice(at..at, copy.iter().copied());
    }
}

/// Replaces a range of `buf` by a range of another seed.
fn splice(rng: &mut Rng, buf: &mut Vec<u8>, others: &[&[u8]]) {
    let Some(other) = (!others.is_empty()).then(|| *rng.pick(others)) else { return };
    if other.is_empty() || buf.is_empty() {
        return;
    }
    let (a, b) = range(rng, other.len(), 512);
    let at = rng.below(buf.len());
    let end = (at + rng.below(512)).min(buf.len());
    buf.splice(at..end, other[a..b].iter().copied());
}

/// Numbers text numbers are set to.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "255",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "-1e308",
    "1.5",
    "NaN",
    "1e-320",
    "0x10",
    "",
];

/// Strings text strings are set to.
const STRINGS: &[&str] = &[
    "",
    "..",
    "../x",
    "/",
    "a/b",
    "{{a}}",
    "{{",
    "base64:",
    "base64:AAAA",
    "%00",
    "\\u0000",
    "\u{ffff}",
    "s3://b/k",
    "file:///etc/passwd",
    "x.h5",
    "<",
    "&amp;",
    "&lt;&gt;",
    "int32",
    "float64",
    "|S8",
    "<f8",
    "zlib",
    "gzip",
    "[0,1]",
];

/// One text mutation.
fn text(rng: &mut Rng, buf: &mut Vec<u8>, others: &[&[u8]]) {
    if buf.is_empty() {
        buf.extend_from_slice(STRINGS[rng.below(STRINGS.len())].as_bytes());
        return;
    }
    match rng.below(10) {
        0..=2 => replace_token(rng, buf, is_number_byte, NUMBERS),
        3 | 4 => replace_quoted(rng, buf),
        5 => duplicate_span(rng, buf, false),
        6 => duplicate_span(rng, buf, true),
        7 => buf.truncate(rng.below(buf.len())),
        8 => splice(rng, buf, others),
        _ => binary(rng, buf, others, false, 0),
    }
}

fn is_number_byte(b: u8) -> bool {
    b.is_ascii_digit() || b == b'-' || b == b'.' || b == b'e' || b == b'E' || b == b'+'
}

/// Replaces a run of bytes satisfying `inside` (starting with a digit) by one of `values`.
fn replace_token(rng: &mut Rng, buf: &mut Vec<u8>, inside: fn(u8) -> bool, values: &[&str]) {
    let starts: Vec<usize> =
        (0..buf.len()).filter(|&i| buf[i].is_ascii_digit() && (i == 0 || !inside(buf[i - 1]))).collect();
    if starts.is_empty() {
        return;
    }
    let a = *rng.pick(&starts);
    let b = (a..buf.len()).find(|&i| !inside(buf[i])).unwrap_or(buf.len());
    let value = rng.pick(values).as_bytes().to_vec();
    buf.splice(a..b, value);
}

/// Replaces the contents of a quoted string (JSON strings, XML attribute values).
fn replace_quoted(rng: &mut Rng, buf: &mut Vec<u8>) {
    let quotes: Vec<usize> = (0..buf.len()).filter(|&i| buf[i] == b'"').collect();
    if quotes.len() < 2 {
        return;
    }
    let k = rng.below(quotes.len() - 1);
    let (a, b) = (quotes[k] + 1, quotes[k + 1]);
    let value: Vec<u8> = if rng.one_in(6) {
        // A long value: repeated bytes of the old one, or a template reference repeated.
        let unit: &[u8] = if rng.one_in(2) { b"{{a}}" } else { &buf[a..b] };
        unit.iter().copied().cycle().take(unit.len() * (1 + rng.below(2000))).collect()
    } else {
        rng.pick(STRINGS).as_bytes().to_vec()
    };
    buf.splice(a..b, value);
}

/// Duplicates (or, with `remove`, deletes) a balanced span: `{...}` / `[...]` in JSON, `<x ...>...</x>`
/// (or a bracketed run) in XML.
fn duplicate_span(rng: &mut Rng, buf: &mut Vec<u8>, remove: bool) {
    let opens: Vec<usize> = (0..buf.len()).filter(|&i| matches!(buf[i], b'{' | b'[' | b'<')).collect();
    if opens.is_empty() {
        return;
    }
    let a = *rng.pick(&opens);
    let Some(b) = span_end(buf, a) else { return };
    if remove {
        buf.drain(a..b);
    } else {
        let copy = buf[a..b].to_vec();
        let most = if rng.one_in(8) { 200 } else { 3 };
        for _ in 0..1 + rng.below(most) {
            buf.splice(b..b, copy.iter().copied());
        }
    }
}

/// The end (exclusive) of the balanced span opening at `a`.
fn span_end(buf: &[u8], a: usize) -> Option<usize> {
    let (open, close) = match buf[a] {
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        _ => return xml_element_end(buf, a),
    };
    let mut depth = 0usize;
    let mut in_string = false;
    for (i, &c) in buf.iter().enumerate().skip(a) {
        match c {
            b'"' if buf[i.saturating_sub(1)] != b'\\' => in_string = !in_string,
            c if !in_string && c == open => depth += 1,
            c if !in_string && c == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The end of the XML element whose start tag opens at `a` (self-closing or with its end tag).
fn xml_element_end(buf: &[u8], a: usize) -> Option<usize> {
    let tag_end = a + buf[a..].iter().position(|&c| c == b'>')? + 1;
    if buf[tag_end - 2] == b'/' || buf.get(a + 1).is_some_and(|&c| c == b'/' || c == b'?' || c == b'!') {
        return Some(tag_end);
    }
    let name_len = buf[a + 1..tag_end].iter().position(|&c| c == b' ' || c == b'>' || c == b'\n')?;
    let mut close = b"</".to_vec();
    close.extend_from_slice(&buf[a + 1..a + 1 + name_len]);
    close.push(b'>');
    let rest = &buf[tag_end..];
    let at = rest.windows(close.len()).position(|w| w == close.as_slice())?;
    Some(tag_end + at + close.len())
}

//! The page headers of a record file's column chunks, read before the `parquet` crate decodes any
//! page (input: the file's bytes and a column chunk's byte range; output: each page's declared
//! decompressed size). The `parquet` crate allocates and fills a page's declared decompressed size
//! (up to 2 GiB) whatever the file's length: a 34 KB file can hold a page of 1 GiB of zeros. A
//! column's pages are therefore summed first, and refused when they would decompress to more than
//! its rows can hold ([`Allowance`]).
//!
//! A page header is a Thrift compact-protocol struct (parquet-format's `PageHeader`: field 2
//! `uncompressed_page_size`, field 3 `compressed_page_size`); this reader takes those two and skips
//! every other field, at most [`MAX_DEPTH`] structs deep.

/// Deepest nesting of structs and lists a page header may have.
const MAX_DEPTH: usize = 16;

/// Why a column chunk's pages are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum PagesError {
    /// A header that is cut short or does not parse.
    #[error("a page header at byte {at} that does not parse")]
    Header {
        /// Where the header starts.
        at: usize,
    },
    /// Pages that decompress to more than the column's rows can hold.
    #[error("pages that decompress to {declared} bytes, more than the {allowed} its {rows} rows can hold")]
    TooLarge {
        /// The pages' declared decompressed size so far.
        declared: u64,
        /// What the rows can hold.
        allowed: u64,
        /// The rows.
        rows: u64,
    },
}

/// What a column may decompress to: `per_value` bytes for each of its rows, twice (a dictionary
/// page and the data pages), plus 64 KiB (levels, page overhead).
#[derive(Debug, Clone, Copy)]
pub(super) struct Allowance {
    /// Bytes one value may take decoded.
    pub(super) per_value: u64,
}

impl Allowance {
    fn bytes(self, rows: u64) -> u64 {
        rows.saturating_mul(self.per_value).saturating_mul(2).saturating_add(64 << 10)
    }
}

/// Checks the pages in `file[start..end]` (one column chunk of `rows` rows) against `allowance`.
///
/// # Errors
/// [`PagesError`]: a header that does not parse, or pages that decompress to more than allowed.
pub(super) fn check(file: &[u8], start: usize, end: usize, rows: u64, allowance: Allowance) -> Result<(), PagesError> {
    let allowed = allowance.bytes(rows);
    let (mut at, mut declared) = (start, 0u64);
    while at < end {
        let mut reader = Compact { bytes: &file[..end], at };
        let (uncompressed, compressed) = reader.page_header().ok_or(PagesError::Header { at })?;
        declared = declared.saturating_add(uncompressed);
        if declared > allowed {
            return Err(PagesError::TooLarge { declared, allowed, rows });
        }
        at = reader.at.checked_add(compressed as usize).ok_or(PagesError::Header { at })?;
    }
    Ok(())
}

/// A Thrift compact-protocol reader over `bytes`, at byte `at`.
struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn zigzag(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn skip_bytes(&mut self, n: u64) -> Option<()> {
        let end = self.at.checked_add(usize::try_from(n).ok()?)?;
        (end <= self.bytes.len()).then(|| self.at = end)
    }

    /// `PageHeader`'s uncompressed and compressed sizes (both must be present and not negative).
    fn page_header(&mut self) -> Option<(u64, u64)> {
        let (mut uncompressed, mut compressed) = (None, None);
        let mut last = 0i64;
        loop {
            let header = self.byte()?;
            if header == 0 {
                break;
            }
            let kind = header & 0x0f;
            let id = match header >> 4 {
                0 => self.zigzag()?,
                delta => last + i64::from(delta),
            };
            last = id;
            match (id, kind) {
                (2, 5) => uncompressed = Some(u64::try_from(self.zigzag()?).ok()?),
                (3, 5) => compressed = Some(u64::try_from(self.zigzag()?).ok()?),
                _ => self.skip(kind, true, 0)?,
            }
        }
        Some((uncompressed?, compressed?))
    }

    /// Skips a value of compact type `kind` (`in_field`: a boolean's value is in its field header).
    fn skip(&mut self, kind: u8, in_field: bool, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match kind {
            1 | 2 if in_field => Some(()),
            1..=3 => self.byte().map(drop),
            4..=6 => self.varint().map(drop),
            7 => self.skip_bytes(8),
            8 => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            9 | 10 => {
                let header = self.byte()?;
                let n = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                (0..n).try_for_each(|_| self.skip(header & 0x0f, false, depth + 1))
            }
            11 => {
                let n = self.varint()?;
                if n == 0 {
                    return Some(());
                }
                let kinds = self.byte()?;
                (0..n).try_for_each(|_| {
                    self.skip(kinds >> 4, false, depth + 1)?;
                    self.skip(kinds & 0x0f, false, depth + 1)
                })
            }
            12 => {
                let mut last = 0i64;
                loop {
                    let header = self.byte()?;
                    if header == 0 {
                        return Some(());
                    }
                    last = match header >> 4 {
                        0 => self.zigzag()?,
                        delta => last + i64::from(delta),
                    };
                    self.skip(header & 0x0f, true, depth + 1)?;
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact `PageHeader`: type 0, the two sizes, then a nested struct and a list to skip.
    fn header(uncompressed: u32, compressed: u32) -> Vec<u8> {
        let zig = |v: u32| {
            let mut v = u64::from(v) << 1;
            let mut out = Vec::new();
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(b);
                    return out;
                }
                out.push(b | 0x80);
            }
        };
        let mut out = vec![0x15, 0];
        out.push(0x15);
        out.extend(zig(uncompressed));
        out.push(0x15);
        out.extend(zig(compressed));
        // field 5 (delta 2), a struct holding an i32 and a list of two i32s.
        out.extend([0x2c, 0x15, 0x08, 0x19, 0x25, 0x02, 0x04, 0x00]);
        out.push(0);
        out
    }

    #[test]
    fn sums_the_pages_and_refuses_a_page_past_the_rows() {
        let mut file = header(100, 3);
        file.extend([1, 2, 3]);
        file.extend(header(50, 0));
        let allowance = Allowance { per_value: 10 };
        assert_eq!(check(&file, 0, file.len(), 1, allowance), Ok(()));
        let mut bomb = header(1 << 30, 3);
        bomb.extend([1, 2, 3]);
        let err = check(&bomb, 0, bomb.len(), 1, allowance).unwrap_err();
        assert!(matches!(err, PagesError::TooLarge { declared: 1073741824, .. }), "{err}");
        assert_eq!(check(&file[..4], 0, 4, 1, allowance), Err(PagesError::Header { at: 0 }));
    }
}

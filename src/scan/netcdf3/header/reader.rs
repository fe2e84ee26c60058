//! The header's bounds-checked big-endian reader: every count is checked against the bytes left in
//! the file (and in the prefix) before anything is allocated from it.

use std::collections::HashSet;

use super::types::{Cdf3Version, HeaderError, NcType, MAX_HEADER_BYTES};

/// Shorthand for [`HeaderError::Invalid`].
pub(super) fn invalid(at: u64, reason: String) -> HeaderError {
    HeaderError::Invalid { at, reason }
}

/// Refuses a header field ending past [`MAX_HEADER_BYTES`].
pub(super) fn check_header_limit(at: u64, end: u64, what: &str) -> Result<(), HeaderError> {
    if end > MAX_HEADER_BYTES {
        let reason = format!("{what} would make the header longer than vzarr's limit of {MAX_HEADER_BYTES} bytes");
        return Err(invalid(at, reason));
    }
    Ok(())
}

/// Refuses a second name equal to one already in `seen`.
pub(super) fn check_unique(seen: &mut HashSet<String>, name: &str, at: u64, what: &str) -> Result<(), HeaderError> {
    if !seen.insert(name.to_string()) {
        return Err(invalid(at, format!("a second {what} named `{name}` (names must be unique)")));
    }
    Ok(())
}

/// `n` rounded up to a multiple of 4, or `None` on overflow.
pub(super) fn pad4(n: u64) -> Option<u64> {
    n.checked_add(3).map(|x| x & !3)
}

/// Capacity for a vector of `count` elements whose bytes were already found in memory.
pub(super) fn capacity(count: u64) -> usize {
    usize::try_from(count).unwrap_or(0)
}

/// A bounds-checked big-endian cursor over the header prefix.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: u64,
    pub(super) file_len: u64,
    pub(super) version: Cdf3Version,
}

impl<'a> Reader<'a> {
    /// The next `n` bytes: `Invalid` if they run past the file, `NeedMore` if past the prefix.
    pub(super) fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], HeaderError> {
        let start = self.pos;
        let end = start.checked_add(n).filter(|&end| end <= self.file_len).ok_or_else(|| {
            let file_len = self.file_len;
            invalid(start, format!("{what} needs {n} bytes but the {file_len}-byte file ends first"))
        })?;
        check_header_limit(start, end, what)?;
        let slice = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.bytes.get(s..e))
            .ok_or(HeaderError::NeedMore { at_least: end })?;
        self.pos = end;
        Ok(slice)
    }

    /// Checks that `count` entries of at least `min_each` bytes each can still follow.
    pub(super) fn ensure_room(&self, count: u64, min_each: u64, what: &str) -> Result<(), HeaderError> {
        let end = count
            .checked_mul(min_each)
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&end| end <= self.file_len)
            .ok_or_else(|| {
                let left = self.file_len.saturating_sub(self.pos);
                invalid(self.pos, format!("{what}: {count} entries cannot fit in the {left} bytes left in the file"))
            })?;
        check_header_limit(self.pos, end, what)?;
        if end > self.bytes.len() as u64 {
            return Err(HeaderError::NeedMore { at_least: end });
        }
        Ok(())
    }

    /// The next `N` bytes as an array.
    pub(super) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], HeaderError> {
        let mut out = [0u8; N];
        for (dst, src) in out.iter_mut().zip(self.take(N as u64, what)?) {
            *dst = *src;
        }
        Ok(out)
    }

    /// A 32-bit big-endian unsigned integer.
    pub(super) fn u32(&mut self, what: &str) -> Result<u32, HeaderError> {
        self.array(what).map(u32::from_be_bytes)
    }

    /// A 64-bit big-endian unsigned integer.
    pub(super) fn u64(&mut self, what: &str) -> Result<u64, HeaderError> {
        self.array(what).map(u64::from_be_bytes)
    }

    /// A count of the version's width (`NON_NEG`: 32-bit in CDF-1/2, 64-bit in CDF-5).
    pub(super) fn count(&mut self, what: &str) -> Result<u64, HeaderError> {
        if self.version.count_width() == 8 {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// An `OFFSET` (32-bit in CDF-1, 64-bit in CDF-2/5).
    pub(super) fn offset(&mut self, what: &str) -> Result<u64, HeaderError> {
        if self.version.offset_width() == 8 {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// A `name`: count, UTF-8 bytes, padding to 4 bytes. A name stops at its first NUL, as libnetcdf
    /// reads it (old writers counted a terminating NUL in the length: `yy\0` is `yy`).
    pub(super) fn name(&mut self, what: &str) -> Result<String, HeaderError> {
        let at = self.pos;
        let len = self.count(what)?;
        let padded = pad4(len).ok_or_else(|| invalid(at, format!("{what}: length {len} overflows")))?;
        let raw = self.take(padded, what)?;
        let raw = raw.get(..capacity(len)).unwrap_or(raw);
        let raw = raw.split(|&b| b == 0).next().unwrap_or_default();
        String::from_utf8(raw.to_vec()).map_err(|e| invalid(at, format!("{what} is not valid UTF-8 ({e})")))
    }

    /// A name that becomes part of a Zarr path: non-empty and without `/`.
    pub(super) fn path_name(&mut self, what: &str) -> Result<String, HeaderError> {
        let at = self.pos;
        let name = self.name(what)?;
        if name.is_empty() || name.contains('/') {
            return Err(invalid(at, format!("{what} `{name}` is empty or contains `/`")));
        }
        Ok(name)
    }

    /// An `nc_type` code allowed in this version.
    pub(super) fn nc_type(&mut self, what: &str) -> Result<NcType, HeaderError> {
        let at = self.pos;
        let code = self.u32(what)?;
        let ty = NcType::from_code(code).ok_or_else(|| invalid(at, format!("{what}: unknown nc_type {code}")))?;
        if ty.is_cdf5_only() && self.version != Cdf3Version::Data64 {
            let name = ty.name();
            return Err(invalid(at, format!("{what}: type {name} ({code}) is only allowed in CDF-5 files")));
        }
        Ok(ty)
    }

    /// A list header (`ABSENT` or `tag nelems`); returns `nelems` after checking that that many
    /// entries of at least `min_each` bytes fit.
    pub(super) fn list_len(&mut self, tag: u32, min_each: u64, what: &str) -> Result<u64, HeaderError> {
        let at = self.pos;
        let found = self.u32(what)?;
        let count = self.count(what)?;
        if count == 0 && (found == 0 || found == tag) {
            return Ok(0);
        }
        if found != tag {
            return Err(invalid(
                at,
                format!("{what}: expected tag {tag:#04x} or ABSENT, found tag {found:#x} with {count} entries"),
            ));
        }
        self.ensure_room(count, min_each, what)?;
        Ok(count)
    }
}

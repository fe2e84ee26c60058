//! A big-endian reader over one object's bytes that fails, never panics, when the bytes run out.

use super::errors::Hdf4Error;

/// Reads big-endian integers and length-prefixed strings from a byte slice.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'a str,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`; `what` names the object in errors.
    pub(crate) fn new(bytes: &'a [u8], what: &'a str) -> Self {
        Cursor { bytes, at: 0, what }
    }

    /// The next `n` bytes.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] when fewer remain.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Hdf4Error> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| {
            Hdf4Error::malformed(
                self.what,
                format!("truncated: {n} bytes wanted at byte {} of {}", self.at, self.bytes.len()),
            )
        })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// Skips `n` bytes.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] when fewer remain.
    pub(crate) fn skip(&mut self, n: usize) -> Result<(), Hdf4Error> {
        self.take(n).map(|_| ())
    }

    /// A byte.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] when the bytes ran out.
    pub(crate) fn u8(&mut self) -> Result<u8, Hdf4Error> {
        Ok(self.take(1)?[0])
    }

    /// A big-endian u16.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] when the bytes ran out.
    pub(crate) fn u16(&mut self) -> Result<u16, Hdf4Error> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A big-endian u32.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] when the bytes ran out.
    pub(crate) fn u32(&mut self) -> Result<u32, Hdf4Error> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A string of a u16 length, trailing NULs dropped.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] when the bytes ran out.
    pub(crate) fn string(&mut self) -> Result<String, Hdf4Error> {
        let n = self.u16()? as usize;
        Ok(text(self.take(n)?))
    }
}

/// Bytes as text, from the first NUL on dropped (invalid UTF-8 replaced).
pub(crate) fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

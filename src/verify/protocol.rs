//! The oracle worker's protocol, over the child's stdin/stdout: one JSON [`Request`] per line
//! (`{"op":"box","location":..,"path":..,"starts":[..],"counts":[..]}`), answered by a frame: one
//! status byte (0 ok, 1 error), the payload length as u64 little endian, the payload (values as
//! native-endian bytes, other answers as JSON, errors as text).
//!
//! Ops: `box` and `all` (values), `f64` (values as f64 with units and calendar), `shape`, `type`,
//! `strings`, `hdf5` (fill time and extent), `filter` (a filter this libhdf5 lacks, or `null`),
//! `oracle` (the oracle of a data set when not its file's library), `attr` (global attribute `path`
//! of the file, as JSON), `opens` (files opened, u64 little endian) and `forget` (close the file).

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

/// One request to the worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Request {
    pub(crate) op: String,
    pub(crate) location: String,
    /// The variable's path; for `attr`, the attribute's name.
    pub(crate) path: String,
    /// `box`: the first index along every dimension.
    #[serde(default)]
    pub(crate) starts: Vec<u64>,
    /// `box`: the number of indices along every dimension.
    #[serde(default)]
    pub(crate) counts: Vec<u64>,
    /// Read the dataset with libhdf5 alone (libnetcdf died on the file).
    #[serde(default)]
    pub(crate) hdf5_only: bool,
}

impl Request {
    /// Request `op` about `path` of `location`.
    pub(crate) fn new(op: &str, location: &str, path: &str) -> Self {
        let (location, path) = (location.into(), path.into());
        Request { op: op.into(), location, path, starts: Vec::new(), counts: Vec::new(), hdf5_only: false }
    }

    /// A `box` request: the values of `counts` indices from `starts` along every dimension.
    pub(crate) fn of_box(location: &str, path: &str, starts: &[u64], counts: &[u64]) -> Self {
        Request { starts: starts.to_vec(), counts: counts.to_vec(), ..Request::new("box", location, path) }
    }
}

/// Writes one answer: `Ok` payload with status 0, an error's text with status 1.
pub(crate) fn write_frame(output: &mut impl Write, answer: Result<Vec<u8>, String>) -> std::io::Result<()> {
    let (status, payload) = match answer {
        Ok(bytes) => (0u8, bytes),
        Err(e) => (1u8, e.into_bytes()),
    };
    output.write_all(&[status])?;
    output.write_all(&(payload.len() as u64).to_le_bytes())?;
    output.write_all(&payload)?;
    output.flush()
}

/// Reads one answer: its status byte and payload.
pub(crate) fn read_frame(stdout: &mut impl Read) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 9];
    stdout.read_exact(&mut head)?;
    let mut len = [0u8; 8];
    len.copy_from_slice(&head[1..]);
    let len = u64::from_le_bytes(len);
    let mut payload = Vec::new();
    stdout.take(len).read_to_end(&mut payload)?;
    if payload.len() as u64 != len {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "oracle worker: short answer"));
    }
    Ok((head[0], payload))
}

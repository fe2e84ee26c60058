//! The worker's side of the oracle protocol (`verify/protocol`): requests answered from the source
//! files by the C libraries, in the `vzarr-oracle` process.

use std::io::{BufRead, Write};

use super::{other_oracle, OracleFiles};
use crate::verify::protocol::{write_frame, Request};

/// Answers oracle requests from `input` on `output` until `input` ends: the `vzarr-oracle` program,
/// which `vzarr verify` starts as its oracle worker (see [`crate::verify::OracleMode::Worker`]).
///
/// # Errors
/// The I/O error of reading a request or writing an answer.
pub fn serve_oracle(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    let mut files = OracleFiles::default();
    for line in input.lines() {
        let line = line?;
        let answer = serde_json::from_str::<Request>(&line)
            .map_err(|e| format!("bad oracle request: {e}"))
            .and_then(|request| answer(&mut files, &request).map_err(|e| e.to_string()));
        write_frame(&mut output, answer)?;
    }
    Ok(())
}

fn json(value: &impl serde::Serialize) -> Result<Vec<u8>, netcdf::Error> {
    serde_json::to_vec(value).map_err(|e| netcdf::Error::Str(e.to_string()))
}

fn answer(files: &mut OracleFiles, request: &Request) -> Result<Vec<u8>, netcdf::Error> {
    let (location, path) = (request.location.as_str(), request.path.as_str());
    match request.op.as_str() {
        "opens" => return Ok(crate::verify::opens::oracle_opens().to_le_bytes().to_vec()),
        "forget" => {
            files.forget(location);
            return Ok(Vec::new());
        }
        "oracle" => return json(&other_oracle(location, path)),
        "filter" => return json(&files.missing_filter(location, path)),
        "attr" => return json(&files.global_attribute(location, path)),
        _ => {}
    }
    if !request.hdf5_only {
        crate::test_hooks::oracle_crash(path);
    }
    let variable = match request.hdf5_only {
        true => files.hdf5_variable(location, path)?,
        false => files.variable(location, path)?,
    };
    match request.op.as_str() {
        "box" => variable.read_box(&request.starts, &request.counts),
        "all" => variable.read_all(),
        "hdf5" => json(&variable.hdf5_facts(location)),
        "shape" => json(&variable.shape()?),
        "type" => json(&variable.numeric_type().map(|t| t.to_json())),
        "f64" => json(&variable.read_f64()?),
        "strings" => json(&variable.read_strings()?),
        other => Err(netcdf::Error::Str(format!("unknown oracle request {other:?}"))),
    }
}

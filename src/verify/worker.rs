//! The oracle in a child process, so that a source file that sends libhdf5 into an endless loop (a
//! corrupt global heap: `H5HG_read` via `nc_inq_vartype`) becomes an error after a timeout instead of
//! a hang (a thread cannot be stopped; a process can).
//!
//! Protocol over the child's stdin/stdout: one JSON request per line
//! (`{"op":"box","location":..,"path":..,"starts":[..],"counts":[..]}`, ops `box`, `all`, `f64`,
//! `shape`, `strings`, `hdf5` (fill time and extent), `opens`, and `forget`, which closes the file at `location`),
//! answered by a frame: one status byte (0 ok, 1 error), the payload length as u64 little endian,
//! the payload (values as native-endian bytes, `f64` answers as JSON, errors as text). The child keeps
//! recently used files open (`OracleFiles`). A request not answered within the timeout kills the child;
//! the next request starts a new one.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::oracle::OracleFiles;
use super::TimeValues;

/// One request to the worker.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    op: String,
    location: String,
    path: String,
    /// `box`: the first index along every dimension.
    #[serde(default)]
    starts: Vec<u64>,
    /// `box`: the number of indices along every dimension.
    #[serde(default)]
    counts: Vec<u64>,
}

impl Request {
    pub(crate) fn new(op: &str, location: &str, path: &str) -> Self {
        Request { op: op.into(), location: location.into(), path: path.into(), starts: Vec::new(), counts: Vec::new() }
    }

    /// A `box` request: the values of `counts` indices from `starts` along every dimension.
    pub(crate) fn of_box(location: &str, path: &str, starts: &[u64], counts: &[u64]) -> Self {
        Request { starts: starts.to_vec(), counts: counts.to_vec(), ..Request::new("box", location, path) }
    }
}

/// Answers requests from `input` on `output` until `input` ends (the `vzarr oracle-worker` command).
///
/// # Errors
/// The I/O error of reading a request or writing an answer.
pub(crate) fn serve_oracle(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    let mut files = OracleFiles::default();
    for line in input.lines() {
        let line = line?;
        let answer = serde_json::from_str::<Request>(&line)
            .map_err(|e| netcdf::Error::Str(format!("bad oracle request: {e}")))
            .and_then(|request| answer(&mut files, &request));
        let (status, payload) = match answer {
            Ok(bytes) => (0u8, bytes),
            Err(e) => (1u8, e.to_string().into_bytes()),
        };
        output.write_all(&[status])?;
        output.write_all(&(payload.len() as u64).to_le_bytes())?;
        output.write_all(&payload)?;
        output.flush()?;
    }
    Ok(())
}

fn answer(files: &mut OracleFiles, request: &Request) -> Result<Vec<u8>, netcdf::Error> {
    if request.op == "opens" {
        return Ok(super::oracle::oracle_opens().to_le_bytes().to_vec());
    }
    if request.op == "forget" {
        files.forget(&request.location);
        return Ok(Vec::new());
    }
    let variable = files.variable(&request.location, &request.path)?;
    match request.op.as_str() {
        "box" => variable.read_box(&request.starts, &request.counts),
        "all" => variable.read_all(),
        "hdf5" => {
            serde_json::to_vec(&variable.hdf5_facts(&request.location)).map_err(|e| netcdf::Error::Str(e.to_string()))
        }
        "shape" => serde_json::to_vec(&variable.shape()?).map_err(|e| netcdf::Error::Str(e.to_string())),
        "f64" => {
            let values = variable.read_f64()?;
            serde_json::to_vec(&values).map_err(|e| netcdf::Error::Str(e.to_string()))
        }
        "strings" => {
            let values = variable.read_strings()?;
            serde_json::to_vec(&values).map_err(|e| netcdf::Error::Str(e.to_string()))
        }
        other => Err(netcdf::Error::Str(format!("unknown oracle request {other:?}"))),
    }
}

/// A running worker.
struct Running {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<std::io::Result<(u8, Vec<u8>)>>,
}

/// The client side: requests sent to a worker process, each answered within `timeout`.
pub(crate) struct WorkerOracle {
    program: PathBuf,
    timeout: Duration,
    running: Option<Running>,
    /// Files that timed out: later requests for them fail at once.
    timed_out: std::collections::HashSet<String>,
}

impl WorkerOracle {
    pub(crate) fn new(program: PathBuf, timeout: Duration) -> Self {
        WorkerOracle { program, timeout, running: None, timed_out: std::collections::HashSet::new() }
    }

    /// Closes the file at `location` in the worker, if it is running and has it open.
    pub(crate) fn forget(&mut self, location: &str) -> Result<(), netcdf::Error> {
        if self.running.is_none() {
            return Ok(());
        }
        self.request(&Request::new("forget", location, "")).map(|_| ())
    }

    /// Sends `request`; the payload of the answer.
    pub(crate) fn request(&mut self, request: &Request) -> Result<Vec<u8>, netcdf::Error> {
        let timed_out = |secs: f64| {
            netcdf::Error::Str(format!(
                "timed out: libnetcdf/libhdf5 did not answer within {secs} s (the file may be corrupt)"
            ))
        };
        if self.timed_out.contains(&request.location) {
            return Err(timed_out(self.timeout.as_secs_f64()));
        }
        let io = |e: std::io::Error| netcdf::Error::Str(format!("oracle worker: {e}"));
        let running = match &mut self.running {
            Some(running) => running,
            None => self.running.insert(self.start().map_err(io)?),
        };
        let mut line = serde_json::to_vec(request).map_err(|e| netcdf::Error::Str(e.to_string()))?;
        line.push(b'\n');
        if let Err(e) = running.stdin.write_all(&line).and_then(|()| running.stdin.flush()) {
            self.stop();
            return Err(io(e));
        }
        match running.answers.recv_timeout(self.timeout) {
            Ok(Ok((0, payload))) => Ok(payload),
            Ok(Ok((_, message))) => Err(netcdf::Error::Str(String::from_utf8_lossy(&message).into_owned())),
            Ok(Err(e)) => {
                self.stop();
                Err(io(e))
            }
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                self.timed_out.insert(request.location.clone());
                Err(timed_out(self.timeout.as_secs_f64()))
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.stop();
                Err(netcdf::Error::Str("oracle worker: ended without answering".into()))
            }
        }
    }

    /// The values of a `f64` request.
    pub(crate) fn request_f64(&mut self, request: &Request) -> Result<TimeValues, netcdf::Error> {
        self.request_json(request)
    }

    /// The strings of a `strings` request.
    pub(crate) fn request_strings(&mut self, request: &Request) -> Result<Vec<String>, netcdf::Error> {
        self.request_json(request)
    }

    fn request_json<T: serde::de::DeserializeOwned>(&mut self, request: &Request) -> Result<T, netcdf::Error> {
        let payload = self.request(request)?;
        serde_json::from_slice(&payload).map_err(|e| netcdf::Error::Str(format!("oracle worker: {e}")))
    }

    /// The answer to an `hdf5` request: what libhdf5 tells of the dataset behind a variable.
    pub(crate) fn request_hdf5_facts(&mut self, request: &Request) -> Result<super::oracle::Hdf5Facts, netcdf::Error> {
        self.request_json(request)
    }

    /// The answer of a `shape` request: dimension lengths and element size.
    pub(crate) fn request_shape(&mut self, request: &Request) -> Result<(Vec<u64>, usize), netcdf::Error> {
        let payload = self.request(request)?;
        serde_json::from_slice(&payload).map_err(|e| netcdf::Error::Str(format!("oracle worker: {e}")))
    }

    fn start(&self) -> std::io::Result<Running> {
        let mut child = Command::new(&self.program)
            .arg("oracle-worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let (stdin, mut stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => (stdin, stdout),
            _ => return Err(std::io::Error::other("no pipes to the oracle worker")),
        };
        let (send, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || loop {
            let frame = read_frame(&mut stdout);
            let end = frame.is_err();
            if send.send(frame).is_err() || end {
                return;
            }
        });
        Ok(Running { child, stdin, answers })
    }

    fn stop(&mut self) {
        if let Some(mut running) = self.running.take() {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }
}

impl Drop for WorkerOracle {
    /// Adds the worker's count of opened files to this process's (`oracle_opens`), then ends it.
    fn drop(&mut self) {
        if self.running.is_some() {
            if let Ok(bytes) = self.request(&Request::new("opens", "", "")) {
                let count = <[u8; 8]>::try_from(bytes.as_slice()).map_or(0, u64::from_le_bytes);
                super::oracle::add_opens(count);
            }
        }
        self.stop();
    }
}

fn read_frame(stdout: &mut impl Read) -> std::io::Result<(u8, Vec<u8>)> {
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

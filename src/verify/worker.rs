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
//!
//! A worker that dies (libnetcdf segfaults on an external-link cycle, a panic) is described: how it
//! ended (exit code or signal), the library it was in and the last line it wrote to stderr. It is
//! replaced, and a request libnetcdf died on is asked again of libhdf5 alone (`hdf5_only`), as for
//! files libnetcdf refuses whole; later requests for that file go to libhdf5 directly. Op `filter`
//! names a filter of the dataset this libhdf5 lacks (JSON `null` when none); op `oracle` names the
//! oracle of a data set when not its file's library (libaec for szip HDF4 data sets).

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::oracle::OracleFiles;
use super::TimeValues;

/// One request to the worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Read the dataset with libhdf5 alone (libnetcdf died on the file).
    #[serde(default)]
    hdf5_only: bool,
}

impl Request {
    pub(crate) fn new(op: &str, location: &str, path: &str) -> Self {
        let (location, path) = (location.into(), path.into());
        Request { op: op.into(), location, path, starts: Vec::new(), counts: Vec::new(), hdf5_only: false }
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
        return Ok(super::opens::oracle_opens().to_le_bytes().to_vec());
    }
    if request.op == "forget" {
        files.forget(&request.location);
        return Ok(Vec::new());
    }
    if request.op == "oracle" {
        let other = super::other_oracle(&request.location, &request.path);
        return serde_json::to_vec(&other).map_err(|e| netcdf::Error::Str(e.to_string()));
    }
    if request.op == "filter" {
        let missing = files.missing_filter(&request.location, &request.path);
        return serde_json::to_vec(&missing).map_err(|e| netcdf::Error::Str(e.to_string()));
    }
    if !request.hdf5_only {
        crate::test_hooks::oracle_crash(&request.path);
    }
    let variable = match request.hdf5_only {
        true => files.hdf5_variable(&request.location, &request.path)?,
        false => files.variable(&request.location, &request.path)?,
    };
    match request.op.as_str() {
        "box" => variable.read_box(&request.starts, &request.counts),
        "all" => variable.read_all(),
        "hdf5" => {
            serde_json::to_vec(&variable.hdf5_facts(&request.location)).map_err(|e| netcdf::Error::Str(e.to_string()))
        }
        "shape" => serde_json::to_vec(&variable.shape()?).map_err(|e| netcdf::Error::Str(e.to_string())),
        "type" => {
            let name = variable.numeric_type().map(|t| t.to_json());
            serde_json::to_vec(&name).map_err(|e| netcdf::Error::Str(e.to_string()))
        }
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
    /// The last line the worker wrote to stderr, kept by `stderr_reader`.
    last_line: Arc<Mutex<String>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

/// The client side: requests sent to a worker process, each answered within `timeout`.
pub(crate) struct WorkerOracle {
    program: PathBuf,
    timeout: Duration,
    running: Option<Running>,
    /// Files that timed out: later requests for them fail at once.
    timed_out: HashSet<String>,
    /// Files libnetcdf died on: later requests for them go to libhdf5 alone.
    netcdf_died: HashSet<String>,
}

/// The library a request runs in: libhdf4 for HDF4 files, libhdf5 when asked alone, else libnetcdf.
fn library(request: &Request) -> &'static str {
    let local = crate::source::local_path(&request.location);
    if local.is_some_and(|l| matches!(crate::scan::detect_format(&l), Ok(crate::scan::FileFormat::Hdf4))) {
        "libhdf4"
    } else if request.hdf5_only {
        "libhdf5"
    } else {
        "libnetcdf"
    }
}

/// How a process ended: `exit code 101 (a panic)`, `signal 11 (SIGSEGV)`.
fn ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = match signal {
            libc::SIGSEGV => " (SIGSEGV)",
            libc::SIGABRT => " (SIGABRT)",
            libc::SIGBUS => " (SIGBUS)",
            libc::SIGFPE => " (SIGFPE)",
            libc::SIGILL => " (SIGILL)",
            libc::SIGKILL => " (SIGKILL)",
            _ => "",
        };
        return format!("killed by signal {signal}{name}");
    }
    match status.code() {
        Some(101) => "exit code 101 (a panic)".into(),
        Some(code) => format!("exit code {code}"),
        None => "an unknown status".into(),
    }
}

impl WorkerOracle {
    pub(crate) fn new(program: PathBuf, timeout: Duration) -> Self {
        WorkerOracle { program, timeout, running: None, timed_out: HashSet::new(), netcdf_died: HashSet::new() }
    }

    /// Closes the file at `location` in the worker, if it is running and has it open.
    pub(crate) fn forget(&mut self, location: &str) -> Result<(), netcdf::Error> {
        if self.running.is_none() {
            return Ok(());
        }
        self.request(&Request::new("forget", location, "")).map(|_| ())
    }

    /// Sends `request`; the payload of the answer. Where libnetcdf dies on it, a new worker asks
    /// libhdf5 alone.
    pub(crate) fn request(&mut self, request: &Request) -> Result<Vec<u8>, netcdf::Error> {
        let hdf5_only = request.hdf5_only || self.netcdf_died.contains(&request.location);
        let first = Request { hdf5_only, ..request.clone() };
        match self.request_once(&first) {
            Err(Died(death)) if library(&first) == "libnetcdf" && !matches!(first.op.as_str(), "forget" | "opens") => {
                self.netcdf_died.insert(first.location.clone());
                let again = Request { hdf5_only: true, ..first };
                self.request_once(&again).map_err(|e| {
                    let e = match e {
                        Died(e) | Refused(e) => e,
                    };
                    netcdf::Error::Str(format!("{death}; libhdf5 then: {e}"))
                })
            }
            Err(Died(e) | Refused(e)) => Err(netcdf::Error::Str(e)),
            Ok(payload) => Ok(payload),
        }
    }

    /// Sends `request` to the worker (started unless running) once.
    fn request_once(&mut self, request: &Request) -> Result<Vec<u8>, Failure> {
        let secs = self.timeout.as_secs_f64();
        let timed_out = || {
            let library = match library(request) {
                "libhdf4" => "libhdf4",
                _ => "libnetcdf/libhdf5",
            };
            Refused(format!("timed out: {library} did not answer within {secs} s (the file may be corrupt)"))
        };
        if self.timed_out.contains(&request.location) {
            return Err(timed_out());
        }
        let running = match &mut self.running {
            Some(running) => running,
            None => {
                let started = self.start().map_err(|e| Refused(format!("starting the oracle worker: {e}")))?;
                self.running.insert(started)
            }
        };
        let mut line = serde_json::to_vec(request).map_err(|e| Refused(e.to_string()))?;
        line.push(b'\n');
        if running.stdin.write_all(&line).and_then(|()| running.stdin.flush()).is_err() {
            return Err(Died(self.death(request)));
        }
        match running.answers.recv_timeout(self.timeout) {
            Ok(Ok((0, payload))) => Ok(payload),
            Ok(Ok((_, message))) => Err(Refused(String::from_utf8_lossy(&message).into_owned())),
            Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => Err(Died(self.death(request))),
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                self.timed_out.insert(request.location.clone());
                Err(timed_out())
            }
        }
    }

    /// Ends the worker that stopped answering `request` and says how it ended: `oracle worker died
    /// in libnetcdf (box of grp/x): killed by signal 11 (SIGSEGV); its last words: ...`.
    fn death(&mut self, request: &Request) -> String {
        let Some(mut running) = self.running.take() else { return "oracle worker: not running".into() };
        drop(running.stdin);
        // Its stdout closed: it has ended or is ending. A worker that lingers is killed.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        let status = loop {
            match running.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = running.child.kill();
                    break running.child.wait().ok();
                }
            }
        };
        if let Some(reader) = running.stderr_reader.take() {
            let _ = reader.join();
        }
        let how = status.map_or_else(|| "an unknown status".to_string(), ended);
        let last = running.last_line.lock().map(|l| l.clone()).unwrap_or_default();
        let words =
            if last.is_empty() { "it wrote nothing to stderr".to_string() } else { format!("its last words: {last}") };
        format!("oracle worker died in {} ({} of {}): {how}; {words}", library(request), request.op, request.path)
    }

    /// The values of a `f64` request.
    pub(crate) fn request_f64(&mut self, request: &Request) -> Result<TimeValues, netcdf::Error> {
        self.request_json(request)
    }

    /// The strings of a `strings` request.
    pub(crate) fn request_strings(&mut self, request: &Request) -> Result<Vec<String>, netcdf::Error> {
        self.request_json(request)
    }

    pub(crate) fn request_json<T: serde::de::DeserializeOwned>(
        &mut self,
        request: &Request,
    ) -> Result<T, netcdf::Error> {
        let payload = self.request(request)?;
        serde_json::from_slice(&payload).map_err(|e| netcdf::Error::Str(format!("oracle worker: {e}")))
    }

    /// The answer to a `filter` request: a filter of the dataset this libhdf5 lacks, if any.
    pub(crate) fn request_missing_filter(&mut self, location: &str, path: &str) -> Option<String> {
        self.request_json::<Option<String>>(&Request::new("filter", location, path)).ok().flatten()
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
            .stderr(Stdio::piped())
            .spawn()?;
        let (stdin, mut stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => (stdin, stdout, stderr),
            _ => return Err(std::io::Error::other("no pipes to the oracle worker")),
        };
        let last_line = Arc::new(Mutex::new(String::new()));
        let keep = Arc::clone(&last_line);
        let stderr_reader = std::thread::spawn(move || keep_last_line(stderr, &keep));
        let (send, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || loop {
            let frame = read_frame(&mut stdout);
            let end = frame.is_err();
            if send.send(frame).is_err() || end {
                return;
            }
        });
        Ok(Running { child, stdin, answers, last_line, stderr_reader: Some(stderr_reader) })
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
                super::opens::add_opens(count);
            }
        }
        self.stop();
    }
}

/// Why a request failed: the worker refused it (an error it answered, a time-out), or died.
enum Failure {
    Refused(String),
    Died(String),
}
use Failure::{Died, Refused};

/// Longest stderr line kept (bytes).
const MAX_LINE: usize = 500;

/// Reads `stderr` to its end, keeping its last line that says something (Rust's `note: run with
/// RUST_BACKTRACE` hint skipped), at most [`MAX_LINE`] bytes of it.
fn keep_last_line(stderr: impl Read, last: &Mutex<String>) {
    let mut reader = std::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.by_ref().take(1 << 16).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() || text.starts_with("note: run with") {
            continue;
        }
        let cut = (0..=MAX_LINE.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        if let Ok(mut kept) = last.lock() {
            *kept = text[..cut].to_string();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the `vzarr` binary: a shell script that does `body` when started as
    /// `script oracle-worker`.
    fn fake_worker(dir: &std::path::Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-vzarr");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn hdf4_fixture() -> String {
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hdf4/types.hdf").to_string()
    }

    #[test]
    fn a_dead_worker_is_described_and_libhdf5_asked_in_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let counter = dir.path().join("starts");
        let body = format!(
            "echo started >> {}\necho 'libnetcdf: something went wrong' >&2\necho 'note: run with RUST_BACKTRACE' >&2\nkill -SEGV $$",
            counter.display()
        );
        let mut worker = WorkerOracle::new(fake_worker(dir.path(), &body), Duration::from_secs(20));
        let error = worker.request(&Request::new("shape", "/nowhere/a.nc", "grp/x")).unwrap_err().to_string();
        assert!(
            error.starts_with(
                "oracle worker died in libnetcdf (shape of grp/x): killed by signal 11 (SIGSEGV); its last words: \
                 libnetcdf: something went wrong; libhdf5 then: oracle worker died in libhdf5 (shape of grp/x)"
            ),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&counter).unwrap().lines().count(), 2, "the dead worker was replaced");
        // The file libnetcdf died on goes to libhdf5 directly from now on.
        let again = worker.request(&Request::new("box", "/nowhere/a.nc", "grp/x")).unwrap_err().to_string();
        assert!(again.starts_with("oracle worker died in libhdf5 (box of grp/x)"), "{again}");
    }

    #[test]
    fn an_exit_code_is_named_and_an_hdf4_time_out_names_libhdf4() {
        let dir = tempfile::tempdir().unwrap();
        let mut worker = WorkerOracle::new(fake_worker(dir.path(), "exit 101"), Duration::from_secs(20));
        let error = worker.request(&Request::new("all", &hdf4_fixture(), "v_f32")).unwrap_err().to_string();
        assert_eq!(
            error,
            "oracle worker died in libhdf4 (all of v_f32): exit code 101 (a panic); it wrote nothing to stderr"
        );
        let mut worker = WorkerOracle::new(fake_worker(dir.path(), "exec sleep 30"), Duration::from_millis(300));
        let error = worker.request(&Request::new("all", &hdf4_fixture(), "v_f32")).unwrap_err().to_string();
        assert!(error.starts_with("timed out: libhdf4 did not answer within 0.3 s"), "{error}");
    }
}

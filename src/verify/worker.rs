//! The oracle in a child process, the `vzarr-oracle` program (`oracle::serve_oracle`), so that a
//! source file that sends libhdf5 into an endless loop (a corrupt global heap: `H5HG_read` via
//! `nc_inq_vartype`) becomes an error after a timeout instead of a hang (a thread cannot be stopped; a
//! process can), and so that the `vzarr` process links none of the C libraries. Requests and answers
//! are `verify/protocol`'s. The child keeps recently used files open (`OracleFiles`). A request not
//! answered within the timeout kills the child; the next request starts a new one.
//!
//! A worker that dies (libnetcdf segfaults on an external-link cycle, a panic) is described: how it
//! ended (exit code or signal), the library it was in and the last line it wrote to stderr. It is
//! replaced, and a request libnetcdf died on is asked again of libhdf5 alone (`hdf5_only`), as for
//! files libnetcdf refuses whole; later requests for that file go to libhdf5 directly.

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::backend::{Backend, Hdf5Facts, OracleError, LIBAEC};
use super::protocol::{read_frame, Request};
use super::TimeValues;

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
    fn forget(&mut self, location: &str) -> Result<(), OracleError> {
        if self.running.is_none() {
            return Ok(());
        }
        self.request(&Request::new("forget", location, "")).map(|_| ())
    }

    /// Sends `request`; the payload of the answer. Where libnetcdf dies on it, a new worker asks
    /// libhdf5 alone.
    fn request(&mut self, request: &Request) -> Result<Vec<u8>, OracleError> {
        let hdf5_only = request.hdf5_only || self.netcdf_died.contains(&request.location);
        let first = Request { hdf5_only, ..request.clone() };
        match self.request_once(&first) {
            Err(Died(death)) if library(&first) == "libnetcdf" && !matches!(first.op.as_str(), "forget" | "opens") => {
                self.netcdf_died.insert(first.location.clone());
                let again = Request { hdf5_only: true, ..first };
                self.request_once(&again).map_err(|e| {
                    let e = match e {
                        Died(e) | Refused(e) | Stuck(e) => e,
                    };
                    OracleError::Worker(format!("{death}; libhdf5 then: {e}"))
                })
            }
            Err(Died(e) | Stuck(e)) => Err(OracleError::Worker(e)),
            Err(Refused(e)) => Err(OracleError::Library(e)),
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
            Stuck(format!("timed out: {library} did not answer within {secs} s (the file may be corrupt)"))
        };
        if self.timed_out.contains(&request.location) {
            return Err(timed_out());
        }
        let running = match &mut self.running {
            Some(running) => running,
            None => {
                let started = self
                    .start()
                    .map_err(|e| Stuck(format!("starting the oracle worker {}: {e}", self.program.display())))?;
                self.running.insert(started)
            }
        };
        let mut line = serde_json::to_vec(request).map_err(|e| Stuck(e.to_string()))?;
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

    /// Sends `request`; the payload of its answer, read as JSON.
    fn request_json<T: serde::de::DeserializeOwned>(&mut self, request: &Request) -> Result<T, OracleError> {
        let payload = self.request(request)?;
        serde_json::from_slice(&payload).map_err(|e| OracleError::Worker(format!("oracle worker: {e}")))
    }

    fn start(&self) -> std::io::Result<Running> {
        let mut child =
            Command::new(&self.program).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
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

impl Backend for WorkerOracle {
    fn forget(&mut self, local: &str) {
        // A worker that cannot answer is ended, which closes its files too.
        let _ = WorkerOracle::forget(self, local);
    }

    fn read(&mut self, local: &str, path: &str, starts: &[u64], counts: &[u64]) -> Result<Vec<u8>, OracleError> {
        match starts.is_empty() {
            true => self.request(&Request::new("all", local, path)),
            false => self.request(&Request::of_box(local, path, starts, counts)),
        }
    }

    fn read_strings(&mut self, local: &str, path: &str) -> Result<Vec<String>, OracleError> {
        self.request_json(&Request::new("strings", local, path))
    }

    fn numeric_type(&mut self, local: &str, path: &str) -> Option<crate::metadata::DataType> {
        let name = self.request_json::<Option<serde_json::Value>>(&Request::new("type", local, path));
        crate::metadata::DataType::from_json(&name.ok()??).ok()
    }

    fn shape(&mut self, local: &str, path: &str) -> Result<(Vec<u64>, usize), OracleError> {
        self.request_json(&Request::new("shape", local, path))
    }

    fn hdf5_facts(&mut self, local: &str, path: &str) -> Result<Hdf5Facts, OracleError> {
        self.request_json(&Request::new("hdf5", local, path))
    }

    fn other_oracle(&mut self, local: &str, path: &str) -> Option<&'static str> {
        let answer = self.request_json::<Option<String>>(&Request::new("oracle", local, path)).ok().flatten()?;
        (answer == LIBAEC).then_some(LIBAEC)
    }

    fn missing_filter(&mut self, local: &str, path: &str) -> Option<String> {
        self.request_json::<Option<String>>(&Request::new("filter", local, path)).ok().flatten()
    }

    fn read_f64(&mut self, local: &str, path: &str) -> Result<TimeValues, OracleError> {
        self.request_json(&Request::new("f64", local, path))
    }

    fn global_attribute(&mut self, local: &str, name: &str) -> Option<serde_json::Value> {
        self.request_json::<Option<serde_json::Value>>(&Request::new("attr", local, name)).ok().flatten()
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

/// Why a request failed: the library refused it (an error the worker answered), the worker died on
/// it, or it could not be asked (the worker did not start, or did not answer in time).
enum Failure {
    Refused(String),
    Died(String),
    Stuck(String),
}
use Failure::{Died, Refused, Stuck};

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the `vzarr-oracle` binary: a shell script that does `body`.
    fn fake_worker(dir: &std::path::Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-vzarr-oracle");
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

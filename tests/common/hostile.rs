//! Hostile NetCDF-3 files, written byte by byte (libnetcdf refuses to write most of them): huge record
//! counts, huge attributes and coordinates in sparse files (`set_len`: they take no disk), absurd ranks,
//! duplicate names. And the real binary run under limits: address space capped with `RLIMIT_AS` and a
//! wall-clock timeout, so a regression fails the test instead of taking the machine down.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::Run;

/// `NC_FLOAT`, `NC_DOUBLE`, `NC_BYTE`, `NC_CHAR` type codes.
pub const NC_BYTE: u32 = 1;
pub const NC_CHAR: u32 = 2;
pub const NC_FLOAT: u32 = 5;
pub const NC_DOUBLE: u32 = 6;

/// A CDF-2 (64-bit offset) header under construction: 32-bit counts, 64-bit offsets.
#[derive(Default)]
pub struct Cdf2 {
    /// `numrecs` as stored (`u32::MAX` is STREAMING).
    pub numrecs: u32,
    /// `(name, length)`; length 0 is the record dimension.
    pub dims: Vec<(String, u32)>,
    /// Global text attributes `(name, declared length, bytes actually present)`.
    pub global_text: Vec<(String, u32, Vec<u8>)>,
    /// `(name, dim ids, nc_type, begin)`; `begin` is filled in by [`Cdf2::encode`] when 0.
    pub vars: Vec<(String, Vec<u32>, u32, u64)>,
}

fn name(out: &mut Vec<u8>, name: &str) {
    out.extend((name.len() as u32).to_be_bytes());
    out.extend(name.as_bytes());
    out.resize(out.len().div_ceil(4) * 4, 0);
}

impl Cdf2 {
    /// The header bytes; variables with `begin == 0` get consecutive offsets right after the header,
    /// `size(var)` bytes apart (the caller knows the sizes).
    pub fn encode(&mut self, size: impl Fn(&(String, Vec<u32>, u32, u64)) -> u64) -> Vec<u8> {
        let header_len = self.encode_with_begins().len() as u64;
        let mut next = header_len;
        for var in &mut self.vars {
            if var.3 == 0 {
                var.3 = next;
            }
            next = var.3 + size(var);
        }
        self.encode_with_begins()
    }

    fn encode_with_begins(&self) -> Vec<u8> {
        let mut out = b"CDF\x02".to_vec();
        out.extend(self.numrecs.to_be_bytes());
        out.extend(0x0Au32.to_be_bytes());
        out.extend((self.dims.len() as u32).to_be_bytes());
        for (n, len) in &self.dims {
            name(&mut out, n);
            out.extend(len.to_be_bytes());
        }
        if self.global_text.is_empty() {
            out.extend([0u8; 8]);
        } else {
            out.extend(0x0Cu32.to_be_bytes());
            out.extend((self.global_text.len() as u32).to_be_bytes());
            for (n, declared, bytes) in &self.global_text {
                name(&mut out, n);
                out.extend(NC_CHAR.to_be_bytes());
                out.extend(declared.to_be_bytes());
                out.extend(bytes);
            }
        }
        out.extend(0x0Bu32.to_be_bytes());
        out.extend((self.vars.len() as u32).to_be_bytes());
        for (n, dim_ids, nc_type, begin) in &self.vars {
            name(&mut out, n);
            out.extend((dim_ids.len() as u32).to_be_bytes());
            for id in dim_ids {
                out.extend(id.to_be_bytes());
            }
            out.extend([0u8; 8]);
            out.extend(nc_type.to_be_bytes());
            out.extend(0u32.to_be_bytes());
            out.extend(begin.to_be_bytes());
        }
        out
    }
}

/// Writes `header` to `dir/file_name` and extends the file (sparsely) to `len` bytes.
pub fn write_sparse(dir: &Path, file_name: &str, header: &[u8], len: u64) -> PathBuf {
    let path = dir.join(file_name);
    std::fs::write(&path, header).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len.max(header.len() as u64)).unwrap();
    path
}

/// Address space allowed to a hostile-input child process.
pub const CHILD_ADDRESS_SPACE: u64 = 4 << 30;
/// Wall-clock time allowed to a hostile-input child process.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `vzarr args` with at most [`CHILD_ADDRESS_SPACE`] of address space, killed after `timeout`
/// (the test then fails: a hang).
pub fn cli_limited<S: AsRef<std::ffi::OsStr>>(args: &[S], timeout: Duration) -> Run {
    cli_limited_to(args, timeout, CHILD_ADDRESS_SPACE)
}

/// As [`cli_limited`], with at most `address_space` bytes of address space.
pub fn cli_limited_to<S: AsRef<std::ffi::OsStr>>(args: &[S], timeout: Duration, address_space: u64) -> Run {
    let mut command = crate::common::vzarr_command();
    command.args(args).env_remove("RUST_BACKTRACE").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit { rlim_cur: address_space, rlim_max: address_space };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = {
        let _exclusive = super::no_hdf5_files_open();
        command.spawn().expect("starting vzarr")
    };
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read_all = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = r.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let (out, err) = (read_all(Box::new(stdout)), read_all(Box::new(stderr)));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vzarr {:?} did not finish within {timeout:?}", args.iter().map(|a| a.as_ref()).collect::<Vec<_>>());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run { code: status.code().unwrap_or(-1), stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

//! Many variables in one file (issue 14, item 19): `scan`, `info` and `verify` of a NetCDF-3 file of
//! N float variables (default 20,000), through the real binary, with the counts that make the cost
//! linear: syncs per store (one `syncfs`, not one `fsync` per file) and source opens per `verify`
//! (one, not one per variable).
//!
//! Run: `cargo bench --bench many_variables [-- --vars N]`.
//!
//! Measured with debug builds of the binary on the shared 2-core development machine (load average
//! about 10 during the runs, so wall times are indicative), N = 20,000:
//!
//! | step   | before (main at 2a060e5)            | after                              |
//! |--------|-------------------------------------|------------------------------------|
//! | scan   | 23.6 s, 40,004 fsync calls          | 5.5 s, 1 syncfs + 1 fsync (parent) |
//! | info   | 24.8 s (array lookup quadratic)     | 15.5 s; 5,000 variables: 5.7 s     |
//! | verify | > 600 s (killed), one open per var  | 23.2 s, the source opened once     |

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let n: usize =
        args.iter().position(|a| a == "--vars").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(20_000);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-many-variables");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("many_{n}.nc"));
    std::fs::write(&file, many_variables(n)).unwrap();
    let store = dir.join(format!("many_{n}.vzarr"));
    let _ = std::fs::remove_dir_all(&store);
    println!("{n} float variables of 4 values in one NetCDF-3 (CDF-2) file");
    for step in [vec!["scan", p(&file), "-o", p(&store)], vec!["info", p(&store), "--json"], vec!["verify", p(&store)]]
    {
        let start = Instant::now();
        let out =
            Command::new(env!("CARGO_BIN_EXE_vzarr")).args(&step).env("VZARR_TEST_COUNTERS", "1").output().unwrap();
        let seconds = start.elapsed().as_secs_f64();
        assert!(out.status.success(), "{step:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let counters = stderr.lines().find(|l| l.starts_with("counters:")).unwrap_or("");
        println!("{:<7} {seconds:>8.2} s   {counters}", step[0]);
    }
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A CDF-2 file: dimension `x` = 4, variables `v0..v{n-1}` float, `v<i>[j] = i + j / 4`.
fn many_variables(n: usize) -> Vec<u8> {
    let name = |out: &mut Vec<u8>, s: &str| {
        out.extend((s.len() as u32).to_be_bytes());
        out.extend(s.as_bytes());
        out.resize(out.len().div_ceil(4) * 4, 0);
    };
    let header = |begin0: u64| {
        let mut h = b"CDF\x02".to_vec();
        h.extend(0u32.to_be_bytes());
        h.extend(0x0Au32.to_be_bytes());
        h.extend(1u32.to_be_bytes());
        name(&mut h, "x");
        h.extend(4u32.to_be_bytes());
        h.extend([0u8; 8]);
        h.extend(0x0Bu32.to_be_bytes());
        h.extend((n as u32).to_be_bytes());
        for i in 0..n {
            name(&mut h, &format!("v{i}"));
            h.extend(1u32.to_be_bytes());
            h.extend(0u32.to_be_bytes());
            h.extend([0u8; 8]);
            h.extend(5u32.to_be_bytes());
            h.extend(16u32.to_be_bytes());
            h.extend((begin0 + 16 * i as u64).to_be_bytes());
        }
        h
    };
    let mut bytes = header(header(0).len() as u64);
    for i in 0..n {
        for j in 0..4 {
            bytes.extend((i as f32 + j as f32 / 4.0).to_be_bytes());
        }
    }
    bytes
}

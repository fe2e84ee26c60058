//! Regular copies benchmark (issue 40, "Performance"): an archive of 24 monthly NetCDF-4 files of
//! `tas(time, lat, lon)` float32, 731 x 180 x 360 (2004-2005, daily, months of 28-31 days), each file
//! chunked `(days of the month, 90, 180)` (one time-slab per month, a quarter of the globe per chunk,
//! zlib level 1 + shuffle, as `ds.to_netcdf(encoding={"tas": {"zlib": True, "chunksizes": ...}})`
//! writes it), copied into regular chunks `time=90, lat=45, lon=90`, in the same run:
//!
//! - `vzarr materialize STORE OUT --chunks time=90,lat=45,lon=90` (the release binary, defaults:
//!   `--max-memory 1G`, the array's own codecs: shuffle + zlib 1), its wall and CPU time and peak
//!   resident set (`wait4`); and the same with `--codec zstd`, the codec zarr-python writes by
//!   default, so that both sides compress alike;
//! - xarray + dask, in `benches/materialize_xarray.py` (dask's default threaded scheduler,
//!   zarr-python's default codecs, the files' chunk encoding dropped as xarray asks):
//!   `xr.open_mfdataset(files).chunk({...}).to_zarr(OUT)`, the baseline (target: vzarr >= 2.5x
//!   faster, issue 55; issue 40's 5x lies beyond the codec floor's ceiling), and `xr.open_dataset(STORE, engine="vzarr", chunks={}).chunk({...}).to_zarr(OUT)`
//!   (target: vzarr faster);
//! - `vzarr materialize` under a small `--max-memory` (32 MiB: the array is 190 MB), its peak
//!   resident set printed against that limit (the binary alone: about 23 MiB);
//! - the codec floor of the copy (`common::floor`), once with the array's codecs and once with
//!   zstd (also xarray's codec work: zlib decode, zstd encode): the 96 source chunks' stored bytes
//!   read into memory first, then, timed, each decoded once and each of the 144 target chunks cut
//!   from them, padded and encoded once, on both cores, with vzarr's `CodecChain`; every encoded
//!   chunk checked byte for byte against vzarr's copy. The ceiling it implies is printed:
//!   `open_mfdataset`'s wall over the floor's, the best ratio any copy on these codecs could reach
//!   on this machine, beside the 5x target and vzarr's measured ratio;
//! - the same floor for xarray's copy with xarray's own codec libraries (the system zlib libhdf5
//!   links, numcodecs' shuffle and zstd; `materialize_xarray.py floor`, two Python threads), which
//!   inflate more slowly than vzarr's zlib-rs.
//!
//! Each copy is run twice and the faster run kept (two cores shared with other work); ratios of CPU
//! time are printed beside those of wall time. The store is scanned first (`vzarr scan FILES
//! --concat time`, timed but not in the ratios: the store is what a user of `materialize` already
//! has). The script then checks every copy: read through zarr-python, it equals netCDF4's read of
//! the files, in chunks (90, 45, 90).
//!
//! Run: `cargo bench --bench materialize`. Needs a Python with xarray, dask, netCDF4, zarr and the
//! vzarr package: `VZARR_BENCH_PYTHON`, else `target/pybench/bin/python` (`./dev bench-python` makes
//! it), else `target/pyenv/bin/python` (`tests/python/setup.sh` and the wheel); without one, only
//! vzarr is timed and one line says why. The archive is written once under
//! `target/bench-archive/monthly-tas/`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rayon::prelude::*;

use common::floor::{copy_box, decode_chunk, measure, stored_chunks, Timing};
use common::run_vzarr;
use vzarr::dataset::ArrayMetadata;
use vzarr::dataset::{CodecChain, Recode};
use vzarr::read::{container_of, Authorization};
use vzarr::ChunkGrid;

/// Latitudes and longitudes of the archive.
const NY: usize = 180;
const NX: usize = 360;
/// The target chunks.
const CHUNKS: &str = "time=90,lat=45,lon=90";
/// The target chunks' shape, as [`CHUNKS`] names it.
const CHUNK_SHAPE: [u64; 3] = [90, 45, 90];
/// The small memory limit of the second run, bytes.
const SMALL: u64 = 32 << 20;

/// Runs of each copy; the fastest is kept (two cores shared with other work: the others are noise).
const RUNS: usize = 2;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`: nothing to measure there
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/bench-archive/monthly-tas");
    let files = ensure_monthly(&dir);
    let work = root.join("target/tmp/bench-materialize");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let store = work.join("tas.vzarr");
    let mut scan_args: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    scan_args.extend(["--concat", "time", "-o"].map(String::from));
    scan_args.push(store.display().to_string());
    let scan = run_vzarr("scan", &scan_args);
    warm(&files);
    println!("archive: 24 monthly files, tas 731 x {NY} x {NX} float32, chunks (days of the month, 90, 180), zlib 1");
    println!("vzarr scan (not in the ratios): {:.2} s", scan.seconds);
    let (vzarr, peak) = materialize(&store, &work.join("vzarr.zarr"), &[]);
    println!(
        "vzarr materialize --chunks {CHUNKS}: {:6.2} s ({:5.2} s CPU), peak RSS {peak} MiB (--max-memory 1024 MiB, \
         the default)",
        vzarr.wall, vzarr.cpu
    );
    let (zstd, _) = materialize(&store, &work.join("zstd.zarr"), &["--codec", "zstd"]);
    println!("vzarr materialize --codec zstd: {:6.2} s ({:5.2} s CPU)", zstd.wall, zstd.cpu);
    let python = python(&root);
    let baselines = python.as_ref().map_err(Clone::clone).and_then(|py| xarray_baselines(py, &store, &files, &work));
    match &baselines {
        Ok((mf, engine)) => {
            println!("xarray open_mfdataset(files).chunk().to_zarr():        {:6.2} s ({:5.2} s CPU)", mf.wall, mf.cpu);
            println!(
                "xarray open_dataset(store, engine=vzarr).chunk().to_zarr(): {:6.2} s ({:5.2} s CPU)",
                engine.wall, engine.cpu
            );
            println!(
                "  vzarr materialize: {:.2}x faster than open_mfdataset (target >= 2.5; CPU {:.2}x), {:.2}x faster than \
                 the vzarr engine path (target > 1; CPU {:.2}x)",
                mf.wall / vzarr.wall,
                mf.cpu / vzarr.cpu,
                engine.wall / vzarr.wall,
                engine.cpu / vzarr.cpu
            );
        }
        Err(why) => println!("xarray baselines not measured: {why}"),
    }
    if let Ok((mf, _)) = &baselines {
        println!(
            "  vzarr materialize --codec zstd (zstd as zarr-python writes): {:.2}x faster than open_mfdataset \
             (CPU {:.2}x)",
            mf.wall / zstd.wall,
            mf.cpu / zstd.cpu
        );
    }
    let small = SMALL.to_string();
    let (bounded, peak) = materialize(&store, &work.join("small.zarr"), &["--max-memory", &small]);
    println!(
        "vzarr materialize --max-memory {} MiB: {:6.2} s ({:5.2} s CPU), peak RSS {peak} MiB",
        SMALL >> 20,
        bounded.wall,
        bounded.cpu
    );
    // Last: the floor leaves this process large, which a child's peak resident set would count.
    floors(&store, &files, &work, (vzarr, zstd), baselines.as_ref().ok().map(|b| b.0));
    if let (Ok(py), Ok((mf, _))) = (&python, &baselines) {
        xarray_floor(py, &files, *mf);
    }
    if let Ok(py) = &python {
        check(py, &work, &files, baselines.is_ok());
    }
}

/// Measures and prints the codec floor of the copy (`common::floor`) with the array's codecs and with
/// zstd, checks that each floor's encoded chunks are byte for byte vzarr's (so it did the same work),
/// and prints the ceiling each implies: `open_mfdataset`'s wall over the floor's.
fn floors(store: &Path, files: &[PathBuf], work: &Path, (own, zstd): (Timing, Timing), mfdataset: Option<Timing>) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let authorization = Authorization::new([container_of(&files[0].display().to_string())]);
    let (meta, stored) = stored_chunks(&runtime, &store.display().to_string(), &authorization, "tas");
    let stored: Vec<&[u8]> = stored.iter().map(|s| s.as_deref().expect("every source chunk is stored")).collect();
    let target = ChunkGrid::regular(&meta.shape(), &CHUNK_SHAPE).unwrap();
    println!(
        "codec floor (in memory, both cores, vzarr's CodecChain: {} source chunks decoded once, {} target chunks \
         cut, padded and encoded once; best of {RUNS}):",
        stored.len(),
        target.num_chunks()
    );
    let zstd_chain = Recode::Zstd(3).chain(&meta.codecs).unwrap();
    let zstd_name = "zstd 3 (--codec zstd; xarray's work too: zlib decode, zarr-python's zstd)";
    let runs = [
        ("the array's codecs (shuffle + zlib 1)", &meta.codecs, own, "vzarr.zarr"),
        (zstd_name, &zstd_chain, zstd, "zstd.zarr"),
    ];
    for (name, chain, measured, out) in runs {
        let (decode, encode) = codec_floor(&meta, &stored, &target, chain, &work.join(out).join("tas"));
        let floor = decode.plus(encode);
        println!(
            "  {name}: decode {:.2} s ({:.2} s CPU) + cut and encode {:.2} s ({:.2} s CPU) = {:.2} s ({:.2} s \
             CPU); vzarr materialize takes {:.2}x the floor's wall ({:.2}x its CPU)",
            decode.wall,
            decode.cpu,
            encode.wall,
            encode.cpu,
            floor.wall,
            floor.cpu,
            measured.wall / floor.wall,
            measured.cpu / floor.cpu
        );
        if let Some(mf) = mfdataset {
            println!(
                "    ceiling: open_mfdataset wall / floor wall = {:.2}x (CPU {:.2}x), against the target >= 2.5x and \
                 vzarr's measured {:.2}x",
                mf.wall / floor.wall,
                mf.cpu / floor.cpu,
                mf.wall / measured.wall
            );
        }
    }
}

/// The best of [`RUNS`] of the floor with output codecs `out`: (decode every source chunk, then cut,
/// pad and encode every chunk of `target`), each phase timed. Checks every encoded chunk equals
/// vzarr's in the copy at `copy` (the array's directory).
fn codec_floor(
    meta: &ArrayMetadata,
    stored: &[&[u8]],
    target: &ChunkGrid,
    out: &CodecChain,
    copy: &Path,
) -> (Timing, Timing) {
    let mut runs = Vec::new();
    let mut encoded = Vec::new();
    for _ in 0..RUNS {
        let (decode, decoded) =
            measure(|| stored.par_iter().enumerate().map(|(i, s)| decode_chunk(meta, i as u64, s)).collect::<Vec<_>>());
        let (encode, chunks) = measure(|| {
            (0..target.num_chunks())
                .into_par_iter()
                .map(|t| out.encode(&cut(meta, &decoded, target, t), meta.element_size()).unwrap())
                .collect::<Vec<_>>()
        });
        runs.push((decode, encode));
        encoded = chunks;
    }
    for (t, chunk) in encoded.iter().enumerate() {
        let key: Vec<String> = target.chunk_coords(t as u64).iter().map(u64::to_string).collect();
        let path = copy.join("c").join(key.join("/"));
        assert!(std::fs::read(&path).unwrap() == *chunk, "{}: the floor encoded other bytes", path.display());
    }
    runs.into_iter().min_by(|a, b| a.0.plus(a.1).wall.total_cmp(&b.0.plus(b.1).wall)).unwrap()
}

/// Target chunk `t`, cut from the decoded source chunks (`decoded`, by linear index of the source
/// grid) and padded with the fill value past the array's end, as a regular Zarr chunk holds it.
fn cut(meta: &ArrayMetadata, decoded: &[Vec<u8>], target: &ChunkGrid, t: u64) -> Vec<u8> {
    let (size, source) = (meta.element_size(), &meta.chunk_grid);
    let coords = target.chunk_coords(t);
    let (origin, edges) = (target.chunk_origin(&coords), target.chunk_shape(&coords));
    let end: Vec<u64> = (0..3).map(|d| origin[d] + target.dim(d).valid(coords[d])).collect();
    let len = edges.iter().product::<u64>() as usize;
    let padded = (0..3).any(|d| end[d] < origin[d] + edges[d]);
    let mut chunk = if padded { meta.fill_value.as_bytes().repeat(len) } else { vec![0u8; len * size] };
    // The source chunks the chunk's valid box overlaps, per dimension.
    let span = |d: usize| source.dim(d).locate(origin[d]).unwrap().0..source.dim(d).locate(end[d] - 1).unwrap().0 + 1;
    for a in span(0) {
        for b in span(1) {
            for c in span(2) {
                let s = [a, b, c];
                let (s_origin, s_edges) = (source.chunk_origin(&s), source.chunk_shape(&s));
                let lo: Vec<u64> = (0..3).map(|d| origin[d].max(s_origin[d])).collect();
                let hi: Vec<u64> = (0..3).map(|d| end[d].min(s_origin[d] + source.dim(d).valid(s[d]))).collect();
                let count: Vec<u64> = (0..3).map(|d| hi[d] - lo[d]).collect();
                let (from, to): (Vec<u64>, Vec<u64>) = (0..3).map(|d| (lo[d] - s_origin[d], lo[d] - origin[d])).unzip();
                let src = &decoded[source.linear_index(&s) as usize];
                copy_box(src, &s_edges, &from, &mut chunk, &edges, &to, &count, size);
            }
        }
    }
    chunk
}

/// `vzarr materialize STORE OUT --chunks CHUNKS EXTRA`, the best of [`RUNS`], and the largest peak
/// resident set of the runs (MiB).
fn materialize(store: &Path, out: &Path, extra: &[&str]) -> (Timing, u64) {
    let mut args = vec![store.display().to_string(), out.display().to_string(), "--chunks".into(), CHUNKS.into()];
    args.extend(["--overwrite"].iter().chain(extra).map(|s| s.to_string()));
    let mut peak = 0;
    let runs: Vec<Timing> = (0..RUNS)
        .map(|_| {
            common::reset_peak();
            let start = std::time::Instant::now();
            #[allow(clippy::zombie_processes)] // reaped by wait4 below
            let child = Command::new(env!("CARGO_BIN_EXE_vzarr"))
                .arg("materialize")
                .args(&args)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("starting vzarr");
            let (kib, cpu) = wait(child);
            peak = peak.max(kib / 1024);
            Timing { wall: start.elapsed().as_secs_f64(), cpu }
        })
        .collect();
    (Timing::best(runs), peak)
}

/// Waits for `child` with `wait4`: its peak resident set (KiB) and CPU seconds; panics unless it
/// exited 0.
fn wait(child: std::process::Child) -> (u64, f64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid pointers.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert!(pid > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "vzarr materialize failed");
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (usage.ru_maxrss as u64, seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

/// Reads every file once, so that the first copy timed does not pay for a cold page cache.
fn warm(files: &[PathBuf]) {
    for f in files {
        drop(std::fs::read(f).unwrap());
    }
}

/// The Python to run the baselines with, or why there is none.
fn python(root: &Path) -> Result<PathBuf, String> {
    let candidates = std::env::var_os("VZARR_BENCH_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain(["target/pybench/bin/python", "target/pyenv/bin/python"].map(|p| root.join(p)));
    for py in candidates {
        let probe = Command::new(&py).args(["-c", "import xarray, dask, netCDF4, zarr, vzarr"]).output();
        if probe.is_ok_and(|o| o.status.success()) {
            return Ok(py);
        }
    }
    Err("no Python with xarray, dask, netCDF4, zarr and vzarr (set VZARR_BENCH_PYTHON or run ./dev bench-python)"
        .into())
}

/// Runs the script's `mode`; returns its seconds (the last line of its output).
fn script(python: &Path, args: &[&std::ffi::OsStr]) -> Result<String, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/materialize_xarray.py");
    let out = Command::new(python).arg(script).args(args).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("failed").to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The `wall cpu` seconds on the last line of the script's output.
fn timing(said: String) -> Result<Timing, String> {
    let last = said.lines().last().unwrap_or("").to_string();
    let mut parts = last.split_whitespace().map(str::parse::<f64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(wall)), Some(Ok(cpu))) => Ok(Timing { wall, cpu }),
        _ => Err(format!("unexpected output {said:?}")),
    }
}

/// Measures and prints the codec floor of xarray's copy with xarray's own codec libraries (the
/// script's `floor`: the system zlib libhdf5 links, numcodecs' shuffle and zstd, two threads), and
/// how far `open_mfdataset` (`mf`) is above it.
fn xarray_floor(python: &Path, files: &[PathBuf], mf: Timing) {
    let mut args: Vec<&std::ffi::OsStr> = vec!["floor".as_ref(), CHUNKS.as_ref(), "-".as_ref()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    match script(python, &args).and_then(timing) {
        Ok(floor) => println!(
            "  xarray's own codecs (system zlib as libhdf5 links it, numcodecs' unshuffle and zstd; Python, two \
             threads): {:.2} s ({:.2} s CPU); open_mfdataset takes {:.2}x its wall ({:.2}x its CPU)",
            floor.wall,
            floor.cpu,
            mf.wall / floor.wall,
            mf.cpu / floor.cpu
        ),
        Err(why) => println!("  xarray's own codec floor not measured: {why}"),
    }
}

/// Times the two xarray copies, the best of [`RUNS`] each: (open_mfdataset, the vzarr engine).
fn xarray_baselines(python: &Path, store: &Path, files: &[PathBuf], work: &Path) -> Result<(Timing, Timing), String> {
    let mf_out = work.join("mfdataset.zarr");
    let mut mf: Vec<&std::ffi::OsStr> = vec!["mfdataset".as_ref(), CHUNKS.as_ref(), mf_out.as_os_str()];
    mf.extend(files.iter().map(|f| f.as_os_str()));
    let engine_out = work.join("engine.zarr");
    let engine = ["engine".as_ref(), CHUNKS.as_ref(), engine_out.as_os_str(), store.as_os_str()];
    let mut mf_runs = Vec::new();
    let mut engine_runs = Vec::new();
    for _ in 0..RUNS {
        mf_runs.push(timing(script(python, &mf)?)?);
        engine_runs.push(timing(script(python, &engine)?)?);
    }
    Ok((Timing::best(mf_runs), Timing::best(engine_runs)))
}

/// Every copy read through zarr-python equals netCDF4's read of the files (the script asserts it).
fn check(python: &Path, work: &Path, files: &[PathBuf], baselines: bool) {
    let mut outs = vec![work.join("vzarr.zarr"), work.join("zstd.zarr"), work.join("small.zarr")];
    if baselines {
        outs.extend([work.join("mfdataset.zarr"), work.join("engine.zarr")]);
    }
    let list = outs.iter().map(|o| o.display().to_string()).collect::<Vec<_>>().join(",");
    let mut args: Vec<&std::ffi::OsStr> = vec!["check".as_ref(), CHUNKS.as_ref(), list.as_ref()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    match script(python, &args) {
        Ok(said) => println!("{said}"),
        Err(why) => panic!("the copies differ from the files: {why}"),
    }
}

/// Days of each month of 2004-2005.
fn months() -> Vec<(i32, u32, usize)> {
    let mut out = Vec::new();
    for year in [2004, 2005] {
        for month in 1..=12u32 {
            let days = match month {
                2 if year % 4 == 0 => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            out.push((year, month, days));
        }
    }
    out
}

/// Writes the 24 monthly files unless they are there.
fn ensure_monthly(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let mut first = 0;
    let mut paths = Vec::new();
    for (year, month, days) in months() {
        let path = dir.join(format!("tas_{year}{month:02}.nc"));
        if !path.exists() {
            write_month(&path, first, days);
        }
        paths.push(path);
        first += days;
    }
    assert_eq!(first, 731);
    paths
}

/// One month: `days` days from day `first` (days since 2004-01-01).
fn write_month(path: &Path, first: usize, days: usize) {
    let tmp = path.with_extension("tmp");
    let mut f = netcdf::create(&tmp).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", NY).unwrap();
    f.add_dimension("lon", NX).unwrap();
    let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "days since 2004-01-01").unwrap();
    time.put_attribute("calendar", "standard").unwrap();
    let t: Vec<f64> = (first..first + days).map(|d| d as f64).collect();
    time.put_values(&t, (0..days,)).unwrap();
    let mut lat = f.add_variable::<f64>("lat", &["lat"]).unwrap();
    lat.put_values(&(0..NY).map(|i| -89.5 + i as f64).collect::<Vec<_>>(), (0..NY,)).unwrap();
    let mut lon = f.add_variable::<f64>("lon", &["lon"]).unwrap();
    lon.put_values(&(0..NX).map(|i| 0.5 + i as f64).collect::<Vec<_>>(), (0..NX,)).unwrap();
    let mut tas = f.add_variable::<f32>("tas", &["time", "lat", "lon"]).unwrap();
    tas.set_chunking(&[days, NY / 2, NX / 2]).unwrap();
    tas.set_compression(1, true).unwrap();
    tas.put_attribute("units", "K").unwrap();
    let values: Vec<f32> = (0..days * NY * NX)
        .map(|i| {
            let (d, y, x) = ((first + i / (NY * NX)) as f32, ((i / NX) % NY) as f32, (i % NX) as f32);
            let noise = ((i * 7919) % 101) as f32 / 100.0;
            273.0 + 30.0 * (y / 57.0).cos() + 5.0 * (x / 40.0 + d / 58.0).sin() + noise
        })
        .collect();
    tas.put_values(&values, [0..days, 0..NY, 0..NX]).unwrap();
    f.close().unwrap();
    std::fs::rename(tmp, path).unwrap();
}

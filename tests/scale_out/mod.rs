//! Sharded scans (issue 13): `scan --shard I/N` writes one part per shard, `merge` combines them into
//! the very store (byte for byte) one `scan` over all inputs writes, and `vzarr verify` (libnetcdf)
//! checks every value of the merged store. Also: missing and duplicated shards, parts of different
//! runs, corrupt parts, retried tasks, shards from a scheduler's environment, and the part record
//! round trip on every supported fixture. The Slurm test is `slurm.rs`.

mod slurm;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::archives::{write_series_file, yearly};
use crate::common::cmip::{cmip_archive, write_cmip_file};
use crate::common::{run, supported_fixtures, Run};

/// The `history` time of every output here, so stores written at different seconds compare equal.
const EPOCH: &str = "1700000000";

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Runs `vzarr` with `args` and extra environment variables (the scheduler's ones are cleared first).
fn vzarr_env(args: &[String], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vzarr"));
    command.args(args).env("SOURCE_DATE_EPOCH", EPOCH).stdout(Stdio::piped());
    for name in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    run(command)
}

fn vzarr(args: &[String], code: i32) -> Run {
    let run = vzarr_env(args, &[]);
    assert_eq!(run.code, code, "vzarr {args:?}\nstdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    run
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// Scans `inputs` in `count` shards into `parts/` (one process per shard, as job-array tasks run).
/// The directory is created by the first task (`-o DIR/`).
fn scan_shards(inputs: &str, options: &[&str], count: u32, parts: &Path) {
    for i in 0..count {
        let mut args = strings(&["scan", inputs, "--shard", &format!("{i}/{count}"), "-o", &format!("{}/", s(parts))]);
        args.extend(strings(options));
        let run = vzarr(&args, 0);
        assert!(run.stdout.contains(&format!("shard {i}/{count}")), "{}", run.stdout);
    }
}

/// gridMET-like yearly files chunked by 61 days (every year's last chunk partial, compressed: trimmed
/// and re-encoded into store-owned bytes).
fn yearly_archive(dir: &Path) -> String {
    for mut f in yearly(2001..=2004, 61) {
        (f.ny, f.nx, f.chunk_yx) = (4, 6, (2, 3));
        write_series_file(dir, &f);
    }
    format!("{}/*.nc", s(dir))
}

#[test]
fn merged_shards_are_the_single_scan_byte_for_byte_and_libnetcdfs_values() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = yearly_archive(&dir.path().join("in").tap_mkdir());
    let out = dir.path();
    let single = out.join("single.vzarr");
    vzarr(&strings(&["scan", &inputs, "--concat", "time", "-o", &s(&single)]), 0);
    let single_json = out.join("single.json");
    vzarr(&strings(&["scan", &inputs, "--concat", "time", "--format", "kerchunk-json", "-o", &s(&single_json)]), 0);
    // 1 shard, uneven shards, and more shards than files (some parts hold no file).
    for count in [1, 2, 8] {
        let parts = out.join(format!("parts{count}"));
        scan_shards(&inputs, &["--concat", "time"], count, &parts);
        let merged = out.join(format!("merged{count}.vzarr"));
        let glob = format!("{}/*.vzpart", s(&parts));
        let run = vzarr(&strings(&["merge", &glob, "--concat", "time", "-o", &s(&merged)]), 0);
        assert!(run.stdout.contains("from 4 file(s)"), "{}", run.stdout);
        assert!(!run.stdout.contains(" 0 rewritten"), "partial last chunks are rewritten: {}", run.stdout);
        crate::common::assert_same_tree(&single, &merged);
        let json = out.join(format!("merged{count}.json"));
        vzarr(&strings(&["merge", &glob, "--concat", "time", "--format", "kerchunk-json", "-o", &s(&json)]), 0);
        assert_eq!(
            std::fs::read(&single_json).unwrap(),
            std::fs::read(&json).unwrap(),
            "kerchunk JSON, {count} shards"
        );
    }
    let verify = vzarr(&strings(&["verify", &s(&out.join("merged2.vzarr"))]), 0);
    assert!(!verify.stdout.is_empty());
    // Merge writes an Icechunk repository too; read back, tas equals libnetcdf's reads of the files.
    let repo = out.join("merged.icechunk");
    let glob = format!("{}/*.vzpart", s(&out.join("parts2")));
    vzarr(&strings(&["merge", &glob, "--concat", "time", "--format", "icechunk", "-o", &s(&repo)]), 0);
    let npy = out.join("tas.npy");
    vzarr(&strings(&["read", &s(&repo), "tas", "-o", &s(&npy)]), 0);
    let mut sources: Vec<PathBuf> = std::fs::read_dir(out.join("in")).unwrap().map(|e| e.unwrap().path()).collect();
    sources.sort();
    let theirs: Vec<u8> = sources.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == theirs, "tas of the merged repository");
}

#[test]
fn cmip_archive_in_shards_merges_members_and_variables_as_one_scan() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in").tap_mkdir();
    for f in cmip_archive().into_iter().filter(|f| f.year <= 2004) {
        write_cmip_file(&src, &f);
    }
    let inputs = format!("{}/*.nc", s(&src));
    let dims = ["--concat", "member=attr:variant_label", "--concat", "time"];
    let single = dir.path().join("single.vzarr");
    let mut args = strings(&["scan", &inputs, "-o", &s(&single)]);
    args.extend(strings(&dims));
    vzarr(&args, 0);
    let parts = dir.path().join("parts");
    scan_shards(&inputs, &dims, 5, &parts);
    let merged = dir.path().join("merged.vzarr");
    let mut args = strings(&["merge", &format!("{}/*.vzpart", s(&parts)), "-o", &s(&merged)]);
    args.extend(strings(&dims));
    vzarr(&args, 0);
    crate::common::assert_same_tree(&single, &merged);
    vzarr(&strings(&["verify", &s(&merged)]), 0);
}

#[test]
fn missing_and_duplicated_shards_are_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = yearly_archive(&dir.path().join("in").tap_mkdir());
    let parts = dir.path().join("parts");
    scan_shards(&inputs, &["--concat", "time"], 4, &parts);
    let part = |i: u32| s(&parts.join(format!("part-{i:05}-of-00004.vzpart")));
    let copy = dir.path().join("copy.vzpart");
    std::fs::copy(part(2), &copy).unwrap();
    let store = dir.path().join("m.vzarr");
    let args = strings(&["merge", &part(0), &part(2), &s(&copy), "--concat", "time", "-o", &s(&store)]);
    let run = vzarr(&args, 1);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("missing shard(s) 1, 3"), "{}", run.stderr);
    assert!(run.stderr.contains("duplicated shard(s) 2"), "{}", run.stderr);
    assert!(run.stderr.contains("copy.vzpart"), "{}", run.stderr);
    assert!(!store.exists());
    // The same file named twice (a glob and its name) is one part.
    let glob = format!("{}/*.vzpart", s(&parts));
    vzarr(&strings(&["merge", &glob, &part(1), "--concat", "time", "-o", &s(&store)]), 0);
}

#[test]
fn parts_of_different_runs_or_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in").tap_mkdir();
    let inputs = yearly_archive(&src);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    scan_shards(&inputs, &["--concat", "time"], 2, &a);
    // Another run: one input fewer.
    let fewer: Vec<String> = (2001..=2003).map(|y| s(&src.join(format!("tas_{y}.nc")))).collect();
    let mut args = strings(&["scan", "--shard", "1/2", "--concat", "time", "-o", &format!("{}/", s(&b))]);
    args.extend(fewer);
    vzarr(&args, 0);
    let store = s(&dir.path().join("m.vzarr"));
    let first = s(&a.join("part-00000-of-00002.vzpart"));
    let other = s(&b.join("part-00001-of-00002.vzpart"));
    let run = vzarr(&strings(&["merge", &first, &other, "--concat", "time", "-o", &store]), 1);
    assert!(run.stderr.contains("parts of different runs"), "{}", run.stderr);
    // Merge must be given the dimensions the parts were scanned with.
    let glob = format!("{}/*.vzpart", s(&a));
    let run = vzarr(&strings(&["merge", &glob, "--concat", "lat", "-o", &store]), 1);
    assert!(run.stderr.contains("scanned along [time] but are merged along [lat]"), "{}", run.stderr);
    // Combine options belong to merge.
    let run =
        vzarr(&strings(&["scan", &inputs, "--shard", "0/2", "--concat", "time", "--drop-missing", "-o", &store]), 1);
    assert!(run.stderr.contains("give it to `vzarr merge`"), "{}", run.stderr);
}

#[test]
fn corrupt_parts_fail_in_one_line_naming_the_part() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = yearly_archive(&dir.path().join("in").tap_mkdir());
    let parts = dir.path().join("parts");
    scan_shards(&inputs, &["--concat", "time"], 1, &parts);
    let part = parts.join("part-00000-of-00001.vzpart");
    let good = std::fs::read(&part).unwrap();
    let store = s(&dir.path().join("m.vzarr"));
    let mut cases: Vec<Vec<u8>> = vec![good[..good.len() / 2].to_vec(), good[..10].to_vec()];
    for at in [3, good.len() / 3, good.len() - 2] {
        let mut flipped = good.clone();
        flipped[at] ^= 0x10;
        cases.push(flipped);
    }
    let mut longer = good.clone();
    longer.extend_from_slice(b"tail");
    cases.push(longer);
    for (i, bytes) in cases.iter().enumerate() {
        std::fs::write(&part, bytes).unwrap();
        let run = vzarr(&strings(&["merge", &s(&part), "--concat", "time", "-o", &store]), 1);
        assert_eq!(run.stderr.lines().count(), 1, "case {i}: {}", run.stderr);
        assert!(run.stderr.contains("part-00000-of-00001.vzpart"), "case {i}: {}", run.stderr);
        assert!(!Path::new(&store).exists());
    }
}

#[test]
fn a_retried_task_replaces_its_part_but_no_other_file() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = yearly_archive(&dir.path().join("in").tap_mkdir());
    let part = dir.path().join("p0.vzpart");
    let args = strings(&["scan", &inputs, "--shard", "0/2", "--concat", "time", "-o", &s(&part)]);
    vzarr(&args, 0);
    let first = std::fs::read(&part).unwrap();
    vzarr(&args, 0);
    assert_eq!(std::fs::read(&part).unwrap(), first, "a retry writes the same part");
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(!names.iter().any(|n| n.starts_with('.')), "staging left behind: {names:?}");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "mine").unwrap();
    let run = vzarr(&strings(&["scan", &inputs, "--shard", "0/2", "--concat", "time", "-o", &s(&notes)]), 1);
    assert!(run.stderr.contains("is not a vzarr scan part"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
}

/// A scheduler's name, its variables (`{i}`: the shard, `{i1}`: the shard + 1) and extra arguments.
type Scheduler = (&'static str, Vec<(&'static str, String)>, &'static [&'static str]);

#[test]
fn job_array_tasks_take_their_shard_from_the_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = yearly_archive(&dir.path().join("in").tap_mkdir());
    let by_flag = dir.path().join("flag");
    scan_shards(&inputs, &["--concat", "time"], 3, &by_flag);
    let schedulers: [Scheduler; 3] = [
        (
            "slurm",
            vec![
                ("SLURM_ARRAY_TASK_ID", "{i1}".into()),
                ("SLURM_ARRAY_TASK_MIN", "1".into()),
                ("SLURM_ARRAY_TASK_MAX", "3".into()),
            ],
            &[],
        ),
        ("k8s", vec![("JOB_COMPLETION_INDEX", "{i}".into())], &["--shard-count", "3"]),
        ("aws", vec![("AWS_BATCH_JOB_ARRAY_INDEX", "{i}".into()), ("AWS_BATCH_JOB_ARRAY_SIZE", "3".into())], &[]),
    ];
    for (name, vars, extra) in schedulers {
        let parts = dir.path().join(name);
        for i in 0..3 {
            let env: Vec<(&str, String)> = vars
                .iter()
                .map(|(k, v)| (*k, v.replace("{i1}", &(i + 1).to_string()).replace("{i}", &i.to_string())))
                .collect();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let mut args = strings(&["scan", &inputs, "--concat", "time", "-o", &format!("{}/", s(&parts))]);
            args.extend(strings(extra));
            let run = vzarr_env(&args, &env);
            assert_eq!(run.code, 0, "{name}: {}", run.stderr);
            assert!(run.stdout.starts_with(&format!("shard {i}/3 (")), "{name}: {}", run.stdout);
            let part = format!("part-{i:05}-of-00003.vzpart");
            assert_eq!(
                std::fs::read(parts.join(&part)).unwrap(),
                std::fs::read(by_flag.join(&part)).unwrap(),
                "{name}"
            );
        }
    }
    let k8s = vzarr_env(
        &strings(&["scan", &inputs, "--concat", "time", "-o", &s(dir.path())]),
        &[("JOB_COMPLETION_INDEX", "0")],
    );
    assert_eq!(k8s.code, 1);
    assert!(k8s.stderr.contains("--shard-count"), "{}", k8s.stderr);
    // Without a shard a job-array task can still scan everything into a store.
    let store = dir.path().join("whole.vzarr");
    let args = strings(&["scan", &inputs, "--concat", "time", "--no-shard", "-o", &s(&store)]);
    assert_eq!(vzarr_env(&args, &[("SLURM_ARRAY_TASK_ID", "0")]).code, 0);
}

#[test]
fn part_records_round_trip_every_supported_fixture_exactly() {
    for (name, fixture) in supported_fixtures() {
        for options in [
            vzarr::ScanOptions::default(),
            vzarr::ScanOptions { concat_dims: vec!["time".into()], ..Default::default() },
        ] {
            let scanned = crate::common::scan(&fixture.path, &options).unwrap();
            let bytes = vzarr::testing::encode_dataset(&scanned).unwrap();
            let back =
                vzarr::testing::decode_dataset(&bytes, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(back == scanned, "{name}: the decoded scan differs");
        }
    }
}

#[test]
fn part_records_with_entries_outside_their_file_or_grid_are_refused() {
    let (_, fixture) = supported_fixtures().into_iter().next().unwrap();
    let scanned = crate::common::scan(&fixture.path, &vzarr::ScanOptions::default()).unwrap();
    let size = scanned.sources.get(0).unwrap().size;
    let index = scanned.arrays.iter().position(|a| !a.chunks.is_empty()).unwrap();
    let past_the_end = vzarr::dataset::ChunkEntry::Source { source: 0, offset: size - 4, length: 8 };
    let owned_past = vzarr::dataset::ChunkEntry::Owned { offset: 0, length: 1 << 40 };
    let other_file = vzarr::dataset::ChunkEntry::Source { source: 1, offset: 0, length: 1 };
    for (what, entry) in [("past the end", past_the_end), ("owned", owned_past), ("other file", other_file)] {
        let mut bad = scanned.clone();
        bad.arrays[index].chunks.set(0, entry);
        let err = vzarr::testing::decode_dataset(&vzarr::testing::encode_dataset(&bad).unwrap(), &Default::default())
            .unwrap_err();
        assert!(matches!(err, vzarr::testing::RecordError::Outside { .. }), "{what}: {err}");
        assert!(err.to_string().contains("lies outside"), "{what}: {err}");
    }
    let mut extra = scanned.clone();
    extra.arrays[index].chunks.push(vzarr::dataset::ChunkEntry::Missing);
    let err = vzarr::testing::decode_dataset(&vzarr::testing::encode_dataset(&extra).unwrap(), &Default::default())
        .unwrap_err();
    assert!(matches!(err, vzarr::testing::RecordError::EntryCount { .. }), "{err}");
    assert!(err.to_string().contains("chunk entries for a grid"), "{err}");
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    /// Creates the directory and returns its path.
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

/// Parts kept on an object store (as job-array tasks on a cloud cluster leave them): `merge` takes
/// an `s3://` glob of them and writes the single scan's store byte for byte.
#[test]
fn parts_on_s3_merge_like_local_parts() {
    let Some(server) = crate::common::servers::S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 parts test not run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let inputs = yearly_archive(&dir.path().join("in").tap_mkdir());
    let single = dir.path().join("single.vzarr");
    vzarr(&strings(&["scan", &inputs, "--concat", "time", "-o", &s(&single)]), 0);
    let parts = dir.path().join("parts");
    scan_shards(&inputs, &["--concat", "time"], 3, &parts);
    let names: Vec<(String, PathBuf)> = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (format!("run-1/{}", p.file_name().unwrap().to_str().unwrap()), p))
        .collect();
    let objects: Vec<(&str, &Path)> = names.iter().map(|(k, p)| (k.as_str(), p.as_path())).collect();
    server.upload("parts", &objects);
    let env = server.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let merged = dir.path().join("merged.vzarr");
    let args = strings(&["merge", "s3://parts/run-1/*.vzpart", "--concat", "time", "-o", &s(&merged)]);
    let run = vzarr_env(&args, &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    crate::common::assert_same_tree(&single, &merged);
    // A part missing from the bucket is named by its number, as for local parts.
    let gone = strings(&[
        "merge",
        "s3://parts/run-1/part-00001*.vzpart",
        "--concat",
        "time",
        "-o",
        &s(&dir.path().join("x.vzarr")),
    ]);
    let run = vzarr_env(&gone, &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("missing") && run.stderr.contains('0'), "{}", run.stderr);
}

/// Parts scanned with different options are refused naming the option and both values, not a dump of
/// the options' structure; a FIFO among the parts a glob matches is refused at once instead of
/// blocking the merge.
#[test]
fn differing_options_are_named_and_fifos_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in").tap_mkdir();
    let inputs = yearly_archive(&src);
    let parts = dir.path().join("parts");
    let shard = |i: u32, extra: &[&str]| {
        let mut args = strings(&["scan", &inputs, "--shard", &format!("{i}/2"), "--concat", "time"]);
        args.extend(strings(extra));
        args.extend(strings(&["-o", &format!("{}/", s(&parts))]));
        vzarr(&args, 0);
    };
    shard(0, &[]);
    shard(1, &["--max-slab-mib", "4"]);
    let glob = format!("{}/*.vzpart", s(&parts));
    let store = s(&dir.path().join("m.vzarr"));
    let run = vzarr(&strings(&["merge", &glob, "--concat", "time", "-o", &store]), 1);
    let line = run.stderr.trim();
    assert!(line.contains("the scan option max_slab_bytes is 4194304 but 16777216"), "{line}");
    assert!(!line.contains("PartScanOptions") && !line.contains('{'), "{line}");

    shard(1, &[]);
    let fifo = parts.join("zz-fifo.vzpart");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let run = vzarr(&strings(&["merge", &glob, "--concat", "time", "-o", &store]), 1);
    assert!(run.stderr.contains("zz-fifo.vzpart") && run.stderr.contains("not a regular file"), "{}", run.stderr);
}

/// Shard scans are the library's (issue 43): parts written through `Archive::scan_shard_on` and
/// `ScannedShard::write` are the CLI's parts byte for byte, and their merge reads libnetcdf's values.
#[test]
fn library_shard_scans_write_the_command_lines_parts() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = yearly_archive(&dir.path().join("in").tap_mkdir());
    let cli_parts = dir.path().join("cli-parts");
    scan_shards(&inputs, &["--concat", "time"], 3, &cli_parts);
    let archive = vzarr::pipeline::Archive::new([inputs.as_str()]).concat("time").unwrap();
    let runtime = vzarr::pipeline::runtime().unwrap();
    let files = archive.files(runtime.handle()).unwrap();
    let lib_parts = dir.path().join("lib-parts").tap_mkdir();
    let mut scanned_files = 0;
    for i in 0..3 {
        let shard = vzarr::pipeline::Shard::new(i, 3).unwrap();
        let part = archive.scan_shard_on(runtime.handle(), &files, shard, &|_, _| {}).unwrap();
        assert_eq!(part.files, files[shard.range(files.len())].to_vec());
        scanned_files += part.files.len();
        part.write(&lib_parts.join(format!("part-{i:05}-of-00003.vzpart"))).unwrap();
    }
    assert_eq!(scanned_files, files.len(), "the shards cover every file once");
    crate::common::assert_same_tree(&cli_parts, &lib_parts);
    let merged = dir.path().join("merged.vzarr");
    let glob = format!("{}/*.vzpart", s(&lib_parts));
    vzarr(&strings(&["merge", &glob, "--concat", "time", "-o", &s(&merged)]), 0);
    let npy = dir.path().join("tas.npy");
    vzarr(&strings(&["read", &s(&merged), "tas", "-o", &s(&npy)]), 0);
    let theirs: Vec<u8> = files.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == theirs, "tas of the merged parts");
}

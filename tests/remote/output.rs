//! Outputs written to an object store (`-o s3://...`) against a real S3 server (`moto_server`):
//! `scan` (native and kerchunk), `scan --shard` parts and `merge`, `export` and `materialize` (also
//! regular copies: a sharded Zarr store and an Icechunk repository). Each
//! remote output equals, object for object and byte for byte, the same command's local output (whose
//! values the other suites prove), and is read back through vzarr (and zarrs) against libnetcdf's
//! reads of the original files. Refusals (an existing output, someone's objects, an input prefix)
//! leave the bucket unchanged; an interrupted write leaves the old store or nothing visible; of
//! concurrent writers exactly one wins.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::common::servers::S3Server;

/// A bucket of the server, reached directly (to look at what vzarr wrote).
struct Bucket {
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
}

impl Bucket {
    fn new(server: &S3Server, name: &str) -> Self {
        server.upload(name, &[]);
        let remote = vzarr::read::RemoteOptions { config: server.config(), ..Default::default() };
        let url = url::Url::parse(&format!("s3://{name}/")).unwrap();
        let (store, _) = vzarr::read::store_for_url(&url, &remote).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        Bucket { store, runtime }
    }

    /// Every object under `prefix` (relative key -> bytes); a file kind's single object under "".
    fn objects(&self, prefix: &str) -> BTreeMap<String, Vec<u8>> {
        self.runtime.block_on(async {
            let mut out = BTreeMap::new();
            let single = object_store::path::Path::from(prefix);
            if let Ok(got) = self.store.get(&single).await {
                out.insert(String::new(), got.bytes().await.unwrap().to_vec());
            }
            let listed: Vec<_> = self.store.list(Some(&single)).try_collect().await.unwrap();
            for meta in listed {
                let bytes = self.store.get(&meta.location).await.unwrap().bytes().await.unwrap();
                let key = meta.location.as_ref().strip_prefix(&format!("{prefix}/")).unwrap().to_string();
                out.insert(key, bytes.to_vec());
            }
            out
        })
    }

    /// The ETag of object `key` (a multipart upload's ends in `-<parts>`).
    fn etag(&self, key: &str) -> String {
        let path = object_store::path::Path::from(key);
        self.runtime.block_on(self.store.head(&path)).unwrap().e_tag.unwrap_or_default()
    }

    fn put(&self, key: &str, bytes: &[u8]) {
        let path = object_store::path::Path::from(key);
        self.runtime.block_on(self.store.put(&path, PutPayload::from(bytes.to_vec()))).unwrap();
    }

    /// Copies the objects under `prefix` into the directory `to`.
    fn download(&self, prefix: &str, to: &Path) {
        for (key, bytes) in self.objects(prefix) {
            let path = to.join(&key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }
}

/// Every file below `root` (relative path -> bytes); a file: its bytes under "".
fn local_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    if root.is_file() {
        return BTreeMap::from([(String::new(), std::fs::read(root).unwrap())]);
    }
    crate::common::tree_files(root)
}

fn start() -> Option<S3Server> {
    let server = S3Server::start();
    if server.is_none() {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 output test not run");
    }
    server
}

/// `vzarr` with the server's settings in the standard environment variables, and a fixed history
/// time (a store's bytes then depend on its inputs only).
fn runner(server: &S3Server) -> impl Fn(&[&str], &[(&str, &str)]) -> crate::common::Run {
    let env = server.env();
    move |args: &[&str], extra: &[(&str, &str)]| {
        let mut command = crate::common::vzarr_command();
        command.args(args).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        command.env("SOURCE_DATE_EPOCH", "1700000000").envs(extra.iter().copied());
        command.stdout(std::process::Stdio::piped());
        crate::common::run(command)
    }
}

fn months(n: usize) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    (1..=n).map(|m| root.join(format!("tas_2023-{m:02}.nc"))).collect()
}

fn oracle(files: &[PathBuf], var: &str) -> Vec<u8> {
    files.iter().flat_map(|p| crate::common::oracle_read(p, var, None)).collect()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Every writer to S3: scan (native, kerchunk), sharded scan + merge, export, materialize.
#[test]
fn every_output_is_written_to_s3_as_it_is_written_locally() {
    let Some(server) = start() else { return };
    let out = Bucket::new(&server, "out");
    let run = runner(&server);
    let dir = tempfile::tempdir().unwrap();
    let files = months(3);
    let inputs: Vec<String> = files.iter().map(|p| s(p)).collect();
    let scan = |extra: &[&str]| {
        let mut args: Vec<&str> = vec!["scan"];
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["--concat", "time"]);
        args.extend(extra);
        run(&args, &[])
    };
    let ok = |r: crate::common::Run| assert_eq!(r.code, 0, "{}", r.stderr);
    // The native store: the same objects as the local store's files, read back exactly.
    let local_store = dir.path().join("tas.vzarr");
    ok(scan(&["-o", &s(&local_store)]));
    ok(scan(&["-o", "s3://out/stores/tas.vzarr", "--max-concurrent-requests", "3"]));
    let expected = local_tree(&local_store);
    assert_eq!(out.objects("stores/tas.vzarr"), expected, "the S3 store equals the local one");
    let url = "s3://out/stores/tas.vzarr";
    let npy = dir.path().join("tas.npy");
    ok(run(&["read", url, "tas", "-o", &s(&npy)], &[]));
    assert!(crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == oracle(&files, "tas"));
    let info = run(&["info", url], &[]);
    assert!(info.code == 0 && info.stdout.contains("tas"), "{}", info.stderr);
    let verify = run(&["verify", url], &[]);
    assert_eq!(verify.code, 0, "{}\n{}", verify.stdout, verify.stderr);
    // Kerchunk JSON, one object.
    let local_refs = dir.path().join("tas.json");
    ok(scan(&["--format", "kerchunk-json", "-o", &s(&local_refs)]));
    ok(scan(&["--format", "kerchunk-json", "-o", "s3://out/refs/tas.json"]));
    assert_eq!(out.objects("refs/tas.json"), local_tree(&local_refs));
    // --overwrite replaces a kerchunk object (a conditional update of its ETag).
    let first = months(1).iter().map(|p| s(p)).collect::<Vec<_>>();
    ok(run(&["scan", &first[0], "--format", "kerchunk-json", "-o", "s3://out/refs/one.json"], &[]));
    ok(scan(&["--format", "kerchunk-json", "-o", "s3://out/refs/one.json", "--overwrite"]));
    assert_eq!(out.objects("refs/one.json"), local_tree(&local_refs));
    // Parts on S3 (a prefix ending in `/`), merged from an S3 glob into an S3 store: the scan's store.
    for shard in ["0/2", "1/2", "0/2"] {
        ok(scan(&["--shard", shard, "-o", "s3://out/parts/"]));
    }
    let parts = out.objects("parts");
    assert_eq!(parts.keys().collect::<Vec<_>>(), ["part-00000-of-00002.vzpart", "part-00001-of-00002.vzpart"]);
    let merged =
        run(&["merge", "s3://out/parts/*.vzpart", "--concat", "time", "-o", "s3://out/stores/merged.vzarr"], &[]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    assert_eq!(out.objects("stores/merged.vzarr"), expected, "merge to S3 equals the single scan");
    // export of the S3 store to S3 equals the local export of the local store.
    let local_export = dir.path().join("export.json");
    ok(run(&["export", &s(&local_store), "--kerchunk", &s(&local_export)], &[]));
    ok(run(&["export", url, "--kerchunk", "s3://out/refs/export.json"], &[]));
    let exported = out.objects("refs/export.json");
    assert_eq!(exported, local_tree(&local_export));
    // export to a kerchunk Parquet set on S3 equals the local export of the S3 store (the months'
    // rectilinear arrays inlined); vzarr reads it back from S3 as libnetcdf reads the files.
    let local_parquet = dir.path().join("export.parq");
    ok(run(&["export", url, "--kerchunk-parquet", &s(&local_parquet)], &[]));
    ok(run(&["export", url, "--kerchunk-parquet", "s3://out/refs/export.parq"], &[]));
    assert_eq!(out.objects("refs/export.parq"), local_tree(&local_parquet));
    let tas = dir.path().join("parquet_tas.npy");
    ok(run(&["read", "s3://out/refs/export.parq", "tas", "-o", &s(&tas)], &[]));
    assert!(crate::common::parse_npy(&std::fs::read(&tas).unwrap()).data == oracle(&files, "tas"));
    let npy = dir.path().join("lat.npy");
    ok(run(&["read", "s3://out/refs/export.parq", "lat", "-o", &s(&npy)], &[]));
    assert!(crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == oracle(&files[..1], "lat"));
    // materialize to S3: the local materialization's objects; zarrs reads libnetcdf's values.
    let local_zarr = dir.path().join("tas.zarr");
    ok(run(&["materialize", &s(&local_store), &s(&local_zarr)], &[]));
    ok(run(&["materialize", url, "s3://out/zarr/tas.zarr"], &[]));
    assert_eq!(out.objects("zarr/tas.zarr"), local_tree(&local_zarr));
    let copy = dir.path().join("downloaded.zarr");
    out.download("zarr/tas.zarr", &copy);
    crate::interop::assert_zarrs_reads_exactly(&copy, &files, &["tas", "time"]);
    // Regular copies to S3 (issue 40): a sharded Zarr store, the local copy's objects; an Icechunk
    // repository (one commit) read back through vzarr.
    let regular = ["--chunks", "time=20", "--shards", "time=40"];
    let local_regular = dir.path().join("regular.zarr");
    ok(run(&[&["materialize", &s(&local_store), &s(&local_regular)][..], &regular].concat(), &[]));
    ok(run(&[&["materialize", url, "s3://out/zarr/regular.zarr"][..], &regular].concat(), &[]));
    assert_eq!(out.objects("zarr/regular.zarr"), local_tree(&local_regular));
    let copy = dir.path().join("regular-downloaded.zarr");
    out.download("zarr/regular.zarr", &copy);
    crate::interop::assert_zarrs_reads_exactly(&copy, &files, &["tas", "time"]);
    let repo = "s3://out/repos/regular.icechunk";
    ok(run(&["materialize", url, repo, "--chunks", "time=20", "--format", "icechunk"], &[]));
    let npy = dir.path().join("regular.npy");
    ok(run(&["read", repo, "tas", "-o", &s(&npy)], &[]));
    assert!(crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == oracle(&files, "tas"));
}

/// What must not be written is not: an existing output without `--overwrite`, someone's objects, an
/// input's prefix. With `--overwrite` a store of the same kind is replaced, the old store's extra
/// objects removed.
#[test]
fn remote_outputs_refuse_what_they_must_not_replace() {
    let Some(server) = start() else { return };
    let out = Bucket::new(&server, "out");
    let run = runner(&server);
    let one = months(1);
    let two = months(2);
    let scan = |files: &[PathBuf], extra: &[&str]| {
        let mut args: Vec<String> = vec!["scan".into()];
        args.extend(files.iter().map(|p| s(p)));
        args.extend(["--concat".into(), "time".into()]);
        args.extend(extra.iter().map(|a| a.to_string()));
        run(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[])
    };
    let url = "s3://out/tas.vzarr";
    assert_eq!(scan(&one, &["-o", url]).code, 0);
    let before = out.objects("tas.vzarr");
    let again = scan(&two, &["-o", url]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr_lines(),
        [format!("error: writing {url}: {url}: already exists (pass --overwrite to replace it)")]
    );
    assert_eq!(out.objects("tas.vzarr"), before, "unchanged, byte for byte");
    // Someone's objects are never replaced, with or without --overwrite.
    out.put("mine/data.txt", b"my data");
    out.put("notes.json", b"{\"mine\":1}");
    for extra in [&[][..], &["--overwrite"][..]] {
        let mut args = vec!["-o", "s3://out/mine"];
        args.extend(extra);
        let refused = scan(&one, &args);
        assert_eq!(refused.code, 1, "{}", refused.stderr);
        assert!(refused.stderr.contains("s3://out/mine: "), "{}", refused.stderr);
        let mut args = vec!["--format", "kerchunk-json", "-o", "s3://out/notes.json"];
        args.extend(extra);
        let refused = scan(&one, &args);
        assert_eq!(refused.code, 1, "{}", refused.stderr);
    }
    let overwrite_refused = scan(&one, &["--format", "kerchunk-json", "-o", "s3://out/notes.json", "--overwrite"]);
    assert!(overwrite_refused.stderr.contains("is not a kerchunk reference file"), "{}", overwrite_refused.stderr);
    assert_eq!(out.objects("mine").get("data.txt").map(Vec::as_slice), Some(&b"my data"[..]));
    assert_eq!(out.objects("notes.json").get("").map(Vec::as_slice), Some(&b"{\"mine\":1}"[..]));
    // An output holding an input is refused before anything is written.
    out.put("archive/tas_2023-01.nc", &std::fs::read(&one[0]).unwrap());
    let inside = run(&["scan", "s3://out/archive/tas_2023-01.nc", "-o", "s3://out/archive"], &[]);
    assert_eq!(inside.code, 1, "{}", inside.stderr);
    assert!(inside.stderr.contains("is or contains the input s3://out/archive/tas_2023-01.nc"), "{}", inside.stderr);
    // --overwrite replaces the store; it reads two months now, and nothing of the old one is left over.
    assert_eq!(scan(&two, &["-o", url, "--overwrite"]).code, 0);
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("tas.vzarr");
    assert_eq!(scan(&two, &["-o", &s(&local)]).code, 0);
    assert_eq!(out.objects("tas.vzarr"), local_tree(&local), "the new store, no lock, no leftovers");
}

/// A writer killed midway leaves the old store readable (before the switch) or nothing visible
/// (after it), never a store that looks complete; the next writer cleans up and succeeds. Of
/// concurrent writers of one new store exactly one wins.
#[test]
fn interrupted_and_concurrent_remote_writes() {
    let Some(server) = start() else { return };
    let out = Bucket::new(&server, "out");
    let run = runner(&server);
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (months(1), months(2));
    let scan = |files: &[PathBuf], extra: &[&str], env: &[(&str, &str)]| {
        let mut args: Vec<String> = vec!["scan".into()];
        args.extend(files.iter().map(|p| s(p)));
        args.extend(["--concat".into(), "time".into()]);
        args.extend(extra.iter().map(|a| a.to_string()));
        run(&args.iter().map(String::as_str).collect::<Vec<_>>(), env)
    };
    let url = "s3://out/tas.vzarr";
    let npy = dir.path().join("tas.npy");
    let reads = |files: &[PathBuf]| {
        let read = run(&["read", url, "tas", "-o", &s(&npy), "--overwrite"], &[]);
        read.code == 0 && crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == oracle(files, "tas")
    };
    // A new store, killed after its parts: nothing visible.
    let crashed = scan(&one, &["-o", url], &[("VZARR_TEST_CRASH_AT", "remote-uploaded")]);
    assert_ne!(crashed.code, 0);
    assert!(!out.objects("tas.vzarr").is_empty(), "the parts were uploaded");
    assert_ne!(run(&["info", url], &[]).code, 0, "no store is visible");
    // The next writer takes over the dead writer's lock and removes its debris.
    assert_eq!(scan(&one, &["-o", url], &[]).code, 0);
    assert!(reads(&one));
    let old = out.objects("tas.vzarr");
    assert!(!old.contains_key(LOCK_OBJECT));
    // An overwrite killed before the switch: the old store, intact.
    let crashed = scan(&two, &["-o", url, "--overwrite"], &[("VZARR_TEST_CRASH_AT", "remote-locked")]);
    assert_ne!(crashed.code, 0);
    assert!(reads(&one), "the old store is still read");
    // Killed after the old store was hidden: nothing visible; the next overwrite completes.
    let crashed = scan(&two, &["-o", url, "--overwrite"], &[("VZARR_TEST_CRASH_AT", "remote-hidden")]);
    assert_ne!(crashed.code, 0);
    assert_ne!(run(&["info", url], &[]).code, 0, "no store is visible");
    assert_eq!(scan(&two, &["-o", url, "--overwrite"], &[]).code, 0);
    assert!(reads(&two));
    // Concurrent writers of one new store: exactly one wins, the others say why.
    let race = "s3://out/race.vzarr";
    let results = race_scans(&server, 4, &two, &["-o", race]);
    let winners = results.iter().filter(|r| r.status.success()).count();
    assert_eq!(winners, 1, "{:?}", results.iter().map(|r| String::from_utf8_lossy(&r.stderr)).collect::<Vec<_>>());
    for loser in results.iter().filter(|r| !r.status.success()) {
        let message = String::from_utf8_lossy(&loser.stderr);
        assert!(message.contains("already exists") || message.contains("being written"), "{message}");
    }
    let read = run(&["read", race, "tas", "-o", &s(&npy), "--overwrite"], &[]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert!(crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == oracle(&two, "tas"));
    assert!(!out.objects("race.vzarr").contains_key(LOCK_OBJECT));
    // Concurrent writers of one kerchunk object: the conditional put lets exactly one through.
    let results = race_scans(&server, 3, &two, &["--format", "kerchunk-json", "-o", "s3://out/race.json"]);
    assert_eq!(results.iter().filter(|r| r.status.success()).count(), 1);
    for loser in results.iter().filter(|r| !r.status.success()) {
        assert!(String::from_utf8_lossy(&loser.stderr).contains("already exists"));
    }
}

/// Objects above the single-PUT size go up in parts (a multipart upload, atomic too): a sharded
/// materialization of 1 MB chunks into one 8 MB shard, with the single-PUT limit at 5 MiB, equals the
/// local materialization byte for byte.
#[test]
fn large_objects_are_uploaded_in_parts() {
    let Some(server) = start() else { return };
    let out = Bucket::new(&server, "out");
    let run = runner(&server);
    let dir = tempfile::tempdir().unwrap();
    let file = crate::common::with_hdf5_files(|| super::write_megabyte_chunks(dir.path()));
    let store = dir.path().join("noise.vzarr");
    assert_eq!(run(&["scan", &s(&file), "-o", &s(&store)], &[]).code, 0);
    let local = dir.path().join("noise.zarr");
    assert_eq!(run(&["materialize", &s(&store), &s(&local), "--shards", "file"], &[]).code, 0);
    let hook = [("VZARR_TEST_SINGLE_PUT_MAX", "5242880")];
    let remote = run(&["materialize", &s(&store), "s3://out/noise.zarr", "--shards", "file"], &hook);
    assert_eq!(remote.code, 0, "{}", remote.stderr);
    let objects = out.objects("noise.zarr");
    let (big, _) = objects.iter().find(|(_, bytes)| bytes.len() > 5 << 20).expect("one object above the limit");
    let etag = out.etag(&format!("noise.zarr/{big}"));
    assert!(etag.trim_matches('"').ends_with("-2"), "{big} uploaded in two parts: ETag {etag}");
    assert_eq!(objects, local_tree(&local));
}

/// `writers` processes of `vzarr scan INPUTS --concat time ARGS` started at once; their outputs.
fn race_scans<I: AsRef<std::ffi::OsStr>>(
    server: &S3Server,
    writers: usize,
    inputs: &[I],
    args: &[&str],
) -> Vec<std::process::Output> {
    let children: Vec<_> = (0..writers)
        .map(|_| {
            let mut command = crate::common::vzarr_command();
            command.arg("scan").args(inputs).args(["--concat", "time"]).args(args);
            command.envs(server.env());
            command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
            let _no_files = crate::common::no_hdf5_files_open();
            command.spawn().unwrap()
        })
        .collect();
    children.into_iter().map(|w| w.wait_with_output().unwrap()).collect()
}

/// The lock object a remote output's writer holds under the store's prefix (named in docs/how-to/object-stores.md).
const LOCK_OBJECT: &str = ".vzarr-lock";

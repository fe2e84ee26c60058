//! Azure Blob Storage through `object_store`'s azure backend, against Azurite (Microsoft's emulator,
//! installed from npm into `target/azurite` by `tests/remote/setup_azurite.sh`), started by the test
//! on a free port: `scan 'az://container/prefix/*.nc'` lists the prefix, the store's values equal
//! libnetcdf's reads of the files, `abfs://` names the same objects, and a missing object or a wrong
//! account key is one line naming the URL. Credentials come from the `AZURE_*` variables as users set
//! them (`AZURE_STORAGE_USE_EMULATOR` selects Azurite's well-known development account).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Run;

/// A running `azurite-blob` (in memory), stopped on drop.
pub(crate) struct Azurite {
    child: Child,
    /// `http://127.0.0.1:PORT`: the blob service.
    pub(crate) url: String,
    dir: PathBuf,
}

/// Azurite's well-known development account key (public: it is in Microsoft's documentation).
const DEV_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

impl Azurite {
    /// Starts Azurite on a free port, or None when it is not installed (the caller says so).
    pub(crate) fn start() -> Option<Self> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/azurite");
        let bin = dir.join("node_modules/.bin/azurite-blob");
        if !bin.exists() {
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = {
            let _no_files = crate::common::no_hdf5_files_open();
            Command::new(bin)
                .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
                .args(["--inMemoryPersistence", "--silent", "--disableTelemetry", "--skipApiVersionCheck"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?
        };
        let server = Azurite { child, url: format!("http://127.0.0.1:{port}"), dir };
        let address: SocketAddr = format!("127.0.0.1:{port}").parse().ok()?;
        let started = Instant::now();
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "azurite did not start on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(server)
    }

    /// The environment a user of the emulator sets.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AZURE_STORAGE_USE_EMULATOR".into(), "true".into()),
            ("AZURITE_BLOB_STORAGE_URL".into(), self.url.clone()),
        ]
    }

    /// Creates `container` (if new) and uploads each (blob name, local file), with the Azure SDK.
    pub(crate) fn upload(&self, container: &str, objects: &[(&str, &Path)]) {
        let connection = format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={DEV_KEY};BlobEndpoint={}/devstoreaccount1;",
            self.url
        );
        let mut script = format!(
            "const {{ BlobServiceClient }} = require('@azure/storage-blob');\n(async () => {{\n\
             const c = BlobServiceClient.fromConnectionString({connection:?}).getContainerClient({container:?});\n\
             await c.createIfNotExists();\n"
        );
        for (name, path) in objects {
            script.push_str(&format!(
                "await c.getBlockBlobClient({name:?}).uploadFile({:?});\n",
                path.display().to_string()
            ));
        }
        script.push_str("})().catch((e) => { console.error(e.message); process.exit(1); });\n");
        let _no_files = crate::common::no_hdf5_files_open();
        let out = Command::new("node").arg("-e").arg(&script).current_dir(&self.dir).output().unwrap();
        assert!(out.status.success(), "uploading to azurite failed: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Azurite, or None after saying why the test does not run (an error under `./dev test`, which
/// installs it and sets VZARR_REQUIRE_AZURITE=1).
pub(crate) fn azurite_or_notice(test: &str) -> Option<Azurite> {
    let server = Azurite::start();
    if server.is_none() {
        let required = std::env::var_os("VZARR_REQUIRE_AZURITE").is_some_and(|v| v == "1");
        assert!(!required, "VZARR_REQUIRE_AZURITE=1 but Azurite is not installed (tests/remote/setup_azurite.sh)");
        eprintln!("notice: Azurite is not installed (run tests/remote/setup_azurite.sh); {test} not run");
    }
    server
}

fn vzarr(env: &[(String, String)], args: &[&str]) -> Run {
    let mut command = crate::common::vzarr_command();
    command.args(args).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))).stdout(Stdio::piped());
    crate::common::run(command)
}

#[test]
fn azure_globs_scan_and_read_back_like_libnetcdf() {
    let Some(server) = azurite_or_notice("Azure scan test") else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let months = ["tas_2023-01.nc", "tas_2023-02.nc", "tas_2023-03.nc"];
    let local: Vec<PathBuf> = months.iter().map(|m| root.join(m)).collect();
    let names: Vec<String> = months.iter().map(|m| format!("monthly/{m}")).collect();
    let mut objects: Vec<(&str, &Path)> = names.iter().zip(&local).map(|(n, p)| (n.as_str(), p.as_path())).collect();
    // Not matched by the glob: another prefix, and a deeper level (`*` stops at `/`).
    objects.push(("other/tas_2023-01.nc", &local[0]));
    objects.push(("monthly/old/tas_2022-12.nc", &local[0]));
    server.upload("archive", &objects);
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.display().to_string();
    let (store, npy) = (dir.path().join("tas.vzarr"), dir.path().join("tas.npy"));
    let env = server.env();
    let scan = vzarr(&env, &["scan", "az://archive/monthly/tas_2023-*.nc", "--concat", "time", "-o", &s(&store)]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let sources = vzarr::dataset::SourceTable::decode(&std::fs::read(store.join("sources.bin")).unwrap()).unwrap();
    let locations: Vec<&str> = sources.iter().map(|f| f.location.as_str()).collect();
    let expected: Vec<String> = names.iter().map(|n| format!("az://archive/{n}")).collect();
    assert_eq!(locations, expected);
    assert!(sources.iter().all(|f| f.etag.is_some()), "Azure gives ETags: {sources:?}");
    let read = vzarr(&env, &["read", &s(&store), "tas", "-o", &s(&npy)]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    let theirs: Vec<u8> = local.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(ours.data == theirs, "tas over Azure equals libnetcdf's reads of the files");
    // verify: each source copied locally in turn and read by libnetcdf.
    let verify = vzarr(&env, &["verify", &s(&store)]);
    assert_eq!(verify.code, 0, "{}\n{}", verify.stdout, verify.stderr);
    assert!(verify.stdout.contains("ok   tas:") && verify.stdout.contains(": 0 failed"), "{}", verify.stdout);
    // abfs:// (fsspec's convention, container as the host) names the same objects.
    let one = dir.path().join("one.vzarr");
    let abfs = vzarr(&env, &["scan", "abfs://archive/monthly/tas_2023-02.nc", "-o", &s(&one)]);
    assert_eq!(abfs.code, 0, "{}", abfs.stderr);
    let npy2 = dir.path().join("feb.npy");
    assert_eq!(vzarr(&env, &["read", &s(&one), "tas", "-o", &s(&npy2)]).code, 0);
    let feb = crate::common::parse_npy(&std::fs::read(&npy2).unwrap());
    assert!(feb.data == crate::common::oracle_read(&local[1], "tas", None), "tas of February over abfs://");
}

#[test]
fn azure_failures_are_one_line_naming_the_url() {
    let Some(server) = azurite_or_notice("Azure failure test") else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let month = root.join("tas_2023-01.nc");
    server.upload("archive", &[("monthly/tas_2023-01.nc", &month)]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.vzarr");
    let s = out.display().to_string();
    let env = server.env();
    let one_line = |run: &Run, what: &str| {
        assert_eq!(run.code, 1, "{what}: {}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{what}: {}", run.stderr);
        assert!(!out.exists(), "{what}: nothing written");
    };
    let missing = vzarr(&env, &["scan", "az://archive/monthly/nope.nc", "-o", &s]);
    one_line(&missing, "missing object");
    assert!(missing.stderr.contains("az://archive/monthly/nope.nc"), "{}", missing.stderr);
    assert!(missing.stderr.to_lowercase().contains("not found"), "{}", missing.stderr);
    let empty = vzarr(&env, &["scan", "az://archive/monthly/none-*.nc", "-o", &s]);
    one_line(&empty, "empty glob");
    assert!(empty.stderr.contains("az://archive/monthly/none-*.nc: no objects match"), "{}", empty.stderr);
    let no_container = vzarr(&env, &["scan", "az://nocontainer/x.nc", "-o", &s]);
    one_line(&no_container, "missing container");
    assert!(no_container.stderr.contains("az://nocontainer/x.nc"), "{}", no_container.stderr);
    // A wrong account key (valid base64): the server refuses the signature.
    let mut bad = env.clone();
    bad.push(("AZURE_STORAGE_ACCOUNT_KEY".into(), "d3Jvbmcga2V5IGZvciB0aGUgZGV2IGFjY291bnQ=".into()));
    for url in ["az://archive/monthly/tas_2023-01.nc", "az://archive/monthly/tas_*.nc"] {
        let denied = vzarr(&bad, &["scan", url, "-o", &s]);
        one_line(&denied, "bad credentials");
        assert!(denied.stderr.contains(url), "{}", denied.stderr);
        let said = denied.stderr.to_lowercase();
        assert!(said.contains("access denied") || said.contains("privileges"), "{}", denied.stderr);
        assert!(!denied.stderr.contains("<?xml"), "{}", denied.stderr);
    }
}

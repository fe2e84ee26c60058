//! One round-trip suite for every [`Writer`]: the native store, kerchunk JSON and an Icechunk
//! repository are written through the same trait from one scanned archive (months ending inside
//! 10-day chunks, so some chunks are store-owned), read back as what each holds for every chunk (a
//! source range, owned bytes, or nothing) and compared with the dataset that was written: once as
//! each format is laid out, once through the one reader (`Store::open_with`, `ArrayReader`), whose
//! reads of every variable equal libnetcdf's reads of the files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use vzarr::dataset::chunk_key;
use vzarr::dataset::ChunkEntry;
use vzarr::dataset::VirtualDataset;
use vzarr::formats::{IcechunkWriter, KerchunkParquetWriter, KerchunkWriter, NativeWriter};
use vzarr::formats::{WriteOptions, Writer};
use vzarr::pipeline::Archive;

/// What a store holds for one chunk, whatever its format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    Source { path: PathBuf, offset: u64, length: u64 },
    Owned(Vec<u8>),
}

/// Chunk key -> what is held, for every present chunk of every array.
fn held(dataset: &VirtualDataset) -> BTreeMap<String, Held> {
    let mut out = BTreeMap::new();
    for array in &dataset.arrays {
        let grid = array.metadata.chunk_grid.grid_shape();
        for (linear, entry) in array.chunks.iter().enumerate() {
            let mut coords = vec![0u64; grid.len()];
            let mut rest = linear as u64;
            for (c, n) in coords.iter_mut().zip(&grid).rev() {
                *c = rest % n;
                rest /= n;
            }
            let key = chunk_key(&array.path, &coords);
            let value = match entry {
                ChunkEntry::Missing => continue,
                ChunkEntry::Source { source, offset, length } => {
                    let location = &dataset.sources.get(source).unwrap().location;
                    Held::Source { path: local_path(location), offset, length }
                }
                ChunkEntry::Owned { offset, length } => {
                    Held::Owned(array.chunks.owned_chunk(offset, length).unwrap().into_owned())
                }
            };
            out.insert(key, value);
        }
    }
    out
}

/// A stored location (a path, or a `file://` URL) as a path.
fn local_path(location: &str) -> PathBuf {
    match url::Url::parse(location) {
        Ok(url) if url.scheme() == "file" => url.to_file_path().unwrap(),
        _ => PathBuf::from(location),
    }
}

/// What a kerchunk reference file holds for every chunk key.
fn kerchunk_held(path: &Path) -> BTreeMap<String, Held> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let refs = doc["refs"].as_object().unwrap();
    let mut out = BTreeMap::new();
    for (key, value) in refs {
        if key.ends_with("zarr.json") || key.starts_with('.') {
            continue;
        }
        let held = match value {
            serde_json::Value::Array(r) => Held::Source {
                path: local_path(r[0].as_str().unwrap()),
                offset: r[1].as_u64().unwrap(),
                length: r[2].as_u64().unwrap(),
            },
            serde_json::Value::String(s) => {
                let text = s.strip_prefix("base64:").expect("inline chunks are base64");
                Held::Owned(base64::engine::general_purpose::STANDARD.decode(text).unwrap())
            }
            other => panic!("{key}: unexpected reference {other}"),
        };
        out.insert(key.clone(), held);
    }
    out
}

/// What a store opened through the library's one reader holds for every chunk: its entries, the
/// sources' locations, the store-owned chunks' bytes.
async fn reader_held(store: &vzarr::read::Store) -> BTreeMap<String, Held> {
    let mut out = BTreeMap::new();
    for info in &store.info().arrays {
        let array = store.array(&info.path).await.unwrap();
        let grid = &array.metadata().chunk_grid;
        let entries = array.entries(0..grid.num_chunks()).await.unwrap();
        let sources = store.sources();
        for (linear, entry) in (0u64..).zip(&entries) {
            let key = chunk_key(&info.path, &grid.chunk_coords(linear));
            let value = match *entry {
                ChunkEntry::Missing => continue,
                ChunkEntry::Source { source, offset, length } => {
                    Held::Source { path: local_path(&sources.get(source).unwrap().location), offset, length }
                }
                ChunkEntry::Owned { .. } => Held::Owned(array.stored_chunk(entry).await.unwrap().unwrap().to_vec()),
            };
            out.insert(key, value);
        }
    }
    out
}

/// libnetcdf's values of `var`, the files concatenated along time, as native-endian bytes.
fn libnetcdf_bytes(files: &[PathBuf], var: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for path in files {
        let file = netcdf::open(path).unwrap();
        let variable = file.variable(var).unwrap();
        match var {
            "tas" => out.extend(variable.get_values::<f32, _>(..).unwrap().iter().flat_map(|v| v.to_ne_bytes())),
            _ => out.extend(variable.get_values::<f64, _>(..).unwrap().iter().flat_map(|v| v.to_ne_bytes())),
        }
    }
    out
}

/// Monthly files of a daily variable chunked by 10 days: every month but one ends inside a chunk.
fn monthly_archive(dir: &Path) -> Vec<PathBuf> {
    archive(dir, &[31, 28, 31, 30], false)
}

/// Files of `days` days each of a daily variable chunked by 10 days; with `chunked_time`, the time
/// coordinate too (else libnetcdf's default chunk for an unlimited dimension, larger than a file).
fn archive(dir: &Path, days: &[i32], chunked_time: bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut start = 0;
    for (m, &n) in days.iter().enumerate() {
        let path = dir.join(format!("tas_{:02}.nc", m + 1));
        let mut f = netcdf::create(&path).unwrap();
        f.add_unlimited_dimension("time").unwrap();
        f.add_dimension("lat", 3).unwrap();
        let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
        time.put_attribute("units", "days since 2001-01-01").unwrap();
        if chunked_time {
            time.set_chunking(&[10]).unwrap();
        }
        time.put_values(&(start..start + n).map(f64::from).collect::<Vec<_>>(), 0..n as usize).unwrap();
        let mut tas = f.add_variable::<f32>("tas", &["time", "lat"]).unwrap();
        tas.set_chunking(&[10, 3]).unwrap();
        tas.set_compression(4, true).unwrap();
        let values: Vec<f32> = (0..n * 3).map(|i| (start * 3 + i) as f32 * 0.5).collect();
        tas.put_values(&values, (0..n as usize, 0..3)).unwrap();
        files.push(path);
        start += n;
    }
    files
}

#[test]
fn every_writer_round_trips_every_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly_archive(dir.path());
    let dataset = Archive::new(&files).concat("time").unwrap().history(false).scan().unwrap().dataset;
    let expected = held(&dataset);
    assert!(expected.values().any(|h| matches!(h, Held::Owned(_))), "some chunks are store-owned");
    assert!(expected.values().any(|h| matches!(h, Held::Source { .. })), "most are references");

    let writers: Vec<(&str, Box<dyn Writer>)> = vec![
        ("native.vzarr", Box::new(NativeWriter)),
        // Nothing inlined: every chunk's reference is compared as written (inlining: tests/everyday).
        ("refs.json", Box::new(KerchunkWriter { inline_threshold: 0, ..KerchunkWriter::default() })),
        ("repo.icechunk", Box::new(IcechunkWriter::default())),
    ];
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (name, writer) in writers {
        let out = dir.path().join(name);
        let info = writer.write(&dataset, &out, &WriteOptions::default()).unwrap();
        assert_eq!(info.arrays.len(), dataset.arrays.len(), "{name}");
        assert!(!info.source_containers.is_empty(), "{name}: a reader must know what to authorize");
        let got = match name {
            "native.vzarr" => held(&vzarr::pipeline::load_native(&out, &Default::default()).unwrap()),
            "refs.json" => kerchunk_held(&out),
            _ => {
                let repo = out.to_str().unwrap();
                let remote = vzarr::read::RemoteOptions::default();
                held(&runtime.block_on(vzarr::formats::read_icechunk(repo, "main", &remote)).unwrap())
            }
        };
        assert_eq!(got, expected, "{name}: every chunk as written");
        let trusted = vzarr::read::Authorization::new([format!("{}/", dir.path().display())]);
        let store = runtime
            .block_on(vzarr::read::Store::open_with(out.to_str().unwrap(), &vzarr::read::OpenOptions::new(trusted)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(runtime.block_on(reader_held(&store)), expected, "{name}: every chunk through the reader");
        for var in ["tas", "time"] {
            let array = runtime.block_on(store.array(var)).unwrap();
            let all = vzarr::grid::Selection::all(&array.shape());
            let data = runtime.block_on(array.read(&all, &vzarr::read::ReadOptions::default())).unwrap();
            assert_eq!(data.bytes, libnetcdf_bytes(&files, var), "{name}: {var} as libnetcdf reads the files");
        }
        // Writing again without overwrite is refused, through every writer alike.
        let again = writer.write(&dataset, &out, &WriteOptions::default());
        assert!(again.is_err(), "{name}: an existing output is not replaced without overwrite");
    }
}

/// kerchunk Parquet is Zarr v2, one chunk shape per array: the same round trip through the one reader
/// on files of 30 days (a regular grid), every value equal to libnetcdf's; the uneven months of the
/// suite above are refused naming the array.
#[test]
fn kerchunk_parquet_round_trips_a_regular_archive_and_refuses_a_rectilinear_one() {
    let dir = tempfile::tempdir().unwrap();
    let files = archive(dir.path(), &[30, 30, 30], true);
    let dataset = Archive::new(&files).concat("time").unwrap().history(false).scan().unwrap().dataset;
    let expected = held(&dataset);
    let writer = KerchunkParquetWriter { record_size: 4, ..KerchunkParquetWriter::default() };
    let out = dir.path().join("refs.parq");
    let info = writer.write(&dataset, &out, &WriteOptions::default()).unwrap();
    assert_eq!(info.arrays.len(), dataset.arrays.len());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let trusted = vzarr::read::Authorization::new([format!("{}/", dir.path().display())]);
    let options = vzarr::read::OpenOptions::new(trusted);
    let store = runtime.block_on(vzarr::read::Store::open_with(out.to_str().unwrap(), &options)).unwrap();
    assert_eq!(runtime.block_on(reader_held(&store)), expected, "every chunk through the reader");
    for var in ["tas", "time"] {
        let array = runtime.block_on(store.array(var)).unwrap();
        let all = vzarr::grid::Selection::all(&array.shape());
        let data = runtime.block_on(array.read(&all, &vzarr::read::ReadOptions::default())).unwrap();
        assert_eq!(data.bytes, libnetcdf_bytes(&files, var), "{var} as libnetcdf reads the files");
    }
    assert!(writer.write(&dataset, &out, &WriteOptions::default()).is_err(), "not replaced without overwrite");

    let uneven_dir = tempfile::tempdir().unwrap();
    let uneven = monthly_archive(uneven_dir.path());
    let dataset = Archive::new(&uneven).concat("time").unwrap().history(false).scan().unwrap().dataset;
    // Nothing inlined (every array of this archive is small enough to be by default).
    let writer = KerchunkParquetWriter { inline_threshold: 0, ..writer };
    let refused = writer.write(&dataset, &uneven_dir.path().join("refs.parq"), &WriteOptions::default()).unwrap_err();
    let message = refused.to_string();
    let named = ["time", "tas"].iter().any(|a| message.contains(&format!(": {a}: its chunk grid is rectilinear")));
    assert!(named, "{message}");
    assert!(!uneven_dir.path().join("refs.parq").exists(), "nothing written");
}

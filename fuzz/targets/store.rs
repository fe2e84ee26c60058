//! Targets of the store readers: kerchunk JSON documents, kerchunk Parquet reference sets, native
//! stores (`vzarr.json`, the source table `sources.bin`, each array's binary `manifest` and
//! `owned.bin`) and Icechunk repositories (snapshots, manifests, refs). Each writes its input out,
//! opens it with the public [`Store::open_with`], then reads every array's metadata, chunk entries
//! and values (sources in [`SOURCES`], where the seeds' stores point).

use std::path::Path;

use vzarr::read::Authorization;
use vzarr::read::OpenOptions;
use vzarr::{ReadOptions, Selection, Store};

use super::{Context, Target};
use crate::bundle;
use crate::mutate::{mutate, Shape, LE};
use crate::rng::Rng;

/// The directory the seeds' stores reference their source files in (a fixed path, so that committed
/// seeds find them on any machine): filled from `fuzz/corpus/sources/` before the store targets run.
pub const SOURCES: &str = "/tmp/vzarr-fuzz-sources";

/// The store targets.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "kerchunk-json",
            about: "kerchunk JSON reference documents: refs, templates, inline data, .zarray/.zattrs (Store::open)",
            mutate: |rng, input, others| mutate(rng, input, others, Shape::Text),
            run: Box::new(|ctx, input, _| {
                let path = ctx.fresh_dir().join("refs.json");
                std::fs::write(&path, input).expect("scratch file");
                open_and_read(ctx, &path);
            }),
        },
        Target {
            name: "kerchunk-parquet",
            about: "kerchunk Parquet reference sets: .zmetadata and refs.N.parq (Store::open)",
            mutate: |rng, input, others| bundle::mutate(rng, input, others, ".parq", LE),
            run: Box::new(|ctx, input, _| open_bundle(ctx, input)),
        },
        Target {
            name: "native",
            about:
                "native stores: vzarr.json, sources.bin, manifests (header, block index, blocks, binding), owned.bin",
            mutate: |rng, input, others| bundle::mutate(rng, input, others, "manifest", LE),
            run: Box::new(|ctx, input, _| open_bundle(ctx, input)),
        },
        Target {
            name: "native-sources",
            about: "the native store's source table sources.bin (Store::open)",
            mutate: |rng, input, others| bundle::mutate(rng, input, others, "sources.bin", LE),
            run: Box::new(|ctx, input, _| open_bundle(ctx, input)),
        },
        Target {
            name: "icechunk",
            about: "Icechunk repositories: refs, snapshots, manifests (zstd payloads mutated decompressed)",
            mutate: mutate_icechunk,
            run: Box::new(|ctx, input, _| open_bundle(ctx, input)),
        },
    ]
}

/// Writes a bundle out as a directory and opens it.
fn open_bundle(ctx: &Context, input: &[u8]) {
    let dir = ctx.fresh_dir().join("store");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    bundle::write(&bundle::parse(input), &dir).expect("scratch files");
    open_and_read(ctx, &dir);
}

/// Opens the store at `path` and reads what a user would: every array's metadata, its first chunk
/// entries, and its values (at most 8 MiB of output and decoded chunk).
fn open_and_read(ctx: &Context, path: &Path) {
    ctx.runtime.block_on(async {
        let options = OpenOptions::new(Authorization::new([format!("{SOURCES}/")])).with_check_sources(false);
        let store = match Store::open_with(path, &options).await {
            Ok(store) => store,
            Err(e) => return super::show("open", e),
        };
        let _ = store.all_sources().await;
        for group in store.info().groups.iter().take(16) {
            let _ = store.node_metadata(group).await;
        }
        let read = ReadOptions { max_memory: 8 << 20, ..ReadOptions::default() };
        for info in store.info().arrays.iter().take(16) {
            let array = match store.array(&info.path).await {
                Ok(array) => array,
                Err(e) => {
                    super::show(&info.path, e);
                    continue;
                }
            };
            let _ = array.entries(0..64).await;
            let values = array.read(&Selection::all(&array.shape()), &read).await;
            super::show(&info.path, values.map(|v| v.len()));
        }
    });
}

/// Icechunk files are a header then one zstd frame: the frame is mutated decompressed (the
/// flatbuffer inside) and compressed again, or mutated as it is (one time in four).
fn mutate_icechunk(rng: &mut Rng, input: &[u8], others: &[&[u8]]) -> Vec<u8> {
    let mut files = bundle::parse(input);
    let candidates: Vec<usize> = (0..files.len()).filter(|&i| zstd_frame_at(&files[i].1).is_some()).collect();
    if candidates.is_empty() || rng.one_in(4) {
        return bundle::mutate(rng, input, others, "manifests", LE);
    }
    let k = *rng.pick(&candidates);
    let data = &files[k].1;
    let at = zstd_frame_at(data).expect("candidate");
    let Ok(plain) = zstd::decode_all(&data[at..]) else { return bundle::mutate(rng, input, others, "", LE) };
    let mutated = mutate(rng, &plain, &[], LE);
    let mut out = data[..at].to_vec();
    out.extend(zstd::encode_all(mutated.as_slice(), 1).expect("zstd in memory"));
    files[k].1 = out;
    bundle::encode(&files)
}

/// Where a zstd frame starts in the first 64 bytes of `data`.
fn zstd_frame_at(data: &[u8]) -> Option<usize> {
    data.windows(4).take(64).position(|w| w == [0x28, 0xb5, 0x2f, 0xfd])
}

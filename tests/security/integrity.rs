//! Integrity end to end: a manifest is bound to the decoding fields of its array's `zarr.json` and to
//! the store's source table; store-owned chunk bytes carry CRC-32C checksums; `verify` compares each
//! array's shape and element size with the source's. Attribute edits stay free.

use std::path::Path;

use crate::common::*;

/// The masked fixture: `masked` (bytes, numcodecs.shuffle, numcodecs.zlib) with 3 store-owned chunks.
fn masked() -> (Fixture, std::path::PathBuf) {
    let f = Fixture::new(fixtures::write_masked_chunks);
    let store = scan_fixture(&f);
    (f, store)
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}

fn codec<'a>(doc: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
    let codecs = doc["codecs"].as_array_mut().unwrap();
    codecs.iter_mut().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {name} codec"))
}

/// The edits of the fault campaign, one per decoding field: each changes what the bytes mean while
/// leaving valid JSON and (for the grid) the same chunk count.
type Edit = Box<dyn Fn(&mut serde_json::Value)>;

fn decoding_edits() -> Vec<(&'static str, Edit)> {
    vec![
        ("endian", Box::new(|d| codec(d, "bytes")["configuration"]["endian"] = "big".into())),
        ("shuffle elementsize", Box::new(|d| codec(d, "numcodecs.shuffle")["configuration"]["elementsize"] = 2.into())),
        ("shape", Box::new(|d| d["shape"][0] = (d["shape"][0].as_u64().unwrap() - 1).into())),
        (
            "data type",
            Box::new(|d| d["data_type"] = if d["data_type"] == "uint32" { "int32" } else { "uint32" }.into()),
        ),
        ("fill value", Box::new(|d| d["fill_value"] = 7.into())),
        (
            "chunk grid",
            Box::new(|d| {
                let shape = d["shape"].clone();
                d["chunk_grid"] = serde_json::json!({"name": "regular", "configuration": {"chunk_shape": shape}});
            }),
        ),
    ]
}

#[test]
fn every_decoding_field_edit_is_refused() {
    for (what, edit) in decoding_edits() {
        let (f, store) = masked();
        edit_json(&store.join("masked/zarr.json"), edit);
        let err = try_read(&open_store(&store), "masked", "").expect_err(what);
        assert!(err.contains("masked: integrity: zarr.json"), "{what}: {err}");
        let npy = f.join("x.npy");
        let run = cli(&["read".as_ref(), store.as_os_str(), "masked".as_ref(), "-o".as_ref(), npy.as_os_str()]);
        assert_eq!((run.code, run.stderr_lines().len()), (1, 1), "{what}: {}", run.stderr);
        assert!(run.stderr.contains("integrity") && !npy.exists(), "{what}: {}", run.stderr);
    }
}

#[test]
fn attribute_edits_stay_free() {
    let (f, store) = masked();
    edit_json(&store.join("masked/zarr.json"), |d| {
        d["attributes"]["comment"] = "edited after the scan".into();
        d["dimension_names"] = serde_json::json!(["a", "b"]);
    });
    let ours = read(&open_store(&store), "masked", "");
    assert_same_elements("masked", &ours.bytes, &oracle_read(&f.path, "masked", None), 4);
}

#[test]
fn a_swapped_source_table_is_refused() {
    let a = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 1)));
    let b = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)));
    let (store_a, store_b) = (scan_fixture(&a), scan_fixture(&b));
    std::fs::copy(store_a.join("sources.bin"), store_b.join("sources.bin")).unwrap();
    let err = try_read(&open_store(&store_b), "tas", "").expect_err("swapped source table");
    assert!(err.contains("tas: integrity: sources.bin differs"), "{err}");
}

#[test]
fn a_flipped_owned_bit_is_refused() {
    let (f, store) = masked();
    let owned = store.join("masked/owned.bin");
    let mut bytes = std::fs::read(&owned).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&owned, bytes).unwrap();
    let opened = open_store(&store);
    let err = try_read(&opened, "masked", "").expect_err("flipped bit");
    assert!(err.contains("masked: integrity: store-owned chunk") && err.contains("CRC-32C mismatch"), "{err}");
    // Materialize copies owned bytes verbatim: it checks them too, and writes nothing.
    let out = f.join("m.zarr");
    let run = cli(&["materialize".as_ref(), store.as_os_str(), out.as_os_str()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("CRC-32C mismatch") && !out.exists(), "{}", run.stderr);
}

#[test]
fn stores_of_format_1_still_read() {
    let (f, store) = masked();
    // What vzarr 1 wrote: format version 1, manifests ending at their block index.
    edit_json(&store.join("vzarr.json"), |d| d["format_version"] = 1.into());
    let info: serde_json::Value = serde_json::from_slice(&std::fs::read(store.join("vzarr.json")).unwrap()).unwrap();
    for array in info["arrays"].as_array().unwrap() {
        let path = store.join(array["path"].as_str().unwrap()).join("manifest.bin");
        let bytes = std::fs::read(&path).unwrap();
        let header = vzarr::testing::ManifestHeader::parse(&bytes).unwrap();
        std::fs::write(&path, &bytes[..header.index_range().end as usize]).unwrap();
    }
    assert_store_matches_oracle(&f.path, &store);
}

#[test]
fn verify_compares_shapes_with_the_source() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)));
    let store = scan_fixture(&f);
    // The source now holds one latitude fewer: its fingerprint changed too, but the shape is
    // reported before any value is read.
    std::fs::remove_file(&f.path).unwrap();
    fixtures::write_monthly(f.dir.path(), &fixtures::Monthly { ny: 17, ..fixtures::Monthly::new(2023, 2) });
    let run = cli(&["verify".as_ref(), store.as_os_str()]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let line = run.stdout.lines().find(|l| l.contains(" tas:")).unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(line.starts_with("FAIL") && line.contains("shape [28, 18, 36], the file has [28, 17, 36]"), "{line}");
}

#[test]
fn export_of_a_store_whose_source_changed_is_refused_naming_it() {
    // Issue 52: export succeeded silently where every other command refused the changed source.
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)));
    let store = scan_fixture(&f);
    let bytes = std::fs::read(&f.path).unwrap();
    std::fs::write(&f.path, [&bytes[..], b"x"].concat()).unwrap();
    let out = f.dir.path().join("refs.json");
    let export = |extra: &[&str]| {
        let mut args =
            vec!["export".to_string(), store.display().to_string(), "--kerchunk".into(), out.display().to_string()];
        args.extend(extra.iter().map(|a| a.to_string()));
        cli(&args)
    };
    let run = export(&[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    let source = f.path.display().to_string();
    assert!(run.stderr.contains(&source) && run.stderr.contains("changed since the scan"), "{}", run.stderr);
    assert!(!out.exists(), "nothing exported");
    let run = export(&["--no-check-sources"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

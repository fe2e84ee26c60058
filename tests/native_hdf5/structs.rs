//! Issue 26: HDF5 compound types as Zarr `struct` arrays and opaque types as `raw_bytes`, on files
//! h5py, netCDF4-python and PyTables write (`tests/python/make_structs.py`): every member of every
//! element read through the store equals libhdf5's read of that member (picked by name, converted to
//! its native form), `vzarr verify` passes, compounds with padding are stored packed (store-owned
//! chunks), array members are nested structs named by index (each element of an array member read
//! through the store equals libhdf5's read of that element), layouts no Zarr reader could decode are
//! refused with their reason, and zarr-python and
//! xarray read the kerchunk export as h5py reads the file (`tests/python/check_structs.py`).
//! Compounds with variable-length string or object reference members (issue 44) are stored by vzarr
//! with UTF-32 text fields: their strings and paths equal libhdf5's.

use std::path::{Path, PathBuf};

use vzarr::dataset::{DataType, StructType};
use vzarr::ScanOptions;

use crate::common::hdf5_oracle::{read_member, read_member_text, read_native};
use crate::common::{open_store, read, scan, scan_to_store};

/// The struct and opaque arrays of `structs.h5` vzarr stores.
const STRUCTS_H5: [&str; 20] = [
    "array_fill",
    "array_grid",
    "array_in_nested",
    "array_members",
    "array_members_be",
    "array_of_compound",
    "array_of_padded",
    "array_padded",
    "chunked",
    "committed",
    "compact",
    "contiguous_be",
    "grid",
    "nested",
    "opaque",
    "padded",
    "padded_chunked",
    "padded_compact",
    "padded_nested",
    "unordered",
];

/// The fixtures, written by `make_structs.py` into `dir` (None without the Python environment).
fn fixtures(dir: &Path) -> Option<PathBuf> {
    super::python_fixtures("make_structs.py", dir, &[], "the struct tests")
}

/// Every leaf member of `s`: its path of names and its byte range in an element. Complex numbers,
/// strings and raw bytes are leaves.
fn leaves(s: &StructType, base: usize, prefix: &[String], out: &mut Vec<(Vec<String>, usize, usize)>) {
    for (offset, field) in s.offsets() {
        let mut path = prefix.to_vec();
        path.push(field.name.clone());
        match field.data_type {
            DataType::Struct(inner) => leaves(inner, base + offset, &path, out),
            t => out.push((path, base + offset, t.size())),
        }
    }
}

/// Compares every member of every struct array of the store of `file` with libhdf5, and opaque
/// arrays byte for byte; returns the arrays compared.
fn assert_members_match_libhdf5(file: &Path, store: &Path) -> Vec<String> {
    let opened = open_store(store);
    let mut compared = Vec::new();
    let names: Vec<String> = opened.info().arrays.iter().map(|a| a.path.clone()).collect();
    for name in names {
        let data = read(&opened, &name, "");
        let elements = data.len() as usize;
        match data.data_type {
            DataType::Struct(s) => {
                let mut fields = Vec::new();
                leaves(s, 0, &[], &mut fields);
                for (path, offset, size) in fields {
                    let names: Vec<&str> = path.iter().map(String::as_str).collect();
                    let theirs = read_member(file, &name, &names, elements)
                        .unwrap_or_else(|| panic!("{}: {name}: libhdf5 cannot read member {path:?}", file.display()));
                    let ours: Vec<u8> =
                        data.bytes.chunks_exact(s.size()).flat_map(|e| e[offset..offset + size].to_vec()).collect();
                    assert_eq!(ours, theirs, "{}: {name}: member {path:?}", file.display());
                }
            }
            DataType::RawBytes(n) => {
                assert_eq!(data.bytes, read_native(file, &name, elements * n as usize), "{name}");
            }
            _ => continue,
        }
        compared.push(name);
    }
    compared.sort();
    compared
}

#[test]
fn compounds_and_opaque_types_read_as_libhdf5_reads_every_member() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let file = fx.join("structs.h5");
    let store = scan_to_store(&file, dir.path(), "structs.vzarr", &options);
    let compared = assert_members_match_libhdf5(&file, &store);
    assert_eq!(compared, STRUCTS_H5.map(String::from));
    // Compounds with padding are stored packed: every chunk the file holds is store-owned.
    let dataset = scan(&file, &options).unwrap();
    let padded = [
        ("padded", 1),
        ("padded_chunked", 7),
        ("padded_compact", 1),
        ("padded_nested", 2),
        ("array_padded", 3),
        ("array_of_padded", 1),
    ];
    for (name, chunks) in padded {
        let array = dataset.arrays.iter().find(|a| a.path == name).unwrap();
        let owned = (0..array.chunks.len())
            .filter(|&i| matches!(array.chunks.get(i), Some(vzarr::dataset::ChunkEntry::Owned { .. })))
            .count();
        assert_eq!((owned, array.rewritten_chunks), (chunks, chunks as u64), "{name}");
    }
    // Compounds with array members and no padding are referenced in place.
    for name in ["array_members", "array_members_be", "array_grid", "array_of_compound", "array_in_nested"] {
        let array = dataset.arrays.iter().find(|a| a.path == name).unwrap();
        assert_eq!(array.rewritten_chunks, 0, "{name}");
    }
    // A struct has at most MAX_STRUCT_FIELDS fields, and takes one byte order.
    let refused: Vec<String> = dataset.warnings.iter().map(|w| format!("{}: {}", w.variable, w.message)).collect();
    for expected in [
        "wide_array: left out: cannot reference elements of compound type (member w: an array dimension of 5000 elements",
        "mixed_order: left out: cannot reference elements of compound type (members a and b have different byte orders)",
    ] {
        assert!(refused.iter().any(|w| w.starts_with(expected)), "{expected} in {refused:?}");
    }
    assert_eq!(refused.len(), 2, "{refused:?}");
    let err = scan(&file, &ScanOptions::default()).unwrap_err().to_string();
    assert!(err.contains("structs.h5: mixed_order: cannot reference elements of compound type"), "{err}");
    let run = crate::common::cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
    for name in &compared {
        assert!(run.stdout.contains(&format!("ok   {name}: ")), "{name}: {}", run.stdout);
    }
}

/// netCDF-4 compound variables (libnetcdf wrote them; netCDF4-python aligns members as C does, so a
/// type with padding is stored packed) and a PyTables table.
#[test]
fn netcdf4_compounds_and_pytables_tables() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let nc = fx.join("structs.nc");
    let store = scan_to_store(&nc, dir.path(), "nc.vzarr", &options);
    assert_eq!(assert_members_match_libhdf5(&nc, &store), ["obs", "padded"]);
    assert!(scan(&nc, &ScanOptions::default()).unwrap().warnings.is_empty());
    crate::common::cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
    let table = fx.join("table.h5");
    if !table.exists() {
        assert!(!crate::interop::python_required(), "PyTables is missing: run tests/python/setup.sh");
        eprintln!("notice: no PyTables; the table check not run");
        return;
    }
    let store = scan_to_store(&table, dir.path(), "table.vzarr", &ScanOptions::default());
    assert_eq!(assert_members_match_libhdf5(&table, &store), ["particles", "tracks"]);
    crate::common::cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
}

/// zarr-python and xarray read the kerchunk export of every fixture as h5py reads the file: fields,
/// values and compound attributes.
#[test]
fn zarr_python_and_xarray_read_structs_as_h5py() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let Some(python) = crate::interop::python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_structs.py");
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let text = ["aligned", "grid", "names", "partly", "rows", "scalar"];
    let expected: [(&str, &[&str]); 4] = [
        ("structs.h5", &STRUCTS_H5),
        ("structs.nc", &["obs", "padded"]),
        ("table.h5", &["particles", "tracks"]),
        ("text_structs.h5", &text),
    ];
    for (name, arrays) in expected {
        let source = fx.join(name);
        if !source.exists() {
            // Only table.h5 may be missing, and only without PyTables (make_structs.py skips it).
            assert!(!crate::interop::python_required(), "{name} was not made: run tests/python/setup.sh");
            eprintln!("notice: {name} not made (no PyTables); its check not run");
            continue;
        }
        let store = scan_to_store(&source, dir.path(), &format!("{name}.vzarr"), &options);
        let stdout = super::python_check_on_export(&python, &script, &store, &source);
        for array in arrays {
            assert!(stdout.contains(&format!("ok   {array} zarr-python")), "{name}: {array}: {stdout}");
        }
    }
}

/// The text of UTF-32 code points (native order), without the NULs that pad it.
fn utf32_text(bytes: &[u8]) -> String {
    let units = bytes.chunks_exact(4).map(|c| u32::from_ne_bytes(c.try_into().unwrap()));
    units.map(|u| char::from_u32(u).unwrap()).collect::<String>().trim_end_matches('\0').to_string()
}

/// Compounds with variable-length string and object reference members (`text_structs.h5`): every
/// element's numbers equal libhdf5's member reads, every string and reference path libhdf5's (each
/// field exactly as wide as its longest value), chunks are store-owned in the file's chunk shape cut
/// to the array, and `vzarr verify` passes.
#[test]
fn compounds_with_strings_and_references_store_libhdf5s_text() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("text_structs.h5");
    let store = scan_to_store(&file, dir.path(), "text.vzarr", &ScanOptions::default());
    let opened = open_store(&store);
    // Chunk shapes: the file's (cut to the array), one chunk for contiguous data.
    let expected: [(&str, &[u64]); 6] =
        [("aligned", &[2]), ("grid", &[2, 2]), ("names", &[3]), ("partly", &[3]), ("rows", &[4]), ("scalar", &[])];
    for (name, chunks) in expected {
        let data = read(&opened, name, "");
        let DataType::Struct(s) = data.data_type else { panic!("{name}: {}", data.data_type) };
        let array = opened.array(name).unwrap();
        let array = array.reader();
        assert_eq!(array.metadata().chunk_grid.chunk_shape(&vec![0; chunks.len()]), chunks, "{name}");
        let elements = data.len() as usize;
        for (offset, field) in s.offsets() {
            let ours = data.bytes.chunks_exact(s.size()).map(|e| &e[offset..offset + field.data_type.size()]);
            if let DataType::FixedUtf32(width) = field.data_type {
                let theirs = read_member_text(&file, name, &field.name)
                    .unwrap_or_else(|| panic!("{name}: libhdf5 cannot read member {} as text", field.name));
                let ours: Vec<String> = ours.map(utf32_text).collect();
                assert_eq!(ours, theirs, "{name}: member {}", field.name);
                let widest = theirs.iter().map(|t| t.chars().count()).max().unwrap_or(0).max(1);
                assert_eq!(width as usize, 4 * widest, "{name}: member {} as wide as its longest value", field.name);
            } else {
                let theirs = read_member(&file, name, &[&field.name], elements)
                    .unwrap_or_else(|| panic!("{name}: libhdf5 cannot read member {}", field.name));
                assert_eq!(ours.flatten().copied().collect::<Vec<u8>>(), theirs, "{name}: member {}", field.name);
            }
        }
        let expected_fields: Vec<String> = if name == "rows" { vec!["target".into()] } else { Vec::new() };
        assert_eq!(array.metadata().notes.reference_fields, expected_fields, "{name}");
    }
    let dataset = scan(&file, &ScanOptions::default()).unwrap();
    let rows = dataset.arrays.iter().find(|a| a.path == "rows").unwrap();
    let owned = (0..rows.chunks.len())
        .filter(|&i| matches!(rows.chunks.get(i), Some(vzarr::dataset::ChunkEntry::Owned { .. })));
    assert_eq!(owned.count(), 3, "11 rows in chunks of 4, all store-owned");
    let run = crate::common::cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
    for (name, _) in expected {
        assert!(run.stdout.contains(&format!("ok   {name}: ")), "{name}: {}", run.stdout);
    }
}

/// Files whose compound text fields differ in width concatenate into the widest (the narrower
/// file's store-owned chunks padded): every name equals libhdf5's read of its file, `verify` passes
/// (the source's elements widened to the store's), and a compound without the concatenation
/// dimension whose text differs needs `--take-first`, as any differing variable does.
#[test]
fn compounds_whose_text_widths_differ_concatenate_at_the_widest() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let parts = [fx.join("text_parts/part0.h5"), fx.join("text_parts/part1.h5")];
    let glob = fx.join("text_parts/part*.h5");
    let out = dir.path().join("parts.vzarr");
    let args = |extra: &[&str]| {
        let mut args = vec!["scan".to_string(), glob.display().to_string(), "--concat".into(), "phony_dim_0".into()];
        args.extend(extra.iter().map(|a| a.to_string()));
        args.extend(["-o".into(), out.display().to_string()]);
        args
    };
    let refused = crate::common::cli_expect(&args(&[]), 1);
    assert!(refused.stderr.contains("meta: its data differs"), "{}", refused.stderr);
    crate::common::cli_expect(&args(&["--take-first", "meta"]), 0);
    let store = open_store(&out);
    let obs = read(&store, "obs", "");
    let DataType::Struct(s) = obs.data_type else { panic!("{}", obs.data_type) };
    let theirs: Vec<String> = parts.iter().flat_map(|p| read_member_text(p, "obs", "name").unwrap()).collect();
    let widest = theirs.iter().map(|t| t.chars().count()).max().unwrap();
    assert_eq!(s.text_widths(), [4 * widest as u32], "the wider file's width");
    let (name_at, _) = s.offsets().nth(1).unwrap();
    let ours: Vec<String> = obs.bytes.chunks_exact(s.size()).map(|e| utf32_text(&e[name_at..])).collect();
    assert_eq!(ours, theirs);
    let ids: Vec<u8> = parts.iter().zip([2, 3]).flat_map(|(p, n)| read_member(p, "obs", &["id"], n).unwrap()).collect();
    let ours_ids: Vec<u8> = obs.bytes.chunks_exact(s.size()).flat_map(|e| e[..4].to_vec()).collect();
    assert_eq!(ours_ids, ids);
    let meta = read(&store, "meta", "");
    let DataType::Struct(m) = meta.data_type else { panic!("{}", meta.data_type) };
    let (at, _) = m.offsets().nth(1).unwrap();
    assert_eq!(utf32_text(&meta.bytes[at..]), read_member_text(&parts[0], "meta", "name").unwrap()[0]);
    let run = crate::common::cli_expect(&["verify".as_ref(), out.as_os_str()], 0);
    assert!(run.stdout.contains("ok   obs: 5 elements equal"), "{}", run.stdout);
    // Appending the wider file to a store of the narrower: refused in one line, the store unchanged
    // (its stored chunks would need rewriting, which a fresh scan does).
    let first = dir.path().join("first.vzarr");
    let (part0, part1) = (parts[0].display().to_string(), parts[1].display().to_string());
    let first_s = first.display().to_string();
    crate::common::cli_expect(&["scan", &part0, "--concat", "phony_dim_0", "--take-first", "meta", "-o", &first_s], 0);
    let before = std::fs::read(first.join("obs/zarr.json")).unwrap();
    let refused = crate::common::cli_expect(&["append", &first_s, &part1], 1);
    assert!(refused.stderr.contains("obs: data type struct{id: int32, name: utf32_5} is wider"), "{}", refused.stderr);
    assert_eq!(std::fs::read(first.join("obs/zarr.json")).unwrap(), before);
    crate::common::cli_expect(&["verify", &first_s], 0);
}

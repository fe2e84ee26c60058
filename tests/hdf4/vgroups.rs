//! Vgroups as groups, against libhdf4's V interface: the hierarchy libhdf4 reads (`Vlone`, `Vattach`,
//! `Vgettagrefs`), with the vgroups' attributes (`Vattrinfo`, `Vgetattr`) and the data sets each holds
//! (`DFTAG_NDG` refs, named through `SDreftoindex`), is the store's groups and array paths.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

use serde_json::{json, Value};

use super::oracle::LIBHDF4;

#[link(name = "libdfalt.so.0", kind = "dylib", modifiers = "+verbatim")]
extern "C" {
    fn Hopen(path: *const c_char, access: c_int, ndds: i16) -> i32;
    fn Hclose(file: i32) -> c_int;
    fn Vinitialize(file: i32) -> c_int;
    fn Vfinish(file: i32) -> c_int;
    fn Vlone(file: i32, refs: *mut i32, size: i32) -> i32;
    fn Vattach(file: i32, reference: i32, access: *const c_char) -> i32;
    fn Vdetach(vgroup: i32) -> i32;
    fn Vgetname(vgroup: i32, name: *mut c_char) -> i32;
    fn Vgetclass(vgroup: i32, class: *mut c_char) -> i32;
    fn Vntagrefs(vgroup: i32) -> i32;
    fn Vgettagrefs(vgroup: i32, tags: *mut i32, refs: *mut i32, n: i32) -> i32;
    fn Vnattrs(vgroup: i32) -> c_int;
    fn Vattrinfo(vgroup: i32, index: c_int, name: *mut c_char, nt: *mut i32, count: *mut i32, size: *mut i32) -> c_int;
    fn Vgetattr(vgroup: i32, index: c_int, values: *mut c_void) -> c_int;
}

#[link(name = "libmfhdfalt.so.0", kind = "dylib", modifiers = "+verbatim")]
extern "C" {
    fn SDstart(name: *const c_char, access: i32) -> i32;
    fn SDreftoindex(sd: i32, reference: i32) -> i32;
    fn SDselect(sd: i32, index: i32) -> i32;
    fn SDgetinfo(sds: i32, name: *mut c_char, rank: *mut i32, dims: *mut i32, nt: *mut i32, nattrs: *mut i32) -> c_int;
    fn SDendaccess(sds: i32) -> c_int;
    fn SDend(sd: i32) -> c_int;
}

const DFACC_READ: c_int = 1;
const DFTAG_VG: i32 = 1965;
const DFTAG_NDG: i32 = 720;
/// The SD model's vgroups and those left flat (vzarr's rule: `src/scan/hdf4/groups.rs`).
const NOT_GROUPS: [&str; 9] = ["CDF0.0", "Var0.0", "Dim0.0", "UDim0.0", "RIG0.0", "RI0.0", "GRID", "SWATH", "POINT"];

/// The groups libhdf4 reads in a file (path and attributes, parents first) and the group of each
/// data set a vgroup holds, by data set name.
#[derive(Debug, Default)]
pub struct Tree {
    pub groups: Vec<(String, serde_json::Map<String, Value>)>,
    pub of_dataset: HashMap<String, String>,
}

/// The vgroup tree of `path` as libhdf4 reads it.
pub fn tree(path: &Path) -> Tree {
    let name = CString::new(path.to_str().unwrap()).unwrap();
    let _turn = LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
    let mut tree = Tree::default();
    // SAFETY: ids checked before use; buffers of libhdf4's longest names (64) and of the counts it
    // reports.
    unsafe {
        let file = Hopen(name.as_ptr(), DFACC_READ, 0);
        assert!(file >= 0, "Hopen {}", path.display());
        assert_ne!(Vinitialize(file), -1);
        let mut lone = vec![0i32; 4096];
        let n = Vlone(file, lone.as_mut_ptr(), lone.len() as i32);
        let mut ndgs = Vec::new();
        for &reference in &lone[..n.max(0) as usize] {
            walk(file, reference, "", &mut tree, &mut ndgs);
        }
        Vfinish(file);
        Hclose(file);
        let sd = SDstart(name.as_ptr(), DFACC_READ);
        for (ndg, group) in ndgs {
            let sds = SDselect(sd, SDreftoindex(sd, ndg));
            let mut buf = [0 as c_char; 256];
            let (mut rank, mut nt, mut nattrs, mut dims) = (0, 0, 0, [0i32; 32]);
            assert_ne!(SDgetinfo(sds, buf.as_mut_ptr(), &mut rank, dims.as_mut_ptr(), &mut nt, &mut nattrs), -1);
            SDendaccess(sds);
            let name = CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned();
            tree.of_dataset.entry(name).or_insert(group);
        }
        SDend(sd);
    }
    tree
}

/// Adds vgroup `reference` (under `parent`) and its members to `tree`; data sets to `ndgs`.
unsafe fn walk(file: i32, reference: i32, parent: &str, tree: &mut Tree, ndgs: &mut Vec<(i32, String)>) {
    let vg = Vattach(file, reference, c"r".as_ptr());
    assert!(vg >= 0, "Vattach {reference}");
    let (mut name, mut class) = ([0 as c_char; 256], [0 as c_char; 256]);
    Vgetname(vg, name.as_mut_ptr());
    Vgetclass(vg, class.as_mut_ptr());
    let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
    let class = CStr::from_ptr(class.as_ptr()).to_string_lossy().into_owned();
    if NOT_GROUPS.contains(&class.as_str()) {
        Vdetach(vg);
        return;
    }
    let path = if parent.is_empty() { name } else { format!("{parent}/{name}") };
    tree.groups.push((path.clone(), attributes(vg)));
    let n = Vntagrefs(vg).max(0);
    let (mut tags, mut refs) = (vec![0i32; n as usize], vec![0i32; n as usize]);
    Vgettagrefs(vg, tags.as_mut_ptr(), refs.as_mut_ptr(), n);
    Vdetach(vg);
    for (tag, r) in tags.into_iter().zip(refs) {
        match tag {
            DFTAG_VG => walk(file, r, &path, tree, ndgs),
            DFTAG_NDG => ndgs.push((r, path.clone())),
            _ => {}
        }
    }
}

/// The attributes of vgroup `vg` as JSON (text as a string, one number as a scalar, several as an
/// array): the types the fixture uses.
unsafe fn attributes(vg: i32) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for i in 0..Vnattrs(vg) {
        let mut name = [0 as c_char; 256];
        let (mut nt, mut count, mut size) = (0, 0, 0);
        assert_ne!(Vattrinfo(vg, i, name.as_mut_ptr(), &mut nt, &mut count, &mut size), -1);
        let mut raw = vec![0u8; size.max(0) as usize];
        assert_ne!(Vgetattr(vg, i, raw.as_mut_ptr().cast()), -1);
        let values: Vec<Value> = match nt & 0xfff {
            4 => vec![json!(String::from_utf8_lossy(&raw).trim_end_matches('\0'))],
            24 => raw.chunks_exact(4).map(|b| json!(i32::from_ne_bytes(b.try_into().unwrap()))).collect(),
            6 => raw.chunks_exact(8).map(|b| json!(f64::from_ne_bytes(b.try_into().unwrap()))).collect(),
            other => panic!("attribute number type {other}"),
        };
        let value = if values.len() == 1 { values[0].clone() } else { Value::Array(values) };
        let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        out.insert(name, value);
    }
    out
}

#[test]
fn vgroups_are_groups_with_their_attributes_as_libhdf4_reads_them() {
    let path = super::fixture("vgroups.hdf");
    let expected = tree(&path);
    assert!(expected.groups.len() >= 3 && !expected.of_dataset.is_empty(), "{expected:?}");
    let dataset = vzarr::scan_file(&path, &vzarr::ScanOptions::default()).unwrap();
    let groups: Vec<(String, serde_json::Map<String, Value>)> =
        dataset.groups.iter().filter(|g| !g.path.is_empty()).map(|g| (g.path.clone(), g.attributes.clone())).collect();
    assert_eq!(groups, expected.groups);
    for array in &dataset.arrays {
        let name = array.path.rsplit('/').next().unwrap();
        let wanted = expected.of_dataset.get(name).map_or(name.to_string(), |g| format!("{g}/{name}"));
        assert_eq!(array.path, wanted);
    }
    assert_eq!(dataset.arrays.iter().filter(|a| a.path.contains('/')).count(), expected.of_dataset.len());
}

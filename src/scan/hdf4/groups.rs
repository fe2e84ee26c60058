//! Vgroups as Zarr groups: the V interface's hierarchy of vgroups (`Vattach`, `Vinsert`,
//! `Vaddtagref`) becomes groups, each with its vgroup's attributes, and a data set a vgroup holds
//! (named by its numeric data group, `(DFTAG_NDG, SDidtoref)`, or its `Var0.0` vgroup) is an array of
//! that group (input: [`SdFile`]'s other vgroups; output: group paths and each data set's group).
//!
//! - Roots are the vgroups no other such vgroup holds, by ref (libhdf4's order); a vgroup held by several is
//!   placed at its first path (depth first, members in order), and so is a data set. Vgroups only
//!   reachable through a loop are roots too. Data sets no vgroup holds stay at the root, as the SD
//!   interface lists them.
//! - Left flat: the HDF-EOS2 structure (vgroups of class `GRID`, `SWATH`, `POINT` and everything
//!   under them, which `StructMetadata.0` describes: fields keep the names GDAL, kerchunk and the
//!   HDF-EOS tools give them) and the GR interface's (`RIG0.0`, `RI0.0`).
//! - A name becomes a Zarr node name: `/` is replaced by `_`, an empty, `.` or `..` name becomes
//!   `vgroup_REF`, and a sibling of the same name gets `_REF` appended.
//!
//! [`SdFile`]: super::sds::SdFile

use std::collections::{HashMap, HashSet};

use super::errors::Hdf4Error;
use super::vobjects::{Vgroup, DFTAG_VG};

/// Most levels of nested vgroups.
const MAX_DEPTH: usize = 32;

/// Classes of vgroups whose whole tree stays flat.
const FLAT_CLASSES: [&str; 5] = ["GRID", "SWATH", "POINT", "RIG0.0", "RI0.0"];

/// Where the vgroups and data sets go.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Placement {
    /// Group paths in creation order (parents first), with the refs of their attribute vdatas.
    pub(crate) groups: Vec<(String, Vec<u16>)>,
    /// The group path of each data set a vgroup holds, by its `Var0.0` vgroup ref.
    pub(crate) of_var: HashMap<u16, String>,
}

/// Places `vgroups` (file order) and the data sets they hold (`var_of`: (tag, ref) -> `Var0.0` ref).
///
/// # Errors
/// [`Hdf4Error::Malformed`] for vgroups nested more than 32 deep.
pub(crate) fn place(vgroups: &[Vgroup], var_of: &HashMap<(u16, u16), u16>) -> Result<Placement, Hdf4Error> {
    let by_ref: HashMap<u16, &Vgroup> = vgroups.iter().map(|v| (v.reference, v)).collect();
    let flat = flat_trees(vgroups, &by_ref);
    // libhdf4 lists vgroups by ref (`Vgetid`, `Vlone`): roots in that order.
    let mut placed: Vec<&Vgroup> = vgroups.iter().filter(|v| !flat.contains(&v.reference)).collect();
    placed.sort_by_key(|v| v.reference);
    let held: HashSet<u16> = placed
        .iter()
        .flat_map(|v| v.members.iter())
        .filter(|(tag, r)| *tag == DFTAG_VG && by_ref.contains_key(r) && !flat.contains(r))
        .map(|&(_, r)| r)
        .collect();
    let mut out = Placement::default();
    let mut visited = HashSet::new();
    let mut used = HashSet::new();
    let roots = placed.iter().filter(|v| !held.contains(&v.reference));
    let rest = placed.iter().filter(|v| held.contains(&v.reference));
    for root in roots.chain(rest) {
        if visited.contains(&root.reference) {
            continue;
        }
        // Depth first, members in order: (vgroup, its parent's path, depth).
        let mut stack = vec![(*root, String::new(), 1usize)];
        while let Some((group, parent, depth)) = stack.pop() {
            if !visited.insert(group.reference) {
                continue;
            }
            if depth > MAX_DEPTH {
                let what = format!("vgroup {} ({})", group.reference, group.name);
                return Err(Hdf4Error::malformed(what, format!("vgroups nested more than {MAX_DEPTH} deep")));
            }
            let path = child_path(&parent, group, &mut used);
            out.groups.push((path.clone(), group.attributes.clone()));
            let mut children = Vec::new();
            for member in &group.members {
                match by_ref.get(&member.1) {
                    Some(child) if member.0 == DFTAG_VG && !flat.contains(&child.reference) => children.push(*child),
                    _ => {
                        if let Some(&var) = var_of.get(member) {
                            out.of_var.entry(var).or_insert_with(|| path.clone());
                        }
                    }
                }
            }
            stack.extend(children.into_iter().rev().map(|c| (c, path.clone(), depth + 1)));
        }
    }
    Ok(out)
}

/// The vgroups of the trees that stay flat: those of the flat classes and everything under them.
fn flat_trees(vgroups: &[Vgroup], by_ref: &HashMap<u16, &Vgroup>) -> HashSet<u16> {
    let mut flat = HashSet::new();
    let mut stack: Vec<u16> =
        vgroups.iter().filter(|v| FLAT_CLASSES.contains(&v.class.as_str())).map(|v| v.reference).collect();
    while let Some(r) = stack.pop() {
        if flat.insert(r) {
            let members = by_ref.get(&r).map(|v| v.members.as_slice()).unwrap_or_default();
            stack.extend(members.iter().filter(|(tag, _)| *tag == DFTAG_VG).map(|&(_, m)| m));
        }
    }
    flat
}

/// The path of `group` under `parent`, unique among the paths `used` so far.
fn child_path(parent: &str, group: &Vgroup, used: &mut HashSet<String>) -> String {
    let name = match group.name.replace('/', "_") {
        n if n.is_empty() || n == "." || n == ".." => format!("vgroup_{}", group.reference),
        n if n.starts_with("__") => format!("v{n}"),
        n => n,
    };
    let join = |name: &str| if parent.is_empty() { name.to_string() } else { format!("{parent}/{name}") };
    let mut path = join(&name);
    if used.contains(&path) {
        path = join(&format!("{name}_{}", group.reference));
    }
    used.insert(path.clone());
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::hdf4::sds::DFTAG_NDG;

    fn vg(reference: u16, name: &str, class: &str, members: &[(u16, u16)]) -> Vgroup {
        let members = members.to_vec();
        Vgroup { reference, name: name.into(), class: class.into(), members, attributes: vec![reference + 100] }
    }

    #[test]
    fn nested_vgroups_become_nested_groups_holding_their_data_sets() {
        let groups = [
            vg(1, "Top", "C", &[(DFTAG_VG, 2), (DFTAG_NDG, 50)]),
            vg(2, "in/ner", "", &[(DFTAG_NDG, 51)]),
            vg(3, "Top", "", &[(DFTAG_NDG, 50)]),
        ];
        let var_of = HashMap::from([((DFTAG_NDG, 50), 10), ((DFTAG_NDG, 51), 11)]);
        let placed = place(&groups, &var_of).unwrap();
        let paths: Vec<&str> = placed.groups.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["Top", "Top/in_ner", "Top_3"]);
        assert_eq!(placed.groups[1].1, [102]);
        assert_eq!(placed.of_var[&10], "Top", "first placement wins");
        assert_eq!(placed.of_var[&11], "Top/in_ner");
    }

    #[test]
    fn hdf_eos2_trees_and_loops() {
        let groups = [
            vg(1, "MOD_Grid", "GRID", &[(DFTAG_VG, 2)]),
            vg(2, "Data Fields", "GRID Vgroup", &[(DFTAG_NDG, 50)]),
            vg(3, "a", "", &[(DFTAG_VG, 4)]),
            vg(4, "b", "", &[(DFTAG_VG, 3)]),
        ];
        let var_of = HashMap::from([((DFTAG_NDG, 50), 10)]);
        let placed = place(&groups, &var_of).unwrap();
        assert!(placed.of_var.is_empty(), "{placed:?}");
        let paths: Vec<&str> = placed.groups.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["a", "a/b"]);
    }

    #[test]
    fn a_chain_deeper_than_the_limit_is_an_error() {
        let groups: Vec<Vgroup> = (1..=40).map(|r| vg(r, "g", "", &[(DFTAG_VG, r + 1)])).collect();
        let err = place(&groups, &HashMap::new()).unwrap_err().to_string();
        assert!(err.contains("nested more than 32 deep"), "{err}");
    }
}

//! The whole combine: group files by their data variables, concatenate each group in its hypercube,
//! merge the groups, add the new dimensions' coordinates, and record provenance.

use std::collections::BTreeMap;

use super::attrs::{check_meaning, global_attributes};
use super::concat::{concat_array, take_first, Axis, Part};
use super::cube::{layout, Layout};
use super::keys::{new_axis, NewAxis};
use super::{location, newdim, reencode, CombineError, CombineOptions};
use crate::dataset::{
    ChunkTable, ConcatDimInfo, Provenance, Recipe, ScanWarning, SourceBox, SourcePart, VirtualArray, VirtualDataset,
};
use crate::manifest::SourceTable;

/// One group: its files (indices) and its data variables (sorted).
type Group = (Vec<usize>, Vec<String>);

/// The concatenated result of one group, before merging.
struct GroupResult {
    /// Moved out by [`merge_groups`].
    arrays: Vec<VirtualArray>,
    /// The paths of `arrays`, in their order.
    paths: Vec<String>,
    /// Per array path: how it was built.
    kinds: BTreeMap<String, Kind>,
    layout: Layout,
    /// The group's files in placement order, with their source ids.
    members: Vec<(usize, u32)>,
    reencoded: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Concatenated along every dimension (new ones included).
    Data,
    /// A coordinate or bounds variable along existing dimensions, from the first row.
    Coordinate,
    /// Taken from the group's first file.
    TakenFirst,
}

/// Entry point of [`super::combine`].
pub(crate) fn combine_all(
    mut files: Vec<VirtualDataset>,
    options: &CombineOptions,
) -> Result<VirtualDataset, CombineError> {
    let mut warnings: Vec<ScanWarning> = files.iter().flat_map(|f| f.warnings.clone()).collect();
    let new_axes: Vec<Option<NewAxis>> =
        options.dims.iter().map(|d| d.is_new().then(|| new_axis(&files, d)).transpose()).collect::<Result<_, _>>()?;
    let groups = group_files(&mut files, options, &mut warnings)?;
    // The chunk tables leave the files, to be moved (not copied) into the combined arrays.
    let mut tables: Vec<Vec<ChunkTable>> =
        files.iter_mut().map(|f| f.arrays.iter_mut().map(|a| std::mem::take(&mut a.chunks)).collect()).collect();
    let mut sources = SourceTable::new();
    let mut results = Vec::with_capacity(groups.len());
    for (group, data_vars) in &groups {
        let refs: Vec<&VirtualDataset> = group.iter().map(|&i| &files[i]).collect();
        let placed = layout(&refs, group, &new_axes, options)?;
        let mut order: Vec<usize> = (0..group.len()).collect();
        order.sort_by(|&a, &b| placed.pos[a].cmp(&placed.pos[b]));
        let mut members = Vec::with_capacity(order.len());
        for &i in &order {
            // The file, then the external files its data lie in (HDF4): ids `base..` here, in order.
            let own = &files[group[i]].sources;
            if own.is_empty() {
                return Err(CombineError::NoFiles);
            }
            members.push((i, sources.len() as u32));
            for source in own.iter() {
                sources.push(source.clone());
            }
        }
        let mut group_tables: Vec<Vec<ChunkTable>> = group.iter().map(|&i| std::mem::take(&mut tables[i])).collect();
        let result = group_arrays(&refs, &mut group_tables, placed, members, data_vars, options, &mut warnings)?;
        results.push((group.clone(), result));
    }
    let merged = merge_groups(&files, &mut results, options)?;
    let mut arrays = merged;
    for (k, axis) in new_axes.iter().enumerate() {
        if let Some(axis) = axis {
            let name = &options.dims[k].name;
            if arrays.iter().any(|a| a.path == *name) {
                return Err(CombineError::Options(format!("new dimension {name:?} is also the name of a variable")));
            }
            arrays.insert(0, newdim::coordinate_array(name, axis)?);
        }
    }
    let mut provenance = provenance(&results, options);
    provenance.recipe = Some(Recipe {
        take_first: options.take_first.clone(),
        drop_missing: options.drop_missing,
        first_global_attributes: options.first_global_attributes,
        history_line: options.history.is_some(),
        ..Recipe::default()
    });
    let all: Vec<&VirtualDataset> = files.iter().collect();
    let (attributes, _dropped) = global_attributes(&all, options.first_global_attributes);
    let first_file = results.first().and_then(|(g, r)| r.members.first().map(|m| g[m.0])).unwrap_or(0);
    let mut groups = files[first_file].groups.clone();
    if let Some(root) = groups.iter_mut().find(|g| g.path.is_empty()) {
        root.attributes = attributes;
        if let Some(line) = &options.history {
            let history = match root.attributes.get("history").and_then(|h| h.as_str()) {
                Some(old) if !old.is_empty() => format!("{line}\n{old}"),
                _ => line.clone(),
            };
            root.attributes.insert("history".into(), history.into());
        }
    }
    Ok(VirtualDataset {
        sources,
        groups,
        arrays,
        warnings,
        provenance,
        concat: Vec::new(),
        hdf5_links: Default::default(),
    })
}

/// Coordinate variables (1-D, named like their dimension) and the bounds variables they name.
fn coordinate_like(f: &VirtualDataset) -> Vec<String> {
    let mut out = Vec::new();
    for a in &f.arrays {
        let names = a.metadata.dimension_names.as_deref().unwrap_or_default();
        if names.len() == 1 && names[0] == a.path {
            out.push(a.path.clone());
        }
        if let Some(b) = a.metadata.attributes.get("bounds").and_then(|b| b.as_str()) {
            out.push(b.to_string());
        }
    }
    out
}

/// The file's data variables (sorted): those carrying an existing concatenation dimension (any
/// dimension when all are new), except coordinates and bounds.
fn data_variables(f: &VirtualDataset, options: &CombineOptions) -> Vec<String> {
    let existing: Vec<&str> = options.dims.iter().filter(|d| !d.is_new()).map(|d| d.name.as_str()).collect();
    let skip = coordinate_like(f);
    let mut out: Vec<String> = f
        .arrays
        .iter()
        .filter(|a| !skip.contains(&a.path))
        .filter(|a| {
            let names = a.metadata.dimension_names.as_deref().unwrap_or_default();
            if existing.is_empty() {
                !names.is_empty()
            } else {
                names.iter().any(|n| existing.contains(&n.as_str()))
            }
        })
        .map(|a| a.path.clone())
        .collect();
    out.sort();
    out
}

/// Groups of files (indices) with equal data-variable sets, in the order of their sorted sets.
/// Sets that share a variable but differ are one group with a missing variable: an error, or with
/// `drop_missing` the variables not in every file are removed (with a warning).
fn group_files(
    files: &mut [VirtualDataset],
    options: &CombineOptions,
    warnings: &mut Vec<ScanWarning>,
) -> Result<Vec<Group>, CombineError> {
    let sets: Vec<Vec<String>> = files.iter().map(|f| data_variables(f, options)).collect();
    let mut groups = Vec::new();
    for members in components(&sets) {
        let union_set: Vec<String> = {
            let mut all: Vec<String> = members.iter().flat_map(|&i| sets[i].clone()).collect();
            all.sort();
            all.dedup();
            all
        };
        let mut kept = Vec::new();
        for v in &union_set {
            let lacking = members.iter().find(|&&i| !sets[i].contains(v));
            let holder = members.iter().find(|&&i| sets[i].contains(v)).copied().unwrap_or(members[0]);
            match lacking {
                None => kept.push(v.clone()),
                Some(&i) if options.drop_missing => {
                    warnings.push(ScanWarning {
                        file: location(&files[i]),
                        variable: v.clone(),
                        message: format!(
                            "left out: missing from this file but present in {}",
                            location(&files[holder])
                        ),
                    });
                    for &m in &members {
                        files[m].arrays.retain(|a| a.path != *v);
                    }
                }
                Some(&i) => {
                    return Err(CombineError::MissingVariable {
                        file: location(&files[i]),
                        variable: v.clone(),
                        other: location(&files[holder]),
                    })
                }
            }
        }
        groups.push((members, kept));
    }
    groups.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(groups)
}

/// Files (indices) whose variable sets share a variable, transitively.
fn components(sets: &[Vec<String>]) -> Vec<Vec<usize>> {
    let mut component: Vec<usize> = (0..sets.len()).collect();
    let mut by_variable: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, set) in sets.iter().enumerate() {
        for v in set {
            match by_variable.get(v.as_str()) {
                Some(&j) => union(&mut component, i, j),
                None => {
                    by_variable.insert(v, i);
                }
            }
        }
    }
    let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..sets.len() {
        let root = find(&mut component, i);
        out.entry(root).or_default().push(i);
    }
    out.into_values().collect()
}

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb)] = ra.min(rb);
    }
}

/// The variables of a group, in the first placed file's order; missing ones are an error or dropped.
fn variable_paths(
    files: &[&VirtualDataset],
    members: &[(usize, u32)],
    options: &CombineOptions,
    warnings: &mut Vec<ScanWarning>,
) -> Result<Vec<String>, CombineError> {
    let mut all: Vec<String> = Vec::new();
    for &(i, _) in members {
        for a in &files[i].arrays {
            if !all.contains(&a.path) {
                all.push(a.path.clone());
            }
        }
    }
    let mut kept = Vec::with_capacity(all.len());
    for path in all {
        let holder = members.iter().find(|m| files[m.0].array(&path).is_some()).map(|m| location(files[m.0]));
        match members.iter().find(|m| files[m.0].array(&path).is_none()) {
            None => kept.push(path),
            Some(m) if options.drop_missing => warnings.push(ScanWarning {
                file: location(files[m.0]),
                variable: path,
                message: format!("left out: missing from this file but present in {}", holder.unwrap_or_default()),
            }),
            Some(m) => {
                return Err(CombineError::MissingVariable {
                    file: location(files[m.0]),
                    variable: path,
                    other: holder.unwrap_or_default(),
                })
            }
        }
    }
    Ok(kept)
}

/// Builds every array of one group.
fn group_arrays(
    files: &[&VirtualDataset],
    tables: &mut [Vec<ChunkTable>],
    placed: Layout,
    members: Vec<(usize, u32)>,
    data_vars: &[String],
    options: &CombineOptions,
    warnings: &mut Vec<ScanWarning>,
) -> Result<GroupResult, CombineError> {
    let paths = variable_paths(files, &members, options, warnings)?;
    let locations: Vec<String> = files.iter().map(|f| location(f)).collect();
    let first = files[members[0].0];
    let coordinates = coordinate_like(first);
    let mut arrays = Vec::with_capacity(paths.len());
    let mut kinds = BTreeMap::new();
    for path in &paths {
        let names = first.array(path).and_then(|a| a.metadata.dimension_names.clone()).unwrap_or_default();
        let is_data = data_vars.contains(path);
        let mut axes = Vec::new();
        let mut dims = Vec::new();
        for (k, d) in options.dims.iter().enumerate() {
            if d.is_new() && is_data {
                axes.push(Axis::New { name: d.name.clone(), count: placed.counts[k] as u64 });
                dims.push(k);
            } else if let Some(axis) = names.iter().position(|n| *n == d.name).filter(|_| !d.is_new()) {
                axes.push(Axis::Existing { axis, segments: placed.counts[k] });
                dims.push(k);
            }
        }
        let first_row = |i: usize| options.dims.iter().enumerate().all(|(k, d)| !d.is_new() || placed.pos[i][k] == 0);
        let parts: Vec<Part<'_>> = members
            .iter()
            .filter_map(|&(i, source)| {
                let index = files[i].arrays.iter().position(|a| a.path == *path)?;
                // Taken from every member: the tables of files that are not parts are dropped here.
                let table = tables[i].get_mut(index).map(std::mem::take).unwrap_or_default();
                if !(is_data || axes.is_empty() || first_row(i)) {
                    return None;
                }
                Some(Part {
                    array: &files[i].arrays[index],
                    table,
                    location: &locations[i],
                    source,
                    pos: dims.iter().map(|&k| placed.pos[i][k]).collect(),
                })
            })
            .collect();
        let time_like = coordinates.contains(path) && !axes.is_empty();
        let attrs: Vec<_> = parts.iter().map(|p| (&p.array.metadata.attributes, p.location)).collect();
        check_meaning(path, &attrs, time_like)?;
        let (array, kind) = if axes.is_empty() {
            (take_first(parts, options.take_first.contains(path))?, Kind::TakenFirst)
        } else {
            (concat_array(parts, &axes)?, if is_data { Kind::Data } else { Kind::Coordinate })
        };
        kinds.insert(path.clone(), kind);
        arrays.push(array);
    }
    let mut reencoded = Vec::new();
    for plan in &placed.reencode {
        reencoded.extend(reencode::apply(&mut arrays, plan)?);
    }
    let paths = arrays.iter().map(|a| a.path.clone()).collect();
    Ok(GroupResult { arrays, paths, kinds, layout: placed, members, reencoded })
}

/// All coordinate values of `dim` in a group, concatenated, with the first position's units.
fn flat_coordinate(layout: &Layout, dim: &str, bounds: bool) -> Option<(Vec<f64>, Option<String>)> {
    let segments = layout.coordinates.get(dim)?;
    let values = segments
        .iter()
        .flat_map(
            |c| if bounds { c.bounds.as_ref().map(|b| b.1.to_vec()).unwrap_or_default() } else { c.values.to_vec() },
        )
        .collect();
    Some((values, segments.first().and_then(|c| c.units.clone())))
}

/// The arrays of every group, shared ones checked equal and kept once.
fn merge_groups(
    files: &[VirtualDataset],
    results: &mut [(Vec<usize>, GroupResult)],
    options: &CombineOptions,
) -> Result<Vec<VirtualArray>, CombineError> {
    // The arrays move out of the results (which the checks still read for layouts and members).
    let arrays: Vec<Vec<VirtualArray>> = results.iter_mut().map(|(_, r)| std::mem::take(&mut r.arrays)).collect();
    let mut out: Vec<VirtualArray> = Vec::new();
    let mut owner: BTreeMap<String, (usize, Kind)> = BTreeMap::new();
    let ctx = Merging { files, results, options };
    for (g, group_arrays) in arrays.into_iter().enumerate() {
        for array in group_arrays {
            let kind = results[g].1.kinds[&array.path];
            match owner.get(&array.path) {
                None => {
                    owner.insert(array.path.clone(), (g, kind));
                    out.push(array);
                }
                Some(&(h, held_kind)) => {
                    if let Some(held) = out.iter().find(|a| a.path == array.path) {
                        ctx.check_shared((held, h, held_kind), (&array, g, kind))?;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// What checking an array shared by two groups needs.
struct Merging<'a> {
    files: &'a [VirtualDataset],
    results: &'a [(Vec<usize>, GroupResult)],
    options: &'a CombineOptions,
}

impl Merging<'_> {
    /// The first placed file of group `g`.
    fn first_location(&self, g: usize) -> String {
        let (group, result) = &self.results[g];
        result.members.first().map(|m| location(&self.files[group[m.0]])).unwrap_or_default()
    }

    /// Checks `array` (group `g`) against the `held` one (group `h`): no data variable in two groups;
    /// same shape, type, meaning attributes and values.
    fn check_shared(
        &self,
        (held, h, held_kind): (&VirtualArray, usize, Kind),
        (array, g, kind): (&VirtualArray, usize, Kind),
    ) -> Result<(), CombineError> {
        let (held_at, here) = (self.first_location(h), self.first_location(g));
        if kind == Kind::Data || held_kind == Kind::Data {
            return Err(CombineError::TwoGroups { file: here, variable: array.path.clone(), other: held_at });
        }
        let mismatch = |what: String, take_first_possible: bool| CombineError::Mismatch {
            file: here.clone(),
            variable: array.path.clone(),
            what,
            first: held_at.clone(),
            take_first_possible,
        };
        let (a, b) = (&array.metadata, &held.metadata);
        if a.shape() != b.shape() || a.data_type != b.data_type {
            let what = format!("shape {:?} {} (other files: {:?} {})", a.shape(), a.data_type, b.shape(), b.data_type);
            return Err(mismatch(what, false));
        }
        let attrs = [(&b.attributes, held_at.as_str()), (&a.attributes, here.as_str())];
        check_meaning(&array.path, &attrs, kind == Kind::Coordinate)?;
        let same = match kind {
            Kind::Coordinate => same_coordinate_values(
                &self.results[h].1.layout,
                &self.results[g].1.layout,
                &array.path,
                self.files,
                self.results,
                g,
            ),
            _ => {
                !matches!((held.digest, array.digest), (Some(x), Some(y)) if x != y)
                    || self.options.take_first.contains(&array.path)
            }
        };
        if same {
            return Ok(());
        }
        Err(mismatch("its data".into(), kind == Kind::TakenFirst))
    }
}

/// Whether a coordinate (or bounds) array shared by two groups has the same values in both.
fn same_coordinate_values(
    a: &Layout,
    b: &Layout,
    path: &str,
    files: &[VirtualDataset],
    results: &[(Vec<usize>, GroupResult)],
    g: usize,
) -> bool {
    let (group, result) = &results[g];
    let first = result.members.first().map(|m| &files[group[m.0]]);
    let bounds_of = first
        .and_then(|f| f.concat.iter().find(|c| c.bounds.as_ref().is_some_and(|b| b.0 == path)))
        .map(|c| c.dim.clone());
    let (dim, bounds) = match bounds_of {
        Some(dim) => (dim, true),
        None => (path.to_string(), false),
    };
    match (flat_coordinate(a, &dim, bounds), flat_coordinate(b, &dim, bounds)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => true,
        _ => false,
    }
}

/// Provenance: dimensions, every file's box and arrays, gaps and re-encodings.
fn provenance(results: &[(Vec<usize>, GroupResult)], options: &CombineOptions) -> Provenance {
    let mut boxes = Vec::new();
    let mut gaps = Vec::new();
    let mut reencoded = Vec::new();
    let mut units = None;
    let mut owned_by: BTreeMap<&str, usize> = BTreeMap::new();
    for (g, (_, result)) in results.iter().enumerate() {
        for path in &result.paths {
            owned_by.entry(path.as_str()).or_insert(g);
        }
    }
    for (g, (_, result)) in results.iter().enumerate() {
        boxes.extend(group_boxes(result, |path| owned_by.get(path) == Some(&g), options));
        gaps.extend(result.layout.gaps.iter().cloned());
        if let Some(plan) = result.layout.reencode.first() {
            units.get_or_insert(plan.units.clone());
        }
        reencoded.extend(result.reencoded.iter().filter(|p| owned_by.get(p.as_str()) == Some(&g)).cloned());
    }
    gaps.dedup();
    let single = (options.dims.len() == 1 && !options.dims[0].is_new()).then(|| options.dims[0].name.clone());
    let parts = match &single {
        Some(_) => {
            boxes.iter().map(|b| SourcePart { source: b.source, start: b.ranges[0].0, length: b.ranges[0].1 }).collect()
        }
        None => Vec::new(),
    };
    Provenance {
        concat_dim: single,
        parts,
        concat_dims: options.dims.iter().map(|d| ConcatDimInfo { name: d.name.clone(), key: d.key_text() }).collect(),
        boxes,
        gaps,
        reencoded,
        units,
        recipe: None,
    }
}

/// Every file's box in one group, with the arrays (of those `kept`) whose values there come from it.
fn group_boxes(result: &GroupResult, kept: impl Fn(&str) -> bool, options: &CombineOptions) -> Vec<SourceBox> {
    let placed = &result.layout;
    // Per dimension, the start of every position.
    let starts: Vec<Vec<u64>> = placed
        .lengths
        .iter()
        .map(|l| l.iter().scan(0u64, |acc, &n| Some(std::mem::replace(acc, *acc + n))).collect())
        .collect();
    let mut boxes = Vec::with_capacity(result.members.len());
    for (n, &(i, source)) in result.members.iter().enumerate() {
        let pos = &placed.pos[i];
        let ranges = (0..options.dims.len()).map(|k| (starts[k][pos[k]], placed.lengths[k][pos[k]])).collect();
        let first_row = options.dims.iter().enumerate().all(|(k, d)| !d.is_new() || pos[k] == 0);
        let arrays = result
            .paths
            .iter()
            .filter(|path| kept(path))
            .filter(|path| match result.kinds[*path] {
                Kind::Data => true,
                Kind::Coordinate => first_row,
                Kind::TakenFirst => n == 0,
            })
            .cloned()
            .collect();
        boxes.push(SourceBox { source, ranges, arrays });
    }
    boxes
}

//! Placing the files of one group in the hypercube: positions along new dimensions (keys) and
//! existing ones (coordinate segments), completeness, and the per-dimension coordinate checks.

use std::collections::{BTreeMap, HashMap};

use super::keys::NewAxis;
use super::order::{check_monotonic, check_overlaps, instants, natural_cmp, plan, Coord, KeySpan, ReencodePlan};
use super::{location, CombineError, CombineOptions};
use crate::dataset::{ConcatCoordinate, VirtualDataset};

/// Where the files of one group go.
pub(crate) struct Layout {
    /// Per file of the group: its position along each of the options' dimensions.
    pub(crate) pos: Vec<Vec<usize>>,
    /// Per dimension: the number of positions.
    pub(crate) counts: Vec<usize>,
    /// Per dimension: each position's length (1 for new dimensions).
    pub(crate) lengths: Vec<Vec<u64>>,
    /// Gaps between consecutive files along existing dimensions, described.
    pub(crate) gaps: Vec<String>,
    /// Time coordinates whose units differ between positions.
    pub(crate) reencode: Vec<ReencodePlan>,
    /// Per existing dimension with a coordinate: each position's coordinate, in order.
    pub(crate) coordinates: BTreeMap<String, Vec<ConcatCoordinate>>,
}

/// Length of a file along `dim`, from the first array that has it.
pub(crate) fn length_along(f: &VirtualDataset, dim: &str) -> Option<u64> {
    f.arrays.iter().find_map(|a| {
        let names = a.metadata.dimension_names.as_ref()?;
        let axis = names.iter().position(|n| n == dim)?;
        a.metadata.shape().get(axis).copied()
    })
}

/// Places `files` (one group). `new_axes[k]` is set for new dimensions, indexed by `ids` (the files'
/// indices in the list the axes were built from).
pub(crate) fn layout(
    files: &[&VirtualDataset],
    ids: &[usize],
    new_axes: &[Option<NewAxis>],
    options: &CombineOptions,
) -> Result<Layout, CombineError> {
    let n = options.dims.len();
    let mut pos = vec![vec![0usize; n]; files.len()];
    let mut counts = vec![1usize; n];
    let mut lengths = vec![vec![1u64]; n];
    for (k, axis) in new_axes.iter().enumerate() {
        if let Some(axis) = axis {
            counts[k] = axis.keys.len();
            lengths[k] = vec![1; axis.keys.len()];
            for (i, &id) in ids.iter().enumerate() {
                pos[i][k] = axis.index[id];
            }
        }
    }
    let mut out = Layout { pos, counts, lengths, gaps: Vec::new(), reencode: Vec::new(), coordinates: BTreeMap::new() };
    let row_key = |p: &[usize]| -> Vec<usize> { (0..n).filter(|&k| new_axes[k].is_some()).map(|k| p[k]).collect() };
    let row0: Vec<usize> = (0..files.len()).filter(|&i| row_key(&out.pos[i]).iter().all(|&x| x == 0)).collect();
    for (k, dim) in options.dims.iter().enumerate().filter(|(k, _)| new_axes[*k].is_none()) {
        place_existing(files, &row0, k, &dim.name, options, &mut out)?;
    }
    check_complete(files, new_axes, options, &out)?;
    Ok(out)
}

/// Positions along existing dimension `k`: segments from the first row's files, matched in the others.
fn place_existing(
    files: &[&VirtualDataset],
    row0: &[usize],
    k: usize,
    dim: &str,
    options: &CombineOptions,
    out: &mut Layout,
) -> Result<(), CombineError> {
    for f in files {
        if length_along(f, dim).is_none() {
            return Err(CombineError::NoDimension { file: location(f), dim: dim.to_string() });
        }
    }
    let locations: Vec<String> = files.iter().map(|f| location(f)).collect();
    let coords: Vec<Option<&ConcatCoordinate>> = files.iter().map(|f| f.concat.iter().find(|c| c.dim == dim)).collect();
    if coords.iter().any(Option::is_none) {
        return place_by_path(files, &locations, &coords, k, dim, options, out);
    }
    let coords: Vec<Coord<'_>> = coords
        .iter()
        .zip(&locations)
        .filter_map(|(c, l)| c.map(|coordinate| Coord { location: l, coordinate }))
        .collect();
    let sign = direction(&coords, dim)?;
    // Segments: the first row's distinct coordinates, ordered by their first value.
    let row_coords: Vec<Coord<'_>> = row0.iter().map(|&i| coords[i]).collect();
    let keyed = instants(&row_coords, sign)?;
    // Candidates by (first value, length), so that placing n files costs O(n), not O(n^2).
    let mut by_start: HashMap<(Option<u64>, usize), Vec<usize>> = HashMap::new();
    let mut reps: Vec<usize> = Vec::new();
    for (j, &i) in row0.iter().enumerate() {
        let same = by_start.entry(start_key(coords[i].coordinate)).or_default();
        if !same.iter().any(|&r| same_coordinate(coords[row0[r]].coordinate, coords[i].coordinate)) {
            same.push(j);
            reps.push(j);
        }
    }
    reps.sort_by(|&a, &b| {
        let key = |j: usize| keyed.keys[j].first;
        match (key(a), key(b)) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            (x, y) => x.is_some().cmp(&y.is_some()).reverse(),
        }
        .then_with(|| natural_cmp(&locations[row0[a]], &locations[row0[b]]))
    });
    let rep_locations: Vec<&str> = reps.iter().map(|&j| locations[row0[j]].as_str()).collect();
    let rep_keys: Vec<KeySpan> = reps.iter().map(|&j| keyed.keys[j]).collect();
    check_overlaps(&rep_locations, &rep_keys, dim, &mut out.gaps)?;
    let segments: Vec<&ConcatCoordinate> = reps.iter().map(|&j| coords[row0[j]].coordinate).collect();
    if keyed.units_differ {
        let ordered: Vec<Coord<'_>> = reps.iter().map(|&j| row_coords[j]).collect();
        out.reencode.push(plan(&ordered)?);
    }
    let mut segment_of: HashMap<(Option<u64>, usize), Vec<usize>> = HashMap::new();
    for (s, segment) in segments.iter().enumerate() {
        segment_of.entry(start_key(segment)).or_default().push(s);
    }
    for (i, c) in coords.iter().enumerate() {
        let candidates = segment_of.get(&start_key(c.coordinate)).map_or(&[][..], Vec::as_slice);
        match candidates.iter().copied().find(|&s| same_coordinate(segments[s], c.coordinate)) {
            Some(s) => out.pos[i][k] = s,
            None => return Err(axis_differs(files, i, c.coordinate, &segments, &rep_locations)),
        }
    }
    out.counts[k] = segments.len();
    out.lengths[k] = segments.iter().map(|s| s.values.len() as u64).collect();
    out.coordinates.insert(dim.to_string(), segments.into_iter().cloned().collect());
    Ok(())
}

/// Checks every file's coordinate (no NaN, strictly monotonic) and that all run the same way; returns
/// 1.0 for increasing, -1.0 for decreasing.
fn direction(coords: &[Coord<'_>], dim: &str) -> Result<f64, CombineError> {
    let mut direction = 0i8;
    let mut setter = 0;
    for (i, c) in coords.iter().enumerate() {
        let d = check_monotonic(*c)?;
        if d != 0 && direction != 0 && d != direction {
            let problem = format!("coordinate runs the other way than in {}", coords[setter].location);
            return Err(CombineError::Coordinate { file: c.location.to_string(), dim: dim.to_string(), problem });
        }
        if d != 0 && direction == 0 {
            (direction, setter) = (d, i);
        }
    }
    Ok(if direction < 0 { -1.0 } else { 1.0 })
}

/// Without coordinate values (one existing dimension only): each file is a position, in natural
/// path order.
fn place_by_path(
    files: &[&VirtualDataset],
    locations: &[String],
    coords: &[Option<&ConcatCoordinate>],
    k: usize,
    dim: &str,
    options: &CombineOptions,
    out: &mut Layout,
) -> Result<(), CombineError> {
    if options.dims.len() > 1 {
        let i = coords.iter().position(Option::is_none).unwrap_or(0);
        let problem =
            "no coordinate variable: files can be placed along several dimensions only by coordinate values".into();
        return Err(CombineError::Coordinate { file: locations[i].clone(), dim: dim.to_string(), problem });
    }
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| natural_cmp(&locations[a], &locations[b]));
    for (s, &i) in order.iter().enumerate() {
        out.pos[i][k] = s;
    }
    out.counts[k] = files.len();
    out.lengths[k] = order.iter().map(|&i| length_along(files[i], dim).unwrap_or(0)).collect();
    Ok(())
}

/// A coordinate's first value (bits) and length: equal for equal coordinates.
fn start_key(c: &ConcatCoordinate) -> (Option<u64>, usize) {
    (c.values.first().map(f64::to_bits), c.values.len())
}

fn same_coordinate(a: &ConcatCoordinate, b: &ConcatCoordinate) -> bool {
    a.units == b.units && a.calendar == b.calendar && a.values == b.values && a.bounds == b.bounds
}

/// `member=r1i1p1f1` for the new dimensions of a file's position.
fn describe_row(p: &[usize], options: &CombineOptions, new_keys: &dyn Fn(usize, usize) -> Option<String>) -> String {
    options
        .dims
        .iter()
        .enumerate()
        .filter_map(|(k, d)| new_keys(k, p[k]).map(|key| format!("{}={key}", d.name)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `time=[0.5 .. 364.5] (days since 2000-01-01)`.
fn describe_range(dim: &str, c: &ConcatCoordinate) -> String {
    let (first, last) = (c.values.first().unwrap_or(f64::NAN), c.values.last().unwrap_or(f64::NAN));
    let units = c.units.as_deref().map(|u| format!(" ({u})")).unwrap_or_default();
    format!("{dim}=[{first} .. {last}]{units}")
}

/// The error for a file whose coordinate matches no position of the first row.
fn axis_differs(
    files: &[&VirtualDataset],
    i: usize,
    c: &ConcatCoordinate,
    segments: &[&ConcatCoordinate],
    rep_locations: &[&str],
) -> CombineError {
    let overlapping = segments.iter().position(|s| {
        let (a0, a1) = (s.values.first(), s.values.last());
        let (b0, b1) = (c.values.first(), c.values.last());
        matches!((a0, a1, b0, b1), (Some(a0), Some(a1), Some(b0), Some(b1)) if a0.min(a1) <= b0.max(b1) && b0.min(b1) <= a0.max(a1))
    });
    let compared = overlapping
        .map_or_else(String::new, |s| format!("; {} has {}", rep_locations[s], describe_range(&c.dim, segments[s])));
    CombineError::Incomplete {
        detail: format!(
            "{}: {} matches no file of the first position along the other dimensions{compared} (their {} axes must be identical)",
            location(files[i]),
            describe_range(&c.dim, c),
            c.dim
        ),
    }
}

/// Every position of the hypercube holds exactly one file of the group.
fn check_complete(
    files: &[&VirtualDataset],
    new_axes: &[Option<NewAxis>],
    options: &CombineOptions,
    out: &Layout,
) -> Result<(), CombineError> {
    let mut slots: BTreeMap<&[usize], usize> = BTreeMap::new();
    for (i, p) in out.pos.iter().enumerate() {
        if let Some(&other) = slots.get(p.as_slice()) {
            return Err(CombineError::Incomplete {
                detail: format!(
                    "{} and {} are at the same position ({})",
                    location(files[other]),
                    location(files[i]),
                    describe_position(p, new_axes, options, out)
                ),
            });
        }
        slots.insert(p, i);
    }
    let total: usize = out.counts.iter().product();
    if slots.len() == total {
        return Ok(());
    }
    let mut p = vec![0usize; out.counts.len()];
    loop {
        if !slots.contains_key(p.as_slice()) {
            let witness =
                slots.iter().find(|(q, _)| q.iter().zip(&p).zip(new_axes).any(|((a, b), ax)| ax.is_none() && a == b));
            let seen = witness.map_or_else(String::new, |(q, &i)| {
                format!(" (present for {}: {})", describe_position(q, new_axes, options, out), location(files[i]))
            });
            return Err(CombineError::Incomplete {
                detail: format!("no file for {}{seen}", describe_position(&p, new_axes, options, out)),
            });
        }
        if !step(&mut p, &out.counts) {
            return Ok(());
        }
    }
}

/// `member=r2i1p1f1, time=[730.5 .. 1095.5] (days since 2000-01-01)`.
fn describe_position(p: &[usize], new_axes: &[Option<NewAxis>], options: &CombineOptions, out: &Layout) -> String {
    let keys = |k: usize, i: usize| new_axes[k].as_ref().and_then(|a| a.keys.get(i).cloned());
    let mut parts = vec![describe_row(p, options, &keys)];
    for (k, d) in options.dims.iter().enumerate().filter(|(k, _)| new_axes[*k].is_none()) {
        match out.coordinates.get(&d.name).and_then(|c| c.get(p[k])) {
            Some(c) => parts.push(describe_range(&d.name, c)),
            None => parts.push(format!("{} position {}", d.name, p[k])),
        }
    }
    parts.retain(|s| !s.is_empty());
    parts.join(", ")
}

/// Row-major odometer step; false after the last position.
fn step(p: &mut [usize], counts: &[usize]) -> bool {
    for d in (0..p.len()).rev() {
        p[d] += 1;
        if p[d] < counts[d] {
            return true;
        }
        p[d] = 0;
    }
    false
}

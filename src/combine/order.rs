//! Ordering files along the concatenation dimension, and the checks on its coordinate: calendars,
//! units (deciding whether times are re-encoded), overlaps and gaps.

use std::cmp::Ordering;

use super::CombineError;
use crate::cftime::{Calendar, TimeUnits};
use crate::dataset::{ConcatCoordinate, VirtualDataset};

/// Files in concatenation order with what the combine step needs to know about their coordinate.
pub(crate) struct Ordered {
    pub(crate) files: Vec<VirtualDataset>,
    /// Length of each file along the dimension.
    pub(crate) lengths: Vec<u64>,
    /// Gaps found between consecutive files, described.
    pub(crate) gaps: Vec<String>,
    /// Set when the files' time units differ.
    pub(crate) reencode: Option<ReencodePlan>,
}

/// How to re-encode a time coordinate whose units differ between files.
pub(crate) struct ReencodePlan {
    /// The coordinate variable (the dimension's name).
    pub(crate) dim: String,
    /// Target units text and calendar (the first file's).
    pub(crate) units: (String, Option<String>),
    /// Target units, parsed.
    pub(crate) target: TimeUnits,
    /// Each file's units, in order.
    pub(crate) per_file: Vec<TimeUnits>,
    /// The bounds variable, when the coordinate names one.
    pub(crate) bounds: Option<String>,
}

fn location(f: &VirtualDataset) -> String {
    f.sources.get(0).map(|s| s.location.clone()).unwrap_or_default()
}

/// Length of a file along `dim`, from the first array that has it.
fn length_along(f: &VirtualDataset, dim: &str) -> Option<u64> {
    f.arrays.iter().find_map(|a| {
        let names = a.metadata.dimension_names.as_ref()?;
        let axis = names.iter().position(|n| n == dim)?;
        a.metadata.shape().get(axis).copied()
    })
}

/// Orders `files` along `dim` and checks their coordinate.
pub(crate) fn order_files(mut files: Vec<VirtualDataset>, dim: &str) -> Result<Ordered, CombineError> {
    for f in &files {
        if length_along(f, dim).is_none() {
            return Err(CombineError::NoDimension { file: location(f), dim: dim.to_string() });
        }
    }
    let mut reencode = None;
    let mut gaps = Vec::new();
    if files.iter().all(|f| f.concat.is_some()) {
        let keyed = instants(&files, dim)?;
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by(|&a, &b| compare_keys(keyed.keys[a].first(), keyed.keys[b].first(), &files[a], &files[b]));
        check_overlaps(&files, &keyed.keys, &order, dim, &mut gaps)?;
        let mut slots: Vec<Option<VirtualDataset>> = files.into_iter().map(Some).collect();
        files = order.iter().filter_map(|&i| slots[i].take()).collect();
        if keyed.units_differ {
            reencode = Some(plan(&files, dim)?);
        }
    } else {
        files.sort_by(|a, b| natural_cmp(&location(a), &location(b)));
    }
    let lengths = files.iter().map(|f| length_along(f, dim).unwrap_or(0)).collect();
    Ok(Ordered { files, lengths, gaps, reencode })
}

struct Keyed {
    /// Per file (input order): coordinate values as comparable keys (instants when units differ).
    keys: Vec<Vec<f64>>,
    units_differ: bool,
}

/// Keys for ordering: raw values when every file uses the same units, else decoded instants.
fn instants(files: &[VirtualDataset], dim: &str) -> Result<Keyed, CombineError> {
    let coords: Vec<&ConcatCoordinate> = files.iter().filter_map(|f| f.concat.as_ref()).collect();
    let first_calendar =
        Calendar::parse(coords[0].calendar.as_deref()).map_err(|p| coordinate_error(&files[0], dim, p))?;
    for (f, c) in files.iter().zip(&coords).skip(1) {
        let cal = Calendar::parse(c.calendar.as_deref()).map_err(|p| coordinate_error(f, dim, p))?;
        if cal != first_calendar {
            let name = |c: &ConcatCoordinate| c.calendar.clone().unwrap_or_else(|| "standard".into());
            let problem =
                format!("calendar {:?} differs from {:?} in {}", name(c), name(coords[0]), location(&files[0]));
            return Err(coordinate_error(f, dim, problem));
        }
    }
    let units_differ = coords.iter().any(|c| c.units != coords[0].units);
    let mut keys = Vec::with_capacity(files.len());
    for (f, c) in files.iter().zip(&coords) {
        if units_differ {
            let units = parse_units(f, c, dim)?;
            keys.push(c.values.iter().map(|v| units.instant(*v)).collect());
        } else {
            keys.push(c.values.clone());
        }
    }
    Ok(Keyed { keys, units_differ })
}

fn coordinate_error(f: &VirtualDataset, dim: &str, problem: String) -> CombineError {
    CombineError::Coordinate { file: location(f), dim: dim.to_string(), problem }
}

fn parse_units(f: &VirtualDataset, c: &ConcatCoordinate, dim: &str) -> Result<TimeUnits, CombineError> {
    let units = c
        .units
        .as_deref()
        .ok_or_else(|| coordinate_error(f, dim, "units differ between files and this file has none".into()))?;
    let calendar = Calendar::parse(c.calendar.as_deref()).map_err(|p| coordinate_error(f, dim, p))?;
    TimeUnits::parse(units, calendar)
        .map_err(|p| coordinate_error(f, dim, format!("units differ between files and cannot be converted: {p}")))
}

fn plan(files: &[VirtualDataset], dim: &str) -> Result<ReencodePlan, CombineError> {
    let mut per_file = Vec::with_capacity(files.len());
    for f in files {
        let c = f.concat.as_ref().ok_or_else(|| coordinate_error(f, dim, "no coordinate values".into()))?;
        per_file.push(parse_units(f, c, dim)?);
    }
    let first =
        files[0].concat.clone().ok_or_else(|| coordinate_error(&files[0], dim, "no coordinate values".into()))?;
    Ok(ReencodePlan {
        dim: dim.to_string(),
        units: (first.units.unwrap_or_default(), first.calendar),
        target: per_file[0],
        per_file,
        bounds: first.bounds.map(|(name, _)| name),
    })
}

/// Files with values first by their first value; files without values after, by path.
fn compare_keys(a: Option<&f64>, b: Option<&f64>, fa: &VirtualDataset, fb: &VirtualDataset) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.total_cmp(y).then_with(|| natural_cmp(&location(fa), &location(fb))),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => natural_cmp(&location(fa), &location(fb)),
    }
}

/// Errors on overlapping or repeated values between consecutive files; records gaps larger than 1.5
/// typical steps.
fn check_overlaps(
    files: &[VirtualDataset],
    keys: &[Vec<f64>],
    order: &[usize],
    dim: &str,
    gaps: &mut Vec<String>,
) -> Result<(), CombineError> {
    let mut steps: Vec<f64> = keys.iter().flat_map(|k| k.windows(2).map(|w| w[1] - w[0])).collect();
    steps.sort_by(f64::total_cmp);
    let step = steps.get(steps.len() / 2).copied();
    let with_values: Vec<usize> = order.iter().copied().filter(|&i| !keys[i].is_empty()).collect();
    for pair in with_values.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (last, first) = (keys[a][keys[a].len() - 1], keys[b][0]);
        if first <= last {
            return Err(CombineError::Overlap {
                file: location(&files[b]),
                previous: location(&files[a]),
                dim: dim.to_string(),
                detail: format!("its first value {first} is not after the other's last value {last}"),
            });
        }
        if let Some(step) = step.filter(|s| *s > 0.0) {
            if first - last > 1.5 * step {
                gaps.push(format!(
                    "{} values missing between {} and {}",
                    ((first - last) / step).round() as u64 - 1,
                    location(&files[a]),
                    location(&files[b])
                ));
            }
        }
    }
    Ok(())
}

/// Orders strings with digit runs compared as numbers (`f2` before `f10`).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.chars().next(), b.chars().next()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.len() - a.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let db = b.len() - b.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let (na, nb) = (a[..da].trim_start_matches('0'), b[..db].trim_start_matches('0'));
                let ord = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
                if ord != Ordering::Equal {
                    return ord;
                }
                (a, b) = (&a[da..], &b[db..]);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                (a, b) = (&a[x.len_utf8()..], &b[y.len_utf8()..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_compares_numbers() {
        let mut v = vec!["f10.nc", "f2.nc", "f1.nc", "f02b.nc"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["f1.nc", "f2.nc", "f02b.nc", "f10.nc"]);
    }
}

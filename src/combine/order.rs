//! Checks on the coordinate of an existing concatenation dimension: NaN and monotonicity inside a
//! file, calendars, units (deciding whether times are re-encoded), overlaps and gaps between files.

use std::cmp::Ordering;

use super::CombineError;
use crate::cftime::{Calendar, TimeUnits};
use crate::dataset::ConcatCoordinate;

/// One file's coordinate along an existing dimension, with the file's location for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Coord<'a> {
    pub(crate) location: &'a str,
    pub(crate) coordinate: &'a ConcatCoordinate,
}

/// How to re-encode a time coordinate whose units differ between files.
pub(crate) struct ReencodePlan {
    /// The coordinate variable (the dimension's name).
    pub(crate) dim: String,
    /// Target units text and calendar (the first file's).
    pub(crate) units: (String, Option<String>),
    /// Target units, parsed.
    pub(crate) target: TimeUnits,
    /// Each segment's units, in order.
    pub(crate) per_file: Vec<TimeUnits>,
    /// Each segment's coordinate values and bounds values, in order.
    pub(crate) values: Vec<(Vec<f64>, Option<Vec<f64>>)>,
    /// The bounds variable, when the coordinate names one.
    pub(crate) bounds: Option<String>,
}

fn coordinate_error(c: Coord<'_>, problem: String) -> CombineError {
    CombineError::Coordinate { file: c.location.to_string(), dim: c.coordinate.dim.clone(), problem }
}

/// True for a CF time coordinate (`units` of the form `<unit> since <date>`): it must increase.
fn is_time(c: &ConcatCoordinate) -> bool {
    c.units.as_deref().is_some_and(|u| u.contains(" since "))
}

/// Checks one file's coordinate: no NaN, strictly monotonic. Returns its direction: 1 increasing,
/// -1 decreasing, 0 for fewer than two values.
pub(crate) fn check_monotonic(c: Coord<'_>) -> Result<i8, CombineError> {
    let values = &c.coordinate.values;
    if let Some(i) = values.iter().position(|v| v.is_nan()) {
        return Err(coordinate_error(c, format!("coordinate value at index {i} is NaN")));
    }
    let direction = match values.windows(2).next() {
        None => return Ok(0),
        Some(w) if w[1] > w[0] => 1,
        Some(_) => -1,
    };
    let bad = values.windows(2).position(|w| if direction > 0 { w[1] <= w[0] } else { w[1] >= w[0] });
    if direction < 0 && is_time(c.coordinate) {
        return Err(coordinate_error(
            c,
            format!("time coordinate is not increasing (index 0: {}, index 1: {})", values[0], values[1]),
        ));
    }
    if let Some(i) = bad {
        let order = if direction > 0 { "increasing" } else { "decreasing" };
        return Err(coordinate_error(
            c,
            format!(
                "coordinate is not strictly {order} (index {i}: {}, index {}: {})",
                values[i],
                i + 1,
                values[i + 1]
            ),
        ));
    }
    Ok(direction)
}

/// Per file: the coordinate values as comparable keys (instants when units differ), and whether
/// the units differ.
pub(crate) struct Keyed {
    pub(crate) keys: Vec<Vec<f64>>,
    pub(crate) units_differ: bool,
}

/// Keys for ordering: raw values when every file uses the same units, else decoded instants.
/// Calendars must agree.
pub(crate) fn instants(coords: &[Coord<'_>]) -> Result<Keyed, CombineError> {
    let first_calendar =
        Calendar::parse(coords[0].coordinate.calendar.as_deref()).map_err(|p| coordinate_error(coords[0], p))?;
    for c in &coords[1..] {
        let cal = Calendar::parse(c.coordinate.calendar.as_deref()).map_err(|p| coordinate_error(*c, p))?;
        if cal != first_calendar {
            let name = |c: &ConcatCoordinate| c.calendar.clone().unwrap_or_else(|| "standard".into());
            let problem = format!(
                "calendar {:?} differs from {:?} in {}",
                name(c.coordinate),
                name(coords[0].coordinate),
                coords[0].location
            );
            return Err(coordinate_error(*c, problem));
        }
    }
    let units_differ = coords.iter().any(|c| c.coordinate.units != coords[0].coordinate.units);
    let mut keys = Vec::with_capacity(coords.len());
    for c in coords {
        if units_differ {
            let units = parse_units(*c)?;
            keys.push(c.coordinate.values.iter().map(|v| units.instant(*v)).collect());
        } else {
            keys.push(c.coordinate.values.clone());
        }
    }
    Ok(Keyed { keys, units_differ })
}

fn parse_units(c: Coord<'_>) -> Result<TimeUnits, CombineError> {
    let units = c
        .coordinate
        .units
        .as_deref()
        .ok_or_else(|| coordinate_error(c, "units differ between files and this file has none".into()))?;
    let calendar = Calendar::parse(c.coordinate.calendar.as_deref()).map_err(|p| coordinate_error(c, p))?;
    TimeUnits::parse(units, calendar)
        .map_err(|p| coordinate_error(c, format!("units differ between files and cannot be converted: {p}")))
}

/// The re-encoding plan for segments (in order) whose units differ.
pub(crate) fn plan(coords: &[Coord<'_>]) -> Result<ReencodePlan, CombineError> {
    let per_file = coords.iter().map(|c| parse_units(*c)).collect::<Result<Vec<_>, _>>()?;
    let first = coords[0].coordinate;
    Ok(ReencodePlan {
        dim: first.dim.clone(),
        units: (first.units.clone().unwrap_or_default(), first.calendar.clone()),
        target: per_file[0],
        per_file,
        values: coords
            .iter()
            .map(|c| (c.coordinate.values.clone(), c.coordinate.bounds.as_ref().map(|b| b.1.clone())))
            .collect(),
        bounds: first.bounds.as_ref().map(|(name, _)| name.clone()),
    })
}

/// Errors on overlapping or repeated values between consecutive segments (`keys` in order, already
/// multiplied by the direction so that they increase); records gaps larger than 1.5 typical steps.
pub(crate) fn check_overlaps(
    locations: &[&str],
    keys: &[Vec<f64>],
    dim: &str,
    gaps: &mut Vec<String>,
) -> Result<(), CombineError> {
    let mut steps: Vec<f64> = keys.iter().flat_map(|k| k.windows(2).map(|w| w[1] - w[0])).collect();
    steps.sort_by(f64::total_cmp);
    let step = steps.get(steps.len() / 2).copied();
    let with_values: Vec<usize> = (0..keys.len()).filter(|&i| !keys[i].is_empty()).collect();
    for pair in with_values.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (last, first) = (keys[a][keys[a].len() - 1], keys[b][0]);
        if first <= last {
            return Err(CombineError::Overlap {
                file: locations[b].to_string(),
                previous: locations[a].to_string(),
                dim: dim.to_string(),
                detail: format!("its first value {} is not after the other's last value {}", first.abs(), last.abs()),
            });
        }
        if let Some(step) = step.filter(|s| *s > 0.0) {
            if first - last > 1.5 * step {
                gaps.push(format!(
                    "{} values missing between {} and {}",
                    ((first - last) / step).round() as u64 - 1,
                    locations[a],
                    locations[b]
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

    fn coordinate(values: Vec<f64>, units: &str) -> ConcatCoordinate {
        ConcatCoordinate { dim: "t".into(), values, units: Some(units.into()), calendar: None, bounds: None }
    }

    #[test]
    fn coordinates_must_be_strictly_monotonic_and_free_of_nan() {
        let check = |values: Vec<f64>, units: &str| {
            let c = coordinate(values, units);
            check_monotonic(Coord { location: "f.nc", coordinate: &c }).map_err(|e| e.to_string())
        };
        assert_eq!(check(vec![1.0, 2.0, 3.0], "days since 2000-01-01"), Ok(1));
        assert_eq!(check(vec![9.0], "days since 2000-01-01"), Ok(0));
        assert_eq!(check(vec![90.0, 60.0, 30.0], "degrees_north"), Ok(-1));
        let reversed = check(vec![3.0, 2.0, 1.0], "days since 2000-01-01").unwrap_err();
        assert!(reversed.contains("f.nc") && reversed.contains("not increasing"), "{reversed}");
        let repeated = check(vec![1.0, 2.0, 2.0], "days since 2000-01-01").unwrap_err();
        assert!(repeated.contains("index 1: 2, index 2: 2"), "{repeated}");
        let nan = check(vec![1.0, f64::NAN, 3.0], "m").unwrap_err();
        assert!(nan.contains("index 1 is NaN"), "{nan}");
    }

    #[test]
    fn natural_order_compares_numbers() {
        let mut v = vec!["f10.nc", "f2.nc", "f1.nc", "f02b.nc"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["f1.nc", "f2.nc", "f02b.nc", "f10.nc"]);
    }
}

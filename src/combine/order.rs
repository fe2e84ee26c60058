//! Checks on the coordinate of an existing concatenation dimension: NaN and monotonicity inside a
//! file, calendars, units (deciding whether times are re-encoded), overlaps and gaps between files.

use std::cmp::Ordering;

use super::CombineError;
use crate::cftime::{Calendar, TimeUnits};
use crate::dataset::{ConcatCoordinate, CoordinateValues};

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
    pub(crate) values: Vec<(CoordinateValues, Option<CoordinateValues>)>,
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
    if let Some(i) = values.iter().position(f64::is_nan) {
        return Err(coordinate_error(c, format!("coordinate value at index {i} is NaN")));
    }
    let direction = match (values.get(0), values.get(1)) {
        (Some(a), Some(b)) if b > a => 1,
        (Some(_), Some(_)) => -1,
        _ => return Ok(0),
    };
    let value = |i: usize| values.get(i).unwrap_or(f64::NAN);
    let bad = values.iter().zip(values.iter().skip(1)).position(|(a, b)| if direction > 0 { b <= a } else { b >= a });
    if direction < 0 && is_time(c.coordinate) {
        return Err(coordinate_error(
            c,
            format!("time coordinate is not increasing (index 0: {}, index 1: {})", value(0), value(1)),
        ));
    }
    if let Some(i) = bad {
        let order = if direction > 0 { "increasing" } else { "decreasing" };
        return Err(coordinate_error(
            c,
            format!("coordinate is not strictly {order} (index {i}: {}, index {}: {})", value(i), i + 1, value(i + 1)),
        ));
    }
    Ok(direction)
}

/// One file's coordinate as ordering keys (multiplied by the direction, so that they increase):
/// its first and last key and its steps, summarised. Not the keys themselves: those would be 8 bytes
/// per value of every file at once.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KeySpan {
    /// The first key (`None` for no values).
    pub(crate) first: Option<f64>,
    /// The last key.
    pub(crate) last: Option<f64>,
    /// Number of steps between consecutive keys (values - 1).
    pub(crate) steps: usize,
    /// Their median.
    pub(crate) median_step: Option<f64>,
}

/// Per file: the span of its coordinate as comparable keys (instants when units differ), and
/// whether the units differ.
pub(crate) struct Keyed {
    pub(crate) keys: Vec<KeySpan>,
    pub(crate) units_differ: bool,
}

/// Keys for ordering: raw values when every file uses the same units, else decoded instants, times
/// `sign` (1 for increasing coordinates, -1 for decreasing). Calendars must agree.
pub(crate) fn instants(coords: &[Coord<'_>], sign: f64) -> Result<Keyed, CombineError> {
    let first_calendar = Calendar::parse(coords[0].coordinate.calendar.as_deref())
        .map_err(|p| coordinate_error(coords[0], p.to_string()))?;
    for c in &coords[1..] {
        let cal = Calendar::parse(c.coordinate.calendar.as_deref()).map_err(|p| coordinate_error(*c, p.to_string()))?;
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
        let units = if units_differ { Some(parse_units(*c)?) } else { None };
        let key = |v: f64| units.map_or(v, |u| u.instant(v)) * sign;
        keys.push(key_span(&c.coordinate.values, key));
    }
    Ok(Keyed { keys, units_differ })
}

/// The [`KeySpan`] of `values` under `key` (the steps of one file are sorted for their median: a
/// file's worth of memory, for a moment).
fn key_span(values: &CoordinateValues, key: impl Fn(f64) -> f64) -> KeySpan {
    let mut steps: Vec<f64> = values.iter().zip(values.iter().skip(1)).map(|(a, b)| key(b) - key(a)).collect();
    steps.sort_by(f64::total_cmp);
    KeySpan {
        first: values.first().map(&key),
        last: values.last().map(&key),
        steps: steps.len(),
        median_step: steps.get(steps.len() / 2).copied(),
    }
}

/// The typical step of `keys`: the median of every file's median step, each counted once per step
/// of its file (the median of all steps when each file's are equal, the everyday case).
fn typical_step(keys: &[KeySpan]) -> Option<f64> {
    let mut medians: Vec<(f64, usize)> = keys.iter().filter_map(|k| Some((k.median_step?, k.steps))).collect();
    medians.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: usize = medians.iter().map(|m| m.1).sum();
    let mut seen = 0;
    medians.into_iter().find_map(|(step, count)| {
        seen += count;
        (seen > total / 2).then_some(step)
    })
}

fn parse_units(c: Coord<'_>) -> Result<TimeUnits, CombineError> {
    let units = c
        .coordinate
        .units
        .as_deref()
        .ok_or_else(|| coordinate_error(c, "units differ between files and this file has none".into()))?;
    let calendar = Calendar::parse(c.coordinate.calendar.as_deref()).map_err(|p| coordinate_error(c, p.to_string()))?;
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
    keys: &[KeySpan],
    dim: &str,
    gaps: &mut Vec<String>,
) -> Result<(), CombineError> {
    let step = typical_step(keys);
    let with_values: Vec<usize> = (0..keys.len()).filter(|&i| keys[i].first.is_some()).collect();
    for pair in with_values.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (Some(last), Some(first)) = (keys[a].last, keys[b].first) else { continue };
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
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
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
        ConcatCoordinate {
            dim: "t".into(),
            values: values.into(),
            units: Some(units.into()),
            calendar: None,
            bounds: None,
        }
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

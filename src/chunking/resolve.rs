//! A [`ChunkLength`] resolved to a dimension's chunk edges over a store (input: the store's reader,
//! the dimension and its extent; output: the edges, summing to the extent).
//!
//! A calendar unit reads the dimension's coordinate variable (the 1-D variable named as the
//! dimension, CF section 4.4: `units` of the form `<unit> since <date>`, `calendar` defaulting to
//! `standard`) and decodes its values with `cftime`; `by:VAR` reads VAR, which must be 1-D along the
//! dimension. Both are read through the store's own reader (decoded, the sources checked against
//! their fingerprints), so they are the values a reader of the store sees.

use super::calendar::{describe_calendar_grid, CalendarEdges, CalendarError};
use super::groups::group_edges;
use super::ChunkLength;
use crate::cftime::{Calendar, TimeUnits};
use crate::read::{ReadError, Store};

/// Why a chunk length gives no edges along a dimension of a store.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EdgesError {
    /// A calendar unit along a dimension without a CF time coordinate.
    #[error("time dimension {dim} has no CF time coordinate ({why}), so {unit} has no meaning along it")]
    NoTimeCoordinate {
        /// The dimension.
        dim: String,
        /// The unit asked for.
        unit: String,
        /// What is missing.
        why: String,
    },
    /// The time coordinate's values are no dates.
    #[error("{dim}: {source}")]
    Calendar {
        /// The dimension.
        dim: String,
        /// Why.
        source: CalendarError,
    },
    /// A grouping variable that is not a 1-D variable along the dimension.
    #[error("by:{var}: {why}")]
    NotAlong {
        /// The variable.
        var: String,
        /// What is wrong.
        why: String,
    },
    /// Reading the coordinate or the grouping variable failed.
    #[error("{0}")]
    Read(#[from] Box<ReadError>),
}

impl From<ReadError> for EdgesError {
    fn from(e: ReadError) -> Self {
        EdgesError::Read(Box::new(e))
    }
}

/// The edges `length` gives along dimension `dim` (extent `extent`) of `store`.
///
/// # Errors
/// [`EdgesError`]: no CF time coordinate for a calendar unit, a grouping variable that is not 1-D
/// along `dim`, values that are no dates, or a failed read.
pub(crate) async fn resolve_edges(
    store: &Store,
    dim: &str,
    length: &ChunkLength,
    extent: u64,
) -> Result<Vec<u64>, EdgesError> {
    edges_from(store, dim, length, extent, 0).await
}

/// The edges `length` gives along dimension `dim` from step `at`'s period on, for an append that
/// keeps the grid: `(from, edges)`, the edges covering `from..extent`, where `from` is the latest
/// index at or before the first step of `at`'s period (month, group) that `boundary` maps to
/// itself (a chunk boundary of every array folded). Only the steps from there on are read (and, for
/// a duration, the first step, its origin): an append reads what it adds plus about one period.
///
/// # Errors
/// As [`resolve_edges`].
pub(crate) async fn resolve_tail_edges(
    store: &Store,
    dim: &str,
    length: &ChunkLength,
    extent: u64,
    at: u64,
    boundary: &(dyn Fn(u64) -> u64 + Sync),
) -> Result<(u64, Vec<u64>), EdgesError> {
    let mut window = 1u64 << 12;
    loop {
        let start = (at + 1).saturating_sub(window);
        let edges = edges_from(store, dim, length, extent, start).await?;
        // The first step of `at`'s period: where the run holding `at` starts.
        let mut period_start = start;
        for &edge in &edges {
            if period_start + edge > at {
                break;
            }
            period_start += edge;
        }
        let from = boundary(period_start);
        if start > 0 && (period_start == start || from < start) {
            window = window.saturating_mul(4); // the period (or the chunk) begins before the window
            continue;
        }
        return Ok((from, drop_front(edges, from - start)));
    }
}

/// `edges` without their first `n` elements.
fn drop_front(edges: Vec<u64>, mut n: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(edges.len());
    for edge in edges {
        if n >= edge {
            n -= edge;
        } else {
            out.push(edge - n);
            n = 0;
        }
    }
    out
}

/// The edges `length` gives over steps `start..extent` of dimension `dim` (a duration counted from
/// midnight of step 0's day).
async fn edges_from(
    store: &Store,
    dim: &str,
    length: &ChunkLength,
    extent: u64,
    start: u64,
) -> Result<Vec<u64>, EdgesError> {
    match length {
        ChunkLength::Elements(n) => Ok(regular_edges(extent - start, *n)),
        ChunkLength::Calendar(unit) => {
            let (reader, calendar, time) = match time_axis(store, dim, extent).await.map_err(Box::new)? {
                Ok(axis) => axis,
                Err(why) => return Err(EdgesError::NoTimeCoordinate { dim: dim.into(), unit: unit.to_string(), why }),
            };
            let calendar_error = |source| EdgesError::Calendar { dim: dim.into(), source };
            let mut edges = CalendarEdges::new(*unit, calendar).map_err(calendar_error)?;
            if start > 0 && extent > 0 {
                let mut first = f64::NAN;
                in_slabs(&reader, time, 0..1, |instants| {
                    first = instants[0];
                    Ok::<_, EdgesError>(())
                })
                .await?;
                if !first.is_finite() {
                    return Err(calendar_error(CalendarError::NotFinite { index: 0, value: first }));
                }
                edges.set_origin(first);
            }
            in_slabs(&reader, time, start..extent, |instants| edges.push(instants).map_err(calendar_error)).await?;
            Ok(edges.finish())
        }
        ChunkLength::By(var) => {
            let not_along = |why: String| EdgesError::NotAlong { var: var.clone(), why };
            if !store.info().arrays.iter().any(|a| a.path == *var) {
                return Err(not_along("no such variable".into()));
            }
            let reader = store.array(var).await.map_err(Box::new)?;
            let dims = reader.metadata().dimension_names.clone().unwrap_or_default();
            if dims != [dim] || reader.shape() != [extent] {
                return Err(not_along(format!("not a 1-D variable along {dim} ({extent} values)")));
            }
            let bytes = read_range(&reader, start..extent).await.map_err(Box::new)?;
            Ok(group_edges(&bytes, reader.metadata().element_size()))
        }
    }
}

/// A dimension's CF time coordinate as read through a store: its calendar and its instants.
#[derive(Debug, Clone)]
pub struct TimeCoordinate {
    calendar: Calendar,
    instants: Vec<f64>,
}

impl TimeCoordinate {
    /// Dimension `dim`'s CF time coordinate in `store` (the 1-D numeric variable named `dim`, of
    /// `extent` values, with `units` of the form `<unit> since <date>`), or None when it has none.
    ///
    /// # Errors
    /// A failed read of the coordinate.
    pub async fn read(store: &Store, dim: &str, extent: u64) -> Result<Option<Self>, ReadError> {
        Ok(time_coordinate(store, dim, extent).await?.ok().map(|(calendar, instants)| Self { calendar, instants }))
    }

    /// How a user reads a grid whose chunks (`held`: the elements each chunk holds) are calendar
    /// periods of this coordinate: `12 chunks, one a month: Jan 2001 31 ... Dec 2001 31` (also
    /// seasons and years); None when they are not one month, season or year each.
    pub fn describe_grid(&self, held: &[u64]) -> Option<String> {
        describe_calendar_grid(held, self.calendar, &self.instants)
    }
}

/// Dimension `dim`'s CF time coordinate in `store` (the 1-D numeric variable named `dim`, of
/// `extent` values, with `units` of the form `<unit> since <date>`): its calendar and instants, or
/// why there is none.
async fn time_coordinate(
    store: &Store,
    dim: &str,
    extent: u64,
) -> Result<Result<(Calendar, Vec<f64>), String>, ReadError> {
    let (reader, calendar, time) = match time_axis(store, dim, extent).await? {
        Ok(axis) => axis,
        Err(why) => return Ok(Err(why)),
    };
    let mut instants = Vec::with_capacity(extent as usize);
    in_slabs(&reader, time, 0..extent, |slab| {
        instants.extend_from_slice(slab);
        Ok::<_, ReadError>(())
    })
    .await?;
    Ok(Ok((calendar, instants)))
}

/// The reader, calendar and units of dimension `dim`'s CF time coordinate in `store`, or why it
/// has none.
async fn time_axis(
    store: &Store,
    dim: &str,
    extent: u64,
) -> Result<Result<(crate::read::ArrayReader, Calendar, TimeUnits), String>, ReadError> {
    if !store.info().arrays.iter().any(|a| a.path == dim) {
        return Ok(Err(format!("no variable named {dim}")));
    }
    let reader = store.array(dim).await?;
    let metadata = reader.metadata();
    let text = |name: &str| metadata.attributes.get(name).and_then(|v| v.as_str()).map(str::to_string);
    let Some(units) = text("units").filter(|u| u.contains(" since ")) else {
        return Ok(Err(format!("{dim} has no units of the form \"<unit> since <date>\"")));
    };
    if reader.shape() != [extent] || !(metadata.data_type.is_integer() || metadata.data_type.is_float()) {
        return Ok(Err(format!("{dim} is not a 1-D numeric variable of {extent} values")));
    }
    let parsed = Calendar::parse(text("calendar").as_deref()).and_then(|c| Ok((c, TimeUnits::parse(&units, c)?)));
    Ok(parsed.map(|(calendar, time)| (reader, calendar, time)).map_err(|e| e.to_string()))
}

/// Time values read per slab of a coordinate (8 MiB of doubles): a coordinate of 10^7 steps is
/// never held whole as values.
const SLAB_VALUES: u64 = 1 << 20;

/// The instants of steps `range` of the 1-D time coordinate `reader` (units `time`), handed to `f`
/// a slab at a time, first to last, until `f` fails.
async fn in_slabs<E: From<ReadError>>(
    reader: &crate::read::ArrayReader,
    time: TimeUnits,
    range: std::ops::Range<u64>,
    mut f: impl FnMut(&[f64]) -> Result<(), E>,
) -> Result<(), E> {
    let data_type = reader.metadata().data_type;
    let mut start = range.start;
    while start < range.end {
        let stop = (start + SLAB_VALUES).min(range.end);
        let bytes = read_range(reader, start..stop).await?;
        let instants: Vec<f64> = data_type.values_to_f64(&bytes).into_iter().map(|v| time.instant(v)).collect();
        f(&instants)?;
        start = stop;
    }
    Ok(())
}

/// Elements `range` of the 1-D array `reader`, decoded.
async fn read_range(reader: &crate::read::ArrayReader, range: std::ops::Range<u64>) -> Result<Vec<u8>, ReadError> {
    let extent = reader.shape()[0];
    let selection = crate::grid::Selection::new([crate::grid::DimSelection::from(range)], &[extent])
        .map_err(|source| ReadError::Selection { array: reader.path().to_string(), source })?;
    Ok(reader.read(&selection, &crate::read::ReadOptions::default()).await?.bytes)
}

/// Edges of `n` elements (the last one shorter) over `extent`.
pub(crate) fn regular_edges(extent: u64, n: u64) -> Vec<u64> {
    let n = n.max(1);
    let mut edges = vec![n; (extent / n) as usize];
    if !extent.is_multiple_of(n) {
        edges.push(extent % n);
    }
    edges
}

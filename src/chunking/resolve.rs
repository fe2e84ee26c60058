//! A [`ChunkLength`] resolved to a dimension's chunk edges over a store (input: the store's reader,
//! the dimension and its extent; output: the edges, summing to the extent).
//!
//! A calendar unit reads the dimension's coordinate variable (the 1-D variable named as the
//! dimension, CF section 4.4: `units` of the form `<unit> since <date>`, `calendar` defaulting to
//! `standard`) and decodes its values with `cftime`; `by:VAR` reads VAR, which must be 1-D along the
//! dimension. Both are read through the store's own reader (decoded, the sources checked against
//! their fingerprints), so they are the values a reader of the store sees.

use super::calendar::{calendar_edges, describe_calendar_grid, CalendarError};
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
    match length {
        ChunkLength::Elements(n) => Ok(regular_edges(extent, *n)),
        ChunkLength::Calendar(unit) => {
            let (calendar, instants) = match time_coordinate(store, dim, extent).await.map_err(Box::new)? {
                Ok(time) => time,
                Err(why) => return Err(EdgesError::NoTimeCoordinate { dim: dim.into(), unit: unit.to_string(), why }),
            };
            calendar_edges(*unit, calendar, &instants)
                .map_err(|source| EdgesError::Calendar { dim: dim.into(), source })
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
            let bytes = whole(&reader).await.map_err(Box::new)?;
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
    let (calendar, time) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let bytes = whole(&reader).await?;
    Ok(Ok((calendar, metadata.data_type.values_to_f64(&bytes).into_iter().map(|v| time.instant(v)).collect())))
}

/// Every decoded element of `reader`'s array.
async fn whole(reader: &crate::read::ArrayReader) -> Result<Vec<u8>, ReadError> {
    let all = crate::grid::Selection::all(&reader.shape());
    Ok(reader.read(&all, &crate::read::ReadOptions::default()).await?.bytes)
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

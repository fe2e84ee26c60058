//! Re-encoded times: when the stored coordinate was re-encoded (its files' units differed), or new
//! files bring other units than the store's, a fresh scan stores every time value re-encoded to the
//! first file's units as store-owned chunks. The stored values are taken as they are when already
//! re-encoded, else read (through the caller's reader) and converted exactly as a fresh scan converts
//! them; the tail's values are converted from each file's own units.

use super::order::Layout;
use super::{AppendError, CoordinateReader, Scanned};
use crate::cftime::{Calendar, TimeUnits};
use crate::dataset::{ConcatCoordinate, VirtualArray, VirtualDataset};
use crate::grid::ChunkGrid;

/// The re-encoded coordinate and bounds arrays of the result, when there are any.
pub(crate) struct Reencoding {
    /// (path, values) of the coordinate and, when it names one, its bounds.
    values: Vec<(String, Vec<f64>)>,
    units: (String, Option<String>),
}

impl Reencoding {
    /// Decides whether the result's times are re-encoded and computes their values.
    pub(crate) fn new(
        stored: &VirtualDataset,
        tail: &VirtualDataset,
        layout: &Layout,
        scanned: &Scanned,
        old_coordinate: &CoordinateReader<'_>,
    ) -> Result<Option<Self>, AppendError> {
        let Some(coordinate) = stored.array(&layout.dim) else { return Ok(None) };
        let attr = |name: &str| coordinate.metadata.attributes.get(name).and_then(|v| v.as_str()).map(str::to_string);
        let (units, calendar) = (attr("units"), attr("calendar"));
        let segments = tail_segments(tail, layout, scanned);
        let reencoded = stored.provenance.units.is_some();
        if !reencoded && segments.iter().all(|c| c.units == units) {
            return Ok(None);
        }
        let build = |problem: String| AppendError::Build { variable: layout.dim.clone(), problem };
        let parse = |u: &Option<String>, c: &Option<String>| {
            let calendar = Calendar::parse(c.as_deref()).map_err(|e| build(e.to_string()))?;
            TimeUnits::parse(u.as_deref().unwrap_or_default(), calendar).map_err(|e| build(e.to_string()))
        };
        let target = parse(&units, &calendar)?;
        let mut values = Vec::new();
        let paths = std::iter::once((layout.dim.clone(), false)).chain(attr("bounds").map(|b| (b, true)));
        for (path, bounds) in paths {
            let rows = layout.last_start;
            let mut all =
                old_coordinate(&path, rows).map_err(|e| build(format!("{path}: reading stored values: {e}")))?;
            if !reencoded {
                all.iter_mut().for_each(|v| *v = target.value(target.instant(*v)));
            }
            for c in &segments {
                let own = parse(&c.units, &c.calendar)?;
                let raw = if bounds { c.bounds.as_ref().map(|b| &b.1) } else { Some(&c.values) };
                all.extend(raw.into_iter().flat_map(|r| r.iter()).map(|v| target.value(own.instant(v))));
            }
            values.push((path, all));
        }
        Ok(Some(Reencoding { values, units: (units.unwrap_or_default(), calendar) }))
    }

    /// The re-encoded version of stored array `old`, if it is one of the re-encoded arrays.
    pub(crate) fn array(&self, old: &VirtualArray, len: u64) -> Result<Option<VirtualArray>, AppendError> {
        let Some((_, values)) = self.values.iter().find(|(p, _)| *p == old.path) else { return Ok(None) };
        let build = |problem: String| AppendError::Build { variable: old.path.clone(), problem };
        let mut array = old.clone();
        let mut shape = old.metadata.shape();
        if let Some(first) = shape.first_mut() {
            *first = len;
        }
        let chunk: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
        array.metadata.chunk_grid = ChunkGrid::regular(&shape, &chunk).map_err(|e| build(e.to_string()))?;
        crate::combine::reencode::store_values(&mut array, values).map_err(|e| build(e.to_string()))?;
        Ok(Some(array))
    }

    /// Records the re-encoding in the result's provenance (the arrays in the result's order).
    pub(crate) fn record(&self, dataset: &mut VirtualDataset) {
        let paths: Vec<String> = dataset
            .arrays
            .iter()
            .filter(|a| self.values.iter().any(|(p, _)| *p == a.path))
            .map(|a| a.path.clone())
            .collect();
        dataset.provenance.reencoded = paths;
        dataset.provenance.units = Some(self.units.clone());
    }
}

/// The tail's coordinate of every position along the dimension, in order.
fn tail_segments<'a>(tail: &VirtualDataset, layout: &Layout, scanned: &'a Scanned) -> Vec<&'a ConcatCoordinate> {
    let mut boxes: Vec<(u64, &ConcatCoordinate)> = tail
        .provenance
        .boxes
        .iter()
        .filter_map(|b| {
            let location = &tail.sources.get(b.source)?.location;
            Some((b.ranges[layout.k].0, scanned.coordinates.get(location)?))
        })
        .collect();
    boxes.sort_by_key(|b| b.0);
    boxes.dedup_by_key(|b| b.0);
    boxes.into_iter().map(|b| b.1).collect()
}

//! Re-encoding a time coordinate (and its bounds) whose units differ between files into the first
//! file's units. The values are computed from each file's decoded instants and stored in the store
//! (store-owned chunks, little-endian, uncompressed).

use super::order::ReencodePlan;
use super::CombineError;
use crate::codec::{CodecChain, Endian};
use crate::dataset::{ChunkTable, CoordinateValues, VirtualArray};
use crate::grid::ChunkGrid;
use crate::metadata::DataType;

/// Bytes per store-owned chunk of a re-encoded coordinate.
const CHUNK_BYTES: u64 = 1 << 20;

/// Replaces the coordinate and bounds arrays with re-encoded, store-owned versions; returns the
/// paths replaced.
pub(crate) fn apply(arrays: &mut [VirtualArray], plan: &ReencodePlan) -> Result<Vec<String>, CombineError> {
    let mut done = Vec::new();
    for array in arrays.iter_mut() {
        let values: Option<Vec<f64>> = if array.path == plan.dim {
            Some(convert(plan, |v| Some(&v.0)))
        } else if plan.bounds.as_deref() == Some(array.path.as_str()) {
            Some(convert(plan, |v| v.1.as_ref()))
        } else {
            None
        };
        if let Some(values) = values {
            store_values(array, &values)?;
            done.push(array.path.clone());
        }
    }
    Ok(done)
}

type SegmentValues = (CoordinateValues, Option<CoordinateValues>);

/// Each segment's values, decoded with its units and encoded with the target units, concatenated.
fn convert(plan: &ReencodePlan, values: impl Fn(&SegmentValues) -> Option<&CoordinateValues>) -> Vec<f64> {
    let mut out = Vec::new();
    for (segment, units) in plan.values.iter().zip(&plan.per_file) {
        if let Some(own) = values(segment) {
            out.extend(own.iter().map(|v| plan.target.value(units.instant(v))));
        }
    }
    out
}

/// Stores `values` as the array's elements in owned chunks along the first dimension.
pub(crate) fn store_values(array: &mut VirtualArray, values: &[f64]) -> Result<(), CombineError> {
    let meta = &mut array.metadata;
    let shape = meta.shape();
    let expected: u64 = shape.iter().product();
    let build = |problem: String| CombineError::Build { variable: array.path.clone(), problem };
    if values.len() as u64 != expected {
        return Err(build(format!("{} re-encoded values for shape {shape:?}", values.len())));
    }
    let native = to_native(meta.data_type, values).map_err(build)?;
    let es = meta.element_size() as u64;
    let row_elements: u64 = shape.iter().skip(1).product();
    let rows = (CHUNK_BYTES / (row_elements * es).max(1)).max(1);
    let mut chunk_shape: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    if let Some(first) = chunk_shape.first_mut() {
        *first = rows.min(*first);
    }
    let grid = ChunkGrid::regular(&shape, &chunk_shape).map_err(|e| build(e.to_string()))?;
    let endian = (es > 1).then_some(Endian::Little);
    let codecs = CodecChain::raw(endian);
    let mut table = ChunkTable::missing(grid.num_chunks() as usize);
    let chunk_bytes = (chunk_shape.iter().product::<u64>() * es) as usize;
    for k in 0..table.len() {
        let start = k * chunk_bytes;
        let mut chunk = meta.fill_value.as_bytes().repeat(chunk_bytes / es as usize);
        let end = (start + chunk_bytes).min(native.len());
        chunk[..end - start].copy_from_slice(&native[start..end]);
        let encoded = codecs.encode(&chunk, es as usize).map_err(|e| build(e.to_string()))?;
        let entry = table
            .push_owned(&encoded)
            .map_err(|source| CombineError::Owned { variable: array.path.clone(), source: Box::new(source) })?;
        table.set(k, entry);
    }
    meta.chunk_grid = grid;
    meta.codecs = codecs;
    array.rewritten_chunks = table.len() as u64;
    array.chunks = table;
    Ok(())
}

/// Native-endian bytes of `values` in `data_type`; integers must be integral and in range.
fn to_native(data_type: DataType, values: &[f64]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(values.len() * data_type.size());
    for &v in values {
        let integral = |lo: f64, hi: f64| {
            if v.fract().abs() > 1e-9 || v < lo || v > hi {
                Err(format!("re-encoded value {v} does not fit {data_type}"))
            } else {
                Ok(v.round())
            }
        };
        match data_type {
            DataType::Float64 => out.extend(v.to_ne_bytes()),
            DataType::Float32 => out.extend((v as f32).to_ne_bytes()),
            DataType::Int32 => out.extend((integral(i32::MIN as f64, i32::MAX as f64)? as i32).to_ne_bytes()),
            DataType::Int64 => out.extend((integral(i64::MIN as f64, i64::MAX as f64)? as i64).to_ne_bytes()),
            DataType::Int16 => out.extend((integral(i16::MIN as f64, i16::MAX as f64)? as i16).to_ne_bytes()),
            DataType::UInt32 => out.extend((integral(0.0, u32::MAX as f64)? as u32).to_ne_bytes()),
            DataType::UInt64 => out.extend((integral(0.0, u64::MAX as f64)? as u64).to_ne_bytes()),
            DataType::UInt16 => out.extend((integral(0.0, u16::MAX as f64)? as u16).to_ne_bytes()),
            other => return Err(format!("cannot hold times in {other}")),
        }
    }
    Ok(out)
}

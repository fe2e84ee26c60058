//! The coordinate array of a new dimension: store-owned, one chunk, numbers (`int64` when every key
//! is an integer, else `float64`) or strings (`string` with `vlen-utf8`, as zarr-python and xarray
//! expect).

use super::keys::{parse_number, NewAxis};
use super::CombineError;
use crate::codec::{CodecChain, Endian};
use crate::dataset::{ChunkTable, VirtualArray};
use crate::grid::ChunkGrid;
use crate::metadata::{ArrayMetadata, Attributes, DataType, FillValue};

/// The array `name(name)` holding the axis's keys in order.
pub(crate) fn coordinate_array(name: &str, axis: &NewAxis) -> Result<VirtualArray, CombineError> {
    let build = |problem: String| CombineError::Build { variable: name.to_string(), problem };
    let n = axis.keys.len() as u64;
    let grid = ChunkGrid::regular(&[n], &[n.max(1)]).map_err(|e| build(e.to_string()))?;
    let (data_type, codecs, bytes) = if axis.numeric {
        let values: Vec<f64> = axis.keys.iter().filter_map(|k| parse_number(k)).collect();
        let integral = values.iter().all(|v| v.fract() == 0.0 && v.abs() < 9.0e15);
        let bytes: Vec<u8> = if integral {
            values.iter().flat_map(|v| (*v as i64).to_le_bytes()).collect()
        } else {
            values.iter().flat_map(|v| v.to_le_bytes()).collect()
        };
        let t = if integral { DataType::Int64 } else { DataType::Float64 };
        (t, CodecChain::raw(Some(Endian::Little)), bytes)
    } else {
        let codecs = CodecChain::vlen_utf8();
        let bytes = codecs.encode_strings(&axis.keys).map_err(|e| build(e.to_string()))?;
        (DataType::String, codecs, bytes)
    };
    let fill_value = FillValue::zero(data_type);
    let metadata = ArrayMetadata {
        data_type,
        chunk_grid: grid,
        fill_value,
        codecs,
        dimension_names: Some(vec![name.to_string()]),
        attributes: Attributes::new(),
        notes: Default::default(),
    };
    let mut chunks = ChunkTable::default();
    if n > 0 {
        let entry = chunks
            .push_owned(&bytes)
            .map_err(|source| CombineError::Owned { variable: name.to_string(), source: Box::new(source) })?;
        chunks.push(entry);
    }
    Ok(VirtualArray { path: name.to_string(), metadata, chunks, rewritten_chunks: 0, digest: None, tails: Vec::new() })
}

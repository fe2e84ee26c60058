//! Reading `string` arrays (variable-length UTF-8, `vlen-utf8` codec): the store-owned coordinates of
//! new concatenation dimensions. They are small, so the whole array is decoded and then selected.

use super::{ArrayData, ArrayReader, ReadError};
use crate::grid::{DimSelection, Selection};
use crate::metadata::{DataType, MAX_STRING_ELEMENTS};
use crate::ndcopy::{ravel, unravel};

/// The selected strings, in C order.
pub(crate) async fn read_strings(array: &ArrayReader, selection: &Selection) -> Result<Vec<String>, ReadError> {
    let meta = array.metadata();
    let shape = meta.shape();
    let output = |reason: String| ReadError::Output { array: array.path().to_string(), reason };
    let total: u64 = shape.iter().product();
    if total > MAX_STRING_ELEMENTS {
        return Err(output(format!(
            "string array of {total} elements is larger than vzarr reads ({MAX_STRING_ELEMENTS})"
        )));
    }
    array
        .metadata()
        .chunk_grid
        .pieces(selection)
        .map_err(|source| ReadError::Selection { array: array.path().to_string(), source })?;
    let grid = &meta.chunk_grid;
    let mut all = vec![String::new(); total as usize];
    let entries = array.entries(0..grid.num_chunks()).await?;
    for (linear, entry) in (0u64..).zip(&entries) {
        let Some(bytes) = array.stored_chunk(entry).await? else { continue };
        let coords = grid.chunk_coords(linear);
        let chunk_shape = grid.chunk_shape(&coords);
        let count: u64 = chunk_shape.iter().product();
        let items = meta.codecs.decode_strings(&bytes, count as usize).map_err(|source| ReadError::Decode {
            location: format!("{}/owned", array.path()),
            array: array.path().to_string(),
            chunk: coords.clone(),
            source,
        })?;
        let origin = grid.chunk_origin(&coords);
        for (i, item) in items.into_iter().enumerate() {
            let index: Vec<u64> = unravel(i as u64, &chunk_shape).iter().zip(&origin).map(|(a, b)| a + b).collect();
            if index.iter().zip(&shape).all(|(i, n)| i < n) {
                all[ravel(&index, &shape) as usize] = item;
            }
        }
    }
    let per_dim: Vec<Vec<u64>> = selection
        .0
        .iter()
        .map(|s| match *s {
            DimSelection::Index(i) => vec![i],
            DimSelection::Range { start, stop, step } => (start..stop).step_by(step.max(1) as usize).collect(),
        })
        .collect();
    // Capacity is a hint: a crafted shape must not size an allocation.
    let mut out = Vec::with_capacity(usize::try_from(selection.len()).unwrap_or(0).min(1 << 20));
    let counts: Vec<u64> = per_dim.iter().map(|v| v.len() as u64).collect();
    for i in 0..counts.iter().product::<u64>() {
        let at = unravel(i, &counts);
        let index: Vec<u64> = at.iter().enumerate().map(|(d, &k)| per_dim[d][k as usize]).collect();
        out.push(all[ravel(&index, &shape) as usize].clone());
    }
    Ok(out)
}

/// Strings as fixed-width, NUL-padded UTF-8 bytes (NumPy `S<n>`), `n` the longest (at least 1).
pub(crate) fn fixed_width(strings: &[String], shape: Vec<u64>) -> ArrayData {
    let width = strings.iter().map(String::len).max().unwrap_or(0).max(1);
    let mut bytes = vec![0u8; strings.len() * width];
    for (slot, s) in bytes.chunks_mut(width).zip(strings) {
        slot[..s.len()].copy_from_slice(s.as_bytes());
    }
    ArrayData { data_type: DataType::FixedBytes(width as u32), shape, bytes }
}

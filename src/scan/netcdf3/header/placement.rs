//! Sizes and placement: each variable's data size, the record stride, `numrecs` of streamed files,
//! and the check that every variable's data lies between the header and the end of the file.

use super::reader::pad4;
use super::types::{Dimension, HeaderError, Variable};
use super::RawVariable;

/// Whether `variable` is a record variable, and the unpadded bytes of one record of it (record
/// variables) or of all of it (others).
pub(super) fn record_or_variable_size(
    variable: &RawVariable,
    dimensions: &[Dimension],
) -> Result<(bool, u64), HeaderError> {
    let is_record = variable.dim_ids.first().and_then(|&i| dimensions.get(i)).is_some_and(|d| d.is_record);
    let size = variable
        .dim_ids
        .iter()
        .skip(usize::from(is_record))
        .try_fold(variable.nc_type.size(), |acc, &i| acc.checked_mul(dimensions.get(i).map_or(0, |d| d.length)))
        .ok_or_else(|| variable.error("the data size overflows 64 bits".into()))?;
    Ok((is_record, size))
}

/// The record stride from each variable's `(is_record, size)`, or `None` on overflow.
pub(super) fn record_stride(sizes: &[(bool, u64)]) -> Option<u64> {
    let records: Vec<u64> = sizes.iter().filter(|s| s.0).map(|s| s.1).collect();
    if let [only] = records[..] {
        return Some(only);
    }
    records.iter().try_fold(0u64, |acc, &size| acc.checked_add(pad4(size)?))
}

/// Number of whole records between the first record variable's `begin` and the end of the file.
pub(super) fn streamed_numrecs(first_record_begin: Option<u64>, record_size: u64, file_len: u64) -> u64 {
    match first_record_begin {
        Some(begin) if record_size > 0 => file_len.saturating_sub(begin) / record_size,
        _ => 0,
    }
}

/// What is needed to place variables in the file.
pub(super) struct Placement {
    pub(super) numrecs: u64,
    pub(super) record_size: u64,
    pub(super) header_len: u64,
    pub(super) file_len: u64,
}

impl Placement {
    /// Builds the final [`Variable`], checking that its data lies between header and file end.
    pub(super) fn finish(
        &self,
        raw: RawVariable,
        is_record: bool,
        data_size: u64,
        dimensions: &[Dimension],
    ) -> Result<Variable, HeaderError> {
        if raw.begin < self.header_len {
            let (begin, header_len) = (raw.begin, self.header_len);
            return Err(raw.error(format!("data at {begin} overlaps the {header_len}-byte header")));
        }
        // A record variable with no records has no data; its `begin` may even lie past the end
        // of the file (libnetcdf writes such files when the last fixed variable ends the file).
        let end = if !is_record {
            raw.begin.checked_add(data_size)
        } else if let Some(last) = self.numrecs.checked_sub(1) {
            last.checked_mul(self.record_size)
                .and_then(|n| n.checked_add(raw.begin))
                .and_then(|n| n.checked_add(data_size))
        } else {
            Some(0)
        };
        let end = end.ok_or_else(|| raw.error("the end of the data overflows 64 bits".into()))?;
        if end > self.file_len {
            let (start, file_len) = (raw.begin, self.file_len);
            return Err(HeaderError::DataOutOfBounds { variable: raw.name, start, end, file_len });
        }
        let shape = raw.dim_ids.iter().map(|&i| dimensions.get(i).map_or(0, |d| d.length)).collect();
        Ok(Variable {
            name: raw.name,
            dim_ids: raw.dim_ids,
            attributes: raw.attributes,
            nc_type: raw.nc_type,
            vsize: raw.vsize,
            begin: raw.begin,
            is_record,
            shape,
            data_size,
        })
    }
}

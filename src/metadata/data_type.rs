//! Zarr v3 core data types (zarr-specs v3 core, "Data types") that vzarr emits.
//!
//! Pure model: maps names to element sizes. The scanners decide which source types map here.

use serde_json::Value;

use super::MetadataError;

/// A Zarr v3 core numeric or boolean data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `bool`, one byte, 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
}

impl DataType {
    /// Every data type, for tests and lookups.
    pub const ALL: [DataType; 11] = [
        DataType::Bool,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::UInt8,
        DataType::UInt16,
        DataType::UInt32,
        DataType::UInt64,
        DataType::Float32,
        DataType::Float64,
    ];

    /// The name used in `zarr.json`.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Bool => "bool",
            DataType::Int8 => "int8",
            DataType::Int16 => "int16",
            DataType::Int32 => "int32",
            DataType::Int64 => "int64",
            DataType::UInt8 => "uint8",
            DataType::UInt16 => "uint16",
            DataType::UInt32 => "uint32",
            DataType::UInt64 => "uint64",
            DataType::Float32 => "float32",
            DataType::Float64 => "float64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::Bool | DataType::Int8 | DataType::UInt8 => 1,
            DataType::Int16 | DataType::UInt16 => 2,
            DataType::Int32 | DataType::UInt32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::UInt64 | DataType::Float64 => 8,
        }
    }

    /// The NumPy type string (`<i4`, `|u1`, ...) for native (little-endian) data.
    pub fn numpy_descr(self) -> &'static str {
        match self {
            DataType::Bool => "|b1",
            DataType::Int8 => "|i1",
            DataType::Int16 => "<i2",
            DataType::Int32 => "<i4",
            DataType::Int64 => "<i8",
            DataType::UInt8 => "|u1",
            DataType::UInt16 => "<u2",
            DataType::UInt32 => "<u4",
            DataType::UInt64 => "<u8",
            DataType::Float32 => "<f4",
            DataType::Float64 => "<f8",
        }
    }

    /// True for `float32` and `float64`.
    pub fn is_float(self) -> bool {
        matches!(self, DataType::Float32 | DataType::Float64)
    }

    /// Parses the `data_type` field of `zarr.json`.
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] when the value is not one of the supported names.
    pub fn from_json(value: &Value) -> Result<Self, MetadataError> {
        let name = value.as_str().unwrap_or_default();
        DataType::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| MetadataError::Invalid {
            field: "data_type",
            reason: format!("unsupported data type {value}"),
        })
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in DataType::ALL {
            assert_eq!(DataType::from_json(&Value::from(t.name())).unwrap(), t);
        }
        assert!(DataType::from_json(&Value::from("float128")).is_err());
    }

    #[test]
    fn sizes_match_numpy_descr() {
        for t in DataType::ALL {
            let digits: usize = t.numpy_descr()[2..].parse().unwrap();
            assert_eq!(digits, t.size(), "{t}");
        }
    }
}

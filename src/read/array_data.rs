//! The result of a read: native-endian element bytes with their type and shape, convertible to an
//! `ndarray` array or written as a NumPy `.npy` file.

use std::io::Write;

use crate::metadata::DataType;

/// Elements read from an array, in C order and native byte order.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayData {
    /// Element type.
    pub data_type: DataType,
    /// Result shape (NumPy rules: integer-indexed dimensions are dropped).
    pub shape: Vec<u64>,
    /// `product(shape) * data_type.size()` bytes.
    pub bytes: Vec<u8>,
}

/// A Rust type that holds one element of a [`DataType`].
pub trait Element: Copy + Send + Sync + 'static {
    /// The matching data type.
    const DATA_TYPE: DataType;
    /// Decodes one element from native-endian bytes (exactly `size_of::<Self>()` of them).
    fn from_ne_slice(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const DATA_TYPE: DataType = $dt;
            fn from_ne_slice(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(bytes);
                <$t>::from_ne_bytes(raw)
            }
        }
    };
}

element!(i8, DataType::Int8);
element!(i16, DataType::Int16);
element!(i32, DataType::Int32);
element!(i64, DataType::Int64);
element!(u8, DataType::UInt8);
element!(u16, DataType::UInt16);
element!(u32, DataType::UInt32);
element!(u64, DataType::UInt64);
element!(f32, DataType::Float32);
element!(f64, DataType::Float64);

impl Element for bool {
    const DATA_TYPE: DataType = DataType::Bool;
    fn from_ne_slice(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// Why an [`ArrayData`]'s elements cannot be had as the type asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayDataError {
    /// The elements asked for are not of the data's type.
    #[error("requested {requested} elements from {stored} data")]
    WrongType {
        /// The element type asked for.
        requested: DataType,
        /// The data's type.
        stored: DataType,
    },
    /// The shape does not fit the elements (ndarray's error).
    #[error(transparent)]
    Shape(#[from] ndarray::ShapeError),
}

impl ArrayData {
    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as a `Vec<T>`.
    ///
    /// # Errors
    /// [`ArrayDataError::WrongType`], naming both types, when `T` does not match the data type.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, ArrayDataError> {
        if T::DATA_TYPE != self.data_type {
            return Err(ArrayDataError::WrongType { requested: T::DATA_TYPE, stored: self.data_type });
        }
        Ok(self.bytes.chunks_exact(self.data_type.size().max(1)).map(T::from_ne_slice).collect())
    }

    /// Every element converted to f64 (exact for all but 64-bit integers beyond 2^53; NaN for byte
    /// strings).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        self.data_type.values_to_f64(&self.bytes)
    }

    /// The elements as an n-dimensional array.
    ///
    /// # Errors
    /// [`ArrayDataError::WrongType`] when `T` does not match the data type, [`ArrayDataError::Shape`]
    /// when the shape does not fit the elements.
    pub fn to_ndarray<T: Element>(&self) -> Result<ndarray::ArrayD<T>, ArrayDataError> {
        let shape: Vec<usize> = self.shape.iter().map(|&n| n as usize).collect();
        Ok(ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), self.to_vec()?)?)
    }

    /// Writes a NumPy `.npy` (format 1.0) file: loads with `numpy.load` with this shape and dtype.
    ///
    /// # Errors
    /// The I/O error from `out`.
    pub fn write_npy(&self, mut out: impl Write) -> std::io::Result<()> {
        let shape = match self.shape.as_slice() {
            [] => "()".to_string(),
            [n] => format!("({n},)"),
            dims => format!("({})", dims.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
        };
        let descr = match self.data_type {
            // A struct's descr is a list of its fields, not a string.
            DataType::Struct(s) => s.numpy_descr(),
            t => format!("'{}'", npy_descr(t)),
        };
        let mut header = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}");
        // magic (6) + version (2) + header length (2; 4 in version 2.0, for the long headers of
        // structs of many fields) + header, padded with spaces to a multiple of 64, ending in a newline.
        let long = header.len() + 64 > usize::from(u16::MAX);
        let unpadded = if long { 12 } else { 10 } + header.len() + 1;
        header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
        header.push('\n');
        if long {
            out.write_all(b"\x93NUMPY\x02\x00")?;
            out.write_all(&(header.len() as u32).to_le_bytes())?;
        } else {
            out.write_all(b"\x93NUMPY\x01\x00")?;
            out.write_all(&(header.len() as u16).to_le_bytes())?;
        }
        out.write_all(header.as_bytes())?;
        out.write_all(&self.bytes)
    }
}

/// The `.npy` dtype string of native-endian data.
fn npy_descr(t: DataType) -> String {
    let descr = t.numpy_descr();
    let descr = descr.as_str();
    if cfg!(target_endian = "big") && descr.starts_with('<') {
        format!(">{}", &descr[1..])
    } else {
        descr.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_describes_the_data() {
        let data = ArrayData { data_type: DataType::Int16, shape: vec![2, 3], bytes: vec![0; 12] };
        let mut out = Vec::new();
        data.write_npy(&mut out).unwrap();
        let header_len = u16::from_le_bytes([out[8], out[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&out[10..10 + header_len]).unwrap();
        assert!(header.contains("'descr': '<i2'") && header.contains("'shape': (2, 3)"), "{header}");
        assert_eq!(out.len(), 10 + header_len + 12);
    }

    #[test]
    fn npy_header_of_a_struct_lists_its_fields() {
        use crate::metadata::{StructField, StructType};
        let field = |name: &str, data_type| StructField { name: name.into(), data_type };
        let s = StructType::intern(vec![field("a", DataType::Int16), field("it's", DataType::RawBytes(3))]).unwrap();
        let data = ArrayData { data_type: DataType::Struct(s), shape: vec![2], bytes: vec![0; 10] };
        let mut out = Vec::new();
        data.write_npy(&mut out).unwrap();
        let header_len = u16::from_le_bytes([out[8], out[9]]) as usize;
        let header = std::str::from_utf8(&out[10..10 + header_len]).unwrap();
        assert!(header.starts_with("{'descr': [('a', '<i2'), ('it\\'s', '|V3')], "), "{header}");
        assert_eq!((out.len(), (10 + header_len) % 64), (10 + header_len + 10, 0));
    }

    #[test]
    fn typed_views_check_the_type() {
        let data = ArrayData {
            data_type: DataType::Float32,
            shape: vec![2],
            bytes: [1.5f32, -2.0].iter().flat_map(|v| v.to_ne_bytes()).collect(),
        };
        assert_eq!(data.to_vec::<f32>().unwrap(), vec![1.5, -2.0]);
        assert!(data.to_vec::<f64>().is_err());
        assert_eq!(data.to_ndarray::<f32>().unwrap().shape(), &[2]);
    }
}

//! Struct arrays whose text fields (HDF5 variable-length strings and object references, stored by
//! vzarr as `fixed_length_utf32` as wide as the longest value) are wider in the store than in a
//! source: files combined into one array take each field's widest (`combine/text_widths`), and verify
//! widens the source's elements to the store's layout before comparing them.

use crate::metadata::{DataType, StructType};

/// For a struct array whose text fields (HDF5 strings and references vzarr stored) are `widths`
/// bytes wide in a source, narrower than the store's where files were combined: the source's struct
/// and the store's, whose elements the source's are widened to before comparing. None when the
/// source's layout is the store's.
pub(super) fn source_text_layout(
    array: &crate::read::ArrayReader,
    widths: &[u32],
) -> Result<Option<(&'static StructType, &'static StructType)>, String> {
    let DataType::Struct(stored) = array.metadata().data_type else { return Ok(None) };
    if widths.is_empty() || widths == stored.text_widths() {
        return Ok(None);
    }
    let narrow = stored.with_text_widths(widths).map_err(|e| format!("the source's text fields: {e}"))?;
    let fits = widths.iter().zip(stored.text_widths()).all(|(&w, s)| w <= s);
    match fits {
        true => Ok(Some((narrow, stored))),
        false => Err(format!(
            "the source's text fields are {widths:?} bytes wide, wider than the store's {:?}",
            stored.text_widths()
        )),
    }
}

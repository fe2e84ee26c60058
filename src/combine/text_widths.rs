//! Compounds whose text fields differ in width between files. The scanner stores an HDF5 compound
//! with variable-length string or object reference members as a `struct` whose text fields are
//! `fixed_length_utf32` as wide as the file's longest value, so the same variable has a wider type in
//! a file with longer text. Concatenated, the combined struct takes each text field's widest, and
//! the narrower files' store-owned chunks are rewritten padded to it (UTF-32 pads with NUL code
//! points, the same bytes in either byte order).

use crate::dataset::ChunkTable;
use crate::manifest::ChunkEntry;
use crate::metadata::{DataType, StructType};

/// The struct that holds every one of `types` when they are structs that differ only in the widths
/// of their `fixed_length_utf32` fields (each field as wide as its widest); None when they are all
/// equal or differ in anything else.
pub(super) fn widest(types: impl IntoIterator<Item = DataType>) -> Option<&'static StructType> {
    let mut types = types.into_iter();
    let DataType::Struct(first) = types.next()? else { return None };
    let mut widths = first.text_widths();
    for t in types {
        let DataType::Struct(other) = t else { return None };
        // The same struct but for its text widths: `first` with `other`'s widths is `other`.
        if first.with_text_widths(&other.text_widths()).ok()? != other {
            return None;
        }
        widths.iter_mut().zip(other.text_widths()).for_each(|(w, theirs)| *w = (*w).max(theirs));
    }
    let wide = first.with_text_widths(&widths).ok()?;
    (wide != first).then_some(wide)
}

/// Rewrites every store-owned chunk of `table`, elements of `from` stored as they are (the `bytes`
/// codec alone), as elements of `to` ([`widest`] of `from`'s type and others), each text field
/// padded with NULs.
pub(super) fn widen(table: &mut ChunkTable, from: &StructType, to: &StructType) -> Result<(), String> {
    for linear in 0..table.len() {
        let (offset, length) = match table.entry(linear) {
            ChunkEntry::Missing => continue,
            ChunkEntry::Owned { offset, length } => (offset, length),
            ChunkEntry::Source { .. } => return Err("a chunk referenced in its file cannot be widened".into()),
        };
        let stored = table.owned_chunk(offset, length).map_err(|e| e.to_string())?;
        let wide = from.widened(&stored, to).ok_or_else(|| {
            format!("a stored chunk of {} bytes does not widen from {} to {}", stored.len(), from.size(), to.size())
        })?;
        let entry = table.push_owned(&wide).map_err(|e| e.to_string())?;
        table.set(linear, entry);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::StructField;

    fn text_struct(width: u32) -> DataType {
        let id = StructField { name: "id".into(), data_type: DataType::Int32 };
        let name = StructField { name: "name".into(), data_type: DataType::FixedUtf32(4 * width) };
        DataType::Struct(StructType::intern(vec![id, name]).unwrap())
    }

    #[test]
    fn text_fields_take_the_widest_and_other_differences_do_not_widen() {
        let wide = widest([text_struct(2), text_struct(5), text_struct(3)]).unwrap();
        assert_eq!(wide.fields()[1].data_type, DataType::FixedUtf32(20));
        assert!(widest([text_struct(2), text_struct(2)]).is_none(), "equal types need no widening");
        assert!(widest([text_struct(2), DataType::Int32]).is_none());
        let DataType::Struct(narrow) = text_struct(2) else { unreachable!() };
        let renamed = StructType::intern(vec![
            StructField { name: "other".into(), data_type: DataType::Int32 },
            narrow.fields()[1].clone(),
        ])
        .unwrap();
        assert!(widest([text_struct(2), DataType::Struct(renamed)]).is_none());
    }

    #[test]
    fn owned_chunks_are_padded_with_nuls() {
        let (DataType::Struct(narrow), DataType::Struct(wide)) = (text_struct(1), text_struct(3)) else {
            unreachable!()
        };
        let mut table = ChunkTable::default();
        let element = |id: i32, c: char| [id.to_le_bytes(), u32::from(c).to_le_bytes()].concat();
        let entry = table.push_owned(&[element(7, 'é'), element(8, 'x')].concat()).unwrap();
        table.push(entry);
        table.push(ChunkEntry::Missing);
        widen(&mut table, narrow, wide).unwrap();
        let ChunkEntry::Owned { offset, length } = table.entry(0) else { panic!("{:?}", table.entry(0)) };
        let pad = [0u8; 8];
        let expected = [element(7, 'é'), pad.to_vec(), element(8, 'x'), pad.to_vec()].concat();
        assert_eq!(table.owned_chunk(offset, length).unwrap().as_ref(), expected.as_slice());
        assert_eq!(table.entry(1), ChunkEntry::Missing);
    }
}

//! The grammar's parts in file order: magic number, `numrecs`, the dimension, attribute and variable
//! lists.

use std::collections::HashSet;

use super::reader::{capacity, check_unique, invalid, pad4, Reader};
use super::types::*;
use super::RawVariable;

/// Reads and checks the magic number.
pub(super) fn read_magic(bytes: &[u8], file_len: u64) -> Result<Cdf3Version, HeaderError> {
    let Some(magic) = bytes.get(..4) else {
        if file_len < 4 {
            return Err(HeaderError::BadMagic { found: bytes.to_vec() });
        }
        return Err(HeaderError::NeedMore { at_least: 4 });
    };
    magic
        .get(3)
        .copied()
        .filter(|_| magic.starts_with(b"CDF"))
        .and_then(Cdf3Version::from_magic_byte)
        .ok_or_else(|| HeaderError::BadMagic { found: magic.to_vec() })
}

/// Reads `numrecs`; returns it and whether it was `STREAMING`.
pub(super) fn read_numrecs(reader: &mut Reader<'_>) -> Result<(u64, bool), HeaderError> {
    if reader.version == Cdf3Version::Data64 {
        let n = reader.u64("numrecs")?;
        Ok((n, n == u64::MAX))
    } else {
        let n = reader.u32("numrecs")?;
        Ok((u64::from(n), n == u32::MAX))
    }
}

/// Reads `dim_list`.
pub(super) fn read_dimensions(reader: &mut Reader<'_>) -> Result<Vec<Dimension>, HeaderError> {
    let width = reader.version.count_width();
    let count = reader.list_len(NC_DIMENSION, 2 * width, "dimension list")?;
    let mut dimensions: Vec<Dimension> = Vec::with_capacity(capacity(count));
    let mut seen = HashSet::new();
    for _ in 0..count {
        let at = reader.pos;
        let name = reader.path_name("dimension name")?;
        check_unique(&mut seen, &name, at, "dimension")?;
        let length = reader.count("dimension length")?;
        let is_record = length == 0;
        if is_record && dimensions.iter().any(|d| d.is_record) {
            return Err(invalid(at, format!("dimension `{name}` is a second record dimension (length 0)")));
        }
        dimensions.push(Dimension { name, length, is_record });
    }
    Ok(dimensions)
}

/// Reads an `att_list`; `owner` names the attributes in messages ("global attribute", ...).
pub(super) fn read_attributes(reader: &mut Reader<'_>, owner: &str) -> Result<Vec<Attribute>, HeaderError> {
    let width = reader.version.count_width();
    let count = reader.list_len(NC_ATTRIBUTE, 2 * width + 4, &format!("{owner} list"))?;
    let mut attributes = Vec::with_capacity(capacity(count));
    let mut seen = HashSet::new();
    for _ in 0..count {
        let name_at = reader.pos;
        let name = reader.name(&format!("{owner} name"))?;
        check_unique(&mut seen, &name, name_at, owner)?;
        let what = format!("{owner} `{name}`");
        let nc_type = reader.nc_type(&what)?;
        let at = reader.pos;
        let nelems = reader.count(&what)?;
        let len = nelems
            .checked_mul(nc_type.size())
            .filter(|&n| pad4(n).is_some())
            .ok_or_else(|| invalid(at, format!("{what}: {nelems} values overflow")))?;
        if len > MAX_ATTRIBUTE_BYTES {
            let reason = format!("{what}: {len} bytes of values exceed vzarr's limit of {MAX_ATTRIBUTE_BYTES}");
            return Err(invalid(at, reason));
        }
        let raw = reader.take(pad4(len).unwrap_or(len), &format!("values of {what}"))?;
        let value = decode_values(nc_type, raw.get(..capacity(len)).unwrap_or(raw));
        attributes.push(Attribute { name, value });
    }
    Ok(attributes)
}

/// Decodes big-endian attribute values of type `nc_type` (padding already removed).
pub(super) fn decode_values(nc_type: NcType, raw: &[u8]) -> AttrValue {
    match nc_type {
        NcType::Byte => AttrValue::Bytes(be_values(raw, i8::from_be_bytes)),
        NcType::Char => AttrValue::Text(raw.to_vec()),
        NcType::Short => AttrValue::Shorts(be_values(raw, i16::from_be_bytes)),
        NcType::Int => AttrValue::Ints(be_values(raw, i32::from_be_bytes)),
        NcType::Float => AttrValue::Floats(be_values(raw, f32::from_be_bytes)),
        NcType::Double => AttrValue::Doubles(be_values(raw, f64::from_be_bytes)),
        NcType::UByte => AttrValue::UBytes(raw.to_vec()),
        NcType::UShort => AttrValue::UShorts(be_values(raw, u16::from_be_bytes)),
        NcType::UInt => AttrValue::UInts(be_values(raw, u32::from_be_bytes)),
        NcType::Int64 => AttrValue::Int64s(be_values(raw, i64::from_be_bytes)),
        NcType::UInt64 => AttrValue::UInt64s(be_values(raw, u64::from_be_bytes)),
    }
}

/// Splits `raw` into `N`-byte big-endian values.
pub(super) fn be_values<const N: usize, T>(raw: &[u8], decode: fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N).filter_map(|chunk| <[u8; N]>::try_from(chunk).ok()).map(decode).collect()
}

/// Reads `var_list`.
pub(super) fn read_variables(
    reader: &mut Reader<'_>,
    dimensions: &[Dimension],
) -> Result<Vec<RawVariable>, HeaderError> {
    let width = reader.version.count_width();
    let min_each = 4 * width + 8 + reader.version.offset_width();
    let count = reader.list_len(NC_VARIABLE, min_each, "variable list")?;
    let mut variables: Vec<RawVariable> = Vec::with_capacity(capacity(count));
    let mut seen = HashSet::new();
    for _ in 0..count {
        let variable = read_variable(reader, dimensions)?;
        if !seen.insert(variable.name.clone()) {
            return Err(variable.error("a second variable with this name (names must be unique)".into()));
        }
        variables.push(variable);
    }
    Ok(variables)
}

/// Reads one `var`: name, dimension ids, attributes, type, `vsize`, `begin`.
pub(super) fn read_variable(reader: &mut Reader<'_>, dimensions: &[Dimension]) -> Result<RawVariable, HeaderError> {
    let at = reader.pos;
    let name = reader.path_name("variable name")?;
    let what = format!("dimension ids of variable `{name}`");
    let rank = reader.count(&what)?;
    if rank > MAX_RANK {
        let reason = format!("{rank} dimensions; NetCDF allows at most {MAX_RANK}");
        return Err(HeaderError::Variable { variable: name, at, reason });
    }
    reader.ensure_room(rank, reader.version.count_width(), &what)?;
    let mut dim_ids = Vec::with_capacity(capacity(rank));
    for position in 0..rank {
        let id = reader.count(&what)?;
        let index = usize::try_from(id).ok().filter(|&i| i < dimensions.len());
        let Some((index, dim)) = index.and_then(|i| Some((i, dimensions.get(i)?))) else {
            let n = dimensions.len();
            let reason = format!("dimension id {id} is out of range (the file has {n} dimensions)");
            return Err(HeaderError::Variable { variable: name, at, reason });
        };
        if dim.is_record && position > 0 {
            let reason = format!("record dimension `{}` is at position {position}, not first", dim.name);
            return Err(HeaderError::Variable { variable: name, at, reason });
        }
        dim_ids.push(index);
    }
    let attributes = read_attributes(reader, &format!("attribute of variable `{name}`"))?;
    let nc_type = reader.nc_type(&format!("type of variable `{name}`"))?;
    let vsize = reader.count(&format!("vsize of variable `{name}`"))?;
    let begin = reader.offset(&format!("begin of variable `{name}`"))?;
    Ok(RawVariable { at, name, dim_ids, attributes, nc_type, vsize, begin })
}

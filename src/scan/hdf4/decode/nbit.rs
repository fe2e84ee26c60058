//! HDF4's N-bit coding (`cnbit.c`): each value keeps `bits` of its bits, the highest at bit `top`
//! (counted from its least significant bit), packed back to back most significant bit first; the
//! other bits are ones or zeros, or copies of the sign bit when sign-extended. Values are laid out
//! as stored in the file (most significant byte first), one mask per byte as the library builds it.

use super::DecodeError;
use crate::scan::hdf4::special::Nbit;

/// The bits of one byte of a value that the stream holds.
#[derive(Debug, Clone, Copy, Default)]
struct ByteMask {
    /// The highest stored bit of the byte (7 for a byte whose top bit is stored).
    offset: u32,
    /// How many of its bits are stored (0: none).
    length: u32,
    /// Which of its bits are stored.
    mask: u8,
}

/// `(1 << k) - 1` for `k` up to 8.
fn low_bits(k: u32) -> u8 {
    if k >= 8 {
        0xff
    } else {
        ((1u16 << k) - 1) as u8
    }
}

/// The per-byte masks of `HCIcnbit_init`.
fn masks(size: u32, top: u32, bits: u32) -> Vec<ByteMask> {
    let (mask_top, mask_bot) = (top as i64, top as i64 - (bits as i64 - 1));
    let (mut top_bit, mut bot_bit) = (i64::from(size) * 8 - 1, i64::from(size) * 8 - 8);
    let mut out = vec![ByteMask::default(); size as usize];
    for m in &mut out {
        if mask_top >= top_bit {
            if mask_bot <= bot_bit {
                *m = ByteMask { offset: 7, length: 8, mask: 0xff };
            } else {
                // 0 when the field ended at the previous byte's bottom (the library shifts the mask
                // out of the byte then).
                let length = (top_bit - mask_bot + 1).clamp(0, 8) as u32;
                let mask = ((u16::from(low_bits(length)) << (8 - length)) & 0xff) as u8;
                *m = ByteMask { offset: 7, length, mask };
                break;
            }
        } else if mask_top >= bot_bit {
            if mask_bot < bot_bit {
                let length = (mask_top - bot_bit + 1) as u32;
                *m = ByteMask { offset: (mask_top - bot_bit) as u32, length, mask: low_bits(length) };
            } else {
                let length = (mask_top - mask_bot + 1) as u32;
                let mask = low_bits(length) << (mask_bot - bot_bit);
                *m = ByteMask { offset: (mask_top - bot_bit) as u32, length, mask };
                break;
            }
        }
        top_bit -= 8;
        bot_bit -= 8;
    }
    out
}

/// Reads bits most significant first.
struct Bits<'a> {
    input: &'a [u8],
    at: usize,
}

impl Bits<'_> {
    fn read(&mut self, n: u32) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..n {
            let byte = *self.input.get(self.at / 8)?;
            v = (v << 1) | u32::from(byte >> (7 - self.at % 8) & 1);
            self.at += 1;
        }
        Some(v)
    }
}

/// Decodes `length` bytes of N-bit data.
///
/// # Errors
/// [`DecodeError`] when the parameters are out of range or the data ends early.
pub(crate) fn decode(input: &[u8], nbit: Nbit, length: usize) -> Result<Vec<u8>, DecodeError> {
    let size =
        super::super::sds::NumberType::value_size(nbit.number_type).ok_or(DecodeError::NbitType(nbit.number_type))?;
    if nbit.bits == 0 || nbit.top >= size * 8 || nbit.bits > nbit.top + 1 {
        return Err(DecodeError::NbitBits { bits: nbit.bits, top: nbit.top, size });
    }
    let masks = masks(size, nbit.top, nbit.bits);
    let fill = if nbit.fill_one { 0xff } else { 0 };
    let template: Vec<u8> = masks.iter().map(|m| if nbit.fill_one { fill & !m.mask } else { fill }).collect();
    let sign_byte = (size - (nbit.top / 8 + 1)) as usize;
    let sign_mask = 1u32 << (nbit.top % 8);
    let sign_ext_mask = !low_bits(nbit.top % 8);
    let mut bits = Bits { input, at: 0 };
    let mut out = Vec::with_capacity(length + size as usize);
    while out.len() < length {
        let mut value = template.clone();
        let mut sign_bit = false;
        for (j, m) in masks.iter().enumerate() {
            if m.length == 0 {
                continue;
            }
            let read = bits.read(m.length).ok_or(DecodeError::NbitShort)?;
            let shifted = read << (m.offset + 1 - m.length);
            value[j] |= m.mask & shifted as u8;
            if j == sign_byte {
                sign_bit = sign_mask & shifted != 0;
            }
        }
        if nbit.sign_extend && sign_bit != nbit.fill_one {
            let (whole, edge) = value.split_at_mut(sign_byte);
            if sign_bit {
                whole.fill(0xff);
                edge[0] |= sign_ext_mask;
            } else {
                whole.fill(0);
                edge[0] &= !sign_ext_mask;
            }
        }
        out.extend_from_slice(&value);
    }
    out.truncate(length);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_bits_of_int16_sign_extended() {
        // Bits 11..0 of two int16 values: -3 (0xffd) and 5 (0x005), packed as 24 bits.
        let nbit = Nbit { number_type: 22, sign_extend: true, fill_one: false, top: 11, bits: 12 };
        let packed = [0xff, 0xd0, 0x05];
        assert_eq!(decode(&packed, nbit, 4).unwrap(), [0xff, 0xfd, 0x00, 0x05]);
        assert!(decode(&packed[..1], nbit, 4).is_err());
    }
}

//! Copies between n-dimensional C-order element buffers: a strided box of a chunk into its place in a
//! selection's output, and filling the part of a chunk that lies outside a valid box.
//!
//! Pure and format-agnostic: buffers are bytes, `element_size` bytes per element. The innermost
//! dimension is copied with one `memcpy` when its step is 1.

/// The C-order index of element `linear` of an array of `shape` (a dimension of length 0 counts as 1).
pub(crate) fn unravel(mut linear: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        out[d] = linear % shape[d].max(1);
        linear /= shape[d].max(1);
    }
    out
}

/// The C-order position of `index` in an array of `shape` (the inverse of [`unravel`]).
pub(crate) fn ravel(index: &[u64], shape: &[u64]) -> u64 {
    index.iter().zip(shape).fold(0, |acc, (i, n)| acc * n + i)
}

/// How one dimension is copied: `count` elements from `src_start` (every `src_step`-th) to
/// consecutive positions from `dst_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DimCopy {
    /// First source index.
    pub src_start: u64,
    /// Source stride (>= 1).
    pub src_step: u64,
    /// First destination index.
    pub dst_start: u64,
    /// Number of elements.
    pub count: u64,
}

/// Row-major strides in elements.
fn strides(shape: &[u64]) -> Vec<u64> {
    let mut out = vec![1u64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        out[d] = out[d + 1] * shape[d + 1];
    }
    out
}

/// Copies the box described by `dims` from `src` (shape `src_shape`) into `dst` (shape `dst_shape`).
///
/// # Panics
/// When the box does not fit either buffer (a caller bug, not an input error).
pub(crate) fn copy_box(
    src: &[u8],
    src_shape: &[u64],
    dst: &mut [u8],
    dst_shape: &[u64],
    dims: &[DimCopy],
    element_size: usize,
) {
    let (ss, ds) = (strides(src_shape), strides(dst_shape));
    check_fits(src.len(), src_shape, dims, element_size, |d| d.src_start + (d.count.max(1) - 1) * d.src_step);
    check_fits(dst.len(), dst_shape, dims, element_size, |d| d.dst_start + d.count.max(1) - 1);
    // SAFETY: check_fits proved every touched element lies inside both buffers.
    unsafe { copy_strided(src.as_ptr(), &ss, dst.as_mut_ptr(), &ds, dims, element_size) }
}

/// Like [`copy_box`], into a raw destination shared between threads.
///
/// # Safety
/// `dst` must be valid for writes of `dst_len` bytes for the duration of the call, the box must fit
/// `dst_shape` (checked: panics otherwise), and no other thread may write the elements this box covers.
pub(crate) unsafe fn copy_box_raw(
    src: &[u8],
    src_shape: &[u64],
    dst: *mut u8,
    dst_len: usize,
    dst_shape: &[u64],
    dims: &[DimCopy],
    element_size: usize,
) {
    let (ss, ds) = (strides(src_shape), strides(dst_shape));
    check_fits(src.len(), src_shape, dims, element_size, |d| d.src_start + (d.count.max(1) - 1) * d.src_step);
    check_fits(dst_len, dst_shape, dims, element_size, |d| d.dst_start + d.count.max(1) - 1);
    copy_strided(src.as_ptr(), &ss, dst, &ds, dims, element_size);
}

fn check_fits(len: usize, shape: &[u64], dims: &[DimCopy], element_size: usize, last: impl Fn(&DimCopy) -> u64) {
    assert_eq!(shape.len(), dims.len(), "box rank differs from buffer rank");
    let elements: u64 = shape.iter().product();
    assert!(elements * element_size as u64 <= len as u64, "buffer smaller than its shape");
    for (d, dim) in dims.iter().enumerate() {
        assert!(dim.count == 0 || last(dim) < shape[d], "box exceeds dimension {d}");
    }
}

/// Copies the box with an odometer over the outer dimensions (no recursion: the rank is bounded by
/// the metadata parser, but the stack use does not depend on it either way). The innermost dimension
/// is one `memcpy` when its step is 1.
unsafe fn copy_strided(src: *const u8, ss: &[u64], dst: *mut u8, ds: &[u64], dims: &[DimCopy], es: usize) {
    let Some((last, outer)) = dims.split_last() else {
        std::ptr::copy_nonoverlapping(src, dst, es);
        return;
    };
    if dims.iter().any(|d| d.count == 0) {
        return;
    }
    let n = dims.len();
    let s_stride = |d: usize| ss[d] as usize * es;
    let d_stride = |d: usize| ds[d] as usize * es;
    let mut index = vec![0u64; outer.len()];
    loop {
        let (mut s_off, mut d_off) = (0usize, 0usize);
        for (d, (dim, &i)) in outer.iter().zip(&index).enumerate() {
            s_off += (dim.src_start + i * dim.src_step) as usize * s_stride(d);
            d_off += (dim.dst_start + i) as usize * d_stride(d);
        }
        let src_row = src.add(s_off + last.src_start as usize * s_stride(n - 1));
        let dst_row = dst.add(d_off + last.dst_start as usize * d_stride(n - 1));
        if last.src_step == 1 {
            std::ptr::copy_nonoverlapping(src_row, dst_row, last.count as usize * es);
        } else {
            let step = last.src_step as usize * s_stride(n - 1);
            for i in 0..last.count as usize {
                std::ptr::copy_nonoverlapping(src_row.add(i * step), dst_row.add(i * d_stride(n - 1)), es);
            }
        }
        // Advance the odometer over the outer dimensions, last fastest.
        let mut d = outer.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            index[d] += 1;
            if index[d] < outer[d].count {
                break;
            }
            index[d] = 0;
        }
    }
}

/// Sets every element of `buf` (shape `shape`) outside the box `[0, valid[d])` to `fill`.
pub(crate) fn fill_outside(buf: &mut [u8], shape: &[u64], valid: &[u64], fill: &[u8]) {
    let es = fill.len();
    let total: u64 = shape.iter().product();
    if total == 0 || es == 0 || valid.iter().zip(shape).all(|(v, s)| v >= s) {
        return;
    }
    let Some((&row_len, outer)) = shape.split_last() else { return };
    let row_valid = valid[outer.len()].min(row_len) as usize;
    let row_bytes = row_len as usize * es;
    // Row by row (the outer dimensions as an odometer, last fastest): a row outside the valid box
    // in an outer dimension is all fill, any other row from its valid length on.
    let mut index = vec![0u64; outer.len()];
    for row in buf[..total as usize * es].chunks_exact_mut(row_bytes) {
        let inside = index.iter().zip(valid).all(|(i, v)| i < v);
        let from = if inside { row_valid * es } else { 0 };
        row[from..].chunks_exact_mut(es).for_each(|element| element.copy_from_slice(fill));
        for d in (0..outer.len()).rev() {
            index[d] += 1;
            if index[d] < outer[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_box_matches_index_arithmetic() {
        // src 4x5 of u16 values 0..20, take rows 1..4 step 2, cols 0..5 step 2 -> dst 2x3 at (0,0)
        let src: Vec<u8> = (0u16..20).flat_map(u16::to_ne_bytes).collect();
        let mut dst = vec![0u8; 2 * 3 * 2];
        let dims = [
            DimCopy { src_start: 1, src_step: 2, dst_start: 0, count: 2 },
            DimCopy { src_start: 0, src_step: 2, dst_start: 0, count: 3 },
        ];
        copy_box(&src, &[4, 5], &mut dst, &[2, 3], &dims, 2);
        let got: Vec<u16> = dst.chunks(2).map(|b| u16::from_ne_bytes([b[0], b[1]])).collect();
        let want: Vec<u16> = [1u16, 3].iter().flat_map(|r| [0u16, 2, 4].map(|c| r * 5 + c)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn contiguous_rows_and_scalars() {
        let src = [1u8, 2, 3, 4, 5, 6];
        let mut dst = [0u8; 9];
        let dims = [
            DimCopy { src_start: 0, src_step: 1, dst_start: 1, count: 2 },
            DimCopy { src_start: 0, src_step: 1, dst_start: 0, count: 3 },
        ];
        copy_box(&src, &[2, 3], &mut dst, &[3, 3], &dims, 1);
        assert_eq!(dst, [0, 0, 0, 1, 2, 3, 4, 5, 6]);
        let mut one = [0u8; 4];
        copy_box(&[9, 8, 7, 6], &[], &mut one, &[], &[], 4);
        assert_eq!(one, [9, 8, 7, 6]);
    }

    #[test]
    #[should_panic(expected = "box exceeds dimension 1")]
    fn out_of_range_boxes_panic_instead_of_writing() {
        let ok = DimCopy { src_start: 0, src_step: 1, dst_start: 0, count: 2 };
        let dims2 = [ok, DimCopy { src_start: 0, src_step: 1, dst_start: 2, count: 2 }];
        copy_box(&[0u8; 16], &[4, 4], &mut [0u8; 16], &[4, 3], &dims2, 1);
    }

    #[test]
    fn fill_outside_matches_its_definition_element_by_element() {
        let shape = [3u64, 4, 5];
        for valid in [[3u64, 4, 5], [2, 4, 5], [3, 1, 5], [3, 4, 2], [1, 2, 3], [0, 4, 5], [3, 0, 0]] {
            let mut buf: Vec<u8> = (0..60 * 2).map(|i| i as u8).collect();
            let original = buf.clone();
            fill_outside(&mut buf, &shape, &valid, &[0xAB, 0xCD]);
            for linear in 0..60usize {
                let index = unravel(linear as u64, &shape);
                let inside = index.iter().zip(&valid).all(|(i, v)| i < v);
                let want = if inside { &original[linear * 2..linear * 2 + 2] } else { &[0xAB, 0xCD][..] };
                assert_eq!(&buf[linear * 2..linear * 2 + 2], want, "valid {valid:?}, element {index:?}");
            }
        }
    }

    #[test]
    fn fill_outside_keeps_the_valid_box() {
        let mut buf = vec![1u8; 12];
        fill_outside(&mut buf, &[3, 4], &[2, 3], &[0]);
        assert_eq!(buf, [1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0]);
    }
}

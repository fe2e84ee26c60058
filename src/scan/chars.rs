//! Which netCDF `char` arrays have their last dimension folded into fixed-width strings: exactly
//! those xarray stacks into strings (its `stackable` rule in `decode_cf_variables`), so a store opens
//! in xarray with the dimensions the source file shows.
//!
//! xarray stacks the last dimension of a `char` array unless a variable of the group is named after
//! that dimension (a 1-D char coordinate `x(x)` stays a character array: folding it would make `x`
//! a scalar while other variables use the dimension `x`) or a variable of the group uses the
//! dimension as anything but the last dimension of a `char` array.
//!
//! A string dimension of length 1 is never folded: xarray reads every array of one-byte strings
//! (`S1`) as characters to stack along its last dimension, so a folded `char x1(x, string1)` would
//! come back as one string of `len(x)` characters instead of `len(x)` strings of one character.
//! Kept as it is in the file, `(x, string1)` of `S1`, it reads as the source does.

/// One variable of a group, as far as the rule needs it.
pub(crate) struct CharUse<'a> {
    /// Its name within the group.
    pub(crate) name: &'a str,
    /// Its dimension names.
    pub(crate) dims: Vec<&'a str>,
    /// Whether it is a `char` array (one-byte strings).
    pub(crate) is_char: bool,
}

/// Whether the dimension `dim` of a group whose variables are `group` may be folded into the
/// element of the `char` arrays whose last dimension it is.
pub(crate) fn char_dim_stackable(dim: &str, group: &[CharUse<'_>]) -> bool {
    group.iter().all(|v| v.name != dim && (!v.dims.contains(&dim) || (v.is_char && v.dims.last() == Some(&dim))))
}

/// The string length a `char` array's last dimension of `length` elements folds into: `None` for a
/// length of 0 (nothing to fold) or 1 (the dimension is kept, see the module's note).
pub(crate) fn folded_length(length: u64) -> Option<u32> {
    u32::try_from(length).ok().filter(|&n| n > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var<'a>(name: &'a str, dims: &[&'a str], is_char: bool) -> CharUse<'a> {
        CharUse { name, dims: dims.to_vec(), is_char }
    }

    #[test]
    fn xarrays_stackable_rule() {
        let group =
            [var("names", &["n", "strlen"], true), var("other", &["m", "strlen"], true), var("t", &["n"], false)];
        assert!(char_dim_stackable("strlen", &group));
        assert!(!char_dim_stackable("n", &group), "a numeric variable uses n");
        let coordinate = [var("x", &["x"], true), var("v", &["x"], false)];
        assert!(!char_dim_stackable("x", &coordinate), "a 1-D char coordinate stays an array");
        let leading = [var("a", &["strlen", "k"], true), var("b", &["k", "strlen"], true)];
        assert!(!char_dim_stackable("strlen", &leading), "used as a leading dimension elsewhere");
    }

    #[test]
    fn one_character_strings_keep_their_dimension() {
        assert_eq!(folded_length(0), None);
        assert_eq!(folded_length(1), None, "S1 with dims (x,) would read as one string along x");
        assert_eq!(folded_length(2), Some(2));
        assert_eq!(folded_length(u64::from(u32::MAX) + 1), None);
    }
}

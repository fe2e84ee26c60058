//! [`CoordinateValues`]: one file's values of a concatenation coordinate (or its bounds), held
//! compactly when they are an arithmetic progression.
//!
//! A scan keeps every file's coordinate along the concatenation dimensions until the files are
//! combined (ordering, overlap and gap checks, re-encoding times). Held as a list that is 8 bytes per
//! time step of every file at once: as much as the chunk table itself in an archive with one chunk per
//! time step. The everyday time coordinate is a progression (`0, 1, 2, ...` hours, `0.5, 1.5, ...`
//! days), and bounds are two interleaved ones (`[0, 1], [1, 2], ...`), so a progression is kept as its
//! first values and step, in a few bytes per file. Values are reproduced bit for bit: a list that is
//! not exactly `base + i * step` (in f64 arithmetic) is kept as it is, shared between clones.

use std::sync::Arc;

/// Coordinate values: a list of f64, stored as an arithmetic progression when it is one exactly.
#[derive(Debug, Clone, Default)]
pub struct CoordinateValues {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    /// `value[k] = bases[k % period] + (k / period) * step`, for `k < len`.
    Progression { bases: [f64; 2], period: usize, step: f64, len: usize },
    /// Any other list (shared between clones).
    Listed(Arc<[f64]>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Listed(Arc::from(Vec::new()))
    }
}

/// Periods tried: a coordinate (1) and the interleaved lower and upper bounds of its cells (2).
const PERIODS: [usize; 2] = [1, 2];

impl CoordinateValues {
    /// The values, kept as a progression when they are exactly one.
    pub fn new(values: Vec<f64>) -> Self {
        for period in PERIODS {
            if let Some(repr) = progression(&values, period) {
                return CoordinateValues { repr };
            }
        }
        CoordinateValues { repr: Repr::Listed(Arc::from(values)) }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Progression { len, .. } => *len,
            Repr::Listed(values) => values.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i`, `None` past the end.
    pub fn get(&self, i: usize) -> Option<f64> {
        match &self.repr {
            Repr::Progression { bases, period, step, len } => {
                (i < *len).then(|| bases[i % period] + (i / period) as f64 * step)
            }
            Repr::Listed(values) => values.get(i).copied(),
        }
    }

    /// The first value.
    pub fn first(&self) -> Option<f64> {
        self.get(0)
    }

    /// The last value.
    pub fn last(&self) -> Option<f64> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Every value, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(f64::NAN))
    }

    /// The values as a list.
    pub fn to_vec(&self) -> Vec<f64> {
        self.iter().collect()
    }

    /// True when kept as a progression (a few bytes, however many values).
    pub fn is_progression(&self) -> bool {
        matches!(self.repr, Repr::Progression { .. })
    }
}

/// The progression of `period` interleaved sequences with one step that `values` is exactly, if any
/// (at least two values per sequence).
fn progression(values: &[f64], period: usize) -> Option<Repr> {
    if values.len() < 2 * period {
        return None;
    }
    let mut bases = [0.0; 2];
    bases[..period].copy_from_slice(&values[..period]);
    let step = values[period] - values[0];
    let exact = values.iter().enumerate().all(|(i, v)| {
        let made = bases[i % period] + (i / period) as f64 * step;
        made.to_bits() == v.to_bits()
    });
    exact.then_some(Repr::Progression { bases, period, step, len: values.len() })
}

impl From<Vec<f64>> for CoordinateValues {
    fn from(values: Vec<f64>) -> Self {
        CoordinateValues::new(values)
    }
}

impl FromIterator<f64> for CoordinateValues {
    fn from_iter<I: IntoIterator<Item = f64>>(values: I) -> Self {
        CoordinateValues::new(values.into_iter().collect())
    }
}

impl PartialEq for CoordinateValues {
    /// Equal values (as `f64` compares them, like two lists).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: Vec<f64>) -> CoordinateValues {
        let kept = CoordinateValues::new(values.clone());
        let back = kept.to_vec();
        assert_eq!(back.len(), values.len());
        for (a, b) in back.iter().zip(&values) {
            assert_eq!(a.to_bits(), b.to_bits(), "{values:?}");
        }
        assert_eq!(kept.first().map(f64::to_bits), values.first().map(|v| v.to_bits()));
        assert_eq!(kept.last().map(f64::to_bits), values.last().map(|v| v.to_bits()));
        kept
    }

    #[test]
    fn progressions_are_kept_compactly_and_reproduced_bit_for_bit() {
        let hours: Vec<f64> = (0..10_000).map(|i| 87_600.0 + f64::from(i)).collect();
        assert!(round_trip(hours).is_progression());
        let days: Vec<f64> = (0..365).map(|i| 0.5 + f64::from(i)).collect();
        assert!(round_trip(days).is_progression());
        let bounds: Vec<f64> = (0..365).flat_map(|i| [f64::from(i), f64::from(i + 1)]).collect();
        assert!(round_trip(bounds).is_progression());
        let decreasing: Vec<f64> = (0..180).map(|i| 89.5 - f64::from(i)).collect();
        assert!(round_trip(decreasing).is_progression());
    }

    #[test]
    fn other_lists_are_kept_as_they_are() {
        // Month starts (days since 2000-01-01): not one step.
        assert!(!round_trip(vec![0.0, 31.0, 60.0, 91.0, 121.0, 152.0]).is_progression());
        // Hours in days, computed as i / 24: not `first + i * step` exactly everywhere.
        let hourly: Vec<f64> = (0..1000).map(|i| f64::from(i) / 24.0).collect();
        round_trip(hourly);
        round_trip(vec![0.5, f64::NAN, 2.0]);
        round_trip(vec![-0.0, 0.0]);
        round_trip(vec![1.0]);
        round_trip(Vec::new());
    }

    #[test]
    fn equality_is_that_of_the_values() {
        let a = CoordinateValues::new(vec![1.0, 2.0, 3.0]);
        let b = CoordinateValues::new(vec![1.0, 2.0, 3.0]);
        assert_eq!(a, b);
        assert_ne!(a, CoordinateValues::new(vec![1.0, 2.0, 4.0]));
        assert_ne!(a, CoordinateValues::new(vec![1.0, 2.0]));
        assert_eq!(CoordinateValues::new(vec![0.0, 5.0, 1.0]), CoordinateValues::new(vec![0.0, 5.0, 1.0]));
    }
}

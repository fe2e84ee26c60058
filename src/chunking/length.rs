//! [`ChunkLength`]: a chunk length along one dimension as a user writes it.

use super::calendar::CalendarUnit;

/// How long chunks along a dimension are.
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkLength {
    /// This many elements (at least 1).
    Elements(u64),
    /// The steps of a time dimension whose times fall in one calendar period (or one span of a
    /// duration), in the time coordinate's CF calendar.
    Calendar(CalendarUnit),
    /// One chunk per run of equal values of this 1-D variable along the dimension.
    By(String),
}

impl ChunkLength {
    /// The number of elements, for a plain length.
    #[must_use]
    pub fn elements(&self) -> Option<u64> {
        match self {
            ChunkLength::Elements(n) => Some(*n),
            _ => None,
        }
    }
}

impl From<u64> for ChunkLength {
    fn from(n: u64) -> Self {
        ChunkLength::Elements(n)
    }
}

impl std::fmt::Display for ChunkLength {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkLength::Elements(n) => write!(f, "{n}"),
            ChunkLength::Calendar(unit) => write!(f, "{unit}"),
            ChunkLength::By(var) => write!(f, "by:{var}"),
        }
    }
}

impl std::str::FromStr for ChunkLength {
    type Err = String;

    /// `30`, `month` (also `day`, `season`, `year`), a duration (`6h`, `10d`, `30min`), or `by:VAR`.
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(var) = text.strip_prefix("by:") {
            let var = var.trim();
            if var.is_empty() {
                return Err(format!("{text:?}: by: needs a variable, such as by:basin"));
            }
            return Ok(ChunkLength::By(var.to_string()));
        }
        if let Ok(n) = text.parse::<u64>() {
            return match n {
                0 => Err(format!("{text:?}: a chunk length must be at least 1")),
                n => Ok(ChunkLength::Elements(n)),
            };
        }
        text.parse::<CalendarUnit>().map(ChunkLength::Calendar).map_err(|e| {
            format!(
                "{text:?}: {e}; a chunk length is a number, day, month, season, year, a duration (6h, 10d) or by:VAR"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_parse_as_written() {
        assert_eq!("30".parse::<ChunkLength>().unwrap(), ChunkLength::Elements(30));
        assert_eq!("month".parse::<ChunkLength>().unwrap(), ChunkLength::Calendar(CalendarUnit::Month));
        assert_eq!("by:basin".parse::<ChunkLength>().unwrap(), ChunkLength::By("basin".into()));
        assert_eq!("6h".parse::<ChunkLength>().unwrap().to_string(), "6h");
        assert!("0".parse::<ChunkLength>().is_err());
        assert!("by:".parse::<ChunkLength>().is_err());
        let err = "fortnight".parse::<ChunkLength>().unwrap_err();
        assert!(err.contains("a chunk length is a number"), "{err}");
    }
}

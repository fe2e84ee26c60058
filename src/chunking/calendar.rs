//! Chunk edges that follow the calendar (input: a time coordinate's instants, seconds since its
//! calendar's day 0 as `cftime` gives them, and a [`CalendarUnit`]; output: the edges).
//!
//! Each step belongs to the period its time falls in: the day of its date, the month, the
//! meteorological season (DJF, MAM, JJA, SON; December counts with the next year's winter), the
//! year, or for a duration the span of that length counted from midnight of the first step's day.
//! Consecutive steps of one period make one chunk, so daily steps give months of 28 to 31 (30 in a
//! `360_day` calendar), a month with missing days is a chunk of the days it has, and 6-hourly steps
//! at 03:00, 09:00, ... belong to their own days.

use crate::cftime::Calendar;

/// Seconds in a day.
const DAY: f64 = 86_400.0;

/// A calendar period, or a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarUnit {
    /// A calendar day.
    Day,
    /// A calendar month.
    Month,
    /// A meteorological season: DJF, MAM, JJA, SON.
    Season,
    /// A calendar year.
    Year,
    /// A span of this many seconds (`6h`, `10d`), counted from midnight of the first step's day.
    Span(u64),
}

impl std::fmt::Display for CalendarUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            CalendarUnit::Day => f.write_str("day"),
            CalendarUnit::Month => f.write_str("month"),
            CalendarUnit::Season => f.write_str("season"),
            CalendarUnit::Year => f.write_str("year"),
            CalendarUnit::Span(s) if s.is_multiple_of(86_400) => write!(f, "{}d", s / 86_400),
            CalendarUnit::Span(s) if s.is_multiple_of(3_600) => write!(f, "{}h", s / 3_600),
            CalendarUnit::Span(s) if s.is_multiple_of(60) => write!(f, "{}min", s / 60),
            CalendarUnit::Span(s) => write!(f, "{s}s"),
        }
    }
}

impl std::str::FromStr for CalendarUnit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim().to_ascii_lowercase();
        Ok(match text.as_str() {
            "day" => CalendarUnit::Day,
            "month" => CalendarUnit::Month,
            "season" => CalendarUnit::Season,
            "year" => CalendarUnit::Year,
            _ => {
                let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
                let (n, unit) = text.split_at(digits);
                let n: u64 = n.parse().map_err(|_| "not a calendar unit or a duration".to_string())?;
                let seconds = match unit.trim() {
                    "d" => 86_400,
                    "h" => 3_600,
                    "min" => 60,
                    "s" => 1,
                    _ => return Err("not a calendar unit or a duration".into()),
                };
                match n.checked_mul(seconds).filter(|&s| s > 0) {
                    Some(s) => CalendarUnit::Span(s),
                    None => return Err("a duration must be at least one second".into()),
                }
            }
        })
    }
}

/// Why a time coordinate gives no calendar edges.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CalendarError {
    /// The `none` calendar has no dates.
    #[error("its calendar is \"none\", which has no dates")]
    NoDates,
    /// A time value that is not a finite number (a missing value).
    #[error("time value {index} is not a number ({value})")]
    NotFinite {
        /// Its index along the dimension.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A date outside what the calendar arithmetic covers.
    #[error("time value {index} lies outside the years -10^9..10^9")]
    OutOfRange {
        /// Its index along the dimension.
        index: usize,
    },
}

/// The period a step of time `instant` (on day number `day`) belongs to, as a number equal for the
/// steps of one period; spans count from `origin`.
fn period(unit: CalendarUnit, calendar: Calendar, day: i64, instant: f64, origin: f64) -> Option<i64> {
    let date = || calendar.date_of(day);
    Some(match unit {
        CalendarUnit::Span(seconds) => ((instant - origin) / seconds as f64).floor() as i64,
        CalendarUnit::Day => day,
        CalendarUnit::Month => {
            let (year, month, _) = date()?;
            year * 12 + i64::from(month)
        }
        CalendarUnit::Year => date()?.0,
        // December starts the next year's winter.
        CalendarUnit::Season => match date()? {
            (year, 12, _) => (year + 1) * 4,
            (year, month, _) => year * 4 + i64::from(month / 3),
        },
    })
}

/// The chunk edges of `unit` over the steps at `instants` (seconds since the calendar's day 0), in
/// `calendar`: one chunk per run of consecutive steps of one period.
///
/// # Errors
/// [`CalendarError`] for the `none` calendar and for a time value that is no date.
pub(crate) fn calendar_edges(
    unit: CalendarUnit,
    calendar: Calendar,
    instants: &[f64],
) -> Result<Vec<u64>, CalendarError> {
    let mut edges = CalendarEdges::new(unit, calendar)?;
    edges.push(instants)?;
    Ok(edges.finish())
}

/// [`calendar_edges`] over instants given a slab at a time (a coordinate of 10^7 steps is read in
/// slabs, never held whole).
#[derive(Debug)]
pub(crate) struct CalendarEdges {
    unit: CalendarUnit,
    calendar: Calendar,
    /// Midnight of the first step's day (the origin of spans), once a step is seen.
    origin: Option<f64>,
    /// Steps seen so far.
    seen: usize,
    /// The last step's period.
    last: Option<i64>,
    edges: Vec<u64>,
}

impl CalendarEdges {
    /// Edges of `unit` in `calendar`, no step seen yet.
    ///
    /// # Errors
    /// [`CalendarError::NoDates`] for the `none` calendar.
    pub(crate) fn new(unit: CalendarUnit, calendar: Calendar) -> Result<Self, CalendarError> {
        if calendar == Calendar::None {
            return Err(CalendarError::NoDates);
        }
        Ok(CalendarEdges { unit, calendar, origin: None, seen: 0, last: None, edges: Vec::new() })
    }

    /// Spans counted from midnight of the day of `instant` (the coordinate's first step) rather than
    /// from the first step pushed: edges of a coordinate's tail.
    pub(crate) fn set_origin(&mut self, instant: f64) {
        self.origin = Some((instant / DAY).floor() * DAY);
    }

    /// The next steps' instants.
    ///
    /// # Errors
    /// [`CalendarError`] for a time value that is no date (its index counted from the first step).
    pub(crate) fn push(&mut self, instants: &[f64]) -> Result<(), CalendarError> {
        for &instant in instants {
            let index = self.seen;
            self.seen += 1;
            if !instant.is_finite() {
                return Err(CalendarError::NotFinite { index, value: instant });
            }
            let day = (instant / DAY).floor();
            if day.abs() > 4e11 {
                return Err(CalendarError::OutOfRange { index });
            }
            let origin = *self.origin.get_or_insert(day * DAY);
            let key = period(self.unit, self.calendar, day as i64, instant, origin).ok_or(CalendarError::NoDates)?;
            match self.edges.last_mut() {
                Some(edge) if self.last == Some(key) => *edge += 1,
                _ => self.edges.push(1),
            }
            self.last = Some(key);
        }
        Ok(())
    }

    /// The edges of the steps seen.
    pub(crate) fn finish(self) -> Vec<u64> {
        self.edges
    }
}

/// Month names, for descriptions.
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// How a user reads a grid whose chunks are calendar periods: `12 chunks, one a month: Jan 2001 31
/// ... Dec 2001 31` (also seasons, `DJF 2001 59 ...`, and years, `2001 365 ...`); None when the
/// chunks `held` (elements each chunk holds) are not one month, season or year each.
pub(crate) fn describe_calendar_grid(held: &[u64], calendar: Calendar, instants: &[f64]) -> Option<String> {
    if held.len() < 2 || held.iter().sum::<u64>() != instants.len() as u64 {
        return None;
    }
    let units = [(CalendarUnit::Month, "month"), (CalendarUnit::Season, "season"), (CalendarUnit::Year, "year")];
    let (unit, name) =
        units.into_iter().find(|(u, _)| calendar_edges(*u, calendar, instants).ok().as_deref() == Some(held))?;
    let label = |start: usize, length: u64| {
        let (year, month, _) = calendar.date_of((instants[start] / DAY).floor() as i64)?;
        Some(match unit {
            CalendarUnit::Month => format!("{} {year} {length}", MONTHS[month as usize - 1]),
            CalendarUnit::Season => {
                let (season, year) = match month {
                    12 => (0, year + 1),
                    m => ((m / 3) as usize, year),
                };
                format!("{} {year} {length}", ["DJF", "MAM", "JJA", "SON"][season])
            }
            _ => format!("{year} {length}"),
        })
    };
    let last_start = (instants.len() as u64 - held[held.len() - 1]) as usize;
    let (first, last) = (label(0, held[0])?, label(last_start, held[held.len() - 1])?);
    Some(format!("{} chunks, one a {name}: {first} ... {last}", held.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_grids_are_described_as_months() {
        let c = Calendar::NoLeap;
        let days = steps(c, 2001, 365, 1.0, 12.0);
        let months = calendar_edges(CalendarUnit::Month, c, &days).unwrap();
        let text = describe_calendar_grid(&months, c, &days).unwrap();
        assert_eq!(text, "12 chunks, one a month: Jan 2001 31 ... Dec 2001 31");
        let seasons = calendar_edges(CalendarUnit::Season, c, &days).unwrap();
        assert_eq!(
            describe_calendar_grid(&seasons, c, &days).unwrap(),
            "5 chunks, one a season: DJF 2001 59 ... DJF 2002 31"
        );
        assert_eq!(describe_calendar_grid(&[30; 12][..], c, &days[..360]), None);
        assert_eq!(describe_calendar_grid(&[365], c, &days), None);
    }

    /// Instants of `n` steps of `step_days` from `year-01-01` plus `hour` hours, in `calendar`.
    fn steps(calendar: Calendar, year: i64, n: usize, step_days: f64, hour: f64) -> Vec<f64> {
        let start = calendar.day_number(year, 1, 1).unwrap() as f64 * DAY + hour * 3600.0;
        (0..n).map(|i| start + i as f64 * step_days * DAY).collect()
    }

    #[test]
    fn daily_steps_give_the_months_of_each_calendar() {
        let months = |c, year, days| calendar_edges(CalendarUnit::Month, c, &steps(c, year, days, 1.0, 12.0)).unwrap();
        let gregorian = vec![31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        assert_eq!(months(Calendar::Standard, 2000, 366), gregorian);
        assert_eq!(months(Calendar::ProlepticGregorian, 2000, 366), gregorian);
        let mut noleap = gregorian.clone();
        noleap[1] = 28;
        assert_eq!(months(Calendar::NoLeap, 2000, 365), noleap);
        assert_eq!(months(Calendar::AllLeap, 2001, 366), gregorian);
        assert_eq!(months(Calendar::Day360, 2001, 360), vec![30; 12]);
        // 1900: a leap year in the Julian calendar, not in the Gregorian ones.
        assert_eq!(months(Calendar::Julian, 1900, 366)[1], 29);
        assert_eq!(months(Calendar::ProlepticGregorian, 1900, 365)[1], 28);
        // October 1582 of the standard calendar has 21 days (the 5th to the 14th never were).
        let october = Calendar::Standard.day_number(1582, 10, 1).unwrap() as f64 * DAY;
        let days: Vec<f64> = (0..52).map(|i| october + f64::from(i) * DAY).collect();
        assert_eq!(calendar_edges(CalendarUnit::Month, Calendar::Standard, &days).unwrap(), vec![21, 30, 1]);
    }

    #[test]
    fn seasons_years_days_and_spans() {
        let c = Calendar::NoLeap;
        let year = steps(c, 2001, 365, 1.0, 0.0);
        // JF of 2001's winter, MAM, JJA, SON, and December opening the next winter.
        assert_eq!(calendar_edges(CalendarUnit::Season, c, &year).unwrap(), vec![59, 92, 92, 91, 31]);
        assert_eq!(calendar_edges(CalendarUnit::Year, c, &steps(c, 2001, 730, 1.0, 0.0)).unwrap(), vec![365, 365]);
        let six_hourly = steps(c, 2001, 8, 0.25, 3.0);
        assert_eq!(calendar_edges(CalendarUnit::Day, c, &six_hourly).unwrap(), vec![4, 4]);
        assert_eq!(calendar_edges(CalendarUnit::Span(12 * 3600), c, &six_hourly).unwrap(), vec![2, 2, 2, 2]);
        assert_eq!(calendar_edges(CalendarUnit::Span(10 * 86_400), c, &year[..25]).unwrap(), vec![10, 10, 5]);
    }

    #[test]
    fn edges_pushed_in_slabs_equal_the_whole() {
        let c = Calendar::Standard;
        let six_hourly = steps(c, 2001, 3000, 0.25, 3.0);
        for unit in [CalendarUnit::Month, CalendarUnit::Day, CalendarUnit::Span(10 * 86_400)] {
            let whole = calendar_edges(unit, c, &six_hourly).unwrap();
            for slab in [1, 7, 124, 1000] {
                let mut edges = CalendarEdges::new(unit, c).unwrap();
                for part in six_hourly.chunks(slab) {
                    edges.push(part).unwrap();
                }
                assert_eq!(edges.finish(), whole, "{unit} in slabs of {slab}");
            }
        }
        // The index of a value that is no date counts from the first step.
        let mut edges = CalendarEdges::new(CalendarUnit::Month, c).unwrap();
        edges.push(&six_hourly[..5]).unwrap();
        let err = edges.push(&[six_hourly[5], f64::NAN]).unwrap_err();
        assert!(matches!(err, CalendarError::NotFinite { index: 6, value } if value.is_nan()), "{err}");
    }

    #[test]
    fn gaps_and_monthly_means() {
        let c = Calendar::ProlepticGregorian;
        // January without its 10th to 19th: the days it has.
        let mut days = steps(c, 2001, 40, 1.0, 0.0);
        days.drain(9..19);
        assert_eq!(calendar_edges(CalendarUnit::Month, c, &days).unwrap(), vec![21, 9]);
        // Monthly means stamped mid-month: one a chunk by month, twelve by year.
        let mids: Vec<f64> = (1..=24)
            .map(|k| c.day_number(2001 + (k - 1) / 12, ((k - 1) % 12 + 1) as u32, 15).unwrap() as f64 * DAY)
            .collect();
        assert_eq!(calendar_edges(CalendarUnit::Month, c, &mids).unwrap(), vec![1; 24]);
        assert_eq!(calendar_edges(CalendarUnit::Year, c, &mids).unwrap(), vec![12, 12]);
    }

    #[test]
    fn values_that_are_no_dates_are_refused() {
        let c = Calendar::Standard;
        assert_eq!(calendar_edges(CalendarUnit::Month, Calendar::None, &[0.0]), Err(CalendarError::NoDates));
        let err = calendar_edges(CalendarUnit::Month, c, &[0.0, f64::NAN]).unwrap_err();
        assert_eq!(err.to_string(), "time value 1 is not a number (NaN)");
        assert!(calendar_edges(CalendarUnit::Month, c, &[1e30]).is_err());
        assert_eq!(calendar_edges(CalendarUnit::Month, c, &[]), Ok(vec![]));
    }

    #[test]
    fn units_parse_and_print() {
        for text in ["day", "month", "season", "year", "6h", "10d", "30min", "90s"] {
            assert_eq!(text.parse::<CalendarUnit>().unwrap().to_string(), text);
        }
        assert_eq!("24h".parse::<CalendarUnit>().unwrap().to_string(), "1d");
        assert!("0h".parse::<CalendarUnit>().is_err());
        assert!("week".parse::<CalendarUnit>().is_err());
    }
}

//! CF time coordinates (CF conventions 1.11, section 4.4): `"<unit> since <reference>"` units and the
//! calendars `standard` (= `gregorian`, Julian before 1582-10-15), `proleptic_gregorian`, `julian`,
//! `noleap` (= `365_day`), `all_leap` (= `366_day`), `360_day` and `none`.
//!
//! Pure arithmetic: a value becomes an instant (seconds since the calendar's day 0) so that files
//! using different units can be ordered, checked for overlaps and re-encoded to one unit.

/// A CF calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Calendar {
    /// Mixed Julian/Gregorian (`standard`, `gregorian`, the default).
    Standard,
    /// Gregorian rules for all dates.
    ProlepticGregorian,
    /// Julian rules for all dates.
    Julian,
    /// 365-day years.
    NoLeap,
    /// 366-day years.
    AllLeap,
    /// 12 months of 30 days.
    Day360,
    /// No calendar: values cannot be compared across units.
    None,
}

/// Why a CF calendar or time units do not parse ([`Calendar::parse`], [`TimeUnits::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CfTimeError {
    /// A calendar CF does not define.
    #[error("unknown calendar {0:?}")]
    Calendar(String),
    /// Units not of the form `<unit> since <date>`.
    #[error("units {0:?} are not \"<unit> since <date>\"")]
    NotSince(String),
    /// A time unit CF does not define.
    #[error("unknown time unit {0:?}")]
    Unit(String),
    /// A reference date that does not parse (in the calendar).
    #[error("cannot parse reference date {0:?}")]
    Reference(String),
}

impl Calendar {
    /// Parses a `calendar` attribute (case-insensitive); a missing attribute means `standard`.
    ///
    /// # Errors
    /// [`CfTimeError::Calendar`], naming the unknown calendar.
    pub(crate) fn parse(name: Option<&str>) -> Result<Self, CfTimeError> {
        let name = name.map(|n| n.trim().to_ascii_lowercase());
        Ok(match name.as_deref() {
            None | Some("standard" | "gregorian" | "") => Calendar::Standard,
            Some("proleptic_gregorian") => Calendar::ProlepticGregorian,
            Some("julian") => Calendar::Julian,
            Some("noleap" | "365_day") => Calendar::NoLeap,
            Some("all_leap" | "366_day") => Calendar::AllLeap,
            Some("360_day") => Calendar::Day360,
            Some("none") => Calendar::None,
            Some(other) => return Err(CfTimeError::Calendar(other.to_string())),
        })
    }

    /// Day number of a date (days since the calendar's day 0), or None when the date is invalid.
    pub(crate) fn day_number(self, year: i64, month: u32, day: u32) -> Option<i64> {
        if !(1..=12).contains(&month) || day == 0 || day > self.month_length(year, month)? {
            return None;
        }
        let (m, d) = (i64::from(month), i64::from(day));
        Some(match self {
            Calendar::NoLeap => year * 365 + CUMULATIVE[month as usize - 1] + d - 1,
            Calendar::AllLeap => year * 366 + CUMULATIVE_LEAP[month as usize - 1] + d - 1,
            Calendar::Day360 => year * 360 + (m - 1) * 30 + d - 1,
            Calendar::ProlepticGregorian => gregorian_jdn(year, m, d),
            Calendar::Julian => julian_jdn(year, m, d),
            Calendar::Standard => {
                if (year, month, day) >= (1582, 10, 15) {
                    gregorian_jdn(year, m, d)
                } else if (year, month, day) <= (1582, 10, 4) {
                    julian_jdn(year, m, d)
                } else {
                    return None;
                }
            }
            Calendar::None => return None,
        })
    }

    /// The date (year, month, day) of day number `day` (days since the calendar's day 0, as
    /// [`Calendar::day_number`] counts them); None for the `none` calendar.
    pub(crate) fn date_of(self, day: i64) -> Option<(i64, u32, u32)> {
        let in_year = |day: i64, length: i64, cumulative: &[i64; 12]| {
            let (year, rest) = (day.div_euclid(length), day.rem_euclid(length));
            let month = cumulative.iter().rposition(|&c| c <= rest).unwrap_or(0);
            (year, month as u32 + 1, (rest - cumulative[month]) as u32 + 1)
        };
        Some(match self {
            Calendar::NoLeap => in_year(day, 365, &CUMULATIVE),
            Calendar::AllLeap => in_year(day, 366, &CUMULATIVE_LEAP),
            Calendar::Day360 => {
                let (year, rest) = (day.div_euclid(360), day.rem_euclid(360));
                (year, (rest / 30) as u32 + 1, (rest % 30) as u32 + 1)
            }
            Calendar::ProlepticGregorian => gregorian_date(day),
            Calendar::Julian => julian_date(day),
            Calendar::Standard if day >= GREGORIAN_START => gregorian_date(day),
            Calendar::Standard => julian_date(day),
            Calendar::None => return None,
        })
    }

    fn month_length(self, year: i64, month: u32) -> Option<u32> {
        let leap = match self {
            Calendar::NoLeap => false,
            Calendar::AllLeap => true,
            Calendar::Day360 => return Some(30),
            Calendar::ProlepticGregorian => gregorian_leap(year),
            Calendar::Julian => year % 4 == 0,
            Calendar::Standard if year > 1582 => gregorian_leap(year),
            Calendar::Standard => year % 4 == 0,
            Calendar::None => return None,
        };
        Some(match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        })
    }
}

const CUMULATIVE: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
const CUMULATIVE_LEAP: [i64; 12] = [0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335];

fn gregorian_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Julian day number (Fliegel & Van Flandern) of a proleptic Gregorian date.
fn gregorian_jdn(y: i64, m: i64, d: i64) -> i64 {
    let a = (14 - m) / 12;
    let (y, m) = (y + 4800 - a, m + 12 * a - 3);
    d + (153 * m + 2) / 5 + 365 * y + y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400) - 32045
}

/// The Julian day number of 1582-10-15, the first Gregorian day of the `standard` calendar.
const GREGORIAN_START: i64 = 2_299_161;

/// The proleptic Gregorian date of Julian day number `j` (Richards' algorithm, E. G. Richards,
/// "Calendars", Explanatory Supplement to the Astronomical Almanac, 2013).
fn gregorian_date(j: i64) -> (i64, u32, u32) {
    let a = j + 32_044;
    let b = (4 * a + 3).div_euclid(146_097);
    let c = a - (146_097 * b).div_euclid(4);
    let (year, month, day) = month_and_day(c);
    (100 * b + year, month, day)
}

/// The Julian calendar date of Julian day number `j`.
fn julian_date(j: i64) -> (i64, u32, u32) {
    month_and_day(j + 32_082)
}

/// Year (offset by 4800, in the algorithm's count), month and day from the algorithm's day count `c`
/// of a four-year cycle.
fn month_and_day(c: i64) -> (i64, u32, u32) {
    let d = (4 * c + 3).div_euclid(1461);
    let e = c - (1461 * d).div_euclid(4);
    let m = (5 * e + 2).div_euclid(153);
    let day = e - (153 * m + 2).div_euclid(5) + 1;
    let month = m + 3 - 12 * m.div_euclid(10);
    (d - 4800 + m.div_euclid(10), month as u32, day as u32)
}

/// Julian day number of a Julian calendar date.
fn julian_jdn(y: i64, m: i64, d: i64) -> i64 {
    let a = (14 - m) / 12;
    let (y, m) = (y + 4800 - a, m + 12 * a - 3);
    d + (153 * m + 2) / 5 + 365 * y + y.div_euclid(4) - 32083
}

/// Parsed CF time units with their calendar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TimeUnits {
    /// Seconds per unit.
    pub unit_seconds: f64,
    /// The reference instant in seconds since the calendar's day 0.
    pub reference: f64,
    /// The calendar.
    pub calendar: Calendar,
}

impl TimeUnits {
    /// Parses `"<unit> since <YYYY-MM-DD[ hh:mm[:ss[.f]]][Z|±hh:mm]>"`.
    ///
    /// # Errors
    /// [`CfTimeError`], saying what part does not parse.
    pub(crate) fn parse(units: &str, calendar: Calendar) -> Result<Self, CfTimeError> {
        let (unit, since) = units.split_once(" since ").ok_or_else(|| CfTimeError::NotSince(units.to_string()))?;
        let unit_seconds = match unit.trim().to_ascii_lowercase().as_str() {
            "days" | "day" | "d" => 86_400.0,
            "hours" | "hour" | "hr" | "h" => 3_600.0,
            "minutes" | "minute" | "min" => 60.0,
            "seconds" | "second" | "sec" | "s" => 1.0,
            "milliseconds" | "millisecond" | "msec" | "ms" => 1e-3,
            "microseconds" | "microsecond" | "usec" | "us" => 1e-6,
            other => return Err(CfTimeError::Unit(other.to_string())),
        };
        let reference =
            parse_datetime(since.trim(), calendar).ok_or_else(|| CfTimeError::Reference(since.to_string()))?;
        Ok(TimeUnits { unit_seconds, reference, calendar })
    }

    /// The instant of `value` (seconds since the calendar's day 0).
    pub(crate) fn instant(&self, value: f64) -> f64 {
        self.reference + value * self.unit_seconds
    }

    /// The value that encodes `instant` in these units.
    pub(crate) fn value(&self, instant: f64) -> f64 {
        (instant - self.reference) / self.unit_seconds
    }
}

/// Seconds since the calendar's day 0 of a date-time text.
fn parse_datetime(text: &str, calendar: Calendar) -> Option<f64> {
    let text = text.trim_end_matches(['Z', 'z']).trim();
    let (date, rest) = match text.find([' ', 'T']) {
        Some(i) => (&text[..i], text[i + 1..].trim()),
        None => (text, ""),
    };
    let negative = date.starts_with('-');
    let mut parts = date.trim_start_matches('-').splitn(3, '-');
    let year: i64 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next().map_or(Some(1), |p| p.parse().ok())?;
    let day: u32 = parts.next().map_or(Some(1), |p| p.parse().ok())?;
    let year = if negative { -year } else { year };
    let days = calendar.day_number(year, month, day)?;
    Some(days as f64 * 86_400.0 + parse_time_of_day(rest)?)
}

fn parse_time_of_day(text: &str) -> Option<f64> {
    if text.is_empty() {
        return Some(0.0);
    }
    // Optional UTC offset after the time: "+hh:mm" / "-hh:mm" / " UTC".
    let text = text.trim_end_matches("UTC").trim();
    let (time, offset) = match text.rfind(['+', '-']) {
        Some(i) if i > 0 => (&text[..i], parse_offset(&text[i..])?),
        _ => (text, 0.0),
    };
    let mut fields = time.trim().split(':');
    let h: f64 = fields.next()?.parse().ok()?;
    let m: f64 = fields.next().map_or(Some(0.0), |p| p.parse().ok())?;
    let s: f64 = fields.next().map_or(Some(0.0), |p| p.parse().ok())?;
    Some(h * 3600.0 + m * 60.0 + s - offset)
}

fn parse_offset(text: &str) -> Option<f64> {
    let sign = if text.starts_with('-') { -1.0 } else { 1.0 };
    let mut fields = text[1..].split(':');
    let h: f64 = fields.next()?.parse().ok()?;
    let m: f64 = fields.next().map_or(Some(0.0), |p| p.parse().ok())?;
    Some(sign * (h * 3600.0 + m * 60.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(u: &str, cal: &str) -> TimeUnits {
        TimeUnits::parse(u, Calendar::parse(Some(cal)).unwrap()).unwrap()
    }

    #[test]
    fn standard_calendar_matches_known_dates() {
        let epoch = units("days since 1970-01-01", "standard");
        let feb = units("hours since 2024-02-01 00:00:00", "standard");
        // 2024-02-01 is day 19754 since 1970-01-01.
        assert_eq!(epoch.value(feb.instant(0.0)), 19_754.0);
        assert_eq!(epoch.value(feb.instant(12.0)), 19_754.5);
        // The Julian/Gregorian switch: 1582-10-04 is followed by 1582-10-15.
        let c = Calendar::Standard;
        assert_eq!(c.day_number(1582, 10, 15).unwrap() - c.day_number(1582, 10, 4).unwrap(), 1);
        assert!(c.day_number(1582, 10, 10).is_none());
    }

    #[test]
    fn model_calendars_count_their_own_days() {
        let noleap = units("days since 2000-01-01", "noleap");
        let next = units("days since 2001-01-01", "365_day");
        assert_eq!(noleap.value(next.instant(0.0)), 365.0);
        let d360 = units("days since 2000-01-01", "360_day");
        assert_eq!(d360.value(units("days since 2000-03-01", "360_day").instant(0.0)), 60.0);
        let leap = units("days since 2001-01-01", "all_leap");
        assert_eq!(leap.value(units("days since 2002-01-01", "366_day").instant(0.0)), 366.0);
        // 1900 is a leap year for the Julian calendar, not for the Gregorian one.
        let julian = units("days since 1900-01-01", "julian");
        assert_eq!(julian.value(units("days since 1901-01-01", "julian").instant(0.0)), 366.0);
        let gregorian = units("days since 1900-01-01", "proleptic_gregorian");
        assert_eq!(gregorian.value(units("days since 1901-01-01", "proleptic_gregorian").instant(0.0)), 365.0);
        assert!(Calendar::NoLeap.day_number(2000, 2, 29).is_none());
        assert!(Calendar::Day360.day_number(2000, 2, 30).is_some());
    }

    #[test]
    fn dates_of_day_numbers_invert_day_number_in_every_calendar() {
        let calendars = [
            Calendar::Standard,
            Calendar::ProlepticGregorian,
            Calendar::Julian,
            Calendar::NoLeap,
            Calendar::AllLeap,
            Calendar::Day360,
        ];
        for calendar in calendars {
            for year in [-4713, -1, 0, 1, 1582, 1583, 1899, 1900, 2000, 2023, 2024, 2100, 9999] {
                for month in 1..=12 {
                    for day in 1..=31 {
                        let Some(n) = calendar.day_number(year, month, day) else { continue };
                        assert_eq!(calendar.date_of(n), Some((year, month, day)), "{calendar:?} {year}-{month}-{day}");
                        // The next day number is the next date.
                        let (y, m, d) = calendar.date_of(n + 1).unwrap();
                        assert_eq!(
                            calendar.day_number(y, m, d),
                            Some(n + 1),
                            "{calendar:?} after {year}-{month}-{day}"
                        );
                    }
                }
            }
        }
        assert_eq!(Calendar::Standard.date_of(GREGORIAN_START - 1), Some((1582, 10, 4)));
        assert_eq!(Calendar::None.date_of(0), None);
    }

    #[test]
    fn unit_and_date_formats() {
        let a = units("seconds since 2023-01-01T06:00:00Z", "proleptic_gregorian");
        let b = units("minutes since 2023-01-01 00:00", "proleptic_gregorian");
        assert_eq!(b.value(a.instant(0.0)), 360.0);
        let c = units("hours since 2023-1-1 0:0:0 +06:00", "standard");
        assert_eq!(b.value(c.instant(0.0)), -360.0);
        assert!(TimeUnits::parse("K", Calendar::Standard).is_err());
        assert!(TimeUnits::parse("fortnights since 2000-01-01", Calendar::Standard).is_err());
        assert!(Calendar::parse(Some("martian")).is_err());
        assert!(TimeUnits::parse("days since 2000-01-01", Calendar::None).is_err());
    }
}

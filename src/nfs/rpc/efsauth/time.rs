//! UTC calendar times from Unix seconds, in the three spellings the certificate uses.

/// A whole-second UTC instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcTime {
    unix: i64,
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
}

/// The last second of year 9999: the largest instant the four-digit spellings (and
/// AWS's ISO `Expiration`) can say.
pub const MAX_UNIX: i64 = 253_402_300_799;

impl UtcTime {
    /// The calendar date of a Unix time (proleptic Gregorian; H. Hinnant's
    /// `civil_from_days`).
    pub fn from_unix(unix: i64) -> UtcTime {
        let days = unix.div_euclid(86_400);
        let secs = unix.rem_euclid(86_400) as u32;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        UtcTime {
            unix,
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
        }
    }

    /// A Unix time an endpoint gave, if it lies between 1970 and the end of 9999:
    /// anything else is a broken or hostile answer, and arithmetic on it could overflow.
    pub fn from_unix_checked(unix: i64) -> Option<UtcTime> {
        (0..=MAX_UNIX)
            .contains(&unix)
            .then(|| UtcTime::from_unix(unix))
    }

    /// [`UtcTime::from_unix_checked`] of a JSON number, which may be a float
    /// (`1.8934848E9`) of any size.
    pub fn from_unix_f64(secs: f64) -> Option<UtcTime> {
        if !secs.is_finite() || !(0.0..=MAX_UNIX as f64).contains(&secs) {
            return None;
        }
        UtcTime::from_unix_checked(secs as i64)
    }

    /// Now, to the whole second.
    pub fn now() -> UtcTime {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        UtcTime::from_unix(i64::try_from(d.as_secs()).unwrap_or(MAX_UNIX).min(MAX_UNIX))
    }

    /// An ISO 8601 UTC time as AWS writes credential expirations
    /// (`2026-11-26T18:00:00Z`, fractions of a second ignored).
    pub fn parse_iso(s: &str) -> Option<UtcTime> {
        let b = s.as_bytes();
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let t = s.get(r)?;
            t.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| t.parse().ok())?
        };
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
            return None;
        }
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
            return None;
        }
        // H. Hinnant's days_from_civil.
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        // Four-digit fields cannot overflow here; the range check refuses year 0000–1969.
        UtcTime::from_unix_checked(days * 86_400 + hh * 3600 + mm * 60 + ss)
    }

    pub fn unix(self) -> i64 {
        self.unix
    }

    /// This instant moved by `secs` seconds (saturating: no instant overflows).
    pub fn plus(self, secs: i64) -> UtcTime {
        UtcTime::from_unix(self.unix.saturating_add(secs))
    }

    /// Seconds from `earlier` to this instant (saturating, so times an endpoint gave
    /// cannot overflow a comparison).
    pub fn since(self, earlier: UtcTime) -> i64 {
        self.unix.saturating_sub(earlier.unix)
    }

    /// `YYYYMMDD`, the SigV4 date.
    pub fn date_compact(self) -> String {
        format!("{:04}{:02}{:02}", self.year, self.month, self.day)
    }

    /// `YYYYMMDDTHHMMSSZ`, the SigV4 `X-Amz-Date`.
    pub fn amz_date(self) -> String {
        format!(
            "{}T{:02}{:02}{:02}Z",
            self.date_compact(),
            self.hour,
            self.minute,
            self.second
        )
    }

    /// ASN.1 UTCTime's `YYMMDDHHMMSSZ` (two-digit year, as `strftime("%y")`).
    pub fn utc_time(self) -> String {
        format!(
            "{:02}{:02}{:02}{:02}{:02}{:02}Z",
            self.year.rem_euclid(100),
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        let t = UtcTime::from_unix(946_728_000);
        assert_eq!(t.amz_date(), "20000101T120000Z");
        assert_eq!(t.utc_time(), "000101120000Z");
        assert_eq!(t.plus(-15 * 60).utc_time(), "000101114500Z");
        assert_eq!(UtcTime::from_unix(0).amz_date(), "19700101T000000Z");
        // A leap day and the last second of a year.
        assert_eq!(
            UtcTime::from_unix(1_709_210_096).amz_date(),
            "20240229T123456Z"
        );
        assert_eq!(
            UtcTime::from_unix(1_798_761_599).amz_date(),
            "20261231T235959Z"
        );
    }

    /// Times an endpoint gives are checked: absurd ones are `None`, never a panic.
    #[test]
    fn hostile_times_are_refused() {
        let t = UtcTime::parse_iso("2030-01-02T03:04:05.123Z").unwrap();
        assert_eq!(t.amz_date(), "20300102T030405Z");
        assert_eq!(
            UtcTime::parse_iso("9999-12-31T23:59:59Z").unwrap().unix(),
            MAX_UNIX
        );
        for bad in [
            "99999-01-01T00:00:00Z",
            "0000-01-01T00:00:00Z",
            "2030-13-01T00:00:00Z",
            "2030-01-01T00:00:00",
            "2030-01-01T00:00:é0Z",
            "+030-01-01T00:00:00Z",
        ] {
            assert_eq!(UtcTime::parse_iso(bad), None, "{bad}");
        }
        for bad in [1e300, -1e300, f64::NAN, f64::INFINITY, -1.0, 2.6e11] {
            assert_eq!(UtcTime::from_unix_f64(bad), None, "{bad}");
        }
        assert_eq!(
            UtcTime::from_unix_f64(1.8934848e9).unwrap().unix(),
            1_893_484_800
        );
        assert_eq!(UtcTime::from_unix_checked(i64::MAX), None);
        let end = UtcTime::from_unix(i64::MAX);
        assert_eq!(end.plus(1).unix(), i64::MAX);
        assert_eq!(UtcTime::from_unix(i64::MIN).since(end), i64::MIN);
    }
}

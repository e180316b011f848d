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

    /// Now, to the whole second.
    pub fn now() -> UtcTime {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        UtcTime::from_unix(d.as_secs() as i64)
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
        Some(UtcTime::from_unix(days * 86_400 + hh * 3600 + mm * 60 + ss))
    }

    pub fn unix(self) -> i64 {
        self.unix
    }

    /// This instant moved by `secs` seconds.
    pub fn plus(self, secs: i64) -> UtcTime {
        UtcTime::from_unix(self.unix + secs)
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
}

//! Numbers as rsync reads and writes them: sizes with K/M/G suffixes on the command
//! line, and counts and sizes printed at rsync's `-h` level, so the `--stats` block,
//! `--list-only`'s sizes, `%'l` in a log format and the progress line all spell a
//! number the same way rsync's `do_big_num` does.

/// rsync's `-h` level: how human a printed number is. rsync starts at
/// [`Separated`](Self::Separated), each `-h` goes one level up and `--no-h` goes
/// back to [`Digits`](Self::Digits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum HumanLevel {
    /// `1234567` (`--no-h`).
    Digits,
    /// `1,234,567` (rsync's default).
    #[default]
    Separated,
    /// `1.23M`: units of 1000 from 1000 up (`-h`).
    Decimal,
    /// `1.18M`: units of 1024 from 1024 up (`-hh`; more `h`s change nothing).
    Binary,
}

impl HumanLevel {
    /// The level a count of steps up from plain digits gives: rsync's `human_readable`
    /// (1 plus the `-h`s, or the `-h`s after a `--no-h`), or the apostrophes of a log
    /// format's `%'l`.
    pub fn from_count(n: usize) -> HumanLevel {
        match n {
            0 => HumanLevel::Digits,
            1 => HumanLevel::Separated,
            2 => HumanLevel::Decimal,
            _ => HumanLevel::Binary,
        }
    }

    /// rsync's `comma_num` level: what it prints counts of files at, separators but
    /// never units.
    pub fn separators_only(self) -> HumanLevel {
        self.min(HumanLevel::Separated)
    }

    /// The unit a number is counted in, if this level has one.
    fn unit(self) -> Option<u64> {
        match self {
            HumanLevel::Digits | HumanLevel::Separated => None,
            HumanLevel::Decimal => Some(1000),
            HumanLevel::Binary => Some(1024),
        }
    }

    /// `n` as rsync's `do_big_num` prints it: with two decimals and a suffix (`K` to
    /// `P`) from one unit up, otherwise its digits, grouped by three unless the level
    /// is [`Digits`](Self::Digits).
    pub fn num(self, n: u64) -> String {
        self.num_fract(n, "")
    }

    /// A fraction with `decimals` digits, as rsync's `do_big_dnum` prints it (a rate, a
    /// speedup): below 1000 or at [`Digits`](Self::Digits) as `%.*f`, otherwise the
    /// whole part as [`num`](Self::num) with the fraction's digits after it when no
    /// unit is added.
    pub fn dnum(self, d: f64, decimals: usize) -> String {
        let plain = format!("{d:.decimals$}");
        if self == HumanLevel::Digits || d < 1000.0 {
            return plain;
        }
        let fract = plain.find('.').map_or("", |i| &plain[i..]);
        self.num_fract(d as u64, fract)
    }

    fn num_fract(self, n: u64, fract: &str) -> String {
        if let Some(mult) = self.unit().filter(|&m| n >= m) {
            let mult = mult as f64;
            let mut d = n as f64 / mult;
            let mut unit = 'K';
            for u in ['M', 'G', 'T', 'P'] {
                if d < mult {
                    break;
                }
                d /= mult;
                unit = u;
            }
            return format!("{d:.2}{unit}");
        }
        let digits = n.to_string();
        let mut out = String::with_capacity(digits.len() + digits.len() / 3 + fract.len());
        for (i, c) in digits.chars().enumerate() {
            if self != HumanLevel::Digits && i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out.push_str(fract);
        out
    }
}

/// rsync's `--max-size`/`--min-size` value: a number (fractions allowed) with an
/// optional unit — K, M, G, T, P (or KiB ...) count 1024s, KB, MB ... 1000s, B bytes —
/// then an optional `+1` or `-1`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("invalid size {s:?} (e.g. 100K, 1.5M, 2GB, 1G-1)");
    let (body, adjust) = match s.len().checked_sub(2).map(|i| s.split_at(i)) {
        Some((b, "+1")) => (b, 1i128),
        Some((b, "-1")) => (b, -1),
        _ => (s, 0),
    };
    let num_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, unit) = body.split_at(num_end);
    let num: f64 = num.parse().map_err(|_| bad())?;
    let unit = unit.to_ascii_lowercase();
    let (letter, rest) = unit.split_at(unit.len().min(1));
    let power = match letter {
        "" | "b" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return Err(bad()),
    };
    let base: f64 = match rest {
        "" | "ib" => 1024.0,
        "b" if letter != "b" => 1000.0,
        _ => return Err(bad()),
    };
    let bytes = (num * base.powi(power)) as i128 + adjust;
    u64::try_from(bytes).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use HumanLevel::{Binary, Decimal, Digits, Separated};

    /// rsync 3.5.0's `--list-only` sizes at levels 0 to 3 (`--no-h`, none, `-h`, `-hh`)
    /// for (sparse) files of these sizes; the `P` rows, too large for a file, follow
    /// its `do_big_num`.
    #[test]
    fn numbers_are_spelled_as_rsync_spells_them_at_every_level() {
        #[rustfmt::skip]
        let table: &[(u64, [&str; 4])] = &[
            (0,           ["0", "0", "0", "0"]),
            (999,         ["999", "999", "999", "999"]),
            (1000,        ["1000", "1,000", "1.00K", "1,000"]),
            (1023,        ["1023", "1,023", "1.02K", "1,023"]),
            (1024,        ["1024", "1,024", "1.02K", "1.00K"]),
            (4096,        ["4096", "4,096", "4.10K", "4.00K"]),
            (20_935,      ["20935", "20,935", "20.93K", "20.44K"]),
            (999_999,     ["999999", "999,999", "1000.00K", "976.56K"]),
            (1_000_000,   ["1000000", "1,000,000", "1.00M", "976.56K"]),
            (1_048_576,   ["1048576", "1,048,576", "1.05M", "1.00M"]),
            (3_004_393,   ["3004393", "3,004,393", "3.00M", "2.87M"]),
            (123_456_789, ["123456789", "123,456,789", "123.46M", "117.74M"]),
            (5 << 30,     ["5368709120", "5,368,709,120", "5.37G", "5.00G"]),
            (3 << 40,     ["3298534883328", "3,298,534,883,328", "3.30T", "3.00T"]),
            (7 << 50,     ["7881299347898368", "7,881,299,347,898,368", "7.88P", "7.00P"]),
            // rsync's largest unit is P.
            (1 << 60,     ["1152921504606846976", "1,152,921,504,606,846,976", "1152.92P", "1024.00P"]),
        ];
        for (n, want) in table {
            for (level, want) in [Digits, Separated, Decimal, Binary].into_iter().zip(want) {
                assert_eq!(level.num(*n), *want, "{n} at {level:?}");
            }
        }
    }

    #[test]
    fn fractions_keep_their_decimals_until_a_unit_replaces_them() {
        assert_eq!(Digits.dnum(6_179_634.0, 2), "6179634.00");
        assert_eq!(Separated.dnum(6_179_634.0, 2), "6,179,634.00");
        assert_eq!(Decimal.dnum(6_179_634.0, 2), "6.18M");
        assert_eq!(Binary.dnum(6_179_634.0, 2), "5.89M");
        assert_eq!(Separated.dnum(758.0, 2), "758.00");
        assert_eq!(Decimal.dnum(999.996, 2), "1000.00");
        assert_eq!(Separated.dnum(1000.5, 2), "1,000.50");
        assert_eq!(Binary.dnum(1000.5, 2), "1,000.50");
        assert_eq!(Separated.dnum(0.05, 2), "0.05");
    }

    #[test]
    fn levels_count_like_rsyncs_h() {
        assert_eq!(HumanLevel::default(), Separated);
        assert_eq!(HumanLevel::from_count(0), Digits);
        assert_eq!(HumanLevel::from_count(1), Separated);
        assert_eq!(HumanLevel::from_count(2), Decimal);
        assert_eq!(HumanLevel::from_count(3), Binary);
        assert_eq!(HumanLevel::from_count(7), Binary);
        assert_eq!(Binary.separators_only(), Separated);
        assert_eq!(Digits.separators_only(), Digits);
    }

    #[test]
    fn sizes_use_rsync_units() {
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("1KB"), Ok(1000));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("1.5M"), Ok(1_572_864));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1M+1"), Ok(1_048_577));
        assert_eq!(parse_size("1K-1"), Ok(1023));
        assert_eq!(parse_size("10b"), Ok(10));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("").is_err());
    }
}

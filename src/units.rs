//! Numbers as rsync reads and writes them: sizes with K/M/G suffixes on the command
//! line.

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

//! The latency presets, defined here only: the delay of one FUSE request on
//! the latency mount, or one NFS call's round trip through the proxy. The
//! scripts ask `rig preset NAME`; the reports print `text()`.

use std::time::Duration;

/// Name and milliseconds.
pub const PRESETS: [(&str, f64); 3] = [("lan", 0.3), ("efs", 1.5), ("wan", 10.0)];

/// Milliseconds of a preset name or of a number (`2.5` or `2.5ms`).
pub fn ms(s: &str) -> Result<f64, String> {
    let ms = match PRESETS.iter().find(|(name, _)| *name == s) {
        Some(&(_, ms)) => ms,
        None => s
            .trim_end_matches("ms")
            .parse::<f64>()
            .map_err(|_| format!("bad delay {s:?}: use {}|<ms>", names()))?,
    };
    if !(0.0..=60_000.0).contains(&ms) {
        return Err(format!("delay {ms} ms out of range"));
    }
    Ok(ms)
}

/// A preset or a millisecond count as a duration.
pub fn parse_delay(s: &str) -> Result<Duration, String> {
    ms(s).map(|ms| Duration::from_secs_f64(ms / 1e3))
}

/// `lan|efs|wan`
pub fn names() -> String {
    PRESETS.map(|(name, _)| name).join("|")
}

/// `lan 0.3 ms, efs 1.5 ms, wan 10 ms`
pub fn text() -> String {
    PRESETS
        .map(|(name, ms)| format!("{name} {ms} ms"))
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_presets() {
        assert_eq!(parse_delay("lan"), Ok(Duration::from_micros(300)));
        assert_eq!(parse_delay("efs"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_delay("wan"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_delay("2.5ms"), Ok(Duration::from_micros(2500)));
        assert!(parse_delay("fast").is_err());
        assert_eq!(ms("0"), Ok(0.0));
        assert_eq!(text(), "lan 0.3 ms, efs 1.5 ms, wan 10 ms");
    }
}

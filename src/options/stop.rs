//! `--stop-at` and `--stop-after`: the moment a run stops starting new work.
//!
//! rsync's forms, in local time: `YYYY-MM-DDThh:mm`, `MM-DDThh:mm` (this year),
//! `hh:mm` or `Thh:mm` (today, or tomorrow when that is past), and a date alone
//! (`YYYY-MM-DD`, midnight). `/` may stand for `-`. A moment not in the future is
//! refused, as rsync refuses it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses `--stop-at`'s TIME.
pub fn parse_at(s: &str) -> Result<SystemTime, String> {
    let now = SystemTime::now();
    let at = at_from(s, now).ok_or_else(|| format!("invalid --stop-at format: {s}"))?;
    if at <= now {
        return Err(format!("--stop-at time is not in the future: {s}"));
    }
    Ok(at)
}

/// Parses `--stop-after`'s MINS (a whole number of minutes above 0).
pub fn parse_after(s: &str) -> Result<SystemTime, String> {
    let bad = || format!("invalid --stop-after value: {s}");
    let mins: u64 = s.trim().parse().map_err(|_| bad())?;
    if mins == 0 {
        return Err(bad());
    }
    let secs = mins.checked_mul(60).ok_or_else(bad)?;
    SystemTime::now()
        .checked_add(Duration::from_secs(secs))
        .ok_or_else(bad)
}

/// Stops the run at `at` as SIGINT does (`interrupted` set: files in flight finish
/// between pieces, nothing new starts). The flag returned tells, once set, that it
/// was the limit and not a signal.
pub fn arm(at: SystemTime, interrupted: Arc<AtomicBool>) -> Arc<AtomicBool> {
    let reached = Arc::new(AtomicBool::new(false));
    let flag = reached.clone();
    let _ = std::thread::Builder::new()
        .name("nfsync-stop-at".into())
        .spawn(move || {
            while let Ok(left) = at.duration_since(SystemTime::now()) {
                // In steps, so a clock set forward is noticed.
                std::thread::sleep(left.min(Duration::from_secs(1)));
            }
            flag.store(true, Ordering::SeqCst);
            interrupted.store(true, Ordering::SeqCst);
        });
    reached
}

/// The moment `s` names, read relative to `now` in local time.
fn at_from(s: &str, now: SystemTime) -> Option<SystemTime> {
    let (date, time) = match s.split_once(['T', 't']) {
        Some((d, t)) => (d, Some(t)),
        None if s.contains(':') => ("", Some(s)),
        None if s.is_empty() => return None,
        None => (s, None),
    };
    let today = local(now)?;
    let mut tm = today;
    let numbers = |s: &str, sep: &[char]| -> Option<Vec<i32>> {
        s.split(sep).map(|n| n.parse().ok()).collect()
    };
    let mut date_given = true;
    match numbers(date, &['-', '/']).as_deref() {
        _ if date.is_empty() => date_given = false,
        Some(&[y, m, d]) => {
            tm.tm_year = if y < 100 { y + 100 } else { y - 1900 };
            (tm.tm_mon, tm.tm_mday) = (m - 1, d);
        }
        Some(&[m, d]) => (tm.tm_mon, tm.tm_mday) = (m - 1, d),
        _ => return None,
    }
    (tm.tm_hour, tm.tm_min, tm.tm_sec) = (0, 0, 0);
    if let Some(time) = time {
        match numbers(time, &[':']).as_deref() {
            Some(&[h, m]) => (tm.tm_hour, tm.tm_min) = (h, m),
            _ => return None,
        }
    }
    if !(0..12).contains(&tm.tm_mon)
        || !(1..=31).contains(&tm.tm_mday)
        || !(0..24).contains(&tm.tm_hour)
        || !(0..60).contains(&tm.tm_min)
    {
        return None;
    }
    tm.tm_isdst = -1;
    let mut at = from_local(tm)?;
    if !date_given && at <= now {
        at = from_local(libc::tm {
            tm_mday: tm.tm_mday + 1,
            tm_isdst: -1,
            ..tm
        })?;
    }
    Some(at)
}

fn local(t: SystemTime) -> Option<libc::tm> {
    let secs = t.duration_since(UNIX_EPOCH).ok()?.as_secs() as libc::time_t;
    // SAFETY: `tm` is plain data; localtime_r writes only into it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&secs, &mut tm) }.is_null() {
        return None;
    }
    Some(tm)
}

fn from_local(mut tm: libc::tm) -> Option<SystemTime> {
    // SAFETY: mktime reads and normalizes the plain struct it is given.
    let secs = unsafe { libc::mktime(&mut tm) };
    (secs >= 0).then(|| UNIX_EPOCH + Duration::from_secs(secs as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(t: SystemTime) -> (i32, i32, i32, i32, i32) {
        let tm = local(t).unwrap();
        (
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
        )
    }

    #[test]
    fn rsyncs_forms_are_read_in_local_time() {
        let now = from_local(libc::tm {
            tm_year: 2024 - 1900,
            tm_mon: 5,
            tm_mday: 15,
            tm_hour: 12,
            tm_min: 0,
            tm_isdst: -1,
            ..local(SystemTime::now()).unwrap()
        })
        .unwrap();
        let at = |s| at_from(s, now).map(fields);
        assert_eq!(at("2025-01-02T03:04"), Some((2025, 1, 2, 3, 4)));
        assert_eq!(at("2025/01/02t03:04"), Some((2025, 1, 2, 3, 4)));
        assert_eq!(at("07-08T09:10"), Some((2024, 7, 8, 9, 10)));
        assert_eq!(at("13:30"), Some((2024, 6, 15, 13, 30)));
        // A time of day already past today is tomorrow's.
        assert_eq!(at("T11:00"), Some((2024, 6, 16, 11, 0)));
        assert_eq!(at("2025-01-02"), Some((2025, 1, 2, 0, 0)));
        for bad in [
            "",
            "tomorrow",
            "2025-13-01T00:00",
            "25:00",
            "1-2-3-4",
            "12:00:00",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_run_is_stopped_at_the_moment_and_not_before() {
        let soon = Arc::new(AtomicBool::new(false));
        let later = Arc::new(AtomicBool::new(false));
        let start = SystemTime::now();
        let reached = arm(start + Duration::from_millis(300), soon.clone());
        let not_yet = arm(start + Duration::from_secs(3600), later.clone());
        std::thread::sleep(Duration::from_millis(100));
        assert!(!soon.load(Ordering::SeqCst) && !reached.load(Ordering::SeqCst));
        let deadline = start + Duration::from_secs(10);
        while !soon.load(Ordering::SeqCst) && SystemTime::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(soon.load(Ordering::SeqCst) && reached.load(Ordering::SeqCst));
        assert!(SystemTime::now() >= start + Duration::from_millis(300));
        assert!(!later.load(Ordering::SeqCst) && !not_yet.load(Ordering::SeqCst));
    }

    #[test]
    fn a_moment_not_in_the_future_is_refused() {
        assert!(
            parse_at("2000-01-01T00:00")
                .unwrap_err()
                .contains("not in the future")
        );
        assert!(parse_at("9999-01-01x").is_err());
        assert!(parse_after("0").is_err() && parse_after("x").is_err());
        let after = parse_after("2").unwrap();
        let left = after.duration_since(SystemTime::now()).unwrap();
        assert!(left > Duration::from_secs(110) && left <= Duration::from_secs(120));
    }
}

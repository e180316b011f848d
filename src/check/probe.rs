//! The probe file (create, write, date, read back, remove) and the round trip.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::MemfdFlags;

use super::{Failed, failed, scratch_name};
use crate::dest::{CopyError, Destination, SourceFile};
use crate::exit::ExitCode;
use crate::meta::{Kind, Meta, Time};
use crate::report::units::HumanLevel;

/// Bytes in the probe file: more than one small write, so that the read back covers
/// data the server had to put together.
const PROBE_SIZE: usize = 64 * 1024;

/// Lookups timed for the round trip; the median is reported, so a few slow ones
/// (another client, a busy server) do not decide it.
pub const LOOKUPS: usize = 21;

/// An mtime with every nanosecond digit set, to see how much of it the server keeps.
const PROBE_TIME: Time = Time {
    sec: 1_000_000_000,
    nsec: 123_456_789,
};

/// A source file in memory holding `data`, and its metadata as the run would give it.
pub(super) fn in_memory(data: &[u8], mode: u32, mtime: Time) -> Result<(File, Meta), Failed> {
    let local = |what: &str, e: std::io::Error| (ExitCode::FileIo, format!("{what}: {e}"));
    let fd = rustix::fs::memfd_create("nfsync-check", MemfdFlags::CLOEXEC)
        .map_err(|e| local("making the probe's data", e.into()))?;
    let mut file = File::from(fd);
    file.write_all(data)
        .map_err(|e| local("making the probe's data", e))?;
    let listed = Meta::from_std(
        &file
            .metadata()
            .map_err(|e| local("making the probe's data", e))?,
    );
    Ok((
        file,
        Meta {
            mode,
            mtime,
            ..listed
        },
    ))
}

/// `file` opened again: an open file of its own (not a `dup`), so that the writing
/// jobs and the read back each read from their own offset.
fn reopen(file: &File) -> Result<File, Failed> {
    File::open(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|e| (ExitCode::FileIo, format!("reopening the probe's data: {e}")))
}

/// Writes `src` as `name` in `dir`, as a run writes a new file.
pub(super) fn write<D: Destination>(
    dest: &D,
    dir: &D::Dir,
    name: &OsStr,
    (file, meta): (&File, &Meta),
) -> Result<u64, Failed> {
    let listed = Meta::from_std(
        &file
            .metadata()
            .map_err(|e| (ExitCode::FileIo, e.to_string()))?,
    );
    let src = SourceFile {
        data: crate::source::Data::from_file(reopen(file)?),
        meta,
        listed: &listed,
        path: Path::new("(check)"),
        sparse: false,
        limit: None,
        stop: None,
        keep_partial: false,
        moving: None,
    };
    let what = || format!("writing {}", Path::new(name).display());
    dest.write_file(dir, name, &src).map_err(|e| match e {
        CopyError::Dest(e) => failed(&what(), &e),
        CopyError::Source(e) => (
            ExitCode::FileIo,
            format!("{}: reading its data: {e}", what()),
        ),
        other => (ExitCode::FileIo, format!("{}: {other:?}", what())),
    })
}

/// Creates, writes, dates, reads back and removes a probe file in `dir`, saying
/// what each step found in `steps`. The file is removed also when a step fails.
pub(super) fn file<D: Destination>(
    dest: &D,
    dir: &D::Dir,
    steps: &mut Vec<String>,
) -> Result<(), Failed> {
    let data: Vec<u8> = {
        // Different in every check, so that an old probe never reads back as this one.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        let seed = u64::from(std::process::id()) ^ now.map_or(0, |d| d.as_nanos() as u64);
        (0..PROBE_SIZE as u64)
            .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed >> (i % 32)) as u8)
            .collect()
    };
    let (file, meta) = in_memory(&data, 0o600, PROBE_TIME)?;
    let name = scratch_name("check-probe");
    let r = write(dest, dir, &name, (&file, &meta))
        .and_then(|written| look_at(dest, dir, &name, file, written, steps));
    // Also after a failed write: the backend leaves a file it could not finish.
    let removed = dest.remove(dir, &name, Kind::File);
    r?;
    removed.map_err(|e| failed("removing the probe file", &e))?;
    steps.push("removed".into());
    Ok(())
}

fn look_at<D: Destination>(
    dest: &D,
    dir: &D::Dir,
    name: &OsStr,
    file: File,
    written: u64,
    steps: &mut Vec<String>,
) -> Result<(), Failed> {
    steps.push(format!(
        "created and wrote {} bytes",
        HumanLevel::Separated.num(written)
    ));
    let got = dest
        .stat(dir, name)
        .map_err(|e| failed("looking at the probe file", &e))?
        .ok_or_else(|| {
            (
                ExitCode::Select,
                "the probe file is gone right after it was written".to_owned(),
            )
        })?;
    if got.size != PROBE_SIZE as u64 {
        return Err((
            ExitCode::Select,
            format!("the probe file holds {} bytes, not {PROBE_SIZE}", got.size),
        ));
    }
    steps.push(dated(got.mtime));
    if !dest
        .same_content(dir, name, crate::source::Data::from_file(reopen(&file)?))
        .map_err(|e| failed("reading the probe file back", &e))?
    {
        return Err((
            ExitCode::Select,
            "the probe file reads back different from what was written".into(),
        ));
    }
    steps.push("read back: the same bytes".into());
    Ok(())
}

/// What the server kept of [`PROBE_TIME`].
fn dated(t: Time) -> String {
    if t == PROBE_TIME {
        return "dated: the mtime kept to the nanosecond".into();
    }
    if t.sec != PROBE_TIME.sec {
        return format!(
            "dated: asked for {} s, got {} s (a run would copy such files again each time)",
            PROBE_TIME.sec, t.sec
        );
    }
    let kept = (1..=9)
        .rev()
        .find(|d| {
            let unit = 10u32.pow(9 - d);
            t.nsec == PROBE_TIME.nsec / unit * unit
        })
        .unwrap_or(0);
    format!(
        "dated: the mtime kept to {kept} of 9 decimals (rsync's whole-second check is unaffected)"
    )
}

/// The median time of a lookup in `dir` of a name that is not there: one round trip
/// to the server on nfs://, a cached answer or a LOOKUP on a mount.
pub(super) fn round_trip<D: Destination>(dest: &D, dir: &D::Dir) -> Result<Duration, Failed> {
    let name = scratch_name("check-absent");
    let mut times = Vec::with_capacity(LOOKUPS);
    for _ in 0..LOOKUPS {
        let t = Instant::now();
        dest.stat(dir, &name)
            .map_err(|e| failed("timing a lookup", &e))?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok(times[LOOKUPS / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_part_of_the_probe_time_is_named() {
        let t = |sec, nsec| Time { sec, nsec };
        assert!(dated(PROBE_TIME).contains("nanosecond"));
        assert!(dated(t(1_000_000_000, 123_456_000)).contains("6 of 9"));
        assert!(dated(t(1_000_000_000, 0)).contains("0 of 9"));
        assert!(dated(t(1_000_000_000, 5)).contains("0 of 9"));
        assert!(dated(t(999_999_999, 0)).contains("got 999999999 s"));
    }
}

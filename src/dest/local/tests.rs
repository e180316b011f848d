//! Unit tests of the mount backend, on a temporary directory: in a file of their own
//! so that `local.rs` reads as the backend alone.

use super::sys::SMALL_FILE;
use super::*;
use crate::meta::Time;

fn dest(dir: &Path) -> LocalDest {
    LocalDest::new(dir, OwnerPolicy::default())
}

/// Writes `src_path`, as `listed`, under `name` into a fresh `out` beside it; returns
/// what `write_file` returned and `out`.
fn write_listed(src_path: &Path, listed: &Meta, name: &str) -> (Result<u64, CopyError>, PathBuf) {
    let out = src_path.parent().unwrap().join("out");
    fs::create_dir(&out).unwrap();
    let src = SourceFile {
        data: crate::source::Data::from_file(File::open(src_path).unwrap()),
        meta: listed,
        listed,
        path: src_path,
        sparse: false,
        limit: None,
        stop: None,
        keep_partial: false,
        moving: None,
    };
    let d = dest(&out);
    (
        d.write_file(&d.root_dir().unwrap(), OsStr::new(name), &src),
        out,
    )
}

#[test]
fn a_source_that_changed_is_not_given_its_mtime() {
    let tmp = tempfile::tempdir().unwrap();
    let src_path = tmp.path().join("src");
    fs::write(&src_path, b"new content, longer than listed").unwrap();
    let mut listed = Meta::from_std(&fs::metadata(&src_path).unwrap());
    // The listing saw an older, shorter version.
    listed.size = 3;
    listed.mtime = Time {
        sec: 1_000_000,
        nsec: 7,
    };
    let (r, out) = write_listed(&src_path, &listed, "f");
    assert!(matches!(r, Err(CopyError::SourceChanged)), "{r:?}");
    let got = Meta::from_std(&fs::metadata(out.join("f")).unwrap());
    assert_ne!(
        got.mtime, listed.mtime,
        "a changed source must not look complete"
    );
}

#[test]
fn large_files_stream_and_keep_mode_and_nanosecond_mtime() {
    let tmp = tempfile::tempdir().unwrap();
    let src_path = tmp.path().join("big");
    let data: Vec<u8> = (0..(3 * SMALL_FILE as usize + 17))
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    fs::write(&src_path, &data).unwrap();
    rustix::fs::chmod(&src_path, rustix::fs::Mode::from_raw_mode(0o4751)).unwrap();
    let t = Time {
        sec: 1_234_567_890,
        nsec: 123_456_789,
    };
    rustix::fs::utimensat(rustix::fs::CWD, &src_path, &mtime_only(t), AtFlags::empty()).unwrap();
    let listed = Meta::from_std(&fs::metadata(&src_path).unwrap());
    let (n, out) = write_listed(&src_path, &listed, "big");
    let n = n.unwrap();
    assert_eq!(n, data.len() as u64);
    assert_eq!(fs::read(out.join("big")).unwrap(), data);
    let got = Meta::from_std(&fs::metadata(out.join("big")).unwrap());
    assert_eq!((got.mode, got.mtime), (0o4751, t));
}

#[test]
fn mkdir_mode_defers_what_mkdir_cannot_do() {
    let m = |mode| Meta {
        mode,
        ..Meta::from_std(&fs::metadata("/").unwrap())
    };
    assert_eq!(mkdir_mode(&m(0o755)), 0o755);
    assert_eq!(mkdir_mode(&m(0o555)), 0o700);
    assert_eq!(mkdir_mode(&m(0o2775)), 0o700);
}

#[test]
fn a_large_copy_stopped_leaves_no_partial_file() {
    let tmp = tempfile::tempdir().unwrap();
    let src_path = tmp.path().join("big");
    fs::write(&src_path, vec![7u8; 3 * SMALL_FILE as usize]).unwrap();
    let listed = Meta::from_std(&fs::metadata(&src_path).unwrap());
    let out = tmp.path().join("out");
    fs::create_dir(&out).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(true);
    for limit in [None, crate::options::bwlimit::RateLimit::new(1 << 20)] {
        let src = SourceFile {
            data: crate::source::Data::from_file(File::open(&src_path).unwrap()),
            meta: &listed,
            listed: &listed,
            path: &src_path,
            sparse: false,
            limit: limit.as_ref(),
            stop: Some(&stop),
            keep_partial: false,
            moving: None,
        };
        let d = dest(&out);
        let r = d.write_file(&d.root_dir().unwrap(), OsStr::new("big"), &src);
        assert!(matches!(r, Err(CopyError::Interrupted)), "{r:?}");
        assert!(!out.join("big").exists(), "the partial copy must go");
    }
}

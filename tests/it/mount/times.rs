//! Times the destination's filesystem cannot hold, on the mount path.

use std::fs;
use std::os::unix::fs::MetadataExt;

use filetime::FileTime;

use crate::support::times::copy_out_of_range_times;
use crate::support::{Scratch, is_root, json_stats, stat, sync_ok};

/// Years 1600 and 2500 into a directory under the build tree (ext4 in CI: 1901-12-13 to
/// 2446-05-10): stored at the ends, warned about once each, and not copied again; a
/// copy that holds the end but not the source's size is still copied.
#[test]
fn times_past_the_filesystems_range_are_warned_once_and_not_recopied() {
    if !is_root() {
        // The non-root rerun of these tests cannot write in root's build tree.
        eprintln!("skipping mount::times (DEST under the build tree): not root");
        return;
    }
    let s = Scratch::new_in(env!("CARGO_TARGET_TMPDIR").as_ref());
    let dst = s.join("dst");
    let Some(src) = copy_out_of_range_times(&dst, &dst) else {
        return;
    };
    let f = dst.join("y1600");
    let kept = fs::metadata(&f).unwrap().mtime();
    fs::write(&f, "not the source's\n").unwrap();
    let t = FileTime::from_unix_time(kept, 0);
    filetime::set_file_times(&f, t, t).unwrap();
    let out = sync_ok(&["--json"], &src.join("src"), &dst);
    assert_eq!(stat(&json_stats(&out), "files_copied"), 1);
    assert_eq!(fs::read_to_string(&f).unwrap(), "old\n");
    assert_eq!(fs::metadata(&f).unwrap().mtime(), kept);
}

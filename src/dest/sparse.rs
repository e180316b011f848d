//! Which byte ranges of a source file a backend writes: all of `[from, size)`, or
//! with `-S` only the data extents the source's filesystem reports (`SEEK_DATA` /
//! `SEEK_HOLE`), so holes stay holes at the destination; the backend then sets the
//! size, which makes a trailing hole.

use std::fs::File;
use std::io;

use rustix::fs::SeekFrom;

/// The data extents of `file` within `[from, size)`, as `(offset, length)`. A
/// filesystem without `SEEK_DATA` reports the whole file as data, which is what it
/// holds as far as anyone can tell.
pub fn data_extents(file: &File, from: u64, size: u64) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut off = from;
    while off < size {
        let start = match rustix::fs::seek(file, SeekFrom::Data(off)) {
            Ok(s) => s,
            // No data past `off`: the rest is a hole.
            Err(rustix::io::Errno::NXIO) => break,
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::OPNOTSUPP) if out.is_empty() => {
                return Ok(vec![(from, size - from)]);
            }
            Err(e) => return Err(e.into()),
        };
        if start >= size {
            break;
        }
        let end = match rustix::fs::seek(file, SeekFrom::Hole(start)) {
            Ok(e) => e.min(size),
            Err(rustix::io::Errno::NXIO) => size,
            Err(e) => return Err(e.into()),
        };
        if end > start {
            out.push((start, end - start));
        }
        off = end.max(start + 1);
    }
    Ok(out)
}

/// The whole of `[from, size)` as one range (none when empty).
pub fn whole(from: u64, size: u64) -> Vec<(u64, u64)> {
    if from < size {
        vec![(from, size - from)]
    } else {
        Vec::new()
    }
}

/// The gaps between `ranges` (sorted, disjoint) within `[from, size)`: where a file
/// written in place must be made a hole (or zeros) under `-S`.
pub fn gaps(from: u64, size: u64, ranges: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = from;
    for &(off, len) in ranges {
        if off > at {
            out.push((at, off - at));
        }
        at = at.max(off + len);
    }
    if at < size {
        out.push((at, size - at));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn holes_are_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        let f = File::create(&p).unwrap();
        let mb = 1u64 << 20;
        f.write_all_at(b"head", 0).unwrap();
        f.write_all_at(b"middle", 4 * mb).unwrap();
        f.set_len(10 * mb).unwrap();
        let f = File::open(&p).unwrap();
        let ext = data_extents(&f, 0, 10 * mb).unwrap();
        let data: u64 = ext.iter().map(|e| e.1).sum();
        assert!(data < 2 * mb, "{ext:?}");
        assert!(
            ext.iter().any(|&(o, l)| o <= 4 * mb && o + l > 4 * mb),
            "{ext:?}"
        );
        assert_eq!(ext[0].0, 0);
        assert_eq!(whole(3, 3), vec![]);
        assert_eq!(gaps(0, 10, &[(2, 3), (7, 1)]), vec![(0, 2), (5, 2), (8, 2)]);
        assert_eq!(gaps(4, 10, &[(4, 6)]), vec![]);
        assert_eq!(whole(1, 3), vec![(1, 2)]);
    }
}

//! A source file's bytes, as a destination reads them.
//!
//! Not a `File`, because a file read through a client (`nfs://`) arrives as READ
//! replies: staging each one in a local file cost a memfd or an `O_TMPFILE` per file,
//! local disk (or, on a tmpfs `/tmp`, memory) the size of every file in flight, and
//! errors that blamed the source for the temporary directory. A [`Data`] is read at
//! offsets whatever is behind it; a destination that can hand the bytes to the
//! kernel (`copy_file_range`, reflinks, `SEEK_DATA`) asks for the file with
//! [`Data::as_file`] and reads otherwise.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use crate::meta::{Meta, Time};

/// The bytes of one source file opened for a copy (a public struct over a private
/// enum, as ripgrep's `DirEntry`: what is behind it is the source's business).
pub struct Data(Inner);

enum Inner {
    /// A file read through the kernel.
    File(File),
    /// A file read whole in one call, with its attributes from after the read.
    Bytes { bytes: Vec<u8>, after: Meta },
    /// A file read as it is consumed (a large one of a remote source).
    Stream(Mutex<Box<dyn Stream>>),
}

/// A file read from elsewhere as it is consumed, with a bounded amount read ahead.
pub trait Stream: Send {
    /// Up to `buf.len()` bytes at `off`; 0 at the end of the file.
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> io::Result<usize>;
    /// The file's attributes now: after the last byte read, so that a file that
    /// changed while it was read is seen to have changed.
    fn now(&mut self) -> io::Result<Meta>;
}

impl Data {
    /// A file read through the kernel.
    pub fn from_file(f: File) -> Data {
        Data(Inner::File(f))
    }

    /// A file read whole, `after` its attributes once read.
    pub fn from_bytes(bytes: Vec<u8>, after: Meta) -> Data {
        Data(Inner::Bytes { bytes, after })
    }

    /// A file read as it is consumed.
    pub fn from_stream(s: Box<dyn Stream>) -> Data {
        Data(Inner::Stream(Mutex::new(s)))
    }

    /// The open file, where the bytes are a local file's: the kernel can move them.
    pub fn as_file(&self) -> Option<&File> {
        match &self.0 {
            Inner::File(f) => Some(f),
            _ => None,
        }
    }

    /// The whole content, where it is already in memory.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.0 {
            Inner::Bytes { bytes, .. } => Some(bytes),
            _ => None,
        }
    }

    /// Up to `buf.len()` bytes at `off`; 0 at the end.
    pub fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        match &self.0 {
            Inner::File(f) => f.read_at(buf, off),
            Inner::Bytes { bytes, .. } => {
                let start = off.min(bytes.len() as u64) as usize;
                let n = buf.len().min(bytes.len() - start);
                buf[..n].copy_from_slice(&bytes[start..start + n]);
                Ok(n)
            }
            Inner::Stream(s) => s.lock().map_err(|_| poisoned())?.read_at(buf, off),
        }
    }

    /// The data extents within `[from, size)` (`-S`): a local file's as its filesystem
    /// reports them, the whole range otherwise (a destination under `-S` still leaves
    /// blocks of zeros unwritten).
    pub fn data_extents(&self, from: u64, size: u64) -> io::Result<Vec<(u64, u64)>> {
        match &self.0 {
            Inner::File(f) => crate::dest::sparse::data_extents(f, from, size),
            _ => Ok(crate::dest::sparse::whole(from, size)),
        }
    }

    /// The file's attributes now (for a remote file: after the last byte read).
    pub fn now(&self) -> io::Result<Meta> {
        match &self.0 {
            Inner::File(f) => Ok(Meta::from_std(&f.metadata()?)),
            Inner::Bytes { after, .. } => Ok(*after),
            Inner::Stream(s) => s.lock().map_err(|_| poisoned())?.now(),
        }
    }

    /// Whether the file is still the one `listed`: same size and mtime, and for a
    /// remote file the same change number where the server keeps one (a write within
    /// the mtime's granularity changes only that).
    pub fn unchanged(&self, listed: &Meta) -> io::Result<bool> {
        let now = self.now()?;
        let change_same = matches!(self.0, Inner::File(_))
            || now.change == 0
            || listed.change == 0
            || now.change == listed.change;
        Ok(now.size == listed.size && now.mtime == listed.mtime && change_same)
    }

    /// The file's access time (`-U`), where reading it through the kernel leaves it.
    pub fn atime(&self) -> Option<Time> {
        use std::os::unix::fs::MetadataExt;
        let m = self.as_file()?.metadata().ok()?;
        Some(Time {
            sec: m.atime(),
            nsec: m.atime_nsec() as u32,
        })
    }

    /// Reads exactly `buf.len()` bytes at `off`; the file ending first is
    /// `UnexpectedEof`.
    pub fn read_exact_at(&self, mut buf: &mut [u8], mut off: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, off) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    off += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The content from the start, read in order (comparisons).
    pub fn reader(&self) -> Reader<'_> {
        Reader { data: self, at: 0 }
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Inner::File(file) => f.debug_tuple("Data").field(file).finish(),
            Inner::Bytes { bytes, .. } => write!(f, "Data({} bytes)", bytes.len()),
            Inner::Stream(_) => f.write_str("Data(stream)"),
        }
    }
}

/// [`Data`] read from the start, in order.
pub struct Reader<'a> {
    data: &'a Data,
    at: u64,
}

impl io::Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.data.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

fn poisoned() -> io::Error {
    io::Error::other("a reader of this file failed earlier")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Kind;
    use std::io::Read;

    #[test]
    fn bytes_read_at_any_offset_end_with_zero() {
        let d = Data::from_bytes(b"hello".to_vec(), Meta::of(Kind::File, 5));
        let mut buf = [0u8; 3];
        assert_eq!(d.read_at(&mut buf, 3).unwrap(), 2);
        assert_eq!(&buf[..2], b"lo");
        assert_eq!(d.read_at(&mut buf, 5).unwrap(), 0);
        assert_eq!(d.read_at(&mut buf, 99).unwrap(), 0);
        let mut all = Vec::new();
        d.reader().read_to_end(&mut all).unwrap();
        assert_eq!(all, b"hello");
        assert!(d.read_exact_at(&mut [0u8; 4], 2).is_err());
    }

    #[test]
    fn a_remote_file_whose_change_number_moved_is_not_unchanged() {
        let mut listed = Meta::of(Kind::File, 5);
        listed.change = 7;
        let mut after = listed;
        assert!(
            Data::from_bytes(vec![0; 5], after)
                .unchanged(&listed)
                .unwrap()
        );
        after.change = 8;
        assert!(
            !Data::from_bytes(vec![0; 5], after)
                .unchanged(&listed)
                .unwrap()
        );
        after.change = 7;
        after.size = 6;
        assert!(
            !Data::from_bytes(vec![0; 5], after)
                .unchanged(&listed)
                .unwrap()
        );
    }
}

//! Checking every length a reply declares against the record, before decoding it.
//!
//! `nfs3_types` allocates by the length a server claims before it reads the bytes
//! (`Opaque::unpack` is `vec![0u8; len]`, `Vec<u32>::unpack` is `with_capacity(len)`),
//! so a 60-byte reply claiming a 4 GiB array aborts nfsync on a memory-limited machine.
//! Every type nfsync decodes therefore has a [`Shape`]: a walk over the same XDR layout
//! that allocates nothing and checks each declared length against the bytes left in
//! the record. [`super::wire::decode_reply`] walks first, so `nfs3_types` only ever
//! sees lengths that fit in bytes we already hold. Lists declare no count (a "more"
//! flag precedes each element), so they grow only with elements actually present.
//!
//! The walk must follow the layout `nfs3_types` decodes byte for byte; the randomized
//! tests in `tests/it/hostile.rs` check that every valid reply passes and that no reply,
//! however mangled, makes the decoder allocate beyond the record.

use std::fmt;

use nfs3_types::mount::{export_node, mountres3};
use nfs3_types::nfs3::{self as v3, Nfs3Result};
use nfs3_types::xdr_codec::{List, Void};

/// RFC 1813's NFS3_FHSIZE and FHSIZE3: handles are kept for the whole run.
const FH_MAX: usize = 64;
/// RFC 5531's MAX_AUTH_BYTES for a verifier body.
const AUTH_MAX: usize = 400;
/// No bound but the record's own.
const ANY: usize = usize::MAX;

/// Why a reply does not fit its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    /// Offset in the record where the walk stopped.
    pub at: usize,
    /// What was wrong there.
    pub what: String,
}

impl fmt::Display for Bad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.what, self.at)
    }
}

impl std::error::Error for Bad {}

/// A cursor over one record that only checks, never copies.
pub struct Walk<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Walk<'a> {
    /// A walk from the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Walk<'a> {
        Walk { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left in the record.
    pub fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes not walked yet, for a type that decodes itself (NFSv4's COMPOUND).
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// A failure at the current position.
    pub fn bad(&self, what: String) -> Bad {
        Bad { at: self.pos, what }
    }

    /// Skips `n` fixed bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), Bad> {
        if n > self.left() {
            return Err(self.bad(format!("record ends {} bytes early", n - self.left())));
        }
        self.pos += n;
        Ok(())
    }

    /// One XDR unsigned int.
    pub fn u32(&mut self) -> Result<u32, Bad> {
        let at = self.pos;
        self.skip(4)?;
        let b = &self.buf[at..at + 4];
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An XDR bool; anything but 0 or 1 is refused, as `nfs3_types` does.
    pub fn flag(&mut self) -> Result<bool, Bad> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            n => Err(Bad {
                at: self.pos - 4,
                what: format!("{n} where a boolean belongs"),
            }),
        }
    }

    /// A variable-length opaque or string of at most `max` bytes (plus padding).
    pub fn opaque(&mut self, max: usize, what: &str) -> Result<(), Bad> {
        let len = self.u32()? as usize;
        let padded = len as u64 + ((4 - (len as u64 % 4)) % 4);
        if len > max {
            return Err(self.bad(format!("{what} of {len} bytes (at most {max} allowed)")));
        }
        if padded > self.left() as u64 {
            return Err(self.bad(format!(
                "{what} claims {len} bytes, {} left in the record",
                self.left()
            )));
        }
        self.pos += padded as usize;
        Ok(())
    }

    /// A variable-length array of unsigned ints.
    pub fn u32s(&mut self, what: &str) -> Result<(), Bad> {
        let n = self.u32()? as u64;
        if n * 4 > self.left() as u64 {
            return Err(self.bad(format!(
                "{what} claims {n} entries, {} bytes left in the record",
                self.left()
            )));
        }
        self.pos += (n * 4) as usize;
        Ok(())
    }

    /// An XDR optional (`Nfs3Option`): a 0/1 discriminant, then the value if 1.
    pub fn option(&mut self, f: impl FnOnce(&mut Self) -> Result<(), Bad>) -> Result<(), Bad> {
        if self.flag()? { f(self) } else { Ok(()) }
    }

    /// An XDR linked list (`List`): elements while the "more" flag is 1. Each turn
    /// consumes at least the flag, so the loop ends with the record.
    pub fn list(&mut self, mut f: impl FnMut(&mut Self) -> Result<(), Bad>) -> Result<(), Bad> {
        while self.flag()? {
            f(self)?;
        }
        Ok(())
    }

    /// Walks a `T`.
    pub fn walk<T: Shape + ?Sized>(&mut self) -> Result<(), Bad> {
        T::walk(self)
    }

    fn fattr(&mut self) -> Result<(), Bad> {
        // type, mode, nlink, uid, gid, size, used, rdev, fsid, fileid, a/m/ctime
        self.skip(84)
    }

    fn post_op_attr(&mut self) -> Result<(), Bad> {
        self.option(Walk::fattr)
    }

    fn wcc_data(&mut self) -> Result<(), Bad> {
        // pre_op_attr: size, mtime, ctime
        self.option(|w| w.skip(24))?;
        self.post_op_attr()
    }

    fn fh(&mut self) -> Result<(), Bad> {
        self.opaque(FH_MAX, "file handle")
    }

    fn post_op_fh(&mut self) -> Result<(), Bad> {
        self.option(Walk::fh)
    }

    /// post_op_fh3, post_op_attr, wcc_data: what CREATE, MKDIR, SYMLINK, MKNOD return.
    fn new_object(&mut self) -> Result<(), Bad> {
        self.post_op_fh()?;
        self.post_op_attr()?;
        self.wcc_data()
    }
}

/// The XDR layout of a type nfsync decodes from a server, for [`Walk`].
pub trait Shape {
    /// Walks one value, checking every declared length against what is left.
    fn walk(w: &mut Walk<'_>) -> Result<(), Bad>;
}

/// Walks an RPC reply header; `Ok(true)` when a SUCCESS result follows it.
pub fn walk_header(w: &mut Walk<'_>) -> Result<bool, Bad> {
    w.skip(4)?; // xid
    match w.u32()? {
        1 => {}
        0 => return Err(w.bad("a CALL instead of a reply".into())),
        n => return Err(w.bad(format!("message type {n}"))),
    }
    match w.u32()? {
        0 => {
            w.skip(4)?; // verifier flavor
            w.opaque(AUTH_MAX, "verifier")?;
            match w.u32()? {
                0 => Ok(true),
                2 => w.skip(8).map(|_| false), // PROG_MISMATCH low, high
                _ => Ok(false),
            }
        }
        1 => match w.u32()? {
            0 => w.skip(8).map(|_| false), // RPC_MISMATCH low, high
            1 => w.skip(4).map(|_| false), // AUTH_ERROR stat
            n => Err(w.bad(format!("reject status {n}"))),
        },
        n => Err(w.bad(format!("reply status {n}"))),
    }
}

/// Checks a whole reply record: header, then (for SUCCESS) an `R` filling the rest.
pub fn check_reply<R: Shape + ?Sized>(record: &[u8]) -> Result<(), Bad> {
    let mut w = Walk::new(record);
    if walk_header(&mut w)? {
        w.walk::<R>()?;
        if w.left() > 0 {
            return Err(w.bad(format!("{} bytes after the result", w.left())));
        }
    }
    Ok(())
}

impl<T: Shape, E: Shape> Shape for Nfs3Result<T, E> {
    fn walk(w: &mut Walk<'_>) -> Result<(), Bad> {
        // nfs3_types refuses unknown statuses itself; any non-zero one has E's layout.
        if w.u32()? == 0 {
            T::walk(w)
        } else {
            E::walk(w)
        }
    }
}

impl Shape for Void {
    fn walk(_: &mut Walk<'_>) -> Result<(), Bad> {
        Ok(())
    }
}

impl Shape for u32 {
    fn walk(w: &mut Walk<'_>) -> Result<(), Bad> {
        w.skip(4)
    }
}

impl Shape for mountres3<'_> {
    fn walk(w: &mut Walk<'_>) -> Result<(), Bad> {
        if w.u32()? == 0 {
            w.opaque(FH_MAX, "root file handle")?;
            w.u32s("auth flavor list")?;
        }
        Ok(())
    }
}

impl Shape for List<export_node<'_, '_>> {
    fn walk(w: &mut Walk<'_>) -> Result<(), Bad> {
        w.list(|w| {
            w.opaque(ANY, "export path")?;
            w.list(|w| w.opaque(ANY, "export group"))
        })
    }
}

/// `impl Shape` for NFS result types from a list of walk steps.
macro_rules! shapes {
    ($($ty:ty => [$($step:ident $(($($arg:expr),*))?),*];)*) => {$(
        impl Shape for $ty {
            fn walk(w: &mut Walk<'_>) -> Result<(), Bad> {
                $(w.$step($($($arg),*)?)?;)*
                Ok(())
            }
        }
    )*};
}

shapes! {
    v3::GETATTR3resok => [fattr];
    v3::LOOKUP3resok => [fh, post_op_attr, post_op_attr];
    v3::LOOKUP3resfail => [post_op_attr];
    v3::SETATTR3resok => [wcc_data];
    v3::SETATTR3resfail => [wcc_data];
    // rtmax..dtpref (7), maxfilesize, time_delta, properties
    v3::FSINFO3resok => [post_op_attr, skip(48)];
    v3::FSINFO3resfail => [post_op_attr];
    v3::CREATE3resok => [new_object];
    v3::CREATE3resfail => [wcc_data];
    v3::MKDIR3resok => [new_object];
    v3::MKDIR3resfail => [wcc_data];
    v3::SYMLINK3resok => [new_object];
    v3::SYMLINK3resfail => [wcc_data];
    v3::MKNOD3resok => [new_object];
    v3::MKNOD3resfail => [wcc_data];
    v3::READDIRPLUS3resfail => [post_op_attr];
    v3::READLINK3resok<'_> => [post_op_attr, opaque(ANY, "symlink target")];
    v3::READLINK3resfail => [post_op_attr];
    v3::LINK3resok => [post_op_attr, wcc_data];
    v3::LINK3resfail => [post_op_attr, wcc_data];
    v3::RENAME3resok => [wcc_data, wcc_data];
    v3::RENAME3resfail => [wcc_data, wcc_data];
    v3::RMDIR3resok => [wcc_data];
    v3::RMDIR3resfail => [wcc_data];
    v3::REMOVE3resok => [wcc_data];
    v3::REMOVE3resfail => [wcc_data];
    // count, committed, verifier
    v3::WRITE3resok => [wcc_data, skip(16)];
    v3::WRITE3resfail => [wcc_data];
    v3::COMMIT3resok => [wcc_data, skip(8)];
    v3::COMMIT3resfail => [wcc_data];
    // count, eof, data
    v3::READ3resok<'_> => [post_op_attr, skip(4), flag, opaque(ANY, "read data")];
    v3::READ3resfail => [post_op_attr];
}

impl Shape for v3::READDIRPLUS3resok<'_> {
    fn walk(w: &mut Walk<'_>) -> Result<(), Bad> {
        w.post_op_attr()?;
        w.skip(8)?; // cookie verifier
        w.list(|w| {
            w.skip(8)?; // fileid
            w.opaque(ANY, "file name")?;
            w.skip(8)?; // cookie
            w.post_op_attr()?;
            w.post_op_fh()
        })?;
        w.flag().map(|_| ()) // eof
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// xid 7, REPLY, MSG_ACCEPTED, AUTH_NULL verifier, SUCCESS.
    fn ok_header() -> Vec<u8> {
        be(&[7, 1, 0, 0, 0, 0])
    }

    #[test]
    fn claimed_lengths_beyond_the_record_are_refused() {
        // A hostile MNT reply: a root handle, then 0xfffffff0 auth flavors.
        let mut rec = ok_header();
        rec.extend(be(&[0, 4, 0xabcd, 0xffff_fff0, 1]));
        let e = check_reply::<mountres3>(&rec).unwrap_err();
        assert!(e.what.contains("4294967280 entries"), "{e}");

        // A verifier claiming 4 GiB, in every kind of reply.
        let rec = be(&[7, 1, 0, 0, 0xffff_fff0, 0]);
        let e = check_reply::<Void>(&rec).unwrap_err();
        assert!(e.what.contains("verifier"), "{e}");

        // A file handle longer than RFC 1813 allows, though present.
        let mut rec = ok_header();
        rec.extend(be(&[0, 68]));
        rec.extend([0; 68 + 168]);
        assert!(check_reply::<v3::LOOKUP3resok>(&rec).is_err());
    }

    #[test]
    fn exact_records_pass_and_trailing_bytes_do_not() {
        let mut rec = ok_header();
        rec.extend(be(&[0, 3, 0x6162_6300, 1, 1]));
        check_reply::<mountres3>(&rec).unwrap();
        rec.extend(be(&[0]));
        assert!(check_reply::<mountres3>(&rec).is_err());
        // A rejected call carries no result to walk.
        check_reply::<mountres3>(&be(&[7, 1, 1, 1, 5])).unwrap();
    }
}

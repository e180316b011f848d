//! NFSv3 calls with the retry rules the protocol needs, on top of [`RpcClient`].
//!
//! One generic [`Nfs::call`] does what every procedure needs: retry on a broken
//! connection (with a new xid: the old one may have executed, so the reply is marked
//! *ambiguous* and the caller resolves it — REMOVE→NOENT is success, CREATE→EXIST is
//! looked up), back off and retry on NFS3ERR_JUKEBOX, and give up with a fatal
//! `TimedOut`/`NotConnected` error when the server stays away for `--timeout` (the
//! transport's one clock decides that, for every call at once).

use std::io;
use std::time::{Duration, Instant};

use nfs3_types::nfs3::{
    self as v3, Nfs3Result, fattr3, ftype3, nfs_fh3, nfsstat3, nfstime3, sattr3, set_mtime,
};
use nfs3_types::xdr_codec::{Pack, Unpack};

use crate::dest;
use crate::meta::{Kind, Meta, Time};
use crate::nfs::rpc::error::{transport, transport_msg};
use crate::nfs::rpc::shape::Shape;
use crate::nfs::rpc::{RpcClient, RpcError};

/// The outcome of one NFS procedure.
#[derive(Debug)]
pub struct Answer<T> {
    /// The result, or the NFS status the server answered with.
    pub res: Result<T, nfsstat3>,
    /// An earlier attempt was sent on a connection that then broke, so the server may
    /// already have done what this reply talks about (e.g. EXIST after our own CREATE).
    pub ambiguous: bool,
}

/// An NFSv3 client: many calls may run at once through `&self`.
pub struct Nfs {
    rpc: RpcClient,
    timeout: Duration,
}

impl Nfs {
    /// Wraps a transport to the NFS program.
    pub fn new(rpc: RpcClient, timeout: Duration) -> Nfs {
        Nfs { rpc, timeout }
    }

    /// The transport, for connection set-up.
    pub fn rpc(&self) -> &RpcClient {
        &self.rpc
    }

    /// Calls `proc`, retrying through reconnects and JUKEBOX as described above.
    pub async fn call<A, T, E>(&self, proc: v3::NFS_PROGRAM, args: &A) -> dest::Result<Answer<T>>
    where
        A: Pack,
        T: Unpack + Shape,
        E: Unpack + Shape,
    {
        let mut ambiguous = false;
        let mut first_failure: Option<Instant> = None;
        let mut backoff = Duration::from_millis(20);
        loop {
            let r = self
                .rpc
                .call::<A, Nfs3Result<T, E>>(proc as u32, args)
                .await;
            let limit = self.timeout;
            match r {
                Ok(Nfs3Result::Ok(v)) => {
                    return Ok(Answer {
                        res: Ok(v),
                        ambiguous,
                    });
                }
                Ok(Nfs3Result::Err((nfsstat3::NFS3ERR_JUKEBOX, _))) => {
                    // The server is alive but busy (e.g. recalling data); it may take long.
                    if first_failure.get_or_insert_with(Instant::now).elapsed() > limit * 4 {
                        return Err(dest::Error::TimedOut(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("{} kept answering NFS3ERR_JUKEBOX", self.rpc.addr()),
                        )));
                    }
                }
                Ok(Nfs3Result::Err((stat, _))) => {
                    return Ok(Answer {
                        res: Err(stat),
                        ambiguous,
                    });
                }
                Err(e) if e.is_transient() => {
                    if matches!(e, RpcError::Disconnected { sent: true, .. }) {
                        ambiguous = true;
                    }
                    // The transport gives the server up after `limit` away; this only
                    // ends a call that keeps failing while the server answers others.
                    if first_failure.get_or_insert_with(Instant::now).elapsed() > limit * 2 {
                        let msg = format!("NFS server gone for {} s ({e})", limit.as_secs());
                        return Err(transport_msg(&e, msg));
                    }
                }
                Err(e) => return Err(transport(e)),
            }
            self.rpc.back_off(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    /// NULL: checks that the NFS program answers (and accepts our credentials).
    pub async fn null(&self) -> Result<(), RpcError> {
        self.rpc
            .call::<_, nfs3_types::xdr_codec::Void>(0, &nfs3_types::xdr_codec::Void)
            .await
            .map(|_| ())
    }

    /// LOOKUP of one name: its handle and attributes (fetched when not returned).
    pub async fn lookup(
        &self,
        dir: &nfs_fh3,
        name: &[u8],
    ) -> dest::Result<Answer<(nfs_fh3, fattr3)>> {
        let args = v3::LOOKUP3args {
            what: dirop(dir, name),
        };
        let a = self
            .call::<_, v3::LOOKUP3resok, v3::LOOKUP3resfail>(
                v3::NFS_PROGRAM::NFSPROC3_LOOKUP,
                &args,
            )
            .await?;
        let ok = match a.res {
            Ok(ok) => ok,
            Err(s) => {
                return Ok(Answer {
                    res: Err(s),
                    ambiguous: a.ambiguous,
                });
            }
        };
        let attrs = match ok.obj_attributes {
            v3::Nfs3Option::Some(at) => at,
            v3::Nfs3Option::None => match self.getattr(&ok.object).await?.res {
                Ok(at) => at,
                Err(s) => {
                    return Ok(Answer {
                        res: Err(s),
                        ambiguous: false,
                    });
                }
            },
        };
        Ok(Answer {
            res: Ok((ok.object, attrs)),
            ambiguous: a.ambiguous,
        })
    }

    /// GETATTR.
    pub async fn getattr(&self, fh: &nfs_fh3) -> dest::Result<Answer<fattr3>> {
        let args = v3::GETATTR3args { object: fh.clone() };
        let a = self
            .call::<_, v3::GETATTR3resok, nfs3_types::xdr_codec::Void>(
                v3::NFS_PROGRAM::NFSPROC3_GETATTR,
                &args,
            )
            .await?;
        Ok(Answer {
            res: a.res.map(|ok| ok.obj_attributes),
            ambiguous: a.ambiguous,
        })
    }

    /// SETATTR without a guard.
    pub async fn setattr(&self, fh: &nfs_fh3, attrs: sattr3) -> dest::Result<Answer<()>> {
        let a = self.setattr_wcc(fh, attrs).await?;
        Ok(Answer {
            res: a.res.map(|_| ()),
            ambiguous: a.ambiguous,
        })
    }

    /// SETATTR without a guard, returning the attributes after it (when sent).
    pub async fn setattr_wcc(
        &self,
        fh: &nfs_fh3,
        attrs: sattr3,
    ) -> dest::Result<Answer<Option<fattr3>>> {
        let args = v3::SETATTR3args {
            object: fh.clone(),
            new_attributes: attrs,
            guard: v3::Nfs3Option::None,
        };
        let a = self
            .call::<_, v3::SETATTR3resok, v3::SETATTR3resfail>(
                v3::NFS_PROGRAM::NFSPROC3_SETATTR,
                &args,
            )
            .await?;
        Ok(Answer {
            res: a.res.map(|ok| post_op(ok.obj_wcc.after)),
            ambiguous: a.ambiguous,
        })
    }
}

/// `diropargs3` for `dir` + `name`.
pub fn dirop<'a>(dir: &nfs_fh3, name: &'a [u8]) -> v3::diropargs3<'a> {
    v3::diropargs3 {
        dir: dir.clone(),
        name: v3::filename3(nfs3_types::xdr_codec::Opaque::borrowed(name)),
    }
}

/// `post_op_attr` as an `Option`.
pub fn post_op(a: v3::post_op_attr) -> Option<fattr3> {
    match a {
        v3::Nfs3Option::Some(at) => Some(at),
        v3::Nfs3Option::None => None,
    }
}

/// `post_op_fh3` as an `Option`.
pub fn post_fh(h: v3::post_op_fh3) -> Option<nfs_fh3> {
    match h {
        v3::Nfs3Option::Some(fh) => Some(fh),
        v3::Nfs3Option::None => None,
    }
}

/// NFS attributes as nfsync's [`Meta`].
pub fn meta(a: &fattr3) -> Meta {
    let kind = match a.type_ {
        ftype3::NF3REG => Kind::File,
        ftype3::NF3DIR => Kind::Dir,
        ftype3::NF3LNK => Kind::Symlink,
        ftype3::NF3FIFO => Kind::Fifo,
        ftype3::NF3SOCK => Kind::Socket,
        ftype3::NF3CHR => Kind::CharDev,
        ftype3::NF3BLK => Kind::BlockDev,
    };
    Meta {
        kind,
        size: a.size,
        mode: a.mode & 0o7777,
        uid: a.uid,
        gid: a.gid,
        mtime: Time {
            sec: i64::from(a.mtime.seconds),
            nsec: a.mtime.nseconds.min(999_999_999),
        },
        nlink: u64::from(a.nlink),
        dev: a.fsid,
        ino: a.fileid,
        rdev: libc::makedev(a.rdev.specdata1, a.rdev.specdata2),
        change: (u64::from(a.ctime.seconds) << 32) | u64::from(a.ctime.nseconds),
        atime: None,
    }
}

/// The earliest and latest times NFSv3 can carry (`nfstime3`: unsigned 32-bit seconds).
pub const NFS3_TIMES: (Time, Time) = (
    Time { sec: 0, nsec: 0 },
    Time {
        sec: u32::MAX as i64,
        nsec: 999_999_999,
    },
);

/// A time as NFS sends it: the nearest one it can carry.
pub fn nfs_time(t: Time) -> nfstime3 {
    let t = t.clamp_to(NFS3_TIMES.0, NFS3_TIMES.1);
    nfstime3 {
        seconds: t.sec as u32,
        nseconds: t.nsec.min(999_999_999),
    }
}

/// A SETATTR that sets only the mtime.
pub fn mtime_only(t: Time) -> sattr3 {
    sattr3 {
        mtime: set_mtime::SET_TO_CLIENT_TIME(nfs_time(t)),
        ..Default::default()
    }
}

//! NFSv4.1 on the wire (RFC 8881): the COMPOUND call and the operations nfsync sends.
//!
//! Arguments are declared and encoded by `nfs3_types`' XDR derive. Replies are decoded
//! here by hand, by a reader that checks every declared length against the bytes of
//! the record already in memory ([`Dec`]): a COMPOUND reply is a counted array of
//! unions whose sizes the server claims, and nothing it claims may make us allocate
//! beyond what it actually sent.

use std::io::{Read, Write};

use nfs3_types::xdr_codec::{Error as XdrError, Opaque, Pack, Unpack, XdrCodec};

use crate::nfs::shape::{Bad, Shape, Walk};

/// The NFS program and the version that carries COMPOUND.
pub const PROGRAM: u32 = 100_003;
pub const VERSION: u32 = 4;
/// COMPOUND's procedure number (0 is NULL).
pub const PROC_COMPOUND: u32 = 1;
/// The minor version nfsync speaks.
pub const MINOR: u32 = 1;

/// RFC 8881's NFS4_FHSIZE.
pub const FH_MAX: usize = 128;
/// RFC 8881's NFS4_OPAQUE_LIMIT.
pub const OPAQUE_LIMIT: usize = 1024;
/// Every status is an `nfsstat4`; 0 is NFS4_OK.
pub type Status = u32;

/// Statuses nfsync treats specially (RFC 8881 section 15.1).
pub mod status {
    pub const OK: u32 = 0;
    pub const PERM: u32 = 1;
    pub const NOENT: u32 = 2;
    pub const IO: u32 = 5;
    pub const ACCESS: u32 = 13;
    pub const EXIST: u32 = 17;
    pub const NOTDIR: u32 = 20;
    pub const ISDIR: u32 = 21;
    pub const INVAL: u32 = 22;
    pub const FBIG: u32 = 27;
    pub const NOSPC: u32 = 28;
    pub const ROFS: u32 = 30;
    pub const MLINK: u32 = 31;
    pub const NAMETOOLONG: u32 = 63;
    pub const NOTEMPTY: u32 = 66;
    pub const DQUOT: u32 = 69;
    pub const STALE: u32 = 70;
    pub const BADHANDLE: u32 = 10001;
    pub const NOTSUPP: u32 = 10004;
    pub const SERVERFAULT: u32 = 10006;
    pub const DELAY: u32 = 10008;
    pub const GRACE: u32 = 10013;
    pub const MINOR_VERS_MISMATCH: u32 = 10021;
    pub const STALE_CLIENTID: u32 = 10022;
    pub const EXPIRED: u32 = 10011;
    pub const BADSESSION: u32 = 10052;
    pub const BADSLOT: u32 = 10053;
    pub const DEADSESSION: u32 = 10078;
    pub const SEQ_MISORDERED: u32 = 10063;
    pub const CONN_NOT_BOUND_TO_SESSION: u32 = 10055;
    pub const OP_NOT_IN_SESSION: u32 = 10071;
    pub const SEQ_FALSE_RETRY: u32 = 10076;
}

/// A verifier (`verifier4`).
pub type Verifier = [u8; 8];
/// A session id (`sessionid4`).
pub type SessionId = [u8; 16];

/// `client_owner4`: who we are to the server. A fresh owner per run keeps concurrent
/// runs (even from one host) from sharing state.
#[derive(Debug, Clone, XdrCodec)]
pub struct ClientOwner {
    pub verifier: Verifier,
    pub owner_id: Opaque<'static>,
}

/// `EXCHANGE_ID4args` with SP4_NONE state protection and no implementation id.
#[derive(Debug, Clone, XdrCodec)]
pub struct ExchangeIdArgs {
    pub owner: ClientOwner,
    pub flags: u32,
    /// `state_protect_how4`: SP4_NONE (0), which carries nothing.
    pub state_protect: u32,
    /// `nfs_impl_id4<1>`: the count, 0.
    pub impl_id_count: u32,
}

/// `channel_attrs4` (without RDMA: its `ca_rdma_ird<1>` is an empty array).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, XdrCodec)]
pub struct ChannelAttrs {
    pub header_pad_size: u32,
    pub max_request_size: u32,
    pub max_response_size: u32,
    pub max_response_size_cached: u32,
    pub max_operations: u32,
    pub max_requests: u32,
    pub rdma_ird_count: u32,
}

/// `CREATE_SESSION4args` with no callback channel use (one AUTH_NONE sec parm).
#[derive(Debug, Clone, XdrCodec)]
pub struct CreateSessionArgs {
    pub client_id: u64,
    pub sequence: u32,
    pub flags: u32,
    pub fore: ChannelAttrs,
    pub back: ChannelAttrs,
    pub cb_program: u32,
    /// `callback_sec_parms4<>`: one entry, AUTH_NONE (0), which carries nothing.
    pub sec_parms_count: u32,
    pub sec_parms_flavor: u32,
}

/// `SEQUENCE4args`.
#[derive(Debug, Clone, Copy, XdrCodec)]
pub struct SequenceArgs {
    pub session: SessionId,
    pub sequence: u32,
    pub slot: u32,
    pub highest_slot: u32,
    pub cache_this: bool,
}

/// `bitmap4` with at most three words, enough for every attribute nfsync asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bitmap(pub Vec<u32>);

impl Bitmap {
    /// The bitmap of the given attribute numbers.
    pub fn of(attrs: &[u32]) -> Bitmap {
        let mut w = Vec::new();
        for &a in attrs {
            let i = (a / 32) as usize;
            if w.len() <= i {
                w.resize(i + 1, 0);
            }
            w[i] |= 1 << (a % 32);
        }
        Bitmap(w)
    }

    /// Whether attribute `a` is set.
    pub fn has(&self, a: u32) -> bool {
        self.0
            .get((a / 32) as usize)
            .is_some_and(|w| w & (1 << (a % 32)) != 0)
    }
}

impl Pack for Bitmap {
    fn packed_size(&self) -> usize {
        self.0.packed_size()
    }
    fn pack(&self, out: &mut impl Write) -> Result<usize, XdrError> {
        self.0.pack(out)
    }
}

/// Attribute numbers (RFC 8881 section 5.8).
pub mod attr {
    pub const TYPE: u32 = 1;
    pub const SIZE: u32 = 4;
    pub const FILEID: u32 = 20;
    pub const MODE: u32 = 33;
    pub const NUMLINKS: u32 = 35;
    pub const OWNER: u32 = 36;
    pub const OWNER_GROUP: u32 = 37;
    pub const RAWDEV: u32 = 41;
    pub const TIME_MODIFY: u32 = 53;
    pub const TIME_MODIFY_SET: u32 = 54;
}

/// `stateid4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, XdrCodec)]
pub struct StateId {
    pub seqid: u32,
    pub other: [u8; 12],
}

impl StateId {
    /// RFC 8881's current stateid: "the stateid the previous operation of this
    /// compound returned", which lets OPEN, WRITE, SETATTR and CLOSE share one call.
    pub const CURRENT: StateId = StateId {
        seqid: 1,
        other: [0; 12],
    };
}

/// `fattr4` as sent: which attributes, and their values packed in attribute order.
#[derive(Debug, Clone, XdrCodec)]
pub struct Attrs {
    pub mask: Bitmap,
    pub vals: Opaque<'static>,
}

/// Builds an [`Attrs`]; attributes must be added in ascending number.
#[derive(Default)]
pub struct AttrsBuilder {
    nums: Vec<u32>,
    vals: Vec<u8>,
}

impl AttrsBuilder {
    fn put(mut self, n: u32, v: &impl Pack) -> Self {
        debug_assert!(self.nums.last().is_none_or(|&l| l < n));
        self.nums.push(n);
        v.pack(&mut self.vals).expect("packing into a Vec");
        self
    }
    /// `mode` (permission bits with setuid, setgid and sticky).
    pub fn mode(self, mode: u32) -> Self {
        self.put(attr::MODE, &(mode & 0o7777))
    }
    /// `owner` and `owner_group` as numeric strings (RFC 8881 section 5.9).
    pub fn owner(self, uid: Option<u32>, gid: Option<u32>) -> Self {
        let mut b = self;
        if let Some(u) = uid {
            b = b.put(attr::OWNER, &Opaque::owned(u.to_string().into_bytes()));
        }
        if let Some(g) = gid {
            b = b.put(
                attr::OWNER_GROUP,
                &Opaque::owned(g.to_string().into_bytes()),
            );
        }
        b
    }
    /// `time_modify_set` to a client time (signed seconds: 1960 and 2200 fit).
    pub fn mtime(self, sec: i64, nsec: u32) -> Self {
        let mut v = Vec::with_capacity(16);
        v.extend_from_slice(&1u32.to_be_bytes()); // SET_TO_CLIENT_TIME4
        v.extend_from_slice(&sec.to_be_bytes());
        v.extend_from_slice(&nsec.to_be_bytes());
        let mut b = self;
        b.nums.push(attr::TIME_MODIFY_SET);
        b.vals.extend_from_slice(&v);
        b
    }
    pub fn build(self) -> Attrs {
        Attrs {
            mask: Bitmap::of(&self.nums),
            vals: Opaque::owned(self.vals),
        }
    }
}

/// `open_owner4`.
#[derive(Debug, Clone, XdrCodec)]
pub struct OpenOwner {
    pub client_id: u64,
    pub owner: Opaque<'static>,
}

/// `createhow4`, the modes nfsync uses.
#[derive(Debug, Clone, XdrCodec)]
pub enum CreateHow {
    /// Fails with EXIST when the name is taken: a new file is never someone else's.
    #[xdr(1)]
    Guarded(Attrs),
}

/// `openflag4`.
#[derive(Debug, Clone, XdrCodec)]
pub enum OpenHow {
    #[xdr(0)]
    NoCreate,
    #[xdr(1)]
    Create(CreateHow),
}

/// `open_claim4`: CLAIM_NULL, a name in the current directory.
#[derive(Debug, Clone, XdrCodec)]
pub enum OpenClaim {
    #[xdr(0)]
    Null(Opaque<'static>),
}

/// `OPEN4args`.
#[derive(Debug, Clone, XdrCodec)]
pub struct OpenArgs {
    pub seqid: u32,
    pub share_access: u32,
    pub share_deny: u32,
    pub owner: OpenOwner,
    pub how: OpenHow,
    pub claim: OpenClaim,
}

/// OPEN4_SHARE_ACCESS_WRITE with OPEN4_SHARE_ACCESS_WANT_NO_DELEG: a copy tool has no
/// use for a delegation, and one would have to be returned.
pub const SHARE_WRITE_NO_DELEG: u32 = 0x0002 | 0x0400;

/// `WRITE4args`.
#[derive(Debug, Clone, XdrCodec)]
pub struct WriteArgs {
    pub stateid: StateId,
    pub offset: u64,
    /// `stable_how4`: UNSTABLE4 0, DATA_SYNC4 1, FILE_SYNC4 2.
    pub stable: u32,
    pub data: Opaque<'static>,
}

/// `SETATTR4args`.
#[derive(Debug, Clone, XdrCodec)]
pub struct SetAttrArgs {
    pub stateid: StateId,
    pub attrs: Attrs,
}

/// `CLOSE4args`.
#[derive(Debug, Clone, Copy, XdrCodec)]
pub struct CloseArgs {
    pub seqid: u32,
    pub stateid: StateId,
}

/// One operation of a COMPOUND (`nfs_argop4`), those nfsync sends.
#[derive(Debug, Clone, XdrCodec)]
pub enum Op {
    #[xdr(4)]
    Close(CloseArgs),
    #[xdr(9)]
    GetAttr(Bitmap),
    #[xdr(10)]
    GetFh,
    #[xdr(15)]
    Lookup(Opaque<'static>),
    #[xdr(18)]
    Open(OpenArgs),
    #[xdr(22)]
    PutFh(Opaque<'static>),
    #[xdr(24)]
    PutRootFh,
    #[xdr(34)]
    SetAttr(SetAttrArgs),
    #[xdr(38)]
    Write(WriteArgs),
    #[xdr(42)]
    ExchangeId(ExchangeIdArgs),
    #[xdr(43)]
    CreateSession(CreateSessionArgs),
    #[xdr(44)]
    DestroySession(SessionId),
    #[xdr(53)]
    Sequence(SequenceArgs),
    #[xdr(57)]
    DestroyClientId(u64),
    #[xdr(58)]
    ReclaimComplete(bool),
}

impl Unpack for Bitmap {
    fn unpack(input: &mut impl Read) -> Result<(Self, usize), XdrError> {
        // Only ever decoded from our own requests (the derive wants it); replies go
        // through `Dec`.
        let (v, n) = Vec::<u32>::unpack(input)?;
        Ok((Bitmap(v), n))
    }
}

/// `COMPOUND4args`: an empty tag, minor version 1, the operations in order.
#[derive(Debug, Clone)]
pub struct Compound(pub Vec<Op>);

impl Pack for Compound {
    fn packed_size(&self) -> usize {
        4 + 4 + 4 + self.0.iter().map(Pack::packed_size).sum::<usize>()
    }
    fn pack(&self, out: &mut impl Write) -> Result<usize, XdrError> {
        let mut n = Opaque::borrowed(b"").pack(out)?;
        n += MINOR.pack(out)?;
        n += (self.0.len() as u32).pack(out)?;
        for op in &self.0 {
            n += op.pack(out)?;
        }
        Ok(n)
    }
}

/// A reply's result for one operation, decoded where nfsync needs its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Res {
    /// An operation that returns only its status on success (PUTFH, LOOKUP, ...).
    Done,
    GetFh(Vec<u8>),
    GetAttr(Fattr),
    ExchangeId {
        client_id: u64,
        sequence: u32,
        flags: u32,
    },
    CreateSession {
        session: SessionId,
        fore: ChannelAttrs,
    },
    Sequence {
        slot: u32,
        highest_slot: u32,
        target_highest_slot: u32,
        flags: u32,
    },
    Open {
        stateid: StateId,
    },
    Write {
        count: u32,
        committed: u32,
        verifier: Verifier,
    },
    /// SETATTR's `attrsset`, which comes whatever the status.
    SetAttr(Bitmap),
    Close,
}

/// `fattr4`: which attributes came, and their packed values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fattr {
    pub mask: Bitmap,
    pub vals: Vec<u8>,
}

/// A decoded COMPOUND reply: its status, and one result per operation the server
/// ran (the last one failed when the status is not OK).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: Status,
    pub results: Vec<(u32, Status, Res)>,
}

/// A bounded reader over a reply's bytes: every length is checked against what is
/// left before anything is taken.
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8]) -> Dec<'a> {
        Dec { buf, pos: 0 }
    }

    fn bad(&self, what: &str) -> XdrError {
        XdrError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("NFSv4 reply: {what} at byte {}", self.pos),
        ))
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], XdrError> {
        if n > self.buf.len() - self.pos {
            return Err(self.bad("truncated"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u32(&mut self) -> Result<u32, XdrError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, XdrError> {
        Ok((u64::from(self.u32()?) << 32) | u64::from(self.u32()?))
    }

    /// A variable-length opaque of at most `max` bytes (and never more than is left).
    pub fn opaque(&mut self, max: usize) -> Result<&'a [u8], XdrError> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(self.bad(&format!("opaque of {n} bytes (at most {max})")));
        }
        let s = self.take(n)?;
        self.take((4 - n % 4) % 4)?;
        Ok(s)
    }

    /// A fixed-length opaque.
    pub fn fixed<const N: usize>(&mut self) -> Result<[u8; N], XdrError> {
        let s = self.take(N)?;
        self.take((4 - N % 4) % 4)?;
        Ok(s.try_into().expect("N bytes"))
    }

    /// A counted array of `u32`, its count bounded by the bytes left.
    pub fn u32s(&mut self) -> Result<Vec<u32>, XdrError> {
        let n = self.u32()? as usize;
        if n > (self.buf.len() - self.pos) / 4 {
            return Err(self.bad(&format!("array of {n} words")));
        }
        (0..n).map(|_| self.u32()).collect()
    }

    fn channel_attrs(&mut self) -> Result<ChannelAttrs, XdrError> {
        let mut a = ChannelAttrs {
            header_pad_size: self.u32()?,
            max_request_size: self.u32()?,
            max_response_size: self.u32()?,
            max_response_size_cached: self.u32()?,
            max_operations: self.u32()?,
            max_requests: self.u32()?,
            rdma_ird_count: self.u32()?,
        };
        if a.rdma_ird_count > 1 {
            return Err(self.bad("ca_rdma_ird of more than one"));
        }
        if a.rdma_ird_count == 1 {
            self.u32()?;
            a.rdma_ird_count = 0;
        }
        Ok(a)
    }

    /// One `nfs_resop4` whose status was OK.
    fn result(&mut self, op: u32) -> Result<Res, XdrError> {
        Ok(match op {
            9 => Res::GetAttr(Fattr {
                mask: Bitmap(self.u32s()?),
                vals: self.opaque(usize::MAX)?.to_vec(),
            }),
            4 => {
                self.stateid()?;
                Res::Close
            }
            10 => Res::GetFh(self.opaque(FH_MAX)?.to_vec()),
            18 => {
                let stateid = self.stateid()?;
                self.take(20)?; // change_info4
                self.u32()?; // rflags
                self.u32s()?; // attrset
                match self.u32()? {
                    0 => {}
                    3 => {
                        // OPEN_DELEGATE_NONE_EXT: why, and for two reasons a flag.
                        if matches!(self.u32()?, 1 | 2) {
                            self.u32()?;
                        }
                    }
                    d => {
                        return Err(
                            self.bad(&format!("a delegation (type {d}) we asked not to get"))
                        );
                    }
                }
                Res::Open { stateid }
            }
            38 => Res::Write {
                count: self.u32()?,
                committed: self.u32()?,
                verifier: self.fixed::<8>()?,
            },
            15 | 22 | 24 | 44 | 57 | 58 => Res::Done,
            42 => {
                let client_id = self.u64()?;
                let sequence = self.u32()?;
                let flags = self.u32()?;
                if self.u32()? != 0 {
                    return Err(self.bad("state protection other than SP4_NONE"));
                }
                self.u64()?; // so_minor_id
                self.opaque(OPAQUE_LIMIT)?; // so_major_id
                self.opaque(OPAQUE_LIMIT)?; // server scope
                match self.u32()? {
                    0 => {}
                    1 => {
                        self.opaque(OPAQUE_LIMIT)?; // nii_domain
                        self.opaque(OPAQUE_LIMIT)?; // nii_name
                        self.take(12)?; // nii_date
                    }
                    _ => return Err(self.bad("more than one implementation id")),
                }
                Res::ExchangeId {
                    client_id,
                    sequence,
                    flags,
                }
            }
            43 => {
                let session = self.fixed::<16>()?;
                self.u32()?; // sequence
                self.u32()?; // flags
                let fore = self.channel_attrs()?;
                self.channel_attrs()?;
                Res::CreateSession { session, fore }
            }
            53 => {
                self.fixed::<16>()?;
                self.u32()?; // sequence id
                Res::Sequence {
                    slot: self.u32()?,
                    highest_slot: self.u32()?,
                    target_highest_slot: self.u32()?,
                    flags: self.u32()?,
                }
            }
            n => return Err(self.bad(&format!("a result for operation {n}, which we never send"))),
        })
    }

    fn stateid(&mut self) -> Result<StateId, XdrError> {
        Ok(StateId {
            seqid: self.u32()?,
            other: self.fixed::<12>()?,
        })
    }

    /// A whole `COMPOUND4res`.
    pub fn reply(&mut self) -> Result<Reply, XdrError> {
        let status = self.u32()?;
        self.opaque(OPAQUE_LIMIT)?; // tag
        let n = self.u32()? as usize;
        // Each result holds at least its op number and status.
        if n > (self.buf.len() - self.pos) / 8 {
            return Err(self.bad(&format!("{n} results")));
        }
        let mut results = Vec::with_capacity(n);
        for _ in 0..n {
            let op = self.u32()?;
            let st = self.u32()?;
            let res = if op == 34 {
                // SETATTR4res carries the attributes set whatever the status.
                Res::SetAttr(Bitmap(self.u32s()?))
            } else if st == status::OK {
                self.result(op)?
            } else {
                Res::Done
            };
            results.push((op, st, res));
            if st != status::OK {
                break;
            }
        }
        if self.pos != self.buf.len() {
            return Err(self.bad("bytes after the last result"));
        }
        Ok(Reply { status, results })
    }
}

impl Unpack for Reply {
    fn unpack(input: &mut impl Read) -> Result<(Self, usize), XdrError> {
        // The record is already in memory and bounded (see `nfs::wire`): read the rest
        // of it and decode with the bounded reader.
        let mut buf = Vec::new();
        input.read_to_end(&mut buf).map_err(XdrError::Io)?;
        let r = Dec::new(&buf).reply()?;
        Ok((r, buf.len()))
    }
}

impl Shape for Reply {
    fn walk(w: &mut Walk<'_>) -> Result<(), Bad> {
        let rest = w.rest();
        Dec::new(rest).reply().map_err(|e| w.bad(e.to_string()))?;
        w.skip(rest.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(v: &impl Pack) -> Vec<u8> {
        let mut out = Vec::new();
        v.pack(&mut out).unwrap();
        assert_eq!(out.len(), v.packed_size());
        out
    }

    #[test]
    fn compound_encodes_tag_minor_version_and_ops() {
        let c = Compound(vec![
            Op::PutRootFh,
            Op::Lookup(Opaque::owned(b"abc".to_vec())),
            Op::GetFh,
        ]);
        let b = packed(&c);
        let words: Vec<u32> = b
            .chunks(4)
            .map(|w| u32::from_be_bytes(w.try_into().unwrap()))
            .collect();
        // tag "", minor 1, 3 ops: PUTROOTFH, LOOKUP "abc" (padded), GETFH.
        assert_eq!(
            words,
            vec![0, 1, 3, 24, 15, 3, u32::from_be_bytes(*b"abc\0"), 10]
        );
    }

    #[test]
    fn bitmap_sets_words_by_attribute_number() {
        let b = Bitmap::of(&[attr::TYPE, attr::SIZE, attr::MODE, attr::TIME_MODIFY]);
        assert_eq!(b.0, vec![(1 << 1) | (1 << 4), (1 << 1) | (1 << 21)]);
        assert!(b.has(attr::MODE) && !b.has(attr::OWNER));
    }

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    #[test]
    fn reply_decodes_results_up_to_the_failing_one() {
        // status NOENT, tag "", 3 results: PUTROOTFH OK, GETFH OK (4-byte handle),
        // LOOKUP NOENT.
        let r = words(&[2, 0, 3, 24, 0, 10, 0, 4, 0xdead_beef, 15, 2]);
        let reply = Dec::new(&r).reply().unwrap();
        assert_eq!(reply.status, status::NOENT);
        assert_eq!(
            reply.results,
            vec![
                (24, 0, Res::Done),
                (10, 0, Res::GetFh(vec![0xde, 0xad, 0xbe, 0xef])),
                (15, 2, Res::Done)
            ]
        );
    }

    #[test]
    fn claimed_lengths_beyond_the_record_are_refused() {
        // A GETFH whose handle claims 4 GiB; a result count far past the bytes.
        for r in [
            words(&[0, 0, 1, 10, 0, u32::MAX]),
            words(&[0, 0, 1, 10, 0, 200, 1, 2]),
            words(&[0, 0, u32::MAX, 24, 0]),
            words(&[0, u32::MAX]),
        ] {
            assert!(Dec::new(&r).reply().is_err(), "{r:?}");
        }
    }
}

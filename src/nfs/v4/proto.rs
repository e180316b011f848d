//! NFSv4.1 on the wire (RFC 8881): the COMPOUND call and the operations nfsync sends.
//!
//! Arguments are declared and encoded by `nfs3_types`' XDR derive; replies are decoded
//! by [`super::reply`].

use std::io::{Read, Write};

use nfs3_types::xdr_codec::{Error as XdrError, Opaque, Pack, Unpack, XdrCodec};

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
    pub const BAD_STATEID: u32 = 10025;
    pub const STALE_STATEID: u32 = 10023;
    pub const OLD_STATEID: u32 = 10024;
    pub const ADMIN_REVOKED: u32 = 10047;
    pub const BADOWNER: u32 = 10039;
    pub const WRONGSEC: u32 = 10016;
    pub const RETRY_UNCACHED_REP: u32 = 10068;
    pub const REP_TOO_BIG_TO_CACHE: u32 = 10067;
    pub const TOO_MANY_OPS: u32 = 10070;
    pub const REQ_TOO_BIG: u32 = 10065;
    pub const NOFILEHANDLE: u32 = 10020;
    pub const FHEXPIRED: u32 = 10014;
    pub const MOVED: u32 = 10019;
    pub const XDEV: u32 = 18;
    pub const NXIO: u32 = 6;
    pub const BADTYPE: u32 = 10007;
    pub const BADNAME: u32 = 10041;
    pub const BAD_COOKIE: u32 = 10003;
    pub const NOT_SAME: u32 = 10027;
    pub const SYMLINK: u32 = 10029;
    pub const WRONG_TYPE: u32 = 10083;
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
    pub const CHANGE: u32 = 3;
    pub const SIZE: u32 = 4;
    pub const FILEID: u32 = 20;
    pub const MODE: u32 = 33;
    pub const NUMLINKS: u32 = 35;
    pub const OWNER: u32 = 36;
    pub const OWNER_GROUP: u32 = 37;
    pub const RAWDEV: u32 = 41;
    pub const FSID: u32 = 8;
    pub const LEASE_TIME: u32 = 10;
    pub const FILEHANDLE: u32 = 19;
    pub const MAXREAD: u32 = 30;
    pub const MAXWRITE: u32 = 31;
    pub const TIME_MODIFY: u32 = 53;
    pub const TIME_MODIFY_SET: u32 = 54;
}

/// `nfs_ftype4`.
pub mod ftype {
    pub const REG: u32 = 1;
    pub const DIR: u32 = 2;
    pub const BLK: u32 = 3;
    pub const CHR: u32 = 4;
    pub const LNK: u32 = 5;
    pub const SOCK: u32 = 6;
    pub const FIFO: u32 = 7;
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
    /// `size` (SETATTR: cut or extend the file).
    pub fn size(self, size: u64) -> Self {
        self.put(attr::SIZE, &size)
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
        let mut b = self;
        b.nums.push(attr::TIME_MODIFY_SET);
        b.vals.extend_from_slice(&1u32.to_be_bytes()); // SET_TO_CLIENT_TIME4
        b.vals.extend_from_slice(&sec.to_be_bytes());
        b.vals.extend_from_slice(&nsec.to_be_bytes());
        b
    }
    /// `time_modify_set` to the server's clock: an interrupted rewrite must not keep
    /// the source's mtime.
    pub fn mtime_now(self) -> Self {
        let mut b = self;
        b.nums.push(attr::TIME_MODIFY_SET);
        b.vals.extend_from_slice(&0u32.to_be_bytes()); // SET_TO_SERVER_TIME4
        b
    }
    /// True when no attribute was added.
    pub fn is_empty(&self) -> bool {
        self.nums.is_empty()
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

/// `specdata4`: a device's major and minor numbers.
#[derive(Debug, Clone, Copy, XdrCodec)]
pub struct SpecData {
    pub major: u32,
    pub minor: u32,
}

/// `createtype4`: what CREATE makes (regular files are made by OPEN).
#[derive(Debug, Clone, XdrCodec)]
pub enum CreateType {
    #[xdr(2)]
    Dir,
    #[xdr(3)]
    Block(SpecData),
    #[xdr(4)]
    Char(SpecData),
    /// A symlink and its target.
    #[xdr(5)]
    Link(Opaque<'static>),
    #[xdr(6)]
    Socket,
    #[xdr(7)]
    Fifo,
}

/// `CREATE4args`.
#[derive(Debug, Clone, XdrCodec)]
pub struct CreateArgs {
    pub objtype: CreateType,
    pub name: Opaque<'static>,
    pub attrs: Attrs,
}

/// `READDIR4args`.
#[derive(Debug, Clone, XdrCodec)]
pub struct ReadDirArgs {
    pub cookie: u64,
    pub verifier: Verifier,
    pub dircount: u32,
    pub maxcount: u32,
    pub attrs: Bitmap,
}

/// `READ4args`.
#[derive(Debug, Clone, Copy, XdrCodec)]
pub struct ReadArgs {
    pub stateid: StateId,
    pub offset: u64,
    pub count: u32,
}

/// `COMMIT4args`.
#[derive(Debug, Clone, Copy, XdrCodec)]
pub struct CommitArgs {
    pub offset: u64,
    pub count: u32,
}

/// `RENAME4args`: from the saved directory to the current one.
#[derive(Debug, Clone, XdrCodec)]
pub struct RenameArgs {
    pub from: Opaque<'static>,
    pub to: Opaque<'static>,
}

impl StateId {
    /// The anonymous stateid (all zeros): READ, WRITE and SETATTR without an open.
    pub const ANONYMOUS: StateId = StateId {
        seqid: 0,
        other: [0; 12],
    };
}

/// One operation of a COMPOUND (`nfs_argop4`), those nfsync sends.
#[derive(Debug, Clone, XdrCodec)]
pub enum Op {
    #[xdr(4)]
    Close(CloseArgs),
    #[xdr(5)]
    Commit(CommitArgs),
    #[xdr(6)]
    Create(CreateArgs),
    #[xdr(9)]
    GetAttr(Bitmap),
    #[xdr(10)]
    GetFh,
    /// A hard link named so in the current directory to the saved file.
    #[xdr(11)]
    Link(Opaque<'static>),
    #[xdr(15)]
    Lookup(Opaque<'static>),
    #[xdr(18)]
    Open(OpenArgs),
    #[xdr(22)]
    PutFh(Opaque<'static>),
    #[xdr(24)]
    PutRootFh,
    #[xdr(25)]
    Read(ReadArgs),
    #[xdr(26)]
    ReadDir(ReadDirArgs),
    #[xdr(27)]
    ReadLink,
    #[xdr(28)]
    Remove(Opaque<'static>),
    #[xdr(29)]
    Rename(RenameArgs),
    #[xdr(31)]
    RestoreFh,
    #[xdr(32)]
    SaveFh,
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

/// `COMPOUND4args`: an empty tag, minor version 1, the operations in order. `first`
/// (SEQUENCE) goes before `ops`, which are borrowed: a call re-sent after a lost
/// connection, and a small file's data in it, are encoded again, never copied.
#[derive(Debug, Clone)]
pub struct Compound<'a> {
    pub first: Option<Op>,
    pub ops: &'a [Op],
}

impl<'a> Compound<'a> {
    /// The operations alone (no SEQUENCE: session set-up and teardown).
    pub fn of(ops: &'a [Op]) -> Compound<'a> {
        Compound { first: None, ops }
    }

    fn all(&self) -> impl Iterator<Item = &Op> {
        self.first.iter().chain(self.ops)
    }
}

impl Pack for Compound<'_> {
    fn packed_size(&self) -> usize {
        4 + 4 + 4 + self.all().map(Pack::packed_size).sum::<usize>()
    }
    fn pack(&self, out: &mut impl Write) -> Result<usize, XdrError> {
        let mut n = Opaque::borrowed(b"").pack(out)?;
        n += MINOR.pack(out)?;
        n += (self.all().count() as u32).pack(out)?;
        for op in self.all() {
            n += op.pack(out)?;
        }
        Ok(n)
    }
}

impl Op {
    /// Whether running this operation twice could do something once would not: such
    /// compounds ask the server to cache their reply (SEQUENCE's `cachethis`), so a
    /// retry after a lost connection is answered from the cache.
    pub fn changes_state(&self) -> bool {
        matches!(
            self,
            Op::Close(_)
                | Op::Create(_)
                | Op::Link(_)
                | Op::Open(_)
                | Op::Remove(_)
                | Op::Rename(_)
        )
    }
}

/// A name as an XDR opaque.
pub fn name(n: &[u8]) -> Opaque<'static> {
    Opaque::owned(n.to_vec())
}

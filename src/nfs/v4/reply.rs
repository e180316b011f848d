//! NFSv4.1 replies, decoded by a reader that checks every declared length against the
//! bytes of the record already in memory ([`Dec`]): a COMPOUND reply is a counted array
//! of unions whose sizes the server claims, and nothing it claims may make us allocate
//! beyond what it actually sent.

use std::io::Read;

use nfs3_types::xdr_codec::{Error as XdrError, Unpack};

use super::proto::{
    Bitmap, ChannelAttrs, FH_MAX, OPAQUE_LIMIT, SessionId, StateId, Status, Verifier, status,
};
use crate::nfs::rpc::shape::{Bad, Shape, Walk};

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
    Commit(Verifier),
    Read {
        eof: bool,
        data: Vec<u8>,
    },
    ReadDir {
        verifier: Verifier,
        entries: Vec<DirEntry>,
        eof: bool,
    },
    ReadLink(Vec<u8>),
}

/// One READDIR entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub cookie: u64,
    pub name: Vec<u8>,
    pub attrs: Fattr,
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

    pub fn bad(&self, what: &str) -> XdrError {
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
            9 => Res::GetAttr(self.fattr()?),
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
            5 => Res::Commit(self.fixed::<8>()?),
            6 => {
                self.take(20)?; // change_info4
                self.u32s()?; // attrset
                Res::Done
            }
            11 | 28 => {
                self.take(20)?; // change_info4
                Res::Done
            }
            29 => {
                self.take(40)?; // two change_info4
                Res::Done
            }
            25 => Res::Read {
                eof: self.bool()?,
                data: self.opaque(usize::MAX)?.to_vec(),
            },
            26 => {
                let verifier = self.fixed::<8>()?;
                let mut entries = Vec::new();
                while self.bool()? {
                    entries.push(DirEntry {
                        cookie: self.u64()?,
                        name: self.opaque(usize::MAX)?.to_vec(),
                        attrs: self.fattr()?,
                    });
                }
                Res::ReadDir {
                    verifier,
                    entries,
                    eof: self.bool()?,
                }
            }
            27 => Res::ReadLink(self.opaque(usize::MAX)?.to_vec()),
            15 | 22 | 24 | 31 | 32 | 44 | 57 | 58 => Res::Done,
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

    fn fattr(&mut self) -> Result<Fattr, XdrError> {
        Ok(Fattr {
            mask: Bitmap(self.u32s()?),
            vals: self.opaque(usize::MAX)?.to_vec(),
        })
    }

    pub fn bool(&mut self) -> Result<bool, XdrError> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            n => Err(self.bad(&format!("boolean {n}"))),
        }
    }

    /// Whether every byte was read.
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
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
        // The record is already in memory and bounded (see `nfs::rpc::wire`): read the rest
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
    use crate::nfs::v4::proto::{Compound, Op, attr};
    use nfs3_types::xdr_codec::{Opaque, Pack};

    fn packed(v: &impl Pack) -> Vec<u8> {
        let mut out = Vec::new();
        v.pack(&mut out).unwrap();
        assert_eq!(out.len(), v.packed_size());
        out
    }

    #[test]
    fn compound_encodes_tag_minor_version_and_ops() {
        let ops = [
            Op::PutRootFh,
            Op::Lookup(Opaque::owned(b"abc".to_vec())),
            Op::GetFh,
        ];
        let c = Compound::of(&ops);
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

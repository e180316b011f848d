//! A minimal NFSv4.1 client of the tests' own (RFC 8881), to check the test servers
//! themselves without nfsync: one TCP connection, AUTH_SYS as root, one session of
//! which only slot 0 is used, and the few operations that show how a server was set up:
//! which minor versions it speaks, how many slots it grants, that the export is found
//! from the pseudo root at its real path, how it answers owners, and what times it
//! keeps. It is an oracle for the harness (tests/it/ganesha_nfs4.rs), not a client for
//! copying anything.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const NFS_PROGRAM: u32 = 100_003;
const NFS_V4: u32 = 4;
const PROC_COMPOUND: u32 = 1;

const OP_GETATTR: u32 = 9;
const OP_LOOKUP: u32 = 15;
const OP_PUTROOTFH: u32 = 24;
const OP_EXCHANGE_ID: u32 = 42;
const OP_CREATE_SESSION: u32 = 43;
const OP_SEQUENCE: u32 = 53;
const OP_RECLAIM_COMPLETE: u32 = 58;

const FATTR4_OWNER: u32 = 36;
const FATTR4_OWNER_GROUP: u32 = 37;
const FATTR4_TIME_MODIFY: u32 = 53;

/// EXCHGID4_FLAG_USE_NON_PNFS: plain NFSv4.1 service.
const EXCHGID4_FLAG_USE_NON_PNFS: u32 = 0x0001_0000;

/// NFS4ERR_MINOR_VERS_MISMATCH: the server does not speak the COMPOUND's minor version.
pub const NFS4ERR_MINOR_VERS_MISMATCH: u32 = 10021;
/// NFS4ERR_BADSESSION: the server does not know the session (e.g. after a restart).
pub const NFS4ERR_BADSESSION: u32 = 10052;

/// XDR encoding.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// Fixed-length opaque (a multiple of 4 bytes here).
    fn fixed(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }

    /// Variable-length opaque or string: length, bytes, padding to 4.
    fn opaque(&mut self, b: &[u8]) -> &mut Self {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self
    }
}

/// XDR decoding of one reply; every read is checked against its length.
struct Dec {
    b: Vec<u8>,
    at: usize,
}

impl Dec {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| format!("reply too short: {n} bytes at {}", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().unwrap()))
    }

    fn opaque(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u32()? as usize;
        let v = self.take(n)?.to_vec();
        self.take(n.next_multiple_of(4) - n)?;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.opaque()?).map_err(|_| "a string is not UTF-8".to_string())
    }

    /// The next operation result: its number must be `op`, its status NFS4_OK.
    fn result(&mut self, op: u32, name: &str) -> Result<(), String> {
        let got = self.u32()?;
        if got != op {
            return Err(format!("{name}: the reply has operation {got} instead"));
        }
        match self.u32()? {
            0 => Ok(()),
            status => Err(format!("{name}: NFS4 error {status}")),
        }
    }
}

/// One TCP connection to an NFSv4 server.
pub struct Probe {
    sock: TcpStream,
    xid: u32,
}

/// A COMPOUND's reply: its status, and the operation results to decode in order.
struct Reply {
    status: u32,
    results: Dec,
}

impl Probe {
    /// Connects to 127.0.0.1:`port`; every reply must come within 10 s.
    pub fn connect(port: u16) -> Result<Probe, String> {
        let sock = TcpStream::connect(("127.0.0.1", port))
            .map_err(|e| format!("connecting to 127.0.0.1:{port}: {e}"))?;
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        static XID: AtomicU32 = AtomicU32::new(1);
        Ok(Probe {
            sock,
            xid: XID.fetch_add(1 << 20, Ordering::SeqCst),
        })
    }

    /// Sends a COMPOUND of minor version `minor` with `n` operations encoded in `ops`.
    fn compound(&mut self, minor: u32, ops: &Enc, n: u32) -> Result<Reply, String> {
        self.xid = self.xid.wrapping_add(1);
        let mut call = Enc::default();
        call.u32(self.xid)
            .u32(0) // CALL
            .u32(2) // RPC version
            .u32(NFS_PROGRAM)
            .u32(NFS_V4)
            .u32(PROC_COMPOUND);
        // AUTH_SYS: stamp, machine name, uid 0, gid 0, no other groups.
        let mut cred = Enc::default();
        cred.u32(0).opaque(b"nfsync-test").u32(0).u32(0).u32(0);
        call.u32(1).opaque(&cred.0);
        call.u32(0).u32(0); // AUTH_NONE verifier
        call.opaque(b"").u32(minor).u32(n).fixed(&ops.0);
        let mut record = (0x8000_0000 | call.0.len() as u32).to_be_bytes().to_vec();
        record.extend_from_slice(&call.0);
        self.sock
            .write_all(&record)
            .map_err(|e| format!("sending: {e}"))?;

        let mut d = Dec {
            b: self.read_record()?,
            at: 0,
        };
        if d.u32()? != self.xid {
            return Err("a reply to another call".into());
        }
        if d.u32()? != 1 || d.u32()? != 0 {
            return Err("the call was denied (not an accepted reply)".into());
        }
        d.u32()?; // verifier flavor
        d.opaque()?;
        match d.u32()? {
            0 => {}
            2 => {
                let (lo, hi) = (d.u32()?, d.u32()?);
                return Err(format!("NFS versions {lo}..{hi} only, not 4"));
            }
            stat => return Err(format!("RPC accept status {stat}")),
        }
        let status = d.u32()?;
        d.opaque()?; // tag
        d.u32()?; // number of results
        Ok(Reply { status, results: d })
    }

    /// One RPC record (all its fragments).
    fn read_record(&mut self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            let mut h = [0u8; 4];
            self.sock
                .read_exact(&mut h)
                .map_err(|e| format!("reading a reply: {e}"))?;
            let h = u32::from_be_bytes(h);
            let len = (h & 0x7fff_ffff) as usize;
            if out.len() + len > 16 << 20 {
                return Err(format!("a reply of more than 16 MiB ({len} bytes)"));
            }
            let start = out.len();
            out.resize(start + len, 0);
            self.sock
                .read_exact(&mut out[start..])
                .map_err(|e| format!("reading a reply: {e}"))?;
            if h & 0x8000_0000 != 0 {
                return Ok(out);
            }
        }
    }

    /// The status of an empty COMPOUND of minor version `minor`: NFS4_OK (0) where the
    /// server speaks it, [`NFS4ERR_MINOR_VERS_MISMATCH`] where it does not.
    pub fn minor_version_status(&mut self, minor: u32) -> Result<u32, String> {
        Ok(self.compound(minor, &Enc::default(), 0)?.status)
    }
}

/// An NFSv4.1 session of the probe, ready for OPEN (RECLAIM_COMPLETE sent).
pub struct Session {
    probe: Probe,
    id: [u8; 16],
    /// The next sequence id of slot 0.
    seq: u32,
    /// How many slots the server granted (the fore channel's `ca_maxrequests`).
    pub slots: u32,
}

/// What [`Session::attrs`] reads of a file.
#[derive(Debug, PartialEq, Eq)]
pub struct Attrs {
    /// `owner` as the server sends it: `"0"` when it answers owners as numbers,
    /// `"root@localdomain"` when it maps them to names.
    pub owner: String,
    pub owner_group: String,
    /// `time_modify`: signed 64-bit seconds and nanoseconds.
    pub mtime: (i64, u32),
}

impl Session {
    /// EXCHANGE_ID, CREATE_SESSION asking for `slots` slots, and RECLAIM_COMPLETE (a
    /// client must send it before its first OPEN; a graceless server takes it at once).
    pub fn open(port: u16, slots: u32) -> Result<Session, String> {
        let mut probe = Probe::connect(port)?;

        // EXCHANGE_ID: an owner of our own, so that parallel tests are distinct clients.
        static N: AtomicU32 = AtomicU32::new(0);
        let owner = format!(
            "nfsync-test-probe {} {}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let mut ops = Enc::default();
        ops.u32(OP_EXCHANGE_ID)
            .u64(nanos) // verifier
            .opaque(owner.as_bytes())
            .u32(EXCHGID4_FLAG_USE_NON_PNFS)
            .u32(0) // SP4_NONE
            .u32(0); // no implementation id
        let mut r = probe.compound(1, &ops, 1)?;
        r.results.result(OP_EXCHANGE_ID, "EXCHANGE_ID")?;
        let client_id = r.results.u64()?;
        let sequence = r.results.u32()?;

        // CREATE_SESSION: the fore channel asks for `slots` slots; a small back channel.
        let mut ops = Enc::default();
        ops.u32(OP_CREATE_SESSION)
            .u64(client_id)
            .u32(sequence)
            .u32(0); // flags
        // header pad, max request, max response, max response cached, max ops, max
        // requests, no RDMA.
        for v in [0, 1 << 20, 1 << 20, 64 << 10, 16, slots, 0] {
            ops.u32(v);
        }
        for v in [0, 4096, 4096, 0, 2, 1, 0] {
            ops.u32(v);
        }
        ops.u32(0x4000_0000) // callback program (no back channel is bound anyway)
            .u32(1)
            .u32(0); // one callback security flavor: AUTH_NONE
        let mut r = probe.compound(1, &ops, 1)?;
        r.results.result(OP_CREATE_SESSION, "CREATE_SESSION")?;
        let id: [u8; 16] = r.results.take(16)?.try_into().unwrap();
        r.results.u32()?; // sequence
        r.results.u32()?; // flags
        for _ in 0..5 {
            r.results.u32()?;
        }
        let granted = r.results.u32()?;
        let mut s = Session {
            probe,
            id,
            seq: 1,
            slots: granted,
        };

        let mut ops = s.sequence();
        ops.u32(OP_RECLAIM_COMPLETE).u32(0); // not for one file system: for all
        let mut r = s.probe.compound(1, &ops, 2)?;
        s.sequence_result(&mut r)?;
        r.results.result(OP_RECLAIM_COMPLETE, "RECLAIM_COMPLETE")?;
        Ok(s)
    }

    /// A SEQUENCE on slot 0 with its next sequence id, to put first in a COMPOUND.
    fn sequence(&mut self) -> Enc {
        let mut e = Enc::default();
        e.u32(OP_SEQUENCE)
            .fixed(&self.id)
            .u32(self.seq)
            .u32(0) // slot
            .u32(0) // highest slot in use
            .u32(0); // do not cache the reply
        self.seq += 1;
        e
    }

    fn sequence_result(&self, r: &mut Reply) -> Result<(), String> {
        r.results.result(OP_SEQUENCE, "SEQUENCE")?;
        r.results.take(16 + 5 * 4)?;
        Ok(())
    }

    /// Owner, group and mtime of `path` (absolute: looked up from the pseudo root one
    /// component after another, as an NFSv4 client finds an export).
    pub fn attrs(&mut self, path: &Path) -> Result<Attrs, String> {
        let mut ops = self.sequence();
        ops.u32(OP_PUTROOTFH);
        let mut n = 2;
        let mut names = Vec::new();
        for c in path.components() {
            match c {
                Component::RootDir => {}
                Component::Normal(name) => {
                    let name = name.to_str().ok_or("a path that is not UTF-8")?;
                    ops.u32(OP_LOOKUP).opaque(name.as_bytes());
                    names.push(name.to_string());
                    n += 1;
                }
                _ => return Err(format!("{}: not a plain absolute path", path.display())),
            }
        }
        // Attributes 36, 37 (word 1, bits 4 and 5) and 53 (word 1, bit 21).
        let word1 = [FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_TIME_MODIFY]
            .iter()
            .fold(0u32, |w, a| w | 1 << (a - 32));
        ops.u32(OP_GETATTR).u32(2).u32(0).u32(word1);
        n += 1;

        let mut r = self.probe.compound(1, &ops, n)?;
        self.sequence_result(&mut r)?;
        r.results.result(OP_PUTROOTFH, "PUTROOTFH")?;
        for name in &names {
            r.results.result(OP_LOOKUP, &format!("LOOKUP {name}"))?;
        }
        r.results.result(OP_GETATTR, "GETATTR")?;
        let words = r.results.u32()?;
        let mut mask = Vec::new();
        for _ in 0..words {
            mask.push(r.results.u32()?);
        }
        while mask.last() == Some(&0) {
            mask.pop();
        }
        if mask != [0, word1] {
            return Err(format!("GETATTR answered attributes {mask:x?}"));
        }
        let mut vals = Dec {
            b: r.results.opaque()?,
            at: 0,
        };
        Ok(Attrs {
            owner: vals.string()?,
            owner_group: vals.string()?,
            mtime: (vals.u64()? as i64, vals.u32()?),
        })
    }

    /// Goes on over a new connection to 127.0.0.1:`port` (the next SEQUENCE binds it to
    /// the session), as a client does after losing its connection.
    pub fn reconnect(&mut self, port: u16) -> Result<(), String> {
        self.probe = Probe::connect(port)?;
        Ok(())
    }

    /// The status of a SEQUENCE alone: NFS4_OK while the server knows the session,
    /// [`NFS4ERR_BADSESSION`] once it has forgotten it.
    pub fn sequence_status(&mut self) -> Result<u32, String> {
        let ops = self.sequence();
        Ok(self.probe.compound(1, &ops, 1)?.status)
    }
}

//! Hostile and broken servers: no reply, however mangled, may make
//! nfsync allocate by a length the server merely claims, panic, or die by a signal.
//!
//! The decoder tests feed every reply type nfsync decodes — MOUNT, portmapper and each
//! NFS procedure — to `decode_reply`: valid replies built by `nfs3_types` must decode
//! to exactly what was sent, and mutated or random ones must fail cleanly without any
//! single allocation beyond the record (a counting allocator watches the decoding
//! thread). The end-to-end tests ([`end_to_end`]) run the binary under an address-space
//! limit against servers whose replies claim 4 GiB: an allocation by the claimed length
//! would abort.
//!
//! The counting allocator is the whole test binary's, but notes only what a thread that
//! asked to be watched allocates: the other tests run as with the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::SocketAddr;

use nfs3_client::nfs3_types::mount::dirpath;
use nfs3_client::nfs3_types::mount::{
    export_node, exports, fhandle3, mountres3, mountres3_ok, mountstat3, name,
};
use nfs3_client::nfs3_types::nfs3::{self as v3, Nfs3Option, Nfs3Result, nfsstat3};
use nfs3_client::nfs3_types::rpc::{
    accept_stat_data, accepted_reply, auth_flavor, msg_body, opaque_auth, reply_body, rpc_msg,
};
use nfs3_client::nfs3_types::xdr_codec::{List, Opaque, Pack, Unpack, Void};
use nfsync::nfs::rpc::decode_reply;
use nfsync::nfs::rpc::shape::Shape;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

mod end_to_end;

// ------------------------------------------------------------------ allocation watch

/// The system allocator, noting the largest single request made by a thread that
/// asked to be watched (other tests' threads are left alone).
struct Watching;

thread_local! {
    static WATCHED: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    if WATCHED.try_with(Cell::get).unwrap_or(false) {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    }
}

// SAFETY: every call is passed on unchanged to `System`; noting a size allocates nothing.
unsafe impl GlobalAlloc for Watching {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller upholds `alloc`'s contract, which we forward.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Watching = Watching;

/// Runs `f`, returning its result and the largest single allocation it asked for.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    WATCHED.with(|w| w.set(true));
    let out = f();
    WATCHED.with(|w| w.set(false));
    (out, LARGEST.with(Cell::get))
}

// ------------------------------------------------------------------ random replies

/// splitmix64: the values inside a reply come from one proptest-chosen seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn u32(&mut self) -> u32 {
        self.next() as u32
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
    fn opaque(&mut self, max: usize) -> Opaque<'static> {
        Opaque::owned(self.bytes(max))
    }
    fn time(&mut self) -> v3::nfstime3 {
        v3::nfstime3 {
            seconds: self.u32(),
            nseconds: self.u32(),
        }
    }
    fn fattr(&mut self) -> v3::fattr3 {
        use v3::ftype3::*;
        let kinds = [NF3REG, NF3DIR, NF3BLK, NF3CHR, NF3LNK, NF3SOCK, NF3FIFO];
        v3::fattr3 {
            type_: kinds[self.below(kinds.len())],
            mode: self.u32(),
            nlink: self.u32(),
            uid: self.u32(),
            gid: self.u32(),
            size: self.next(),
            used: self.next(),
            rdev: v3::specdata3 {
                specdata1: self.u32(),
                specdata2: self.u32(),
            },
            fsid: self.next(),
            fileid: self.next(),
            atime: self.time(),
            mtime: self.time(),
            ctime: self.time(),
        }
    }
    fn post_op_attr(&mut self) -> v3::post_op_attr {
        if self.coin() {
            Nfs3Option::Some(self.fattr())
        } else {
            Nfs3Option::None
        }
    }
    fn wcc(&mut self) -> v3::wcc_data {
        let before = if self.coin() {
            Nfs3Option::Some(v3::wcc_attr {
                size: self.next(),
                mtime: self.time(),
                ctime: self.time(),
            })
        } else {
            Nfs3Option::None
        };
        v3::wcc_data {
            before,
            after: self.post_op_attr(),
        }
    }
    fn fh(&mut self) -> v3::nfs_fh3 {
        v3::nfs_fh3 {
            data: self.opaque(64),
        }
    }
    fn post_op_fh(&mut self) -> v3::post_op_fh3 {
        if self.coin() {
            Nfs3Option::Some(self.fh())
        } else {
            Nfs3Option::None
        }
    }
    fn verf(&mut self) -> [u8; 8] {
        self.next().to_be_bytes()
    }
    /// An NFS result: OK with `ok`'s value, or an error status with `fail`'s.
    fn res<T, E>(&mut self, ok: fn(&mut Rng) -> T, fail: fn(&mut Rng) -> E) -> Nfs3Result<T, E> {
        use nfsstat3::*;
        let errs = [
            NFS3ERR_NOENT,
            NFS3ERR_ACCES,
            NFS3ERR_EXIST,
            NFS3ERR_NOSPC,
            NFS3ERR_STALE,
        ];
        if self.coin() {
            Nfs3Result::Ok(ok(self))
        } else {
            Nfs3Result::Err((errs[self.below(errs.len())], fail(self)))
        }
    }
}

/// A reply record: a valid SUCCESS header (with a random verifier) and `body`.
fn reply(r: &mut Rng, body: &impl Pack) -> (Vec<u8>, Vec<u8>) {
    let msg = rpc_msg {
        xid: XID,
        body: msg_body::REPLY(reply_body::MSG_ACCEPTED(accepted_reply {
            verf: opaque_auth {
                flavor: auth_flavor::AUTH_NULL,
                body: r.opaque(16),
            },
            reply_data: accept_stat_data::SUCCESS,
        })),
    };
    let mut rec = Vec::new();
    msg.pack(&mut rec).unwrap();
    let mut packed = Vec::new();
    body.pack(&mut packed).unwrap();
    rec.extend_from_slice(&packed);
    (rec, packed)
}

const XID: u32 = 0x1234_5678;

fn addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 2049))
}

/// What a decode gave (packed again, or the error) and its largest allocation.
type Decoded = (Result<Vec<u8>, String>, usize);

/// Decodes `rec` as `R` (watched) and packs the result again (not watched).
fn decode<R: Unpack + Pack + Shape>(rec: &[u8]) -> Decoded {
    let (res, largest) = largest_allocation(|| decode_reply::<R>(addr(), XID, rec));
    let repacked = res
        .map(|v| {
            let mut out = Vec::new();
            v.pack(&mut out).unwrap();
            out
        })
        .map_err(|e| e.to_string());
    (repacked, largest)
}

/// One reply type nfsync decodes: how to make a random valid one, how to decode it.
struct Kind {
    name: &'static str,
    make: fn(&mut Rng) -> (Vec<u8>, Vec<u8>),
    decode: fn(&[u8]) -> Decoded,
    /// Lists grow by the elements actually present, and an element takes more room in
    /// memory than its minimal 4 to 32 bytes on the wire (then doubled by `Vec`).
    list_growth: usize,
}

macro_rules! kinds {
    ($($name:literal: $ty:ty = $gen:expr, $growth:expr;)*) => {
        vec![$(Kind {
            name: $name,
            make: |r| {
                let body: $ty = ($gen)(r);
                reply(r, &body)
            },
            decode: decode::<$ty>,
            list_growth: $growth,
        }),*]
    };
}

fn kinds() -> Vec<Kind> {
    use v3::*;
    kinds! {
        "NULL": Void = |_: &mut Rng| Void, 1;
        "PMAP GETPORT": u32 = |r: &mut Rng| r.u32(), 1;
        "MOUNT MNT": mountres3<'static> = |r: &mut Rng| if r.coin() {
            mountres3::Ok(mountres3_ok {
                fhandle: fhandle3(r.opaque(64)),
                auth_flavors: (0..r.below(5)).map(|_| r.u32()).collect(),
            })
        } else {
            mountres3::Err(mountstat3::MNT3ERR_ACCES)
        }, 1;
        "MOUNT EXPORT": exports<'static, 'static> = |r: &mut Rng| List((0..r.below(5))
            .map(|_| export_node {
                ex_dir: dirpath(r.opaque(40)),
                ex_groups: List((0..r.below(3)).map(|_| name(r.opaque(20))).collect()),
            })
            .collect()), 16;
        "GETATTR": Nfs3Result<GETATTR3resok, Void> = |r: &mut Rng| r.res(
            |r| GETATTR3resok { obj_attributes: r.fattr() }, |_| Void), 1;
        "LOOKUP": Nfs3Result<LOOKUP3resok, LOOKUP3resfail> = |r: &mut Rng| r.res(
            |r| LOOKUP3resok { object: r.fh(), obj_attributes: r.post_op_attr(),
                dir_attributes: r.post_op_attr() },
            |r| LOOKUP3resfail { dir_attributes: r.post_op_attr() }), 1;
        "SETATTR": Nfs3Result<SETATTR3resok, SETATTR3resfail> = |r: &mut Rng| r.res(
            |r| SETATTR3resok { obj_wcc: r.wcc() }, |r| SETATTR3resfail { obj_wcc: r.wcc() }), 1;
        "FSINFO": Nfs3Result<FSINFO3resok, FSINFO3resfail> = |r: &mut Rng| r.res(
            |r| FSINFO3resok { obj_attributes: r.post_op_attr(), rtmax: r.u32(),
                rtpref: r.u32(), rtmult: r.u32(), wtmax: r.u32(), wtpref: r.u32(),
                wtmult: r.u32(), dtpref: r.u32(), maxfilesize: r.next(),
                time_delta: r.time(), properties: r.u32() },
            |r| FSINFO3resfail { obj_attributes: r.post_op_attr() }), 1;
        "CREATE": Nfs3Result<CREATE3resok, CREATE3resfail> = |r: &mut Rng| r.res(
            |r| CREATE3resok { obj: r.post_op_fh(), obj_attributes: r.post_op_attr(),
                dir_wcc: r.wcc() },
            |r| CREATE3resfail { dir_wcc: r.wcc() }), 1;
        "MKDIR": Nfs3Result<MKDIR3resok, MKDIR3resfail> = |r: &mut Rng| r.res(
            |r| MKDIR3resok { obj: r.post_op_fh(), obj_attributes: r.post_op_attr(),
                dir_wcc: r.wcc() },
            |r| MKDIR3resfail { dir_wcc: r.wcc() }), 1;
        "SYMLINK": Nfs3Result<SYMLINK3resok, SYMLINK3resfail> = |r: &mut Rng| r.res(
            |r| SYMLINK3resok { obj: r.post_op_fh(), obj_attributes: r.post_op_attr(),
                dir_wcc: r.wcc() },
            |r| SYMLINK3resfail { dir_wcc: r.wcc() }), 1;
        "MKNOD": Nfs3Result<MKNOD3resok, MKNOD3resfail> = |r: &mut Rng| r.res(
            |r| MKNOD3resok { obj: r.post_op_fh(), obj_attributes: r.post_op_attr(),
                dir_wcc: r.wcc() },
            |r| MKNOD3resfail { dir_wcc: r.wcc() }), 1;
        "READDIRPLUS": Nfs3Result<READDIRPLUS3resok<'static>, READDIRPLUS3resfail> =
            |r: &mut Rng| r.res(
            |r| READDIRPLUS3resok { dir_attributes: r.post_op_attr(),
                cookieverf: cookieverf3(r.verf()),
                reply: dirlistplus3 {
                    entries: List((0..r.below(6)).map(|_| entryplus3 {
                        fileid: r.next(), name: filename3(r.opaque(24)), cookie: r.next(),
                        name_attributes: r.post_op_attr(), name_handle: r.post_op_fh(),
                    }).collect()),
                    eof: r.coin(),
                } },
            |r| READDIRPLUS3resfail { dir_attributes: r.post_op_attr() }), 16;
        "READLINK": Nfs3Result<READLINK3resok<'static>, READLINK3resfail> = |r: &mut Rng| r.res(
            |r| READLINK3resok { symlink_attributes: r.post_op_attr(),
                data: nfspath3(r.opaque(64)) },
            |r| READLINK3resfail { symlink_attributes: r.post_op_attr() }), 1;
        "LINK": Nfs3Result<LINK3resok, LINK3resfail> = |r: &mut Rng| r.res(
            |r| LINK3resok { file_attributes: r.post_op_attr(), linkdir_wcc: r.wcc() },
            |r| LINK3resfail { file_attributes: r.post_op_attr(), linkdir_wcc: r.wcc() }), 1;
        "RENAME": Nfs3Result<RENAME3resok, RENAME3resfail> = |r: &mut Rng| r.res(
            |r| RENAME3resok { fromdir_wcc: r.wcc(), todir_wcc: r.wcc() },
            |r| RENAME3resfail { fromdir_wcc: r.wcc(), todir_wcc: r.wcc() }), 1;
        "RMDIR": Nfs3Result<RMDIR3resok, RMDIR3resfail> = |r: &mut Rng| r.res(
            |r| RMDIR3resok { dir_wcc: r.wcc() }, |r| RMDIR3resfail { dir_wcc: r.wcc() }), 1;
        "REMOVE": Nfs3Result<REMOVE3resok, REMOVE3resfail> = |r: &mut Rng| r.res(
            |r| REMOVE3resok { dir_wcc: r.wcc() }, |r| REMOVE3resfail { dir_wcc: r.wcc() }), 1;
        "WRITE": Nfs3Result<WRITE3resok, WRITE3resfail> = |r: &mut Rng| r.res(
            |r| WRITE3resok { file_wcc: r.wcc(), count: r.u32(),
                committed: stable_how::FILE_SYNC, verf: writeverf3(r.verf()) },
            |r| WRITE3resfail { file_wcc: r.wcc() }), 1;
        "COMMIT": Nfs3Result<COMMIT3resok, COMMIT3resfail> = |r: &mut Rng| r.res(
            |r| COMMIT3resok { file_wcc: r.wcc(), verf: writeverf3(r.verf()) },
            |r| COMMIT3resfail { file_wcc: r.wcc() }), 1;
        "READ": Nfs3Result<READ3resok<'static>, READ3resfail> = |r: &mut Rng| r.res(
            |r| READ3resok { file_attributes: r.post_op_attr(), count: r.u32(),
                eof: r.coin(), data: r.opaque(300) },
            |r| READ3resfail { file_attributes: r.post_op_attr() }), 1;
    }
}

/// The most one decode may allocate at once: the record (an opaque copied out of it),
/// times the list growth for list types, plus a little for the error message.
fn allowed(kind: &Kind, record: usize) -> usize {
    record * kind.list_growth + 1024
}

/// Lengths a hostile server would claim.
const HOSTILE: [u32; 6] = [0xffff_ffff, 0xffff_fff0, 0x7fff_ffff, 0x4000_0000, 65, 5];

/// Applies one mutation: `op` picks what, `at` where, `val` with what.
fn mutate(rec: &mut Vec<u8>, op: u8, at: usize, val: u32) {
    if rec.is_empty() {
        return;
    }
    let at = at % rec.len();
    let word = at & !3;
    let v = if val.is_multiple_of(2) {
        HOSTILE[(val as usize / 2) % HOSTILE.len()]
    } else {
        val
    };
    match op % 4 {
        0 if word + 4 <= rec.len() => rec[word..word + 4].copy_from_slice(&v.to_be_bytes()),
        1 => rec[at] = v as u8,
        2 => rec.truncate(at),
        _ => rec.splice(word..word, v.to_be_bytes()).for_each(drop),
    }
}

proptest! {
    // Failures found are kept next to this file, in hostile.proptest-regressions.
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    /// Valid replies of every type pass the length checks and decode to what was sent.
    #[test]
    fn valid_replies_decode_to_what_was_sent(seed in any::<u64>()) {
        let mut r = Rng(seed);
        for kind in kinds() {
            let (rec, body) = (kind.make)(&mut r);
            let (res, largest) = (kind.decode)(&rec);
            prop_assert_eq!(res.as_ref(), Ok(&body), "{}", kind.name);
            prop_assert!(largest <= allowed(&kind, rec.len()), "{}: {} bytes", kind.name, largest);
        }
    }

    /// Mutated replies fail or decode, but never allocate by a claimed length.
    #[test]
    fn mutated_replies_never_allocate_past_the_record(
        seed in any::<u64>(),
        ops in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<u32>()), 1..5),
    ) {
        let mut r = Rng(seed);
        for kind in kinds() {
            let (mut rec, _) = (kind.make)(&mut r);
            for &(op, at, val) in &ops {
                mutate(&mut rec, op, at, val);
            }
            let (_, largest) = (kind.decode)(&rec);
            prop_assert!(
                largest <= allowed(&kind, rec.len()),
                "{}: {} bytes allocated for a {}-byte record {:02x?}",
                kind.name, largest, rec.len(), rec
            );
        }
    }

    /// Random bytes after a valid header (or none) are refused without big allocations.
    #[test]
    fn random_bytes_are_refused_cheaply(
        header in any::<bool>(),
        words in proptest::collection::vec(
            prop_oneof![Just(0u32), Just(1u32), Just(0xffff_fff0u32), any::<u32>()], 0..48),
    ) {
        let mut rec = Vec::new();
        if header {
            for w in [XID, 1, 0, 0, 0, 0] {
                rec.extend_from_slice(&w.to_be_bytes());
            }
        }
        for w in &words {
            rec.extend_from_slice(&w.to_be_bytes());
        }
        for kind in kinds() {
            let (_, largest) = (kind.decode)(&rec);
            prop_assert!(largest <= allowed(&kind, rec.len()), "{}: {} bytes", kind.name, largest);
        }
    }
}

/// The reply: MNT OK with a root handle and 0xfffffff0 auth flavors, which made
/// nfs3_types ask for 17179869120 bytes.
#[test]
fn mount_reply_claiming_a_4gib_flavor_list_is_refused() {
    let words = [XID, 1, 0, 0, 0, 0, 0, 4, 0xabcd, 0xffff_fff0, 1];
    let rec: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
    let (res, largest) = decode::<mountres3>(&rec);
    let err = res.unwrap_err();
    assert!(err.contains("4294967280 entries"), "{err}");
    assert!(err.contains("127.0.0.1:2049"), "{err}");
    assert!(largest < 1024, "{largest} bytes");
}

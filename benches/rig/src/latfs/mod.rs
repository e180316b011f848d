//! Latency mount: a FUSE passthrough of a backing directory that adds a
//! fixed delay to every request, to emulate an NFS/EFS server on one box.
//!
//! The `Filesystem` methods below only copy their arguments and submit a job
//! to the [`delay::DelayPool`]; the actual work is in [`ops`]. Kernel-side
//! caching is controlled by the attr/entry TTLs (like NFS `actimeo`).

mod delay;
mod inodes;
mod ops;
mod sys;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    BsdFileFlags, Config, FileHandle, Filesystem, INodeNo, InitFlags, KernelConfig, LockOwner,
    MountOption, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use delay::{DelayPool, Op, Stats};
use ops::{Caller, Inner, SetAttr};

/// Settings of one latency mount.
pub struct MountOpts {
    pub backing: PathBuf,
    pub mountpoint: PathBuf,
    pub delay: Duration,
    /// CPU time each request costs the daemon (besides its delay).
    pub cpu: Duration,
    pub threads: usize,
    pub attr_ttl: Duration,
    pub entry_ttl: Duration,
    /// Let the kernel run lookups/readdirs of one directory in parallel
    /// (FUSE_PARALLEL_DIROPS), as the kernel NFS client does.
    pub parallel_dirops: bool,
    /// Also write the unmount report here (for scripts).
    pub stats_file: Option<PathBuf>,
}

struct LatFs {
    inner: Arc<Inner>,
    pool: DelayPool,
    parallel_dirops: bool,
}

fn caller(req: &Request) -> Caller {
    Caller {
        uid: req.uid(),
        gid: req.gid(),
    }
}

impl LatFs {
    /// Run `f` on the inner filesystem after the delay.
    fn go(&self, op: Op, f: impl FnOnce(&Inner) + Send + 'static) {
        let inner = Arc::clone(&self.inner);
        self.pool.submit(op, move || f(&inner));
    }
}

impl Filesystem for LatFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Default max_background (12) would cap readahead/async requests far
        // below what an NFS client keeps in flight.
        let _ = config.set_max_background(1024);
        let _ = config.set_congestion_threshold(768);
        if self.parallel_dirops {
            let _ = config.add_capabilities(InitFlags::FUSE_PARALLEL_DIROPS);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let name = name.to_owned();
        self.go(Op::Lookup, move |fs| fs.lookup(parent.0, &name, reply));
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inner.inodes.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.go(Op::Getattr, move |fs| fs.getattr(ino.0, reply));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let s = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            fh,
        };
        self.go(Op::Setattr, move |fs| fs.setattr(ino.0, s, reply));
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        self.go(Op::Readlink, move |fs| fs.readlink(ino.0, reply));
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let (who, name) = (caller(req), name.to_owned());
        let mode = (mode & libc::S_IFMT) | (mode & 0o7777 & !umask);
        self.go(Op::Mknod, move |fs| {
            fs.mknod(who, parent.0, &name, mode, rdev, reply)
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let (who, name) = (caller(req), name.to_owned());
        self.go(Op::Mkdir, move |fs| {
            fs.mkdir(who, parent.0, &name, mode & !umask, reply)
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = name.to_owned();
        self.go(Op::Unlink, move |fs| {
            fs.unlink(parent.0, &name, false, reply)
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = name.to_owned();
        self.go(Op::Rmdir, move |fs| fs.unlink(parent.0, &name, true, reply));
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let (who, name, target) = (caller(req), link_name.to_owned(), target.to_owned());
        self.go(Op::Symlink, move |fs| {
            fs.symlink(who, parent.0, &name, &target, reply)
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (name, newname) = (name.to_owned(), newname.to_owned());
        self.go(Op::Rename, move |fs| {
            fs.rename(parent.0, &name, newparent.0, &newname, flags.bits(), reply)
        });
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let newname = newname.to_owned();
        self.go(Op::Link, move |fs| {
            fs.link(ino.0, newparent.0, &newname, reply)
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.go(Op::Open, move |fs| fs.open(ino.0, flags.0, reply));
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.go(Op::Read, move |fs| fs.read(fh.0, offset, size, reply));
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let data = data.to_vec();
        self.go(Op::Write, move |fs| fs.write(fh.0, offset, &data, reply));
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Writes are synchronous already; flush only costs its round trip
        // (like the COMMIT an NFS client sends at close).
        self.go(Op::Flush, move |_| reply.ok());
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.go(Op::Release, move |fs| fs.release(fh.0, reply));
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.go(Op::Fsync, move |fs| fs.fsync(fh.0, datasync, reply));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.go(Op::Opendir, move |fs| fs.opendir(ino.0, reply));
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        self.go(Op::Readdir, move |fs| fs.readdir(fh.0, offset, reply));
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.go(Op::Releasedir, move |fs| fs.releasedir(fh.0, reply));
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _d: bool,
        reply: ReplyEmpty,
    ) {
        self.go(Op::Fsync, move |_| reply.ok());
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.go(Op::Statfs, move |fs| fs.statfs(reply));
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let (who, name) = (caller(req), name.to_owned());
        self.go(Op::Create, move |fs| {
            fs.create(who, parent.0, &name, mode & !umask, flags, reply)
        });
    }

    // Extended attributes are not supported: the default ENOSYS makes the
    // kernel stop asking (and answer EOPNOTSUPP locally), so tools that
    // probe xattrs (cp -a) cost no round trips after the first.
}

/// Mount and serve until unmounted (`fusermount3 -u`) or SIGINT/SIGTERM,
/// then print the per-operation counts.
pub fn run(o: MountOpts) -> std::io::Result<()> {
    // Block the signals in every thread we create; one thread sigwaits.
    // SAFETY: plain signal-mask manipulation before any thread exists.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::umask(0);
        set
    };
    let backing = std::fs::canonicalize(&o.backing)?;
    let root_ino = ops::backing_root_ino(&backing)?;
    let stats = Arc::new(Stats::default());
    let inner = Arc::new(Inner::new(
        inodes::Inodes::new(backing.clone(), root_ino),
        o.attr_ttl,
        o.entry_ttl,
        Arc::clone(&stats),
    ));
    let fs = LatFs {
        inner,
        pool: DelayPool::new(o.delay, o.cpu, o.threads, Arc::clone(&stats)),
        parallel_dirops: o.parallel_dirops,
    };
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(format!("latfs:{}", backing.display())),
        MountOption::Subtype("latfs".into()),
        MountOption::DefaultPermissions,
        MountOption::Suid,
        MountOption::Dev,
    ];
    config.acl = fuser::SessionACL::All; // allow_other
    config.n_threads = Some(2);
    config.clone_fd = true;
    let started = Instant::now();
    let mut session = fuser::Session::new(fs, &o.mountpoint, &config)?;
    let mut unmounter = session.unmount_callable();
    std::thread::spawn(move || {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` holds SIGINT/SIGTERM, blocked in all threads.
        unsafe { libc::sigwait(&set, &mut sig) };
        let _ = unmounter.unmount();
    });
    eprintln!(
        "latfs: {} -> {} delay {:.3} ms, cpu {} us, {} workers, attr/entry ttl {:?}/{:?}",
        backing.display(),
        o.mountpoint.display(),
        o.delay.as_secs_f64() * 1e3,
        o.cpu.as_micros(),
        o.threads,
        o.attr_ttl,
        o.entry_ttl
    );
    let res = session.run();
    let report = stats.report(o.delay, started.elapsed());
    eprint!("{report}");
    if let Some(f) = &o.stats_file {
        std::fs::write(f, &report)?;
    }
    res
}

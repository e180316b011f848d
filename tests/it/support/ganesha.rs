//! A private nfs-ganesha server for tests: a Drop guard around `benches/ganesha.sh`.
//!
//! `Ganesha::start` runs `ganesha.sh start EXPORT STATE [OPTIONS]`, which picks free
//! loopback ports, starts rpcbind if needed and waits until every protocol the server
//! serves answers (NFSv3 and MOUNT, NFSv4.1 too, or NFSv4.1 alone: [`Options`]);
//! dropping the guard runs `ganesha.sh stop STATE`, also when the test panics. `kill`
//! and `restart` simulate a server crash and reboot on the same ports (the config stays
//! in STATE).
//!
//! A test gets a server of its own ([`own`]) when it crashes, cuts or reconfigures it;
//! otherwise it shares one per NFS version with the other tests of the process
//! ([`shared`]), each in a directory of its own in the export. Either way it reaches the
//! export through an [`Export`], which makes the URL for the version it speaks.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::Scratch;

/// Which NFS versions a server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nfs4 {
    /// NFSv3 and MOUNT only (`ganesha.sh` with no option).
    #[default]
    No,
    /// NFSv4.1/4.2 too, on the NFS port (`--nfs4`): the export's path from the pseudo
    /// root is its real path, the MOUNT path.
    Also,
    /// NFSv4.1/4.2 only (`--nfs4-only`): no NFSv3, no MOUNT port.
    Only,
}

/// How a server is started; `Options::default()` is the NFSv3 server the v3 tests use.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Refuse clients whose source port is 1024 or above (`--privileged-port=true`).
    pub privileged: bool,
    /// NFSv4.1 too, or only.
    pub nfs4: Nfs4,
    /// NFSv4.1 session slots the server grants (`--slots=N`: `Slot_Table_Size`);
    /// `None` leaves ganesha's default. Needs `nfs4` other than `No`.
    pub slots: Option<u32>,
}

/// The NFS version a test speaks to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// NFSv3, with MOUNT.
    V3,
    /// NFSv4.1 (`?version=4.1`).
    V41,
}

impl Proto {
    /// A server that speaks this version alone (NFSv3 and MOUNT, or NFSv4.1/4.2 with no
    /// MOUNT), so that nothing can go the other version's way unnoticed.
    pub fn alone(self) -> Options {
        let nfs4 = match self {
            Proto::V3 => Nfs4::No,
            Proto::V41 => Nfs4::Only,
        };
        Options {
            nfs4,
            ..Options::default()
        }
    }
}

/// How a client reaches a server's export over one NFS version: a plain copy, so that
/// a shared server can stay behind its lock (and a test can point it at a proxy).
#[derive(Clone, Debug)]
pub struct Export {
    /// The exported directory (canonical; also its path in URLs).
    pub path: PathBuf,
    /// The version spoken.
    pub proto: Proto,
    /// The NFS port on 127.0.0.1.
    pub nfs_port: u16,
    /// The MOUNT port on 127.0.0.1 (NFSv3 only).
    pub mnt_port: u16,
}

impl Export {
    /// The URL of `rel` below the export, plus `extra` query options:
    /// `nfs://127.0.0.1/EXPORT/rel?nfsport=..&mountport=..` over NFSv3,
    /// `nfs://127.0.0.1:PORT/EXPORT/rel?version=4.1` over NFSv4.1 (the export's path from
    /// the pseudo root is its real path).
    pub fn url(&self, rel: &str, extra: &str) -> String {
        let (port, query) = match self.proto {
            Proto::V3 => (
                String::new(),
                format!("nfsport={}&mountport={}", self.nfs_port, self.mnt_port),
            ),
            Proto::V41 => (format!(":{}", self.nfs_port), "version=4.1".to_owned()),
        };
        let mut u = format!("nfs://127.0.0.1{port}{}", self.path.display());
        if !rel.is_empty() {
            u.push('/');
            u.push_str(rel.trim_start_matches('/'));
        }
        u.push('?');
        u.push_str(&query);
        if !extra.is_empty() {
            u.push('&');
            u.push_str(extra);
        }
        u
    }
}

/// A running ganesha instance; stopped on drop.
pub struct Ganesha {
    /// The exported directory (canonical path; also the MOUNT path, and the path from
    /// the NFSv4 pseudo root).
    pub export: PathBuf,
    /// Where config, log and pid file live.
    pub state: PathBuf,
    /// NFS program port on 127.0.0.1 (NFSv3 and NFSv4 alike).
    pub nfs_port: u16,
    /// MOUNT program port on 127.0.0.1; 0 for an NFSv4-only server, which has none.
    pub mnt_port: u16,
    /// What it was started with.
    pub options: Options,
    /// The server's process id.
    pub pid: u32,
    /// Set once we restarted it ourselves: then it is our child, to be reaped.
    child: Option<std::process::Child>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ganesha.sh")
}

/// Whether ganesha tests can run: ganesha needs root, so other users skip them (one
/// line says so). As root they must run: a missing server, rpcbind or script fails the
/// test that asked.
pub fn available() -> bool {
    if !super::root_or_skip("ganesha tests") {
        return false;
    }
    assert!(script().exists(), "{} is missing", script().display());
    for tool in ["ganesha.nfsd", "rpcbind"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            found,
            "{tool} is not installed: the ganesha tests need nfs-ganesha, nfs-ganesha-vfs and \
             rpcbind (see README.md)"
        );
    }
    true
}

/// A server of one's own, with its export and state in a new scratch directory (which
/// the test may use for its source too); `None` when ganesha cannot run here.
pub fn own(options: Options) -> Option<(Scratch, Ganesha)> {
    if !available() {
        return None;
    }
    let dir = Scratch::new();
    let g = Ganesha::start(&dir.join("export"), &dir.join("state"), options)
        .unwrap_or_else(|e| panic!("{e}"));
    Some((dir, g))
}

/// A server the tests of a process share, with the directory that holds its export and
/// state (dropped after it); `None` once stopped at exit.
type SharedServer = OnceLock<Mutex<Option<(Ganesha, Scratch)>>>;

/// The servers the tests of a process share, one per version ([`Proto::alone`]).
static SHARED: [SharedServer; 2] = [OnceLock::new(), OnceLock::new()];

extern "C" fn stop_shared() {
    for shared in &SHARED {
        if let Some(m) = shared.get()
            && let Ok(mut g) = m.lock()
        {
            g.take();
        }
    }
}

/// The export of the server shared by the tests that speak `proto`, started on first
/// use and stopped at process exit; `None` when ganesha cannot run here.
pub fn shared(proto: Proto) -> Option<Export> {
    if !available() {
        return None;
    }
    let m = SHARED[proto as usize].get_or_init(|| {
        let dir = Scratch::new();
        let server = Ganesha::start(&dir.join("export"), &dir.join("state"), proto.alone())
            .unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(stop_shared) };
        Mutex::new(Some((server, dir)))
    });
    let g = m.lock().unwrap_or_else(|e| e.into_inner());
    let (server, _) = g.as_ref().expect("shared server stopped");
    Some(server.export(proto))
}

impl Ganesha {
    /// Starts a server exporting `export`, with its state in `state`.
    /// Several servers starting at once can race for the free ports ganesha.sh picks
    /// (and for their rpcbind registrations), so a failed start is tried again.
    pub fn start(export: &Path, state: &Path, options: Options) -> Result<Ganesha, String> {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::start_once(export, state, options) {
                Ok(g) => return Ok(g),
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        Err(last)
    }

    fn start_once(export: &Path, state: &Path, options: Options) -> Result<Ganesha, String> {
        std::fs::create_dir_all(export).map_err(|e| e.to_string())?;
        let mut args = vec![format!("--privileged-port={}", options.privileged)];
        match options.nfs4 {
            Nfs4::No => {}
            Nfs4::Also => args.push("--nfs4".into()),
            Nfs4::Only => args.push("--nfs4-only".into()),
        }
        if let Some(n) = options.slots {
            args.push(format!("--slots={n}"));
        }
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(export)
            .arg(state)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running ganesha.sh: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "ganesha.sh start failed: {}{}",
                text,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let get = |key: &str| -> Result<u32, String> {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| format!("ganesha.sh printed no {key}: {text}"))
        };
        let mut g = Ganesha {
            export: export.canonicalize().map_err(|e| e.to_string())?,
            state: state.canonicalize().map_err(|e| e.to_string())?,
            nfs_port: get("NFS_PORT=")? as u16,
            mnt_port: match options.nfs4 {
                Nfs4::Only => 0,
                Nfs4::No | Nfs4::Also => get("MNT_PORT=")? as u16,
            },
            options,
            pid: get("PID=")?,
            child: None,
        };
        g.no_attr_cache()?;
        Ok(g)
    }

    /// Replaces `from` by `to` in the server's configuration and restarts it on the same
    /// ports (e.g. `Squash = No_Root_Squash;` → `Squash = Root_Squash;`).
    pub fn reconfigure(&mut self, from: &str, to: &str) -> Result<(), String> {
        let conf = self.state.join("ganesha.conf");
        let text = std::fs::read_to_string(&conf).map_err(|e| e.to_string())?;
        if !text.contains(from) {
            return Err(format!("{from:?} is not in {}", conf.display()));
        }
        std::fs::write(&conf, text.replace(from, to)).map_err(|e| e.to_string())?;
        self.kill();
        self.restart()
    }

    /// Tests change the exported tree behind the server's back (to set up a prior
    /// destination state, or to read it back); ganesha would serve attributes cached for
    /// up to 60 s, so turn its attribute cache off and restart on the same ports.
    fn no_attr_cache(&mut self) -> Result<(), String> {
        let conf = self.state.join("ganesha.conf");
        let text = std::fs::read_to_string(&conf).map_err(|e| e.to_string())?;
        if text.contains("Attr_Expiration_Time") {
            return Ok(());
        }
        let patched = text.replacen("EXPORT {\n", "EXPORT {\n    Attr_Expiration_Time = 0;\n", 1);
        std::fs::write(&conf, patched).map_err(|e| e.to_string())?;
        self.kill();
        self.restart()
    }

    /// How a client reaches this server's export over `proto`, which it must speak.
    pub fn export(&self, proto: Proto) -> Export {
        let speaks = match proto {
            Proto::V3 => self.options.nfs4 != Nfs4::Only,
            Proto::V41 => self.options.nfs4 != Nfs4::No,
        };
        assert!(
            speaks,
            "a server started with {:?} does not speak {proto:?}",
            self.options.nfs4
        );
        Export {
            path: self.export.clone(),
            proto,
            nfs_port: self.nfs_port,
            mnt_port: self.mnt_port,
        }
    }

    /// The NFSv3 URL of `rel` below the export ([`Export::url`]).
    pub fn url(&self, rel: &str, extra: &str) -> String {
        self.export(Proto::V3).url(rel, extra)
    }

    /// The NFSv4.1 URL of `rel` below the export ([`Export::url`]).
    pub fn url41(&self, rel: &str, extra: &str) -> String {
        self.export(Proto::V41).url(rel, extra)
    }

    /// Whether every protocol the server serves answers a NULL call: NFSv3 and MOUNTv3,
    /// and NFSv4 on the same port, or NFSv4 alone.
    pub fn answers(&self) -> bool {
        let v3 = || rpc_answers(self.nfs_port, NFS, 3) && rpc_answers(self.mnt_port, MOUNT, 3);
        let v4 = || rpc_answers(self.nfs_port, NFS, 4);
        match self.options.nfs4 {
            Nfs4::No => v3(),
            Nfs4::Also => v3() && v4(),
            Nfs4::Only => v4(),
        }
    }

    /// SIGKILLs the server (a crash), waiting until it is gone.
    pub fn kill(&mut self) {
        // SAFETY: plain kill(2) on the pid we started.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) };
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
        let start = Instant::now();
        // SAFETY: signal 0 only checks that the process exists.
        while unsafe { libc::kill(self.pid as libc::pid_t, 0) } == 0
            && start.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGSTOPs the server: its connections stay open and nothing answers, as a hung
    /// server. It is resumed when the guard drops, also when the test fails.
    pub fn pause(&self) -> Paused {
        // SAFETY: plain kill(2) on the pid we started.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGSTOP) };
        Paused { pid: self.pid }
    }

    /// Starts the server again with the same configuration and ports.
    pub fn restart(&mut self) -> Result<(), String> {
        let conf = self.state.join("ganesha.conf");
        let log = self.state.join("ganesha.log");
        let pidfile = self.state.join("ganesha.pid");
        let child = Command::new("setsid")
            .arg("ganesha.nfsd")
            .arg("-F")
            .arg("-f")
            .arg(&conf)
            .arg("-L")
            .arg(&log)
            .arg("-p")
            .arg(&pidfile)
            .args(["-N", "NIV_EVENT"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("restarting ganesha: {e}"))?;
        self.pid = child.id();
        self.child = Some(child);
        std::fs::write(&pidfile, format!("{}\n", self.pid)).map_err(|e| e.to_string())?;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if self.answers() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("ganesha did not come back within 30 s".into())
    }

    /// The server's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.state.join("ganesha.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

/// The NFS program number.
pub const NFS: u32 = 100_003;
/// The MOUNT program number.
pub const MOUNT: u32 = 100_005;

/// Whether an RPC NULL call of program `prog` version `vers` to 127.0.0.1:`port` over
/// TCP is accepted. Made by hand, as ganesha.sh does: `rpcinfo -n PORT` asks the
/// portmapper anyway (rpcbind 1.2.6), where every ganesha that starts or stops replaces
/// or drops the others' registrations, so it would check whichever instance registered
/// last rather than this one.
pub fn rpc_answers(port: u16, prog: u32, vers: u32) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    // Record mark (last fragment, 40 bytes), xid 1, CALL, RPC version 2, program,
    // version, procedure 0 (NULL), AUTH_NONE credential and verifier.
    let call: Vec<u8> = [0x8000_0028, 1, 0, 2, prog, vers, 0, 0, 0, 0, 0]
        .iter()
        .flat_map(|w: &u32| w.to_be_bytes())
        .collect();
    let mut reply = [0u8; 28];
    if s.write_all(&call).is_err() || s.read_exact(&mut reply).is_err() {
        return false;
    }
    let word = |i: usize| u32::from_be_bytes(reply[4 * i..4 * i + 4].try_into().unwrap());
    // xid 1, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
    (1..7).map(word).eq([1, 1, 0, 0, 0, 0])
}

/// A server [`Ganesha::pause`]d: resumed on drop (declared after its [`Ganesha`], it
/// drops first, so the server is resumed before it is stopped).
#[must_use]
pub struct Paused {
    pid: u32,
}

impl Drop for Paused {
    fn drop(&mut self) {
        // SAFETY: plain kill(2) on the server's pid.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGCONT) };
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // Our own child: stop it and reap it (the script would wait on a zombie).
            // SAFETY: plain kill(2) on our child.
            unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGTERM) };
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
            return;
        }
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

//! A private nfs-ganesha server for tests: a Drop guard around `benches/ganesha.sh`.
//!
//! `Ganesha::start` runs `ganesha.sh start EXPORT STATE`, which picks free loopback
//! ports, starts rpcbind if needed and waits until NFS and MOUNT answer; dropping the
//! guard runs `ganesha.sh stop STATE`, also when the test panics. `kill` and `restart`
//! simulate a server crash and reboot on the same ports (the config stays in STATE).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running ganesha instance; stopped on drop.
pub struct Ganesha {
    /// The exported directory (canonical path; also the MOUNT path).
    pub export: PathBuf,
    /// Where config, log and pid file live.
    pub state: PathBuf,
    /// NFS program port on 127.0.0.1.
    pub nfs_port: u16,
    /// MOUNT program port on 127.0.0.1.
    pub mnt_port: u16,
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
    for tool in ["ganesha.nfsd", "rpcbind", "rpcinfo"] {
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

impl Ganesha {
    /// Starts a server exporting `export`, with its state in `state`.
    /// `privileged`: refuse clients whose source port is 1024 or above.
    /// Several servers starting at once can race for the free ports ganesha.sh picks,
    /// so a failed start is tried again.
    pub fn start(export: &Path, state: &Path, privileged: bool) -> Result<Ganesha, String> {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::start_once(export, state, privileged) {
                Ok(g) => return Ok(g),
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        Err(last)
    }

    fn start_once(export: &Path, state: &Path, privileged: bool) -> Result<Ganesha, String> {
        std::fs::create_dir_all(export).map_err(|e| e.to_string())?;
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(export)
            .arg(state)
            .arg(format!("--privileged-port={privileged}"))
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
            mnt_port: get("MNT_PORT=")? as u16,
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

    /// `nfs://127.0.0.1/EXPORT/rel?nfsport=..&mountport=..`, plus `extra` query options.
    pub fn url(&self, rel: &str, extra: &str) -> String {
        let mut u = format!("nfs://127.0.0.1{}", self.export.display());
        if !rel.is_empty() {
            u.push('/');
            u.push_str(rel.trim_start_matches('/'));
        }
        u.push_str(&format!(
            "?nfsport={}&mountport={}",
            self.nfs_port, self.mnt_port
        ));
        if !extra.is_empty() {
            u.push('&');
            u.push_str(extra);
        }
        u
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
            if rpc_answers(self.nfs_port, "nfs") && rpc_answers(self.mnt_port, "mountd") {
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

/// True once an RPC NULL call of `prog` version 3 over TCP on `port` succeeds.
fn rpc_answers(port: u16, prog: &str) -> bool {
    if TcpStream::connect(("127.0.0.1", port)).is_err() {
        return false;
    }
    Command::new("rpcinfo")
        .args(["-t", "127.0.0.1", "-n", &port.to_string(), prog, "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_or(true, |s| s.success())
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

//! stunnel in front of a test server: TLS the way EFS offers it (plain TLS on the NFS
//! port), with a CA and a server certificate for 127.0.0.1 made by the `openssl` CLI in
//! the test's own directory. Debian's `stunnel4`; stopped on drop, also on panic.
//!
//! The `openssl` CLI rather than the `rcgen` crate: the certificates then come from
//! another implementation than the rustls/webpki that checks them (as rsync is the
//! independent judge of a copy), `rcgen`'s default backend is aws-lc-rs (cmake, nasm),
//! and Debian's `stunnel4` depends on the `openssl` package anyway.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A certificate authority made for one test.
pub struct Ca {
    pub cert: PathBuf,
    key: PathBuf,
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl is installed (see README.md)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Ca {
    /// A self-signed CA named `name` in `dir`.
    pub fn new(dir: &Path, name: &str) -> Ca {
        std::fs::create_dir_all(dir).unwrap();
        let cert = dir.join(format!("{name}.pem"));
        let key = dir.join(format!("{name}.key"));
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            key.to_str().unwrap(),
            "-out",
            cert.to_str().unwrap(),
        ]);
        Ca { cert, key }
    }

    /// A server certificate for 127.0.0.1 signed by this CA: (cert, key).
    pub fn server_cert(&self, dir: &Path) -> (PathBuf, PathBuf) {
        self.server_cert_for(dir, "IP:127.0.0.1")
    }

    /// A server certificate for the names of `san` (openssl's `subjectAltName` value,
    /// `DNS:name,IP:addr`) signed by this CA, in `dir`: (cert, key).
    pub fn server_cert_for(&self, dir: &Path, san: &str) -> (PathBuf, PathBuf) {
        std::fs::create_dir_all(dir).unwrap();
        let key = dir.join("server.key");
        let csr = dir.join("server.csr");
        let cert = dir.join("server.pem");
        let ext = dir.join("server.ext");
        std::fs::write(
            &ext,
            format!(
                "subjectAltName={san}\nbasicConstraints=CA:FALSE\n\
                 keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
            ),
        )
        .unwrap();
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=nfsync test server",
            "-keyout",
            key.to_str().unwrap(),
            "-out",
            csr.to_str().unwrap(),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            csr.to_str().unwrap(),
            "-CA",
            self.cert.to_str().unwrap(),
            "-CAkey",
            self.key.to_str().unwrap(),
            "-CAcreateserial",
            "-extfile",
            ext.to_str().unwrap(),
            "-out",
            cert.to_str().unwrap(),
        ]);
        (cert, key)
    }
}

/// A running stunnel forwarding TLS on `port` to plain TCP on `target`.
pub struct Stunnel {
    pub port: u16,
    child: Child,
    log: PathBuf,
}

impl Stunnel {
    /// Starts stunnel in `dir` with the given certificate, in front of 127.0.0.1:`target`.
    pub fn start(dir: &Path, cert: &Path, key: &Path, target: u16) -> Stunnel {
        Stunnel::start_with(dir, cert, key, target, "")
    }

    /// [`Stunnel::start`] with more lines for the service (`requireCert = yes`, …).
    pub fn start_with(dir: &Path, cert: &Path, key: &Path, target: u16, extra: &str) -> Stunnel {
        let port = free_port();
        let log = dir.join("stunnel.log");
        let conf = dir.join("stunnel.conf");
        std::fs::write(
            &conf,
            format!(
                "foreground = yes\npid = {}\noutput = {}\n[nfs]\naccept = 127.0.0.1:{port}\n\
                 connect = 127.0.0.1:{target}\ncert = {}\nkey = {}\n{extra}",
                dir.join("stunnel.pid").display(),
                log.display(),
                cert.display(),
                key.display()
            ),
        )
        .unwrap();
        let child = Command::new("stunnel4")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("stunnel4 is installed (see README.md)");
        let mut s = Stunnel { port, child, log };
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let exited = s.child.try_wait().ok().flatten();
            assert!(
                exited.is_none() && t.elapsed() < Duration::from_secs(10),
                "stunnel did not listen on {port} ({}): {}",
                exited.map_or("still running".to_string(), |st| st.to_string()),
                std::fs::read_to_string(&s.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }
}

impl Drop for Stunnel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the TLS tests can run: they need stunnel4 and openssl. As root (CI) they
/// must; others skip with one line, as for ganesha.
pub fn available() -> bool {
    let have = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let ok = have("stunnel4") && have("openssl");
    assert!(
        ok || !rustix_is_root(),
        "stunnel4 or openssl is not installed: the TLS tests need them (see README.md)"
    );
    ok
}

fn rustix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A free TCP port on 127.0.0.1 (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// nfsync with nothing of the caller's AWS environment: `HOME` under `dir`, the EFS
/// host key at `key`, instance metadata at a closed loopback port (so no credential
/// is found by accident and nothing leaves the machine).
pub fn efs_nfsync(dir: &Path, key: &Path) -> assert_cmd::Command {
    efs_env(super::nfsync(), dir, key)
}

/// `cmd` (nfsync, or a wrapper that runs it) with the environment of [`efs_nfsync`].
pub fn efs_env(mut cmd: assert_cmd::Command, dir: &Path, key: &Path) -> assert_cmd::Command {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    std::fs::create_dir_all(dir.join("home")).unwrap();
    cmd.env("HOME", dir.join("home"))
        .env("NFSYNC_EFS_KEY", key)
        .env(
            "AWS_EC2_METADATA_SERVICE_ENDPOINT",
            format!("http://127.0.0.1:{closed}"),
        );
    cmd
}

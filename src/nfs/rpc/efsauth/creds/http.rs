//! The few HTTP requests credential sources need, bounded in time: HTTP/1.0 (no chunked
//! bodies, the server closes when done) over a blocking socket, with TLS from rustls for
//! STS. Credentials are fetched once before the first connection, so blocking is fine.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

/// The largest answer read: credentials are a few kilobytes.
const MAX_BODY: u64 = 1 << 20;

/// A parsed `http://` or `https://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Url {
    pub fn parse(url: &str) -> Result<Url, String> {
        let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("{url}: not an http:// or https:// URL"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let default = if https { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or(format!("{url}: unclosed ["))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| format!("{url}: bad port"))?,
                None => default,
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().map_err(|_| format!("{url}: bad port"))?,
                ),
                None => (authority.to_string(), default),
            }
        };
        if host.is_empty() {
            return Err(format!("{url}: no host"));
        }
        Ok(Url {
            https,
            host,
            port,
            path: path.to_string(),
        })
    }

    /// The URL with `path` (and query) in place of its own.
    pub fn with_path(&self, path: &str) -> Url {
        Url {
            path: path.to_string(),
            ..self.clone()
        }
    }

    fn host_header(&self) -> String {
        let h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.https, self.port) {
            (true, 443) | (false, 80) => h,
            _ => format!("{h}:{}", self.port),
        }
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.host_header(), self.path)
    }
}

/// A response: status and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// How a request is made.
pub struct Client {
    /// For each of connect, write and read.
    pub timeout: Duration,
    /// CAs for HTTPS (`AWS_CA_BUNDLE`); `None`: the compiled-in public roots.
    pub ca_bundle: Option<std::path::PathBuf>,
}

impl Client {
    /// `method url` with `headers`; the whole exchange takes at most about 3× the timeout.
    pub fn request(
        &self,
        method: &str,
        url: &Url,
        headers: &[(&str, &str)],
    ) -> io::Result<Response> {
        let deadline = Instant::now() + self.timeout * 3;
        let addrs: Vec<_> = (url.host.as_str(), url.port).to_socket_addrs()?.collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        let mut tcp = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, self.timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let tcp = tcp.ok_or(last)?;
        tcp.set_read_timeout(Some(self.timeout))?;
        tcp.set_write_timeout(Some(self.timeout))?;
        let mut req = format!(
            "{method} {} HTTP/1.0\r\nHost: {}\r\nConnection: close\r\n",
            url.path,
            url.host_header()
        );
        for (k, v) in headers {
            if v.contains(['\r', '\n']) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("header {k} has a line break in it"),
                ));
            }
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if method == "PUT" || method == "POST" {
            req.push_str("Content-Length: 0\r\n");
        }
        req.push_str("\r\n");
        let raw = if url.https {
            let config = tls_config(self.ca_bundle.as_deref())?;
            let name = ServerName::try_from(url.host.clone())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let conn = rustls::ClientConnection::new(config, name)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            exchange(rustls::StreamOwned::new(conn, tcp), &req, deadline)?
        } else {
            exchange(tcp, &req, deadline)?
        };
        parse_response(&raw)
    }
}

fn exchange(mut s: impl Read + Write, req: &str, deadline: Instant) -> io::Result<Vec<u8>> {
    s.write_all(req.as_bytes())?;
    s.flush()?;
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if Instant::now() > deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "answer too slow"));
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            // A TLS peer that closes without close_notify: the body is complete
            // (HTTP/1.0 ends at the close).
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !out.is_empty() => break,
            Err(e) => return Err(e),
        }
        if out.len() as u64 > MAX_BODY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "answer too long",
            ));
        }
    }
    Ok(out)
}

fn parse_response(raw: &[u8]) -> io::Result<Response> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("not an HTTP answer"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| bad("not an HTTP answer"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .filter(|_| head.starts_with("HTTP/"))
        .ok_or_else(|| bad("not an HTTP answer"))?;
    Ok(Response {
        status,
        body: String::from_utf8_lossy(&raw[end + 4..]).into_owned(),
    })
}

fn tls_config(ca: Option<&Path>) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("AWS_CA_BUNDLE={}: {e}", path.display()),
                    )
                })?;
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| io::Error::other(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:8080/latest/api/token").unwrap();
        assert_eq!(
            (u.https, u.host.as_str(), u.port),
            (false, "127.0.0.1", 8080)
        );
        assert_eq!(u.path, "/latest/api/token");
        let u = Url::parse("https://sts.eu-west-1.amazonaws.com").unwrap();
        assert_eq!((u.port, u.path.as_str()), (443, "/"));
        assert_eq!(u.to_string(), "https://sts.eu-west-1.amazonaws.com/");
        let u = Url::parse("http://[fd00:ec2::254]/x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("fd00:ec2::254", 80));
        assert!(Url::parse("ftp://x/").is_err());
        assert!(Url::parse("http://:80/").is_err());
    }

    #[test]
    fn responses() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody").unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "body"));
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
    }
}

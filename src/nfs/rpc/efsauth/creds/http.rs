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

use super::super::file;

/// The largest answer read: credentials are a few kilobytes.
const MAX_BODY: u64 = 1 << 20;

/// A parsed `http://` or `https://` URL.
///
/// Its query may carry a secret (STS's `WebIdentityToken`): `Debug` and `Display`
/// (which errors use) leave the query's text out.
#[derive(Clone, PartialEq, Eq)]
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

impl Url {
    /// The path with the query's text left out.
    fn path_shown(&self) -> std::borrow::Cow<'_, str> {
        match self.path.split_once('?') {
            Some((p, _)) => format!("{p}?<redacted>").into(),
            None => self.path.as_str().into(),
        }
    }
}

impl std::fmt::Debug for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Url")
            .field("https", &self.https)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path_shown())
            .finish()
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.host_header(), self.path_shown())
    }
}

/// A response: status and body, as the endpoint sent it (a credentials answer holds
/// the secret key, so `Debug` shows its length only; error text from it goes through
/// [`super::super::text::shown`]).
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field(
                "body",
                &format_args!("<redacted, {} bytes>", self.body.len()),
            )
            .finish()
    }
}

/// A request's error when no connection was made (nothing listens, no route, connect
/// timed out), as against one made but not answered: IMDS tells "nobody there" from
/// "there but the token's answer did not come back" (a container's hop limit).
#[derive(Debug)]
pub struct NoConnection(io::Error);

impl std::fmt::Display for NoConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for NoConnection {}

/// Whether `e` is [`NoConnection`].
pub fn no_connection(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<NoConnection>())
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
        // The path may hold text an endpoint gave (IMDS's role name): no line breaks
        // or spaces that would end the request line early.
        if url.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "URL path has a control character or space in it",
            ));
        }
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
        let tcp = tcp.ok_or_else(|| io::Error::new(last.kind(), NoConnection(last)))?;
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

/// The status and body of an HTTP/1.x answer. A `Content-Length` is checked, not
/// trusted: it must be a number that fits, no more than [`MAX_BODY`], and no more than
/// what came (the rest of a longer answer is dropped).
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
    let mut body = &raw[end + 4..];
    for line in head.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if !name.trim().eq_ignore_ascii_case("content-length") {
            continue;
        }
        let value = value.trim();
        let n: u64 = value
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| value.parse().ok())
            .flatten()
            .ok_or_else(|| bad("Content-Length is not a number that fits"))?;
        if n > MAX_BODY {
            return Err(bad("answer too long (Content-Length)"));
        }
        let n = usize::try_from(n).map_err(|_| bad("answer too long (Content-Length)"))?;
        body = body
            .get(..n)
            .ok_or_else(|| bad("answer shorter than its Content-Length"))?;
    }
    Ok(Response {
        status,
        body: body.to_vec(),
    })
}

fn tls_config(ca: Option<&Path>) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
            let pem = file::read_text(path, "AWS_CA_BUNDLE").map_err(invalid)?;
            let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| invalid(format!("AWS_CA_BUNDLE {}: {e}", path.display())))?;
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
        assert_eq!((r.status, &r.body[..]), (200, &b"body"[..]));
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
    }

    /// A hostile or broken `Content-Length` is an error, never a panic or a huge
    /// allocation; a longer answer is cut at it.
    #[test]
    fn content_length_is_checked() {
        let answer = |len: &str| {
            parse_response(
                format!("HTTP/1.0 200 OK\r\nContent-Length: {len}\r\n\r\nbody").as_bytes(),
            )
        };
        assert_eq!(answer("2").unwrap().body, b"bo");
        assert_eq!(answer("4").unwrap().body, b"body");
        for (len, why) in [
            ("99999999999999999999999999", "not a number that fits"),
            ("18446744073709551615", "too long"),
            ("2000000", "too long"),
            ("-1", "not a number"),
            ("+4", "not a number"),
            ("5", "shorter than"),
        ] {
            let e = answer(len).unwrap_err().to_string();
            assert!(e.contains(why), "{len}: {e}");
        }
    }

    /// Neither the web identity token in a query nor a secret key in a body shows in
    /// `{:?}`; the URL's `Display` (in errors) leaves the query out too.
    #[test]
    fn debug_hides_the_secrets() {
        let u = Url::parse("https://sts.example/?Action=A&WebIdentityToken=eyJSECRET").unwrap();
        for shown in [format!("{u:?}"), u.to_string()] {
            assert!(
                !shown.contains("eyJSECRET") && shown.contains("<redacted>"),
                "{shown}"
            );
        }
        let r = parse_response(b"HTTP/1.0 200 OK\r\n\r\n{\"SecretAccessKey\":\"wJalrSECRET\"}")
            .unwrap();
        let shown = format!("{r:?}");
        assert!(
            !shown.contains("wJalrSECRET") && shown.contains("<redacted"),
            "{shown}"
        );
    }

    #[test]
    fn a_path_with_a_line_break_is_not_sent() {
        let c = Client {
            timeout: Duration::from_millis(100),
            ca_bundle: None,
        };
        let u = Url::parse("http://127.0.0.1:9/role\r\nX-Evil: 1").unwrap();
        let e = c.request("GET", &u, &[]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
    }

    /// Nobody listening is told from a listener that does not answer (IMDS's token).
    #[test]
    fn no_connection_is_told_from_no_answer() {
        let c = Client {
            timeout: Duration::from_millis(300),
            ca_bundle: None,
        };
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let u = Url::parse(&format!("http://{}/", closed.local_addr().unwrap())).unwrap();
        drop(closed);
        let e = c.request("GET", &u, &[]).unwrap_err();
        assert!(no_connection(&e), "{e}");
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let u = Url::parse(&format!("http://{}/", silent.local_addr().unwrap())).unwrap();
        let e = c.request("GET", &u, &[]).unwrap_err();
        assert!(!no_connection(&e), "{e}");
    }
}

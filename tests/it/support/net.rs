//! Small TCP servers on 127.0.0.1 for tests: fake or hostile servers, and proxies that
//! stand between nfsync and a real one.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A served connection: its socket (to shut down) and its thread (to join).
type Conn = (TcpStream, JoinHandle<()>);

/// Threads and sockets of a test's servers, all shut down and joined on drop (also when
/// the test fails), so nothing outlives the test.
#[derive(Default)]
pub struct Servers {
    stop: Arc<AtomicBool>,
    listeners: Vec<(u16, JoinHandle<()>)>,
    conns: Arc<Mutex<Vec<Conn>>>,
}

impl Servers {
    /// Accepts connections on a fresh port and hands each to `serve` on its own thread.
    pub fn listen(&mut self, serve: impl Fn(TcpStream) + Send + Sync + 'static) -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (stop, conns, serve) = (self.stop.clone(), self.conns.clone(), Arc::new(serve));
        let h = std::thread::spawn(move || {
            for c in l.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(c) = c else { break };
                let (keep, serve) = (c.try_clone().unwrap(), serve.clone());
                conns
                    .lock()
                    .unwrap()
                    .push((keep, std::thread::spawn(move || serve(c))));
            }
        });
        self.listeners.push((port, h));
        port
    }

    /// A proxy to 127.0.0.1:`target` that cuts every connection once `budget` bytes of
    /// replies have passed: the server acted on the calls whose replies are lost, so
    /// nfsync must reconnect and resolve its ambiguous retries. Returns the proxy's port
    /// and a count of the cuts.
    pub fn cutting_proxy(&mut self, target: u16, budget: usize) -> (u16, Arc<AtomicUsize>) {
        let cuts = Arc::new(AtomicUsize::new(0));
        let counter = cuts.clone();
        let port = self.listen(move |client| {
            let Some((up, mut server)) = pipe_up(&client, target) else {
                return;
            };
            let mut client = client;
            let mut left = budget;
            let mut buf = [0u8; 4096];
            while let Ok(n) = server.read(&mut buf) {
                let n = n.min(left);
                if n == 0 || client.write_all(&buf[..n]).is_err() {
                    break;
                }
                left -= n;
                if left == 0 {
                    counter.fetch_add(1, Ordering::SeqCst);
                    break;
                }
            }
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
            let _ = up.join();
        });
        (port, cuts)
    }
}

impl Servers {
    /// A proxy to 127.0.0.1:`target` that makes the wire slow: each reply chunk waits
    /// `delay`, and calls pass at most `bytes_per_sec`. For tests that need a run to
    /// last a few seconds without a server of their own.
    pub fn slow_proxy(
        &mut self,
        target: u16,
        delay: std::time::Duration,
        bytes_per_sec: f64,
    ) -> u16 {
        self.listen(move |client| {
            let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                return;
            };
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let up = std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n) = c_in.read(&mut buf) {
                    if n == 0 || s_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_secs_f64(
                        n as f64 / bytes_per_sec,
                    ));
                }
                let _ = s_out.shutdown(Shutdown::Both);
            });
            let (mut client, mut server) = (client, server);
            let mut buf = [0u8; 16384];
            while let Ok(n) = server.read(&mut buf) {
                std::thread::sleep(delay);
                if n == 0 || client.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
            let _ = up.join();
        })
    }
}

impl Servers {
    /// A proxy to 127.0.0.1:`target` that passes everything until the flag it returns
    /// is raised, and from then on swallows the replies while it keeps every
    /// connection open: a server that stopped answering mid-run. Returns the port.
    pub fn stalling_proxy(&mut self, target: u16) -> (u16, Arc<AtomicBool>) {
        let stalled = Arc::new(AtomicBool::new(false));
        let flag = stalled.clone();
        let port = self.listen(move |client| {
            let Some((up, mut server)) = pipe_up(&client, target) else {
                return;
            };
            let mut client = client;
            let mut buf = [0u8; 16384];
            while let Ok(n) = server.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if !flag.load(Ordering::SeqCst) && client.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
            let _ = up.join();
        });
        (port, stalled)
    }
}

/// Connects to 127.0.0.1:`target` and copies what the client sends to it on a thread
/// of its own (joined by the caller); the replies are the caller's to pass or not.
fn pipe_up(client: &TcpStream, target: u16) -> Option<(JoinHandle<()>, TcpStream)> {
    let server = TcpStream::connect(("127.0.0.1", target)).ok()?;
    let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c_in, &mut s_out);
        let _ = s_out.shutdown(Shutdown::Both);
    });
    Some((up, server))
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for (port, h) in self.listeners.drain(..) {
            let _ = TcpStream::connect(("127.0.0.1", port)); // wakes the accept loop
            let _ = h.join();
        }
        for (sock, h) in self.conns.lock().unwrap().drain(..) {
            let _ = sock.shutdown(Shutdown::Both);
            let _ = h.join();
        }
    }
}

/// One RFC 5531 record from `s` (fragments joined), or `None` at EOF.
pub fn read_record(s: &mut impl Read) -> Option<Vec<u8>> {
    let mut rec = Vec::new();
    loop {
        let mut mark = [0u8; 4];
        s.read_exact(&mut mark).ok()?;
        let mark = u32::from_be_bytes(mark);
        let start = rec.len();
        rec.resize(start + (mark & 0x7fff_ffff) as usize, 0);
        s.read_exact(&mut rec[start..]).ok()?;
        if mark & 0x8000_0000 != 0 {
            return Some(rec);
        }
    }
}

/// Writes `rec` as one record (one last fragment).
pub fn write_record(s: &mut impl Write, rec: &[u8]) -> std::io::Result<()> {
    let mut out = (0x8000_0000u32 | rec.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(rec);
    s.write_all(&out)
}

/// How a relay changes a reply: given the call it answers, and the reply to edit.
pub type Rewrite = dyn Fn(&[u8], &mut Vec<u8>) + Send + Sync;

impl Servers {
    /// A relay to 127.0.0.1:`target` that hands every reply, with the call it answers
    /// (matched by xid), to `rewrite` before passing it on, whole records at a time,
    /// so a reply may change length: what a compromised server or anyone on the path
    /// of plain NFS can send. Returns the relay's port.
    pub fn rewriting_relay(&mut self, target: u16, rewrite: Arc<Rewrite>) -> u16 {
        self.listen(move |client| {
            let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                return;
            };
            let calls: Arc<Mutex<std::collections::HashMap<[u8; 4], Vec<u8>>>> = Arc::default();
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut c_out, mut s_in) = (client, server);
            let noted = calls.clone();
            let up = std::thread::spawn(move || {
                while let Some(call) = read_record(&mut c_in) {
                    if call.len() >= 4 {
                        let xid = [call[0], call[1], call[2], call[3]];
                        noted.lock().unwrap().insert(xid, call.clone());
                    }
                    if write_record(&mut s_out, &call).is_err() {
                        break;
                    }
                }
                let _ = s_out.shutdown(Shutdown::Both);
            });
            while let Some(mut rep) = read_record(&mut s_in) {
                let call = match rep.get(..4) {
                    Some(x) => calls.lock().unwrap().remove(x).unwrap_or_default(),
                    None => Vec::new(),
                };
                rewrite(&call, &mut rep);
                if write_record(&mut c_out, &rep).is_err() {
                    break;
                }
            }
            let _ = c_out.shutdown(Shutdown::Both);
            let _ = up.join();
        })
    }
}

/// `s` as XDR writes a string: its length, its bytes, zeros to a multiple of four.
pub fn xdr_string(s: &[u8]) -> Vec<u8> {
    let mut out = (s.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(s);
    out.resize(out.len().next_multiple_of(4), 0);
    out
}

/// Replaces every XDR string `from` in `rec` by the XDR string `to` (of any length).
pub fn swap_xdr_strings(rec: &mut Vec<u8>, from: &[u8], to: &[u8]) {
    let (from, to) = (xdr_string(from), xdr_string(to));
    let mut at = 0;
    while let Some(i) = rec[at..].windows(from.len()).position(|w| w == from) {
        let i = at + i;
        rec.splice(i..i + from.len(), to.iter().copied());
        at = i + to.len();
    }
}

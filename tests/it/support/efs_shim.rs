//! A stand-in for EFS's partitions in front of a real NFSv4.1 server: a TCP relay on
//! 127.0.0.1 that answers EFS's `bind_client_to_partition` call (program 400123) from a
//! script, relays everything else, and writes down what each connection carried, so a
//! test can hold nfsync to efs-proxy's rules:
//!
//! - no NFS record before the bind on a connection (unless the shim said it is not EFS);
//! - one NFSv4.1 session never used on connections of two partitions;
//! - every bind of a run with one identifier.
//!
//! It can also cut one connection mid-run.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex};

use nfsync::nfs::rpc::efs_bind::{BindReply, BindResponse, ScaleUpConfig, encode_reply};

use super::net::{Servers, read_record};

/// One scripted answer to a bind call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// READY on partition `n`.
    Ready(u8),
    /// RETRY.
    Retry,
    /// PREFERRED partition `n`.
    Preferred(u8),
    /// RETRY_LATER.
    RetryLater,
    /// ERROR.
    Error,
    /// No such program: an RPC-level answer, as a server that is not EFS gives.
    ProgUnavail,
}

/// What one accepted connection carried.
#[derive(Clone, Debug, Default)]
pub struct ConnLog {
    /// The answer to its bind call, if it made one (as its first record).
    pub bind: Option<Answer>,
    /// NFS call records relayed.
    pub nfs_records: usize,
}

#[derive(Default)]
struct Log {
    script: VecDeque<Answer>,
    then: Option<Answer>,
    max: i32,
    conns: Vec<ConnLog>,
    violations: Vec<String>,
    /// Session id → the partition of the connection it was first seen on.
    sessions: HashMap<[u8; 16], Option<u8>>,
    identifiers: BTreeSet<Vec<u8>>,
    incarnations: BTreeSet<i64>,
    not_efs: bool,
    cut_after: Option<usize>,
    /// Cut every connection, and answer this from then on.
    cut_all: Option<Answer>,
    relayed: usize,
    cuts: usize,
    /// Every connection's client side, to cut them all.
    sockets: Vec<TcpStream>,
}

/// The shim; its servers stop on drop.
pub struct PartitionShim {
    /// Where nfsync connects.
    pub port: u16,
    log: Arc<Mutex<Log>>,
    _servers: Servers,
}

impl PartitionShim {
    /// A shim in front of 127.0.0.1:`target` answering bind calls with `script`, then
    /// with `then` for ever; EFS allows `max` connections per partition.
    pub fn start(target: u16, script: &[Answer], then: Answer, max: i32) -> PartitionShim {
        let log = Arc::new(Mutex::new(Log {
            script: script.iter().copied().collect(),
            then: Some(then),
            max,
            ..Log::default()
        }));
        let mut servers = Servers::default();
        let shared = log.clone();
        let port = servers.listen(move |client| serve(client, target, &shared));
        PartitionShim {
            port,
            log,
            _servers: servers,
        }
    }

    /// Stands for a server that is not EFS: NFS records may come first (a bind call is
    /// still answered and logged, for the test to find).
    pub fn not_efs(&self) {
        self.log.lock().unwrap().not_efs = true;
    }

    /// Cuts the connection that relays the `n`th NFS record (once).
    pub fn cut_after(&self, n: usize) {
        self.log.lock().unwrap().cut_after = Some(n);
    }

    /// Once `n` NFS records passed, cuts every connection and answers `then` to every
    /// bind from then on: the partition is gone.
    pub fn cut_all_after(&self, n: usize, then: Answer) {
        let mut l = self.log.lock().unwrap();
        l.cut_after = Some(n);
        l.cut_all = Some(then);
    }

    /// The connections so far, in the order they were accepted.
    pub fn conns(&self) -> Vec<ConnLog> {
        self.log.lock().unwrap().conns.clone()
    }

    /// Connections cut so far.
    pub fn cuts(&self) -> usize {
        self.log.lock().unwrap().cuts
    }

    /// Identifiers the bind calls carried.
    pub fn identifiers(&self) -> usize {
        self.log.lock().unwrap().identifiers.len()
    }

    /// Incarnations the bind calls carried.
    pub fn incarnations(&self) -> Vec<i64> {
        self.log
            .lock()
            .unwrap()
            .incarnations
            .iter()
            .copied()
            .collect()
    }

    /// Fails the test on any broken rule.
    pub fn assert_rules_kept(&self) {
        let log = self.log.lock().unwrap();
        assert!(
            log.violations.is_empty(),
            "EFS's rules broken:\n{}",
            log.violations.join("\n")
        );
        assert!(
            log.identifiers.len() <= 1,
            "binds with {} identifiers",
            log.identifiers.len()
        );
    }
}

fn word(rec: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(rec.get(at..at + 4)?.try_into().ok()?))
}

/// Where a call's arguments start (after the credential and verifier), and its
/// program and procedure.
fn call_args(rec: &[u8]) -> Option<(u32, u32, usize)> {
    if word(rec, 4)? != 0 {
        return None;
    }
    let (prog, proc) = (word(rec, 12)?, word(rec, 20)?);
    let mut at = 24;
    for _ in 0..2 {
        let len = word(rec, at + 4)? as usize;
        at += 8 + len.div_ceil(4) * 4;
    }
    Some((prog, proc, at))
}

/// The session id of a COMPOUND that starts with SEQUENCE.
fn session_of(rec: &[u8]) -> Option<[u8; 16]> {
    let (prog, proc, mut at) = call_args(rec)?;
    if (prog, proc) != (100_003, 1) {
        return None;
    }
    let tag = word(rec, at)? as usize;
    at += 4 + tag.div_ceil(4) * 4 + 8; // tag, minor version, op count
    if word(rec, at)? != 53 {
        return None;
    }
    rec.get(at + 4..at + 20)?.try_into().ok()
}

/// The identifier and incarnation of a bind call, `None` for any other record.
fn bind_identifier(rec: &[u8]) -> Option<(Vec<u8>, i64)> {
    let (prog, proc, at) = call_args(rec)?;
    if (prog, proc) != (400_123, 2) || word(rec, 16)? != 1 {
        return None;
    }
    let len = word(rec, at)? as usize;
    let incarnation = i64::from_be_bytes(rec.get(at + 24..at + 32)?.try_into().ok()?);
    (len == 16 && word(rec, at + 20)? == 8 && rec.len() == at + 32)
        .then(|| (rec[at + 4..at + 20].to_vec(), incarnation))
}

fn reply_to(xid: u32, answer: Answer, max: i32) -> Vec<u8> {
    let id = |n: u8| [n; 64];
    let response = match answer {
        Answer::Ready(n) => BindResponse::Ready(id(n)),
        Answer::Preferred(n) => BindResponse::Preferred(id(n)),
        Answer::Retry => BindResponse::Retry("try another".into()),
        Answer::RetryLater => BindResponse::RetryLater("busy".into()),
        Answer::Error => BindResponse::Error("refused".into()),
        Answer::ProgUnavail => {
            // xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, PROG_UNAVAIL
            let body: Vec<u8> = [xid, 1, 0, 0, 0, 1]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            let mut r = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
            r.extend(body);
            return r;
        }
    };
    let config = ScaleUpConfig {
        max_multiplexed_connections: max,
        scale_up_bytes_per_sec_threshold: 314_572_800,
        scale_up_threshold_breached_duration_sec: 1,
        scale_up_lookback_window_size_sec: 1,
    };
    encode_reply(xid, &BindReply { response, config })
}

fn write_record(s: &mut TcpStream, rec: &[u8]) -> io::Result<()> {
    let mut out = (0x8000_0000u32 | rec.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(rec);
    s.write_all(&out)
}

fn serve(mut client: TcpStream, target: u16, log: &Mutex<Log>) {
    let idx = {
        let mut l = log.lock().unwrap();
        l.conns.push(ConnLog::default());
        l.sockets.push(client.try_clone().unwrap());
        l.conns.len() - 1
    };
    let Some(first) = read_record(&mut client) else {
        return;
    };
    let mut partition = None;
    let mut pending = Some(first);
    if let Some((identifier, incarnation)) = pending.as_deref().and_then(bind_identifier) {
        let rec = pending.take().unwrap();
        let answer = {
            let mut l = log.lock().unwrap();
            l.identifiers.insert(identifier);
            l.incarnations.insert(incarnation);
            let a = l.script.pop_front().or(l.then).unwrap();
            l.conns[idx].bind = Some(a);
            if a == Answer::ProgUnavail {
                l.not_efs = true;
            }
            a
        };
        if let Answer::Ready(n) = answer {
            partition = Some(n);
        }
        let max = log.lock().unwrap().max;
        if client
            .write_all(&reply_to(word(&rec, 0).unwrap(), answer, max))
            .is_err()
        {
            return;
        }
    } else {
        let mut l = log.lock().unwrap();
        if !l.not_efs {
            l.violations.push(format!(
                "connection {idx}: an NFS record before the bind call"
            ));
        }
    }
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", target)) else {
        return;
    };
    let (mut s_in, mut c_out) = (server.try_clone().unwrap(), client.try_clone().unwrap());
    let down = std::thread::spawn(move || {
        let _ = io::copy(&mut s_in, &mut c_out);
        let _ = c_out.shutdown(Shutdown::Both);
    });
    while let Some(rec) = pending.take().or_else(|| read_record(&mut client)) {
        let cut = {
            let mut l = log.lock().unwrap();
            if bind_identifier(&rec).is_some() {
                l.violations
                    .push(format!("connection {idx}: a bind call after NFS records"));
            }
            if let Some(sid) = session_of(&rec) {
                let seen = *l.sessions.entry(sid).or_insert(partition);
                if seen != partition {
                    l.violations.push(format!(
                        "connection {idx}: session {sid:02x?} used on partitions {seen:?} and \
                         {partition:?}"
                    ));
                }
            }
            l.conns[idx].nfs_records += 1;
            l.relayed += 1;
            let cut = l.cuts == 0 && l.cut_after.is_some_and(|n| l.relayed >= n);
            if cut {
                l.cuts += 1;
                if let Some(then) = l.cut_all {
                    l.script.clear();
                    l.then = Some(then);
                    for s in &l.sockets {
                        let _ = s.shutdown(Shutdown::Both);
                    }
                }
            }
            cut
        };
        if cut || write_record(&mut server, &rec).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
    let _ = down.join();
}

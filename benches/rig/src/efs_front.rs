//! `rig efs-front`: an EFS mount target as far as a benchmark needs one, in
//! front of nfs-ganesha's NFSv4.1 port on 127.0.0.1.
//!
//! A connection whose first record is EFS's `bind_client_to_partition` call
//! (program 400123, procedure 2) gets READY on the one partition this front
//! has, with `max_multiplexed_connections` = `--max-conns`, one RTT later;
//! every other record is relayed through the delay proxy ([`proxy::serve`]),
//! paced per connection by `--cap-mibs` as EFS limits each connection. A
//! connection that starts with anything else is relayed as it is (a client
//! that does not bind). When a connection ends the front prints
//! `CONN <n> bound=<0|1> up=<bytes> down=<bytes>`, so a script can tell how
//! many connections were bound and how the bytes spread over them.
//!
//! Unlike the test shim (tests/it/support/efs_shim.rs) it checks no rules and
//! answers nothing but READY: it is for measuring, not for judging.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::proxy::{self, ProxyOpts};

/// EFS's program, version and bind procedure.
const PROGRAM: u32 = 400_123;
const VERSION: u32 = 1;
const PROC_BIND: u32 = 2;
/// The partition every bind lands on.
const PARTITION: [u8; 64] = [0xef; 64];
/// A first record larger than this is not a bind call; it is relayed as it is
/// only if it is not larger than an NFS client sends (1 MiB of data + headers).
const MAX_FIRST: usize = (1 << 20) + 4096;

pub fn run(o: ProxyOpts, max_conns: i32) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let (local, remote) = o.forwards[0];
        let l = TcpListener::bind(("127.0.0.1", local)).await?;
        // Scripts parse these lines, as the proxy's: LISTEN <remote>=<local>.
        println!("LISTEN {remote}={}", l.local_addr()?.port());
        println!("READY");
        let target: SocketAddr = ([127, 0, 0, 1], remote).into();
        let accepted = AtomicUsize::new(0);
        let accept = async {
            loop {
                let Ok((client, _)) = l.accept().await else {
                    continue;
                };
                let n = accepted.fetch_add(1, Ordering::Relaxed);
                let o = o.clone();
                tokio::spawn(async move {
                    if let Some((bound, up, down)) = handle(client, target, &o, max_conns).await {
                        println!("CONN {n} bound={} up={up} down={down}", u8::from(bound));
                    }
                });
            }
        };
        tokio::select! {
            _ = accept => {}
            _ = tokio::signal::ctrl_c() => {}
            _ = proxy::sigterm() => {}
        }
        Ok(())
    })
}

/// One connection: answer its bind (if it starts with one), then relay.
async fn handle(
    mut client: TcpStream,
    target: SocketAddr,
    o: &ProxyOpts,
    max_conns: i32,
) -> Option<(bool, u64, u64)> {
    let _ = client.set_nodelay(true);
    let mut mark = [0u8; 4];
    client.read_exact(&mut mark).await.ok()?;
    let m = u32::from_be_bytes(mark);
    let len = (m & 0x7fff_ffff) as usize;
    if len > MAX_FIRST {
        return None;
    }
    let mut first = vec![0u8; len];
    client.read_exact(&mut first).await.ok()?;
    let bound = m & 0x8000_0000 != 0 && is_bind_call(&first);
    if bound {
        // The reply comes one round trip after the call, as over the wire.
        tokio::time::sleep(o.delay * 2).await;
        let xid = u32::from_be_bytes(first[..4].try_into().ok()?);
        client
            .write_all(&ready_reply(xid, &PARTITION, max_conns))
            .await
            .ok()?;
    }
    let mut server = TcpStream::connect(target).await.ok()?;
    if !bound {
        server.write_all(&mark).await.ok()?;
        server.write_all(&first).await.ok()?;
    }
    let (up, down) = proxy::serve(client, server, o).await;
    Some((bound, up, down))
}

fn word(rec: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(rec.get(at..at + 4)?.try_into().ok()?))
}

/// A CALL of EFS's bind procedure (RFC 5531 header: xid, CALL, rpcvers 2,
/// program, version, procedure).
fn is_bind_call(rec: &[u8]) -> bool {
    [0, 2, PROGRAM, VERSION, PROC_BIND]
        .iter()
        .enumerate()
        .all(|(i, &w)| word(rec, 4 + 4 * i) == Some(w))
}

/// The READY reply, record mark included: accepted, SUCCESS, BindResponse
/// READY(partition), ScaleUpConfig {max, 300 MiB/s, 1, 1} (efs-proxy's
/// default threshold; nfsync does not use it).
fn ready_reply(xid: u32, partition: &[u8; 64], max_conns: i32) -> Vec<u8> {
    let mut b = Vec::with_capacity(112);
    b.extend_from_slice(&(0x8000_0000u32 | 108).to_be_bytes());
    for w in [xid, 1, 0, 0, 0, 0, 3] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    b.extend_from_slice(partition);
    for w in [max_conns, 314_572_800, 1, 1] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The golden records of shared/efs-protocols.md §2.3 (encoded with
    /// efs-proxy's own XDR code).
    #[test]
    fn bind_call_and_ready_reply_match_efs_proxy() {
        let call = unhex(
            "8000004800000001000000000000000200061afb0000000100000002000000000000000000000000\
             000000000000001000000000000000000000000000000001000000080000000000000001",
        );
        assert!(is_bind_call(&call[4..]));
        let mut nfs = call[4..].to_vec();
        nfs[12..16].copy_from_slice(&100_003u32.to_be_bytes());
        assert!(!is_bind_call(&nfs));
        assert!(!is_bind_call(&call[4..20]));

        let partition: [u8; 64] = std::array::from_fn(|i| i as u8);
        let mut want = unhex(&format!(
            "{}{}0000000512c000000000000100000001",
            "8000006c00000001000000010000000000000000000000000000000000000003",
            (0..64).map(|i| format!("{i:02x}")).collect::<String>()
        ));
        assert_eq!(want.len(), 112);
        assert_eq!(ready_reply(1, &partition, 5), want);
        want[4] = 0xff;
        assert_ne!(ready_reply(1, &partition, 5), want);
    }
}

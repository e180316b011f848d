//! The bytes on the wire: RFC 5531 record marking and reply decoding.
//!
//! Every byte here comes from the server and is untrusted: a record's size is checked
//! against [`MAX_RECORD`] before anything is allocated, every length inside it against
//! the record before `nfs3_types` decodes it ([`super::shape`]), and whatever does not
//! decode is an error, never a panic.

use std::io::{self, Cursor};
use std::net::SocketAddr;

use nfs3_types::rpc::{accept_stat_data, msg_body, rejected_reply, reply_body, rpc_msg};
use nfs3_types::xdr_codec::Unpack;
use tokio::io::AsyncReadExt;

use super::error::RpcError;
use super::shape::{Shape, check_reply};

/// Largest reply record accepted (all fragments together). Our biggest replies are
/// READ and READDIRPLUS, whose sizes we choose (at most 1 MiB of data); anything much
/// larger is a broken or hostile server and must not make us allocate.
pub const MAX_RECORD: usize = 4 << 20;

/// Reads one RFC 5531 record (all its fragments), refusing oversized ones.
pub async fn read_record<R: tokio::io::AsyncRead + Unpin>(rd: &mut R) -> io::Result<Vec<u8>> {
    let mut rec = Vec::new();
    loop {
        let mark = rd.read_u32().await?;
        let len = (mark & 0x7fff_ffff) as usize;
        if rec.len() + len > MAX_RECORD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("record of more than {MAX_RECORD} bytes"),
            ));
        }
        let start = rec.len();
        rec.resize(start + len, 0);
        rd.read_exact(&mut rec[start..]).await?;
        if mark & 0x8000_0000 != 0 {
            return Ok(rec);
        }
    }
}

/// Decodes a reply record: RPC header checks, then the result. The record is walked
/// first, so no length the server declares can make the decoder allocate past it.
pub fn decode_reply<R: Unpack + Shape>(
    addr: SocketAddr,
    xid: u32,
    bytes: &[u8],
) -> Result<R, RpcError> {
    let garbage = |what: String| RpcError::Garbage { addr, what };
    check_reply::<R>(bytes).map_err(|e| garbage(e.to_string()))?;
    let mut cur = Cursor::new(bytes);
    let (msg, _) = rpc_msg::unpack(&mut cur).map_err(|e| garbage(format!("bad header: {e}")))?;
    if msg.xid != xid {
        return Err(garbage(format!("xid {} for call {xid}", msg.xid)));
    }
    let accepted = match msg.body {
        msg_body::REPLY(reply_body::MSG_ACCEPTED(a)) => a,
        msg_body::REPLY(reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(stat))) => {
            return Err(RpcError::Auth { addr, stat });
        }
        msg_body::REPLY(reply_body::MSG_DENIED(rejected_reply::RPC_MISMATCH { .. })) => {
            return Err(RpcError::Unavailable {
                addr,
                what: "RPC version mismatch".into(),
            });
        }
        msg_body::CALL(_) => return Err(garbage("a CALL instead of a reply".into())),
    };
    let what = match accepted.reply_data {
        accept_stat_data::SUCCESS => None,
        accept_stat_data::PROG_UNAVAIL => Some("program not available".to_string()),
        accept_stat_data::PROG_MISMATCH { low, high } => Some(format!(
            "program version not served (server has {low}..={high})"
        )),
        accept_stat_data::PROC_UNAVAIL => Some("procedure not available".into()),
        accept_stat_data::GARBAGE_ARGS => Some("server could not decode our arguments".into()),
        accept_stat_data::SYSTEM_ERR => Some("server system error".into()),
    };
    if let Some(what) = what {
        return Err(RpcError::Unavailable { addr, what });
    }
    let (res, _) = R::unpack(&mut cur).map_err(|e| garbage(format!("bad result: {e}")))?;
    if cur.position() as usize != bytes.len() {
        return Err(garbage("trailing bytes after the result".into()));
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn record_marking_joins_fragments_and_caps_size() {
        let mut data = Vec::new();
        data.extend_from_slice(&3u32.to_be_bytes());
        data.extend_from_slice(b"abc");
        data.extend_from_slice(&(0x8000_0000u32 | 2).to_be_bytes());
        data.extend_from_slice(b"de");
        let mut r = &data[..];
        assert_eq!(read_record(&mut r).await.unwrap(), b"abcde");

        let huge = (0x8000_0000u32 | (MAX_RECORD as u32 + 1)).to_be_bytes();
        let mut r = &huge[..];
        assert!(read_record(&mut r).await.is_err());
    }

    #[test]
    fn garbage_reply_is_an_error_not_a_panic() {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        for bytes in [
            &b""[..],
            b"\0\0\0\x01",
            b"\0\0\0\x01\0\0\0\x01\0\0\0\x07",
            &[0xff; 64],
        ] {
            assert!(decode_reply::<u32>(addr, 1, bytes).is_err());
        }
    }
}

//! EFS's `bind_client_to_partition` call (AWS RPC program 400123, procedure 2) and its
//! reply, as efs-proxy (aws/efs-utils) sends it as the first record of every connection
//! to an EFS mount target.
//!
//! EFS keeps a client's NFS state in one partition of the file system's servers; the
//! reply names the partition the connection landed on (READY) or asks the client to go
//! elsewhere. A client that spreads one NFSv4.1 session over several connections must
//! bind each of them and keep only those on the same partition ([`super::partition`]
//! applies those rules). Encoded and decoded by hand (RFC 4506): the layouts are small,
//! and every length from the server is checked against the record.

/// AWS's RPC program on EFS mount targets, and its version.
pub const PROGRAM: u32 = 400_123;
/// Version of [`PROGRAM`].
pub const VERSION: u32 = 1;
/// `bind_client_to_partition`.
pub const PROC_BIND: u32 = 2;
/// Bytes in a partition id (a fixed-size opaque).
pub const PARTITION_ID_LEN: usize = 64;
/// Largest message string accepted in a reply.
const MAX_MESSAGE: usize = 1024;

/// Who is binding: one random id per run, and which set of connections this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyIdentifier {
    /// A UUIDv4, fixed for the whole run (all connections send the same).
    pub identifier: [u8; 16],
    /// 1 for the first set of connections, one more for each set rebuilt from scratch.
    pub incarnation: i64,
}

/// A partition's id, as READY and PREFERRED name it.
pub type PartitionId = [u8; PARTITION_ID_LEN];

/// What EFS answered to a bind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindResponse {
    /// Try again with a new connection.
    Retry(String),
    /// Stop adding connections for now.
    RetryLater(String),
    /// This connection is usable, but another partition is preferred.
    Preferred(PartitionId),
    /// The connection is bound to this partition.
    Ready(PartitionId),
    /// EFS refused the bind.
    Error(String),
    /// A type this client does not know, with no body: efs-proxy's XDR enum has a
    /// `default` arm for it, and uses the connection without a partition.
    Unknown(u32),
}

/// How efs-proxy may scale up: the server's advice, sent with every answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleUpConfig {
    /// Connections a client may bind to one partition.
    pub max_multiplexed_connections: i32,
    /// Throughput above which efs-proxy adds connections (its unit has changed between
    /// efs-utils versions; not used by nfsync).
    pub scale_up_bytes_per_sec_threshold: i32,
    /// Unused by efs-proxy too.
    pub scale_up_threshold_breached_duration_sec: i32,
    /// Unused by efs-proxy too.
    pub scale_up_lookback_window_size_sec: i32,
}

/// A decoded `BindClientResponse`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindReply {
    /// The answer.
    pub response: BindResponse,
    /// The server's advice on connections.
    pub config: ScaleUpConfig,
}

/// Why a reply is not a [`BindReply`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindReplyError {
    /// The server answered at the RPC level (PROG_UNAVAIL, denied, …): it does not
    /// speak the program, so it is not EFS.
    #[error("the server does not serve EFS's bind call: {0}")]
    NotServed(String),
    /// The reply does not decode, or is not for our call.
    #[error("bad reply to EFS's bind call: {0}")]
    Garbage(String),
}

/// The bind call, record mark included.
pub fn encode_call(xid: u32, id: &ProxyIdentifier) -> Vec<u8> {
    let mut b = Vec::with_capacity(76);
    b.extend_from_slice(&0u32.to_be_bytes()); // record mark, filled in below
    for w in [xid, 0, 2, PROGRAM, VERSION, PROC_BIND, 0, 0, 0, 0] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    b.extend_from_slice(&16u32.to_be_bytes());
    b.extend_from_slice(&id.identifier);
    b.extend_from_slice(&8u32.to_be_bytes());
    b.extend_from_slice(&id.incarnation.to_be_bytes());
    let len = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&(0x8000_0000 | len).to_be_bytes());
    b
}

/// Reads XDR from a record, every length checked against what is left.
struct Xdr<'a> {
    rest: &'a [u8],
}

impl<'a> Xdr<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], BindReplyError> {
        if self.rest.len() < n {
            return Err(BindReplyError::Garbage(format!("{what} cut short")));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u32(&mut self, what: &str) -> Result<u32, BindReplyError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i32(&mut self, what: &str) -> Result<i32, BindReplyError> {
        Ok(self.u32(what)? as i32)
    }

    /// A variable-length opaque of at most `max` bytes, padding skipped.
    fn opaque(&mut self, max: usize, what: &str) -> Result<&'a [u8], BindReplyError> {
        let len = self.u32(what)? as usize;
        if len > max {
            return Err(BindReplyError::Garbage(format!(
                "{what} of {len} bytes (at most {max})"
            )));
        }
        let data = self.take(len, what)?;
        self.take((4 - len % 4) % 4, what)?;
        Ok(data)
    }

    fn string(&mut self, what: &str) -> Result<String, BindReplyError> {
        Ok(String::from_utf8_lossy(self.opaque(MAX_MESSAGE, what)?).into_owned())
    }

    fn partition(&mut self) -> Result<PartitionId, BindReplyError> {
        let mut id = [0u8; PARTITION_ID_LEN];
        id.copy_from_slice(self.take(PARTITION_ID_LEN, "partition id")?);
        Ok(id)
    }
}

/// Decodes the reply record (record mark removed) to the call with `xid`.
pub fn decode_reply(xid: u32, record: &[u8]) -> Result<BindReply, BindReplyError> {
    let garbage = |s: &str| BindReplyError::Garbage(s.to_string());
    let mut x = Xdr { rest: record };
    let got = x.u32("xid")?;
    if got != xid {
        return Err(BindReplyError::Garbage(format!("xid {got} for call {xid}")));
    }
    if x.u32("message type")? != 1 {
        return Err(garbage("not a reply"));
    }
    match x.u32("reply status")? {
        0 => {}
        1 => {
            let why = match x.u32("reject status")? {
                0 => "RPC version mismatch",
                _ => "authentication refused",
            };
            return Err(BindReplyError::NotServed(why.to_string()));
        }
        s => return Err(BindReplyError::Garbage(format!("reply status {s}"))),
    }
    x.u32("verifier flavor")?;
    x.opaque(400, "verifier")?;
    let what = match x.u32("accept status")? {
        0 => None,
        1 => Some("program not available"),
        2 => Some("program version not served"),
        3 => Some("procedure not available"),
        4 => Some("server could not decode the arguments"),
        5 => Some("server system error"),
        _ => Some("unknown accept status"),
    };
    if let Some(what) = what {
        return Err(BindReplyError::NotServed(what.to_string()));
    }
    let response = match x.u32("bind response type")? {
        0 => BindResponse::Retry(x.string("retry message")?),
        1 => BindResponse::RetryLater(x.string("retry-later message")?),
        2 => BindResponse::Preferred(x.partition()?),
        3 => BindResponse::Ready(x.partition()?),
        4 => BindResponse::Error(x.string("error message")?),
        t => BindResponse::Unknown(t),
    };
    let config = ScaleUpConfig {
        max_multiplexed_connections: x.i32("scale-up config")?,
        scale_up_bytes_per_sec_threshold: x.i32("scale-up config")?,
        scale_up_threshold_breached_duration_sec: x.i32("scale-up config")?,
        scale_up_lookback_window_size_sec: x.i32("scale-up config")?,
    };
    // Bytes after the reply are left unread, as efs-proxy's decoder leaves them
    // (`parse_bind_client_to_partition_response` unpacks the reply from a cursor and
    // looks no further): a newer EFS may add fields.
    Ok(BindReply { response, config })
}

/// The reply record to `xid` (record mark included), as an EFS server would send it:
/// for tests and fakes of EFS.
pub fn encode_reply(xid: u32, reply: &BindReply) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0u32.to_be_bytes());
    for w in [xid, 1, 0, 0, 0, 0] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    let string = |b: &mut Vec<u8>, s: &str| {
        b.extend_from_slice(&(s.len() as u32).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
        b.resize(b.len() + (4 - s.len() % 4) % 4, 0);
    };
    match &reply.response {
        BindResponse::Retry(m) => {
            b.extend_from_slice(&0u32.to_be_bytes());
            string(&mut b, m);
        }
        BindResponse::RetryLater(m) => {
            b.extend_from_slice(&1u32.to_be_bytes());
            string(&mut b, m);
        }
        BindResponse::Preferred(id) => {
            b.extend_from_slice(&2u32.to_be_bytes());
            b.extend_from_slice(id);
        }
        BindResponse::Ready(id) => {
            b.extend_from_slice(&3u32.to_be_bytes());
            b.extend_from_slice(id);
        }
        BindResponse::Error(m) => {
            b.extend_from_slice(&4u32.to_be_bytes());
            string(&mut b, m);
        }
        BindResponse::Unknown(t) => b.extend_from_slice(&t.to_be_bytes()),
    }
    let c = &reply.config;
    for w in [
        c.max_multiplexed_connections,
        c.scale_up_bytes_per_sec_threshold,
        c.scale_up_threshold_breached_duration_sec,
        c.scale_up_lookback_window_size_sec,
    ] {
        b.extend_from_slice(&w.to_be_bytes());
    }
    let len = (b.len() - 4) as u32;
    b[..4].copy_from_slice(&(0x8000_0000 | len).to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const CONFIG: ScaleUpConfig = ScaleUpConfig {
        max_multiplexed_connections: 5,
        scale_up_bytes_per_sec_threshold: 314_572_800,
        scale_up_threshold_breached_duration_sec: 1,
        scale_up_lookback_window_size_sec: 1,
    };

    /// Golden bytes encoded with efs-proxy's own XDR code (efs-protocols.md §2.3).
    #[test]
    fn the_call_is_efs_proxys_byte_for_byte() {
        let mut identifier = [0u8; 16];
        identifier[15] = 1;
        let id = ProxyIdentifier {
            identifier,
            incarnation: 1,
        };
        assert_eq!(
            encode_call(1, &id),
            hex(
                "8000004800000001000000000000000200061afb00000001000000020000000000000000000000\
                 00000000000000001000000000000000000000000000000001000000080000000000000001"
            )
        );
    }

    #[test]
    fn ready_and_retry_later_golden_replies_decode() {
        let mut ready = hex("8000006c00000001000000010000000000000000000000000000000000000003");
        ready.extend(0u8..64);
        ready.extend(hex("0000000512c000000000000100000001"));
        let mut id = [0u8; 64];
        for (i, b) in id.iter_mut().enumerate() {
            *b = i as u8;
        }
        let want = BindReply {
            response: BindResponse::Ready(id),
            config: CONFIG,
        };
        assert_eq!(decode_reply(1, &ready[4..]), Ok(want.clone()));
        assert_eq!(encode_reply(1, &want), ready);

        let later = hex(
            "800000340000000100000001000000000000000000000000000000000000000100000004627573\
             790000000512c000000000000100000001",
        );
        let want = BindReply {
            response: BindResponse::RetryLater("busy".into()),
            config: CONFIG,
        };
        assert_eq!(decode_reply(1, &later[4..]), Ok(want.clone()));
        assert_eq!(encode_reply(1, &want), later);
    }

    #[test]
    fn every_answer_round_trips() {
        for response in [
            BindResponse::Retry(String::new()),
            BindResponse::Retry("again".into()),
            BindResponse::Preferred([7; 64]),
            BindResponse::Ready([9; 64]),
            BindResponse::Error("no such file system".into()),
            // A type efs-proxy's `default` arm takes: no body, the config after it.
            BindResponse::Unknown(9),
        ] {
            let r = BindReply {
                response,
                config: CONFIG,
            };
            assert_eq!(decode_reply(42, &encode_reply(42, &r)[4..]), Ok(r));
        }
    }

    /// A server that is not EFS answers at the RPC level.
    #[test]
    fn rpc_level_answers_mean_not_served() {
        for (words, what) in [
            (&[7u32, 1, 0, 0, 0, 1][..], "program not available"),
            (&[7, 1, 0, 0, 0, 2, 1, 1], "program version not served"),
            (&[7, 1, 0, 0, 0, 3], "procedure not available"),
            (&[7, 1, 0, 0, 0, 4], "server could not decode the arguments"),
            (&[7, 1, 1, 1, 1], "authentication refused"),
            (&[7, 1, 1, 0, 2, 2], "RPC version mismatch"),
        ] {
            let rec: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
            assert_eq!(
                decode_reply(7, &rec),
                Err(BindReplyError::NotServed(what.into()))
            );
        }
    }

    #[test]
    fn bad_replies_are_errors_not_panics() {
        let good = encode_reply(
            3,
            &BindReply {
                response: BindResponse::Error("x".into()),
                config: CONFIG,
            },
        );
        for n in 0..good.len() - 4 {
            assert!(decode_reply(3, &good[4..4 + n]).is_err(), "cut at {n}");
        }
        assert!(matches!(
            decode_reply(4, &good[4..]),
            Err(BindReplyError::Garbage(_))
        ));
        // Trailing bytes are left unread, as efs-proxy leaves them.
        let mut long = good[4..].to_vec();
        long.extend_from_slice(&[0, 0, 0, 7]);
        assert_eq!(decode_reply(3, &long), decode_reply(3, &good[4..]));
        let mut huge = good[4..28].to_vec();
        huge.extend_from_slice(&4u32.to_be_bytes());
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_reply(3, &huge).is_err());
    }
}

//! An NFSv4.1 session: who we are to the server, and the slots our calls go through.
//!
//! Every COMPOUND starts with SEQUENCE naming a slot and that slot's next sequence id;
//! the server keeps the last reply of each slot, so a call re-sent on the same slot
//! and sequence id after a lost connection is answered from that cache instead of
//! being run twice. That is the exactly-once NFSv3 never had, and why a slot carries
//! one call at a time: the number of slots the server grants is the window.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use nfs3_types::xdr_codec::Opaque;
use tokio::sync::{Semaphore, SemaphorePermit};

use super::proto::{
    ChannelAttrs, ClientOwner, Compound, CreateSessionArgs, ExchangeIdArgs, Op, PROC_COMPOUND,
    SequenceArgs, SessionId, status,
};
use super::reply::{Reply, Res};
use crate::nfs::rpc::{RpcClient, RpcError};

/// EXCHGID4_FLAG_USE_NON_PNFS: we want plain NFSv4.1 service, not pNFS roles.
const USE_NON_PNFS: u32 = 0x0001_0000;
/// Requests up to a 1 MiB WRITE plus its compound's other operations.
const MAX_REQUEST: u32 = (1 << 20) + 64 * 1024;
/// Operations in one compound: a small file's create, write, date and close with
/// room for a few of them together.
const MAX_OPS: u32 = 32;

/// Why a session could not be set up or a compound not be sent.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The transport failed (see [`RpcError`]).
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The server answered the named operation with an error status.
    #[error("{op} failed: NFSv4 status {status}")]
    Status { op: &'static str, status: u32 },
    /// The server's reply does not answer what was asked.
    #[error("{0}")]
    Protocol(String),
}

/// One slot's state.
#[derive(Clone, Copy, Debug)]
struct Slot {
    busy: bool,
    /// The sequence id of the last call sent on it.
    seq: u32,
}

/// An established session.
pub struct Session {
    rpc: Arc<RpcClient>,
    /// The set of connections it lives on ([`RpcClient::generation`]): EFS keeps a
    /// session in one partition, so it is never sent on another set.
    generation: u64,
    client_id: u64,
    id: SessionId,
    /// What the server granted for the fore channel.
    pub fore: ChannelAttrs,
    slots: Mutex<Vec<Slot>>,
    free: Semaphore,
}

/// A slot held for one call, with the sequence id that call uses; freed on drop.
pub struct SlotGuard<'s> {
    session: &'s Session,
    index: usize,
    seq: u32,
    _permit: SemaphorePermit<'s>,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.session.slots.lock() {
            slots[self.index].busy = false;
        }
    }
}

impl SlotGuard<'_> {
    /// The server did not take the call on this slot (SEQUENCE itself failed, so the
    /// slot's sequence id did not advance there): the next call reuses the id.
    pub fn not_taken(&mut self) {
        if let Ok(mut slots) = self.session.slots.lock() {
            slots[self.index].seq = self.seq.wrapping_sub(1);
        }
    }
}

impl Session {
    /// EXCHANGE_ID, CREATE_SESSION asking for `want_slots` slots, RECLAIM_COMPLETE.
    pub async fn establish(rpc: Arc<RpcClient>, want_slots: u32) -> Result<Session, SessionError> {
        let generation = rpc.generation();
        let (client_id, sequence) = exchange_id(&rpc).await?;
        let fore = ChannelAttrs {
            header_pad_size: 0,
            max_request_size: MAX_REQUEST,
            max_response_size: MAX_REQUEST,
            max_response_size_cached: 8 * 1024,
            max_operations: MAX_OPS,
            max_requests: want_slots.max(1),
            rdma_ird_count: 0,
        };
        let back = ChannelAttrs {
            header_pad_size: 0,
            max_request_size: 4096,
            max_response_size: 4096,
            max_response_size_cached: 0,
            max_operations: 2,
            max_requests: 1,
            rdma_ird_count: 0,
        };
        let args = CreateSessionArgs {
            client_id,
            sequence,
            flags: 0,
            fore,
            back,
            cb_program: 0x4000_0000,
            sec_parms_count: 1,
            sec_parms_flavor: 0,
        };
        let reply = send(&rpc, vec![Op::CreateSession(args)]).await?;
        let (id, fore) = match first_ok(&reply, "CREATE_SESSION")? {
            Res::CreateSession { session, fore } => (*session, *fore),
            r => return Err(unexpected("CREATE_SESSION", r)),
        };
        let n = fore.max_requests.clamp(1, 1024) as usize;
        let session = Session {
            rpc,
            generation,
            client_id,
            id,
            fore,
            slots: Mutex::new(vec![
                Slot {
                    busy: false,
                    seq: 0
                };
                n
            ]),
            free: Semaphore::new(n),
        };
        // ganesha answers OPEN with GRACE until the client says it has nothing to reclaim.
        let mut slot = session.slot().await;
        let r = session
            .send_on(&mut slot, &[Op::ReclaimComplete(false)], false)
            .await?;
        drop(slot);
        if r.results
            .first()
            .is_some_and(|(_, st, _)| *st != status::OK)
        {
            return Err(SessionError::Status {
                op: "SEQUENCE",
                status: r.results[0].1,
            });
        }
        // A server that restarted may say our reclaim is already complete.
        if r.status != status::OK && r.status != COMPLETE_ALREADY {
            ok_all(&r, "RECLAIM_COMPLETE")?;
        }
        Ok(session)
    }

    /// Whether the connections it lived on are gone for a new set (a new session is
    /// needed: see [`Session::establish`]).
    pub fn moved(&self) -> bool {
        self.rpc.generation() != self.generation
    }

    /// Our client id, which open owners name.
    pub fn client_id(&self) -> u64 {
        self.client_id
    }

    /// How many calls may be in flight: the slots granted.
    pub fn slots(&self) -> usize {
        self.slots.lock().map_or(1, |s| s.len())
    }

    /// Waits for a free slot and takes its next sequence id.
    pub async fn slot(&self) -> SlotGuard<'_> {
        let permit = self.free.acquire().await.expect("never closed");
        let mut slots = self.slots.lock().expect("slot table");
        let index = slots
            .iter()
            .position(|s| !s.busy)
            .expect("a permit means a free slot");
        slots[index].busy = true;
        slots[index].seq = slots[index].seq.wrapping_add(1);
        SlotGuard {
            session: self,
            index,
            seq: slots[index].seq,
            _permit: permit,
        }
    }

    /// Sends SEQUENCE (on `slot`) and `ops` as one COMPOUND. Sending again on the same
    /// guard re-sends with the same sequence id: the server answers a call it already
    /// ran from its reply cache instead of running it twice (with `cache` set; without,
    /// it may answer RETRY_UNCACHED_REP).
    pub async fn send_on(
        &self,
        slot: &mut SlotGuard<'_>,
        ops: &[Op],
        cache: bool,
    ) -> Result<Reply, SessionError> {
        let highest = self.slots() - 1;
        let call = Compound {
            first: Some(Op::Sequence(SequenceArgs {
                session: self.id,
                sequence: slot.seq,
                slot: slot.index as u32,
                highest_slot: highest as u32,
                cache_this: cache,
            })),
            ops,
        };
        let reply = self
            .rpc
            .call_within::<Compound, Reply>(self.generation, PROC_COMPOUND, &call)
            .await?;
        match reply.results.first() {
            Some((53, _, _)) => Ok(reply),
            _ => Err(SessionError::Protocol(
                "the server's reply does not start with SEQUENCE".into(),
            )),
        }
    }

    /// DESTROY_SESSION then DESTROY_CLIENTID: the server frees our state now rather
    /// than when the lease runs out.
    pub async fn destroy(&self) -> Result<(), SessionError> {
        let r = send(&self.rpc, vec![Op::DestroySession(self.id)]).await?;
        ok_all(&r, "DESTROY_SESSION")?;
        let r = send(&self.rpc, vec![Op::DestroyClientId(self.client_id)]).await?;
        ok_all(&r, "DESTROY_CLIENTID")
    }
}

/// NFS4ERR_COMPLETE_ALREADY.
const COMPLETE_ALREADY: u32 = 10054;

/// One COMPOUND, as is.
async fn send(rpc: &RpcClient, ops: Vec<Op>) -> Result<Reply, SessionError> {
    Ok(rpc
        .call::<Compound, Reply>(PROC_COMPOUND, &Compound::of(&ops))
        .await?)
}

/// EXCHANGE_ID with an owner no other run shares: (client id, sequence id).
async fn exchange_id(rpc: &RpcClient) -> Result<(u64, u32), SessionError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let host = rustix::system::uname().nodename().to_bytes().to_vec();
    let mut owner = b"nfsync/".to_vec();
    owner.extend_from_slice(&host);
    owner.extend_from_slice(format!("/{}/{}", std::process::id(), now.as_nanos()).as_bytes());
    let args = ExchangeIdArgs {
        owner: ClientOwner {
            verifier: (now.as_nanos() as u64).to_be_bytes(),
            owner_id: Opaque::owned(owner),
        },
        flags: USE_NON_PNFS,
        state_protect: 0,
        impl_id_count: 0,
    };
    let reply = send(rpc, vec![Op::ExchangeId(args)]).await?;
    match first_ok(&reply, "EXCHANGE_ID")? {
        Res::ExchangeId {
            client_id,
            sequence,
            ..
        } => Ok((*client_id, *sequence)),
        r => Err(unexpected("EXCHANGE_ID", r)),
    }
}

/// The first result, which must be OK.
fn first_ok<'r>(reply: &'r Reply, op: &'static str) -> Result<&'r Res, SessionError> {
    match reply.results.first() {
        Some((_, status::OK, r)) => Ok(r),
        Some((_, st, _)) => Err(SessionError::Status { op, status: *st }),
        None => Err(SessionError::Status {
            op,
            status: reply.status,
        }),
    }
}

/// Every operation went through.
pub fn ok_all(reply: &Reply, op: &'static str) -> Result<(), SessionError> {
    if reply.status == status::OK {
        Ok(())
    } else {
        Err(SessionError::Status {
            op,
            status: reply.status,
        })
    }
}

fn unexpected(op: &str, r: &Res) -> SessionError {
    SessionError::Protocol(format!("{op} answered with {r:?}"))
}

//! Peer transport: the tonic `Peer` service (incoming Raft messages and forwarded writes)
//! and one sending task per peer with a lazily (re)connecting client.

use super::PeerTx;
use super::raft_actor::{Propose, ProposeError, RaftActor, Step};
use crate::propose::WriteError;
use actix::Addr;
use proto::peer::peer_client::PeerClient;
use proto::peer::peer_server::{Peer, PeerServer};
use proto::peer::{
    Ack, NotLeader, ProposeReply, ProposeRequest, RaftBatch, RaftChunk, propose_reply,
};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

/// Largest gRPC message accepted or sent.
pub const MAX_MESSAGE: usize = 64 * 1024 * 1024;
/// Messages larger than this go through `SendLarge` in chunks.
pub const LARGE: usize = 3 * 1024 * 1024;
/// Chunk size of `SendLarge`.
pub const CHUNK: usize = 1024 * 1024;
/// How long a forwarded or local proposal may take before the caller gives up.
pub const PROPOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a follower waits for the leader's answer to a forwarded write: longer than the
/// leader's own [`PROPOSE_TIMEOUT`], so that the leader's answer (commit unknown included)
/// comes back before the follower gives up.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);

/// Bound on establishing a connection to the leader for a forwarded write (TCP, TLS).
pub const FORWARD_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A client to `addr` connected now, for a forwarded write: a failure here means nothing was
/// sent. Calls on it time out after [`FORWARD_TIMEOUT`].
pub async fn connect_for_write(addr: &str) -> Result<Channel, String> {
    let ep = crate::tls::endpoint(addr)
        .map_err(|e| e.to_string())?
        .connect_timeout(FORWARD_CONNECT_TIMEOUT)
        .timeout(FORWARD_TIMEOUT)
        .tcp_nodelay(true);
    match tokio::time::timeout(FORWARD_CONNECT_TIMEOUT, ep.connect()).await {
        Ok(Ok(ch)) => Ok(ch),
        Ok(Err(e)) => Err(format!("{e} ({:?})", std::error::Error::source(&e))),
        Err(_) => Err(format!("no connection within {FORWARD_CONNECT_TIMEOUT:?}")),
    }
}

/// A lazily connecting client to `addr` (reconnects by itself after failures).
pub fn channel(addr: &str) -> Result<Channel, tonic::transport::Error> {
    Ok(crate::tls::endpoint(addr)?
        .connect_timeout(Duration::from_millis(300))
        .timeout(Duration::from_secs(2))
        .tcp_nodelay(true)
        .connect_lazy())
}

/// Starts one sending task per peer (other than `self_id`) on the current tokio runtime.
pub fn spawn_senders(self_id: u64, peers: &BTreeMap<u64, String>) -> PeerTx {
    let mut tx = PeerTx::default();
    for (&id, addr) in peers {
        if id == self_id {
            continue;
        }
        let (q, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        tx.queues.insert(id, q);
        let addr = addr.clone();
        tokio::spawn(async move {
            let ch = match channel(&addr) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("E_NODE_PEER: peer {id} at {addr}: {e}");
                    return;
                }
            };
            let mut client = PeerClient::new(ch)
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE);
            let mut failing = false;
            let mut next_large = 0u64;
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                let mut size = batch[0].len();
                while size < LARGE {
                    match rx.try_recv() {
                        Ok(m) => {
                            size += m.len();
                            batch.push(m);
                        }
                        Err(_) => break,
                    }
                }
                let (large, small): (Vec<_>, Vec<_>) =
                    batch.into_iter().partition(|m| m.len() > LARGE);
                let mut res = Ok(());
                if !small.is_empty() {
                    res = client
                        .send(RaftBatch {
                            from: self_id,
                            to: id,
                            messages: small,
                        })
                        .await
                        .map(|_| ());
                }
                for m in large {
                    next_large += 1;
                    let chunks = chunks_of(self_id, id, next_large, &m);
                    let r = client
                        .send_large(tokio_stream_iter(chunks))
                        .await
                        .map(|_| ());
                    if r.is_err() {
                        res = r;
                    }
                }
                match res {
                    Ok(()) if failing => {
                        tracing::info!("peer {id} at {addr} reachable again");
                        failing = false;
                    }
                    Err(e) if !failing => {
                        tracing::warn!("E_NODE_PEER: peer {id} at {addr}: {}", e.message());
                        failing = true;
                    }
                    _ => {}
                }
            }
        });
    }
    tx
}

/// `SendLarge` chunks of message `m` (number `message_id` from `from` to `to`): [`CHUNK`]
/// bytes each, numbered from 0, the last one marked.
pub fn chunks_of(from: u64, to: u64, message_id: u64, m: &[u8]) -> Vec<RaftChunk> {
    m.chunks(CHUNK)
        .enumerate()
        .map(|(i, c)| RaftChunk {
            from,
            to,
            message_id,
            seq: i as u32,
            last: (i + 1) * CHUNK >= m.len(),
            data: c.to_vec(),
        })
        .collect()
}

/// The message a `SendLarge` stream to replica `to` carries: its chunks in order (seq 0, 1,
/// ...) of one message id, up to the one marked last.
pub async fn reassemble<S>(to: u64, mut s: S) -> Result<Vec<u8>, Status>
where
    S: futures_util::Stream<Item = Result<RaftChunk, Status>> + Unpin,
{
    use futures_util::StreamExt;
    let mut buf = Vec::new();
    let mut want = 0u32;
    let mut id = None;
    while let Some(c) = s.next().await {
        let c = c?;
        if c.to != to || c.seq != want || id.is_some_and(|i| i != c.message_id) {
            return Err(Status::invalid_argument("E_NODE_PEER: chunk out of order"));
        }
        id = Some(c.message_id);
        want += 1;
        buf.extend_from_slice(&c.data);
        if c.last {
            return Ok(buf);
        }
    }
    Err(Status::invalid_argument(
        "E_NODE_PEER: stream ended before the last chunk",
    ))
}

fn tokio_stream_iter(v: Vec<RaftChunk>) -> impl futures_util::Stream<Item = RaftChunk> + Send {
    futures_util::stream::iter(v)
}

/// The `Peer` service of one replica.
pub struct PeerService {
    /// This replica's id.
    pub id: u64,
    /// Its RaftActor.
    pub raft: Addr<RaftActor>,
}

/// Proposes `cmd` here and waits for its apply result. Refused (nothing proposed): the
/// actor is gone or the core refused it (not the leader, stopping, raft dropped it).
/// Proposed but unanswered: [`WriteError::CommitUnknown`] when no answer comes within
/// [`PROPOSE_TIMEOUT`] or the answer is dropped (the core's `Output::Dropped` after the
/// request's time to live, leadership lost, the replica stopping on a storage error after the
/// entry may have reached a quorum).
pub async fn propose_local(
    raft: &Addr<RaftActor>,
    cmd: proto::state::Command,
) -> Result<proto::state::ApplyResult, WriteError> {
    let rx = raft
        .send(Propose(cmd))
        .await
        .map_err(|e| ProposeError::Failed(format!("raft actor: {e}")))??;
    match tokio::time::timeout(PROPOSE_TIMEOUT, rx).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(_)) => Err(WriteError::CommitUnknown(
            "the replica dropped the proposal's answer (leadership changed, or the replica \
             stopped)"
                .into(),
        )),
        Err(_) => Err(WriteError::CommitUnknown(format!(
            "proposed, not answered within {PROPOSE_TIMEOUT:?} (no quorum?)"
        ))),
    }
}

#[tonic::async_trait]
impl Peer for PeerService {
    async fn send(&self, req: Request<RaftBatch>) -> Result<Response<Ack>, Status> {
        let b = req.into_inner();
        if b.to != self.id {
            return Err(Status::invalid_argument(format!(
                "E_NODE_PEER: batch for replica {} reached replica {}",
                b.to, self.id
            )));
        }
        let n = b.messages.len() as u32;
        self.raft
            .try_send(Step(b.messages))
            .map_err(|e| Status::unavailable(format!("raft actor: {e}")))?;
        Ok(Response::new(Ack { received: n }))
    }

    async fn send_large(
        &self,
        req: Request<tonic::Streaming<RaftChunk>>,
    ) -> Result<Response<Ack>, Status> {
        let m = reassemble(self.id, req.into_inner()).await?;
        self.raft
            .try_send(Step(vec![m]))
            .map_err(|e| Status::unavailable(format!("raft actor: {e}")))?;
        Ok(Response::new(Ack { received: 1 }))
    }

    async fn forward(
        &self,
        req: Request<ProposeRequest>,
    ) -> Result<Response<ProposeReply>, Status> {
        let r = req.into_inner();
        let cmd = r
            .command
            .ok_or_else(|| Status::invalid_argument("forward without a command"))?;
        let result = match propose_local(&self.raft, cmd).await {
            Ok(a) => propose_reply::Result::Applied(a),
            Err(WriteError::Refused(ProposeError::NotLeader {
                leader_id,
                leader_address,
            })) => propose_reply::Result::NotLeader(NotLeader {
                leader_id,
                leader_address,
            }),
            Err(WriteError::Refused(e)) => propose_reply::Result::Failed(e.to_string()),
            Err(WriteError::CommitUnknown(m)) => propose_reply::Result::CommitUnknown(m),
        };
        Ok(Response::new(ProposeReply {
            result: Some(result),
        }))
    }
}

/// The `Peer` server for `svc`, with the raised message limit.
pub fn peer_server(svc: PeerService) -> PeerServer<PeerService> {
    PeerServer::new(svc)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}

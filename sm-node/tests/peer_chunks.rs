//! The peer transport's large-message path, driven for real: the sending task of
//! `spawn_senders` talks gRPC to a recording `Peer` server on loopback, which reassembles
//! what `SendLarge` brought with the receiver's own `reassemble`.

use proto::peer::peer_server::Peer;
use proto::peer::peer_server::PeerServer;
use proto::peer::{Ack, ProposeReply, ProposeRequest, RaftBatch, RaftChunk};
use sm_node::cluster::net::{CHUNK, LARGE, MAX_MESSAGE, chunks_of, reassemble, spawn_senders};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::sync::mpsc::UnboundedReceiver;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// What the recording server saw.
#[derive(Debug)]
enum Got {
    /// A `Send` batch.
    Batch(RaftBatch),
    /// A `SendLarge` stream: its chunks as they came, and what they reassemble to.
    Large(Vec<RaftChunk>, Result<Vec<u8>, Status>),
}

struct Recorder {
    to: u64,
    tx: mpsc::UnboundedSender<Got>,
}

#[tonic::async_trait]
impl Peer for Recorder {
    async fn send(&self, req: Request<RaftBatch>) -> Result<Response<Ack>, Status> {
        let b = req.into_inner();
        let n = b.messages.len() as u32;
        let _ = self.tx.send(Got::Batch(b));
        Ok(Response::new(Ack { received: n }))
    }

    async fn send_large(
        &self,
        req: Request<tonic::Streaming<RaftChunk>>,
    ) -> Result<Response<Ack>, Status> {
        let mut s = req.into_inner();
        let mut chunks = Vec::new();
        while let Some(c) = s.message().await? {
            chunks.push(c);
        }
        let whole = reassemble(
            self.to,
            futures_util::stream::iter(chunks.clone().into_iter().map(Ok)),
        )
        .await;
        let _ = self.tx.send(Got::Large(chunks, whole));
        Ok(Response::new(Ack { received: 1 }))
    }

    async fn forward(&self, _: Request<ProposeRequest>) -> Result<Response<ProposeReply>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
}

/// Deterministic bytes (a seeded generator), so a misplaced chunk shows.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut r = fabric::rng::SplitMix64::new(seed);
    (0..n).map(|_| r.next_u64() as u8).collect()
}

/// Serves a recorder for replica 2 on a loopback port; returns its address and what it sees.
async fn recorder() -> (String, UnboundedReceiver<Got>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let incoming = TcpIncoming::bind("127.0.0.1:0".parse().unwrap()).expect("bind loopback");
    let addr = incoming.local_addr().expect("local address").to_string();
    let svc = PeerServer::new(Recorder { to: 2, tx })
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(incoming),
    );
    (addr, rx)
}

/// The next thing the server saw; a failure bound, not a synchronisation.
async fn next(rx: &mut UnboundedReceiver<Got>) -> Got {
    tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("the peer server received nothing within 60 s")
        .expect("the recorder is alive")
}

#[test]
fn chunks_are_1_mib_numbered_and_the_last_is_marked() {
    let m = bytes(3 * CHUNK + 17, 1);
    let c = chunks_of(1, 2, 9, &m);
    assert_eq!(
        c.iter().map(|c| c.data.len()).collect::<Vec<_>>(),
        vec![CHUNK, CHUNK, CHUNK, 17]
    );
    assert_eq!(
        c.iter().map(|c| c.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        c.iter().map(|c| c.last).collect::<Vec<_>>(),
        vec![false, false, false, true]
    );
    assert!(c.iter().all(|c| (c.from, c.to, c.message_id) == (1, 2, 9)));
    // An exact multiple of the chunk size: no empty trailing chunk.
    let c = chunks_of(1, 2, 1, &bytes(4 * CHUNK, 2));
    assert_eq!(c.len(), 4);
    assert!(c[3].last && c[3].data.len() == CHUNK);
}

#[tokio::test(flavor = "current_thread")]
async fn reassembly_refuses_what_a_sender_must_not_send() {
    let m = bytes(2 * CHUNK + 5, 3);
    let good = chunks_of(1, 2, 7, &m);
    let run = |v: Vec<RaftChunk>| reassemble(2, futures_util::stream::iter(v.into_iter().map(Ok)));
    assert_eq!(run(good.clone()).await.unwrap(), m);
    // Out of order.
    let mut swapped = good.clone();
    swapped.swap(0, 1);
    let e = run(swapped).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(
        e.message().starts_with("E_NODE_PEER: chunk out of order"),
        "{e}"
    );
    // Two messages mixed.
    let mut mixed = good.clone();
    mixed[1].message_id = 8;
    assert!(run(mixed).await.is_err());
    // For another replica.
    let mut other = good.clone();
    other[0].to = 3;
    assert!(run(other).await.is_err());
    // Cut short.
    let e = run(good[..2].to_vec()).await.unwrap_err();
    assert!(e.message().contains("ended before the last chunk"), "{e}");
    // The stream's own error is the error.
    let failing = futures_util::stream::iter(vec![
        Ok(good[0].clone()),
        Err(Status::aborted("peer went away")),
    ]);
    let e = reassemble(2, failing).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Aborted);
}

/// A message over 3 MiB (a snapshot of a large fabric's state) leaves through `SendLarge` in
/// 1 MiB chunks and arrives whole; smaller ones, up to exactly 3 MiB, go in `Send` batches;
/// each large message gets its own id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_3_mib_goes_in_1_mib_chunks_and_arrives_whole() {
    let (addr, mut rx) = recorder().await;
    let peers = BTreeMap::from([(1, "127.0.0.1:1".to_string()), (2, addr)]);
    let tx = spawn_senders(1, &peers);

    let small = bytes(100, 4);
    let snapshot = bytes(3 * CHUNK + CHUNK / 2 + 17, 5);
    tx.send(2, small.clone());
    tx.send(2, snapshot.clone());
    // The small one goes first (a batch is sent before the large messages it held).
    match next(&mut rx).await {
        Got::Batch(b) => {
            assert_eq!((b.from, b.to), (1, 2));
            assert_eq!(b.messages, vec![small]);
        }
        other => panic!("expected the small message in a batch, got {other:?}"),
    }
    match next(&mut rx).await {
        Got::Large(chunks, whole) => {
            assert_eq!(
                chunks.iter().map(|c| c.data.len()).collect::<Vec<_>>(),
                vec![CHUNK, CHUNK, CHUNK, CHUNK / 2 + 17]
            );
            assert!(chunks.iter().all(|c| c.message_id == 1 && c.to == 2));
            assert_eq!(whole.expect("reassembles"), snapshot);
        }
        other => panic!("expected SendLarge, got {other:?}"),
    }

    // Exactly LARGE bytes is not large.
    let edge = bytes(LARGE, 6);
    tx.send(2, edge.clone());
    match next(&mut rx).await {
        Got::Batch(b) => assert_eq!(b.messages, vec![edge]),
        other => panic!("a message of exactly 3 MiB goes in a batch, got {other:?}"),
    }
    // The next large message is number 2.
    let second = bytes(LARGE + 1, 7);
    tx.send(2, second.clone());
    match next(&mut rx).await {
        Got::Large(chunks, whole) => {
            assert_eq!(chunks.len(), 4);
            assert!(chunks.iter().all(|c| c.message_id == 2));
            assert_eq!(whole.expect("reassembles"), second);
        }
        other => panic!("expected SendLarge, got {other:?}"),
    }
}

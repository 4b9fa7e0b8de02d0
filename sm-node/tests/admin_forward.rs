//! Calls a follower forwards to its leader, and what the client gets when that goes wrong:
//! the leader answers NotLeader (naming another leader, or none), fails the proposal, refuses
//! it, sends an empty reply, never answers, or cannot be reached. Each error is the one the
//! forwarding replica saw, with its code.
//!
//! One real replica (this package's `sm-node`, id 1) whose peers 2 and 3 are played by this
//! test: Raft heartbeats from "2" (a `Peer` server in this process whose `Forward` answer is
//! scripted per case) make replica 1 a follower of 2; heartbeats from "3", whose address
//! nobody listens on, make the leader unreachable. Every wait is a failure bound only.

use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::{ApplyPolicyRequest, ChangeMembershipRequest, ClusterStatusRequest};
use proto::peer::peer_client::PeerClient;
use proto::peer::peer_server::{Peer, PeerServer};
use proto::peer::{
    Ack, NotLeader, ProposeReply, ProposeRequest, RaftBatch, RaftChunk, propose_reply,
};
use proto::state::ApplyResult;
use protobuf::Message as _;
use raft::eraftpb::{Message as RaftMessage, MessageType};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic::transport::server::TcpIncoming;
use tonic::{Code, Request, Response, Status};

const BOUND: Duration = Duration::from_secs(60);
const POLICY: &str = "Default=0x7fff : ALL=full ;\n";

/// What the scripted leader answers to `Forward`.
#[derive(Clone, Debug)]
enum Answer {
    Applied(ApplyResult),
    NotLeader(u64, String),
    Failed(String),
    Empty,
    /// Never answers.
    Hang,
}

#[derive(Clone)]
struct FakeLeader {
    answer: Arc<Mutex<Answer>>,
    seen: Arc<Mutex<Vec<ProposeRequest>>>,
}

#[tonic::async_trait]
impl Peer for FakeLeader {
    async fn send(&self, req: Request<RaftBatch>) -> Result<Response<Ack>, Status> {
        // Replica 1's heartbeat responses and pre-votes: taken, never answered.
        Ok(Response::new(Ack {
            received: req.get_ref().messages.len() as u32,
        }))
    }

    async fn send_large(
        &self,
        req: Request<tonic::Streaming<RaftChunk>>,
    ) -> Result<Response<Ack>, Status> {
        let mut s = req.into_inner();
        while s.message().await?.is_some() {}
        Ok(Response::new(Ack { received: 1 }))
    }

    async fn forward(
        &self,
        req: Request<ProposeRequest>,
    ) -> Result<Response<ProposeReply>, Status> {
        self.seen.lock().unwrap().push(req.into_inner());
        let answer = self.answer.lock().unwrap().clone();
        let result = match answer {
            Answer::Applied(a) => Some(propose_reply::Result::Applied(a)),
            Answer::NotLeader(leader_id, leader_address) => {
                Some(propose_reply::Result::NotLeader(NotLeader {
                    leader_id,
                    leader_address,
                }))
            }
            Answer::Failed(m) => Some(propose_reply::Result::Failed(m)),
            Answer::Empty => None,
            Answer::Hang => std::future::pending().await,
        };
        Ok(Response::new(ProposeReply { result }))
    }
}

/// Replica 1, killed by PID on drop.
struct Replica {
    child: Child,
    dir: PathBuf,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::env::var_os("SMNODE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn free_addr() -> String {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

fn channel(addr: &str) -> Channel {
    // The forwarding replica gives up on a leader within seconds; this client waits longer,
    // so the error it gets is the replica's, never its own timeout.
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .timeout(BOUND)
        .connect_lazy()
}

fn heartbeat(from: u64, term: u64) -> Vec<u8> {
    let mut m = RaftMessage::default();
    m.set_msg_type(MessageType::MsgHeartbeat);
    m.from = from;
    m.to = 1;
    m.term = term;
    m.commit = 0;
    m.write_to_bytes().unwrap()
}

async fn status(a: &mut SmAdminClient<Channel>) -> Option<proto::admin::ClusterStatusReply> {
    a.cluster_status(ClusterStatusRequest::default())
        .await
        .ok()
        .map(|r| r.into_inner())
}

/// Waits (bounded) until replica 1 at `addr` follows `want`; its status.
async fn follows(addr: &str, want: u64) -> proto::admin::ClusterStatusReply {
    let mut a = SmAdminClient::new(channel(addr));
    let t0 = Instant::now();
    loop {
        if let Some(s) = status(&mut a).await
            && s.leader_id == want
            && s.self_id == 1
        {
            return s;
        }
        assert!(t0.elapsed() < BOUND, "replica 1 never followed {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An ApplyPolicy marked as already forwarded (the metadata a replica adds when it passes a
/// call to the leader's admin service): replica 1 then checks and proposes it itself, and
/// the proposal travels to the leader over `Peer.Forward`, the path this test scripts. (An
/// unmarked ApplyPolicy on a replica that is not master is first passed to the leader's
/// admin service, to be checked against the fabric there: `admin_limits.rs` covers that.)
async fn apply(a: &mut SmAdminClient<Channel>) -> Result<(u64, u64), Status> {
    let mut req = tonic::Request::new(ApplyPolicyRequest {
        text: POLICY.into(),
        expected_version: 0,
        request_id: 0,
    });
    req.metadata_mut().insert(
        "x-sm-forwarded",
        tonic::metadata::MetadataValue::from_static("1"),
    );
    a.apply_policy(req)
        .await
        .map(|r| (r.get_ref().version, r.get_ref().index))
}

#[test]
fn forwarded_call_errors_reach_the_client_as_the_follower_saw_them() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // "2": a Peer server here. "3": an address nobody listens on.
        let incoming = TcpIncoming::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr2 = incoming.local_addr().unwrap().to_string();
        let addr3 = free_addr();
        let addr1 = free_addr();
        let fake = FakeLeader {
            answer: Arc::new(Mutex::new(Answer::Hang)),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(PeerServer::new(fake.clone()))
                .serve_with_incoming(incoming),
        );

        let dir = std::env::temp_dir().join(format!("smnode-forward-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.join("replica1.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_sm-node"))
            // A new cluster: a replica of an existing one on an empty log recovers first
            // (it asks the other replicas for the term, which this test's peers do not
            // answer) and follows nobody until then.
            .args(["--id", "1", "--initial-cluster-state", "new", "--peers"])
            .arg(format!("1={addr1},2={addr2},3={addr3}"))
            .arg("--data-dir")
            .arg(dir.join("r1"))
            .args([
                "--fabric",
                "sim:ft2:4",
                "--sweep-interval",
                "0",
                "--insecure-loopback",
            ])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let _replica = Replica {
            child,
            dir: dir.clone(),
        };

        // The scripted leader's heartbeats (the protocol's own timer: a follower that hears
        // none for an election timeout campaigns), from (leader, term).
        let leader = Arc::new(Mutex::new((2u64, 5u64)));
        let pump = {
            let leader = leader.clone();
            let mut peer1 = PeerClient::new(channel(&addr1));
            tokio::spawn(async move {
                loop {
                    let (from, term) = *leader.lock().unwrap();
                    let _ = peer1
                        .send(RaftBatch {
                            from,
                            to: 1,
                            messages: vec![heartbeat(from, term)],
                        })
                        .await;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        let mut a = SmAdminClient::new(channel(&addr1));
        let st = follows(&addr1, 2).await;
        assert_eq!(st.term, 5, "{st:?}");

        let script = |x: Answer| *fake.answer.lock().unwrap() = x;

        // The leader applied it: the client gets the leader's answer (the control case).
        script(Answer::Applied(ApplyResult {
            accepted: true,
            policy_version: 7,
            index: 42,
            term: 5,
            ..ApplyResult::default()
        }));
        assert_eq!(apply(&mut a).await.unwrap(), (7, 42));
        {
            let seen = fake.seen.lock().unwrap();
            let last = seen.last().expect("the call reached the leader");
            assert_eq!(last.from, 1);
            let cmd = format!("{:?}", last.command);
            assert!(
                cmd.contains("ApplyPolicy") && cmd.contains("Default=0x7fff"),
                "{cmd}"
            );
        }

        // The leader refused it deterministically: its code, as for a local refusal.
        script(Answer::Applied(ApplyResult {
            accepted: false,
            code: "REPL-E004".into(),
            message: "expected version 0, in force 3".into(),
            ..ApplyResult::default()
        }));
        let e = apply(&mut a).await.unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(
            e.message()
                .starts_with("REPL-E004: expected version 0, in force 3"),
            "{e:?}"
        );

        // The leader says it is not the leader, and names the one it knows.
        script(Answer::NotLeader(3, addr3.clone()));
        let e = apply(&mut a).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert_eq!(
            e.message(),
            format!("E_NODE_NOT_LEADER: leader is replica 3 at {addr3}")
        );

        // ... or knows none.
        script(Answer::NotLeader(0, String::new()));
        let e = apply(&mut a).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert!(e.message().starts_with("E_NODE_NO_LEADER"), "{e:?}");

        // The leader could not commit it: its reason, verbatim.
        script(Answer::Failed(
            "not committed within 5s (no quorum?)".into(),
        ));
        let e = apply(&mut a).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert_eq!(
            e.message(),
            "E_NODE_PROPOSE: the leader (replica 2) refused it: not committed within 5s (no quorum?)"
        );

        // An empty reply is the leader's fault, said so.
        script(Answer::Empty);
        let e = apply(&mut a).await.unwrap_err();
        assert_eq!(e.code(), Code::Internal, "{e:?}");
        assert_eq!(e.message(), "E_NODE_FORWARD: empty reply");

        // The leader never answers: the request was sent, so the write may have been
        // committed there: ABORTED, commit unknown (never UNAVAILABLE), naming the leader.
        script(Answer::Hang);
        let e = apply(&mut a).await.unwrap_err();
        assert_eq!(e.code(), Code::Aborted, "{e:?}");
        assert!(
            e.message().starts_with("E_NODE_COMMIT_UNKNOWN") && e.message().contains(&addr2),
            "{e:?}"
        );

        // The leader cannot be reached: "3" takes over (a later term) from an address
        // nobody listens on. Nothing was sent: UNAVAILABLE.
        *leader.lock().unwrap() = (3, 6);
        follows(&addr1, 3).await;
        let e = apply(&mut a).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert!(
            e.message().starts_with(&format!(
                "E_NODE_FORWARD: cannot reach the leader (replica 3) at {addr3}; nothing was sent"
            )),
            "{e:?}"
        );
        // A call answered on the leader's admin service (not through a proposal) reaches the
        // client as the transport reported it: UNAVAILABLE.
        let e = a
            .change_membership(ChangeMembershipRequest {
                id: 2,
                add: false,
                force: false,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        pump.abort();
    });
}

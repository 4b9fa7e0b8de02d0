//! The Explain RPC of `SmAdmin` (issue 21 item 7): why a port is not Active (or cannot
//! talk), answered by the master from what its sweeper read and its performance manager's
//! counters (neither is Raft state): a follower forwards the call to the leader.

use super::errors::{actor_err, explain_status, forwarded_read_failure};
use super::{AdminService, forwarded};
use crate::master::Explain;
use fabric::{Guid, Lid};
use proto::admin::*;
use sm_core::{ExplainTarget, Explanation};
use tonic::{Request, Response, Status};

impl AdminService {
    pub(super) async fn explain_impl(
        &self,
        req: Request<ExplainRequest>,
    ) -> Result<Response<ExplainReply>, Status> {
        self.auth.read(&req)?;
        let target = target_of(req.get_ref())?;
        let Some(m) = self.read(|v| v.master).await? else {
            let (mut c, addr) = self
                .must_forward(&req, "the master is not on this replica yet")
                .await?;
            return c
                .explain(forwarded(&req, *req.get_ref()))
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        };
        let e = m
            .send(Explain(target))
            .await
            .map_err(actor_err)?
            .map_err(explain_status)?;
        Ok(Response::new(reply(e, self.id)))
    }
}

/// The port a request names: a unicast LID or a GUID (not both), and a port number.
fn target_of(r: &ExplainRequest) -> Result<ExplainTarget, Status> {
    let port = r
        .port
        .map(|p| {
            u8::try_from(p)
                .map_err(|_| Status::invalid_argument(format!("E_ADMIN_BAD_PORT: port {p} > 255")))
        })
        .transpose()?;
    match (r.lid, r.guid) {
        (0, 0) => Err(Status::invalid_argument(
            "E_ADMIN_BAD_TARGET: give the port's LID or a node or port GUID",
        )),
        (lid, 0) => match u16::try_from(lid) {
            Ok(l) if l < 0xC000 => Ok(ExplainTarget::Lid(Lid(l), port)),
            _ => Err(Status::invalid_argument(format!(
                "E_ADMIN_BAD_LID: {lid} is not a unicast LID (1..=49151)"
            ))),
        },
        (0, g) => Ok(ExplainTarget::Guid(Guid(g), port)),
        _ => Err(Status::invalid_argument(
            "E_ADMIN_BAD_TARGET: a LID or a GUID, not both",
        )),
    }
}

fn reply(e: Explanation, replica: u64) -> ExplainReply {
    ExplainReply {
        node_guid: e.node_guid.0,
        description: e.desc,
        is_switch: e.is_switch,
        port: u32::from(e.port),
        port_guid: e.port_guid.0,
        lid: u32::from(e.lid.0),
        state: u32::from(e.state),
        phys_state: u32::from(e.phys_state),
        read_sweep: e.read_sweep,
        sweep: e.sweep,
        peer: e.peer.map(|p| ExplainPeerPort {
            node_guid: p.node_guid.0,
            description: p.desc,
            port: u32::from(p.port),
            state: u32::from(p.state),
            phys_state: u32::from(p.phys_state),
            sweep: p.sweep,
            cause_code: p.cause.map(|c| c.code().to_string()).unwrap_or_default(),
        }),
        cause_code: e.cause.code().to_string(),
        summary: e.summary,
        facts: e.facts,
        next_step: e.next_step,
        replica,
    }
}

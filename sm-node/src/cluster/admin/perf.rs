//! The performance manager's RPCs of `SmAdmin` (issue 21): GetCounters (a port's counters
//! read now, like `perfquery`), GetErrors (ports over thresholds, like `ibqueryerrors`) and
//! GetLinkHealth. The counters live on the master only (they are measurements, not Raft
//! state): a follower forwards each call to the leader, whose master answers.

use super::errors::{actor_err, forwarded_read_failure};
use super::{AdminService, forwarded};
use crate::master::{MasterActor, QueryCounters, WithPerf};
use actix::Addr;
use proto::admin::*;
use sm_core::perf::{PerfManager, Thresholds};
use std::time::Duration;
use tonic::{Request, Response, Status};

/// Bound on one live counter query (the perf manager resends twice, 0.5 s apart).
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The master on this replica, or the leader's client to forward to.
enum Where {
    Here(Addr<MasterActor>),
    Leader(
        proto::admin::sm_admin_client::SmAdminClient<tonic::transport::Channel>,
        String,
    ),
}

impl AdminService {
    async fn perf_master<T>(&self, req: &Request<T>) -> Result<Where, Status> {
        self.auth.read(req)?;
        if let Some(m) = self.read(|v| v.master).await? {
            return Ok(Where::Here(m));
        }
        let (c, addr) = self
            .must_forward(req, "the master is not on this replica yet")
            .await?;
        Ok(Where::Leader(c, addr))
    }

    pub(super) async fn get_counters_impl(
        &self,
        req: Request<GetCountersRequest>,
    ) -> Result<Response<GetCountersReply>, Status> {
        let r = *req.get_ref();
        if r.lid == 0 || r.lid >= 0xC000 {
            return Err(Status::invalid_argument(format!(
                "E_ADMIN_BAD_LID: {} is not a unicast LID (1..=49151)",
                r.lid
            )));
        }
        let port = u8::try_from(r.port).map_err(|_| {
            Status::invalid_argument(format!("E_ADMIN_BAD_PORT: port {} > 255", r.port))
        })?;
        let m = match self.perf_master(&req).await? {
            Where::Here(m) => m,
            Where::Leader(mut c, addr) => {
                return c
                    .get_counters(forwarded(&req, r))
                    .await
                    .map_err(|s| forwarded_read_failure(s, &addr));
            }
        };
        let ask = QueryCounters {
            lid: fabric::Lid(r.lid as u16),
            port,
            extended: r.extended,
        };
        let a = tokio::time::timeout(QUERY_TIMEOUT, m.send(ask))
            .await
            .map_err(|_| {
                Status::deadline_exceeded(format!(
                    "E_NODE_PERF: no answer from LID {} within {QUERY_TIMEOUT:?}",
                    r.lid
                ))
            })?
            .map_err(actor_err)?
            .map_err(|e| {
                Status::unavailable(if e.starts_with("E_") {
                    e
                } else {
                    format!("E_NODE_PERF: LID {} port {}: {e}", r.lid, r.port)
                })
            })?;
        let fields = match (a.pc, a.ext) {
            (_, Some(x)) => x.fields(),
            (Some(pc), None) => pc.fields(),
            (None, None) => {
                return Err(Status::unavailable(format!(
                    "E_NODE_PERF: LID {} port {}: the answer did not decode",
                    r.lid, r.port
                )));
            }
        };
        Ok(Response::new(GetCountersReply {
            lid: r.lid,
            port: r.port,
            cap_mask: u32::from(a.cap_mask.unwrap_or(0)),
            cap_mask_known: a.cap_mask.is_some(),
            extended: r.extended,
            counters: fields
                .into_iter()
                .map(|(n, v)| CounterValue {
                    name: n.to_string(),
                    value: v,
                })
                .collect(),
        }))
    }

    pub(super) async fn get_errors_impl(
        &self,
        req: Request<GetErrorsRequest>,
    ) -> Result<Response<GetErrorsReply>, Status> {
        let text = req.get_ref().thresholds.clone();
        let given = if text.is_empty() {
            None
        } else {
            Some(
                Thresholds::parse(&text, &Thresholds::zero())
                    .map_err(|e| Status::invalid_argument(e.to_string()))?,
            )
        };
        let m = match self.perf_master(&req).await? {
            Where::Here(m) => m,
            Where::Leader(mut c, addr) => {
                return c
                    .get_errors(forwarded(&req, req.get_ref().clone()))
                    .await
                    .map_err(|s| forwarded_read_failure(s, &addr));
            }
        };
        let reply = m
            .send(WithPerf(Box::new(move |p: Option<&PerfManager>, now| {
                p.map(|p| errors_reply(p, given, now))
            })))
            .await
            .map_err(actor_err)?
            .ok_or_else(no_perf)?;
        Ok(Response::new(reply))
    }

    pub(super) async fn get_link_health_impl(
        &self,
        req: Request<GetLinkHealthRequest>,
    ) -> Result<Response<GetLinkHealthReply>, Status> {
        let m = match self.perf_master(&req).await? {
            Where::Here(m) => m,
            Where::Leader(mut c, addr) => {
                return c
                    .get_link_health(forwarded(&req, *req.get_ref()))
                    .await
                    .map_err(|s| forwarded_read_failure(s, &addr));
            }
        };
        let links = m
            .send(WithPerf(Box::new(|p: Option<&PerfManager>, _| {
                p.map(|p| p.links())
            })))
            .await
            .map_err(actor_err)?
            .ok_or_else(no_perf)?;
        let end = |e: sm_core::perf::End| LinkEnd {
            node_guid: e.node_guid.0,
            port: u32::from(e.port),
            description: e.desc,
        };
        Ok(Response::new(GetLinkHealthReply {
            links: links
                .into_iter()
                .map(|l| LinkHealthRow {
                    a: Some(end(l.a)),
                    b: Some(end(l.b)),
                    health: l.health.name().to_string(),
                    why: l.why,
                })
                .collect(),
        }))
    }
}

fn no_perf() -> Status {
    Status::unavailable("E_NODE_PERF: no performance manager on the master")
}

/// The ports over `given` (the master's thresholds when None).
fn errors_reply(p: &PerfManager, given: Option<Thresholds>, now: sm_core::VTime) -> GetErrorsReply {
    let th = given.unwrap_or_else(|| p.config().thresholds.clone());
    let ports = p
        .errors(&th)
        .into_iter()
        .map(|(r, over)| {
            let t = &r.target;
            let peer = t.peer.clone().unwrap_or_default();
            PortErrors {
                node_guid: t.node_guid.0,
                description: t.desc.clone(),
                lid: u32::from(t.lid.0),
                port: u32::from(t.port),
                over: over
                    .into_iter()
                    .map(|(c, v)| CounterValue {
                        name: c.name().to_string(),
                        value: v,
                    })
                    .collect(),
                peer_node_guid: peer.node_guid.0,
                peer_port: u32::from(peer.port),
                peer_description: peer.desc,
                is_switch: t.is_switch,
            }
        })
        .collect();
    let (sweep, age) = p
        .last_sweep()
        .map(|(s, at)| (s.number, now.saturating_sub(at) / 1_000_000))
        .unwrap_or((0, 0));
    GetErrorsReply {
        ports,
        ports_checked: p.ports().iter().filter(|r| r.last.is_some()).count() as u32,
        thresholds: th.to_text(),
        sweep,
        sweep_age_ms: age,
        enabled: p.config().enabled,
    }
}

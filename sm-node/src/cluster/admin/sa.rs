//! The SA RPC of `SmAdmin` (issue 10): GetSa answers the replicated SA state — multicast
//! groups with their members, ServiceRecords, InformInfo subscriptions — from this
//! replica's applied state, or from the leader when `linearizable` asks for it. Every
//! replica holds it (a follower answers the same as the master once it has applied the
//! entry), which is what lets a new master serve SA exactly as the old one did.

use super::{AdminService, forwarded};
use proto::admin::{GetSaReply, GetSaRequest};
use tonic::{Request, Response, Status};

impl AdminService {
    pub(super) async fn get_sa_impl(
        &self,
        req: Request<GetSaRequest>,
    ) -> Result<Response<GetSaReply>, Status> {
        self.auth.read(&req)?;
        if self.needs_leader(req.get_ref().linearizable).await? {
            let (mut c, addr) = self
                .must_forward(&req, "no leader with a valid lease for a linearizable read")
                .await?;
            return c
                .get_sa(forwarded(&req, *req.get_ref()))
                .await
                .map_err(|s| super::errors::forwarded_read_failure(s, &addr));
        }
        let (sa, applied_index) = self
            .read(|v| (v.state.sa_state().clone(), v.state.applied_index()))
            .await?;
        Ok(Response::new(GetSaReply {
            sa: Some(sa),
            applied_index,
        }))
    }
}

//! `smctl explain` on the master (issue 21 item 7): sm-core's [`sm_core::Sweeper::explain`]
//! run on this master's sweeper with its performance manager (counters, link health).

use super::MasterActor;
use actix::prelude::*;
use sm_core::{ExplainTarget, Explanation, SmError};

/// Why a port is in its state, from what this master read ([`sm_core::Sweeper::explain`]).
#[derive(Message)]
#[rtype(result = "Result<Explanation, SmError>")]
pub struct Explain(pub ExplainTarget);

impl Handler<Explain> for MasterActor {
    type Result = Result<Explanation, SmError>;
    fn handle(&mut self, m: Explain, _: &mut Context<Self>) -> Self::Result {
        self.sweeper.explain(m.0, self.perf.as_ref())
    }
}

//! `explain` (issue 21): why a port is not ACTIVE, from the sweeper's state (the reasoning
//! is in [`crate::explain`]).

use super::Sweeper;
use crate::SmError;
use crate::explain::{ExplainInputs, ExplainTarget, Explanation, View};
use crate::perf::PerfManager;

impl Sweeper {
    /// Why the port `what` names is in its state (not ACTIVE, or ACTIVE and unable to talk),
    /// what that rests on, and the operator's next step; `perf`: the master's performance
    /// manager, for the counters and link health. A pure read: nothing is sent or changed.
    /// [`SmError::ExplainUnknown`] when no port the sweeper found answers to `what`,
    /// [`SmError::ExplainPort`] for a port number the node does not have.
    pub fn explain(
        &self,
        what: ExplainTarget,
        perf: Option<&PerfManager>,
    ) -> Result<Explanation, SmError> {
        let known = self.vports.functions();
        self.explain_with(
            what,
            &ExplainInputs {
                perf,
                vf_aliases: (!known.is_empty()).then_some(&known),
            },
        )
    }

    /// [`Sweeper::explain`] with more inputs: VF alias GUIDs when the caller knows them (a
    /// VF's GUID is then explained as a VF of its PF port).
    pub fn explain_with(
        &self,
        what: ExplainTarget,
        inputs: &ExplainInputs<'_>,
    ) -> Result<Explanation, SmError> {
        View {
            disc: &self.disc,
            troubles: &self.troubles,
            keys: &self.keys,
            phase: self.phase,
            standing_by: self.standing_by(),
            foreign_master: self.foreign_master(),
            inputs: *inputs,
        }
        .explain(what)
    }
}

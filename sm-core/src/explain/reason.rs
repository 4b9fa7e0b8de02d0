//! The reasoning: which [`Cause`] explains a port, from the sweeper's records (what
//! discovery read, the requests given up, the P_Keys not placed) and the counters.

use super::facts::{
    PerfView, failure_fact, m_key_fact, perf_view, phys_state_name, port_info_fact, port_state_name,
};
use super::resolve::Found;
use super::troubles::{Asked, Failure, Troubles, Why};
use super::{Cause, ExplainInputs, ExplainTarget, Explanation};
use crate::discovery::Discovery;
use crate::keys::MKeys;
use crate::{Phase, SmError};
use fabric::{Guid, Lid};

const DOWN: u8 = 1;
const INIT: u8 = 2;
const ARMED: u8 = 3;
const ACTIVE: u8 = 4;

/// What `explain` reads of a sweeper.
pub(crate) struct View<'a> {
    pub disc: &'a Discovery,
    pub troubles: &'a Troubles,
    pub keys: &'a MKeys,
    pub phase: Phase,
    pub standing_by: bool,
    /// The foreign master this SM stands by for (port GUID, priority).
    pub foreign_master: Option<(Guid, u8)>,
    pub inputs: ExplainInputs<'a>,
}

impl View<'_> {
    /// Explains `what` (see [`crate::Sweeper::explain`]).
    pub fn explain(&self, what: ExplainTarget) -> Result<Explanation, SmError> {
        Ok(match self.resolve(what)? {
            Found::Port(i, p) => self.port(i, p, true),
            Found::Vf(alias, i, p) => self.vf(alias, i, p),
        })
    }

    /// The last request given up on `(i, p)`, when it is no older than `read` (the sweep
    /// the port's PortInfo was read in).
    fn failure(&self, i: u32, p: u8, read: u64) -> Option<&Failure> {
        self.troubles
            .failure(i, p)
            .filter(|f| f.sweep >= read.max(1))
    }

    /// The explanation of port `p` of node `i`; `with_peer`: an ARMED port explains its
    /// peer too (one level).
    fn port(&self, i: u32, p: u8, with_peer: bool) -> Explanation {
        let d = self.disc;
        let n = d.node(i);
        let port = d.port_of(i, p);
        let mgmt = if n.is_switch { d.port_of(i, 0) } else { port };
        let read = port.info_sweep;
        let lid = [mgmt.lid, mgmt.info.lid]
            .into_iter()
            .find(|l| l.0 != 0)
            .unwrap_or(Lid(0));
        let mut e = Explanation {
            node_guid: n.guid,
            desc: n.desc.text(),
            is_switch: n.is_switch,
            port: p,
            port_guid: if n.is_switch {
                n.info.port_guid
            } else {
                port.guid
            },
            lid,
            state: if read != 0 { port.info.port_state } else { 0 },
            phys_state: if read != 0 {
                port.info.port_phys_state
            } else {
                0
            },
            read_sweep: read,
            sweep: d.sweep(),
            peer: self.peer_of(i, p).map(|x| x.2),
            cause: Cause::Pending,
            summary: String::new(),
            facts: Vec::new(),
            next_step: String::new(),
        };
        if read != 0 {
            e.facts
                .push(port_info_fact(&port.info, read, n.is_switch && p != 0));
        }
        if mgmt.info_sweep != 0
            && let Some(f) = m_key_fact(&mgmt.info, self.keys.knows(mgmt.info.m_key))
        {
            e.facts.push(f);
        }
        if !d.seen(i) || read != d.sweep() {
            self.not_current(&mut e, i, p);
            return e;
        }
        match port.info.port_state {
            DOWN => {
                let phys = port.info.port_phys_state;
                phys_cause(&mut e, phys, "this port");
                self.add_flaps(&mut e, i, p);
            }
            INIT => self.init(&mut e, i, p),
            ARMED => self.armed(&mut e, i, p, with_peer),
            ACTIVE => self.active(&mut e, i, p),
            s => {
                e.summary = format!("PortState {s} ({})", port_state_name(s));
                self.pending(&mut e);
            }
        }
        e
    }

    /// The port was not read by the last heavy sweep: what its last peer reads now.
    fn not_current(&self, e: &mut Explanation, i: u32, p: u8) {
        let d = self.disc;
        let n = d.node(i);
        e.state = 0;
        e.phys_state = 0;
        if !d.seen(i) {
            e.facts.push(format!(
                "the node was not reached by the last heavy sweep ({}); last reached in heavy sweep {}",
                d.sweep(),
                n.seen
            ));
        } else if e.read_sweep == 0 {
            e.facts.push(
                "this port was never read: a CA port is read only through its own link".into(),
            );
        } else {
            e.facts.push(format!(
                "this port was not read by the last heavy sweep ({})",
                d.sweep()
            ));
        }
        if d.seen(i)
            && let Some(f) = self.failure(i, p, d.sweep())
        {
            e.facts.push(failure_fact(f, "this port"));
            e.cause = Cause::NoAnswer;
            e.summary = format!(
                "the node answers the SM but its {} got no answer",
                f.asked.name()
            );
            e.next_step = "an M_Key this SM does not have, at protect bits 2 or 3, hides \
                PortInfo from the SM (M_KeyViolations grows at the node); give this SM the key \
                or reset it at the node"
                .into();
            return;
        }
        let Some((r, rp, peer)) = self.peer_of(i, p) else {
            self.not_reached(e);
            return;
        };
        let rport = d.port_of(r, rp);
        let peer_now = d.seen(r) && rport.info_sweep == d.sweep();
        let name = format!("{} ({}) port {rp}", peer.desc, peer.node_guid);
        if peer_now && rport.info.port_state == DOWN {
            e.state = DOWN;
            e.facts.push(format!(
                "its last peer {name} (linked in heavy sweep {}) reads PortState Down, PortPhysicalState {}: a link is Down at both ends",
                peer.sweep,
                phys_state_name(rport.info.port_phys_state)
            ));
            phys_cause(e, rport.info.port_phys_state, &format!("its peer {name}"));
            self.add_flaps(e, i, p);
            if e.facts.iter().all(|f| !f.contains("LinkDownedCounter")) {
                self.add_flaps(e, r, rp);
            }
        } else {
            if peer_now {
                e.facts.push(format!(
                    "its last peer {name} reads PortState {} now",
                    port_state_name(rport.info.port_state)
                ));
            }
            self.not_reached(e);
        }
    }

    fn not_reached(&self, e: &mut Explanation) {
        e.cause = Cause::NotReached;
        e.summary = "not reached by the last heavy sweep: the node did not answer (powered \
            off, rebooting, or its link or the path to it is down)"
            .into();
        e.next_step = "check that the node is powered and cabled; `smctl explain` the port at \
            the other end of its cable tells what that end reads"
            .into();
    }

    /// LinkDownedCounter growth of `(i, p)` and its link health, when the counters are given.
    fn add_flaps(&self, e: &mut Explanation, i: u32, p: u8) {
        let Some(perf) = self.inputs.perf else {
            return;
        };
        if p == 0 {
            return;
        }
        let v = perf_view(perf, self.disc.node(i).guid, p, false);
        if v.link_downed > 0 {
            e.next_step.push_str(
                "; LinkDownedCounter grows, so the link flaps: replace the cable (or the \
                 transceiver) rather than wait for it",
            );
        }
        e.facts.extend(v.facts);
    }

    fn init(&self, e: &mut Explanation, i: u32, p: u8) {
        let d = self.disc;
        let n = d.node(i);
        let port = d.port_of(i, p);
        let read = port.info_sweep;
        match self.failure(i, p, read) {
            Some(f) => self.failure_cause(e, i, p, f),
            None => {
                if n.is_switch && p != 0 && port.remote_sweep != d.sweep() {
                    e.facts
                        .push("no node was found behind this port in the last heavy sweep".into());
                }
                e.summary = "Init: physical link up, not brought up by the SM yet".into();
                self.pending(e);
            }
        }
    }

    /// The cause of a port stuck before ACTIVE whose request `f` was given up.
    fn failure_cause(&self, e: &mut Explanation, i: u32, p: u8, f: &Failure) {
        let d = self.disc;
        let n = d.node(i);
        let port = d.port_of(i, p);
        let mgmt = if n.is_switch { d.port_of(i, 0) } else { port };
        let st = port_state_name(port.info.port_state);
        e.facts.push(failure_fact(f, "this port"));
        let hidden_key = mgmt.info.m_key_protect_bits != 0
            && (mgmt.info.m_key == 0 || !self.keys.knows(mgmt.info.m_key));
        match (f.asked, f.why) {
            (Asked::Probe, Why::NoAnswer | Why::NotSent) => {
                e.cause = Cause::NoAnswer;
                e.summary = format!(
                    "{st}: the link is up but the node behind this port does not answer the \
                     SM (its NodeInfo probe got no answer)"
                );
                e.next_step = "the far end has no working SMA: check that the host is up with \
                    its InfiniBand driver loaded (a host in firmware or with a hung driver does \
                    not answer); if `ibstat` on it shows the port, look for a path that drops \
                    its answers"
                    .into();
            }
            (a, Why::NoAnswer) if a.is_set() && hidden_key => {
                e.cause = Cause::MKeyMismatch;
                e.summary = format!(
                    "{st}: the node holds an M_Key this SM does not have, with protection on: \
                     it drops the SM's Sets unanswered, so the SM cannot bring the port up"
                );
                e.next_step = "find who set the M_Key (another SM, a tool, an earlier SM with \
                    its own key): give this SM that key (the cluster's M_Key history) or clear \
                    it at the node (reset the HCA or switch, or let the M_Key lease expire: \
                    the protect bits clear once the lease period passes)"
                    .into();
            }
            (_, Why::Status(s)) => {
                e.cause = Cause::SetRefused;
                e.summary = format!(
                    "{st}: the node refused the SM's {} (MAD status {s:#06x})",
                    f.asked.name()
                );
                e.next_step = "the node does not accept a value the SM writes (an \
                    OperationalVLs above its VLCap, an MTU or width it lacks): compare its \
                    PortInfo capabilities with the configuration (`smctl port`)"
                    .into();
            }
            (_, Why::NoAnswer | Why::NotSent) => {
                e.cause = Cause::NoAnswer;
                e.summary = format!(
                    "{st}: the SM's {} gets no answer, so it cannot bring the port up",
                    f.asked.name()
                );
                e.next_step = "the node's SMA answers Gets but not the SM's Sets: an M_Key \
                    this SM does not have (another SM set it; M_KeyViolations grows), a path \
                    that drops the answers, or a hung driver: check the M_Key, then restart \
                    the node's InfiniBand driver"
                    .into();
            }
        }
    }

    fn armed(&self, e: &mut Explanation, i: u32, p: u8, with_peer: bool) {
        let d = self.disc;
        let peer = self
            .peer_of(i, p)
            .filter(|x| x.2.sweep == d.sweep() && matches!(x.2.state, 0..=INIT));
        let Some((r, rp, pe)) = peer else {
            let read = d.port_of(i, p).info_sweep;
            match self.failure(i, p, read) {
                Some(f) => self.failure_cause(e, i, p, f),
                None => {
                    e.summary = "Armed: the SM activates it at the end of its heavy sweep".into();
                    self.pending(e);
                }
            }
            return;
        };
        e.cause = Cause::ArmedWaitingPeer;
        let name = format!("{} ({}) port {rp}", pe.desc, pe.node_guid);
        let mut next = format!(
            "fix the peer first ({}), and this port goes Active with it",
            port_state_name(pe.state)
        );
        let mut state = port_state_name(pe.state).to_string();
        if with_peer {
            let px = self.port(r, rp, false);
            if let Some(peer) = &mut e.peer {
                peer.cause = Some(px.cause);
            }
            state = format!("{} [{}]", px.summary, px.cause.code());
            e.facts
                .extend(px.facts.iter().map(|f| format!("peer {name}: {f}")));
            next = format!("fix the peer first: {}", px.next_step);
        }
        e.summary = format!(
            "Armed, waiting for its neighbour: a link goes Active only once both ends are \
             Armed, and the peer {name} is {state}"
        );
        e.next_step = next;
    }

    fn active(&self, e: &mut Explanation, i: u32, p: u8) {
        let d = self.disc;
        let n = d.node(i);
        let port = d.port_of(i, p);
        let dropped = self.troubles.dropped(n.guid, p);
        if !dropped.is_empty() {
            let list: Vec<String> = dropped
                .iter()
                .map(|(k, name)| {
                    if name.is_empty() {
                        format!("{k:#06x}")
                    } else {
                        format!("{k:#06x} ({name})")
                    }
                })
                .collect();
            e.cause = Cause::PKeyMissing;
            e.summary = format!(
                "Active, but P_Keys its partitions need are not in its P_KeyTable: {}",
                list.join(", ")
            );
            e.facts.push(format!(
                "NodeInfo.PartitionCap {}: the table holds {} keys, the policy gives this port {}",
                n.info.partition_cap,
                port.pkey_want.iter().filter(|&&k| k & 0x7FFF != 0).count(),
                port.pkey_want.iter().filter(|&&k| k & 0x7FFF != 0).count() + dropped.len()
            ));
            e.next_step = "the partitions named do not reach this port (`smctl partitions \
                check` reports PART-E008): take the port out of partitions it does not need \
                (the partition policy or its tenant), or use an adapter with a larger \
                PartitionCap"
                .into();
            return;
        }
        if !port.pkey_want.is_empty()
            && (!port.pkey_known_valid || port.pkey_known != port.pkey_want)
        {
            e.cause = Cause::PKeyNotWritten;
            e.summary = "Active, but the P_KeyTable its partitions need was not written: \
                what it holds is unknown"
                .into();
            if let Some(f) = self.troubles.failure(i, p) {
                e.facts.push(failure_fact(f, "this port"));
            }
            e.next_step = "`smctl audit` reads the table back; the next heavy sweep writes \
                it again; if the write keeps failing, look for an M_Key or an unanswering \
                SMA as for a port stuck in Init"
                .into();
            return;
        }
        let pv = match self.inputs.perf {
            Some(perf) if p != 0 => perf_view(perf, n.guid, p, true),
            _ => PerfView::default(),
        };
        e.facts.extend(pv.facts);
        if pv.degraded || pv.link_downed > 0 {
            e.cause = Cause::LinkDegraded;
            e.summary = if pv.link_downed > 0 {
                format!(
                    "Active, but the link flaps: it went down {} times within the counter window",
                    pv.link_downed
                )
            } else {
                "Active, but the link is degraded: an error counter over its threshold grows".into()
            };
            e.next_step = "reseat or replace the cable (or transceiver) of this link; \
                `smctl errors` and `smctl counters LID PORT` show the counters"
                .into();
            return;
        }
        e.cause = Cause::Healthy;
        let peer = e
            .peer
            .as_ref()
            .map_or("no peer (switch port 0)".to_string(), |x| {
                format!("peer {} ({}) port {}", x.desc, x.node_guid, x.port)
            });
        let health = pv
            .health
            .map_or(String::new(), |h| format!(", link {}", h.name()));
        e.summary = format!("Active: nothing wrong (LID {}, {peer}{health})", e.lid.0);
        e.next_step = "none: the port is up; if an application cannot talk, check its \
            partition (P_Key) and the path (`smctl route`)"
            .into();
    }

    /// Init or Armed with nothing wrong known.
    fn pending(&self, e: &mut Explanation) {
        e.cause = Cause::Pending;
        let why = if self.standing_by {
            match self.foreign_master {
                Some((g, pri)) => format!(
                    "this SM stands by for another master SM (port {g}, priority {pri}), which brings ports up"
                ),
                None => "this SM is not acting as master now (standing by)".into(),
            }
        } else if self.phase != Phase::Idle {
            format!(
                "a heavy sweep is under way (phase {:?}): ports come up at its end",
                self.phase
            )
        } else {
            "the link came up after the last heavy sweep planned its ports: a trap or the \
             next sweep brings it up"
                .into()
        };
        if e.summary.is_empty() {
            e.summary = "not brought up yet".into();
        }
        e.summary = format!("{} ({why})", e.summary);
        e.next_step = "wait for the next heavy sweep (`smctl sweep --heavy` asks for one \
            now); if the port stays so across sweeps, explain it again"
            .into();
    }

    /// A VF alias GUID: the explanation of its PF port, as the VF sees it.
    fn vf(&self, alias: Guid, i: u32, p: u8) -> Explanation {
        let pf = self.port(i, p, true);
        let mut e = pf.clone();
        e.cause = Cause::VfAlias;
        e.summary = format!(
            "GUID {alias} is a VF of port {} ({} port {p}, LID {}, {})",
            pf.port_guid,
            pf.desc,
            pf.lid.0,
            port_state_name(pf.state)
        );
        e.facts = vec![
            format!(
                "{alias} is an alias GUID of PF port {} (shared-port SR-IOV): it shares the PF's LID and P_KeyTable",
                pf.port_guid
            ),
            "a VF has no QP0 of its own: the SM cannot see or configure it; its management \
             goes through the host's PF driver"
                .into(),
            format!("the PF port: {} [{}]", pf.summary, pf.cause.code()),
        ];
        e.next_step = "keep the PF driver on the host (the VF's management is relayed by it) \
            or pass the whole PF to the VM; a VF handed to a VM with vfio-pci and no relay \
            has no LID and stays Down"
            .into();
        if pf.cause != Cause::Healthy {
            e.next_step
                .push_str(&format!("; first the PF port itself: {}", pf.next_step));
        }
        e
    }
}

/// The cause of a port (or link) that is logically Down, from PortPhysicalState.
fn phys_cause(e: &mut Explanation, phys: u8, whose: &str) {
    let peer = e.peer.as_ref().map_or(String::new(), |x| {
        format!(
            " (the other end: {} ({}) port {}, last linked in heavy sweep {})",
            x.desc, x.node_guid, x.port, x.sweep
        )
    });
    match phys {
        3 => {
            e.cause = Cause::PhysDisabled;
            e.summary = format!("Down: {whose} is disabled (PortPhysicalState Disabled)");
            e.next_step = format!(
                "enable the port if it should carry traffic (`ibportstate LID PORT enable` at \
                 the disabled end); Quorum SM never disables ports, so another SM or a \
                 management tool did{peer}"
            );
        }
        4 | 6 | 7 => {
            e.cause = Cause::PhysTraining;
            e.summary = format!(
                "Down: the link is not trained ({whose} is in {})",
                phys_state_name(phys)
            );
            e.next_step = format!(
                "if it stays so, the two ends cannot agree on a link: check the cable (type, \
                 length, rated speed), reseat it, and compare the link width and speed \
                 enabled at both ends; a port that keeps falling into LinkErrorRecovery has \
                 a bad cable or connector{peer}"
            );
        }
        5 => {
            e.cause = Cause::Pending;
            e.summary = format!(
                "Down with the physical link up ({whose}): it comes up in Init within moments"
            );
            e.next_step = "explain it again after the next heavy sweep".into();
        }
        _ => {
            e.cause = Cause::PhysDown;
            e.summary = format!(
                "Down: no signal from the other end ({whose} reads PortPhysicalState {})",
                phys_state_name(phys)
            );
            e.next_step = format!(
                "check the cable and the other end: plugged in at both ends? the node at \
                 the other end powered, its port enabled? Reseat or replace the cable{peer}"
            );
        }
    }
}

//! A foreign SM next to the cluster (issue 23): a scripted SM at a CA port that is no
//! replica's, as a switch-embedded SM or an OpenSM someone started would be. It answers
//! SMInfo Gets and Sets at its port through the simulated fabric, and it writes:
//!
//! * [`ForeignMode::Honest`] follows the IBA 14.4 rules as OpenSM does (what it learns
//!   from the SMs it would query is read from the replicas' sweepers, which answer the
//!   same over the fabric): DISCOVERING for one sweep, then STANDBY when it finds a MASTER
//!   or a DISCOVERING / STANDBY SM that outranks it, otherwise MASTER; a STANDBY polls the
//!   SM it follows and sweeps again after [`POLL_MISSES`] polls without it; a HANDOVER
//!   makes it MASTER; a MASTER finding a MASTER that outranks it stands by. As MASTER it
//!   writes once per interval (block 0 of its leaf switch's LFT, unchanged: the write
//!   counts in the fabric's Set log and changes no route).
//!
//! Its writes carry the switch's M_Key, as if it knew the cluster's key (the worst case:
//! without it the SMA refuses them and no Set is accepted).
//! * [`ForeignMode::LiarMaster`] answers MASTER at priority 0 and writes nothing.
//! * [`ForeignMode::LiarStandby`] answers STANDBY and writes a wrong LFT block (block 0 of
//!   its leaf switch, every entry 0xFF) once per interval: a rogue behind the master's
//!   back.
//!
//! Only an honest MASTER's Sets count as an SM's for the invariant "at most one SM's Sets
//! accepted per interval" ([`super::check::Checker::foreign_sets`]); a liar's are rogue
//! writes the master must find and correct.

use super::world::MS;
use fabric::{Guid, Lid, NodeId};
use fabric_sim::{AttachId, Fault, SimFabric};
use mad::{AttributeId, LinearForwardingTable, Method, SmInfo, SmState, Smp};
use sm_core::VTime;
use std::fmt;

/// The foreign SM's sweep interval (as the replicas' masters).
pub const INTERVAL: VTime = 500 * MS;
/// Its discovery time before it decides.
const DISCOVERY: VTime = 100 * MS;
/// Polls without the followed SM before it sweeps again (OpenSM's default is 4).
pub const POLL_MISSES: u32 = 3;

/// How the foreign SM behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForeignMode {
    /// IBA 14.4 rules.
    Honest,
    /// Claims MASTER at priority 0, writes nothing.
    LiarMaster,
    /// Claims STANDBY while writing a wrong LFT block every interval.
    LiarStandby,
}

impl fmt::Display for ForeignMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ForeignMode::Honest => "honest",
            ForeignMode::LiarMaster => "lying MASTER",
            ForeignMode::LiarStandby => "lying STANDBY writing",
        })
    }
}

/// Another SM as the foreign SM would see it in an SMInfo answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Its port GUID.
    pub guid: Guid,
    /// Its priority.
    pub priority: u8,
    /// Its state.
    pub state: SmState,
}

/// What the foreign SM did in one call (for the world's accounting and checks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Did {
    /// It wrote an unchanged block as MASTER.
    pub master_write: bool,
    /// It wrote a wrong block (a rogue write).
    pub rogue_write: bool,
    /// Its state changed to this.
    pub became: Option<SmState>,
}

/// The foreign SM.
pub struct ForeignSm {
    /// Behaviour.
    pub mode: ForeignMode,
    /// Its port.
    pub guid: Guid,
    /// Its priority.
    pub priority: u8,
    /// Its state (what it answers; a liar answers its lie).
    pub state: SmState,
    at: AttachId,
    /// Its leaf switch and the port number that leaves its CA port (the DR path).
    out_port: u8,
    leaf: NodeId,
    next: VTime,
    followed: Option<Guid>,
    missed: u32,
    tid: u64,
}

/// IBA ranking: higher priority, then the smaller port GUID.
fn outranks(a: (u8, Guid), b: (u8, Guid)) -> bool {
    sm_core::outranks(a.0, a.1, b.0, b.1)
}

impl ForeignSm {
    /// Attaches a foreign SM at the CA port `(port, guid)` whose cable leads to switch
    /// `leaf`; its first decision is one discovery from `now`.
    pub fn appear(
        fab: &mut SimFabric,
        now: VTime,
        port: u8,
        guid: Guid,
        leaf: NodeId,
        mode: ForeignMode,
        priority: u8,
    ) -> Result<ForeignSm, fabric_sim::SimError> {
        let at = fab.attach(guid)?;
        let state = match mode {
            ForeignMode::Honest => SmState::Discovering,
            ForeignMode::LiarMaster => SmState::Master,
            ForeignMode::LiarStandby => SmState::Standby,
        };
        let priority = if mode == ForeignMode::LiarMaster {
            0
        } else {
            priority
        };
        Ok(ForeignSm {
            mode,
            guid,
            priority,
            state,
            at,
            out_port: port,
            leaf,
            next: now + DISCOVERY,
            followed: None,
            missed: 0,
            tid: 0x0F0F_0000,
        })
    }

    /// The SM process goes (its port's IsSM too).
    pub fn vanish(self, fab: &mut SimFabric) {
        let _ = fab.detach(self.at);
    }

    /// When it next wants to run.
    pub fn next_time(&self) -> VTime {
        self.next
    }

    fn info(&self) -> SmInfo {
        SmInfo {
            guid: self.guid,
            sm_key: 1,
            act_count: 0,
            priority: self.priority,
            sm_state: self.state.to_wire(),
        }
    }

    /// Answers what reached its port: SMInfo Gets with its state, SMInfo Sets likewise
    /// (an honest one takes a HANDOVER and becomes MASTER). Returns a state change.
    pub fn serve(&mut self, now: VTime, fab: &mut SimFabric) -> Option<SmState> {
        let mut became = None;
        while let Some(r) = fab.poll_recv_full(self.at) {
            let q = r.smp;
            if q.is_response() || q.attr_id != AttributeId::SM_INFO {
                continue;
            }
            if q.method == Method::SET
                && self.mode == ForeignMode::Honest
                && q.attr_mod == SmInfo::MOD_HANDOVER
                && self.state != SmState::Master
            {
                self.state = SmState::Master;
                self.followed = None;
                self.next = now;
                became = Some(SmState::Master);
            }
            let mut a = q.make_response();
            a.set_attr(&self.info());
            // A failed send is the fabric's to count; the asker resends.
            let _ = if a.is_directed() {
                fab.send(now, self.at, &a)
            } else {
                fab.send_lid(now, self.at, r.slid, &a)
            };
        }
        became
    }

    /// Its sweep or poll, due at [`Self::next_time`]: `others` is what the SMs it would
    /// query answer now (replicas that are down or paused answer nothing).
    pub fn run(&mut self, now: VTime, fab: &mut SimFabric, others: &[Seen]) -> Did {
        let mut did = Did::default();
        if now < self.next {
            return did;
        }
        self.next = now + INTERVAL;
        match self.mode {
            ForeignMode::LiarMaster => {}
            ForeignMode::LiarStandby => {
                did.rogue_write = self.write(now, fab, true);
            }
            ForeignMode::Honest => {
                let own = (self.priority, self.guid);
                let before = self.state;
                match self.state {
                    SmState::Discovering => {
                        // OpenSM's discovering SM: any MASTER, or a higher DISCOVERING or
                        // STANDBY SM, makes it stand by.
                        let master = others.iter().find(|o| o.state == SmState::Master);
                        let higher = others.iter().find(|o| {
                            matches!(o.state, SmState::Discovering | SmState::Standby)
                                && outranks((o.priority, o.guid), own)
                        });
                        if let Some(o) = master.or(higher) {
                            self.state = SmState::Standby;
                            self.followed = Some(o.guid);
                            self.missed = 0;
                        } else {
                            self.state = SmState::Master;
                        }
                    }
                    SmState::Standby => {
                        let alive = self
                            .followed
                            .and_then(|g| others.iter().find(|o| o.guid == g));
                        let still = alive.is_some_and(|o| {
                            o.state == SmState::Master
                                || (o.state != SmState::NotActive
                                    && outranks((o.priority, o.guid), own))
                        });
                        if still {
                            self.missed = 0;
                        } else {
                            self.missed += 1;
                            if self.missed >= POLL_MISSES {
                                self.state = SmState::Discovering;
                                self.followed = None;
                                self.next = now + DISCOVERY;
                            }
                        }
                    }
                    SmState::Master => {
                        let higher = others.iter().find(|o| {
                            o.state == SmState::Master && outranks((o.priority, o.guid), own)
                        });
                        if let Some(o) = higher {
                            self.state = SmState::Standby;
                            self.followed = Some(o.guid);
                            self.missed = 0;
                        }
                    }
                    SmState::NotActive => {}
                }
                if self.state == SmState::Master {
                    did.master_write = self.write(now, fab, false);
                }
                if self.state != before {
                    did.became = Some(self.state);
                }
            }
        }
        did
    }

    /// Writes block 0 of its leaf switch's LFT by directed route from its port: unchanged
    /// (an honest master's sweep) or every entry 0xFF (a rogue write).
    fn write(&mut self, now: VTime, fab: &mut SimFabric, wrong: bool) -> bool {
        let Ok(lft) = fab.lft(self.leaf) else {
            return false;
        };
        let mut ports = [0xFFu8; 64];
        if !wrong {
            for (k, p) in ports.iter_mut().enumerate() {
                *p = lft.get(k).copied().unwrap_or(0xFF);
            }
        }
        self.tid += 1;
        let Ok(mut smp) = Smp::directed(
            Method::SET,
            self.tid,
            AttributeId::LINEAR_FORWARDING_TABLE,
            0,
            &[self.out_port],
        ) else {
            return false;
        };
        smp.set_attr(&LinearForwardingTable { ports });
        // It holds the switch's M_Key (the worst case: one without it is refused by the
        // SMA, as the cluster's per-term key intends).
        smp.m_key = fab.port_info(self.leaf, 0).map_or(0, |i| i.m_key);
        fab.inject(
            now,
            Fault::Rogue {
                port_guid: self.guid,
                dlid: Lid::PERMISSIVE,
                smp: Box::new(smp),
            },
        )
        .is_ok()
    }
}

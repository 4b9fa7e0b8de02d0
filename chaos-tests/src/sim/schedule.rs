//! Fault schedules: a list of timed actions generated from a seed, printable one action a
//! line so that a failure reruns exactly (`chaos sim --seed S`) and shrinks by dropping
//! lines.

use super::foreign::ForeignMode;
use fabric::rng::SplitMix64;
use std::fmt;

/// One fault or client action. Actions naming "the leader" resolve when they run (the
/// replica that is Raft leader then), so a shrunk schedule keeps its meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// kill -9 of the current leader (nothing when there is none).
    CrashLeader,
    /// kill -9 of replica `0` (1-based id).
    Crash(u64),
    /// Restart every crashed replica from its disk.
    RestartAll,
    /// SIGSTOP of the current leader.
    PauseLeader,
    /// SIGSTOP of replica `0`.
    Pause(u64),
    /// SIGCONT of every paused replica.
    ResumeAll,
    /// Cut the current leader off from its peers (both directions).
    IsolateLeader,
    /// Cut replica `0` off from its peers.
    Isolate(u64),
    /// Heal every network cut.
    Heal,
    /// Make the replica network lossy: drop and duplicate percentages, extra delay spread.
    NetChaos {
        /// Percent of messages dropped.
        drop_pct: u8,
        /// Percent of messages duplicated.
        dup_pct: u8,
        /// Delay spread in ms (reorders messages).
        jitter_ms: u16,
    },
    /// Back to a clean network (cuts stay).
    NetCalm,
    /// Unplug link number `link` (in the topology's link order) for `down_ms`.
    LinkFlap {
        /// Link index (modulo the number of links).
        link: u32,
        /// Time down.
        down_ms: u16,
    },
    /// Reboot switch number `switch` (modulo the number of switches).
    SwitchReboot {
        /// Switch index.
        switch: u32,
    },
    /// Lose `pct` percent of fabric transmissions for `for_ms`.
    MadLoss {
        /// Percent lost.
        pct: u8,
        /// Duration.
        for_ms: u16,
    },
    /// A client applies policy number `policy` through the leader.
    ApplyPolicy {
        /// Policy index (modulo the policies of the fabric).
        policy: u32,
    },
    /// A client reads the policy version linearizably (ReadIndex through the leader).
    ReadPolicy,
    /// An operator transfers the master role to replica `0`.
    TransferLeader(u64),
    /// SIGTERM of the leader: it hands leadership over, then exits.
    GracefulStopLeader,
    /// SIGTERM of replica `0`.
    GracefulStop(u64),
    /// Replica `0` gets a higher SM priority than the others.
    Prefer(u64),
    /// Every replica back to equal priority.
    PreferNone,
    /// The leader removes replica `0` from the voters (when it is a follower and all three
    /// are voters).
    RemoveFollower(u64),
    /// The leader adds back a replica removed from the voters.
    AddBack,
    /// Replica `0`'s disk is replaced (when no other replica's is being recovered): it dies
    /// and restarts later on an empty log.
    WipeDisk(u64),
    /// Multicast group number `group` is created (or its members change): the master's SA
    /// commits the new SA state, the master programs the MFTs.
    JoinGroup {
        /// Group index (a few distinct groups).
        group: u32,
    },
    /// A foreign SM starts at the fourth CA port (replacing one already there).
    ForeignAppear {
        /// How it behaves.
        mode: ForeignMode,
        /// Its priority (a lying MASTER claims 0).
        priority: u8,
    },
    /// The foreign SM stops.
    ForeignVanish,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::CrashLeader => write!(f, "kill -9 leader"),
            Action::Crash(r) => write!(f, "kill -9 replica {r}"),
            Action::RestartAll => write!(f, "restart crashed replicas"),
            Action::PauseLeader => write!(f, "SIGSTOP leader"),
            Action::Pause(r) => write!(f, "SIGSTOP replica {r}"),
            Action::ResumeAll => write!(f, "SIGCONT paused replicas"),
            Action::IsolateLeader => write!(f, "isolate leader"),
            Action::Isolate(r) => write!(f, "isolate replica {r}"),
            Action::Heal => write!(f, "heal network"),
            Action::NetChaos {
                drop_pct,
                dup_pct,
                jitter_ms,
            } => write!(
                f,
                "network drop {drop_pct}% dup {dup_pct}% jitter {jitter_ms} ms"
            ),
            Action::NetCalm => write!(f, "network calm"),
            Action::LinkFlap { link, down_ms } => {
                write!(f, "link {link} down for {down_ms} ms")
            }
            Action::SwitchReboot { switch } => write!(f, "reboot switch {switch}"),
            Action::MadLoss { pct, for_ms } => write!(f, "MAD loss {pct}% for {for_ms} ms"),
            Action::ApplyPolicy { policy } => write!(f, "apply policy {policy}"),
            Action::ReadPolicy => write!(f, "linearizable read"),
            Action::TransferLeader(r) => write!(f, "transfer leadership to replica {r}"),
            Action::GracefulStopLeader => write!(f, "SIGTERM leader"),
            Action::GracefulStop(r) => write!(f, "SIGTERM replica {r}"),
            Action::Prefer(r) => write!(f, "raise the priority of replica {r}"),
            Action::PreferNone => write!(f, "equal priorities"),
            Action::RemoveFollower(r) => write!(f, "remove voter {r}"),
            Action::AddBack => write!(f, "add removed voters back"),
            Action::JoinGroup { group } => write!(f, "multicast join to group {group}"),
            Action::WipeDisk(r) => write!(f, "replace the disk of replica {r}"),
            Action::ForeignAppear { mode, priority } => {
                write!(f, "foreign SM appears ({mode}, priority {priority})")
            }
            Action::ForeignVanish => write!(f, "foreign SM stops"),
        }
    }
}

/// An action and the virtual time to wait before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Wait before the action, in virtual ms.
    pub after_ms: u32,
    /// The action.
    pub action: Action,
}

/// A whole run: the fabric, the seed of every random choice, and the actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Seed (the fabric's and the network's random choices derive from it).
    pub seed: u64,
    /// Topology generator spec.
    pub topology: String,
    /// Actions in order.
    pub steps: Vec<Step>,
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "schedule seed {} on {} ({} actions):",
            self.seed,
            self.topology,
            self.steps.len()
        )?;
        let mut t = 0u64;
        for (i, s) in self.steps.iter().enumerate() {
            t += u64::from(s.after_ms);
            writeln!(f, "  {i:>2}. t={t:>6} ms (+{:>4}) {}", s.after_ms, s.action)?;
        }
        Ok(())
    }
}

/// Small fabrics the generator picks from.
pub const TOPOLOGIES: &[&str] = &["ft2:4", "ft2:4:hosts=1", "ft2:6:hosts=2", "ft2:8:hosts=1"];

impl Schedule {
    /// The schedule of `seed`: a small fabric and 4 to 12 actions.
    pub fn generate(seed: u64) -> Schedule {
        let mut r = SplitMix64::new(seed ^ 0x5CED_0000_C4A0_5000);
        let topology = if r.chance(0.2) {
            format!(
                "random:4:seed={}:radix=6:links=3:hosts=2",
                r.below(1000) as u32
            )
        } else {
            TOPOLOGIES[r.below(TOPOLOGIES.len() as u64) as usize].to_string()
        };
        let n = 4 + r.below(9) as usize;
        // The replica-side actions come from a stream of their own, inserted between the
        // others at the same instant, so a seed keeps its original faults and times.
        let mut r2 = SplitMix64::new(seed ^ 0x0E5A_C710_5EED_0002);
        // The foreign SM's actions: a third stream, inserted the same way.
        let mut r3 = SplitMix64::new(seed ^ 0xF0E1_6000_5EED_0003);
        let mut steps = Vec::with_capacity(3 * n);
        for _ in 0..n {
            steps.push(Step {
                after_ms: 20 + r.below(1200) as u32,
                action: random_action(&mut r),
            });
            if r2.chance(0.3) {
                steps.push(Step {
                    after_ms: 0,
                    action: replica_action(&mut r2),
                });
            }
            if r3.chance(0.25) {
                steps.push(Step {
                    after_ms: 0,
                    action: foreign_action(&mut r3),
                });
            }
        }
        Schedule {
            seed,
            topology,
            steps,
        }
    }

    /// The schedule without step `i`.
    pub fn without(&self, i: usize) -> Schedule {
        let mut s = self.clone();
        if i < s.steps.len() {
            s.steps.remove(i);
        }
        s
    }
}

fn random_action(r: &mut SplitMix64) -> Action {
    let replica = |r: &mut SplitMix64| 1 + r.below(3);
    // Weights: the master is the favourite target.
    match r.below(100) {
        0..=17 => Action::CrashLeader,
        18..=22 => Action::Crash(replica(r)),
        23..=34 => Action::RestartAll,
        35..=41 => Action::PauseLeader,
        42..=43 => Action::Pause(replica(r)),
        44..=51 => Action::ResumeAll,
        52..=58 => Action::IsolateLeader,
        59..=61 => Action::Isolate(replica(r)),
        62..=68 => Action::Heal,
        69..=72 => Action::NetChaos {
            drop_pct: r.below(30) as u8,
            dup_pct: r.below(20) as u8,
            jitter_ms: r.below(40) as u16,
        },
        73..=74 => Action::NetCalm,
        75..=82 => Action::LinkFlap {
            link: r.below(1 << 16) as u32,
            down_ms: 1 + r.below(400) as u16,
        },
        83..=86 => Action::SwitchReboot {
            switch: r.below(1 << 16) as u32,
        },
        87..=91 => Action::MadLoss {
            pct: 1 + r.below(30) as u8,
            for_ms: 10 + r.below(500) as u16,
        },
        _ => Action::ApplyPolicy {
            policy: r.below(1 << 16) as u32,
        },
    }
}

fn replica_action(r: &mut SplitMix64) -> Action {
    let replica = |r: &mut SplitMix64| 1 + r.below(3);
    match r.below(100) {
        0..=29 => Action::ReadPolicy,
        30..=41 => Action::TransferLeader(replica(r)),
        42..=53 => Action::GracefulStopLeader,
        54..=59 => Action::GracefulStop(replica(r)),
        60..=69 => Action::Prefer(replica(r)),
        70..=76 => Action::PreferNone,
        77..=84 => Action::RemoveFollower(replica(r)),
        85..=88 => Action::AddBack,
        89..=91 => Action::WipeDisk(replica(r)),
        _ => Action::JoinGroup {
            group: r.below(1 << 16) as u32,
        },
    }
}

fn foreign_action(r: &mut SplitMix64) -> Action {
    let priority = |r: &mut SplitMix64| [0u8, 0, 1, 2, 15][r.below(5) as usize];
    match r.below(100) {
        0..=39 => Action::ForeignAppear {
            mode: ForeignMode::Honest,
            priority: priority(r),
        },
        40..=54 => Action::ForeignAppear {
            mode: ForeignMode::LiarMaster,
            priority: 0,
        },
        55..=69 => Action::ForeignAppear {
            mode: ForeignMode::LiarStandby,
            priority: priority(r),
        },
        _ => Action::ForeignVanish,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_schedule_and_seeds_differ() {
        assert_eq!(Schedule::generate(7), Schedule::generate(7));
        assert_ne!(Schedule::generate(7), Schedule::generate(8));
        let s = Schedule::generate(7);
        let faults = s.steps.iter().filter(|st| st.after_ms > 0).count();
        assert!((4..=12).contains(&faults));
        let text = s.to_string();
        assert!(text.starts_with("schedule seed 7 on "), "{text}");
        assert_eq!(text.lines().count(), 1 + s.steps.len());
        assert_eq!(s.without(0).steps.len(), s.steps.len() - 1);
        assert_eq!(s.without(0).steps[..], s.steps[1..]);
    }
}

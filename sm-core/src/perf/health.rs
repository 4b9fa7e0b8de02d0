//! Link health: every link the last heavy sweep found (and every link found before that
//! has gone since) is `ok`, `degraded` (an error counter over its threshold at either end
//! still grows within the rolling window) or `down` (either end not ACTIVE, or the link is
//! gone: its ports no longer see each other).

use super::PortRecord;
use fabric::Guid;
use std::collections::{BTreeMap, HashMap};

/// Why a link that is no longer found is down.
const GONE: &str = "link gone: its ports no longer see each other";

/// The health of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Health {
    /// Up, no error counter growing over its threshold.
    Ok,
    /// Up, with an error counter over its threshold still growing.
    Degraded,
    /// Not carrying traffic: an end not ACTIVE, or the link gone.
    Down,
}

impl Health {
    /// `ok`, `degraded` or `down`.
    pub fn name(self) -> &'static str {
        match self {
            Health::Ok => "ok",
            Health::Degraded => "degraded",
            Health::Down => "down",
        }
    }
}

/// One end of a link.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct End {
    /// Node GUID.
    pub node_guid: Guid,
    /// Port number.
    pub port: u8,
    /// NodeDescription.
    pub desc: String,
}

/// A link and its health, with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkHealth {
    /// The end with the lower (node GUID, port).
    pub a: End,
    /// The other end.
    pub b: End,
    /// Its health.
    pub health: Health,
    /// Why (empty when ok).
    pub why: String,
}

/// The links as last assessed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Links {
    by_key: BTreeMap<(Guid, u8, Guid, u8), LinkHealth>,
}

impl Links {
    /// Assesses every link of `ports` (a link gone since the last call is down) and returns
    /// those whose health changed (a new link counts as changed only when not ok).
    pub fn update(&mut self, ports: &[PortRecord]) -> Vec<LinkHealth> {
        let mut now: BTreeMap<(Guid, u8, Guid, u8), LinkHealth> = BTreeMap::new();
        let index: HashMap<(Guid, u8), &PortRecord> = ports
            .iter()
            .map(|r| ((r.target.node_guid, r.target.port), r))
            .collect();
        let lookup = |g: Guid, p: u8| index.get(&(g, p)).copied();
        for r in ports {
            let Some(peer) = &r.target.peer else {
                continue;
            };
            let mine = (r.target.node_guid, r.target.port);
            let theirs = (peer.node_guid, peer.port);
            if theirs < mine && lookup(theirs.0, theirs.1).is_some() {
                continue; // assessed from the other end
            }
            let other = lookup(theirs.0, theirs.1);
            let end_a = End {
                node_guid: mine.0,
                port: mine.1,
                desc: r.target.desc.clone(),
            };
            let end_b = End {
                node_guid: theirs.0,
                port: theirs.1,
                desc: peer.desc.clone(),
            };
            let (a, b) = if mine <= theirs {
                (end_a, end_b)
            } else {
                (end_b, end_a)
            };
            let mut why = Vec::new();
            let mut health = Health::Ok;
            for e in std::iter::once(r).chain(other) {
                if e.target.state != 4 {
                    health = Health::Down;
                    why.push(format!(
                        "{} port {} is {}",
                        e.target.node_guid,
                        e.target.port,
                        crate::explain::port_state_name(e.target.state)
                    ));
                }
            }
            if health == Health::Ok {
                for e in std::iter::once(r).chain(other) {
                    if e.degraded() {
                        health = Health::Degraded;
                        why.push(format!(
                            "{} port {}: error counters over threshold still growing",
                            e.target.node_guid, e.target.port
                        ));
                    }
                }
            }
            let key = (a.node_guid, a.port, b.node_guid, b.port);
            now.insert(
                key,
                LinkHealth {
                    a,
                    b,
                    health,
                    why: why.join("; "),
                },
            );
        }
        let old = std::mem::take(&mut self.by_key);
        for (k, o) in &old {
            if !now.contains_key(k) {
                let mut gone = o.clone();
                gone.health = Health::Down;
                gone.why = GONE.to_string();
                now.insert(*k, gone);
            }
        }
        let mut changed = Vec::new();
        for (k, l) in &now {
            let before = old.get(k).map(|o| o.health);
            if before.map_or(l.health != Health::Ok, |h| h != l.health) {
                changed.push(l.clone());
            }
        }
        self.by_key = now;
        changed
    }

    /// Every link, ordered by its lower end.
    pub fn all(&self) -> Vec<LinkHealth> {
        self.by_key.values().cloned().collect()
    }
}

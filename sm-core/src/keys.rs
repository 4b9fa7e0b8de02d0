//! [`MKeys`] owns the candidate M_Keys; what each port is believed to hold is the
//! `key_idx` of its record, which only this module moves. It never sends anything.
//!
//! M_Key candidates: SMPs carry, per target, the key its management port
//! (switch port 0, the CA port reached) is believed to hold, out of the candidates
//! `m_key_prev` + `m_key`. A PortInfo read showing a key settles it; a read hiding it
//! (protect bits >= 1 and a wrong key: the port holds a key other than the one sent) or a
//! timed-out request moves that port to the next candidate. After discovery, with
//! `m_key_prev` non-empty, every configured port whose key is not `m_key` gets one PortInfo
//! Set (its fields as read, M_Key, protect bits, lease and MasterSMLID = this SM's LID)
//! before any other Set ([`rekey_targets`], [`rekey_info`]); from then on that port takes
//! `m_key` only, so a deposed master's Sets fail in the fabric.

use crate::config::SweeperConfig;
use crate::discovery::Discovery;
use crate::io::Req;
use crate::state::NONE;
use fabric::{Guid, Lid};
use mad::PortInfo;

/// The candidate M_Keys of a sweeper.
#[derive(Debug)]
pub(crate) struct MKeys {
    /// `m_key_prev` then `m_key`, without repeats (ports index into it).
    keys: Vec<u64>,
}

impl MKeys {
    pub fn new(cfg: &SweeperConfig) -> MKeys {
        let mut keys: Vec<u64> = Vec::new();
        for &k in cfg.m_key_prev.iter().chain(std::iter::once(&cfg.m_key)) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys.truncate(255);
        MKeys { keys }
    }

    /// `key` is one of this sweeper's candidate M_Keys.
    pub fn knows(&self, key: u64) -> bool {
        self.keys.contains(&key)
    }

    /// The key (and its candidate index) a request carries.
    pub fn key_for(&self, disc: &Discovery, req: &Req) -> (u64, u8) {
        let k = disc.mgmt_index(req).map_or(0, |i| disc.key_idx(i));
        (self.keys.get(usize::from(k)).copied().unwrap_or(0), k)
    }

    /// The M_Key believed in force at the end port answering to `lid` (`default` when no
    /// port is known by that LID).
    pub fn key_at_lid(&self, disc: &Discovery, lid: Lid, default: u64) -> u64 {
        match disc.mgmt_index_at_lid(lid) {
            Some(mi) => {
                let k = disc.key_idx(mi);
                self.keys.get(usize::from(k)).copied().unwrap_or(default)
            }
            None => default,
        }
    }

    /// The M_Key believed in force at `(node GUID, port)`'s management port (None when the
    /// port is unknown).
    pub fn in_force(&self, disc: &Discovery, node: Guid, port: u8) -> Option<u64> {
        let i = disc.find(node)?;
        let n = disc.node(i);
        if port > n.nports {
            return None;
        }
        let p = if n.is_switch { 0 } else { port };
        let k = disc.key_idx(n.port_index(p));
        self.keys.get(usize::from(k)).copied()
    }

    /// Configured end ports (LID set) of the last heavy sweep not known to hold `m_key`.
    pub fn ports_on_old_keys(&self, disc: &Discovery, m_key: u64) -> usize {
        let sweep = disc.sweep();
        let mut n_old = 0;
        for n in disc.nodes().iter().filter(|n| n.seen == sweep) {
            let range = if n.is_switch { 0..=0 } else { 1..=n.nports };
            for p in range {
                let port = disc.port(n.port_index(p));
                if port.info_sweep == 0 || port.info.lid.0 == 0 {
                    continue;
                }
                let key = self
                    .keys
                    .get(usize::from(disc.key_idx(n.port_index(p))))
                    .copied();
                if key != Some(m_key) {
                    n_old += 1;
                }
            }
        }
        n_old
    }

    /// A PortInfo of the request's management port was read (Get) or written (Set
    /// response): what it shows about the key in force.
    pub fn note(&self, disc: &mut Discovery, req: &Req, info: &PortInfo) {
        let Some(mi) = disc.mgmt_index(req) else {
            return;
        };
        let n = disc.node(req.node);
        // A switch reports port 0's M_Key for every port; a CA port only its own.
        if !n.is_switch && mi != n.port_index(req.port) {
            return;
        }
        if info.m_key != 0 {
            if let Some(k) = self.keys.iter().position(|&x| x == info.m_key) {
                disc.set_key_idx(mi, k as u8);
            }
        } else if info.m_key_protect_bits != 0 && self.keys.len() > 1 {
            // Hidden (or truly zero, when any key passes): the key sent may be wrong.
            self.next_key(disc, mi, req.key);
        }
    }

    /// A request timed out: with several candidate keys, the one it carried may be wrong.
    pub fn timed_out(&self, disc: &mut Discovery, req: &Req) {
        if self.keys.len() > 1
            && let Some(mi) = disc.mgmt_index(req)
        {
            self.next_key(disc, mi, req.key);
        }
    }

    fn next_key(&self, disc: &mut Discovery, mi: usize, used: u8) {
        if disc.key_idx(mi) == used {
            disc.set_key_idx(mi, ((usize::from(used) + 1) % self.keys.len()) as u8);
        }
    }
}

/// After discovery, with previous keys: the configured ports (node, port) that do not hold
/// this term's key settings, one rotation Set each.
pub(crate) fn rekey_targets(disc: &Discovery, cfg: &SweeperConfig) -> Vec<(u32, u8)> {
    if cfg.m_key_prev.is_empty() {
        return Vec::new();
    }
    let sweep = disc.sweep();
    disc.end_ports_seen()
        .filter(|&(_, p, n, port)| {
            let i2 = &port.info;
            port.info_sweep == sweep
                && i2.lid.0 != 0
                && (n.is_switch || disc.path_sweep(n.port_index(p)) == sweep)
                && (i2.m_key != cfg.m_key
                    || i2.m_key_protect_bits != cfg.m_key_protect_bits
                    || (i2.m_key_lease_period != cfg.m_key_lease_period && !port.lease_not_held))
        })
        .map(|(i, p, _, _)| (i, p))
        .collect()
}

/// The PortInfo a rotation Set writes: the port's fields as read, with this term's M_Key
/// settings and MasterSMLID pointing at this SM (when its port has a LID).
pub(crate) fn rekey_info(disc: &Discovery, cfg: &SweeperConfig, node: u32, port: u8) -> PortInfo {
    let mut pi = disc.port_of(node, port).info;
    pi.port_state = 0;
    pi.port_phys_state = 0;
    pi.link_down_default_state = 0;
    pi.client_reregister = false;
    pi.m_key = cfg.m_key;
    pi.m_key_protect_bits = cfg.m_key_protect_bits;
    pi.m_key_lease_period = cfg.m_key_lease_period;
    if disc.local() != NONE {
        let own = disc.sm_port().info.lid;
        if own.0 != 0 {
            pi.master_sm_lid = own;
        }
    }
    pi
}

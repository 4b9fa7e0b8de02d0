//! M_Key checks (IBA 14.2.4): protect levels, violations, trap 256 and the lease.

use crate::VTime;
use crate::sim::{EvKind, SimFabric};
use crate::state::NONE;
use mad::{Method, NoticeDetails};

/// Outcome of the M_Key check (IBA 14.2.4.1, as linux qib/hfi1 implement it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum MKeyCheck {
    /// Key matches, is zero, or the method/protect level allows it.
    Pass,
    /// Get allowed, but PortInfo.M_Key reads as zero (protect level 1).
    PassHidden,
    /// Request fails: no response, violation counted, trap 256.
    Fail,
}

impl SimFabric {
    pub(crate) fn m_key_check(&mut self, port: u32, slot: u32, t: VTime) -> MKeyCheck {
        let mp = self.st.mgmt_port(port);
        let (key, method) = {
            let s = &self.slots[slot as usize].smp;
            (s.m_key, s.method)
        };
        // A switch's port 0 without a lease running: its key is in the node record.
        let n = &self.st.nodes[self.st.ports[mp as usize].node as usize];
        debug_assert!(
            n.sw == NONE || {
                let c = &self.st.cold[mp as usize];
                (c.info.m_key, c.lease_deadline != 0) == (n.mkey, n.lease_running)
            }
        );
        if n.sw != NONE && !n.lease_running && (n.mkey == 0 || n.mkey == key) {
            return MKeyCheck::Pass;
        }
        let p = &mut self.st.cold[mp as usize];
        if p.info.m_key == 0 || p.info.m_key == key {
            if p.lease_deadline != 0 {
                p.lease_deadline = 0;
                self.st.sync_mkey(mp);
            }
            return MKeyCheck::Pass;
        }
        let prot = p.info.m_key_protect_bits;
        if method == Method::GET {
            match prot {
                0 => return MKeyCheck::Pass,
                1 => return MKeyCheck::PassHidden,
                _ => {}
            }
        }
        p.info.m_key_violations = p.info.m_key_violations.saturating_add(1);
        self.acct.counters.m_key_violations += 1;
        if p.lease_deadline == 0 && p.info.m_key_lease_period != 0 {
            let deadline = t + u64::from(p.info.m_key_lease_period) * 1_000_000_000;
            p.lease_deadline = deadline;
            self.st.sync_mkey(mp);
            self.push(deadline, EvKind::LeaseCheck { port: mp });
        }
        let s = &self.slots[slot as usize].smp;
        let mut rp = [0u8; 30];
        let n = usize::from(s.hop_count.min(30));
        rp[..n].copy_from_slice(&s.return_path[1..=n]);
        let details = NoticeDetails::BadMKey {
            lid: self.st.source_lid(mp),
            dr_slid: s.dr_slid,
            method: s.method.0,
            attr_id: s.attr_id.0,
            attr_mod: s.attr_mod,
            m_key: s.m_key,
            dr_notice: s.is_directed(),
            dr_path_truncated: s.hop_count > 30,
            dr_hop_count: s.hop_count & 0x3F,
            dr_return_path: rp,
        };
        self.send_trap(mp, 256, mad::Notice::TYPE_SECURITY, details, t);
        MKeyCheck::Fail
    }

    /// The M_Key lease of `port` may have expired.
    pub(crate) fn lease_check(&mut self, port: u32, t: VTime) {
        let p = &mut self.st.cold[port as usize];
        if p.lease_deadline != 0 && p.lease_deadline <= t {
            p.lease_deadline = 0;
            p.info.m_key_protect_bits = 0;
            self.st.sync_mkey(port);
        }
    }
}

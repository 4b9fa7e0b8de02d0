//! [`Light`] owns what the running light sweep found; it never sends and never starts the
//! heavy sweep it calls for.
//!
//! Light sweeps: every interval, poll SwitchInfo of every switch. PortStateChange
//! set, a LinearFDBTop that is not what this SM wrote (the switch rebooted and lost its
//! LFT), or a switch that does not answer means a heavy sweep; otherwise nothing is
//! written. CA port changes show up as the PortStateChange of the switch at the other end
//! of the link. The other SMs the last heavy sweep found are asked for their SMInfo again:
//! a MASTER that outranks this SM means a heavy sweep too (which then stands by; see
//! `foreign`).
//!
//! LFT audit: each light sweep of a master that is up also reads back
//! [`LFT_AUDIT_BLOCKS`] LinearForwardingTable blocks (a cursor walks every block of the
//! routing in force, so a fabric of B blocks is covered every B / LFT_AUDIT_BLOCKS
//! intervals; cost: that many Gets per interval). A block that differs from what this SM
//! wants was changed behind its back (a rogue SM, a switch that reset one block):
//! [`crate::Event::LftDrift`] names the switch, its LID and the block, the switch's table
//! counts as unknown, and the heavy sweep that follows rewrites its blocks.
//!
//! P_Key audit: likewise [`PKEY_AUDIT_BLOCKS`] P_KeyTable blocks of the ports whose table
//! this master programmed (a second cursor); a block that differs raises
//! [`crate::Event::PKeyDrift`] (port GUID, port, LID, block), the port's table counts as
//! unknown and the heavy sweep that follows rewrites it.

use crate::counters::Counters;
use crate::state::Switch;
use mad::SwitchInfo;

/// LFT blocks read back per light sweep (see the module documentation).
pub const LFT_AUDIT_BLOCKS: usize = 8;

/// P_KeyTable blocks read back per light sweep (see the module documentation).
pub const PKEY_AUDIT_BLOCKS: usize = 8;

/// The running (or last) light sweep.
#[derive(Debug, Default)]
pub(crate) struct Light {
    /// A change was found (a heavy sweep follows).
    changed: bool,
    /// A change only a full discovery settles was found (or asked for at the start).
    full: bool,
    /// Switches (node indices) that answered with PortStateChange and nothing else wrong.
    links_changed: Vec<u32>,
    /// Switches (node indices) whose poll did not answer.
    unreached: Vec<u32>,
    /// The counters when it started.
    start: Counters,
    /// The next LFT block the audit reads (index into the routing's blocks, wrapping).
    audit_cursor: usize,
    /// The next P_KeyTable block the audit reads (index into the programmed blocks).
    pkey_cursor: usize,
}

impl Light {
    /// A light sweep starts with `counters`; `changed`: it calls for a heavy sweep
    /// whatever it finds.
    pub fn start(&mut self, changed: bool, counters: Counters) {
        self.changed = changed;
        self.full = changed;
        self.links_changed.clear();
        self.unreached.clear();
        self.start = counters;
    }

    /// The audit's next `LFT_AUDIT_BLOCKS` of `total` blocks (indices); the cursor moves on.
    pub fn audit_slice(&mut self, total: usize) -> Vec<usize> {
        if total == 0 {
            return Vec::new();
        }
        let n = LFT_AUDIT_BLOCKS.min(total);
        let start = self.audit_cursor % total;
        self.audit_cursor = (start + n) % total;
        (0..n).map(|k| (start + k) % total).collect()
    }

    /// The P_Key audit's next `PKEY_AUDIT_BLOCKS` of `total` blocks (indices).
    pub fn pkey_audit_slice(&mut self, total: usize) -> Vec<usize> {
        if total == 0 {
            return Vec::new();
        }
        let n = PKEY_AUDIT_BLOCKS.min(total);
        let start = self.pkey_cursor % total;
        self.pkey_cursor = (start + n) % total;
        (0..n).map(|k| (start + k) % total).collect()
    }

    /// A change was found.
    pub fn changed(&mut self) {
        self.changed = true;
        self.full = true;
    }

    /// A switch answered its SwitchInfo poll with `info`: a lost table calls for a full
    /// heavy sweep, a PortStateChange alone for one that re-reads that switch.
    pub fn on_switch_info(&mut self, s: &Switch, info: &SwitchInfo) {
        if !s.lft_valid || info.linear_fdb_top != s.fdb_top {
            self.changed();
        } else if info.port_state_change {
            self.changed = true;
            self.links_changed.push(s.node);
        }
    }

    /// A switch did not answer its poll: a link on its directed path may be down (the
    /// switches at its ends say which with their PortStateChange; alone, it calls for a
    /// full heavy sweep).
    pub fn unreached(&mut self, node: u32) {
        self.changed = true;
        self.unreached.push(node);
    }

    /// The switches the last light sweep could not reach (a targeted heavy sweep checks
    /// them); forgotten once taken.
    pub fn take_unreached(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.unreached)
    }

    /// The switches whose links changed, when nothing else did (None: a full discovery).
    pub fn links_changed(&self) -> Option<&[u32]> {
        (!self.full).then_some(&self.links_changed)
    }

    /// The light sweep ended: whether it found a change, and the SMPs sent since it
    /// started (`counters`: now).
    pub fn finish(&self, counters: &Counters) -> (bool, u64) {
        (self.changed, counters.since(&self.start).total())
    }
}

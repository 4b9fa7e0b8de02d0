//! SMP accounting: how many SMPs were sent, by attribute and method.

use mad::{AttributeId, Method};
use std::fmt;

/// Attribute rows of [`Counters`].
pub const ATTRS: [(&str, AttributeId); 11] = [
    ("NodeInfo", AttributeId::NODE_INFO),
    ("NodeDescription", AttributeId::NODE_DESCRIPTION),
    ("PortInfo", AttributeId::PORT_INFO),
    ("SwitchInfo", AttributeId::SWITCH_INFO),
    (
        "LinearForwardingTable",
        AttributeId::LINEAR_FORWARDING_TABLE,
    ),
    ("P_KeyTable", AttributeId::P_KEY_TABLE),
    ("SLtoVLMappingTable", AttributeId::SL_TO_VL_TABLE),
    ("VLArbitrationTable", AttributeId::VL_ARBITRATION_TABLE),
    ("SMInfo", AttributeId::SM_INFO),
    ("Notice", AttributeId::NOTICE),
    ("Other", AttributeId(0)),
];

/// Method columns of [`Counters`].
pub const METHODS: [(&str, Method); 4] = [
    ("Get", Method::GET),
    ("Set", Method::SET),
    ("GetResp", Method::GET_RESP),
    ("TrapRepress", Method::TRAP_REPRESS),
];

/// Counts of SMPs this SM sent and what happened to them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Sent SMPs by attribute row ([`ATTRS`]) and method column ([`METHODS`]); resends included.
    pub sent: [[u64; 4]; 11],
    /// Of the sent SMPs, how many were directed route.
    pub directed: u64,
    /// Of the sent SMPs, how many were LID-routed.
    pub lid_routed: u64,
    /// Requests that timed out (each resend counts once).
    pub timeouts: u64,
    /// Requests given up after every retry.
    pub failures: u64,
    /// Responses with a non-zero MAD status.
    pub error_status: u64,
    /// Responses matching no outstanding request (late, duplicated, foreign).
    pub stale: u64,
    /// LID-routed requests that were resent as directed route.
    pub dr_fallbacks: u64,
    /// Traps received.
    pub traps: u64,
}

fn row(attr: AttributeId) -> usize {
    ATTRS
        .iter()
        .position(|(_, a)| *a == attr)
        .unwrap_or(ATTRS.len() - 1)
}

impl Counters {
    /// Records one sent SMP.
    pub fn record(&mut self, attr: AttributeId, method: Method, directed: bool) {
        if let Some(c) = METHODS.iter().position(|(_, m)| *m == method) {
            self.sent[row(attr)][c] += 1;
        }
        if directed {
            self.directed += 1;
        } else {
            self.lid_routed += 1;
        }
    }

    /// SMPs sent of one attribute and method.
    pub fn get(&self, attr: AttributeId, method: Method) -> u64 {
        METHODS
            .iter()
            .position(|(_, m)| *m == method)
            .map_or(0, |c| self.sent[row(attr)][c])
    }

    /// Total SMPs sent.
    pub fn total(&self) -> u64 {
        self.sent.iter().flatten().sum()
    }

    /// Total Sets sent.
    pub fn sets(&self) -> u64 {
        self.sent.iter().map(|r| r[1]).sum()
    }

    /// Total Gets sent.
    pub fn gets(&self) -> u64 {
        self.sent.iter().map(|r| r[0]).sum()
    }

    /// `self - earlier`, field by field (counts since a snapshot).
    pub fn since(&self, earlier: &Counters) -> Counters {
        let mut d = *self;
        for (r, e) in d.sent.iter_mut().zip(earlier.sent.iter()) {
            for (a, b) in r.iter_mut().zip(e.iter()) {
                *a -= b;
            }
        }
        d.directed -= earlier.directed;
        d.lid_routed -= earlier.lid_routed;
        d.timeouts -= earlier.timeouts;
        d.failures -= earlier.failures;
        d.error_status -= earlier.error_status;
        d.stale -= earlier.stale;
        d.dr_fallbacks -= earlier.dr_fallbacks;
        d.traps -= earlier.traps;
        d
    }

    /// Non-zero (attribute, method, count) triples, for reports.
    pub fn nonzero(&self) -> impl Iterator<Item = (&'static str, &'static str, u64)> + '_ {
        ATTRS.iter().enumerate().flat_map(move |(r, (an, _))| {
            METHODS
                .iter()
                .enumerate()
                .filter(move |(c, _)| self.sent[r][*c] != 0)
                .map(move |(c, (mn, _))| (*an, *mn, self.sent[r][c]))
        })
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} SMPs (", self.total())?;
        let mut first = true;
        for (a, m, n) in self.nonzero() {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{a} {m} {n}")?;
        }
        write!(
            f,
            "; {} directed, {} LID-routed, {} timeouts, {} failed)",
            self.directed, self.lid_routed, self.timeouts, self.failures
        )
    }
}

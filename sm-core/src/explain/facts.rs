//! The facts of an explanation as operators read them: state names, PortInfo fields as
//! read, requests given up, and what the performance manager's counters say of a port.

use super::troubles::{Failure, Why};
use crate::perf::{Health, PerfManager};
use fabric::Guid;
use mad::PortInfo;
use mad::perf::Counter;

const SEC: u64 = 1_000_000_000;

/// PortInfo.PortState by name.
pub fn port_state_name(s: u8) -> &'static str {
    match s {
        0 => "unknown (never read)",
        1 => "Down",
        2 => "Init",
        3 => "Armed",
        4 => "Active",
        5 => "ActiveDefer",
        _ => "reserved",
    }
}

/// PortInfo.PortPhysicalState by name.
pub fn phys_state_name(s: u8) -> &'static str {
    match fabric::PhysState::from_wire(s) {
        // 0 in a PortInfo as read: not known (NoChange is a Set's value).
        Some(fabric::PhysState::NoChange) => "unknown",
        Some(p) => p.name(),
        None => "reserved",
    }
}

/// LinkWidthActive by name.
fn width_name(w: u8) -> &'static str {
    match w {
        0x01 => "1X",
        0x02 => "4X",
        0x04 => "8X",
        0x08 => "12X",
        0x10 => "2X",
        _ => "?",
    }
}

/// The active speed by name (the extended fields win when set).
fn speed_name(i: &PortInfo) -> &'static str {
    match (i.link_speed_ext_active, i.link_speed_active) {
        (0x01, _) => "FDR",
        (0x02, _) => "EDR",
        (0x04, _) => "HDR",
        (0x08, _) => "NDR",
        (_, 0x1) => "SDR",
        (_, 0x2) => "DDR",
        (_, 0x4) => "QDR",
        _ => "?",
    }
}

/// PortInfo as read, in one line.
pub(super) fn port_info_fact(i: &PortInfo, read: u64, is_switch_port: bool) -> String {
    let mut t = format!(
        "PortInfo as read in heavy sweep {read}: PortState {}, PortPhysicalState {}",
        port_state_name(i.port_state),
        phys_state_name(i.port_phys_state)
    );
    if i.port_phys_state == 5 {
        t.push_str(&format!(
            ", link {} {}",
            width_name(i.link_width_active),
            speed_name(i)
        ));
    }
    if !is_switch_port {
        t.push_str(&format!(
            ", LID {}, MasterSMLID {}",
            i.lid.0, i.master_sm_lid.0
        ));
    }
    t
}

/// The M_Key fields of a management port's PortInfo, when they matter (key values are
/// secrets: never printed).
pub(super) fn m_key_fact(i: &PortInfo, known: bool) -> Option<String> {
    if i.m_key_protect_bits == 0 && i.m_key_violations == 0 {
        return None;
    }
    let key = if i.m_key == 0 {
        "reads as 0 (hidden from a requester without the key, or none)"
    } else if known {
        "one of this SM's keys"
    } else {
        "not one of this SM's keys"
    };
    Some(format!(
        "M_Key protect bits {}, M_Key {key}, M_KeyViolations {}",
        i.m_key_protect_bits, i.m_key_violations
    ))
}

/// A request given up, in one line.
pub(super) fn failure_fact(f: &Failure, whose: &str) -> String {
    let why = match f.why {
        Why::NoAnswer => format!("got no answer ({} sends)", f.sends),
        Why::Status(s) => format!("was refused with MAD status {s:#06x}"),
        Why::NotSent => "could not be sent (no directed route reaches it any more)".to_string(),
    };
    let more = if f.count > 1 {
        format!(
            "; {} requests given up on it since one was last answered",
            f.count
        )
    } else {
        String::new()
    };
    format!(
        "the SM's {} to {whose} {why} in heavy sweep {}{more}",
        f.asked.name(),
        f.sweep
    )
}

/// What the performance manager says of a port.
#[derive(Debug, Default)]
pub(super) struct PerfView {
    pub facts: Vec<String>,
    /// LinkDownedCounter's increase over the window.
    pub link_downed: u64,
    /// An error counter over its threshold still grows, or the link health says degraded.
    pub degraded: bool,
    /// The link's health as assessed, when known.
    pub health: Option<Health>,
}

/// The counters of `(node, port)`, and its link's health with `health` (left out for a
/// port that is not up: the health was assessed when the link last was).
pub(super) fn perf_view(perf: &PerfManager, node: Guid, port: u8, health: bool) -> PerfView {
    let mut v = PerfView::default();
    let Some(r) = perf.port(node, port) else {
        v.facts.push(format!(
            "no counters of {node} port {port} (the performance manager has not read it)"
        ));
        return v;
    };
    if let Some(last) = &r.last {
        let (d, dt) = r.window_delta(Counter::LinkDowned);
        v.link_downed = d;
        if d > 0 {
            v.facts.push(format!(
                "LinkDownedCounter grew by {d} over the last {} s of counter readings (now {}): the link flaps",
                dt / SEC,
                last.value(Counter::LinkDowned)
            ));
        }
        let over = r.over(&perf.config().thresholds);
        if !over.is_empty() {
            let list: Vec<String> = over
                .iter()
                .map(|(c, n)| format!("{} {n}", c.name()))
                .collect();
            v.facts.push(format!(
                "counters over their thresholds: {}",
                list.join(", ")
            ));
        }
        v.degraded = r.degraded();
    }
    if !health {
        return v;
    }
    if let Some(l) = perf.links().into_iter().find(|l| {
        (l.a.node_guid == node && l.a.port == port) || (l.b.node_guid == node && l.b.port == port)
    }) {
        v.degraded |= l.health == Health::Degraded;
        v.health = Some(l.health);
        let why = if l.why.is_empty() {
            String::new()
        } else {
            format!(" ({})", l.why)
        };
        v.facts
            .push(format!("link health: {}{why}", l.health.name()));
    }
    v
}

//! PortInfo as the master read it, rendered field by field the way `smpquery portinfo`
//! prints it (names and order of libibmad's fields; values decoded the same way for the
//! enumerations: link state, widths, speeds, MTUs, VLs), and added to the admin API's
//! GetPort reply ([`fill`]). Pure: the daemon hands in the attribute as its master read it.

use mad::PortInfo;
use proto::admin::{GetPortReply, PortInfoField};

/// The names of the bits set in `mask`, joined with " or " as `smpquery` prints them;
/// None when no named bit is set.
fn bit_names(mask: u8, names: &[(u8, &str)]) -> Option<String> {
    let v: Vec<&str> = names
        .iter()
        .filter(|(b, _)| mask & b != 0)
        .map(|(_, n)| *n)
        .collect();
    (!v.is_empty()).then(|| v.join(" or "))
}

fn width(mask: u8) -> String {
    const NAMES: [(u8, &str); 5] = [(1, "1X"), (2, "4X"), (4, "8X"), (8, "12X"), (16, "2X")];
    bit_names(mask, &NAMES).unwrap_or_else(|| format!("undefined ({mask})"))
}

fn speed(mask: u8) -> String {
    const NAMES: [(u8, &str); 3] = [(1, "2.5 Gbps"), (2, "5.0 Gbps"), (4, "10.0 Gbps")];
    bit_names(mask, &NAMES).unwrap_or_else(|| format!("undefined ({mask})"))
}

fn speed_ext(v: u8) -> String {
    const NAMES: [(u8, &str); 4] = [
        (1, "14.0625 Gbps"),
        (2, "25.78125 Gbps"),
        (4, "53.125 Gbps"),
        (8, "106.25 Gbps"),
    ];
    if v == 0 {
        return "No Extended Speed".into();
    }
    bit_names(v, &NAMES).unwrap_or_else(|| v.to_string())
}

/// PortInfo.PortState as `smpquery` names it.
pub fn link_state(s: u8) -> &'static str {
    match s {
        0 => "NoChange",
        1 => "Down",
        2 => "Initialize",
        3 => "Armed",
        4 => "Active",
        _ => "?",
    }
}

fn phys_state(s: u8) -> &'static str {
    fabric::PhysState::from_wire(s).map_or("NoChange", fabric::PhysState::name)
}

fn mtu(m: u8) -> String {
    match m {
        1..=5 => (128u32 << m).to_string(),
        _ => format!("undefined ({m})"),
    }
}

fn vls(v: u8) -> String {
    match v {
        1 => "VL0".into(),
        2 => "VL0-1".into(),
        3 => "VL0-3".into(),
        4 => "VL0-7".into(),
        5 => "VL0-14".into(),
        _ => format!("undefined ({v})"),
    }
}

/// Every field of `p` in `smpquery portinfo` order (Mkey hidden, as smpquery hides it).
pub fn fields(p: &PortInfo) -> Vec<(&'static str, String)> {
    let b = |x: bool| u8::from(x).to_string();
    vec![
        ("Mkey", "<hidden>".into()),
        ("GidPrefix", format!("{:#018x}", p.gid_prefix)),
        ("Lid", p.lid.0.to_string()),
        ("SMLid", p.master_sm_lid.0.to_string()),
        ("CapMask", format!("{:#x}", p.capability_mask)),
        ("DiagCode", format!("{:#06x}", p.diag_code)),
        ("MkeyLeasePeriod", p.m_key_lease_period.to_string()),
        ("LocalPort", p.local_port_num.to_string()),
        ("LinkWidthEnabled", width(p.link_width_enabled)),
        ("LinkWidthSupported", width(p.link_width_supported)),
        ("LinkWidthActive", width(p.link_width_active)),
        ("LinkSpeedSupported", speed(p.link_speed_supported)),
        ("LinkState", link_state(p.port_state).into()),
        ("PhysLinkState", phys_state(p.port_phys_state).into()),
        (
            "LinkDownDefState",
            phys_state(p.link_down_default_state).into(),
        ),
        ("ProtectBits", p.m_key_protect_bits.to_string()),
        ("LMC", p.lmc.to_string()),
        ("LinkSpeedActive", speed(p.link_speed_active)),
        ("LinkSpeedEnabled", speed(p.link_speed_enabled)),
        ("NeighborMTU", mtu(p.neighbor_mtu)),
        ("SMSL", p.master_sm_sl.to_string()),
        ("VLCap", vls(p.vl_cap)),
        ("InitType", format!("{:#04x}", p.init_type)),
        ("VLHighLimit", p.vl_high_limit.to_string()),
        ("VLArbHighCap", p.vl_arbitration_high_cap.to_string()),
        ("VLArbLowCap", p.vl_arbitration_low_cap.to_string()),
        ("InitReply", format!("{:#04x}", p.init_type_reply)),
        ("MtuCap", mtu(p.mtu_cap)),
        ("VLStallCount", p.vl_stall_count.to_string()),
        ("HoqLife", p.hoq_life.to_string()),
        ("OperVLs", vls(p.operational_vls)),
        ("PartEnforceInb", b(p.partition_enforcement_inbound)),
        ("PartEnforceOutb", b(p.partition_enforcement_outbound)),
        ("FilterRawInb", b(p.filter_raw_inbound)),
        ("FilterRawOutb", b(p.filter_raw_outbound)),
        ("MkeyViolations", p.m_key_violations.to_string()),
        ("PkeyViolations", p.p_key_violations.to_string()),
        ("QkeyViolations", p.q_key_violations.to_string()),
        ("GuidCap", p.guid_cap.to_string()),
        ("ClientReregister", b(p.client_reregister)),
        (
            "McastPkeyTrapSuppressionEnabled",
            p.multicast_pkey_trap_suppression_enabled.to_string(),
        ),
        ("SubnetTimeout", p.subnet_timeout.to_string()),
        ("RespTimeVal", p.resp_time_value.to_string()),
        ("LocalPhysErr", p.local_phy_errors.to_string()),
        ("OverrunErr", p.overrun_errors.to_string()),
        ("MaxCreditHint", p.max_credit_hint.to_string()),
        ("RoundTrip", p.link_round_trip_latency.to_string()),
        ("CapabilityMask2", format!("{:#x}", p.capability_mask2)),
        ("LinkSpeedExtActive", speed_ext(p.link_speed_ext_active)),
        (
            "LinkSpeedExtSupported",
            p.link_speed_ext_supported.to_string(),
        ),
        ("LinkSpeedExtEnabled", p.link_speed_ext_enabled.to_string()),
        ("LinkSpeedExtActive2", p.link_speed_ext_active2.to_string()),
        (
            "LinkSpeedExtSupported2",
            p.link_speed_ext_supported2.to_string(),
        ),
        (
            "LinkSpeedExtEnabled2",
            p.link_speed_ext_enabled2.to_string(),
        ),
    ]
}

/// When and by whom a PortInfo was read: the master's heavy sweep whose discovery read it,
/// when that discovery completed (Unix ms; 0 when no longer remembered) and the master's
/// replica id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadBy {
    /// Heavy sweep number.
    pub sweep: u64,
    /// Unix milliseconds.
    pub unix_ms: u64,
    /// The master's replica id.
    pub replica: u64,
}

/// Adds the master's reading `info` to a GetPort reply: every field, when and by whom it was
/// read, and the port state as read.
pub fn fill(reply: &mut GetPortReply, info: &PortInfo, read: ReadBy) {
    reply.port_info = fields(info)
        .into_iter()
        .map(|(name, value)| PortInfoField {
            name: name.into(),
            value,
        })
        .collect();
    reply.read_sweep = read.sweep;
    reply.read_unix_ms = read.unix_ms;
    reply.read_by_replica = read.replica;
    reply.port_state = link_state(info.port_state).into();
    reply.source = "replicated+master-read".into();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_smpquery() {
        let p = PortInfo {
            link_width_supported: 0x1F,
            link_width_active: 2,
            link_speed_supported: 7,
            port_state: 4,
            port_phys_state: 5,
            neighbor_mtu: 4,
            vl_cap: 4,
            lid: fabric::Lid(7),
            m_key: 0x1234,
            ..PortInfo::default()
        };
        let f = fields(&p);
        let get = |n: &str| f.iter().find(|x| x.0 == n).map(|x| x.1.clone()).unwrap();
        assert_eq!(get("LinkWidthSupported"), "1X or 4X or 8X or 12X or 2X");
        assert_eq!(get("LinkWidthActive"), "4X");
        assert_eq!(
            get("LinkSpeedSupported"),
            "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"
        );
        assert_eq!(get("LinkState"), "Active");
        assert_eq!(get("PhysLinkState"), "LinkUp");
        assert_eq!(get("NeighborMTU"), "2048");
        assert_eq!(get("VLCap"), "VL0-7");
        assert_eq!(get("Lid"), "7");
        assert_eq!(get("Mkey"), "<hidden>");
        assert_eq!(get("LinkSpeedExtActive"), "No Extended Speed");
        // Every decoded field is there exactly once.
        let mut names: Vec<_> = f.iter().map(|x| x.0).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), f.len());
        assert_eq!(f.len(), 54);
    }
}

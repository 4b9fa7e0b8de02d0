//! The SA state (issue 10) as a command carries it (`set_sa_state`, a whole-state replace
//! proposed by the master's SA after each change): checked before it replaces the state in
//! force, so that every replica keeps only an SA state a new master can load.

use proto::state::SaState;
use std::collections::BTreeSet;

/// Checks a proposed SA state: GIDs are 16 bytes, groups have multicast MGIDs and distinct
/// MGIDs and MLIDs in 0xC000..=0xFFFE, members have a JoinState, 8-bit and 16-bit fields are
/// in range, services carry their 176-byte record and subscriptions their 36-byte
/// InformInfo. The error names the first offending item.
pub(crate) fn validate(s: &SaState) -> Result<(), String> {
    let mut mgids = BTreeSet::new();
    let mut mlids = BTreeSet::new();
    for (i, g) in s.groups.iter().enumerate() {
        if g.mgid.len() != 16 || g.mgid[0] != 0xFF {
            return Err(format!("group {i}: MGID is not a 16-byte multicast GID"));
        }
        if !(0xC000..=0xFFFE).contains(&g.mlid) {
            return Err(format!("group {i}: MLID {:#x} is not multicast", g.mlid));
        }
        if !mgids.insert(g.mgid.clone()) {
            return Err(format!("group {i}: MGID given twice"));
        }
        if !mlids.insert(g.mlid) {
            return Err(format!("group {i}: MLID {:#x} given twice", g.mlid));
        }
        let bytes = [
            ("MTU", g.mtu),
            ("rate", g.rate),
            ("SL", g.sl),
            ("TClass", g.tclass),
            ("scope", g.scope),
            ("HopLimit", g.hop_limit),
            ("PacketLifeTime", g.pkt_life),
        ];
        if let Some((name, v)) = bytes.iter().find(|(_, v)| *v > 0xFF) {
            return Err(format!("group {i}: {name} {v} out of range"));
        }
        if g.pkey > 0xFFFF {
            return Err(format!("group {i}: P_Key {:#x} out of range", g.pkey));
        }
        for (j, m) in g.members.iter().enumerate() {
            if m.port_gid.len() != 16 {
                return Err(format!("group {i} member {j}: port GID is not 16 bytes"));
            }
            if m.join_state == 0 || m.join_state > 0xF {
                return Err(format!(
                    "group {i} member {j}: JoinState {:#x} invalid",
                    m.join_state
                ));
            }
        }
    }
    for (i, v) in s.services.iter().enumerate() {
        if v.service_gid.len() != 16 || v.service_data.len() != 176 || v.service_pkey > 0xFFFF {
            return Err(format!(
                "service {i}: GID must be 16 bytes, the record 176 bytes, the P_Key 16 bits"
            ));
        }
    }
    for (i, f) in s.informs.iter().enumerate() {
        if f.subscriber_gid.len() != 16 || f.inform_info.len() != 36 || f.subscriber_lid > 0xFFFF {
            return Err(format!(
                "subscription {i}: GID must be 16 bytes, the InformInfo 36 bytes, the LID 16 bits"
            ));
        }
    }
    // Alias GUIDs: a GUIDInfo index fits 16 bits, index 0 is the port GUID (never an
    // alias), and no alias GUID is given twice.
    let mut aliases = BTreeSet::new();
    for (i, a) in s.aliases.iter().chain(&s.assigned).enumerate() {
        if a.index == 0 || a.index > 0xFFFF || a.alias == 0 {
            return Err(format!("alias {i}: index {} or GUID 0 invalid", a.index));
        }
        if i < s.aliases.len() && !aliases.insert(a.alias) {
            return Err(format!("alias {i}: GUID {:#x} given twice", a.alias));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::state::{InformSubscription, McGroup, McMember, ServiceRecord};

    fn group(mlid: u32, last: u8) -> McGroup {
        let mut mgid = vec![0xFF, 0x12, 0x40, 0x1B];
        mgid.extend_from_slice(&[0; 11]);
        mgid.push(last);
        McGroup {
            mgid,
            mlid,
            pkey: 0xFFFF,
            mtu: 4,
            rate: 3,
            members: vec![McMember {
                port_gid: vec![0xFE; 16],
                join_state: 1,
                proxy_join: false,
            }],
            ..McGroup::default()
        }
    }

    #[test]
    fn a_good_state_passes_and_each_fault_is_named() {
        let ok = SaState {
            groups: vec![group(0xC000, 1), group(0xC001, 2)],
            services: vec![ServiceRecord {
                service_gid: vec![0; 16],
                service_data: vec![0; 176],
                ..ServiceRecord::default()
            }],
            informs: vec![InformSubscription {
                subscriber_gid: vec![0; 16],
                inform_info: vec![0; 36],
                ..InformSubscription::default()
            }],
            aliases: vec![proto::state::AliasGuid {
                port_guid: 1,
                index: 1,
                alias: 0xA1,
            }],
            ..SaState::default()
        };
        assert_eq!(validate(&ok), Ok(()));
        let mut dup = ok.clone();
        dup.aliases.push(dup.aliases[0]);
        assert!(validate(&dup).unwrap_err().contains("given twice"));
        let mut zero = ok.clone();
        zero.aliases[0].index = 0;
        assert!(validate(&zero).is_err());
        assert_eq!(validate(&SaState::default()), Ok(()));
        let bad = |f: &dyn Fn(&mut SaState), want: &str| {
            let mut s = ok.clone();
            f(&mut s);
            let e = validate(&s).unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        bad(&|s| s.groups[1].mlid = 0xC000, "MLID 0xc000 given twice");
        bad(
            &|s| s.groups[1].mgid = s.groups[0].mgid.clone(),
            "MGID given twice",
        );
        bad(&|s| s.groups[0].mlid = 0x10, "not multicast");
        bad(&|s| s.groups[0].mgid[0] = 0xFE, "multicast GID");
        bad(&|s| s.groups[0].members[0].join_state = 0, "JoinState");
        bad(
            &|s| s.groups[0].members[0].port_gid.pop().map(|_| ()).unwrap(),
            "16 bytes",
        );
        bad(&|s| s.groups[0].sl = 300, "SL 300");
        bad(&|s| s.services[0].service_data.truncate(10), "service 0");
        bad(&|s| s.informs[0].inform_info.clear(), "subscription 0");
    }
}

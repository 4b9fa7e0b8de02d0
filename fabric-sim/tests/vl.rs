//! Virtual lanes: the SL a data packet carries is mapped hop by hop through the
//! SLtoVLMappingTables the SMA stores; VL15 and VLs beyond OperationalVLs drop and count;
//! OperationalVLs Sets above VLCap are refused.

mod common;

use common::*;
use fabric::{Lid, NodeId, PKey};
use fabric_sim::{
    Delivery, DropReason, Fault, IBSIM_SL2VL_RESET, SimConfig, SimError, VlHop, control,
};
use mad::{PortInfo, SlToVlTable, Smp, SmpAttribute};
use serde_json::json;

const INVALID: u16 = 0x1C;

fn up() -> Small {
    let mut s = small(SimConfig::default());
    s.bring_up();
    s
}

/// (node, output port, VL) of each hop.
fn hops(v: &[VlHop]) -> Vec<(NodeId, u8, u8)> {
    v.iter().map(|h| (h.node, h.port, h.vl)).collect()
}

/// Writes an SLtoVL table by DR (modifier `in << 8 | out` on a switch, 0 on a CA).
fn set_sl2vl(s: &mut Small, path: &[u8], modifier: u32, vl: [u8; 16]) {
    let t = SlToVlTable { vl };
    let (st, back) = dr_set(&mut s.fab, s.sm, path, modifier, &t).expect("answered");
    assert_eq!(st, 0);
    assert_eq!(back, t);
}

/// Every SL mapped to `vl`, except `sl` mapped to `to`.
fn table(vl: u8, sl: usize, to: u8) -> [u8; 16] {
    let mut t = [vl; 16];
    t[sl] = to;
    t
}

fn set_port_field(s: &mut Small, path: &[u8], port: u32, f: impl FnOnce(&mut PortInfo)) -> u16 {
    modify_port_info(&mut s.fab, s.sm, path, port, |pi| {
        pi.port_state = 0;
        pi.port_phys_state = 0;
        f(pi);
    })
}

fn port_info(s: &mut Small, path: &[u8], port: u32) -> PortInfo {
    let (st, pi) = dr_get::<PortInfo>(&mut s.fab, s.sm, path, port).expect("answered");
    assert_eq!(st, 0);
    pi
}

#[test]
fn unprogrammed_tables_hold_ibsims_reset_mapping() {
    let mut s = up();
    let (h1, h3, s1, s2) = (s.h[0], s.h[2], s.s1, s.s2);
    // SL n -> VL n on every hop while nothing is programmed: H1[1] -> S1[3] -> S2[1].
    for sl in 0..8u8 {
        let p = s.fab.vl_path(Lid(1), Lid(3), sl).unwrap();
        assert_eq!(
            hops(&p),
            vec![(h1, 1, sl), (s1, 3, sl), (s2, 1, sl)],
            "SL {sl}"
        );
    }
    // SL 15 -> VL 7.
    let p = s.fab.vl_path(Lid(1), Lid(3), 15).unwrap();
    assert_eq!(hops(&p), vec![(h1, 1, 7), (s1, 3, 7), (s2, 1, 7)]);
    assert_eq!(p[1].node_guid, s.fab.node_guid(s1).unwrap());
    // SL 9 -> VL 9, beyond the power-up OperationalVLs (VL0-7): dropped at the source.
    assert_eq!(
        s.fab.vl_path(Lid(1), Lid(3), 9),
        Err(SimError::Dropped(DropReason::VlNotOperational {
            node: h1,
            port: 1,
            vl: 9
        }))
    );
    // The SMA reports the table it enforces.
    let (st, t) = dr_get::<SlToVlTable>(&mut s.fab, s.sm, S1_PATH, SlToVlTable::modifier(1, 3))
        .expect("answered");
    assert_eq!(st, 0);
    assert_eq!(t.vl, IBSIM_SL2VL_RESET);
    let (_, t) = dr_get::<SlToVlTable>(&mut s.fab, s.sm, H_PATHS[2], 0).expect("answered");
    assert_eq!(t.vl, IBSIM_SL2VL_RESET);
    // The reverse direction and the deliver check agree.
    let p = s.fab.vl_path(Lid(3), Lid(1), 4).unwrap();
    assert_eq!(hops(&p), vec![(h3, 1, 4), (s2, 3, 4), (s1, 1, 4)]);
    assert!(
        s.fab
            .deliver_sl(s.hg(3), Lid(1), PKey::DEFAULT_FULL, 4)
            .is_delivered()
    );
}

#[test]
fn an_all_zero_reset_table_puts_every_sl_on_vl0() {
    let mut s = small(SimConfig {
        sl2vl_reset: [0; 16],
        ..SimConfig::default()
    });
    s.bring_up();
    for sl in 0..16u8 {
        let p = s.fab.vl_path(Lid(2), Lid(4), sl).unwrap();
        assert!(p.iter().all(|h| h.vl == 0), "SL {sl}: {p:?}");
        assert_eq!(p.len(), 3);
    }
    let (_, t) = dr_get::<SlToVlTable>(&mut s.fab, s.sm, S2_PATH, SlToVlTable::modifier(3, 2))
        .expect("answered");
    assert_eq!(t.vl, [0; 16]);
}

#[test]
fn programmed_tables_map_hop_by_hop() {
    let mut s = up();
    let (h1, h2, s1, s2) = (s.h[0], s.h[1], s.s1, s.s2);
    // SL 2: VL 1 out of H1, VL 3 through S1 (1 -> 3), VL 2 through S2 (3 -> 1).
    set_sl2vl(&mut s, H_PATHS[0], 0, table(0, 2, 1));
    set_sl2vl(&mut s, S1_PATH, SlToVlTable::modifier(1, 3), table(0, 2, 3));
    set_sl2vl(&mut s, S2_PATH, SlToVlTable::modifier(3, 1), table(0, 2, 2));
    let p = s.fab.vl_path(Lid(1), Lid(3), 2).unwrap();
    assert_eq!(hops(&p), vec![(h1, 1, 1), (s1, 3, 3), (s2, 1, 2)]);
    // Other SLs follow the same tables (every other entry is VL 0).
    let p = s.fab.vl_path(Lid(1), Lid(3), 5).unwrap();
    assert!(p.iter().all(|h| h.vl == 0));
    // The input port selects the table: from H2 (S1 port 2 -> 3) S1 still holds the
    // reset table for (2, 3), S2's (3, 1) is the programmed one.
    let p = s.fab.vl_path(Lid(2), Lid(3), 2).unwrap();
    assert_eq!(hops(&p), vec![(h2, 1, 2), (s1, 3, 2), (s2, 1, 2)]);
    // The query API reads the tables in force.
    assert_eq!(s.fab.sl2vl(s1, 1, 3).unwrap().vl, table(0, 2, 3));
    assert_eq!(s.fab.sl2vl(s1, 2, 3).unwrap().vl, IBSIM_SL2VL_RESET);
    assert_eq!(s.fab.sl2vl(h1, 0, 1).unwrap().vl, table(0, 2, 1));
    assert!(s.fab.sl2vl(h1, 0, 0).is_err());
    // A delivered packet is counted per (node, port, VL).
    let d = s.fab.deliver_sl(s.hg(1), Lid(3), PKey::DEFAULT_FULL, 2);
    assert!(d.is_delivered());
    let a = s.fab.accounting();
    assert_eq!(a.vl_counters(h1, 1, 1).xmit, 1);
    assert_eq!(a.vl_counters(s1, 3, 3).xmit, 1);
    assert_eq!(a.vl_counters(s2, 1, 2).xmit, 1);
    assert_eq!(a.vl_counters(s.h[2], 1, 2).delivered, 1);
    assert_eq!(a.vl_counters(s1, 3, 2), Default::default());
    assert_eq!(a.per_vl().len(), 4);
    assert_eq!(a.vl_totals(3).xmit, 1);
}

#[test]
fn sl_2_rides_vl_2_end_to_end_when_every_table_says_so() {
    let mut s = up();
    let identity: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7];
    for (path, _) in Small::link_ends().into_iter().filter(|(p, _)| {
        // CA ports: the host paths (their last hop is not a switch).
        H_PATHS.contains(p)
    }) {
        set_sl2vl(&mut s, path, 0, identity);
    }
    for (path, ports) in [(S1_PATH, 4u8), (S2_PATH, 3u8)] {
        for i in 0..=ports {
            for o in 1..=ports {
                set_sl2vl(&mut s, path, SlToVlTable::modifier(i, o), identity);
            }
        }
    }
    for src in 1..=5u16 {
        for dst in 1..=5u16 {
            for sl in 0..16u8 {
                let p = s.fab.vl_path(Lid(src), Lid(dst), sl).unwrap();
                assert!(p.iter().all(|h| h.vl == sl % 8), "{src}->{dst} SL {sl}");
            }
        }
    }
}

#[test]
fn a_vl_beyond_operational_vls_drops_and_counts() {
    let mut s = up();
    let (h1, s1) = (s.h[0], s.s1);
    // S1 port 3 (towards S2) runs VL0-1 only.
    assert_eq!(
        set_port_field(&mut s, S1_PATH, 3, |pi| pi.operational_vls = 2),
        0
    );
    assert_eq!(port_info(&mut s, S1_PATH, 3).operational_vls, 2);
    let d = s.fab.deliver_sl(s.hg(1), Lid(3), PKey::DEFAULT_FULL, 3);
    let why = DropReason::VlNotOperational {
        node: s1,
        port: 3,
        vl: 3,
    };
    assert_eq!(d, Delivery::Dropped(why));
    assert_eq!(
        s.fab.vl_path(Lid(1), Lid(3), 3),
        Err(SimError::Dropped(why))
    );
    let a = s.fab.accounting();
    assert_eq!(a.vl_counters(s1, 3, 3).dropped_not_operational, 1);
    assert_eq!(a.vl_counters(s1, 3, 3).dropped(), 1);
    assert_eq!(
        a.vl_counters(h1, 1, 3).xmit,
        1,
        "the first link was crossed"
    );
    assert_eq!(a.counters.data_dropped_vl_not_operational, 1);
    assert_eq!(a.counters.data_dropped_vl15, 0);
    // VL 1 still passes; H2 -> H5 does not use the port at all.
    assert!(
        s.fab
            .deliver_sl(s.hg(1), Lid(3), PKey::DEFAULT_FULL, 1)
            .is_delivered()
    );
    assert!(
        s.fab
            .deliver_sl(s.hg(2), Lid(5), PKey::DEFAULT_FULL, 7)
            .is_delivered()
    );
    // The check is at the output port: S2 port 3 still runs VL0-7 towards S1, and S1
    // port 1 towards H1 too.
    assert!(
        s.fab
            .deliver_sl(s.hg(3), Lid(1), PKey::DEFAULT_FULL, 3)
            .is_delivered()
    );
    // GMPs are data packets: same rule.
    let client = s.fab.attach_client(s.hg(3)).unwrap();
    let _ = client;
    let now = s.fab.now();
    let d = s
        .fab
        .send_gmp_sl(now, s.sm, Lid(3), PKey::DEFAULT_FULL, 3, &[0u8; 256])
        .unwrap();
    assert_eq!(d, Delivery::Dropped(why));
    assert_eq!(
        s.fab
            .accounting()
            .vl_counters(s1, 3, 3)
            .dropped_not_operational,
        2
    );
    assert_eq!(
        s.fab
            .send_gmp_sl(now, s.sm, Lid(3), PKey::DEFAULT_FULL, 16, &[0u8; 256]),
        Err(SimError::BadSl(16))
    );
    // SMPs ride VL15 and are not affected.
    let q = Smp::lid_get(tid(), mad::NodeInfo::ID, 0);
    assert_eq!(lid(&mut s.fab, s.sm, 3, &q).expect("answered").status, 0);
}

#[test]
fn an_sl_mapped_to_vl15_drops_and_counts() {
    let mut s = up();
    let (h1, s1, s2) = (s.h[0], s.s1, s.s2);
    // H1 maps SL 5 to VL15: dropped at its own port.
    set_sl2vl(&mut s, H_PATHS[0], 0, table(0, 5, 15));
    let d = s.fab.deliver_sl(s.hg(1), Lid(4), PKey::DEFAULT_FULL, 5);
    assert_eq!(
        d,
        Delivery::Dropped(DropReason::SlToVl15 { node: h1, port: 1 })
    );
    // S2 maps SL 6 from port 3 to port 2 onto VL15: dropped there, after two links.
    set_sl2vl(
        &mut s,
        S2_PATH,
        SlToVlTable::modifier(3, 2),
        table(1, 6, 15),
    );
    let d = s.fab.deliver_sl(s.hg(1), Lid(4), PKey::DEFAULT_FULL, 6);
    assert_eq!(
        d,
        Delivery::Dropped(DropReason::SlToVl15 { node: s2, port: 2 })
    );
    assert_eq!(
        s.fab.vl_path(Lid(1), Lid(4), 6),
        Err(SimError::Dropped(DropReason::SlToVl15 {
            node: s2,
            port: 2
        }))
    );
    let a = s.fab.accounting();
    assert_eq!(a.vl_counters(h1, 1, 15).dropped_vl15, 1);
    assert_eq!(a.vl_counters(s2, 2, 15).dropped_vl15, 1);
    // H1 sent SL 6 on VL 0; S1 (1 -> 3) still holds the reset table: VL 6.
    assert_eq!(a.vl_counters(h1, 1, 0).xmit, 1);
    assert_eq!(a.vl_counters(s1, 3, 6).xmit, 1);
    assert_eq!(a.counters.data_dropped_vl15, 2);
    assert_eq!(a.vl_totals(15).dropped_vl15, 2);
    // Other SLs through the same tables still pass (VL 1 out of S2 port 2).
    let p = s.fab.vl_path(Lid(1), Lid(4), 1).unwrap();
    assert_eq!(p.last().map(|h| (h.node, h.port, h.vl)), Some((s2, 2, 1)));
    // SMPs never consult SLtoVL: LID-routed and DR SMPs from H1 still get answers.
    let q = Smp::lid_get(tid(), mad::NodeInfo::ID, 0);
    assert_eq!(lid(&mut s.fab, s.sm, 4, &q).expect("answered").status, 0);
    assert!(s.fab.deliver_smp(s.hg(1), Lid(4)).is_delivered());
}

#[test]
fn operational_vls_above_vlcap_is_refused_and_changes_nothing() {
    let mut s = up();
    for (path, port) in [(S1_PATH, 2u32), (H_PATHS[1], 1)] {
        let before = port_info(&mut s, path, port);
        assert_eq!(before.vl_cap, 4, "VL0-7");
        assert_eq!(before.operational_vls, 4);
        // 5 (VL0-14) > VLCap: 0x1C, and the VLHighLimit in the same Set is not applied.
        let st = set_port_field(&mut s, path, port, |pi| {
            pi.operational_vls = 5;
            pi.vl_high_limit = 0x40;
        });
        assert_eq!(st, INVALID);
        let after = port_info(&mut s, path, port);
        assert_eq!(after.operational_vls, 4);
        assert_eq!(after.vl_high_limit, before.vl_high_limit);
        // A reserved code is refused too.
        assert_eq!(
            set_port_field(&mut s, path, port, |pi| pi.operational_vls = 9),
            INVALID
        );
        // Within VLCap: accepted; 0 leaves it alone; VLHighLimit is stored as set.
        let st = set_port_field(&mut s, path, port, |pi| {
            pi.operational_vls = 3;
            pi.vl_high_limit = 0x20;
        });
        assert_eq!(st, 0);
        let pi = port_info(&mut s, path, port);
        assert_eq!((pi.operational_vls, pi.vl_high_limit), (3, 0x20));
        assert_eq!(
            set_port_field(&mut s, path, port, |pi| pi.operational_vls = 0),
            0
        );
        assert_eq!(port_info(&mut s, path, port).operational_vls, 3);
    }
    // Accepted in INIT too (a port not yet ARMED): a fresh fabric.
    let mut f = small(SimConfig::default());
    let st = set_port_field(&mut f, S1_PATH, 4, |pi| pi.operational_vls = 1);
    assert_eq!(st, 0);
    assert_eq!(port_info(&mut f, S1_PATH, 4).operational_vls, 1);
}

#[test]
fn a_reboot_forgets_the_tables_and_operational_vls() {
    let mut s = up();
    let s2 = s.s2;
    set_sl2vl(&mut s, S2_PATH, SlToVlTable::modifier(3, 1), [1; 16]);
    set_sl2vl(&mut s, S1_PATH, SlToVlTable::modifier(1, 3), [2; 16]);
    assert_eq!(
        set_port_field(&mut s, S2_PATH, 1, |pi| pi.operational_vls = 1),
        0
    );
    let now = s.fab.now();
    s.fab.inject(now, Fault::RebootSwitch { node: s2 }).unwrap();
    assert_eq!(s.fab.sl2vl(s2, 3, 1).unwrap().vl, IBSIM_SL2VL_RESET);
    assert_eq!(s.fab.port_info(s2, 1).unwrap().operational_vls, 4);
    // S1 kept its table.
    assert_eq!(s.fab.sl2vl(s.s1, 1, 3).unwrap().vl, [2; 16]);
}

#[test]
fn vl_path_errors_are_typed() {
    let s = up();
    assert_eq!(s.fab.vl_path(Lid(1), Lid(3), 16), Err(SimError::BadSl(16)));
    assert_eq!(
        s.fab.vl_path(Lid(77), Lid(3), 0),
        Err(SimError::NoSuchLid(Lid(77)))
    );
    assert_eq!(
        s.fab.vl_path(Lid(1), Lid(77), 0),
        Err(SimError::Dropped(DropReason::NoRoute { node: s.s1 }))
    );
    // A switch as the source starts at its port 0 (input port 0 of its tables).
    let p = s.fab.vl_path(Lid(S1_LID), Lid(4), 3).unwrap();
    assert_eq!(hops(&p), vec![(s.s1, 3, 3), (s.s2, 2, 3)]);
    assert_eq!(s.fab.vl_path(Lid(2), Lid(2), 3), Ok(vec![]));
}

#[test]
fn control_requests_carry_the_sl() {
    let mut s = up();
    set_sl2vl(&mut s, H_PATHS[0], 0, table(0, 5, 15));
    let now = s.fab.now();
    let r = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"deliver","src":"H1","dlid":3,"pkey":65535,"sl":5}"#,
    );
    assert_eq!(r["ok"], json!(true));
    assert!(r["delivery"]["Dropped"]["SlToVl15"].is_object(), "{r}");
    // Without "sl" the packet rides SL 0.
    let r = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"deliver","src":"H1","dlid":3,"pkey":65535}"#,
    );
    assert!(r["delivery"]["Delivered"].is_object(), "{r}");
    let r = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"deliver_many","pairs":[["H1",3,65535],["H1",3,65535,5],["H2",3,65535,2]]}"#,
    );
    let d = r["deliveries"].as_array().expect("deliveries");
    assert!(d[0]["Delivered"].is_object());
    assert!(d[1]["Dropped"]["SlToVl15"].is_object());
    assert!(d[2]["Delivered"].is_object());
    let r = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"vl_path","slid":2,"dlid":3,"sl":2}"#,
    );
    let h = r["hops"].as_array().expect("hops");
    assert_eq!(h.len(), 3);
    assert!(h.iter().all(|x| x["vl"] == json!(2)), "{r}");
    assert_eq!(h[1]["port"], json!(3));
    let r = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"deliver","src":"H1","dlid":3,"pkey":65535,"sl":16}"#,
    );
    assert_eq!(r["ok"], json!(false));
    assert!(r["error"].as_str().unwrap().contains("SIM-E015"));
    let r = control::handle(&mut s.fab, now, r#"{"op":"vl_counters"}"#);
    let rows = r["per_vl"].as_array().expect("per_vl");
    assert!(
        rows.iter()
            .any(|x| x["vl"] == json!(15) && x["dropped_vl15"] == json!(2))
    );
    let r = control::handle(&mut s.fab, now, r#"{"op":"counters"}"#);
    assert_eq!(r["counters"]["data_dropped_vl15"], json!(2));
}

#[test]
fn gmp_frames_take_an_optional_sl_byte() {
    use fabric_sim::protocol::*;
    let mad = [7u8; 256];
    let old = gmp_out(3, 0xFFFF, &mad);
    assert_eq!(parse_gmp_out_sl(&old), Some((3, 0xFFFF, 0, mad)));
    let new = gmp_out_sl(3, 0x8001, 9, &mad);
    assert_eq!(new.len(), GMP_OUT_SL_LEN);
    assert_eq!(parse_gmp_out_sl(&new), Some((3, 0x8001, 9, mad)));
    assert_eq!(parse_gmp_out_sl(&new[..100]), None);
    // The old parser keeps refusing the longer payload.
    assert_eq!(parse_gmp_out(&new), None);
}

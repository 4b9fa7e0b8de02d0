//! Golden vectors for the Performance Management class captured from real tools on this
//! machine: ibsim 0.10 simulating /usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca
//! after one OpenSM 3.3.23 sweep (LIDs: Switch1 1, Hca1 2), queried with infiniband-diags
//! `perfquery -d -d -d` (and `-x`, `-R`) through umad2sim. At that debug level libibmad
//! prints the 256 bytes it sends ("send buf", after the 64-byte user-MAD header, which is
//! left out here) and the 256 bytes it receives ("rcv buf"). The values asserted are what
//! the same perfquery run printed after decoding the same response. ibsim leaves stack
//! bytes in the unused tail of its answers' data areas (e.g. bytes 232-247); they are kept
//! because the whole MAD must round-trip.
//!
//! ibsim keeps all error counters at zero, so a second group of tests uses vectors built
//! from the documented offsets (opensm `ib_port_counters_t`) with a distinct value in every
//! field: those check that no two fields overlap and that every byte lands where the table
//! says.

mod common;
use common::hex_arr;

use mad::perf::{
    ClassPortInfo, Counter, ExtCounter, PERF_DATA_LEN, PerfAttribute, PerfMad, PortCounters,
    PortCountersExtended,
};
use mad::{AttributeId, MadError, Method, MgmtClass};

// perfquery -d -d -d 1 1 (Switch1 port 1, LID 1): ClassPortInfo Get and GetResp.
const SW_CPI_GET: &str = "\
    0104 0101 0000 0000 0000 0000 1ecd 6ad9
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
const SW_CPI_RESP: &str = "\
    0104 0181 0000 0000 0001 0002 1ecd 6ad9
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0101 1300 0000 0012 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 2500 0000 0000 0000
    00c0 a2f7 0700 0000 0000 0000 0000 0000";
// perfquery -d -d -d 1 1: PortCounters Get and GetResp.
const SW_PC_GET: &str = "\
    0104 0101 0000 0000 0000 0000 1ecd 6ada
    0012 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
const SW_PC_RESP: &str = "\
    0104 0181 0000 0000 0001 0002 1ecd 6ada
    0012 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0438 0000 0438
    0000 000f 0000 000f 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0102 0200 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
// perfquery -x -d -d -d 1 1: PortCountersExtended Get and GetResp.
const SW_PCX_GET: &str = "\
    0104 0101 0000 0000 0000 0000 1ecc 8e7e
    001d 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
const SW_PCX_RESP: &str = "\
    0104 0181 0000 0000 0001 0002 1ecc 8e7e
    001d 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 0438
    0000 0000 0000 0438 0000 0000 0000 000f
    0000 0000 0000 000f 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0102 0200 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
// perfquery -d -d -d 2 1 (Hca1 port 1, LID 2): ClassPortInfo GetResp.
const CA_CPI_RESP: &str = "\
    0104 0181 0000 0000 0001 0002 55fa 545f
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0101 1200 0000 0012 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 2500 0000 0000 0000
    0040 bdfb 0700 0000 0000 0000 0000 0000";
// perfquery -d -d -d 2 1: PortCounters Get and GetResp.
const CA_PC_GET: &str = "\
    0104 0101 0000 0000 0000 0000 55fa 5460
    0012 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
const CA_PC_RESP: &str = "\
    0104 0181 0000 0000 0001 0002 55fa 5460
    0012 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0480 0000 04c8
    0000 0010 0000 0011 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0102 0200 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
// perfquery -x -d -d -d 2 1: PortCountersExtended GetResp.
const CA_PCX_RESP: &str = "\
    0104 0181 0000 0000 0001 0002 30ca 9f13
    001d 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 0000 0000 0000 0000 0000 0000 05a0
    0000 0000 0000 05e8 0000 0000 0000 0014
    0000 0000 0000 0015 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0102 0200 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
// perfquery -R -d -d -d 2 1: PortCounters Set (reset all) and its GetResp.
const CA_PC_RESET_SET: &str = "\
    0104 0102 0000 0000 0000 0000 0d4e b2fc
    0012 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 ffff 0000 0000 0000 0000 0000 0000
    0000 0100 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";
const CA_PC_RESET_RESP: &str = "\
    0104 0181 0000 0000 0001 0002 0d4e b2fc
    0012 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0001 ffff 0000 0000 0000 0000 0000 0000
    0000 0100 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000
    0000 0000 0000 0000 0102 0200 0000 0000
    0000 0000 0000 0000 0000 0000 0000 0000";

fn mad(s: &str) -> [u8; 256] {
    hex_arr(s)
}

/// Decodes a captured MAD, checks it re-encodes to the same 256 bytes, and decodes its
/// attribute, checking the attribute re-encodes to the captured attribute bytes.
fn decode_resp<T: PerfAttribute>(s: &str) -> (PerfMad, T) {
    let raw = mad(s);
    let m = PerfMad::decode(&raw).expect("captured MAD decodes");
    assert_eq!(m.encode(), raw, "PerfMad re-encodes to the captured bytes");
    assert_eq!(m.header.mgmt_class, MgmtClass::PERF_MGMT);
    assert_eq!(m.header.class_version, 1);
    assert_eq!(m.header.method, Method::GET_RESP);
    assert!(m.mad_status().is_ok());
    let a: T = m.attr().expect("attribute id matches");
    let d = a.to_data();
    assert_eq!(&d[..T::LEN], &m.data[..T::LEN], "{} re-encodes", T::NAME);
    assert!(d[T::LEN..].iter().all(|&b| b == 0));
    (m, a)
}

#[test]
fn switch_class_port_info_from_ibsim() {
    let (_, cpi): (_, ClassPortInfo) = decode_resp(SW_CPI_RESP);
    // perfquery: "CapMask: 0x1300".
    assert_eq!(cpi.capability_mask(), 0x1300);
    assert_eq!(cpi.info.base_version, 1);
    assert_eq!(cpi.info.class_version, 1);
    assert_eq!(cpi.info.resp_time_value, 18);
    assert_eq!(cpi.info.capability_mask2, 0);
    assert!(cpi.all_port_select());
    assert!(cpi.extended_width());
    assert!(!cpi.extended_width_no_ietf());
    assert!(cpi.port_counters_extended());
    assert!(cpi.port_xmit_wait());
    assert!(!cpi.qp1_dropped());
}

#[test]
fn ca_class_port_info_from_ibsim() {
    let (_, cpi): (_, ClassPortInfo) = decode_resp(CA_CPI_RESP);
    // perfquery: "CapMask: 0x1200": no AllPortSelect on a CA.
    assert_eq!(cpi.capability_mask(), 0x1200);
    assert!(!cpi.all_port_select());
    assert!(cpi.extended_width());
    assert!(cpi.port_xmit_wait());
}

#[test]
fn switch_port_counters_from_ibsim() {
    let (m, pc): (_, PortCounters) = decode_resp(SW_PC_RESP);
    assert_eq!(m.header.attr_id, AttributeId::PERF_PORT_COUNTERS);
    // perfquery printed: PortSelect 1, PortXmitData 1080, PortRcvData 1080,
    // PortXmitPkts 15, PortRcvPkts 15, everything else 0.
    assert_eq!(
        pc,
        PortCounters {
            port_select: 1,
            xmit_data: 1080,
            rcv_data: 1080,
            xmit_pkts: 15,
            rcv_pkts: 15,
            ..PortCounters::default()
        }
    );
    assert_eq!(pc.saturated().count(), 0);
}

#[test]
fn ca_port_counters_from_ibsim() {
    let (_, pc): (_, PortCounters) = decode_resp(CA_PC_RESP);
    // perfquery printed: PortXmitData 1152, PortRcvData 1224, PortXmitPkts 16,
    // PortRcvPkts 17, PortXmitWait 0.
    assert_eq!(pc.port_select, 1);
    assert_eq!(pc.xmit_data, 1152);
    assert_eq!(pc.rcv_data, 1224);
    assert_eq!(pc.xmit_pkts, 16);
    assert_eq!(pc.rcv_pkts, 17);
    assert_eq!(pc.xmit_wait, 0);
    assert_eq!(pc.symbol_error, 0);
}

#[test]
fn port_counters_extended_from_ibsim() {
    let (m, x): (_, PortCountersExtended) = decode_resp(SW_PCX_RESP);
    assert_eq!(m.header.attr_id, AttributeId::PERF_PORT_COUNTERS_EXTENDED);
    // perfquery -x printed (switch port 1): 1080, 1080, 15, 15, unicast/multicast 0.
    assert_eq!(
        x,
        PortCountersExtended {
            port_select: 1,
            xmit_data: 1080,
            rcv_data: 1080,
            xmit_pkts: 15,
            rcv_pkts: 15,
            ..PortCountersExtended::default()
        }
    );
    let (_, x): (_, PortCountersExtended) = decode_resp(CA_PCX_RESP);
    // perfquery -x printed (Hca1 port 1): 1440, 1512, 20, 21.
    assert_eq!(
        (x.xmit_data, x.rcv_data, x.xmit_pkts, x.rcv_pkts),
        (1440, 1512, 20, 21)
    );
    assert_eq!(x.saturated().count(), 0);
}

#[test]
fn builder_matches_perfquery_requests() {
    // Get PortCounters, PortSelect 1, modifier 0: the bytes libibmad sent.
    let q = PortCounters {
        port_select: 1,
        ..PortCounters::default()
    };
    assert_eq!(PerfMad::get(0x1ecd_6ada, 0, &q).encode(), mad(SW_PC_GET));
    assert_eq!(PerfMad::get(0x55fa_5460, 0, &q).encode(), mad(CA_PC_GET));
    let qx = PortCountersExtended {
        port_select: 1,
        ..PortCountersExtended::default()
    };
    assert_eq!(PerfMad::get(0x1ecc_8e7e, 0, &qx).encode(), mad(SW_PCX_GET));
    // perfquery sends PortSelect in the data of its ClassPortInfo Get too.
    let mut cpi = PerfMad::request(Method::GET, 0x1ecd_6ad9, AttributeId::CLASS_PORT_INFO, 0);
    cpi.data[1] = 1;
    assert_eq!(cpi.encode(), mad(SW_CPI_GET));
    // perfquery -R: Set with CounterSelect 0xFFFF and CounterSelect2 0x01 (PortXmitWait).
    let reset = PortCounters {
        port_select: 1,
        counter_select: 0xFFFF,
        counter_select2: 0x01,
        ..PortCounters::default()
    };
    let set = PerfMad::set(0x0d4e_b2fc, 0, &reset);
    assert_eq!(set.encode(), mad(CA_PC_RESET_SET));
    // ibsim echoes the Set's attribute in its GetResp.
    let (resp, echoed): (_, PortCounters) = decode_resp(CA_PC_RESET_RESP);
    assert_eq!(echoed, reset);
    // The response skeleton has what a GetResp needs (ibsim's TID carries umad2sim's agent
    // bits in the high word, so compare the rest).
    let r = set.response();
    assert_eq!(r.header.method, Method::GET_RESP);
    assert_eq!(r.header.attr_id, resp.header.attr_id);
    assert_eq!(r.header.tid & 0xFFFF_FFFF, resp.header.tid & 0xFFFF_FFFF);
}

/// A PortCounters data area with a distinct value in every field, written from the table in
/// the `PortCounters` docs (opensm `ib_port_counters_t`).
const DISTINCT_PC: &str = "\
    00 07 a1a2 b1b2 c1 d1 e1e2 f1f2 0102 0304 11 12 13 45 2122 2324
    31323334 41424344 51525354 61626364 71727374";

#[test]
fn port_counters_offsets_from_the_layout() {
    let mut d = [0u8; PERF_DATA_LEN];
    let v: [u8; 44] = hex_arr(DISTINCT_PC);
    d[..44].copy_from_slice(&v);
    let pc = PortCounters::decode(&d);
    assert_eq!(
        pc,
        PortCounters {
            port_select: 0x07,
            counter_select: 0xa1a2,
            symbol_error: 0xb1b2,
            link_error_recovery: 0xc1,
            link_downed: 0xd1,
            rcv_errors: 0xe1e2,
            rcv_remote_physical_errors: 0xf1f2,
            rcv_switch_relay_errors: 0x0102,
            xmit_discards: 0x0304,
            xmit_constraint_errors: 0x11,
            rcv_constraint_errors: 0x12,
            counter_select2: 0x13,
            local_link_integrity_errors: 0x4,
            excessive_buffer_overrun_errors: 0x5,
            qp1_dropped: 0x2122,
            vl15_dropped: 0x2324,
            xmit_data: 0x3132_3334,
            rcv_data: 0x4142_4344,
            xmit_pkts: 0x5152_5354,
            rcv_pkts: 0x6162_6364,
            xmit_wait: 0x7172_7374,
        }
    );
    assert_eq!(pc.to_data(), d);
}

#[test]
fn port_counters_extended_offsets_from_the_layout() {
    let mut d = [0u8; PERF_DATA_LEN];
    d[1] = 0x07;
    d[2..4].copy_from_slice(&[0xa1, 0xa2]);
    d[4..8].copy_from_slice(&[0xb1, 0xb2, 0xb3, 0xb4]);
    for i in 0..ExtCounter::ALL.len() {
        let o = 8 + 8 * i;
        d[o..o + 8].copy_from_slice(&(0x1000_0000_0000_0001u64 * (i as u64 + 1)).to_be_bytes());
    }
    let x = PortCountersExtended::decode(&d);
    assert_eq!(x.port_select, 7);
    assert_eq!(x.counter_select, 0xa1a2);
    assert_eq!(x.counter_select2, 0xb1b2_b3b4);
    for (i, c) in ExtCounter::ALL.into_iter().enumerate() {
        assert_eq!(
            x.get(c),
            0x1000_0000_0000_0001u64 * (i as u64 + 1),
            "{}",
            c.name()
        );
    }
    assert_eq!(x.multicast_rcv_pkts, 0x8000_0000_0000_0008);
    assert_eq!(x.to_data(), d);
}

#[test]
fn saturation() {
    let mut pc = PortCounters::default();
    assert_eq!(Counter::SymbolError.max(), 0xFFFF);
    assert_eq!(Counter::LinkDowned.max(), 0xFF);
    assert_eq!(Counter::LocalLinkIntegrityErrors.max(), 0xF);
    assert_eq!(Counter::XmitData.max(), 0xFFFF_FFFF);
    pc.symbol_error = 0xFFFF;
    pc.excessive_buffer_overrun_errors = 0xF;
    pc.xmit_data = 0xFFFF_FFFF;
    pc.rcv_data = 0xFFFF_FFFE;
    let sat: Vec<Counter> = pc.saturated().collect();
    assert_eq!(
        sat,
        [
            Counter::SymbolError,
            Counter::ExcessiveBufferOverrunErrors,
            Counter::XmitData
        ]
    );
    assert!(!pc.is_saturated(Counter::RcvData));
    // Every counter at its maximum is saturated, and survives the wire.
    let mut all = [0u8; PERF_DATA_LEN];
    all[..44].fill(0xFF);
    all[0] = 0; // reserved
    let full = PortCounters::decode(&all);
    assert_eq!(full.saturated().count(), Counter::ALL.len());
    assert_eq!(full.to_data(), all);
    let x = PortCountersExtended {
        unicast_rcv_pkts: u64::MAX,
        ..PortCountersExtended::default()
    };
    assert_eq!(
        x.saturated().collect::<Vec<_>>(),
        [ExtCounter::UnicastRcvPkts]
    );
}

#[test]
fn short_and_wrong_input_is_a_typed_error() {
    for n in [0, 1, 43, 255] {
        let z = vec![0u8; n];
        if n < 44 {
            assert!(matches!(
                PortCounters::decode_slice(&z),
                Err(MadError::Truncated { needed: 44, .. })
            ));
        }
        assert!(matches!(
            PortCountersExtended::decode_slice(&z[..n.min(71)]),
            Err(MadError::Truncated { needed: 72, .. })
        ));
        assert!(matches!(
            ClassPortInfo::decode_slice(&z[..n.min(71)]),
            Err(MadError::Truncated { .. })
        ));
        assert!(matches!(
            PerfMad::decode_slice(&z),
            Err(MadError::Truncated { needed: 256, .. })
        ));
    }
    assert!(matches!(
        PerfMad::decode_slice(&[0u8; 257]),
        Err(MadError::BadLength { .. })
    ));
    // An SMP is not a PerfMgt MAD.
    let mut smp = mad(SW_PC_RESP);
    smp[1] = 0x01;
    assert!(matches!(
        PerfMad::decode(&smp),
        Err(MadError::WrongClass { class: 0x01, .. })
    ));
    // Asking a PortCounters answer for PortCountersExtended.
    let m = PerfMad::decode(&mad(SW_PC_RESP)).unwrap();
    assert_eq!(
        m.attr::<PortCountersExtended>(),
        Err(MadError::AttributeMismatch {
            expected: 0x001D,
            found: 0x0012
        })
    );
    // Slice decoders accept exactly the attribute's bytes.
    let pc = PortCounters::decode_slice(&mad(CA_PC_RESP)[64..108]).unwrap();
    assert_eq!(pc.xmit_data, 1152);
    let mut out = [0u8; 44];
    pc.encode_slice(&mut out).unwrap();
    assert_eq!(&out[..], &mad(CA_PC_RESP)[64..108]);
    assert!(pc.encode_slice(&mut [0u8; 43]).is_err());
}

/// The fields in perfquery's order, as it prints them on ibsim.
#[test]
fn fields_in_perfquery_order() {
    let names: Vec<_> = mad::perf::PortCounters::default()
        .fields()
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(
        names,
        [
            "PortSelect",
            "CounterSelect",
            "SymbolErrorCounter",
            "LinkErrorRecoveryCounter",
            "LinkDownedCounter",
            "PortRcvErrors",
            "PortRcvRemotePhysicalErrors",
            "PortRcvSwitchRelayErrors",
            "PortXmitDiscards",
            "PortXmitConstraintErrors",
            "PortRcvConstraintErrors",
            "CounterSelect2",
            "LocalLinkIntegrityErrors",
            "ExcessiveBufferOverrunErrors",
            "QP1Dropped",
            "VL15Dropped",
            "PortXmitData",
            "PortRcvData",
            "PortXmitPkts",
            "PortRcvPkts",
            "PortXmitWait",
        ]
    );
    let ext: Vec<_> = mad::perf::PortCountersExtended::default()
        .fields()
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(ext.len(), 10);
    assert_eq!(ext[2], "PortXmitData");
    assert_eq!(ext[9], "PortMulticastRcvPkts");
}

/// `Counter::index` is the position in `Counter::ALL`.
#[test]
fn counter_index_is_the_position_in_all() {
    for (i, c) in mad::perf::Counter::ALL.into_iter().enumerate() {
        assert_eq!(c.index(), i);
    }
}

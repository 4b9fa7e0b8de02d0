//! The body of the `mad_decode` fuzz target, shared with the corpus replay test
//! (`mad/tests/fuzz_corpus.rs`), so both run exactly the same checks: every decoder of the
//! `mad` crate on arbitrary bytes. Decoding must never panic; whatever decodes must re-encode
//! to the input with reserved bits cleared, and decode again to the same value. The DR step
//! function runs on every DR SMP that decodes.

use mad::{
    DrIngress, DrNode, GuidInfo, LinearForwardingTable, MadHeader, MulticastForwardingTable,
    NodeDescription, NodeInfo, Notice, NoticeDetails, PKeyTable, PortInfo, SaMad, SlToVlTable,
    SmInfo, Smp, SmpAttribute, SwitchInfo, VNodeDescription, VNodeInfo, VPortGuidInfo, VPortInfo,
    VPortPKeyTable, VPortState, VirtualizationInfo, VlArbitrationTable, dr_step,
};

fn attr<T: SmpAttribute + PartialEq + std::fmt::Debug>(d: &[u8; 64]) {
    let v = T::decode(d);
    let e = v.to_data();
    // Defined-bit mask: decoding all ones keeps exactly the defined bits.
    let mask = T::decode(&[0xff; 64]).to_data();
    for i in 0..64 {
        assert_eq!(e[i], d[i] & mask[i], "{} byte {}", T::NAME, i);
    }
    assert_eq!(T::decode(&e), v);
    let _ = T::decode_slice(&d[..T::LEN.min(d.len())]);
}

/// An SA record: decode, re-encode within the defined bits, decode again to the same value;
/// the slice decoder on the raw input; ComponentMask matching with any mask.
fn record<R: mad::sa::SaRecord>(d: &[u8; 200], raw: &[u8], mask: u64) {
    let v = R::decode_data(d);
    let e = v.to_data();
    let defined = R::decode_data(&[0xff; 200]).to_data();
    for i in 0..200 {
        assert_eq!(e[i], d[i] & defined[i], "{} byte {}", R::NAME, i);
    }
    assert_eq!(R::decode_data(&e), v);
    let _ = R::decode(raw);
    assert!(mad::sa::record_matches(mask, &v, &v));
}

/// Runs every check on `data`; panics on a violation.
pub fn run(data: &[u8]) {
    // Slice decoders on the raw input (any length).
    let _ = MadHeader::decode(data);
    let _ = Smp::decode_slice(data);
    let _ = SaMad::decode_slice(data);
    let _ = NodeInfo::decode_slice(data);

    let mut buf = [0u8; 256];
    let n = data.len().min(256);
    buf[..n].copy_from_slice(&data[..n]);

    if let Ok(smp) = Smp::decode(&buf) {
        let e = smp.encode();
        assert_eq!(Smp::decode(&e).as_ref(), Ok(&smp));
        assert_eq!(&e[64..128], &buf[64..128]);
        assert_eq!(
            &e[..18],
            &buf[..18]
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    if !smp.is_directed() && (i == 6 || i == 7) {
                        0
                    } else {
                        b
                    }
                })
                .collect::<Vec<u8>>()[..]
        );
        if smp.is_directed() {
            assert_eq!(&e[128..], &buf[128..]);
            // Drive the DR rules with node parameters taken from the input.
            let mut s = smp.clone();
            let node = DrNode {
                is_switch: buf[18] & 1 == 1,
                num_ports: buf[19],
            };
            let from = if buf[36] == 0 {
                DrIngress::Local
            } else {
                DrIngress::Port(buf[36])
            };
            if let mad::DrAction::Forward(p) = dr_step(&mut s, node, from) {
                assert!(p >= 1 && p <= node.num_ports);
            }
        }
    }
    if let Ok(sa) = SaMad::decode(&buf) {
        let e = sa.encode();
        assert_eq!(SaMad::decode(&e).as_ref(), Ok(&sa));
        let _ = sa.header.rmpp.check();
        // Walk the records with the offset it names and a record length from the input.
        if let Ok(recs) = mad::sa_records(&sa.data, sa.header.attr_offset, usize::from(buf[46])) {
            for r in recs {
                assert_eq!(r.len(), usize::from(buf[46]));
            }
        }
        use mad::sa::*;
        let m = sa.header.comp_mask;
        record::<NodeRecord>(&sa.data, data, m);
        record::<PortInfoRecord>(&sa.data, data, m);
        record::<LinkRecord>(&sa.data, data, m);
        record::<SmInfoRecord>(&sa.data, data, m);
        record::<SwitchInfoRecord>(&sa.data, data, m);
        record::<LftRecord>(&sa.data, data, m);
        record::<PKeyTableRecord>(&sa.data, data, m);
        record::<PathRecord>(&sa.data, data, m);
        record::<MultiPathRecord>(&sa.data, data, m);
        record::<McMemberRecord>(&sa.data, data, m);
        record::<ServiceRecord>(&sa.data, data, m);
        record::<ClassPortInfo>(&sa.data, data, m);
        record::<InformInfo>(&sa.data, data, m);
        record::<InformInfoRecord>(&sa.data, data, m);
    }

    let mut d = [0u8; 64];
    d.copy_from_slice(&buf[64..128]);
    attr::<NodeInfo>(&d);
    attr::<NodeDescription>(&d);
    attr::<PortInfo>(&d);
    attr::<SwitchInfo>(&d);
    attr::<LinearForwardingTable>(&d);
    attr::<MulticastForwardingTable>(&d);
    attr::<PKeyTable>(&d);
    attr::<SmInfo>(&d);
    attr::<GuidInfo>(&d);
    attr::<SlToVlTable>(&d);
    attr::<VlArbitrationTable>(&d);
    attr::<Notice>(&d);
    attr::<VirtualizationInfo>(&d);
    attr::<VPortInfo>(&d);
    attr::<VNodeInfo>(&d);
    attr::<VPortState>(&d);
    attr::<VNodeDescription>(&d);
    attr::<VPortGuidInfo>(&d);
    attr::<VPortPKeyTable>(&d);
    let (v, b) =
        mad::attr::split_vport_block_modifier(u32::from_be_bytes([d[0], d[1], d[2], d[3]]));
    assert_eq!(
        mad::attr::vport_block_modifier(v, b),
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    );
    let notice = Notice::decode(&d);
    let details = notice.details();
    if let Some(trap) = notice.trap_number() {
        assert_eq!(NoticeDetails::decode(trap, &details.encode()), details);
    }
    let mut full = [0u8; 80];
    full.copy_from_slice(&buf[64..144]);
    assert_eq!(Notice::decode_full(&full).encode_full(), full);
}

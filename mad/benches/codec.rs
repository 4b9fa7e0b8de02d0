//! Codec throughput, timed with std::time::Instant (no criterion): run with
//! `cargo bench -p mad --bench codec`. Prints nanoseconds per operation; each workload is
//! what the SM and the simulator do per SMP on the hot path.

use mad::{
    AttributeId, DrIngress, DrNode, LinearForwardingTable, MadHeader, NodeInfo, PortInfo, Smp,
    SmpAttribute, dr_step,
};
use std::hint::black_box;
use std::time::Instant;

const N: u32 = 2_000_000;

fn time(name: &str, mut f: impl FnMut(u32)) {
    // Warm up, then measure.
    for i in 0..N / 10 {
        f(i);
    }
    let t = Instant::now();
    for i in 0..N {
        f(i);
    }
    let ns = t.elapsed().as_nanos() as f64 / f64::from(N);
    println!("{name:<44} {ns:>8.1} ns/op  ({:.1} M ops/s)", 1e3 / ns);
}

fn main() {
    let path = [1u8, 3, 5, 7, 9];
    let pi = PortInfo {
        lid: fabric::Lid(17),
        port_state: 4,
        ..PortInfo::default()
    };
    let mut resp = Smp::dr_get(1, AttributeId::PORT_INFO, 1, &path)
        .unwrap()
        .make_response();
    resp.set_attr(&pi);
    let resp_wire = resp.encode();
    let mut out = [0u8; 256];

    time("build DR Get(PortInfo) + encode_into", |i| {
        let smp = Smp::dr_get(u64::from(i), AttributeId::PORT_INFO, 1, black_box(&path)).unwrap();
        smp.encode_into(&mut out);
        black_box(&out);
    });
    time("peek MAD header (TID match)", |_| {
        black_box(MadHeader::decode(black_box(&resp_wire[..])).unwrap().tid);
    });
    time("decode DR SMP + PortInfo", |_| {
        let smp = Smp::decode(black_box(&resp_wire)).unwrap();
        black_box(smp.attr::<PortInfo>().unwrap());
    });
    time("PortInfo encode+decode (64 bytes)", |_| {
        let d = black_box(&pi).to_data();
        black_box(PortInfo::decode(&d));
    });
    let ni = NodeInfo::default();
    time("NodeInfo encode+decode", |_| {
        let d = black_box(&ni).to_data();
        black_box(NodeInfo::decode(&d));
    });
    let lft = LinearForwardingTable { ports: [3; 64] };
    time("LID-routed Set(LFT block) encode_into", |i| {
        let smp = Smp::lid_set(u64::from(i), i & 0x3ff, black_box(&lft));
        smp.encode_into(&mut out);
        black_box(&out);
    });
    let req = Smp::dr_get(1, AttributeId::NODE_INFO, 0, &path).unwrap();
    time("dr_step x (1 local + 5 hops) out", |_| {
        let mut s = req.clone();
        black_box(dr_step(&mut s, DrNode::ca(1), DrIngress::Local));
        for _ in 0..5 {
            black_box(dr_step(&mut s, DrNode::switch(36), DrIngress::Port(2)));
        }
    });
}

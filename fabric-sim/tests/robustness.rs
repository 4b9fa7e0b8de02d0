//! Arbitrary input never panics the simulator or the socket layer (seeded random SMPs,
//! random frames, random control requests).

mod common;

use common::*;
use fabric::Lid;
use fabric::rng::SplitMix64;
use fabric_sim::client::SimClient;
use fabric_sim::{Fault, SimConfig, control, protocol, server};
use mad::{Smp, SmpAttribute};
use std::io::Cursor;

fn random_smp(rng: &mut SplitMix64) -> Smp {
    let mut b = [0u8; 256];
    for x in b.iter_mut() {
        *x = rng.next_u64() as u8;
    }
    b[1] = if rng.chance(0.5) { 0x81 } else { 0x01 };
    b[0] = if rng.chance(0.9) { 1 } else { b[0] };
    b[2] = if rng.chance(0.9) { 1 } else { b[2] };
    // Mostly plausible methods and attributes, sometimes anything.
    if rng.chance(0.8) {
        b[3] = [0x01, 0x02, 0x07, 0x05, 0x81][rng.below(5) as usize];
    }
    if rng.chance(0.8) {
        let attrs = [
            0x10u16, 0x11, 0x12, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1B, 0x20, 0x02,
        ];
        let a = attrs[rng.below(attrs.len() as u64) as usize];
        b[16..18].copy_from_slice(&a.to_be_bytes());
    }
    b[7] = (rng.below(8)) as u8; // hop count
    if rng.chance(0.9) {
        b[6] = 0; // hop pointer
        b[4] &= 0x7F; // D = 0
    }
    if rng.chance(0.7) {
        b[32..36].copy_from_slice(&[0xFF; 4]);
    }
    for x in b[129..136].iter_mut() {
        *x = rng.below(10) as u8;
    }
    if rng.chance(0.3) {
        b[24..32].fill(0);
    }
    Smp::decode(&b).expect("class and hop count are valid")
}

#[test]
fn random_smps_from_random_ports_never_panic() {
    let mut rng = SplitMix64::new(0xF00D);
    let mut s = small(SimConfig::default());
    s.bring_up();
    let ports: Vec<_> = (1..=5)
        .map(|i| s.hg(i))
        .chain([s.fab.port_guid(s.s1, 0).unwrap()])
        .collect();
    for i in 0..20_000u64 {
        let smp = random_smp(&mut rng);
        let dlid = if rng.chance(0.5) {
            Lid::PERMISSIVE
        } else {
            Lid(rng.below(16) as u16)
        };
        let port = ports[rng.below(ports.len() as u64) as usize];
        let now = s.fab.now() + rng.below(2_000);
        if i % 3 == 0 {
            let r = if dlid.is_permissive() {
                s.fab.send(now, s.sm, &smp)
            } else {
                s.fab.send_lid(now, s.sm, dlid, &smp)
            };
            if !smp.is_directed() && dlid.is_permissive() {
                assert!(r.is_err());
            }
        } else {
            s.fab
                .inject(
                    now,
                    Fault::Rogue {
                        port_guid: port,
                        dlid,
                        smp: Box::new(smp),
                    },
                )
                .unwrap();
        }
        if i % 500 == 0 {
            settle(&mut s.fab);
            while s.fab.poll_recv(s.sm).is_some() {}
        }
    }
    settle(&mut s.fab);
    // The fabric still answers a plain Get.
    let (st, _) = dr_get::<mad::NodeInfo>(&mut s.fab, s.sm, &[1], 0).expect("still alive");
    assert_eq!(st, 0);
}

#[test]
fn random_frames_never_panic_the_reader() {
    let mut rng = SplitMix64::new(5);
    for _ in 0..5_000 {
        let n = rng.below(64) as usize;
        let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
        let mut c = Cursor::new(bytes);
        while let Ok(Some((_, p))) = protocol::read_frame(&mut c) {
            let _ = protocol::parse_mad_out(&p);
            let _ = protocol::parse_mad_in(&p);
        }
    }
    // A frame cut short is an error, not a panic or a short frame.
    let f = protocol::frame(protocol::T_MAD, &[1, 2, 3]);
    let mut c = Cursor::new(&f[..f.len() - 1]);
    assert!(protocol::read_frame(&mut c).is_err());
    let mut c = Cursor::new(&f[..]);
    assert_eq!(
        protocol::read_frame(&mut c).unwrap(),
        Some((protocol::T_MAD, vec![1, 2, 3]))
    );
}

#[test]
fn random_control_requests_never_panic() {
    let mut s = small(SimConfig::default());
    let texts = [
        r#"{"op":"link_down","node":"S1","port":200}"#,
        r#"{"op":"link_down","node":"nope","port":1}"#,
        r#"{"op":"loss","prob":2.0}"#,
        r#"{"op":"rogue","port":"H2","dlid":65535,"mad":"zz"}"#,
        r#"{"op":"rogue","port":"H2[9]","dlid":65535,"mad":"00"}"#,
        r#"{"op":"at","time":5,"fault":{"op":"counters"}}"#,
        r#"{"op":"port_state","node":"0x2001","port":0}"#,
        r#"{"op":"deliver","src":"H1","dlid":3,"pkey":65535}"#,
        r#"{"op":"reboot_switch","node":"H1"}"#,
        r#"{"op":"set_log","take":true}"#,
        r#"[]"#,
        r#"{"op":"accounting"}"#,
        r#"{"op":"lft","node":"S1"}"#,
        r#"{"op":"lft","node":"H1"}"#,
        r#"{"op":"pkeys","node":"H1","port":1}"#,
        r#"{"op":"pkeys","node":"H1","port":0}"#,
        r#"{"op":"deliver_many","pairs":[["H1",3,65535],["H9",1,1]]}"#,
        "\u{0}",
    ];
    let mut ok = 0;
    for t in texts {
        let v = control::handle(&mut s.fab, 0, t);
        assert!(v["ok"].is_boolean(), "{t}: {v}");
        if v["ok"] == true {
            ok += 1;
        }
    }
    assert_eq!(
        ok, 6,
        "port_state, deliver, set_log, accounting, lft S1, pkeys H1[1]"
    );
}

#[test]
fn random_bytes_over_the_socket_close_only_that_client() {
    let fresh = small(SimConfig::default());
    let mut fab = fresh.fab;
    fab.detach(fresh.sm).unwrap();
    let dir = std::env::temp_dir().join(format!("fabric-sim-rb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.sock");
    let srv = server::spawn(fab, &path).unwrap();
    let mut rng = SplitMix64::new(11);
    for _ in 0..50 {
        let mut c = SimClient::connect(&path).unwrap();
        let n = 1 + rng.below(600) as usize;
        let mut bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
        // Half the time a plausible length prefix.
        if rng.chance(0.5) && n > 5 {
            bytes[..4].copy_from_slice(&((n - 4) as u32).to_be_bytes());
        }
        let _ = c.send_raw(&bytes);
        drop(c);
    }
    let mut good = SimClient::connect(&path).unwrap();
    good.attach("H1").unwrap();
    let q = Smp::dr_get(1, mad::NodeInfo::ID, 0, &[1]).unwrap();
    good.send(Lid::PERMISSIVE, &q).unwrap();
    let (_, _, r) = good.recv().unwrap();
    assert_eq!(r.tid, 1);
    srv.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

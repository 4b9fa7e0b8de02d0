//! Virtualization on the simulator: a PF passed to a VM is an ordinary member; VFs (shared
//! port) have alias GUIDs in GUIDInfo, the PF's LID and P_KeyTable, no SM access, and cannot
//! be separated from each other by the fabric.

mod common;

use common::*;
use fabric::{Guid, PKey};
use fabric_sim::virt::{VirtError, VirtModel};
use fabric_sim::{Delivery, DropReason, SimConfig};
use mad::{GuidInfo, PKeyTable};

fn table(keys: &[u16]) -> PKeyTable {
    let mut t = PKeyTable::default();
    for (i, k) in keys.iter().enumerate() {
        t.keys[i] = PKey(*k);
    }
    t
}

const VF_A: Guid = Guid(0xa1);
const VF_B: Guid = Guid(0xa2);

/// H2, H4 tenant red (0x8001); H3 (the PF with two VFs) and H5 tenant blue (0x8002).
fn setup() -> (Small, VirtModel) {
    let mut s = small(SimConfig::default());
    s.bring_up();
    for (i, k) in [(2usize, 0x8001u16), (3, 0x8002), (4, 0x8001), (5, 0x8002)] {
        let (st, _) = dr_set(&mut s.fab, s.sm, H_PATHS[i - 1], 0, &table(&[k])).unwrap();
        assert_eq!(st, 0);
    }
    let mut v = VirtModel::new();
    v.pass_pf(&s.fab, s.hg(2), "red-vm1").unwrap();
    let pf = s.hg(3);
    assert_eq!(v.add_vf(&mut s.fab, pf, VF_A, "blue-vm1").unwrap(), 1);
    assert_eq!(v.add_vf(&mut s.fab, pf, VF_B, "blue-vm2").unwrap(), 2);
    (s, v)
}

#[test]
fn vf_aliases_are_in_the_pf_guidinfo_and_share_its_lid() {
    let (mut s, v) = setup();
    let (st, g): (u16, GuidInfo) = dr_get(&mut s.fab, s.sm, H_PATHS[2], 0).unwrap();
    assert_eq!(st, 0);
    assert_eq!(g.guids[0], s.hg(3));
    assert_eq!((g.guids[1], g.guids[2]), (VF_A, VF_B));
    let pf_lid = v.lid_of(&s.fab, s.hg(3)).unwrap();
    assert_eq!(v.lid_of(&s.fab, VF_A).unwrap(), pf_lid);
    assert_eq!(v.physical(VF_B), s.hg(3));
    assert_eq!(v.aliases().count(), 2);
    // The passed-through PF has its own LID.
    assert_ne!(v.lid_of(&s.fab, s.hg(2)).unwrap(), pf_lid);
}

#[test]
fn a_vf_has_no_sm_access_but_a_passed_pf_does() {
    let (mut s, v) = setup();
    assert_eq!(
        v.attach(&mut s.fab, VF_A).unwrap_err(),
        VirtError::NoSmAccess(VF_A)
    );
    let h2 = s.hg(2);
    assert!(v.attach(&mut s.fab, h2).is_ok());
}

#[test]
fn vfs_deliver_with_the_pf_keys_and_are_never_separated() {
    let (mut s, v) = setup();
    let (h2, h4, h5) = (s.hg(2), s.hg(4), s.hg(5));
    // VF of a blue PF reaches blue H5, not red H2.
    assert!(
        v.deliver(&mut s.fab, VF_A, h5, PKey(0x8002))
            .unwrap()
            .is_delivered()
    );
    assert_eq!(
        v.deliver(&mut s.fab, VF_A, h2, PKey(0x8001)).unwrap(),
        Delivery::Dropped(DropReason::SourcePKey)
    );
    assert!(
        !v.deliver(&mut s.fab, h2, VF_B, PKey(0x8001))
            .unwrap()
            .is_delivered()
    );
    // Red's passed-through PF is a full member of red.
    assert!(
        v.deliver(&mut s.fab, h2, h4, PKey(0x8001))
            .unwrap()
            .is_delivered()
    );
    // The two VFs talk through the shared port whatever tenant they are meant for.
    assert_eq!(
        v.deliver(&mut s.fab, VF_A, VF_B, PKey(0x8002)).unwrap(),
        Delivery::Delivered {
            dst_port: s.hg(3),
            hops: 0
        }
    );
    // The audit's tables list the aliases with the PF's keys.
    let t = v.port_tables(&s.fab);
    assert_eq!(t[&VF_A], t[&s.hg(3)]);
    assert_eq!(t[&VF_A], vec![PKey(0x8002)]);
}

#[test]
fn tenants_split_across_one_pf_are_an_error_and_strays_a_warning() {
    let (s, v) = setup();
    let pf = s.hg(3);
    let split = v.shared_port_lints(|g| match g {
        VF_A => Some("red".to_string()),
        VF_B => Some("blue".to_string()),
        _ => None,
    });
    assert_eq!(split.len(), 1);
    assert_eq!((split[0].code, split[0].pf), ("VIRT-E101", pf));
    let stray = v.shared_port_lints(|g| (g == VF_A).then(|| "blue".to_string()));
    assert_eq!(stray[0].code, "VIRT-W102", "{stray:?}");
    assert!(v.shared_port_lints(|_| Some("blue".to_string())).is_empty());
}

#[test]
fn guidinfo_fills_up_and_guids_are_unique() {
    let (mut s, mut v) = setup();
    let (pf, h4, h5) = (s.hg(3), s.hg(4), s.hg(5));
    for i in 3..8u64 {
        v.add_vf(&mut s.fab, pf, Guid(0xb0 + i), "x").unwrap();
    }
    assert_eq!(
        v.add_vf(&mut s.fab, pf, Guid(0xc0), "x").unwrap_err(),
        VirtError::GuidInfoFull(pf)
    );
    assert_eq!(
        v.add_vf(&mut s.fab, h4, VF_A, "x").unwrap_err(),
        VirtError::GuidInUse(VF_A)
    );
    assert_eq!(
        v.add_vf(&mut s.fab, h4, h5, "x").unwrap_err(),
        VirtError::GuidInUse(h5)
    );
    assert!(matches!(
        v.pass_pf(&s.fab, Guid(0xdead), "x").unwrap_err(),
        VirtError::NotACaPort(_)
    ));
}

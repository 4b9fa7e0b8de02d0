//! Round trips of the Performance Management attributes and MAD (proptest): every defined
//! bit survives decode -> encode, the reserved bits (listed by hand from the layouts) come
//! back zero, and decoding the encoding gives the same value.

use mad::perf::{
    ClassPortInfo, PERF_DATA_LEN, PerfAttribute, PerfMad, PortCounters, PortCountersExtended,
};
use proptest::prelude::*;

/// Defined-bit mask of each attribute's data area (1 = defined), written from the layouts.
fn expected_mask(id: u16) -> [u8; PERF_DATA_LEN] {
    let mut m = [0u8; PERF_DATA_LEN];
    match id {
        // PortCounters: byte 0 reserved, bytes 1-43 defined.
        0x0012 => m[1..44].fill(0xff),
        // PortCountersExtended: byte 0 reserved, bytes 1-71 defined.
        0x001D => m[1..72].fill(0xff),
        // ClassPortInfo: byte 32 (top of RedirectQP's word) reserved, 72 bytes.
        0x0001 => {
            m[..72].fill(0xff);
            m[32] = 0;
        }
        _ => unreachable!(),
    }
    m
}

fn check<T: PerfAttribute + PartialEq + std::fmt::Debug>(d: &[u8; PERF_DATA_LEN]) {
    let mask = expected_mask(T::ID.0);
    assert_eq!(
        T::decode(&[0xff; PERF_DATA_LEN]).to_data(),
        mask,
        "{} mask",
        T::NAME
    );
    let v = T::decode(d);
    let e = v.to_data();
    for i in 0..PERF_DATA_LEN {
        assert_eq!(e[i], d[i] & mask[i], "{} byte {}", T::NAME, i);
    }
    assert_eq!(T::decode(&e), v);
    assert_eq!(T::decode_slice(&e[..T::LEN]).as_ref(), Ok(&v));
}

proptest! {
    #[test]
    fn attributes_round_trip(v in proptest::collection::vec(any::<u8>(), PERF_DATA_LEN)) {
        let d: [u8; PERF_DATA_LEN] = v.try_into().unwrap();
        check::<PortCounters>(&d);
        check::<PortCountersExtended>(&d);
        check::<ClassPortInfo>(&d);
    }

    #[test]
    fn perf_mad_round_trips(v in proptest::collection::vec(any::<u8>(), 256)) {
        let mut b: [u8; 256] = v.try_into().unwrap();
        b[1] = 0x04;
        let m = PerfMad::decode(&b).unwrap();
        let e = m.encode();
        prop_assert_eq!(&e[..24], &b[..24]);
        prop_assert!(e[24..64].iter().all(|&x| x == 0));
        prop_assert_eq!(&e[64..], &b[64..]);
        prop_assert_eq!(PerfMad::decode(&e).unwrap(), m);
    }

    #[test]
    fn short_or_long_slices_never_panic(v in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = PerfMad::decode_slice(&v);
        let _ = PortCounters::decode_slice(&v);
        let _ = PortCountersExtended::decode_slice(&v);
        let _ = ClassPortInfo::decode_slice(&v);
        if v.len() != 256 {
            prop_assert!(PerfMad::decode_slice(&v).is_err());
        }
    }
}

//! The body of the `perf_decode` fuzz target, shared with the corpus replay test
//! (`mad/tests/fuzz_corpus.rs`): the Performance Management decoders of the `mad` crate on
//! arbitrary bytes. Decoding must never panic; whatever decodes must re-encode to the input
//! with reserved bits cleared, and decode again to the same value.

use mad::perf::{
    ClassPortInfo, PERF_DATA_LEN, PerfAttribute, PerfMad, PortCounters, PortCountersExtended,
};

fn attr<T: PerfAttribute + PartialEq + std::fmt::Debug>(d: &[u8; PERF_DATA_LEN], raw: &[u8]) {
    let v = T::decode(d);
    let e = v.to_data();
    // Defined-bit mask: decoding all ones keeps exactly the defined bits.
    let mask = T::decode(&[0xff; PERF_DATA_LEN]).to_data();
    for i in 0..PERF_DATA_LEN {
        assert_eq!(e[i], d[i] & mask[i], "{} byte {}", T::NAME, i);
    }
    assert_eq!(T::decode(&e), v);
    if let Ok(s) = T::decode_slice(raw) {
        let mut out = vec![0u8; T::LEN];
        s.encode_slice(&mut out).expect("LEN bytes fit");
        assert_eq!(T::decode_slice(&out).as_ref(), Ok(&s));
    }
}

pub fn run(data: &[u8]) {
    let _ = PerfMad::decode_slice(data);

    let mut buf = [0u8; 256];
    let n = data.len().min(256);
    buf[..n].copy_from_slice(&data[..n]);

    if let Ok(m) = PerfMad::decode(&buf) {
        let e = m.encode();
        assert_eq!(&e[..24], &buf[..24]);
        assert!(e[24..64].iter().all(|&b| b == 0));
        assert_eq!(&e[64..], &buf[64..]);
        assert_eq!(PerfMad::decode(&e).as_ref(), Ok(&m));
        let _ = m.attr::<PortCounters>();
        let _ = m.attr::<PortCountersExtended>();
        let _ = m.attr::<ClassPortInfo>();
    }

    // Every attribute decoder on the data area (from byte 64 when the input is a whole
    // MAD, from byte 0 otherwise).
    let tail = if data.len() >= 256 { &data[64..] } else { data };
    let mut d = [0u8; PERF_DATA_LEN];
    let k = tail.len().min(PERF_DATA_LEN);
    d[..k].copy_from_slice(&tail[..k]);
    attr::<PortCounters>(&d, tail);
    attr::<PortCountersExtended>(&d, tail);
    attr::<ClassPortInfo>(&d, tail);
}

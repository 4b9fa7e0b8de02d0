//! What a read from the umad device yields, raw and decoded. Parsing never panics.

use crate::abi::{MAD_LEN, STATUS_ETIMEDOUT, UMAD_HDR_LEN, UmadHeader};
use fabric::Lid;
use mad::Smp;

/// One read: the user-MAD header and the MAD bytes after it (normally 256).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RawMad {
    /// The 56-byte header.
    pub header: UmadHeader,
    /// Everything after the header.
    pub mad: Vec<u8>,
}

impl RawMad {
    /// Splits a read into header and MAD; `None` when shorter than the header.
    pub fn parse(b: &[u8]) -> Option<RawMad> {
        let header = UmadHeader::decode(b)?;
        Some(RawMad {
            header,
            mad: b.get(UMAD_HDR_LEN..).unwrap_or(&[]).to_vec(),
        })
    }
}

/// The kernel's receive status.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum RecvStatus {
    /// A MAD from the fabric.
    Ok,
    /// `ETIMEDOUT`: the kernel gave up waiting for the response to one of our requests; the
    /// MAD is that request (same TID). Never produced by umad2sim.
    TimedOut,
    /// Any other non-zero status (an errno value).
    Error(u32),
}

impl RecvStatus {
    /// From the header's status word.
    pub fn from_raw(status: u32) -> RecvStatus {
        match status {
            0 => RecvStatus::Ok,
            STATUS_ETIMEDOUT => RecvStatus::TimedOut,
            e => RecvStatus::Error(e),
        }
    }
}

/// The MAD part of a [`Received`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ReceivedMad {
    /// A decoded SMP (class 0x01 or 0x81).
    Smp(Smp),
    /// A 256-byte MAD of another class (e.g. SA, 0x03), undecoded.
    Other {
        /// Management class (byte 1).
        class: u8,
        /// The MAD.
        bytes: Vec<u8>,
    },
    /// Bytes that are not a valid MAD (wrong length, bad SMP).
    Malformed {
        /// What was read after the header.
        bytes: Vec<u8>,
        /// Why it was rejected.
        reason: String,
    },
}

/// A MAD read from the device, with the addressing the kernel reported.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Received {
    /// Agent that received it.
    pub agent_id: u32,
    /// Kernel status.
    pub status: RecvStatus,
    /// Source LID (0xFFFF for directed-route responses).
    pub slid: Lid,
    /// Source QP.
    pub src_qpn: u32,
    /// Service level.
    pub sl: u8,
    /// The MAD.
    pub mad: ReceivedMad,
}

impl Received {
    /// Decodes a raw read.
    pub fn from_raw(raw: RawMad) -> Received {
        let h = raw.header;
        let mad = decode_mad(raw.mad);
        Received {
            agent_id: h.agent_id,
            status: RecvStatus::from_raw(h.status),
            slid: h.lid,
            src_qpn: h.qpn,
            sl: h.sl,
            mad,
        }
    }

    /// The SMP, when it is one.
    pub fn smp(&self) -> Option<&Smp> {
        match &self.mad {
            ReceivedMad::Smp(s) => Some(s),
            _ => None,
        }
    }

    /// The SMP, when it is one.
    pub fn into_smp(self) -> Option<Smp> {
        match self.mad {
            ReceivedMad::Smp(s) => Some(s),
            _ => None,
        }
    }

    fn bytes_tid_key(b: &[u8]) -> Option<u32> {
        let t = b.get(12..16)?;
        Some(u32::from_be_bytes([t[0], t[1], t[2], t[3]]))
    }

    /// The low 32 bits of the TID (bytes 12-15): the key that matches a response to its
    /// request (the kernel and umad2sim rewrite the high 32 bits).
    pub fn tid_key(&self) -> Option<u32> {
        match &self.mad {
            ReceivedMad::Smp(s) => Some(s.tid as u32),
            ReceivedMad::Other { bytes, .. } | ReceivedMad::Malformed { bytes, .. } => {
                Self::bytes_tid_key(bytes)
            }
        }
    }

    /// Management class (byte 1), when at least 2 bytes were read.
    pub fn class(&self) -> Option<u8> {
        match &self.mad {
            ReceivedMad::Smp(s) => Some(s.class.0),
            ReceivedMad::Other { class, .. } => Some(*class),
            ReceivedMad::Malformed { bytes, .. } => bytes.get(1).copied(),
        }
    }

    /// True when the method has the R bit.
    pub fn is_response(&self) -> bool {
        let method = match &self.mad {
            ReceivedMad::Smp(s) => s.method.0,
            ReceivedMad::Other { bytes, .. } | ReceivedMad::Malformed { bytes, .. } => {
                bytes.get(3).copied().unwrap_or(0)
            }
        };
        method & mad::Method::RESPONSE_BIT != 0
    }
}

fn decode_mad(bytes: Vec<u8>) -> ReceivedMad {
    let Ok(arr) = <&[u8; MAD_LEN]>::try_from(bytes.as_slice()) else {
        let reason = format!("MAD of {} bytes, expected {MAD_LEN}", bytes.len());
        return ReceivedMad::Malformed { bytes, reason };
    };
    let class = arr[1];
    if class == mad::MgmtClass::SUBN_LID_ROUTED.0 || class == mad::MgmtClass::SUBN_DIRECTED_ROUTE.0
    {
        match Smp::decode(arr) {
            Ok(s) => ReceivedMad::Smp(s),
            Err(e) => ReceivedMad::Malformed {
                reason: e.to_string(),
                bytes,
            },
        }
    } else {
        ReceivedMad::Other { class, bytes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::UMAD_LEN;
    use fabric::rng::SplitMix64;

    fn read_of(hdr: UmadHeader, mad: &[u8]) -> Vec<u8> {
        let mut h = [0u8; UMAD_HDR_LEN];
        hdr.encode(&mut h);
        let mut v = h.to_vec();
        v.extend_from_slice(mad);
        v
    }

    #[test]
    fn smp_response_decodes_with_addressing() {
        let mut smp = Smp::dr_get(
            0x1234_5678_9abc_def0,
            mad::AttributeId::NODE_INFO,
            0,
            &[1, 3],
        )
        .unwrap()
        .make_response();
        smp.hop_pointer = 0;
        let hdr = UmadHeader {
            agent_id: 1,
            lid: Lid(0xFFFF),
            qpn: 0,
            length: UMAD_LEN as u32,
            ..UmadHeader::default()
        };
        let r = Received::from_raw(RawMad::parse(&read_of(hdr, &smp.encode())).unwrap());
        assert_eq!(r.status, RecvStatus::Ok);
        assert_eq!(r.slid, Lid(0xFFFF));
        assert_eq!(r.tid_key(), Some(0x9abc_def0));
        assert_eq!(r.class(), Some(0x81));
        assert!(r.is_response());
        assert_eq!(r.smp(), Some(&smp));
    }

    #[test]
    fn kernel_timeout_status_is_mapped() {
        let smp = Smp::lid_get(7, mad::AttributeId::PORT_INFO, 1);
        let hdr = UmadHeader {
            status: STATUS_ETIMEDOUT,
            ..UmadHeader::default()
        };
        let r = Received::from_raw(RawMad::parse(&read_of(hdr, &smp.encode())).unwrap());
        assert_eq!(r.status, RecvStatus::TimedOut);
        assert!(!r.is_response());
        assert_eq!(r.tid_key(), Some(7));
        assert_eq!(RecvStatus::from_raw(5), RecvStatus::Error(5));
    }

    #[test]
    fn other_classes_and_short_mads_are_kept_raw() {
        let mut sa = [0u8; MAD_LEN];
        sa[0] = 1;
        sa[1] = 0x03;
        sa[3] = 0x81;
        sa[15] = 0x42;
        let r = Received::from_raw(RawMad::parse(&read_of(UmadHeader::default(), &sa)).unwrap());
        assert!(matches!(r.mad, ReceivedMad::Other { class: 0x03, .. }));
        assert_eq!(r.tid_key(), Some(0x42));
        assert!(r.is_response());

        let r =
            Received::from_raw(RawMad::parse(&read_of(UmadHeader::default(), &sa[..10])).unwrap());
        assert!(matches!(r.mad, ReceivedMad::Malformed { .. }));
        assert_eq!(r.tid_key(), None);
        assert_eq!(r.class(), Some(0x03));

        let r = Received::from_raw(RawMad::parse(&read_of(UmadHeader::default(), &[])).unwrap());
        assert_eq!(
            (r.class(), r.tid_key(), r.is_response()),
            (None, None, false)
        );
    }

    #[test]
    fn bad_smp_is_malformed_not_a_panic() {
        let mut b = [0u8; MAD_LEN];
        b[1] = 0x81;
        b[7] = 64; // hop count above 63
        let r = Received::from_raw(RawMad::parse(&read_of(UmadHeader::default(), &b)).unwrap());
        assert!(matches!(r.mad, ReceivedMad::Malformed { .. }));
    }

    #[test]
    fn arbitrary_reads_never_panic() {
        let mut rng = SplitMix64::new(0x5eed);
        for i in 0..4000 {
            let len = (rng.next_u64() % (UMAD_LEN as u64 + 64)) as usize;
            let mut v: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if i % 2 == 0 && v.len() > UMAD_HDR_LEN + 1 {
                v[UMAD_HDR_LEN + 1] = if i % 4 == 0 { 0x81 } else { 0x01 };
            }
            match RawMad::parse(&v) {
                None => assert!(len < UMAD_HDR_LEN),
                Some(raw) => {
                    let r = Received::from_raw(raw);
                    let _ = (r.tid_key(), r.class(), r.is_response(), r.smp());
                }
            }
        }
    }
}

//! The kernel user-MAD ABI (linux `include/uapi/rdma/ib_user_mad.h`, ABI version 5) as
//! plain byte layouts: the 56-byte `ib_user_mad_hdr_old` that precedes every MAD on
//! read/write (we never call `IB_USER_MAD_ENABLE_PKEY`, so the kernel and umad2sim both use
//! this layout), the 28-byte `ib_user_mad_reg_req` and the ioctl numbers.
//!
//! Pure: encoding and decoding only, no syscalls. Decoding never panics.

use fabric::Lid;

/// Size of the user-MAD header without the P_Key index extension; the MAD follows here.
pub const UMAD_HDR_LEN: usize = 56;
/// Size of a MAD on QP0/QP1 (no RMPP here).
pub const MAD_LEN: usize = 256;
/// Header + one MAD: what a write carries and the read buffer size.
pub const UMAD_LEN: usize = UMAD_HDR_LEN + MAD_LEN;
/// Size of `struct ib_user_mad_reg_req` (27 bytes of fields, padded to 4-byte alignment).
pub const REG_REQ_LEN: usize = 28;

/// `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)`.
pub const IB_USER_MAD_REGISTER_AGENT: u64 = ioc(3, 0x1b, 1, REG_REQ_LEN as u64);
/// `_IOW(0x1b, 2, __u32)`.
pub const IB_USER_MAD_UNREGISTER_AGENT: u64 = ioc(1, 0x1b, 2, 4);
/// `_IO(0x1b, 3)`. Documented for completeness: this crate never calls it (umad2sim would
/// keep using the 56-byte layout anyway, and a real kernel would switch to 64 bytes).
pub const IB_USER_MAD_ENABLE_PKEY: u64 = ioc(0, 0x1b, 3, 0);

/// Linux `_IOC(dir, type, nr, size)` on x86/arm (2 direction bits, 14 size bits).
const fn ioc(dir: u64, ty: u64, nr: u64, size: u64) -> u64 {
    (dir << 30) | (size << 16) | (ty << 8) | nr
}

/// `ETIMEDOUT` as the kernel puts it in the header status of a request that got no answer
/// within its `timeout_ms` (the MAD is then the original request).
pub const STATUS_ETIMEDOUT: u32 = 110;

/// The 56-byte user-MAD header (`struct ib_user_mad_hdr_old`), host-order fields as the
/// kernel gives them; `qpn`, `qkey`, `lid` and `flow_label` are big-endian on the wire
/// and decoded here.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct UmadHeader {
    /// Agent id the MAD was received with / is to be sent with.
    pub agent_id: u32,
    /// Receive status: 0, or `ETIMEDOUT` for a request that timed out in the kernel.
    pub status: u32,
    /// Send: milliseconds the kernel waits for the response (0 = no response expected).
    pub timeout_ms: u32,
    /// Send: kernel retries.
    pub retries: u32,
    /// Header + MAD length (receive); ignored by the kernel on send.
    pub length: u32,
    /// Remote QP number.
    pub qpn: u32,
    /// Remote Q_Key (QP1: 0x80010000; QP0: 0).
    pub qkey: u32,
    /// Remote LID (0xFFFF for directed-route SMPs).
    pub lid: Lid,
    /// Service level.
    pub sl: u8,
    /// Local path bits.
    pub path_bits: u8,
    /// GRH present.
    pub grh_present: bool,
    /// Local GID index.
    pub gid_index: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// Remote GID.
    pub gid: [u8; 16],
    /// GRH flow label.
    pub flow_label: u32,
}

impl UmadHeader {
    /// Writes the header into the first 56 bytes of `out`.
    pub fn encode(&self, out: &mut [u8; UMAD_HDR_LEN]) {
        out[0..4].copy_from_slice(&self.agent_id.to_ne_bytes());
        out[4..8].copy_from_slice(&self.status.to_ne_bytes());
        out[8..12].copy_from_slice(&self.timeout_ms.to_ne_bytes());
        out[12..16].copy_from_slice(&self.retries.to_ne_bytes());
        out[16..20].copy_from_slice(&self.length.to_ne_bytes());
        out[20..24].copy_from_slice(&self.qpn.to_be_bytes());
        out[24..28].copy_from_slice(&self.qkey.to_be_bytes());
        out[28..30].copy_from_slice(&self.lid.0.to_be_bytes());
        out[30] = self.sl;
        out[31] = self.path_bits;
        out[32] = u8::from(self.grh_present);
        out[33] = self.gid_index;
        out[34] = self.hop_limit;
        out[35] = self.traffic_class;
        out[36..52].copy_from_slice(&self.gid);
        out[52..56].copy_from_slice(&self.flow_label.to_be_bytes());
    }

    /// Reads a header from the first 56 bytes of `b`; `None` when `b` is shorter.
    pub fn decode(b: &[u8]) -> Option<UmadHeader> {
        let h: &[u8; UMAD_HDR_LEN] = b.get(..UMAD_HDR_LEN)?.try_into().ok()?;
        let ne = |i: usize| u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let be = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&h[36..52]);
        Some(UmadHeader {
            agent_id: ne(0),
            status: ne(4),
            timeout_ms: ne(8),
            retries: ne(12),
            length: ne(16),
            qpn: be(20),
            qkey: be(24),
            lid: Lid(u16::from_be_bytes([h[28], h[29]])),
            sl: h[30],
            path_bits: h[31],
            grh_present: h[32] != 0,
            gid_index: h[33],
            hop_limit: h[34],
            traffic_class: h[35],
            gid,
            flow_label: be(52),
        })
    }
}

/// A 128-bit set of methods (bit n = method n) for which an agent receives unsolicited
/// MADs (requests and traps; responses to its own requests always reach it).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MethodMask(pub u128);

impl MethodMask {
    /// No unsolicited MADs: the agent only gets responses to what it sends.
    pub const NONE: MethodMask = MethodMask(0);

    /// Adds one method (only the low 7 bits count: the R bit is not part of the mask).
    pub fn with(self, method: mad::Method) -> MethodMask {
        MethodMask(self.0 | (1u128 << (method.0 & 0x7f)))
    }

    /// What an SM takes unsolicited on the SMP classes: Get and Set (SMInfo from other SMs),
    /// Trap and TrapRepress (traps from SMAs), Report.
    pub fn sm_smp() -> MethodMask {
        MethodMask::NONE
            .with(mad::Method::GET)
            .with(mad::Method::SET)
            .with(mad::Method::TRAP)
            .with(mad::Method::TRAP_REPRESS)
            .with(mad::Method::REPORT)
    }

    /// True when `method` (low 7 bits) is in the mask.
    pub fn contains(self, method: mad::Method) -> bool {
        self.0 & (1u128 << (method.0 & 0x7f)) != 0
    }
}

/// `struct ib_user_mad_reg_req`: what `IB_USER_MAD_REGISTER_AGENT` takes.
///
/// Layout: id u32 @0, method_mask 16 bytes @4 (the kernel reads it as an array of
/// `unsigned long` aligned to 4; on a little-endian host that is bit n of byte n/8, the
/// same as four little-endian u32 words), qpn @20, mgmt_class @21, mgmt_class_version @22,
/// oui\[3\] @23, rmpp_version @26, one padding byte @27.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RegReq {
    /// Set by the kernel: the agent id.
    pub id: u32,
    /// Unsolicited methods wanted.
    pub method_mask: MethodMask,
    /// 0 (SMI) or 1 (GSI).
    pub qpn: u8,
    /// Management class.
    pub mgmt_class: u8,
    /// Class version.
    pub mgmt_class_version: u8,
    /// Vendor OUI (vendor classes 0x30..=0x4f only).
    pub oui: [u8; 3],
    /// RMPP version (0: none).
    pub rmpp_version: u8,
}

impl RegReq {
    /// Encodes for the ioctl.
    pub fn encode(&self) -> [u8; REG_REQ_LEN] {
        let mut b = [0u8; REG_REQ_LEN];
        b[0..4].copy_from_slice(&self.id.to_ne_bytes());
        for w in 0..4 {
            let word = (self.method_mask.0 >> (32 * w)) as u32;
            // The kernel's view is a bitmap of native longs; on little-endian hosts (the
            // only ones this crate targets, see lib.rs) bit n sits in byte n/8.
            b[4 + 4 * w..8 + 4 * w].copy_from_slice(&word.to_le_bytes());
        }
        b[20] = self.qpn;
        b[21] = self.mgmt_class;
        b[22] = self.mgmt_class_version;
        b[23..26].copy_from_slice(&self.oui);
        b[26] = self.rmpp_version;
        b
    }

    /// Reads the agent id the kernel wrote back.
    pub fn id_of(b: &[u8; REG_REQ_LEN]) -> u32 {
        u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_header() {
        // Printed by a C program compiled against this machine's <rdma/ib_user_mad.h>
        // (which also gave sizeof(reg_req) = 28, sizeof(hdr_old) = 56, offsetof qpn = 20,
        // offsetof flow_label = 52).
        assert_eq!(IB_USER_MAD_REGISTER_AGENT, 0xC01C_1B01);
        assert_eq!(IB_USER_MAD_UNREGISTER_AGENT, 0x4004_1B02);
        assert_eq!(IB_USER_MAD_ENABLE_PKEY, 0x0000_1B03);
    }

    #[test]
    fn header_field_offsets() {
        let h = UmadHeader {
            agent_id: 0x0403_0201,
            status: 7,
            timeout_ms: 1000,
            retries: 2,
            length: 312,
            qpn: 1,
            qkey: 0x8001_0000,
            lid: Lid(0x1234),
            sl: 3,
            path_bits: 4,
            grh_present: true,
            gid_index: 5,
            hop_limit: 6,
            traffic_class: 8,
            gid: [9; 16],
            flow_label: 0x000A_BCDE,
        };
        let mut b = [0u8; UMAD_HDR_LEN];
        h.encode(&mut b);
        assert_eq!(&b[0..4], &0x0403_0201u32.to_ne_bytes());
        assert_eq!(&b[20..24], &[0, 0, 0, 1]);
        assert_eq!(&b[24..28], &[0x80, 0x01, 0, 0]);
        assert_eq!(&b[28..30], &[0x12, 0x34]);
        assert_eq!(b[30..36], [3, 4, 1, 5, 6, 8]);
        assert_eq!(&b[52..56], &[0x00, 0x0A, 0xBC, 0xDE]);
        assert_eq!(UmadHeader::decode(&b), Some(h));
    }

    #[test]
    fn header_decode_short_input_is_none() {
        for n in 0..UMAD_HDR_LEN {
            assert_eq!(UmadHeader::decode(&vec![0xFF; n]), None, "{n} bytes");
        }
        assert!(UmadHeader::decode(&[0u8; UMAD_HDR_LEN]).is_some());
    }

    #[test]
    fn reg_req_layout() {
        let r = RegReq {
            id: 0,
            method_mask: MethodMask::sm_smp(),
            qpn: 0,
            mgmt_class: 0x81,
            mgmt_class_version: 1,
            oui: [0xA, 0xB, 0xC],
            rmpp_version: 0,
        };
        let b = r.encode();
        // Methods 1, 2, 5, 6, 7 -> bits 1,2,5,6,7 of byte 4.
        assert_eq!(b[4], 0b1110_0110);
        assert!(b[5..20].iter().all(|&x| x == 0));
        assert_eq!(b[20..27], [0, 0x81, 1, 0xA, 0xB, 0xC, 0]);
        let mut back = b;
        back[0..4].copy_from_slice(&9u32.to_ne_bytes());
        assert_eq!(RegReq::id_of(&back), 9);
    }

    #[test]
    fn method_mask_high_methods_land_in_later_words() {
        let m = MethodMask::NONE.with(mad::Method::GET_TABLE); // 0x12 = 18
        let b = RegReq {
            id: 0,
            method_mask: m,
            qpn: 1,
            mgmt_class: 3,
            mgmt_class_version: 2,
            oui: [0; 3],
            rmpp_version: 1,
        }
        .encode();
        assert_eq!(b[4 + 2], 0b100);
        assert!(m.contains(mad::Method::GET_TABLE));
        assert!(!m.contains(mad::Method::GET));
        // The R bit is not part of the mask.
        assert_eq!(
            MethodMask::NONE.with(mad::Method::GET_RESP),
            MethodMask::NONE.with(mad::Method::GET)
        );
    }
}

//! Notice (IBA 14.2.5.1 / 13.4.8.2), the attribute of Trap, TrapRepress and Report, with a
//! typed view of the data details of the traps the SM handles. Layout from opensm
//! `ib_mad_notice_attr_t` and libibmad fields.c `IB_NOTICE_*_F`:
//!
//! | bytes | field |
//! |---|---|
//! | 0 | IsGeneric (bit 7), Type (bits 6..0) |
//! | 1-3 | ProducerType (generic) or VendorID (vendor specific), 24 bits |
//! | 4-5 | TrapNumber (generic) or DeviceID |
//! | 6-7 | IssuerLID |
//! | 8-9 | NoticeToggle (bit 15), NoticeCount (bits 14..0) |
//! | 10-63 | DataDetails (54 bytes) |
//! | 64-79 | IssuerGID (only in the 80-byte SA form; an SMP carries the first 64 bytes) |

use super::SmpAttribute;
use crate::header::AttributeId;
use crate::wire::*;
use fabric::{Guid, Lid, PKey};

/// Notice ProducerType values (24 bits, IBA Table 118).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ProducerType(pub u32);

impl ProducerType {
    /// Channel adapter.
    pub const CA: ProducerType = ProducerType(1);
    /// Switch.
    pub const SWITCH: ProducerType = ProducerType(2);
    /// Router.
    pub const ROUTER: ProducerType = ProducerType(3);
    /// Class manager (the SM for traps 64-67).
    pub const CLASS_MANAGER: ProducerType = ProducerType(4);
}

/// A Notice. `data_details` is kept raw so that every notice round-trips; use
/// [`Notice::details`] for the typed view and [`Notice::set_details`] to fill it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Notice {
    /// Byte 0 bit 7: IsGeneric.
    pub is_generic: bool,
    /// Byte 0 bits 6..0: Type (0 fatal, 1 urgent, 2 security, 3 subnet management,
    /// 4 informational, 0x7F empty).
    pub notice_type: u8,
    /// Bytes 1-3: ProducerType (generic) or VendorID (24 bits).
    pub producer_type_or_vendor_id: u32,
    /// Bytes 4-5: TrapNumber (generic) or DeviceID.
    pub trap_number_or_device_id: u16,
    /// Bytes 6-7: IssuerLID.
    pub issuer_lid: Lid,
    /// Byte 8 bit 7: NoticeToggle.
    pub toggle: bool,
    /// Bytes 8-9 bits 14..0: NoticeCount (15 bits).
    pub count: u16,
    /// Bytes 10-63: DataDetails.
    pub data_details: [u8; 54],
    /// Bytes 64-79: IssuerGID (zero when decoded from an SMP).
    pub issuer_gid: [u8; 16],
}

impl Default for Notice {
    fn default() -> Notice {
        Notice {
            is_generic: false,
            notice_type: 0,
            producer_type_or_vendor_id: 0,
            trap_number_or_device_id: 0,
            issuer_lid: Lid(0),
            toggle: false,
            count: 0,
            data_details: [0; 54],
            issuer_gid: [0; 16],
        }
    }
}

impl Notice {
    /// Length of the full attribute as carried by SA (with IssuerGID).
    pub const FULL_LEN: usize = 80;
    /// Type: fatal.
    pub const TYPE_FATAL: u8 = 0;
    /// Type: urgent.
    pub const TYPE_URGENT: u8 = 1;
    /// Type: security.
    pub const TYPE_SECURITY: u8 = 2;
    /// Type: subnet management.
    pub const TYPE_SUBNET_MGMT: u8 = 3;
    /// Type: informational.
    pub const TYPE_INFO: u8 = 4;
    /// Type: empty (no notice queued).
    pub const TYPE_EMPTY: u8 = 0x7F;

    /// A generic notice for `trap_number` with the given details.
    pub fn generic(
        notice_type: u8,
        producer: ProducerType,
        trap_number: u16,
        issuer_lid: Lid,
        details: &NoticeDetails,
    ) -> Notice {
        Notice {
            is_generic: true,
            notice_type,
            producer_type_or_vendor_id: producer.0,
            trap_number_or_device_id: trap_number,
            issuer_lid,
            data_details: details.encode(),
            ..Notice::default()
        }
    }

    /// The trap number of a generic notice.
    pub fn trap_number(&self) -> Option<u16> {
        self.is_generic.then_some(self.trap_number_or_device_id)
    }

    /// The typed data details (by trap number for generic notices; `Other` otherwise).
    pub fn details(&self) -> NoticeDetails {
        match self.trap_number() {
            Some(t) => NoticeDetails::decode(t, &self.data_details),
            None => NoticeDetails::Other(self.data_details),
        }
    }

    /// Replaces the data details.
    pub fn set_details(&mut self, d: &NoticeDetails) {
        self.data_details = d.encode();
    }

    fn decode_head(d: &[u8; 64]) -> Notice {
        Notice {
            is_generic: d[0] & 0x80 != 0,
            notice_type: d[0] & 0x7F,
            producer_type_or_vendor_id: get_u24(d, 1),
            trap_number_or_device_id: get_u16(d, 4),
            issuer_lid: Lid(get_u16(d, 6)),
            toggle: d[8] & 0x80 != 0,
            count: get_u16(d, 8) & 0x7FFF,
            data_details: get_arr(d, 10),
            issuer_gid: [0; 16],
        }
    }

    /// Decodes the 80-byte form (SA: InformInfo reports, notice records).
    pub fn decode_full(b: &[u8; 80]) -> Notice {
        let mut head = [0u8; 64];
        head.copy_from_slice(&b[..64]);
        let mut n = Notice::decode_head(&head);
        n.issuer_gid = get_arr(b, 64);
        n
    }

    /// Encodes the 80-byte form.
    pub fn encode_full(&self) -> [u8; 80] {
        let mut head = [0u8; 64];
        self.encode(&mut head);
        let mut b = [0u8; 80];
        b[..64].copy_from_slice(&head);
        b[64..].copy_from_slice(&self.issuer_gid);
        b
    }
}

impl SmpAttribute for Notice {
    const ID: AttributeId = AttributeId::NOTICE;
    const LEN: usize = 64;
    const NAME: &'static str = "Notice";

    fn decode(d: &[u8; 64]) -> Notice {
        Notice::decode_head(d)
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d[0] = (u8::from(self.is_generic) << 7) | (self.notice_type & 0x7F);
        put_u24(d, 1, self.producer_type_or_vendor_id);
        put_u16(d, 4, self.trap_number_or_device_id);
        put_u16(d, 6, self.issuer_lid.0);
        put_u16(d, 8, (u16::from(self.toggle) << 15) | (self.count & 0x7FFF));
        put_arr(d, 10, &self.data_details);
    }
}

/// Typed DataDetails of the generic traps the SM handles. Offsets below are inside the
/// 54-byte DataDetails (add 10 for the offset in the Notice). Reserved bytes are dropped
/// by this view (the raw bytes stay in [`Notice::data_details`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum NoticeDetails {
    /// Traps 64 (GID in service), 65 (GID out of service), 66 (multicast group created),
    /// 67 (multicast group deleted): bytes 0-5 reserved, GID at 6-21.
    Gid {
        /// The port or multicast GID.
        gid: [u8; 16],
    },
    /// Trap 128, link state change: LID of the reporting switch at 0-1.
    LinkStateChange {
        /// Switch LID.
        lid: Lid,
    },
    /// Traps 129 (local link integrity), 130 (excessive buffer overrun), 131 (flow
    /// control update watchdog): reserved 0-1, LID 2-3, port 4.
    PortError {
        /// Reporting port's LID.
        lid: Lid,
        /// Port number.
        port: u8,
    },
    /// Trap 144, capability mask / other local change: reserved 0-1, LID 2-3, reserved 4,
    /// byte 5 bit 0 OtherLocalChanges, CapabilityMask 6-9, ChangeFlags 10-11 (low 6 bits:
    /// CapabilityMask2, hierarchy info, SM priority, link speed enable, link width enable,
    /// node description), CapabilityMask2 12-13.
    CapabilityChange {
        /// LID where the change happened.
        lid: Lid,
        /// OtherLocalChanges bit.
        other_local_changes: bool,
        /// New CapabilityMask.
        capability_mask: u32,
        /// ChangeFlags.
        change_flags: u16,
        /// New CapabilityMask2.
        capability_mask2: u16,
    },
    /// Trap 145, system image GUID changed: reserved 0-1, LID 2-3, reserved 4-5, GUID 6-13.
    SystemImageGuidChange {
        /// LID of the node.
        lid: Lid,
        /// New system image GUID.
        system_image_guid: Guid,
    },
    /// Trap 256, bad M_Key: reserved 0-1, LID 2-3, DrSLID 4-5, Method 6, reserved 7,
    /// AttributeID 8-9, AttributeModifier 10-13, M_Key 14-21, reserved 22, byte 23
    /// DrNotice (bit 7) / DrPathTruncated (bit 6) / DrHopCount (bits 5..0), DrNoticeReturnPath 24-53.
    BadMKey {
        /// LID of the offended port.
        lid: Lid,
        /// DrSLID of the offending SMP.
        dr_slid: Lid,
        /// Method of the offending SMP.
        method: u8,
        /// AttributeID of the offending SMP.
        attr_id: u16,
        /// AttributeModifier of the offending SMP.
        attr_mod: u32,
        /// M_Key the offending SMP carried.
        m_key: u64,
        /// DrNotice: the offending SMP was directed route.
        dr_notice: bool,
        /// DrPathTruncated.
        dr_path_truncated: bool,
        /// DrHopCount (6 bits).
        dr_hop_count: u8,
        /// DrNoticeReturnPath.
        dr_return_path: [u8; 30],
    },
    /// Traps 257 (bad P_Key) and 258 (bad Q_Key): reserved 0-1, LID1 2-3, LID2 4-5, key
    /// 6-9, SL (bits 31..28) + QP1 (bits 23..0) 10-13, QP2 (24 bits) 14-17, GID1 18-33,
    /// GID2 34-49.
    BadKey {
        /// Source LID.
        lid1: Lid,
        /// Destination LID.
        lid2: Lid,
        /// The offending key (P_Key in the low 16 bits for 257).
        key: u32,
        /// SL (4 bits).
        sl: u8,
        /// QP1 (24 bits).
        qp1: u32,
        /// QP2 (24 bits).
        qp2: u32,
        /// GID1.
        gid1: [u8; 16],
        /// GID2.
        gid2: [u8; 16],
    },
    /// Trap 259, P_Key violation at a switch external port: DataValid 0-1, LID1 2-3,
    /// LID2 4-5, P_Key 6-7, SL (bits 31..28) + QP1 8-11, QP2 12-15, GID1 16-31, GID2 32-47,
    /// SwitchLID 48-49, PortNumber 50.
    SwitchPKeyViolation {
        /// DataValid flags.
        data_valid: u16,
        /// Source LID.
        lid1: Lid,
        /// Destination LID.
        lid2: Lid,
        /// The offending P_Key.
        pkey: PKey,
        /// SL (4 bits).
        sl: u8,
        /// QP1 (24 bits).
        qp1: u32,
        /// QP2 (24 bits).
        qp2: u32,
        /// GID1.
        gid1: [u8; 16],
        /// GID2.
        gid2: [u8; 16],
        /// LID of the switch.
        switch_lid: Lid,
        /// Port number.
        port: u8,
    },
    /// Any other trap, or a vendor-specific notice: the raw bytes.
    Other([u8; 54]),
}

impl NoticeDetails {
    /// Decodes the DataDetails of generic trap `trap`.
    pub fn decode(trap: u16, d: &[u8; 54]) -> NoticeDetails {
        match trap {
            64..=67 => NoticeDetails::Gid { gid: get_arr(d, 6) },
            128 => NoticeDetails::LinkStateChange {
                lid: Lid(get_u16(d, 0)),
            },
            129..=131 => NoticeDetails::PortError {
                lid: Lid(get_u16(d, 2)),
                port: d[4],
            },
            144 => NoticeDetails::CapabilityChange {
                lid: Lid(get_u16(d, 2)),
                other_local_changes: d[5] & 0x01 != 0,
                capability_mask: get_u32(d, 6),
                change_flags: get_u16(d, 10),
                capability_mask2: get_u16(d, 12),
            },
            145 => NoticeDetails::SystemImageGuidChange {
                lid: Lid(get_u16(d, 2)),
                system_image_guid: Guid(get_u64(d, 6)),
            },
            256 => NoticeDetails::BadMKey {
                lid: Lid(get_u16(d, 2)),
                dr_slid: Lid(get_u16(d, 4)),
                method: d[6],
                attr_id: get_u16(d, 8),
                attr_mod: get_u32(d, 10),
                m_key: get_u64(d, 14),
                dr_notice: d[23] & 0x80 != 0,
                dr_path_truncated: d[23] & 0x40 != 0,
                dr_hop_count: d[23] & 0x3F,
                dr_return_path: get_arr(d, 24),
            },
            257 | 258 => NoticeDetails::BadKey {
                lid1: Lid(get_u16(d, 2)),
                lid2: Lid(get_u16(d, 4)),
                key: get_u32(d, 6),
                sl: d[10] >> 4,
                qp1: get_u32(d, 10) & 0x00FF_FFFF,
                qp2: get_u32(d, 14) & 0x00FF_FFFF,
                gid1: get_arr(d, 18),
                gid2: get_arr(d, 34),
            },
            259 => NoticeDetails::SwitchPKeyViolation {
                data_valid: get_u16(d, 0),
                lid1: Lid(get_u16(d, 2)),
                lid2: Lid(get_u16(d, 4)),
                pkey: PKey(get_u16(d, 6)),
                sl: d[8] >> 4,
                qp1: get_u32(d, 8) & 0x00FF_FFFF,
                qp2: get_u32(d, 12) & 0x00FF_FFFF,
                gid1: get_arr(d, 16),
                gid2: get_arr(d, 32),
                switch_lid: Lid(get_u16(d, 48)),
                port: d[50],
            },
            _ => NoticeDetails::Other(*d),
        }
    }

    /// Encodes to the 54-byte DataDetails (reserved bytes zero).
    pub fn encode(&self) -> [u8; 54] {
        let mut d = [0u8; 54];
        match *self {
            NoticeDetails::Gid { gid } => put_arr(&mut d, 6, &gid),
            NoticeDetails::LinkStateChange { lid } => put_u16(&mut d, 0, lid.0),
            NoticeDetails::PortError { lid, port } => {
                put_u16(&mut d, 2, lid.0);
                d[4] = port;
            }
            NoticeDetails::CapabilityChange {
                lid,
                other_local_changes,
                capability_mask,
                change_flags,
                capability_mask2,
            } => {
                put_u16(&mut d, 2, lid.0);
                d[5] = u8::from(other_local_changes);
                put_u32(&mut d, 6, capability_mask);
                put_u16(&mut d, 10, change_flags);
                put_u16(&mut d, 12, capability_mask2);
            }
            NoticeDetails::SystemImageGuidChange {
                lid,
                system_image_guid,
            } => {
                put_u16(&mut d, 2, lid.0);
                put_u64(&mut d, 6, system_image_guid.0);
            }
            NoticeDetails::BadMKey {
                lid,
                dr_slid,
                method,
                attr_id,
                attr_mod,
                m_key,
                dr_notice,
                dr_path_truncated,
                dr_hop_count,
                dr_return_path,
            } => {
                put_u16(&mut d, 2, lid.0);
                put_u16(&mut d, 4, dr_slid.0);
                d[6] = method;
                put_u16(&mut d, 8, attr_id);
                put_u32(&mut d, 10, attr_mod);
                put_u64(&mut d, 14, m_key);
                d[23] = (u8::from(dr_notice) << 7)
                    | (u8::from(dr_path_truncated) << 6)
                    | (dr_hop_count & 0x3F);
                put_arr(&mut d, 24, &dr_return_path);
            }
            NoticeDetails::BadKey {
                lid1,
                lid2,
                key,
                sl,
                qp1,
                qp2,
                gid1,
                gid2,
            } => {
                put_u16(&mut d, 2, lid1.0);
                put_u16(&mut d, 4, lid2.0);
                put_u32(&mut d, 6, key);
                put_u32(
                    &mut d,
                    10,
                    (u32::from(sl & 0xF) << 28) | (qp1 & 0x00FF_FFFF),
                );
                put_u32(&mut d, 14, qp2 & 0x00FF_FFFF);
                put_arr(&mut d, 18, &gid1);
                put_arr(&mut d, 34, &gid2);
            }
            NoticeDetails::SwitchPKeyViolation {
                data_valid,
                lid1,
                lid2,
                pkey,
                sl,
                qp1,
                qp2,
                gid1,
                gid2,
                switch_lid,
                port,
            } => {
                put_u16(&mut d, 0, data_valid);
                put_u16(&mut d, 2, lid1.0);
                put_u16(&mut d, 4, lid2.0);
                put_u16(&mut d, 6, pkey.0);
                put_u32(&mut d, 8, (u32::from(sl & 0xF) << 28) | (qp1 & 0x00FF_FFFF));
                put_u32(&mut d, 12, qp2 & 0x00FF_FFFF);
                put_arr(&mut d, 16, &gid1);
                put_arr(&mut d, 32, &gid2);
                put_u16(&mut d, 48, switch_lid.0);
                d[50] = port;
            }
            NoticeDetails::Other(raw) => d = raw,
        }
        d
    }
}

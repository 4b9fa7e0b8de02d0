//! SL2VL and VL arbitration tables as OpenSM programs them (osm_qos.c), as pure functions of
//! a [`TableConfig`] and the facts of one port (OperationalVLs, VLArb caps).

/// One VL arbitration entry: a data VL (0-14) and its weight in 64-byte credits (0 = skip).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct VlArb {
    /// The data VL.
    pub vl: u8,
    /// The weight.
    pub weight: u8,
}

/// Entries in one VLArbitrationTable block (attribute 0x0018).
pub const VLARB_BLOCK_LEN: usize = 32;
/// Entries in one priority table (low or high): two blocks.
pub const VLARB_TABLE_LEN: usize = 64;

/// The kinds of port OpenSM keeps separate option sets for (`qos_ca_`, `qos_sw0_`,
/// `qos_swe_`, `qos_rtr_`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PortKind {
    /// A channel adapter port.
    Ca,
    /// A switch's (enhanced) port 0.
    SwitchPort0,
    /// A switch's external ports 1..N.
    SwitchExternal,
    /// A router port.
    Router,
}

impl PortKind {
    /// Every kind, in OpenSM's order.
    pub const ALL: [PortKind; 4] = [
        PortKind::Ca,
        PortKind::SwitchPort0,
        PortKind::SwitchExternal,
        PortKind::Router,
    ];

    /// The opensm.conf prefix of this kind's options (`qos_ca_`...).
    pub fn option_prefix(self) -> &'static str {
        match self {
            PortKind::Ca => "qos_ca_",
            PortKind::SwitchPort0 => "qos_sw0_",
            PortKind::SwitchExternal => "qos_swe_",
            PortKind::Router => "qos_rtr_",
        }
    }
}

/// What OpenSM programs on one kind of port, before the per-port masking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableConfig {
    /// `qos_*_max_vls` (1-15). OpenSM computes it and programs nothing from it; kept for
    /// the caller (and the option round trip).
    pub max_vls: u8,
    /// PortInfo VLHighLimit (`qos_*_high_limit`).
    pub vl_high_limit: u8,
    /// High-priority table, entries 0-63 (blocks 2 and 3 of the attribute, 0-based).
    pub vlarb_high: [VlArb; VLARB_TABLE_LEN],
    /// Low-priority table, entries 0-63 (blocks 0 and 1).
    pub vlarb_low: [VlArb; VLARB_TABLE_LEN],
    /// VL per SL; 15 means "drop this SL".
    pub sl2vl: [u8; 16],
}

impl TableConfig {
    /// OpenSM's built-in defaults (osm_base.h OSM_DEFAULT_QOS_*): max_vls 15, high limit
    /// 0, vlarb_high `0:4,1:0,...,14:0`, vlarb_low `0:0,1:4,...,14:4`, sl2vl
    /// `0,1,...,14,7`; entries past the 15th are zero.
    pub fn opensm_default() -> TableConfig {
        let mut vlarb_high = [VlArb::default(); VLARB_TABLE_LEN];
        let mut vlarb_low = [VlArb::default(); VLARB_TABLE_LEN];
        for vl in 0..15u8 {
            vlarb_high[usize::from(vl)] = VlArb {
                vl,
                weight: if vl == 0 { 4 } else { 0 },
            };
            vlarb_low[usize::from(vl)] = VlArb {
                vl,
                weight: if vl == 0 { 0 } else { 4 },
            };
        }
        let mut sl2vl = [0u8; 16];
        for (sl, vl) in sl2vl.iter_mut().enumerate().take(15) {
            *vl = sl as u8;
        }
        sl2vl[15] = 7;
        TableConfig {
            max_vls: 15,
            vl_high_limit: 0,
            vlarb_high,
            vlarb_low,
            sl2vl,
        }
    }

    /// The SL2VL table to program on a port whose OperationalVLs code is `op_vls`
    /// (osm_qos.c sl2vl_update_table): every VL but 15 is ANDed with [`vl_mask`]; VL 15
    /// (drop) is kept.
    pub fn sl2vl_masked(&self, op_vls: u8) -> [u8; 16] {
        let mask = vl_mask(op_vls);
        self.sl2vl
            .map(|vl| if vl == 15 { 15 } else { (vl & 0x0F) & mask })
    }

    /// One VLArbitrationTable block to program (osm_qos.c vlarb_update): `block` 0 and 1
    /// are the low-priority entries 0-31 and 32-63, 2 and 3 the high-priority ones.
    ///
    /// None when the port's cap does not reach the block (block 0/2: cap > 0; block 1/3:
    /// cap > 32) or `block` > 3. Within a block, entries past the cap's length are zero
    /// and the VLs of the others are ANDed with [`vl_mask`]`(op_vls)`. The length of the
    /// second block is `cap % 32`, as in OpenSM: a cap of exactly 64 programs the second
    /// block all zeros. The caller skips VLArb altogether on ports [`has_vlarb`] refuses.
    pub fn vlarb_block(
        &self,
        block: u8,
        op_vls: u8,
        low_cap: u8,
        high_cap: u8,
    ) -> Option<[VlArb; VLARB_BLOCK_LEN]> {
        let (table, cap) = match block {
            0 | 1 => (&self.vlarb_low, usize::from(low_cap)),
            2 | 3 => (&self.vlarb_high, usize::from(high_cap)),
            _ => return None,
        };
        let (first, len) = if matches!(block, 0 | 2) {
            if cap == 0 {
                return None;
            }
            (0, cap.min(VLARB_BLOCK_LEN))
        } else {
            if cap <= VLARB_BLOCK_LEN {
                return None;
            }
            (VLARB_BLOCK_LEN, cap % VLARB_BLOCK_LEN)
        };
        let mask = vl_mask(op_vls);
        let mut out = [VlArb::default(); VLARB_BLOCK_LEN];
        for (o, e) in out.iter_mut().zip(&table[first..first + len]) {
            *o = VlArb {
                vl: e.vl & mask,
                weight: e.weight,
            };
        }
        Some(out)
    }
}

impl Default for TableConfig {
    fn default() -> Self {
        TableConfig::opensm_default()
    }
}

/// The tables for every kind of port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct QosTables {
    /// CA ports (`qos_ca_*`).
    pub ca: TableConfig,
    /// Switch port 0 (`qos_sw0_*`).
    pub sw0: TableConfig,
    /// Switch external ports (`qos_swe_*`).
    pub swe: TableConfig,
    /// Router ports (`qos_rtr_*`).
    pub rtr: TableConfig,
}

impl QosTables {
    /// The tables of one kind of port.
    pub fn get(&self, kind: PortKind) -> &TableConfig {
        match kind {
            PortKind::Ca => &self.ca,
            PortKind::SwitchPort0 => &self.sw0,
            PortKind::SwitchExternal => &self.swe,
            PortKind::Router => &self.rtr,
        }
    }
}

/// The VL mask of an OperationalVLs code, `(1 << (op_vls - 1)) - 1` as in osm_qos.c:
/// 1 (VL0) -> 0, 2 (VL0-1) -> 1, 3 (VL0-3) -> 3, 4 (VL0-7) -> 7, 5 (VL0-14) -> 15.
/// Code 0 (invalid; C would shift by -1) gives 0; codes above 5 mask nothing (0xFF).
pub fn vl_mask(op_vls: u8) -> u8 {
    match op_vls {
        0 => 0,
        1..=8 => ((1u16 << (op_vls - 1)) - 1) as u8,
        _ => 0xFF,
    }
}

/// Whether a port gets VL arbitration tables: not when its VLCap is one data VL (code 1),
/// as osm_qos.c vlarb_update skips it (and sets its VLHighLimit to 0).
pub fn has_vlarb(vl_cap: u8) -> bool {
    vl_cap != 1
}

/// The OperationalVLs to set on a port (osm_port.c osm_physp_calc_link_op_vls): with a peer,
/// the smaller of both VLCaps; without one, the port's current OperationalVLs; 0 becomes 1
/// (non-compliant ports); the result is capped by `max_op_vls` (OpenSM's `max_op_vls`).
pub fn op_vls(own_vl_cap: u8, peer_vl_cap: Option<u8>, current_op_vls: u8, max_op_vls: u8) -> u8 {
    let mut v = match peer_vl_cap {
        Some(peer) => own_vl_cap.min(peer),
        None => current_op_vls,
    };
    if v == 0 {
        v = 1;
    }
    v.min(max_op_vls)
}

//! What the ports of a sweep should hold: their OperationalVLs (negotiated at bring-up,
//! QoS on or off) and, with QoS on, their SLtoVL and VLArb blocks, as OpenSM's QoS manager
//! programs them (`osm_qos.c`), from the QoS options and the qos-setup scopes of the policy.
//!
//! * Switch external ports that are not DOWN: VLArb with the `qos_swe_*` tables, and (when
//!   port 0 sets IsSLMappingSupported) an SLtoVL block for every input port 0..=N to that
//!   output port, masked by the output port's OperationalVLs. An enhanced port 0 is an
//!   output too; its own pair (0, 0) and its VLArb take the `qos_sw0_*` tables.
//! * CA and router ports that are not DOWN: VLArb and the SLtoVL block with the `qos_ca_*`
//!   (`qos_rtr_*`) tables, masked by the port's OperationalVLs.
//! * No VLArb on a port whose VLCap is one data VL; VLArb blocks only as far as the port's
//!   VLArbLowCap / VLArbHighCap reach.
//! * A routing engine that layers paths over VLs (dfsssp, torus-2QoS) brings its own
//!   SLtoVL tables ([`routing::EngineSl2Vl`]): they replace the QoS ones on every port
//!   (and a qos-setup scope's), and are programmed with QoS off too, VLArb then taking
//!   OpenSM's default QoS tables so that every data VL is served (OpenSM programs an
//!   engine's tables only with QoS on).
//! * The OperationalVLs a table is masked by are those the port holds after this sweep:
//!   a port still in INIT gets [`op_vls`] with its ARMED Set (stage 3); a port already up
//!   keeps what it has (it is not renegotiated under traffic).

use crate::config::SweeperConfig;
use crate::discovery::Discovery;
use crate::vl::{VlAttr, VlTables, sl2vl_data, vlarb_data};
use mad::{PortInfo, VlArbEntry, VlArbitrationTable};
use qos::{PortKind, QosTables, TableConfig};

const DOWN: u8 = 1;
const INIT: u8 = 2;

/// The OperationalVLs port `port` of node `node` holds once this sweep is done.
pub(crate) fn op_vls(disc: &Discovery, cfg: &SweeperConfig, node: u32, port: u8) -> u8 {
    let p = disc.port_of(node, port);
    if port == 0 && disc.node(node).is_switch {
        return p.info.operational_vls;
    }
    if p.info.port_state != INIT {
        return p.info.operational_vls;
    }
    let peer =
        (p.remote_sweep == disc.sweep()).then(|| disc.port_of(p.remote, p.remote_port).info.vl_cap);
    qos::op_vls(p.info.vl_cap, peer, p.info.operational_vls, cfg.max_op_vls)
}

/// The data VLs every switch-to-switch link operates once this sweep is done (the fewest
/// over those links; 8 when there is none): what a routing engine may spread paths over
/// (`routing::EngineOptions::max_layers`). OperationalVLs codes 1-5 are 1, 2, 4, 8 and 15
/// data VLs.
pub(crate) fn switch_link_vls(disc: &Discovery, cfg: &SweeperConfig) -> u8 {
    let mut fewest: Option<u8> = None;
    for s in disc.switches() {
        let n = disc.node(s.node);
        for p in 1..=n.nports {
            let port = disc.port_of(s.node, p);
            if port.info_sweep != disc.sweep()
                || port.info.port_state <= DOWN
                || port.remote_sweep != disc.sweep()
                || !disc.node(port.remote).is_switch
            {
                continue;
            }
            let vls = match op_vls(disc, cfg, s.node, p) {
                0 | 1 => 1,
                2 => 2,
                3 => 4,
                4 => 8,
                _ => 15,
            };
            fewest = Some(fewest.map_or(vls, |f| f.min(vls)));
        }
    }
    fewest.unwrap_or(8)
}

/// The VLHighLimit a port should hold (None while QoS is off): its tables' high limit,
/// 0 on a port with one data VL (no VL arbitration), as OpenSM.
pub(crate) fn vl_high_limit(
    disc: &Discovery,
    cfg: &SweeperConfig,
    policy: Option<&qos::Policy>,
    node: u32,
    port: u8,
) -> Option<u8> {
    let q = cfg.qos.as_deref()?;
    let n = disc.node(node);
    let kind = match (n.is_switch, port) {
        (true, 0) => PortKind::SwitchPort0,
        (true, _) => PortKind::SwitchExternal,
        _ if n.info.node_type == fabric::NodeType::Router.to_wire() => PortKind::Router,
        _ => PortKind::Ca,
    };
    let info = &disc.port_of(node, port).info;
    if !qos::has_vlarb(info.vl_cap) {
        return Some(0);
    }
    Some(table_for(q, policy, disc, node, port, kind).vl_high_limit)
}

/// Every VL table block the ports of this sweep should hold (empty while QoS is off and
/// the routing brings no SLtoVL tables of its own).
pub(crate) fn tables(
    disc: &Discovery,
    cfg: &SweeperConfig,
    policy: Option<&qos::Policy>,
    engine: Option<&routing::EngineSl2Vl>,
) -> VlTables {
    let mut out = VlTables::new();
    let defaults;
    let q = match (cfg.qos.as_deref(), engine) {
        (Some(q), _) => q,
        (None, Some(_)) => match qos::QosOptions::default().build() {
            Ok(t) => {
                defaults = t;
                &defaults
            }
            // OpenSM's defaults always build (tested in the qos crate).
            Err(_) => return out,
        },
        (None, None) => return out,
    };
    for i in 0..disc.nodes().len() as u32 {
        if !disc.seen(i) {
            continue;
        }
        let n = disc.node(i);
        if n.is_switch {
            switch_tables(disc, cfg, q, policy, engine, i, &mut out);
        } else {
            let kind = if n.info.node_type == fabric::NodeType::Router.to_wire() {
                PortKind::Router
            } else {
                PortKind::Ca
            };
            for p in 1..=n.nports {
                let port = disc.port_of(i, p);
                if port.info_sweep != disc.sweep() || port.info.port_state <= DOWN {
                    continue;
                }
                let mut t = table_for(q, policy, disc, i, p, kind);
                if let Some(e) = engine {
                    t.sl2vl = e.default;
                }
                let op = op_vls(disc, cfg, i, p);
                vlarb_blocks(&mut out, disc, i, p, &t, op);
                if port.info.capability_mask & PortInfo::CAP_IS_SL_MAPPING_SUPPORTED != 0 {
                    out.insert(
                        (n.guid, VlAttr::SlToVl, u32::from(p)),
                        sl2vl_data(t.sl2vl_masked(op)),
                    );
                }
            }
        }
    }
    out
}

fn switch_tables(
    disc: &Discovery,
    cfg: &SweeperConfig,
    q: &QosTables,
    policy: Option<&qos::Policy>,
    engine: Option<&routing::EngineSl2Vl>,
    i: u32,
    out: &mut VlTables,
) {
    let n = disc.node(i);
    let sw = disc.switch(n.sw);
    let p0 = disc.port_of(i, 0);
    let sl_map = p0.info.capability_mask & PortInfo::CAP_IS_SL_MAPPING_SUPPORTED != 0;
    let enhanced = sw.info.enhanced_port0;
    let up = |p: u8| {
        let port = disc.port_of(i, p);
        port.info_sweep == disc.sweep() && port.info.port_state > DOWN
    };
    for p in 1..=n.nports {
        if up(p) {
            let t = table_for(q, policy, disc, i, p, PortKind::SwitchExternal);
            vlarb_blocks(out, disc, i, p, &t, op_vls(disc, cfg, i, p));
        }
    }
    if sl_map {
        let first = if enhanced { 0 } else { 1 };
        for o in first..=n.nports {
            if o != 0 && !up(o) {
                continue;
            }
            let mut t = table_for(q, policy, disc, i, o, PortKind::SwitchExternal);
            // A routing's own table (one per output port, every input port alike) wins.
            if let Some(e) = engine {
                t.sl2vl = *e.table(n.guid, o);
            }
            let op = op_vls(disc, cfg, i, o);
            let vl = sl2vl_data(t.sl2vl_masked(op));
            // Else a qos-setup sl2vl-scope with from:/to: ports may name a pair (the
            // port's facts are gathered once for all its input ports).
            let pairs: Vec<Option<[u8; 16]>> = match policy.filter(|_| engine.is_none()) {
                Some(pol) => with_facts(disc, i, o, |f| {
                    (0..=n.nports).map(|inp| pol.sl2vl_for(f, inp, o)).collect()
                }),
                None => Vec::new(),
            };
            for inp in 0..=n.nports {
                let data = match pairs.get(usize::from(inp)).copied().flatten() {
                    Some(v) => {
                        t.sl2vl = v;
                        sl2vl_data(t.sl2vl_masked(op))
                    }
                    None => vl.clone(),
                };
                out.insert(
                    (n.guid, VlAttr::SlToVl, u32::from(inp) << 8 | u32::from(o)),
                    data,
                );
            }
        }
    }
    if enhanced {
        // Port 0 as an end port (osm_qos.c qos_endport_setup with the sw0 tables): its
        // VLArb, and its own pair (0, 0), which the sw0 table wins.
        let mut t = table_for(q, policy, disc, i, 0, PortKind::SwitchPort0);
        if let Some(e) = engine {
            t.sl2vl = *e.table(n.guid, 0);
        }
        let op = op_vls(disc, cfg, i, 0);
        vlarb_blocks(out, disc, i, 0, &t, op);
        if sl_map {
            out.insert((n.guid, VlAttr::SlToVl, 0), sl2vl_data(t.sl2vl_masked(op)));
        }
    }
}

/// The tables of one port: the options' tables of its kind, or a qos-setup scope's.
fn table_for(
    q: &QosTables,
    policy: Option<&qos::Policy>,
    disc: &Discovery,
    node: u32,
    port: u8,
    kind: PortKind,
) -> TableConfig {
    match policy {
        Some(pol) => with_facts(disc, node, port, |f| pol.tables_for_port(f, kind, q)),
        None => *q.get(kind),
    }
}

/// Runs `f` on what a QoS policy's port groups may name of a port: its node and port GUID,
/// number, node type and description, the P_Keys it is to hold, the SM's own port. Partition
/// names are not known here (the `partition:` of a port group matches through the SA, not
/// in table selection).
fn with_facts<R>(
    disc: &Discovery,
    node: u32,
    port: u8,
    f: impl FnOnce(&qos::PortFacts<'_>) -> R,
) -> R {
    let n = disc.node(node);
    let p = disc.port_of(node, port);
    let desc = n.desc.text();
    let pkeys: Vec<fabric::PKey> = p.pkey_want.iter().map(|&k| fabric::PKey(k)).collect();
    let node_type = fabric::NodeType::from_wire(n.info.node_type).unwrap_or(fabric::NodeType::Ca);
    let port_guid = if n.is_switch {
        disc.port_of(node, 0).guid
    } else {
        p.guid
    };
    let facts = qos::PortFacts {
        node_guid: n.guid,
        port_guid,
        port_num: port,
        node_type,
        node_desc: &desc,
        pkeys: &pkeys,
        partitions: &[],
        is_sm_port: node == disc.local() && port == disc.local_port(),
    };
    f(&facts)
}

/// The VLArb blocks of a port (its caps, no VLArb with one data VL).
fn vlarb_blocks(
    out: &mut VlTables,
    disc: &Discovery,
    node: u32,
    port: u8,
    t: &TableConfig,
    op: u8,
) {
    let info = &disc.port_of(node, port).info;
    if !qos::has_vlarb(info.vl_cap) {
        return;
    }
    let g = disc.node(node).guid;
    for b in 0..4u8 {
        let Some(entries) = t.vlarb_block(
            b,
            op,
            info.vl_arbitration_low_cap,
            info.vl_arbitration_high_cap,
        ) else {
            continue;
        };
        let mut table = VlArbitrationTable::default();
        for (d, e) in table.entries.iter_mut().zip(entries.iter()) {
            *d = VlArbEntry {
                vl: e.vl,
                weight: e.weight,
            };
        }
        out.insert(
            (g, VlAttr::VlArb, u32::from(b + 1) << 16 | u32::from(port)),
            vlarb_data(&table),
        );
    }
}

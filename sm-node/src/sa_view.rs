//! Building the SA's [`FabricView`] from sm-core's [`Sweeper`]: the topology of its last
//! discovery, its guid -> LID map, the LFTs and P_Key tables it programmed, its own SM
//! identity, every node's NodeInfo, every switch's SwitchInfo and every port's PortInfo as
//! the sweeper last read them (its discovery Get or the answer to its own Set), the MFT
//! blocks and VL tables it programmed. PortInfo the
//! caller gives wins; a node or port never read is filled from the topology (see
//! [`ViewInput`]).

use fabric::Guid;
use mad::PortInfo;
use sa::{FabricView, SmSelf, ViewInput};
use sm_core::Sweeper;
use std::collections::HashMap;

/// The view of the fabric the sweeper discovered. `sm_port_guid` is the SM's port;
/// `partition_sl` the SL of each partition (low 15 bits of the key); `port_info` PortInfo
/// known by (node GUID, port), over what the sweeper read.
pub fn view_from_sweeper(
    sw: &Sweeper,
    sm_port_guid: Guid,
    subnet_prefix: u64,
    partition_sl: HashMap<u16, u8>,
    port_info: HashMap<(Guid, u8), PortInfo>,
) -> FabricView {
    let topo = sw.discovered_topology();
    let mut infos: HashMap<(Guid, u8), PortInfo> = HashMap::new();
    for (_, n) in topo.nodes() {
        let first = if n.is_switch() { 0 } else { 1 };
        for p in first..u8::try_from(n.ports.len()).unwrap_or(u8::MAX) {
            if let Some((pi, _)) = sw.port_info_as_read(n.node_guid, p) {
                infos.insert((n.node_guid, p), pi);
            }
        }
    }
    infos.extend(port_info);
    let mut node_info = HashMap::new();
    let mut switch_info = HashMap::new();
    for (_, n) in topo.nodes() {
        if let Some(ni) = sw.node_info_as_read(n.node_guid) {
            node_info.insert(n.node_guid, ni);
        }
        if let Some(si) = sw.switch_info_as_read(n.node_guid) {
            switch_info.insert(n.node_guid, si);
        }
    }
    let mut lids = HashMap::new();
    for (g, lo, hi) in sw.guid2lid().iter() {
        let span = u32::from(hi.0.saturating_sub(lo.0)) + 1;
        let lmc = (32 - span.leading_zeros()).saturating_sub(1) as u8;
        lids.insert(g, (lo, lmc));
    }
    let lfts = sw
        .lfts()
        .map(|l| {
            l.switches
                .iter()
                .map(|s| (s.guid, s.ports.clone()))
                .collect()
        })
        .unwrap_or_default();
    let cfg = sw.config();
    let (sl2vl, vlarb) = sm_core::tables_by_port(sw.vl_tables());
    let inp = ViewInput {
        subnet_prefix,
        sm: SmSelf {
            lid: sw.sm_lid(),
            port_guid: sm_port_guid,
            priority: cfg.sm_priority,
            state: sw.sm_state().to_wire(),
            act_count: sw.sweep_number() as u32,
        },
        lids,
        lfts,
        pkeys: sw.pkey_tables().into_iter().collect(),
        port_info: infos,
        switch_info,
        node_info,
        partition_sl,
        mfts: sw
            .mft_tables()
            .iter()
            .map(|(g, t)| (*g, t.clone()))
            .collect(),
        sl2vl,
        vlarb,
    };
    let mut view = FabricView::from_topology(&topo, &inp);
    let vports: Vec<sa::ViewVport> = sw
        .virt_ports()
        .flat_map(|p| {
            p.vports.values().map(|v| sa::ViewVport {
                pf_node: p.node_guid,
                pf_port: p.port,
                guid: v.guid,
                lid: v.lid_want,
                state: v.state,
                pkeys: v.pkeys.map(|k| k.to_vec()).unwrap_or_default(),
            })
        })
        .collect();
    view.add_vports(&vports);
    view
}

//! Control requests (JSON): faults, accounting and inspection, as the socket server
//! carries them. Pure: parses a request, applies it to a [`SimFabric`], returns JSON.
//!
//! Every request is an object with an `"op"` field; see `PROTOCOL.md` for the list.
//! Node names are NodeDescription text, a node GUID or a port GUID (`0x...`).

use crate::{Fault, SimFabric, VTime};
use fabric::{Guid, Lid, NodeId, PKey};
use mad::Smp;
use mad::perf::{Counter, ExtCounter};
use serde::Deserialize;
use serde_json::{Value, json};

/// A control request.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ControlRequest {
    /// Take a link down.
    LinkDown {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
    },
    /// Bring a link back.
    LinkUp {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
    },
    /// Remove a node.
    RemoveNode {
        /// Node name.
        node: String,
    },
    /// Return a removed node.
    ReturnNode {
        /// Node name.
        node: String,
    },
    /// Reboot a switch.
    RebootSwitch {
        /// Node name.
        node: String,
    },
    /// Set the loss probability.
    Loss {
        /// 0..=1.
        prob: f64,
    },
    /// Set the extra per-hop delay.
    Delay {
        /// Nanoseconds.
        ns: u64,
    },
    /// Set the duplication probability.
    Duplicate {
        /// 0..=1.
        prob: f64,
    },
    /// Emit an SMP from any port.
    Rogue {
        /// Port GUID (`0x...`) or node name (its first port).
        port: String,
        /// Destination LID, 65535 for directed route.
        dlid: u16,
        /// The 256-byte SMP as 512 hex digits.
        mad: String,
    },
    /// Change a CA port's CapabilityMask (trap 144).
    CapabilityMask {
        /// Port GUID or node name.
        port: String,
        /// New mask.
        mask: u32,
    },
    /// Add `n` to a port's performance counter ([`SimFabric::inject_port_errors`]).
    PortErrors {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
        /// Counter, by the name perfquery prints (`SymbolErrorCounter`, `PortRcvErrors`).
        counter: String,
        /// How much to add (default 1).
        #[serde(default = "one")]
        n: u64,
    },
    /// The receive error rate of a port, or of every port of the node
    /// ([`SimFabric::set_port_error_rate`]).
    ErrorRate {
        /// Node name.
        node: String,
        /// Port number (default: every port of the node).
        #[serde(default)]
        port: Option<u8>,
        /// 0..=1.
        prob: f64,
    },
    /// Apply `fault` (another request of the fault kinds) at virtual time `time`.
    At {
        /// Virtual time (ns).
        time: VTime,
        /// The fault request.
        fault: Box<ControlRequest>,
    },
    /// Global counters.
    Counters,
    /// Per-node, per-attribute/method and per-source counts.
    Accounting,
    /// The accepted-Set log (`take` empties it).
    SetLog {
        /// Empty the log after reading.
        #[serde(default)]
        take: bool,
    },
    /// Current virtual time.
    Time,
    /// Port state and PortInfo summary.
    PortState {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
    },
    /// Data-packet delivery check.
    Deliver {
        /// Source port GUID or node name.
        src: String,
        /// Destination LID.
        dlid: u16,
        /// P_Key.
        pkey: u16,
        /// Service level (default 0).
        #[serde(default)]
        sl: u8,
    },
    /// Many delivery checks at once: `pairs` of [src, dlid, pkey] or [src, dlid, pkey, sl].
    DeliverMany {
        /// (source port name, destination LID, P_Key[, SL]).
        pairs: Vec<DeliverPair>,
    },
    /// The VL a data packet rides on each link: [`SimFabric::vl_path`].
    VlPath {
        /// Source LID.
        slid: u16,
        /// Destination LID.
        dlid: u16,
        /// Service level (default 0).
        #[serde(default)]
        sl: u8,
    },
    /// Per-(node, port, VL) data-packet counts.
    VlCounters,
    /// A switch's LFT: entries for LIDs 0..=LinearFDBTop (0xFF = unprogrammed).
    Lft {
        /// Switch name.
        node: String,
    },
    /// A port's PortCounters and PortCountersExtended, as its PMA reports them.
    PortCounters {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
    },
    /// Make a CA port virtualization-capable: [`SimFabric::enable_virtualization`] with
    /// [`crate::VirtSpec::uniform`].
    EnableVirtualization {
        /// PF port name.
        port: String,
        /// Number of vports.
        vports: u16,
        /// Every vport needs its own LID.
        #[serde(default)]
        lid_required: bool,
        /// VPortCap (default: the number of vports).
        #[serde(default)]
        vport_cap: Option<u16>,
    },
    /// The vports of a PF port.
    Vports {
        /// PF port name.
        port: String,
    },
    /// The host enables or disables a vport.
    VportEnabled {
        /// Vport GUID (`0x...`).
        vport: String,
        /// Enabled.
        enabled: bool,
    },
    /// Data-packet check between functions: [`SimFabric::deliver_vport`].
    DeliverVport {
        /// Source vport GUID or port name.
        src: String,
        /// Destination vport GUID or port name.
        dst: String,
        /// P_Key.
        pkey: u16,
    },
    /// A port's P_KeyTable (non-zero entries with their index).
    Pkeys {
        /// Node name.
        node: String,
        /// Port number.
        port: u8,
    },
}

/// One `deliver_many` entry: `[src, dlid, pkey]` (SL 0) or `[src, dlid, pkey, sl]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum DeliverPair {
    /// Source, DLID, P_Key, SL.
    WithSl(String, u16, u16, u8),
    /// Source, DLID, P_Key (SL 0).
    Plain(String, u16, u16),
}

impl DeliverPair {
    /// (source, DLID, P_Key, SL).
    pub fn parts(&self) -> (&str, u16, u16, u8) {
        match self {
            DeliverPair::WithSl(s, d, k, sl) => (s, *d, *k, *sl),
            DeliverPair::Plain(s, d, k) => (s, *d, *k, 0),
        }
    }
}

fn one() -> u64 {
    1
}

/// A PortCounters counter by the name perfquery prints, any case.
pub fn counter_named(name: &str) -> Result<Counter, String> {
    Counter::ALL
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| {
            let names: Vec<&str> = Counter::ALL.iter().map(|c| c.name()).collect();
            format!("no counter named {name:?}; one of {}", names.join(", "))
        })
}

fn node_of(sim: &SimFabric, name: &str) -> Result<NodeId, String> {
    sim.find(name)
        .map(|(n, _)| n)
        .ok_or_else(|| format!("SIM-E009 no node or port named {name:?}"))
}

/// Resolves a function name: a vport GUID (`0x...`), else a port name ([`port_guid_of`]).
fn function_guid_of(sim: &SimFabric, name: &str) -> Result<Guid, String> {
    let t = name.trim();
    if let Some(h) = t.strip_prefix("0x")
        && let Ok(g) = u64::from_str_radix(h, 16)
        && sim.vport(Guid(g)).is_some()
    {
        return Ok(Guid(g));
    }
    port_guid_of(sim, t)
}

fn vport_json(v: &crate::VPortView) -> Value {
    json!({"guid": format!("{:#018x}", v.guid.0), "index": v.index, "enabled": v.enabled,
           "lid_required": v.lid_required, "state": v.state.to_wire(), "lid": v.lid.0,
           "effective_lid": v.effective_lid.0,
           "pkeys": v.pkeys.iter().map(|k| k.0).collect::<Vec<u16>>()})
}

/// Resolves a port name: a port GUID, or a node name meaning its port 1 (port 0 for a
/// switch), or `name[N]`.
pub fn port_guid_of(sim: &SimFabric, name: &str) -> Result<Guid, String> {
    let t = name.trim();
    let (base, port) = match (t.rfind('['), t.ends_with(']')) {
        (Some(i), true) => {
            let n: u8 = t[i + 1..t.len() - 1]
                .parse()
                .map_err(|_| format!("bad port number in {t:?}"))?;
            (&t[..i], Some(n))
        }
        _ => (t, None),
    };
    let (node, found_port) = sim
        .find(base)
        .ok_or_else(|| format!("SIM-E009 no node or port named {base:?}"))?;
    let p = match (port, found_port) {
        (Some(p), _) => p,
        (None, Some(p)) => p,
        (None, None) => {
            if sim.is_switch(node) {
                0
            } else {
                1
            }
        }
    };
    sim.port_guid(node, p).map_err(|e| e.to_string())
}

fn to_fault(sim: &SimFabric, req: &ControlRequest) -> Result<Option<Fault>, String> {
    Ok(Some(match req {
        ControlRequest::LinkDown { node, port } => Fault::LinkDown {
            node: node_of(sim, node)?,
            port: *port,
        },
        ControlRequest::LinkUp { node, port } => Fault::LinkUp {
            node: node_of(sim, node)?,
            port: *port,
        },
        ControlRequest::RemoveNode { node } => Fault::RemoveNode {
            node: node_of(sim, node)?,
        },
        ControlRequest::ReturnNode { node } => Fault::ReturnNode {
            node: node_of(sim, node)?,
        },
        ControlRequest::RebootSwitch { node } => Fault::RebootSwitch {
            node: node_of(sim, node)?,
        },
        ControlRequest::Loss { prob } => Fault::Loss { prob: *prob },
        ControlRequest::Delay { ns } => Fault::Delay { ns: *ns },
        ControlRequest::Duplicate { prob } => Fault::Duplicate { prob: *prob },
        ControlRequest::Rogue { port, dlid, mad } => {
            let bytes = hex_decode(mad)?;
            let arr: [u8; 256] = bytes
                .try_into()
                .map_err(|_| "mad must be 256 bytes (512 hex digits)".to_string())?;
            let smp = Smp::decode(&arr).map_err(|e| e.to_string())?;
            Fault::Rogue {
                port_guid: port_guid_of(sim, port)?,
                dlid: Lid(*dlid),
                smp: Box::new(smp),
            }
        }
        ControlRequest::CapabilityMask { port, mask } => Fault::CapabilityMask {
            port_guid: port_guid_of(sim, port)?,
            mask: *mask,
        },
        ControlRequest::PortErrors {
            node,
            port,
            counter,
            n,
        } => Fault::PortErrors {
            node: node_of(sim, node)?,
            port: *port,
            counter: counter_named(counter)?,
            n: *n,
        },
        ControlRequest::ErrorRate { node, port, prob } => Fault::ErrorRate {
            node: node_of(sim, node)?,
            port: *port,
            prob: *prob,
        },
        _ => return Ok(None),
    }))
}

fn check_sl(sl: u8) -> Result<u8, String> {
    if sl > 15 {
        return Err(crate::SimError::BadSl(sl).to_string());
    }
    Ok(sl)
}

/// Hex digits to bytes.
pub fn hex_decode(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad hex at {i}"))
        })
        .collect()
}

/// Bytes to lowercase hex.
pub fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parses and applies a JSON control request at virtual time `now`; returns the JSON
/// answer (`{"ok":true,...}` or `{"ok":false,"error":"..."}`).
pub fn handle(sim: &mut SimFabric, now: VTime, text: &str) -> Value {
    match serde_json::from_str::<ControlRequest>(text) {
        Ok(req) => match apply(sim, now, &req) {
            Ok(v) => v,
            Err(e) => json!({"ok": false, "error": e}),
        },
        Err(e) => json!({"ok": false, "error": format!("SIM-E020 bad control request: {e}")}),
    }
}

/// Applies a parsed request.
pub fn apply(sim: &mut SimFabric, now: VTime, req: &ControlRequest) -> Result<Value, String> {
    if let ControlRequest::At { time, fault } = req {
        let f = to_fault(sim, fault)?.ok_or("`at` needs a fault request")?;
        sim.schedule(*time, f).map_err(|e| e.to_string())?;
        return Ok(json!({"ok": true}));
    }
    if let Some(f) = to_fault(sim, req)? {
        sim.inject(now, f).map_err(|e| e.to_string())?;
        return Ok(json!({"ok": true, "time": sim.now()}));
    }
    Ok(match req {
        ControlRequest::Counters => {
            json!({"ok": true, "time": sim.now(), "counters": sim.accounting().counters})
        }
        ControlRequest::Accounting => {
            let a = sim.accounting();
            let per_attr: Vec<Value> = a
                .per_attr_method()
                .into_iter()
                .map(|((attr, m), c)| json!({"attr": attr, "method": m, "count": c}))
                .collect();
            let per_source: Vec<Value> = a
                .per_source()
                .into_iter()
                .map(|(g, c)| json!({"port_guid": format!("{:#018x}", g.0), "count": c}))
                .collect();
            let per_node: Vec<Value> = a
                .per_node
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| {
                    let g = sim.node_guid(NodeId(i as u32)).map(|g| g.0).unwrap_or(0);
                    json!({"node_guid": format!("{g:#018x}"), "count": c})
                })
                .collect();
            json!({"ok": true, "per_attr_method": per_attr, "per_source": per_source,
                   "per_node": per_node, "counters": a.counters})
        }
        ControlRequest::SetLog { take } => {
            let log = if *take {
                sim.take_set_log()
            } else {
                sim.accounting().set_log.clone()
            };
            json!({"ok": true, "sets": log})
        }
        ControlRequest::Time => json!({"ok": true, "time": sim.now()}),
        ControlRequest::PortState { node, port } => {
            let n = node_of(sim, node)?;
            let pi = sim.port_info(n, *port).map_err(|e| e.to_string())?;
            json!({"ok": true, "state": pi.port_state, "phys": pi.port_phys_state,
                   "lid": pi.lid.0, "master_sm_lid": pi.master_sm_lid.0,
                   "m_key_violations": pi.m_key_violations,
                   "p_key_violations": pi.p_key_violations})
        }
        ControlRequest::Deliver {
            src,
            dlid,
            pkey,
            sl,
        } => {
            let g = port_guid_of(sim, src)?;
            let sl = check_sl(*sl)?;
            let d = sim.deliver_sl(g, Lid(*dlid), PKey(*pkey), sl);
            json!({"ok": true, "delivery": d})
        }
        ControlRequest::DeliverMany { pairs } => {
            let mut out = Vec::with_capacity(pairs.len());
            for pair in pairs {
                let (src, dlid, pkey, sl) = pair.parts();
                let g = port_guid_of(sim, src)?;
                let sl = check_sl(sl)?;
                out.push(sim.deliver_sl(g, Lid(dlid), PKey(pkey), sl));
            }
            json!({"ok": true, "deliveries": out})
        }
        ControlRequest::VlPath { slid, dlid, sl } => {
            let hops: Vec<Value> = sim
                .vl_path(Lid(*slid), Lid(*dlid), *sl)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|h| {
                    json!({"node_guid": format!("{:#018x}", h.node_guid.0),
                           "port": h.port, "vl": h.vl})
                })
                .collect();
            json!({"ok": true, "hops": hops})
        }
        ControlRequest::VlCounters => {
            let per_vl: Vec<Value> = sim
                .accounting()
                .per_vl()
                .iter()
                .map(|(k, c)| {
                    let g = sim.node_guid(k.node).map(|g| g.0).unwrap_or(0);
                    json!({"node_guid": format!("{g:#018x}"), "port": k.port, "vl": k.vl,
                           "xmit": c.xmit, "delivered": c.delivered,
                           "dropped_vl15": c.dropped_vl15,
                           "dropped_not_operational": c.dropped_not_operational})
                })
                .collect();
            json!({"ok": true, "per_vl": per_vl})
        }
        ControlRequest::Lft { node } => {
            let n = node_of(sim, node)?;
            let lft = sim.lft(n).map_err(|e| e.to_string())?;
            json!({"ok": true, "lft": lft})
        }
        ControlRequest::PortCounters { node, port } => {
            let n = node_of(sim, node)?;
            let pc = sim.port_counters(n, *port).map_err(|e| e.to_string())?;
            let ext = sim
                .port_counters_extended(n, *port)
                .map_err(|e| e.to_string())?;
            let counters: serde_json::Map<String, Value> = Counter::ALL
                .into_iter()
                .map(|c| (c.name().to_string(), json!(pc.get(c))))
                .collect();
            let extended: serde_json::Map<String, Value> = ExtCounter::ALL
                .into_iter()
                .map(|c| (c.name().to_string(), json!(ext.get(c))))
                .collect();
            json!({"ok": true, "counters": counters, "extended": extended})
        }
        ControlRequest::Pkeys { node, port } => {
            let n = node_of(sim, node)?;
            let keys: Vec<(usize, u16)> = sim
                .pkey_table(n, *port)
                .map_err(|e| e.to_string())?
                .into_iter()
                .enumerate()
                .filter(|(_, k)| k.0 != 0)
                .map(|(i, k)| (i, k.0))
                .collect();
            json!({"ok": true, "pkeys": keys})
        }
        ControlRequest::EnableVirtualization {
            port,
            vports,
            lid_required,
            vport_cap,
        } => {
            let pf = port_guid_of(sim, port)?;
            let mut spec = crate::VirtSpec::uniform(pf, *vports, *lid_required);
            spec.vport_cap = vport_cap.unwrap_or(*vports);
            sim.enable_virtualization(pf, spec)
                .map_err(|e| e.to_string())?;
            let v: Vec<Value> = sim.vports_of(pf).iter().map(vport_json).collect();
            json!({"ok": true, "vports": v})
        }
        ControlRequest::Vports { port } => {
            let pf = port_guid_of(sim, port)?;
            let v: Vec<Value> = sim.vports_of(pf).iter().map(vport_json).collect();
            json!({"ok": true, "vports": v})
        }
        ControlRequest::VportEnabled { vport, enabled } => {
            let g = function_guid_of(sim, vport)?;
            sim.set_vport_enabled(g, *enabled)
                .map_err(|e| e.to_string())?;
            json!({"ok": true})
        }
        ControlRequest::DeliverVport { src, dst, pkey } => {
            let (s, d) = (function_guid_of(sim, src)?, function_guid_of(sim, dst)?);
            json!({"ok": true, "delivery": sim.deliver_vport(s, d, PKey(*pkey))})
        }
        _ => return Err("unsupported request".into()),
    })
}

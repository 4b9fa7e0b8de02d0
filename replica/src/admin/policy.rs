//! Partition reads of the admin API: validate, diff, plan and audit a policy text against
//! the master's discovered topology and the P_Key tables recorded as programmed (the audit:
//! read back from the fabric by the master, handed in as a [`Readback`]). Pure; a text that
//! does not parse, or does not compile with the tenants in force, is an [`AdminError`].

use super::AdminError;
use crate::ReplicatedState;
use fabric::{Guid, PKey, PortNum, Topology};
use partitions::{Caps, Options, PortReading, Severity};
use proto::admin::*;
use std::collections::BTreeMap;

/// Partition options as the master uses them (SELF = the master's SM port).
pub fn options(st: &ReplicatedState) -> Options {
    Options {
        sm_port_guid: st
            .master()
            .map(|m| Guid(m.sm_port_guid))
            .filter(|g| g.0 != 0),
        ..Options::default()
    }
}

/// Code of the warning [`validate`] adds when it has no fabric to check against.
pub const NO_TOPOLOGY: &str = "E_NODE_NO_TOPOLOGY";

/// Lints `text` (syntax errors with line:col, semantic lints, the limits, and with the
/// master's topology and its nodes' P_Key table capacities the topology lints: a port whose
/// PartitionCap cannot hold its keys is PART-E008). `ok` is false exactly when
/// `partitions::check` calls the text an error: ValidatePolicy (`smctl partitions check
/// --server`) and ApplyPolicy (which refuses a text that is not `ok`) both call this. Without
/// a fabric the topology lints are not run, and a warning says so.
pub fn validate(
    st: &ReplicatedState,
    fabric: Option<(&Topology, &Caps)>,
    text: &str,
) -> ValidatePolicyReply {
    validate_with(options(st), fabric, text)
}

/// [`validate`] with the options already read from the state ([`options`]): what a caller
/// runs off the thread that owns the state (planning a large fabric takes a while).
pub fn validate_with(
    opts: Options,
    fabric: Option<(&Topology, &Caps)>,
    text: &str,
) -> ValidatePolicyReply {
    let r = partitions::check(text, opts, fabric);
    let mut diagnostics: Vec<PolicyDiagnostic> = r
        .parse_errors
        .iter()
        .map(|e| PolicyDiagnostic {
            code: "SYNTAX".into(),
            severity: "error".into(),
            line: e.pos.line,
            col: e.pos.col,
            message: e.to_string(),
        })
        .collect();
    diagnostics.extend(r.lints.iter().map(|l| PolicyDiagnostic {
        code: l.code.code().into(),
        severity: match l.severity() {
            Severity::Error => "error".into(),
            _ => "warning".into(),
        },
        line: l.pos.map_or(0, |p| p.line),
        col: l.pos.map_or(0, |p| p.col),
        message: l.message.clone(),
    }));
    if fabric.is_none() {
        diagnostics.push(PolicyDiagnostic {
            code: NO_TOPOLOGY.into(),
            severity: "warning".into(),
            line: 0,
            col: 0,
            message: "the master has not discovered the fabric yet: the ports' PartitionCap and \
                      the members were not checked"
                .into(),
        });
    }
    ValidatePolicyReply {
        ok: !r.has_errors(),
        diagnostics,
        partitions: r.plan.as_ref().map_or(0, |p| p.partitions.len() as u32),
    }
}

/// [`AdminError::Limit`] for a policy text larger than [`partitions::MAX_POLICY_BYTES`]
/// (checked before anything parses it).
pub fn check_size(text: &str) -> Result<(), AdminError> {
    if text.len() > partitions::MAX_POLICY_BYTES {
        return Err(AdminError::Limit {
            what: "the policy text (bytes)",
            size: text.len(),
            limit: partitions::MAX_POLICY_BYTES,
            name: "MAX_POLICY_BYTES",
        });
    }
    Ok(())
}

/// The [`AdminError::PolicySyntax`] of a text that does not parse, `None` when it parses.
pub fn syntax_error(text: &str) -> Option<AdminError> {
    let errs = partitions::parse(text).err()?;
    let first = errs.first()?;
    Some(AdminError::PolicySyntax {
        line: first.pos.line,
        col: first.pos.col,
        first: first.to_string(),
        count: errs.len(),
    })
}

fn plan_of(
    st: &ReplicatedState,
    t: &Topology,
    text: Option<&str>,
) -> Result<partitions::Plan, AdminError> {
    if let Some(t) = text {
        check_size(t)?;
    }
    if let Some(e) = text.and_then(syntax_error) {
        return Err(e);
    }
    // The tenants in force are compiled into whatever operator text is planned (issue 12),
    // as the master does.
    let compiled;
    let text = if crate::tenants::is_empty(st.tenants()) {
        text
    } else {
        compiled = crate::tenants::compile_on(
            st.tenants(),
            text,
            st.topology(),
            &st.sm_ports(),
            partitions::tenants::Mode::Lenient,
        )
        .map_err(AdminError::TenantsConflict)?
        .text;
        Some(compiled.as_str())
    };
    let opts = options(st);
    let policy = match text {
        Some(t) => partitions::load(t, opts).map_err(AdminError::Policy)?,
        None => partitions::Policy::no_file(opts),
    };
    Ok(partitions::plan(&policy, t, &Caps::default()))
}

/// Planned tables: (node, port) -> (valid keys, description, kind, enforcement).
type Planned = BTreeMap<(Guid, u8), (Vec<PKey>, String, &'static str, bool, bool)>;

fn planned(t: &Topology, p: &partitions::Plan) -> Planned {
    let desc = |g: Guid| {
        t.node_by_guid(g)
            .map(|id| t.node(id).description.clone())
            .unwrap_or_default()
    };
    let mut m = Planned::new();
    for pp in &p.ports {
        let keys = pp.table.valid().into_iter().map(|(_, k)| k).collect();
        m.insert(
            (pp.port.node_guid, pp.port.port),
            (keys, desc(pp.port.node_guid), "end", false, false),
        );
    }
    for sp in &p.switch_ports {
        if let Some(tb) = &sp.table {
            let keys = tb.valid().into_iter().map(|(_, k)| k).collect();
            m.insert(
                (sp.switch_guid, sp.port),
                (
                    keys,
                    desc(sp.switch_guid),
                    "switch",
                    sp.enforce_in,
                    sp.enforce_out,
                ),
            );
        }
    }
    m
}

fn valid_keys(t: &[u16]) -> Vec<u32> {
    t.iter()
        .filter(|k| **k & 0x7fff != 0)
        .map(|k| u32::from(*k))
        .collect()
}

/// The per-port plan of `text` (None = the policy in force).
pub fn plan(
    st: &ReplicatedState,
    t: &Topology,
    text: Option<&str>,
) -> Result<PlanPolicyReply, AdminError> {
    let text = text.or_else(|| (st.policy().version > 0).then_some(st.policy().text.as_str()));
    let p = plan_of(st, t, text)?;
    let ports = planned(t, &p)
        .into_iter()
        .map(
            |((g, port), (keys, description, kind, ei, eo))| PortPlanEntry {
                node_guid: g.0,
                port: u32::from(port),
                description,
                kind: kind.into(),
                pkeys: keys.iter().map(|k| u32::from(k.0)).collect(),
                enforce_in: ei,
                enforce_out: eo,
            },
        )
        .collect();
    Ok(PlanPolicyReply {
        ports,
        plan_json: serde_json::to_string(&p).unwrap_or_default(),
    })
}

/// Which tables `text` would change against the tables recorded as programmed.
pub fn diff(st: &ReplicatedState, t: &Topology, text: &str) -> Result<DiffPolicyReply, AdminError> {
    let p = plan_of(st, t, Some(text))?;
    let mut changes = Vec::new();
    let mut unchanged = 0;
    for ((g, port), (keys, description, _, _, _)) in planned(t, &p) {
        let proposed: Vec<u32> = keys.iter().map(|k| u32::from(k.0)).collect();
        let current = st
            .pkey_table(g, PortNum(port))
            .map(valid_keys)
            .unwrap_or_default();
        let (mut a, mut b) = (current.clone(), proposed.clone());
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            unchanged += 1;
        } else {
            changes.push(TableChange {
                node_guid: g.0,
                port: u32::from(port),
                description,
                current,
                proposed,
            });
        }
    }
    Ok(DiffPolicyReply {
        base_version: st.policy().version,
        changes,
        unchanged,
    })
}

/// What the master read back from the fabric for an audit (the daemon converts sm-core's
/// read-back report into it).
#[derive(Clone, Debug, Default)]
pub struct Readback {
    /// Every table read, in (node GUID, port) order.
    pub readings: Vec<PortReading>,
    /// Ports (node GUID, port) that did not answer every Get after all retries.
    pub unanswered: Vec<(Guid, u8)>,
    /// SMPs the sweeper sent while the read-back ran.
    pub smps: u64,
    /// How long it took, in milliseconds.
    pub read_ms: u64,
    /// When it was read (Unix ms).
    pub read_unix_ms: u64,
    /// The master's replica id.
    pub replica: u64,
    /// SLtoVL (attr 1) / VLArb (attr 2) blocks read back: (node, attr, modifier as
    /// recorded, data; None when not answered).
    pub vl: Vec<(Guid, u32, u32, Option<Vec<u8>>)>,
}

/// The VL blocks read back compared with the replicated record: a block that differs is
/// `VL-E001`, one not answered `VL-W002`.
fn vl_findings(st: &ReplicatedState, rb: &Readback) -> Vec<String> {
    let name = |attr: u32, m: u32| match attr {
        crate::vl::VL_ATTR_SL2VL => format!("SL2VL in {} out {}", (m >> 8) & 0xFF, m & 0xFF),
        _ => format!("VLArb port {} block {}", m & 0xFF, m >> 16),
    };
    let mut out = Vec::new();
    for (g, attr, m, data) in &rb.vl {
        let what = format!("{:#018x} {}", g.0, name(*attr, *m));
        let recorded = st.vl_tables().get(&(*g, *attr, *m));
        match data {
            None => out.push(format!("VL-W002 warning {what}: not answered")),
            Some(d) if Some(d) != recorded => out.push(format!(
                "VL-E001 error {what}: holds {} recorded {}",
                hex(d),
                recorded.map_or_else(|| "nothing".into(), |r| hex(r))
            )),
            Some(_) => {}
        }
    }
    out
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Isolation audit over the P_Key tables the master read back from the fabric (`rb`),
/// against the policy in force.
pub fn audit(st: &ReplicatedState, t: &Topology, rb: &Readback) -> AuditReply {
    let text = (st.policy().version > 0).then_some(st.policy().text.as_str());
    let intent = plan_of(st, t, text).ok();
    let readings = &rb.readings;
    let names: BTreeMap<u16, String> = intent
        .as_ref()
        .map(|p| {
            p.partitions
                .iter()
                .map(|x| (x.pkey, x.name.clone()))
                .collect()
        })
        .unwrap_or_default();
    let r = partitions::audit(t, readings, intent.as_ref(), &names);
    AuditReply {
        source: "fabric".into(),
        read_unix_ms: rb.read_unix_ms,
        read_by_replica: rb.replica,
        unanswered: rb
            .unanswered
            .iter()
            .map(|(g, p)| format!("{:#018x} port {p}", g.0))
            .collect(),
        smps: rb.smps,
        read_ms: rb.read_ms,
        ports: readings.len() as u32,
        has_errors: r.has_errors(),
        findings: r
            .findings
            .iter()
            .map(|f| {
                let sev = if f.severity == Severity::Error {
                    "error"
                } else {
                    "warning"
                };
                format!("{} {sev} {}", f.code, f.message)
            })
            .collect(),
        report_json: serde_json::to_string(&r).unwrap_or_default(),
        vl_blocks: rb.vl.len() as u32,
        vl_findings: vl_findings(st, rb),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::state::{
        BeginIntent, Command, IntentContents, IntentDone, SealIntent, VlBlock, command::Kind,
    };

    #[test]
    fn vl_blocks_that_differ_or_do_not_answer_are_findings() {
        let mut st = ReplicatedState::new();
        let block = VlBlock {
            node_guid: 7,
            attr: crate::vl::VL_ATTR_SL2VL,
            modifier: 0x0102,
            data: vec![0x01, 0x23, 0, 0, 0, 0, 0, 0],
        };
        let cmds = [
            Kind::BeginIntent(BeginIntent {
                id: 1,
                term: 1,
                contents: Some(IntentContents {
                    vl_blocks: vec![block.clone()],
                    ..Default::default()
                }),
            }),
            Kind::SealIntent(SealIntent { id: 1, chunks: 1 }),
            Kind::IntentDone(IntentDone {
                id: 1,
                ..Default::default()
            }),
        ];
        for (i, k) in cmds.into_iter().enumerate() {
            let out = st.apply(
                i as u64 + 1,
                1,
                &Command {
                    request_id: 0,
                    kind: Some(k),
                },
            );
            assert!(out.is_accepted(), "{:?}", out.result);
        }
        let mut rb = Readback {
            readings: Vec::new(),
            unanswered: Vec::new(),
            smps: 0,
            read_ms: 0,
            read_unix_ms: 0,
            replica: 1,
            vl: vec![(Guid(7), 1, 0x0102, Some(block.data.clone()))],
        };
        assert!(vl_findings(&st, &rb).is_empty());
        rb.vl[0].3 = Some(vec![0; 8]);
        let f = vl_findings(&st, &rb);
        assert!(
            f[0].starts_with("VL-E001 error 0x0000000000000007 SL2VL in 1 out 2"),
            "{f:?}"
        );
        rb.vl[0].3 = None;
        assert!(vl_findings(&st, &rb)[0].starts_with("VL-W002"));
    }
}

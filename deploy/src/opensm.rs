//! OpenSM's `opensm.conf` (the file `opensm -c FILE` writes: `key value` lines, `#`
//! comments) and what each of its keys becomes in Quorum SM: mapped to an `sm-node` key,
//! already what Quorum SM does (no key needed), or not supported, with the reason. Every key
//! of OpenSM 3.3.23's default configuration has a verdict here (a test holds it to
//! `opensm -c`); a key this table does not know is reported as unknown, never dropped
//! silently. Pure: no IO.

use std::path::PathBuf;

/// One `key value` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The key.
    pub key: String,
    /// The rest of the line, trimmed (`(null)` for an unset string).
    pub value: String,
    /// 1-based line number.
    pub line: usize,
}

/// Parses opensm.conf; a line with a key and no value is an error `(line, why)`. When a key
/// repeats, every line is kept and the last one wins (as in OpenSM).
pub fn parse(text: &str) -> Result<Vec<Entry>, (usize, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once(char::is_whitespace) {
            Some((k, v)) if !v.trim().is_empty() => (k, v.trim()),
            _ => return Err((i + 1, format!("key {line:?} has no value"))),
        };
        out.push(Entry {
            key: key.to_string(),
            value: value.to_string(),
            line: i + 1,
        });
    }
    Ok(out)
}

/// What a key becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Written to the `sm-node` configuration under this key.
    Mapped {
        /// The `sm-node` key.
        to: &'static str,
        /// What the translation did, when more than a copy.
        note: String,
    },
    /// The value is what Quorum SM does without a key.
    Same(String),
    /// Not supported (or not at this value), with the reason.
    NotSupported(String),
}

impl Verdict {
    /// The table's last column.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Mapped { to, note } if note.is_empty() => format!("mapped to {to}"),
            Verdict::Mapped { to, note } => format!("mapped to {to} ({note})"),
            Verdict::Same(why) => format!("same in Quorum SM: {why}"),
            Verdict::NotSupported(why) if why.starts_with("not supported") => why.clone(),
            Verdict::NotSupported(why) => format!("not supported: {why}"),
        }
    }
}

/// A value for the `sm-node` configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum Setting {
    /// `priority`.
    Priority(u8),
    /// `sweep-interval` (seconds).
    SweepInterval(u64),
    /// `lmc`.
    Lmc(u8),
    /// `routing-engine`.
    RoutingEngine(String),
    /// `smp-timeout-ms`.
    SmpTimeoutMs(u64),
    /// `partitions`: OpenSM's file, copied by the import when it exists.
    Partitions(PathBuf),
    /// `root-guid-file`: OpenSM's file, copied by the import.
    RootGuidFile(PathBuf),
    /// OpenSM's `guid`: the port to bind (0: the first active port).
    PortGuid(u64),
    /// A key of the `[qos]` table (OpenSM's QoS option name; `qos` becomes `enabled`) and
    /// its value, checked.
    Qos(String, String),
    /// `[qos] qos_policy_file`: OpenSM's QoS policy, copied by the import when it exists.
    QosPolicy(PathBuf),
    /// A top-level key (`perfmgr`, `perfmgr-sweep-time-s`, `perfmgr-max-outstanding-queries`,
    /// `max-op-vls`) and its TOML value, checked.
    Key(&'static str, String),
}

/// The routing engines Quorum SM has.
pub const ENGINES: [&str; 5] = ["minhop", "updn", "ftree", "torus-2QoS", "dfsssp"];

/// Quorum SM's engine for an OpenSM engine name, with a note when it is not the same one:
/// OpenSM's `dor` is dimension order without datelines (credit loops on tori), `sssp` is
/// dfsssp without its VL layers (credit loops wherever shortest paths close one).
fn our_engine(name: &str) -> Option<(&'static str, Option<&'static str>)> {
    match name {
        "dor" => Some((
            "torus-2QoS",
            Some("dor -> torus-2QoS (the same dimension order, with datelines on tori)"),
        )),
        "sssp" => Some((
            "dfsssp",
            Some("sssp -> dfsssp (the same balanced shortest paths, on deadlock-free VL layers)"),
        )),
        _ => ENGINES
            .iter()
            .find(|e| e.eq_ignore_ascii_case(name))
            .map(|e| (*e, None)),
    }
}

/// A QoS key: OpenSM's "unset" values are the same in Quorum SM (its defaults are
/// OpenSM's); a set one goes to the `[qos]` table under its own name, checked as the
/// daemon will read it (a bad value: the import writes nothing).
fn qos_key(key: &str, value: &str) -> Result<(Verdict, Option<Setting>), String> {
    let mut o = qos::QosOptions::default();
    o.set(key, value).map_err(|e| e.to_string())?;
    let same = |why: &str| Ok((Verdict::Same(why.to_string()), None));
    let mapped = |to: &'static str, s: Setting| {
        Ok((
            Verdict::Mapped {
                to,
                note: String::new(),
            },
            Some(s),
        ))
    };
    match key {
        "qos" if o.enabled == Some(false) => same("QoS off (no [qos] table), as OpenSM's default"),
        "qos" => mapped(
            "[qos] enabled",
            Setting::Qos("enabled".into(), "true".into()),
        ),
        "qos_policy_file" if value == "(null)" => same("no QoS policy file"),
        "qos_policy_file" => mapped(
            "[qos] qos_policy_file",
            Setting::QosPolicy(PathBuf::from(value)),
        ),
        _ if o == qos::QosOptions::default() => same("unset: OpenSM's default table, the same"),
        _ => mapped("[qos]", Setting::Qos(key.into(), value.trim().into())),
    }
}

/// `chain` with `updn` at its end unless it already holds it: OpenSM accepts whatever its
/// engines compute, Quorum SM refuses a routing whose channel dependency graph has a cycle
/// and moves along the chain, so an imported chain ends with an engine that always succeeds
/// without one.
fn with_loop_free_tail(chain: &[&str]) -> String {
    let mut out: Vec<&str> = chain.to_vec();
    if !out.contains(&"updn") {
        out.push("updn");
    }
    out.join(",")
}

/// The verdict on one key and, for a mapped key, its value; `Err` when a mapped key's value
/// is malformed or out of range (the import then writes nothing).
pub fn classify(key: &str, value: &str) -> Result<(Verdict, Option<Setting>), String> {
    use Verdict::NotSupported as No;
    let no = |why: &str| Ok((No(why.to_string()), None));
    let mapped = |to: &'static str, note: &str, s: Setting| {
        Ok((
            Verdict::Mapped {
                to,
                note: note.to_string(),
            },
            Some(s),
        ))
    };
    // What Quorum SM does anyway when the value is `want`, else not supported.
    let fixed = |want: &str, what: &str| {
        if same_value(value, want) {
            Ok((Verdict::Same(what.to_string()), None))
        } else {
            Ok((No(format!("{what}; not configurable")), None))
        }
    };
    let null = value == "(null)";
    if is_qos(key) {
        return qos_key(key, value);
    }
    match key {
        "sm_priority" => {
            let p = num(value).filter(|p| *p <= 15).ok_or("must be 0..=15")?;
            mapped("priority", "", Setting::Priority(p as u8))
        }
        "sweep_interval" => {
            let s = num(value).ok_or("must be a number of seconds")?;
            mapped(
                "sweep-interval",
                "0 disables light sweeps, as in OpenSM",
                Setting::SweepInterval(s),
            )
        }
        "lmc" => {
            let l = num(value).filter(|l| *l <= 7).ok_or("must be 0..=7")?;
            mapped("lmc", "", Setting::Lmc(l as u8))
        }
        "routing_engine" if null => mapped(
            "routing-engine",
            "unset: OpenSM's default minhop, kept; updn follows it because Quorum SM refuses a \
             routing with credit loops (minhop has them on tori and random fabrics, and \
             through switch LIDs on fat trees) and updn never has",
            Setting::RoutingEngine(with_loop_free_tail(&["minhop"])),
        ),
        "routing_engine" => {
            let mut ours: Vec<&str> = Vec::new();
            let mut missing: Vec<&str> = Vec::new();
            let mut notes = Vec::new();
            for e in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                match our_engine(e) {
                    Some((mine, note)) => {
                        if !ours.contains(&mine) {
                            ours.push(mine);
                        }
                        notes.extend(note.map(str::to_string));
                    }
                    None => missing.push(e),
                }
            }
            if ours.is_empty() {
                return no(&format!(
                    "engine(s) {} not built (Quorum SM has {}); the default chain ftree,updn,minhop applies",
                    missing.join(","),
                    ENGINES.join(", ")
                ));
            }
            if !missing.is_empty() {
                notes.push(format!(
                    "{} not built, left out of the chain",
                    missing.join(",")
                ));
            }
            let chain = with_loop_free_tail(&ours);
            if chain != ours.join(",") {
                notes.push(
                    "updn appended: Quorum SM refuses a routing with credit loops and updn \
                     never has one"
                        .to_string(),
                );
            }
            mapped(
                "routing-engine",
                &notes.join("; "),
                Setting::RoutingEngine(chain),
            )
        }
        "transaction_timeout" => {
            let t = num(value).filter(|t| *t >= 1).ok_or("must be >= 1 ms")?;
            mapped("smp-timeout-ms", "", Setting::SmpTimeoutMs(t))
        }
        "partition_config_file" if null => {
            fixed("(null)", "no partitions file: Default=0x7fff : ALL=full")
        }
        "partition_config_file" => mapped(
            "partitions",
            "copied next to the configuration",
            Setting::Partitions(value.into()),
        ),
        "root_guid_file" if null => fixed("(null)", "root switches detected from the topology"),
        "root_guid_file" => mapped(
            "root-guid-file",
            "copied next to the configuration; roots of updn",
            Setting::RootGuidFile(value.into()),
        ),
        "guid" => {
            let g = num(value).ok_or("must be a port GUID")?;
            let note = if g == 0 {
                "0: the first active port; the fabric key names its umad device".to_string()
            } else {
                format!("port {value}: the fabric key must name that port's umad device")
            };
            mapped("fabric", &note, Setting::PortGuid(g))
        }
        "sm_key" => fixed("0x1", "SM_Key 1, OpenSM's default"),
        "sa_key" => fixed("0x1", "the SA trusts requests carrying SM_Key 1"),
        "subnet_prefix" => fixed(
            "0xfe80000000000000",
            "subnet prefix fe80::/64 on every port",
        ),
        "m_key" => fixed(
            "0",
            "M_Key 0 on a single replica; a Raft cluster writes a new M_Key each term",
        ),
        "m_key_lease_period" => fixed("0", "M_KeyLeasePeriod 0"),
        "m_key_protection_level" => fixed("0", "M_KeyProtectBits 0"),
        "m_key_lookup" => {
            no("no guid2mkey file; a Raft cluster keeps the M_Keys of earlier terms in its log")
        }
        "lmc_esp0" => fixed("FALSE", "switch port 0 always gets LMC 0"),
        "reassign_lids" => fixed(
            "FALSE",
            "LIDs are kept (guid2lid, or the Raft log of a cluster)",
        ),
        "honor_guid2lid_file" => {
            no("the guid2lid file is always honoured at start; the import copies OpenSM's")
        }
        "sm_assigned_guid" => no("Quorum SM assigns no alias GUIDs"),
        "sm_sl"
        | "packet_life_time"
        | "vl_stall_count"
        | "leaf_vl_stall_count"
        | "head_of_queue_lifetime"
        | "leaf_head_of_queue_lifetime"
        | "force_link_speed"
        | "force_link_speed_ext"
        | "force_link_width"
        | "fdr10"
        | "subnet_timeout"
        | "local_phy_errors_threshold"
        | "overrun_errors_threshold" => {
            no("Quorum SM does not write this PortInfo/SwitchInfo field: ports keep what they hold")
        }
        "max_op_vls" => {
            let v = num(value)
                .filter(|v| (1..=5).contains(v))
                .ok_or("must be 1..=5")?;
            if v == 5 {
                Ok((
                    Verdict::Same(
                        "OperationalVLs up to VL0-14 at bring-up (max-op-vls 5, the default)"
                            .into(),
                    ),
                    None,
                ))
            } else {
                mapped("max-op-vls", "", Setting::Key("max-op-vls", v.to_string()))
            }
        }
        "use_mfttop" => {
            no("MFT blocks are written as the multicast groups need them; MFTTop not used")
        }
        "no_partition_enforcement" => fixed("FALSE", "partitions are enforced"),
        "part_enforce" => fixed("both", "switches enforce P_Keys inbound and outbound"),
        "allow_both_pkeys" => fixed(
            "FALSE",
            "a port holds a partition's full or limited key, not both",
        ),
        "keep_pkey_indexes" => {
            no("P_Key indexes are planned as OpenSM does by default; not configurable")
        }
        "force_heavy_sweep" => fixed(
            "FALSE",
            "a light sweep leads to a heavy sweep only on a change",
        ),
        "sweep_on_trap" => fixed("TRUE", "a trap 128 leads to a heavy sweep"),
        "port_profile_switch_nodes"
        | "port_prof_ignore_file"
        | "hop_weights_file"
        | "port_search_ordering_file"
        | "avoid_throttled_links"
        | "connect_roots"
        | "guid_routing_order_file"
        | "guid_routing_order_no_scatter"
        | "port_shifting"
        | "scatter_ports" => no("routing tuning option not built"),
        "use_ucast_cache" => {
            no("re-routing is always incremental (valid entries kept); no cache switch")
        }
        "lid_matrix_dump_file" | "dump_files_dir" => {
            no("no dump files; smctl reads the tables through the admin API")
        }
        "lfts_file" => no("the `file` routing engine is not built"),
        "cn_guid_file" | "io_guid_file" | "quasi_ftree_indexing" | "max_reverse_hops" => {
            no("ftree takes no node lists; it finds the tree itself")
        }
        "ids_guid_file" => no("dfsssp routes the switches in GUID order; no id file"),
        "do_mesh_analysis" | "lash_start_vl" => no("lash not built"),
        "nue_max_num_vls" | "nue_include_switches" => no("nue not built"),
        "torus_config" => no("torus-2QoS finds the torus from the switch graph; no torus.conf"),
        "sa_db_file" | "sa_db_dump" => {
            no("the SA's state is replicated in the Raft log, not dumped to a file")
        }
        "ignore_other_sm" => fixed("FALSE", "a single replica obeys other SMs (IBA 14.4)"),
        "sminfo_polling_timeout" | "polling_retry_number" => no(
            "a followed master is polled once per sweep interval and taken over after 3 missed polls",
        ),
        "max_wire_smps" | "max_wire_smps2" => {
            no("SMPs in flight are set by smp-window (default 128 on umad, 4 per switch)")
        }
        "max_smps_timeout" | "long_transaction_timeout" | "max_msg_fifo_timeout" => {
            no("one SMP timeout (smp-timeout-ms) for every request")
        }
        "transaction_retries" => no("8 resends per request"),
        "single_thread" | "daemon" => {
            no("sm-node runs in the foreground under systemd (quorum-sm.service)")
        }
        "sm_inactive" => fixed("FALSE", "sm-node always runs the SM"),
        "babbling_port_policy" => no("babbling ports are not disabled"),
        "drop_event_subscriptions" => no("InformInfo subscriptions are replicated and kept"),
        "ipoib_mcgroup_creation_validation" | "mcgroup_join_validation" => {
            no("MCMember joins follow Quorum SM's rules (docs/sa.md); not configurable")
        }
        "use_original_extended_sa_rates_only" => no("not configurable"),
        "use_optimized_slvl" | "suppress_sl2vl_mad_status_errors" => no(
            "SL-to-VL tables are written per port block by block, only where they differ; not configurable",
        ),
        "fsync_high_avail_files" => fixed(
            "TRUE",
            "guid2lid is written atomically and the Raft log is fsynced",
        ),
        "event_db_dump_file" | "event_plugin_name" | "event_plugin_options" => {
            no("no event plugins; the admin API's watch and the metrics instead")
        }
        "node_name_map_name" => no("node names come from NodeDescription"),
        "log_flags"
        | "force_log_flush"
        | "log_file"
        | "log_max_size"
        | "accum_log_file"
        | "per_module_logging_file"
        | "log_prefix" => no(
            "logs go to stderr (the journal under systemd); RUST_LOG sets the level, --log-format text|json the format",
        ),
        "enable_quirks" => no("no vendor quirks"),
        "no_clients_rereg" => fixed("FALSE", "ClientReregister is set on ports new to this SM"),
        "disable_multicast" => fixed("FALSE", "multicast is always on"),
        "exit_on_fatal" => no("a lost transport stops the master; systemd restarts sm-node"),
        "console" | "console_port" => no("no console: smctl over the admin API"),
        "congestion_control" => no("congestion control not built"),
        k if k.starts_with("cc_") => no("congestion control not built"),
        "prefix_routes_file" => no("routers and prefix routes not built"),
        "consolidate_ipv6_snm_req" => no("not configurable"),
        "perfmgr" => {
            let on = match value.to_ascii_uppercase().as_str() {
                "TRUE" => true,
                "FALSE" => false,
                _ => return Err("must be TRUE or FALSE".into()),
            };
            mapped(
                "perfmgr",
                if on { "" } else { "Quorum SM's default is on" },
                Setting::Key("perfmgr", on.to_string()),
            )
        }
        "perfmgr_sweep_time_s" => {
            let t = num(value).filter(|t| *t >= 1).ok_or("must be >= 1 s")?;
            mapped(
                "perfmgr-sweep-time-s",
                "",
                Setting::Key("perfmgr-sweep-time-s", t.to_string()),
            )
        }
        "perfmgr_max_outstanding_queries" => {
            let n = num(value).filter(|n| *n >= 1).ok_or("must be >= 1")?;
            mapped(
                "perfmgr-max-outstanding-queries",
                "",
                Setting::Key("perfmgr-max-outstanding-queries", n.to_string()),
            )
        }
        "perfmgr_redir" => fixed(
            "TRUE",
            "PerfMgt redirection is not followed: every PMA answers at its port's LID (ClassPortInfo redirect fields are ignored)",
        ),
        "perfmgr_ignore_cas" => fixed("FALSE", "CA ports are read too"),
        "perfmgr_rm_nodes" => fixed(
            "TRUE",
            "ports no longer found are dropped at the next heavy sweep",
        ),
        "perfmgr_log_errors" => fixed(
            "TRUE",
            "a counter over its threshold is an alarm (log, WatchEvents, dashboard, metric)",
        ),
        "perfmgr_query_cpi" => fixed("TRUE", "ClassPortInfo is read once per node"),
        "perfmgr_xmit_wait_log" | "perfmgr_xmit_wait_threshold" => no(
            "PortXmitWait is thresholded like the error counters: PortXmitWait=65535 by default (OpenSM's default threshold), set in the perfmgr-error-thresholds file",
        ),
        k if k.starts_with("perfmgr_") => no("performance manager option not built"),
        _ => no("unknown key (not in OpenSM 3.3.23's default configuration); ignored"),
    }
}

/// The QoS keys (another change maps them).
fn is_qos(key: &str) -> bool {
    key == "qos"
        || key == "qos_policy_file"
        || [
            "qos_max_vls",
            "qos_high_limit",
            "qos_vlarb_high",
            "qos_vlarb_low",
            "qos_sl2vl",
        ]
        .contains(&key)
        || ["qos_ca_", "qos_sw0_", "qos_swe_", "qos_rtr_"]
            .iter()
            .any(|p| key.starts_with(p))
}

/// A decimal or `0x` number.
pub fn num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn same_value(a: &str, b: &str) -> bool {
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.eq_ignore_ascii_case(b),
    }
}

/// One row of the import's table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The OpenSM key.
    pub key: String,
    /// Its value.
    pub value: String,
    /// What it becomes.
    pub verdict: Verdict,
}

/// The table as text: `key  value  verdict`, aligned.
pub fn table(rows: &[Row]) -> String {
    let kw = rows.iter().map(|r| r.key.len()).max().unwrap_or(3).max(3);
    let vw = rows
        .iter()
        .map(|r| r.value.len().min(24))
        .max()
        .unwrap_or(5)
        .max(5);
    let mut s = format!(
        "{:kw$}  {:vw$}  mapped to / not supported: why\n",
        "key", "value"
    );
    for r in rows {
        s.push_str(&format!(
            "{:kw$}  {:vw$}  {}\n",
            r.key,
            r.value,
            r.verdict.describe()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_refuses_a_key_without_value() {
        let e = parse("# c\nsm_priority 3\n\nlog_prefix (null)\ncc_x 0:0 1\n").unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].key.as_str(), e[0].value.as_str(), e[0].line),
            ("sm_priority", "3", 2)
        );
        assert_eq!(e[2].value, "0:0 1");
        assert_eq!(parse("a 1\nlonely\n").unwrap_err().0, 2);
    }

    #[test]
    fn maps_and_refuses_values() {
        assert_eq!(
            classify("sm_priority", "15").unwrap().1,
            Some(Setting::Priority(15))
        );
        assert!(classify("sm_priority", "16").is_err());
        assert!(classify("lmc", "x").is_err());
        let (v, s) = classify("routing_engine", "ftree,lash,updn").unwrap();
        assert_eq!(s, Some(Setting::RoutingEngine("ftree,updn".into())));
        assert!(v.describe().contains("lash not built"), "{v:?}");
        let (v, s) = classify("routing_engine", "minhop").unwrap();
        assert_eq!(s, Some(Setting::RoutingEngine("minhop,updn".into())));
        assert!(v.describe().contains("updn appended"), "{v:?}");
        let (v, s) = classify("routing_engine", "dor").unwrap();
        assert_eq!(s, Some(Setting::RoutingEngine("torus-2QoS,updn".into())));
        assert!(v.describe().contains("with datelines"), "{v:?}");
        let (_, s) = classify("routing_engine", "sssp,dfsssp,minhop").unwrap();
        assert_eq!(s, Some(Setting::RoutingEngine("dfsssp,minhop,updn".into())));
        let (v, s) = classify("routing_engine", "nue,lash").unwrap();
        assert!(matches!(v, Verdict::NotSupported(_)) && s.is_none());
        assert!(matches!(
            classify("sm_key", "0x0000000000000001").unwrap().0,
            Verdict::Same(_)
        ));
        assert!(matches!(
            classify("sm_key", "0x2").unwrap().0,
            Verdict::NotSupported(_)
        ));
        assert!(matches!(
            classify("part_enforce", "BOTH").unwrap().0,
            Verdict::Same(_)
        ));
        let (v, s) = classify("max_op_vls", "5").unwrap();
        assert!(matches!(v, Verdict::Same(_)) && s.is_none(), "{v:?}");
        let (_, s) = classify("max_op_vls", "2").unwrap();
        assert_eq!(s, Some(Setting::Key("max-op-vls", "2".into())));
        assert!(classify("max_op_vls", "9").is_err());
        let (v, s) = classify("qos_swe_sl2vl", "(null)").unwrap();
        assert!(matches!(v, Verdict::Same(_)) && s.is_none(), "{v:?}");
        let (_, s) = classify("qos_swe_sl2vl", "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3").unwrap();
        assert_eq!(
            s,
            Some(Setting::Qos(
                "qos_swe_sl2vl".into(),
                "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3".into()
            ))
        );
        assert!(
            classify("qos_swe_sl2vl", "0,1").is_err(),
            "a bad table refused"
        );
        let (_, s) = classify("qos", "TRUE").unwrap();
        assert_eq!(s, Some(Setting::Qos("enabled".into(), "true".into())));
        assert!(classify("qos", "FALSE").unwrap().1.is_none());
        let (v, _) = classify("no_such_key", "1").unwrap();
        assert!(v.describe().contains("unknown key"), "{v:?}");
    }
}

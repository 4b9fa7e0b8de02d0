//! `sm-node import-opensm`: OpenSM's files in, the daemon's configuration out. Everything is
//! read and checked first (opensm.conf, partitions.conf with `partitions::parse`, guid2lid
//! with sm-core's parser, the root GUID file); only then are the files written, each
//! through a temporary file and a rename. A file to write that exists already stops the
//! import before anything is written, unless `force`.

use crate::DeployError;
use crate::opensm::{self, Row, Setting};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What to import and where to (`sm-node import-opensm`).
#[derive(Clone, Debug, clap::Args)]
pub struct ImportOptions {
    /// OpenSM's opensm.conf (`opensm -c FILE` writes OpenSM's defaults).
    #[arg(long, default_value = "/etc/opensm/opensm.conf")]
    pub conf: PathBuf,
    /// OpenSM partitions.conf (default: opensm.conf's partition_config_file, when it
    /// exists); checked, then copied to OUT_DIR/partitions.conf.
    #[arg(long)]
    pub partitions: Option<PathBuf>,
    /// OpenSM's guid2lid (OpenSM keeps it in /var/cache/opensm/guid2lid); checked, then
    /// copied to DATA_DIR/guid2lid, where sm-node reads it, so no LID changes.
    #[arg(long)]
    pub guid2lid: Option<PathBuf>,
    /// Root GUID file (default: opensm.conf's root_guid_file); copied to OUT_DIR/root-guids.
    #[arg(long)]
    pub root_guid_file: Option<PathBuf>,
    /// The fabric key to write (OpenSM's `guid` names a port, not a umad device).
    #[arg(long, default_value = "umad:/dev/infiniband/umad0")]
    pub fabric: String,
    /// The data-dir key to write.
    #[arg(long, default_value = "/var/lib/quorum-sm")]
    pub data_dir: PathBuf,
    /// Where sm-node.toml, partitions.conf and root-guids are written.
    #[arg(long, default_value = "/etc/quorum-sm")]
    pub out_dir: PathBuf,
    /// Replace files that exist (without it an existing file stops the import before
    /// anything is written).
    #[arg(long)]
    pub force: bool,
    /// Check everything and print the table; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// What the import did.
#[derive(Clone, Debug)]
pub struct ImportReport {
    /// Every key of opensm.conf, in file order, with its verdict.
    pub rows: Vec<Row>,
    /// The configuration text (written to `out_dir/sm-node.toml` unless a dry run).
    pub config: String,
    /// Files written (or that would be, on a dry run), with their source.
    pub files: Vec<(PathBuf, String)>,
}

impl ImportReport {
    /// The key table followed by the files.
    pub fn render(&self) -> String {
        let mut s = opensm::table(&self.rows);
        for (path, what) in &self.files {
            let _ = writeln!(s, "write {}  ({what})", path.display());
        }
        s
    }
}

fn read(path: &Path) -> Result<String, DeployError> {
    std::fs::read_to_string(path).map_err(|e| DeployError::Io {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Runs the import (see the module documentation).
pub fn run(o: &ImportOptions) -> Result<ImportReport, DeployError> {
    let text = read(&o.conf)?;
    let conf_err = |line, why| DeployError::Conf {
        path: o.conf.clone(),
        line,
        why,
    };
    let entries = opensm::parse(&text).map_err(|(l, why)| conf_err(l, why))?;
    let mut rows = Vec::new();
    let mut keys: Vec<(String, String)> = Vec::new(); // (line, comment), last one wins
    let (mut partitions, mut roots) = (o.partitions.clone(), o.root_guid_file.clone());
    // The [qos] table: (key, value), last one wins; OpenSM's QoS policy file.
    let mut qos_keys: Vec<(String, String, String)> = Vec::new();
    let mut qos_policy: Option<PathBuf> = None;
    let mut set = |k: &str, line: String, comment: String| {
        keys.retain(|(l, _)| !l.starts_with(&format!("{k} =")));
        keys.push((line, comment));
    };
    for e in &entries {
        let (mut verdict, setting) = opensm::classify(&e.key, &e.value)
            .map_err(|why| conf_err(e.line, format!("{} {}: {why}", e.key, e.value)))?;
        let from = format!("opensm.conf: {} {}", e.key, e.value);
        match setting {
            Some(Setting::Priority(p)) => set("priority", format!("priority = {p}"), from),
            Some(Setting::SweepInterval(s)) => {
                set("sweep-interval", format!("sweep-interval = {s}"), from)
            }
            Some(Setting::Lmc(l)) => set("lmc", format!("lmc = {l}"), from),
            Some(Setting::RoutingEngine(r)) => set(
                "routing-engine",
                format!("routing-engine = {}", quote(&r)),
                from,
            ),
            Some(Setting::SmpTimeoutMs(t)) => {
                set("smp-timeout-ms", format!("smp-timeout-ms = {t}"), from)
            }
            Some(Setting::Key(k, v)) => set(k, format!("{k} = {v}"), from),
            Some(Setting::Partitions(p)) if partitions.is_none() => {
                if p.exists() {
                    partitions = Some(p);
                } else {
                    verdict = opensm::Verdict::Same(format!(
                        "{} does not exist: Default=0x7fff : ALL=full, as OpenSM",
                        p.display()
                    ));
                }
            }
            Some(Setting::RootGuidFile(p)) if roots.is_none() => roots = Some(p),
            Some(Setting::Qos(k, v)) => {
                qos_keys.retain(|(key, _, _)| *key != k);
                qos_keys.push((k, v, from));
            }
            Some(Setting::QosPolicy(p)) => {
                if p.exists() {
                    qos_policy = Some(p);
                } else {
                    verdict = opensm::Verdict::Same(format!(
                        "{} does not exist: no QoS policy, as OpenSM",
                        p.display()
                    ));
                }
            }
            // The port GUID is reported only (the fabric key names a device); a file given
            // as a flag wins over the opensm.conf key.
            _ => {}
        }
        rows.push(Row {
            key: e.key.clone(),
            value: e.value.clone(),
            verdict,
        });
    }
    // Every input checked before anything is written.
    let mut files: Vec<(PathBuf, String, String)> = Vec::new(); // (to, what, content)
    if let Some(p) = &partitions {
        let t = read(p)?;
        if let Err(errs) = partitions::parse(&t) {
            let why = errs.iter().map(|e| format!("{}:{e}", p.display()));
            return Err(DeployError::Input {
                path: p.clone(),
                why: why.collect::<Vec<_>>().join("; "),
            });
        }
        let to = o.out_dir.join("partitions.conf");
        set(
            "partitions",
            format!("partitions = {}", quote(&to.to_string_lossy())),
            format!("copy of {}", p.display()),
        );
        files.push((to, format!("copy of {}", p.display()), t));
    }
    if let Some(p) = &roots {
        let t = read(p)?;
        crate::roots::parse(&t).map_err(|e| DeployError::Input {
            path: p.clone(),
            why: e.to_string(),
        })?;
        let to = o.out_dir.join("root-guids");
        set(
            "root-guid-file",
            format!("root-guid-file = {}", quote(&to.to_string_lossy())),
            format!("copy of {}", p.display()),
        );
        files.push((to, format!("copy of {}", p.display()), t));
    }
    if let Some(p) = &o.guid2lid {
        let t = read(p)?;
        let map = sm_core::Guid2Lid::parse(&t).map_err(|e| DeployError::Input {
            path: p.clone(),
            why: e.to_string(),
        })?;
        let what = format!("{} ports from {}", map.len(), p.display());
        files.push((o.data_dir.join("guid2lid"), what, map.export()));
    }
    // The QoS options as the daemon will read them, checked together.
    let mut qos_lines: Vec<(String, String)> = Vec::new();
    if !qos_keys.is_empty() || qos_policy.is_some() {
        let pairs = qos_keys.iter().map(|(k, v, _)| {
            let k = if k == "enabled" { "qos" } else { k.as_str() };
            (k, v.as_str())
        });
        qos::QosOptions::from_pairs(pairs)
            .and_then(|q| q.build())
            .map_err(|e| DeployError::Input {
                path: o.conf.clone(),
                why: format!("QoS options: {e}"),
            })?;
        if !qos_keys.iter().any(|(k, _, _)| k == "enabled") {
            qos_lines.push((
                "enabled = false".into(),
                "opensm.conf: qos FALSE (OpenSM's default): the options below wait for it".into(),
            ));
        }
        for (k, v, from) in &qos_keys {
            let line = if k == "enabled" {
                format!("enabled = {v}")
            } else {
                format!("{k} = {}", quote(v))
            };
            qos_lines.push((line, from.clone()));
        }
    }
    if let Some(p) = &qos_policy {
        let t = read(p)?;
        if let Err(errs) = qos::Policy::parse(&t) {
            let why = errs.iter().map(|e| {
                let at = e.pos().unwrap_or_default();
                format!("{}:{}:{}: {e}", p.display(), at.line, at.col)
            });
            return Err(DeployError::Input {
                path: p.clone(),
                why: why.collect::<Vec<_>>().join("; "),
            });
        }
        let to = o.out_dir.join("qos-policy.conf");
        qos_lines.push((
            format!("qos_policy_file = {}", quote(&to.to_string_lossy())),
            format!("copy of {}", p.display()),
        ));
        files.push((to, format!("copy of {}", p.display()), t));
    }
    let mut config = format!(
        "# sm-node configuration imported from {} by `sm-node import-opensm`.\n\
         # Every key: /etc/quorum-sm/sm-node.toml as shipped, or `sm-node --help`.\n\n\
         fabric = {}\ndata-dir = {}\n",
        o.conf.display(),
        quote(&o.fabric),
        quote(&o.data_dir.to_string_lossy())
    );
    for (line, comment) in &keys {
        let _ = writeln!(config, "{line:<40} # {comment}");
    }
    if !qos_lines.is_empty() {
        config.push_str("\n[qos]\n");
        for (line, comment) in &qos_lines {
            let _ = writeln!(config, "{line:<40} # {comment}");
        }
    }
    config.push_str("\n# The OpenSM keys and what each became:\n");
    for l in opensm::table(&rows).lines() {
        let _ = writeln!(config, "#   {l}");
    }
    let conf_to = o.out_dir.join("sm-node.toml");
    files.insert(0, (conf_to, "the configuration".into(), config.clone()));
    if !o.force
        && let Some((p, _, _)) = files.iter().find(|(p, _, _)| p.exists())
    {
        return Err(DeployError::Exists(p.clone()));
    }
    if !o.dry_run {
        for (to, _, content) in &files {
            write_atomic(to, content)?;
        }
    }
    Ok(ImportReport {
        rows,
        config,
        files: files.into_iter().map(|(p, w, _)| (p, w)).collect(),
    })
}

fn write_atomic(to: &Path, content: &str) -> Result<(), DeployError> {
    let io = |e: std::io::Error| DeployError::Io {
        path: to.to_path_buf(),
        why: e.to_string(),
    };
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut tmp = to.as_os_str().to_owned();
    tmp.push(".import-tmp");
    std::fs::write(&tmp, content).map_err(io)?;
    std::fs::rename(&tmp, to).map_err(io)
}

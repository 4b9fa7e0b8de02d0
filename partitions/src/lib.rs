//! `partitions` — OpenSM-compatible partitions.conf handling for Quorum SM: a strict parser
//! (typed syntax tree, line:col errors), the semantics step that turns a file into a
//! [`Policy`], a planner that lays out every P_KeyTable, switch enforcement and IPoIB
//! multicast group for a topology, lints with stable codes, and an isolation audit over
//! P_KeyTables read back from the fabric.
//! [`tenants`] compiles tenants (own partition, hub-and-spoke storage, RDMA limits) with the
//! operator's file into one policy, with conflict codes TENANT-Ennn and a tenant-level audit.
//!
//! This crate is pure: it must never do IO, read a clock, spawn a thread or use unseeded
//! randomness, and parsing or auditing arbitrary input never panics.
//!
//! # Semantics (OpenSM 3.3, osm_prtn.c / osm_prtn_config.c / osm_pkey_mgr.c)
//!
//! * Default partition 0x7fff always exists. No file: `Default=0x7fff,ipoib : ALL=full ;`
//!   (with its IPoIB broadcast group). A file: Default starts as `ALL=limited, SELF=full`,
//!   then the file's rules apply on top.
//! * Rules apply in file order and a later rule replaces an earlier one for the same port and
//!   partition (full replaces limited and vice versa; `both` adds both keys and needs
//!   allow_both_pkeys, without it `both` is full). Membership omitted -> the statement's
//!   `defmember` (default limited). A PKey repeated merges into the first definition and its
//!   name; a header without PKey reuses a partition of the same name or gets a generated key
//!   (1, 2, ... skipping keys already defined at that point).
//! * Only the low 15 bits of a PKey are used. GUIDs absent from the fabric are ignored;
//!   partitions left without any member port are deleted with their multicast groups.
//! * `ipoib` creates the broadcast group ff12:401b:<pkey|0x8000>::ffff:ffff (MGID scope nibble
//!   replaced by each `scope=`), rate 3, mtu 4, sl 0, Q_Key 0x0b1b unless given; without
//!   `qos` OpenSM forces SL 0. `mgid=` groups inherit the partition's parameters except
//!   TClass; IP groups (signature 0x401b/0x601b) must match the partition's PKey, rate and mtu.
//! * Tables (fresh fabric, as OpenSM lays them out): index 0 holds the `indx0` key, else the
//!   default key; the rest follow from index 1 in OpenSM's partition order — its map is keyed
//!   by the PKey in network byte order, so on x86 partitions come in order of the
//!   byte-swapped key — limited before full; keys beyond PartitionCap are dropped.
//! * `mgid=` groups: when no `scope=` is given the MGID's scope nibble is overwritten with 2
//!   (`mgid=ff15::1` becomes ff12::1, as OpenSM does). IP groups are created only when the
//!   partition's IPoIB broadcast group of the same scope exists (OpenSM's SA refuses them
//!   otherwise, `ipoib_mcgroup_creation_validation`); PART-E017 reports it.
//! * Switch ports facing end ports get the end port's keys packed from index 0 (a limited key
//!   dropped when the full one is there) and the part_enforce bits; past
//!   PartitionEnforcementCap OpenSM clears enforcement silently. Switch-to-switch ports are
//!   never written and get enforcement cleared. Under part_enforce off no switch table is
//!   written.
//!
//! # Where we depart from OpenSM, and why
//!
//! * Any syntax error rejects the whole file. OpenSM logs it, discards everything and falls
//!   back to `ALL=full` — every tenant in one partition with RDMA open between them.
//! * An empty (or comment-only) file means what the documentation says of a file without a
//!   Default rule (ALL=limited, SELF=full). OpenSM 3.3 counts an empty file as a parse failure
//!   and falls back to ALL=full (PART-W015 warns).
//! * The SM port stays a full member of Default even when a file rule would demote it (the
//!   documentation says it is always full; OpenSM 3.3 lets `Default: ALL=limited` demote it,
//!   which cuts the SM off from SA queries of limited ports). PART-W013 warns.
//! * `scope=` on an `ipoib` partition: the documentation says the broadcast group is created
//!   with the flags given, one group per scope; OpenSM 3.3 ignores `scope=` for the broadcast
//!   group (always ff12:...) and applies it only to `mgid=` lines. We follow the
//!   documentation: the operator asked for that scope, and silently ignoring it is the kind of
//!   trap this crate exists to avoid. IPoIB clients must then use that scope.
//! * The man page's example `ShareIO = 0x80 : defmember=limited : ...` is a syntax error to
//!   OpenSM's parser as much as to ours (flags belong in the header).
//! * Words OpenSM accepts silently are errors here: an empty membership (`guid=`, which
//!   OpenSM reads as full), unknown flags, out-of-range flag values, PKey 0 or above 0xffff
//!   (OpenSM truncates to 16 bits or auto-generates), a definition without `;` at the end of
//!   the file. Unrecognised membership words and `both` without allow_both_pkeys are lint
//!   errors (PART-E004, PART-E012) and mean what OpenSM makes of them (limited, full).
//! * Switch enforcement overflow: OpenSM's exact check has an off-by-one quirk (it compares
//!   against the CA's PartitionCap); we clear enforcement exactly when the keys exceed
//!   PartitionEnforcementCap.
//! * Tables are planned for a fresh fabric. OpenSM with keep_pkey_indexes (its default) keeps
//!   keys at the indices they already occupy across sweeps, so after policy changes its
//!   layout depends on history; ours does not.

pub mod ast;
pub mod audit;
pub mod check;
pub mod dump;
mod hexser;
pub mod lints;
pub mod parser;
pub mod plan;
pub mod policy;
pub mod tenants;

pub use ast::{PartitionFile, Pos};
pub use audit::{AuditReport, audit};
pub use check::{CheckReport, check};
pub use dump::{PortReading, parse_dump, write_dump};
pub use lints::{Lint, LintCode, Severity};
pub use parser::{OPENSM_MAX_LINE, ParseError, ParseErrorKind, parse};
pub use plan::{Caps, PKeyBlock, PKeyTable, Plan, plan};
pub use policy::{Options, PartEnforce, Policy};

/// Largest partitions.conf text [`check`] accepts (1 MiB): OpenSM's own files are a few KiB;
/// 1 MiB holds more than [`MAX_PARTITIONS`] one-line partitions with room for comments. A
/// larger text is PART-E021 and is not parsed. [`parse`] and [`load`] do not enforce it (a
/// replica replaying a log entry must load what was committed).
pub const MAX_POLICY_BYTES: usize = 1 << 20;

/// Most partitions [`check`] accepts in one policy (4,096; the default partition counts). No
/// port holds more keys than its PartitionCap (128 on common HCAs, at most 32,768 by IBA),
/// and the planner's work grows with partitions x ports. More is PART-E022 and is not planned.
pub const MAX_PARTITIONS: usize = 4096;

/// Errors of this crate's fallible entry points.
#[derive(Debug, thiserror::Error)]
pub enum PartitionsError {
    /// The partitions file has syntax errors.
    #[error("{} syntax error(s); first: {}", .0.len(), .0.first().map(|e| e.to_string()).unwrap_or_default())]
    Parse(Vec<ParseError>),
    /// A read-back dump is malformed.
    #[error(transparent)]
    Dump(#[from] dump::DumpError),
}

/// Parses and builds a policy in one step (semantic lints are discarded; use [`check`] to see them).
pub fn load(src: &str, options: Options) -> Result<Policy, PartitionsError> {
    let file = parse(src).map_err(PartitionsError::Parse)?;
    Ok(Policy::from_file(&file, options).0)
}

//! qos-ulps lines: `default : level`, `any, <qualifier> <list> : level`, `sdp`, `rds`,
//! `iser` (optionally `, port-num <list>`), `srp, target-port-guid <list>`, `ipoib`
//! (optionally `, pkey <list>`). The level after `:` is an SL (OpenSM's short form) or,
//! our extension, the name of a qos-level.

use super::ast::NumRange;
use super::lexer::{Line, unquote};
use super::parser::{LevelRef, RawGroupRef, RawRule, new_ulp_rule, pkey_ranges, ranges};
use crate::error::{Pos, QosError};
use crate::num::parse_u64;

/// OpenSM's SDP Service ID base (0x000000000001PPPP).
pub const SDP_SERVICE_ID: u64 = 0x0000_0000_0001_0000;
/// OpenSM's RDS and iSER Service ID base (0x000000000106PPPP).
pub const RDS_ISER_SERVICE_ID: u64 = 0x0000_0000_0106_0000;
/// RDS's default TCP port.
pub const RDS_PORT: u64 = 0x48CA;
/// iSER's default TCP port.
pub const ISER_PORT: u64 = 0x0CBC;
/// IPoIB's default partition.
pub const IPOIB_DEFAULT_PKEY: u64 = 0x7FFF;

pub(crate) enum UlpLine {
    Default(LevelRef),
    Rule(Box<RawRule>),
}

fn syntax(pos: Pos, msg: impl Into<String>) -> QosError {
    QosError::Syntax {
        pos,
        msg: msg.into(),
    }
}

pub(crate) fn parse_ulp(line: &Line<'_>) -> Result<UlpLine, QosError> {
    let pos = line.pos();
    let (head, tail) = line.text.split_once(':').ok_or_else(|| {
        syntax(
            pos,
            format!(
                "`{}`: expected `ulp[, qualifier values] : level` or `end-qos-ulps`",
                line.text
            ),
        )
    })?;
    let tpos = line.pos_at(line.offset_of(tail) + (tail.len() - tail.trim_start().len()));
    let level_text = tail.trim();
    let level = if level_text.is_empty() {
        return Err(QosError::BadValue {
            pos: tpos,
            key: "qos-ulps".to_string(),
            msg: "no level after `:` (an SL 0-15 or a qos-level name)".to_string(),
        });
    } else if level_text.starts_with(|c: char| c.is_ascii_digit()) {
        let sl = parse_u64(level_text)
            .ok()
            .filter(|v| *v <= 15)
            .ok_or_else(|| QosError::BadValue {
                pos: tpos,
                key: "qos-ulps".to_string(),
                msg: format!("`{level_text}`: an SL is 0-15"),
            })?;
        LevelRef::Sl(sl as u8, tpos)
    } else {
        LevelRef::Name(unquote(level_text).to_string(), tpos)
    };
    let (name, qual) = match head.split_once(',') {
        Some((n, q)) => (n.trim(), Some(q)),
        None => (head.trim(), None),
    };
    let ulp = name.to_ascii_lowercase();
    let qualifier = match qual {
        None => None,
        Some(q) => {
            let q_t = q.trim();
            let qoff = line.offset_of(q) + (q.len() - q.trim_start().len());
            let (word, list) = match q_t.split_once(char::is_whitespace) {
                Some((w, l)) => (w, l.trim()),
                None => (q_t, ""),
            };
            if list.is_empty() {
                return Err(syntax(
                    line.pos_at(qoff),
                    format!(
                        "`{ulp}, {q_t}`: expected a qualifier and its values, e.g. `{ulp}, pkey 0x8001`"
                    ),
                ));
            }
            Some((word, list, line.pos_at(qoff)))
        }
    };
    let mut r = new_ulp_rule(pos);
    let bad_qual = |word: &str, qpos: Pos, allowed: &str| {
        syntax(
            qpos,
            format!("`{ulp}` takes no qualifier `{word}` (allowed: {allowed})"),
        )
    };
    let port_nums = |list: &str, base: u64| -> Result<Vec<NumRange>, QosError> {
        Ok(ranges(line, "port-num", list, 0xFFFF)?
            .into_iter()
            .map(|x| NumRange {
                lo: x.lo + base,
                hi: x.hi + base,
            })
            .collect())
    };
    match (ulp.as_str(), qualifier) {
        ("default", None) => return Ok(UlpLine::Default(level)),
        ("default", Some((w, _, qp))) => return Err(bad_qual(w, qp, "none")),
        ("any", Some((w, list, qp))) => match w {
            "service-id" => r.service_ids = ranges(line, w, list, u64::MAX)?,
            "pkey" => r.pkeys = pkey_ranges(line, w, list)?,
            "target-port-guid" => {
                r.destination = vec![RawGroupRef::Guids(ranges(line, w, list, u64::MAX)?)]
            }
            "source-port-guid" => {
                r.source = vec![RawGroupRef::Guids(ranges(line, w, list, u64::MAX)?)]
            }
            "source-target-port-guid" => {
                r.either = vec![RawGroupRef::Guids(ranges(line, w, list, u64::MAX)?)]
            }
            _ => {
                return Err(bad_qual(
                    w,
                    qp,
                    "service-id, pkey, target-port-guid, source-port-guid, source-target-port-guid",
                ));
            }
        },
        ("any", None) => {
            return Err(syntax(
                pos,
                "`any` needs a qualifier: service-id, pkey, target-port-guid, source-port-guid or source-target-port-guid",
            ));
        }
        ("sdp", None) => {
            r.service_ids = vec![NumRange {
                lo: SDP_SERVICE_ID,
                hi: SDP_SERVICE_ID + 0xFFFF,
            }]
        }
        ("rds", None) => {
            r.service_ids = vec![NumRange {
                lo: RDS_ISER_SERVICE_ID + RDS_PORT,
                hi: RDS_ISER_SERVICE_ID + RDS_PORT,
            }]
        }
        ("iser", None) => {
            r.service_ids = vec![NumRange {
                lo: RDS_ISER_SERVICE_ID + ISER_PORT,
                hi: RDS_ISER_SERVICE_ID + ISER_PORT,
            }]
        }
        ("sdp" | "rds" | "iser", Some((w, list, qp))) => {
            if w != "port-num" {
                return Err(bad_qual(w, qp, "port-num"));
            }
            let base = if ulp == "sdp" {
                SDP_SERVICE_ID
            } else {
                RDS_ISER_SERVICE_ID
            };
            r.service_ids = port_nums(list, base)?;
        }
        ("srp", Some((w, list, qp))) => {
            if w != "target-port-guid" {
                return Err(bad_qual(w, qp, "target-port-guid"));
            }
            r.destination = vec![RawGroupRef::Guids(ranges(line, w, list, u64::MAX)?)];
        }
        ("srp", None) => {
            return Err(syntax(
                pos,
                "`srp` needs `, target-port-guid <guids>` (SRP service IDs vary by vendor)",
            ));
        }
        ("ipoib", None) => {
            r.pkeys = vec![NumRange {
                lo: IPOIB_DEFAULT_PKEY,
                hi: IPOIB_DEFAULT_PKEY,
            }]
        }
        ("ipoib", Some((w, list, qp))) => {
            if w != "pkey" {
                return Err(bad_qual(w, qp, "pkey"));
            }
            r.pkeys = pkey_ranges(line, w, list)?;
        }
        _ => {
            return Err(syntax(
                pos,
                format!(
                    "unknown ULP `{name}` (expected default, any, sdp, rds, iser, srp or ipoib)"
                ),
            ));
        }
    }
    r.level = Some(level);
    Ok(UlpLine::Rule(Box::new(r)))
}

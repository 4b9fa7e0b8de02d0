//! OpenSM's QoS options (opensm.conf keys) and the tables they give, parsed strictly.
//!
//! Keys: `qos`, `qos_policy_file`, and for the defaults (`qos_`) and each kind of port
//! (`qos_ca_`, `qos_sw0_`, `qos_swe_`, `qos_rtr_`) `max_vls`, `high_limit`, `vlarb_high`,
//! `vlarb_low`, `sl2vl`. A kind's value overrides the `qos_` default, which overrides
//! OpenSM's built-in one (osm_qos.c qos_build_config).

use crate::error::QosError;
use crate::num::parse_u64;
use crate::tables::{PortKind, QosTables, TableConfig, VLARB_TABLE_LEN, VlArb};

/// The five table options of one set (`qos_` defaults or one kind), unset = None.
/// Strings are kept as given (already checked when set through [`QosOptions::set`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindOptions {
    /// `*_max_vls`, 1-15.
    pub max_vls: Option<u8>,
    /// `*_high_limit`, 0-255.
    pub high_limit: Option<u8>,
    /// `*_vlarb_high`: up to 64 `VL:weight` entries.
    pub vlarb_high: Option<String>,
    /// `*_vlarb_low`: up to 64 `VL:weight` entries.
    pub vlarb_low: Option<String>,
    /// `*_sl2vl`: exactly 16 VLs.
    pub sl2vl: Option<String>,
}

/// OpenSM's QoS options as optional values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QosOptions {
    /// `qos` (TRUE/FALSE): whether OpenSM programs QoS at all. Kept for the caller.
    pub enabled: Option<bool>,
    /// `qos_policy_file`: kept for the caller (this crate reads no file).
    pub policy_file: Option<String>,
    /// `qos_*` defaults.
    pub default: KindOptions,
    /// `qos_ca_*`.
    pub ca: KindOptions,
    /// `qos_sw0_*`.
    pub sw0: KindOptions,
    /// `qos_swe_*`.
    pub swe: KindOptions,
    /// `qos_rtr_*`.
    pub rtr: KindOptions,
}

const FIELDS: [&str; 5] = ["max_vls", "high_limit", "vlarb_high", "vlarb_low", "sl2vl"];

impl QosOptions {
    /// Options from `(key, value)` pairs (an opensm.conf import or a config file); the
    /// first bad pair is the error. A later pair for the same key replaces the earlier one.
    pub fn from_pairs<'a, I>(pairs: I) -> Result<QosOptions, QosError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut o = QosOptions::default();
        for (k, v) in pairs {
            o.set(k, v)?;
        }
        Ok(o)
    }

    /// Sets one option after checking its value. Unknown key: QOS-E001; bad value: QOS-E002.
    /// OpenSM's "unset" values (`max_vls 0`, `high_limit -1`, `(null)`, as `opensm -c`
    /// writes them) clear the option.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), QosError> {
        let value = value.trim();
        match key {
            "qos" => {
                self.enabled = Some(parse_bool(key, value)?);
                return Ok(());
            }
            "qos_policy_file" => {
                self.policy_file = Some(value.to_string());
                return Ok(());
            }
            _ => {}
        }
        let (set, field) = self.split_key(key)?;
        // OpenSM's own spelling of "unset", as `opensm -c` writes it: max_vls 0,
        // high_limit -1, a string `(null)`.
        let unset = match field {
            "max_vls" => value == "0",
            "high_limit" => value == "-1",
            _ => value == "(null)",
        };
        if unset {
            match field {
                "max_vls" => set.max_vls = None,
                "high_limit" => set.high_limit = None,
                "vlarb_high" => set.vlarb_high = None,
                "vlarb_low" => set.vlarb_low = None,
                _ => set.sl2vl = None,
            }
            return Ok(());
        }
        match field {
            "max_vls" => {
                let v = single(key, value, 1, 15)?;
                set.max_vls = Some(v);
            }
            "high_limit" => {
                let v = single(key, value, 0, 255)?;
                set.high_limit = Some(v);
            }
            "vlarb_high" | "vlarb_low" => {
                parse_vlarb(key, value)?;
                let s = Some(value.to_string());
                if field == "vlarb_high" {
                    set.vlarb_high = s;
                } else {
                    set.vlarb_low = s;
                }
            }
            _ => {
                parse_sl2vl(key, value)?;
                set.sl2vl = Some(value.to_string());
            }
        }
        Ok(())
    }

    fn split_key(&mut self, key: &str) -> Result<(&mut KindOptions, &'static str), QosError> {
        let unknown = || QosError::UnknownOption {
            key: key.to_string(),
        };
        let rest = key.strip_prefix("qos_").ok_or_else(unknown)?;
        let field = FIELDS
            .iter()
            .find(|f| rest.ends_with(*f))
            .copied()
            .ok_or_else(unknown)?;
        let kind = &rest[..rest.len() - field.len()];
        let set = match kind {
            "" => &mut self.default,
            "ca_" => &mut self.ca,
            "sw0_" => &mut self.sw0,
            "swe_" => &mut self.swe,
            "rtr_" => &mut self.rtr,
            _ => return Err(unknown()),
        };
        Ok((set, field))
    }

    /// Every option that is set, as `(key, value)` pairs in a fixed order; feeding them
    /// to [`QosOptions::from_pairs`] gives these options back.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(e) = self.enabled {
            out.push((
                "qos".to_string(),
                if e { "TRUE" } else { "FALSE" }.to_string(),
            ));
        }
        if let Some(f) = &self.policy_file {
            out.push(("qos_policy_file".to_string(), f.clone()));
        }
        let sets: [(&str, &KindOptions); 5] = [
            ("qos_", &self.default),
            ("qos_ca_", &self.ca),
            ("qos_sw0_", &self.sw0),
            ("qos_swe_", &self.swe),
            ("qos_rtr_", &self.rtr),
        ];
        for (prefix, s) in sets {
            let vals = [
                s.max_vls.map(|v| v.to_string()),
                s.high_limit.map(|v| v.to_string()),
                s.vlarb_high.clone(),
                s.vlarb_low.clone(),
                s.sl2vl.clone(),
            ];
            for (field, v) in FIELDS.iter().zip(vals) {
                if let Some(v) = v {
                    out.push((format!("{prefix}{field}"), v));
                }
            }
        }
        out
    }

    /// The options of one kind of port.
    pub fn kind(&self, kind: PortKind) -> &KindOptions {
        match kind {
            PortKind::Ca => &self.ca,
            PortKind::SwitchPort0 => &self.sw0,
            PortKind::SwitchExternal => &self.swe,
            PortKind::Router => &self.rtr,
        }
    }

    /// The tables of every kind of port: the kind's value, else the `qos_` default, else
    /// OpenSM's built-in default. Values set directly in the fields (not through
    /// [`QosOptions::set`]) are checked here with the same errors.
    pub fn build(&self) -> Result<QosTables, QosError> {
        Ok(QosTables {
            ca: self.build_kind(PortKind::Ca)?,
            sw0: self.build_kind(PortKind::SwitchPort0)?,
            swe: self.build_kind(PortKind::SwitchExternal)?,
            rtr: self.build_kind(PortKind::Router)?,
        })
    }

    fn build_kind(&self, kind: PortKind) -> Result<TableConfig, QosError> {
        let k = self.kind(kind);
        let d = &self.default;
        let p = kind.option_prefix();
        let base = TableConfig::opensm_default();
        let key = |field: &str, from_kind: bool| {
            if from_kind {
                format!("{p}{field}")
            } else {
                format!("qos_{field}")
            }
        };
        let max_vls = match (k.max_vls, d.max_vls) {
            (Some(v), _) => check_range(&key("max_vls", true), v, 1, 15)?,
            (None, Some(v)) => check_range(&key("max_vls", false), v, 1, 15)?,
            (None, None) => base.max_vls,
        };
        let vl_high_limit = k.high_limit.or(d.high_limit).unwrap_or(base.vl_high_limit);
        let pick = |a: &Option<String>, b: &Option<String>, field: &str| match (a, b) {
            (Some(s), _) => Some((key(field, true), s.clone())),
            (None, Some(s)) => Some((key(field, false), s.clone())),
            (None, None) => None,
        };
        let vlarb_high = match pick(&k.vlarb_high, &d.vlarb_high, "vlarb_high") {
            Some((key, s)) => parse_vlarb(&key, &s)?,
            None => base.vlarb_high,
        };
        let vlarb_low = match pick(&k.vlarb_low, &d.vlarb_low, "vlarb_low") {
            Some((key, s)) => parse_vlarb(&key, &s)?,
            None => base.vlarb_low,
        };
        let sl2vl = match pick(&k.sl2vl, &d.sl2vl, "sl2vl") {
            Some((key, s)) => parse_sl2vl(&key, &s)?,
            None => base.sl2vl,
        };
        Ok(TableConfig {
            max_vls,
            vl_high_limit,
            vlarb_high,
            vlarb_low,
            sl2vl,
        })
    }
}

fn bad(key: &str, index: usize, entry: &str, reason: impl Into<String>) -> QosError {
    QosError::BadOptionValue {
        key: key.to_string(),
        index,
        entry: entry.to_string(),
        reason: reason.into(),
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool, QosError> {
    match value.to_ascii_uppercase().as_str() {
        "TRUE" => Ok(true),
        "FALSE" => Ok(false),
        _ => Err(bad(key, 1, value, "expected TRUE or FALSE")),
    }
}

fn check_range(key: &str, v: u8, lo: u8, hi: u8) -> Result<u8, QosError> {
    if v < lo || v > hi {
        return Err(bad(
            key,
            1,
            &v.to_string(),
            format!("out of range {lo}-{hi}"),
        ));
    }
    Ok(v)
}

fn single(key: &str, value: &str, lo: u8, hi: u8) -> Result<u8, QosError> {
    let n = parse_u64(value).map_err(|r| bad(key, 1, value, r))?;
    if n < u64::from(lo) || n > u64::from(hi) {
        return Err(bad(key, 1, value, format!("out of range {lo}-{hi}")));
    }
    Ok(n as u8)
}

/// Parses a VL arbitration option: comma-separated `VL:weight` (VL 0-14, weight 0-255), at
/// most 64 entries; the entries not given are `0:0`. Empty text gives an all-zero table.
pub fn parse_vlarb(key: &str, value: &str) -> Result<[VlArb; VLARB_TABLE_LEN], QosError> {
    let mut out = [VlArb::default(); VLARB_TABLE_LEN];
    let value = value.trim();
    if value.is_empty() {
        return Ok(out);
    }
    for (i, entry) in value.split(',').enumerate() {
        let index = i + 1;
        if i >= VLARB_TABLE_LEN {
            return Err(bad(
                key,
                index,
                entry.trim(),
                "more than 64 entries (two blocks of 32)",
            ));
        }
        let (vl, weight) = entry
            .split_once(':')
            .ok_or_else(|| bad(key, index, entry.trim(), "expected VL:weight"))?;
        let vl = parse_u64(vl).map_err(|r| bad(key, index, entry.trim(), r))?;
        let weight = parse_u64(weight).map_err(|r| bad(key, index, entry.trim(), r))?;
        if vl == 15 {
            return Err(bad(
                key,
                index,
                entry.trim(),
                "VL 15 is the management VL and has no arbitration entry (data VLs are 0-14)",
            ));
        }
        if vl > 15 {
            return Err(bad(key, index, entry.trim(), "VL out of range 0-14"));
        }
        if weight > 255 {
            return Err(bad(key, index, entry.trim(), "weight out of range 0-255"));
        }
        out[i] = VlArb {
            vl: vl as u8,
            weight: weight as u8,
        };
    }
    Ok(out)
}

/// Parses an SL2VL option: exactly 16 comma-separated VLs (0-15; 15 drops the SL).
pub fn parse_sl2vl(key: &str, value: &str) -> Result<[u8; 16], QosError> {
    let mut out = [0u8; 16];
    let entries: Vec<&str> = value.split(',').collect();
    for (i, entry) in entries.iter().enumerate() {
        let index = i + 1;
        if i >= 16 {
            return Err(bad(
                key,
                index,
                entry.trim(),
                "more than 16 VLs (one per SL 0-15)",
            ));
        }
        let vl = parse_u64(entry).map_err(|r| bad(key, index, entry.trim(), r))?;
        if vl > 15 {
            return Err(bad(key, index, entry.trim(), "VL out of range 0-15"));
        }
        out[i] = vl as u8;
    }
    if entries.len() < 16 {
        let last = entries.last().map_or("", |e| e.trim());
        return Err(bad(
            key,
            entries.len(),
            last,
            format!(
                "{} VLs given, exactly 16 needed (one per SL 0-15)",
                entries.len()
            ),
        ));
    }
    Ok(out)
}

/// The option text of a VL arbitration table: every entry up to the last one that is not
/// `0:0`, as `VL:weight` joined by commas ([`parse_vlarb`] reads it back to the same table).
pub fn format_vlarb(table: &[VlArb; VLARB_TABLE_LEN]) -> String {
    let len = table
        .iter()
        .rposition(|e| *e != VlArb::default())
        .map_or(0, |i| i + 1);
    table[..len]
        .iter()
        .map(|e| format!("{}:{}", e.vl, e.weight))
        .collect::<Vec<_>>()
        .join(",")
}

/// The option text of an SL2VL table: 16 VLs joined by commas.
pub fn format_sl2vl(sl2vl: &[u8; 16]) -> String {
    sl2vl
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

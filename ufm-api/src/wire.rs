//! UFM's JSON shapes, as ib-kubernetes' UFM plugin sends and reads them, and their
//! translation to and from the admin API's messages.
//!
//! Requests: add GUIDs `{"pkey": "0x000A", "index0": true, "ip_over_ib": true, "membership":
//! "full", "guids": ["0011223344556677"]}` (`partition_name` optional); remove GUIDs
//! `{"pkey": "0x000A", "guids": [...]}`. P_Keys are hex strings (`0x` optional); GUIDs are
//! 16 hex digits (`0x` and `:` separators accepted). Answer of the listing: a map from
//! P_Key (`0xa`, UFM's form) to `{"partition", "ip_over_ib", "index0", "guids": [{"guid":
//! "0011223344556677", "membership": "full", "index0": false}]}`; the plugin reads only
//! `guids[].guid`.

use crate::UfmError;
use proto::admin::ChangeGuidsRequest;
use proto::admin::change_guids_request::{Op, Target};
use proto::state::{Tenants, tenant_member};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Body of an add (`POST /resources/pkeys`, `/resources/pkeys/add`).
#[derive(Deserialize)]
pub struct AddBody {
    /// P_Key, hex string.
    pub pkey: String,
    /// GUIDs (absent when only creating).
    #[serde(default)]
    pub guids: Vec<String>,
    /// "full" (default) or "limited".
    pub membership: Option<String>,
    /// Index-0 flag (default false).
    #[serde(default)]
    pub index0: bool,
    /// IPoIB flag (UFM's default true).
    pub ip_over_ib: Option<bool>,
    /// Name of a partition created by this call.
    #[serde(default)]
    pub partition_name: String,
}

/// Body of a removal (`POST /actions/remove_guids_from_pkey`).
#[derive(Deserialize)]
pub struct RemoveBody {
    /// P_Key, hex string.
    pub pkey: String,
    /// GUIDs to remove.
    pub guids: Vec<String>,
}

/// Parses a P_Key: hex, `0x` optional, 16 bits (the admin API checks the range).
pub fn parse_pkey(s: &str) -> Result<u32, UfmError> {
    let h = s.trim();
    let h = h
        .strip_prefix("0x")
        .or_else(|| h.strip_prefix("0X"))
        .unwrap_or(h);
    if h.is_empty() || h.len() > 4 {
        return Err(UfmError::BadPKey(s.to_string()));
    }
    u32::from_str_radix(h, 16).map_err(|_| UfmError::BadPKey(s.to_string()))
}

/// Parses a GUID: up to 16 hex digits, `0x` and `:` separators allowed.
pub fn parse_guid(s: &str) -> Result<u64, UfmError> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let h: String = t.chars().filter(|c| *c != ':').collect();
    if h.is_empty() || h.len() > 16 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(UfmError::BadGuid(s.to_string()));
    }
    u64::from_str_radix(&h, 16).map_err(|_| UfmError::BadGuid(s.to_string()))
}

fn guids(v: &[String]) -> Result<Vec<u64>, UfmError> {
    v.iter().map(|g| parse_guid(g)).collect()
}

fn change(op: Op, pkey: u32, guids: Vec<u64>) -> ChangeGuidsRequest {
    ChangeGuidsRequest {
        op: op as i32,
        target: Some(Target::Pkey(pkey)),
        guids,
        ..ChangeGuidsRequest::default()
    }
}

/// The ChangeGuids of an add.
pub fn add_request(b: &AddBody) -> Result<ChangeGuidsRequest, UfmError> {
    let mut r = change(Op::Add, parse_pkey(&b.pkey)?, guids(&b.guids)?);
    r.limited = match b.membership.as_deref() {
        None | Some("full") => false,
        Some("limited") => true,
        Some(m) => return Err(UfmError::BadMembership(m.to_string())),
    };
    r.index0 = b.index0;
    r.ipoib = b.ip_over_ib.unwrap_or(true);
    r.name = b.partition_name.clone();
    Ok(r)
}

/// The ChangeGuids of a removal.
pub fn remove_request(b: &RemoveBody) -> Result<ChangeGuidsRequest, UfmError> {
    Ok(change(Op::Remove, parse_pkey(&b.pkey)?, guids(&b.guids)?))
}

/// The ChangeGuids of `DELETE /resources/pkeys/<pkey>`.
pub fn delete_request(pkey: &str) -> Result<ChangeGuidsRequest, UfmError> {
    Ok(change(Op::DeletePkey, parse_pkey(pkey)?, Vec::new()))
}

fn entry(name: &str, ipoib: bool, index0: bool, members: Vec<(u64, bool)>, with: bool) -> Value {
    let mut o = Map::new();
    o.insert("partition".into(), json!(name));
    o.insert("ip_over_ib".into(), json!(ipoib));
    o.insert("index0".into(), json!(index0));
    if with {
        let g: Vec<Value> = members
            .into_iter()
            .map(|(g, full)| {
                json!({
                    "guid": format!("{g:016x}"),
                    "membership": if full { "full" } else { "limited" },
                    "index0": index0,
                })
            })
            .collect();
        o.insert("guids".into(), Value::Array(g));
    }
    Value::Object(o)
}

/// The listing of every P_Key the admin API knows by GUID: the API partitions and the
/// tenants (their port-GUID members, full), keyed as UFM keys them (`0x` and lower-case hex,
/// no leading zeros). `only` restricts it to one P_Key.
pub fn listing(t: &Tenants, guids_data: bool, only: Option<u32>) -> Map<String, Value> {
    let mut out = Map::new();
    let wanted = |p: u32| only.is_none_or(|o| o == p);
    for p in t.pkeys.iter().filter(|p| wanted(p.pkey)) {
        let name = if p.name.is_empty() {
            format!("pkey_{:04x}", p.pkey)
        } else {
            p.name.clone()
        };
        let m = p.members.iter().map(|m| (m.guid, !m.limited)).collect();
        out.insert(
            format!("{:#x}", p.pkey),
            entry(&name, p.ipoib, p.index0, m, guids_data),
        );
    }
    for x in t.tenants.iter().filter(|x| wanted(x.pkey)) {
        let m = x
            .members
            .iter()
            .filter_map(|m| match m.kind {
                Some(tenant_member::Kind::PortGuid(g)) => Some((g, true)),
                _ => None,
            })
            .collect();
        out.insert(
            format!("{:#x}", x.pkey),
            entry(&x.name, x.ipoib, false, m, guids_data),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_guids_parse_as_the_plugin_writes_them() {
        assert_eq!(parse_pkey("0x000A").unwrap(), 0xa);
        assert_eq!(parse_pkey("7ffe").unwrap(), 0x7ffe);
        assert!(parse_pkey("0x12345").is_err());
        assert!(parse_pkey("zz").is_err());
        assert_eq!(parse_guid("1122334455667788").unwrap(), 0x1122334455667788);
        assert_eq!(
            parse_guid("11:22:33:44:55:66:77:88").unwrap(),
            0x1122334455667788
        );
        assert_eq!(
            parse_guid("0x02000ff000ff0009").unwrap(),
            0x02000ff000ff0009
        );
        for bad in ["", "11223344556677889", "xyz", "+1"] {
            assert!(parse_guid(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_add_without_options_is_full_with_ipoib() {
        let b: AddBody = serde_json::from_str(r#"{"pkey":"0x10","guids":["01"]}"#).unwrap();
        let r = add_request(&b).unwrap();
        assert_eq!((r.limited, r.ipoib, r.index0), (false, true, false));
        let b: AddBody =
            serde_json::from_str(r#"{"pkey":"0x10","guids":[],"membership":"both"}"#).unwrap();
        assert!(matches!(add_request(&b), Err(UfmError::BadMembership(_))));
    }
}

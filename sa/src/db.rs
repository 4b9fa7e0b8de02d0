//! The SA database: multicast groups and members, ServiceRecords, InformInfo
//! subscriptions — the part of the SA that clients change, kept in the replicated state
//! ([`proto::state::SaState`]) and rebuilt from it by [`SaDb::from_proto`].

use crate::SaError;
use fabric::{Guid, Lid};
use mad::sa::{Gid, InformInfo, SaRecord, ServiceRecord};
use proto::state as ps;
use std::collections::BTreeMap;

/// One member of a group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Member {
    /// JoinState bits.
    pub join_state: u8,
    /// ProxyJoin.
    pub proxy_join: bool,
}

/// A multicast group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// MGID.
    pub mgid: Gid,
    /// MLID.
    pub mlid: Lid,
    /// P_Key (with the membership bit as created).
    pub pkey: u16,
    /// Q_Key.
    pub qkey: u32,
    /// MTU code.
    pub mtu: u8,
    /// Rate code.
    pub rate: u8,
    /// SL.
    pub sl: u8,
    /// FlowLabel.
    pub flow_label: u32,
    /// TClass.
    pub tclass: u8,
    /// Scope nibble.
    pub scope: u8,
    /// HopLimit.
    pub hop_limit: u8,
    /// PacketLifeTime.
    pub pkt_life: u8,
    /// Created by the partition policy (stays without members).
    pub from_policy: bool,
    /// Members by port GID.
    pub members: BTreeMap<Gid, Member>,
}

/// A registered service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    /// The record as registered.
    pub record: ServiceRecord,
    /// End of the lease in SA milliseconds (None: infinite).
    pub expires_ms: Option<u64>,
}

/// An InformInfo subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    /// Subscriber port GID.
    pub subscriber_gid: Gid,
    /// Subscriber LID (where Reports go).
    pub subscriber_lid: Lid,
    /// Enum within the subscriber's subscriptions.
    pub enum_id: u16,
    /// What was subscribed to.
    pub inform: InformInfo,
}

/// The SA database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaDb {
    /// Groups by MGID.
    pub groups: BTreeMap<Gid, Group>,
    /// Services, in registration order.
    pub services: Vec<Service>,
    /// Subscriptions, in registration order.
    pub informs: Vec<Subscription>,
    /// Alias GUIDs by end port GUID and GUIDInfo index (see `guidinfo`).
    pub aliases: BTreeMap<Guid, BTreeMap<u16, Guid>>,
    /// GUIDs the SA assigned, by (port GUID, index), kept for good.
    pub assigned: BTreeMap<(Guid, u16), Guid>,
    /// Counter of SA-assigned GUIDs.
    pub assigned_counter: u32,
}

fn gid_from(b: &[u8], what: &str) -> Result<Gid, SaError> {
    let a: [u8; 16] = b
        .try_into()
        .map_err(|_| SaError::BadState(format!("{what}: {} bytes, not 16", b.len())))?;
    Ok(Gid(a))
}

fn alias_list(it: impl Iterator<Item = ((Guid, u16), Guid)>) -> Vec<ps::AliasGuid> {
    it.map(|((p, i), a)| ps::AliasGuid {
        port_guid: p.0,
        index: u32::from(i),
        alias: a.0,
    })
    .collect()
}

fn small<T: TryFrom<u32>>(v: u32, what: &str) -> Result<T, SaError> {
    T::try_from(v).map_err(|_| SaError::BadState(format!("{what} {v} out of range")))
}

impl SaDb {
    /// The first MLID not in use, from 0xC000.
    pub fn free_mlid(&self) -> Option<Lid> {
        let used: std::collections::BTreeSet<u16> =
            self.groups.values().map(|g| g.mlid.0).collect();
        (Lid::MULTICAST_MIN.0..=Lid::MULTICAST_MAX.0)
            .find(|l| !used.contains(l))
            .map(Lid)
    }

    /// The end port whose alias `g` is.
    pub fn alias_port(&self, g: Guid) -> Option<Guid> {
        self.aliases
            .iter()
            .find(|(_, t)| t.values().any(|a| *a == g))
            .map(|(p, _)| *p)
    }

    /// The group with this MLID.
    pub fn group_by_mlid(&self, mlid: Lid) -> Option<&Group> {
        self.groups.values().find(|g| g.mlid == mlid)
    }

    /// Encodes for the replicated state (deterministic order).
    pub fn to_proto(&self) -> ps::SaState {
        ps::SaState {
            groups: self
                .groups
                .values()
                .map(|g| ps::McGroup {
                    mgid: g.mgid.0.to_vec(),
                    mlid: u32::from(g.mlid.0),
                    pkey: u32::from(g.pkey),
                    qkey: g.qkey,
                    mtu: u32::from(g.mtu),
                    rate: u32::from(g.rate),
                    sl: u32::from(g.sl),
                    flow_label: g.flow_label,
                    tclass: u32::from(g.tclass),
                    scope: u32::from(g.scope),
                    hop_limit: u32::from(g.hop_limit),
                    pkt_life: u32::from(g.pkt_life),
                    from_policy: g.from_policy,
                    members: g
                        .members
                        .iter()
                        .map(|(gid, m)| ps::McMember {
                            port_gid: gid.0.to_vec(),
                            join_state: u32::from(m.join_state),
                            proxy_join: m.proxy_join,
                        })
                        .collect(),
                })
                .collect(),
            services: self
                .services
                .iter()
                .map(|s| ps::ServiceRecord {
                    service_id: s.record.id,
                    service_gid: s.record.gid.0.to_vec(),
                    service_pkey: u32::from(s.record.pkey),
                    lease: s.record.lease,
                    service_key: s.record.key.to_vec(),
                    service_name: s.record.name_text(),
                    service_data: s.record.to_bytes(),
                    expires_ms: s.expires_ms.unwrap_or(0),
                })
                .collect(),
            informs: self
                .informs
                .iter()
                .map(|i| ps::InformSubscription {
                    subscriber_gid: i.subscriber_gid.0.to_vec(),
                    subscriber_lid: u32::from(i.subscriber_lid.0),
                    trap_number: u32::from(i.inform.trap_number),
                    qpn: i.inform.qpn,
                    resp_time: u32::from(i.inform.resp_time_value),
                    inform_info: i.inform.to_bytes(),
                    enum_id: u32::from(i.enum_id),
                })
                .collect(),
            aliases: alias_list(
                self.aliases
                    .iter()
                    .flat_map(|(p, t)| t.iter().map(move |(i, a)| ((*p, *i), *a))),
            ),
            assigned: alias_list(self.assigned.iter().map(|(k, a)| (*k, *a))),
            assigned_counter: self.assigned_counter,
        }
    }

    /// Rebuilds from the replicated state; refuses a state that does not decode.
    pub fn from_proto(s: &ps::SaState) -> Result<SaDb, SaError> {
        let mut db = SaDb::default();
        for g in &s.groups {
            let mgid = gid_from(&g.mgid, "group MGID")?;
            let mut members = BTreeMap::new();
            for m in &g.members {
                members.insert(
                    gid_from(&m.port_gid, "member port GID")?,
                    Member {
                        join_state: small(m.join_state, "JoinState")?,
                        proxy_join: m.proxy_join,
                    },
                );
            }
            let mlid: u16 = small(g.mlid, "MLID")?;
            if !Lid(mlid).is_multicast() {
                return Err(SaError::BadState(format!("MLID {mlid:#06x} not multicast")));
            }
            db.groups.insert(
                mgid,
                Group {
                    mgid,
                    mlid: Lid(mlid),
                    pkey: small(g.pkey, "P_Key")?,
                    qkey: g.qkey,
                    mtu: small(g.mtu, "MTU")?,
                    rate: small(g.rate, "rate")?,
                    sl: small(g.sl, "SL")?,
                    flow_label: g.flow_label,
                    tclass: small(g.tclass, "TClass")?,
                    scope: small(g.scope, "scope")?,
                    hop_limit: small(g.hop_limit, "HopLimit")?,
                    pkt_life: small(g.pkt_life, "PacketLifeTime")?,
                    from_policy: g.from_policy,
                    members,
                },
            );
        }
        for s in &s.services {
            let record = ServiceRecord::decode(&s.service_data)?;
            db.services.push(Service {
                record,
                expires_ms: (s.expires_ms != 0).then_some(s.expires_ms),
            });
        }
        for i in &s.informs {
            db.informs.push(Subscription {
                subscriber_gid: gid_from(&i.subscriber_gid, "subscriber GID")?,
                subscriber_lid: Lid(small(i.subscriber_lid, "subscriber LID")?),
                enum_id: small(i.enum_id, "Enum")?,
                inform: InformInfo::decode(&i.inform_info)?,
            });
        }
        for a in &s.aliases {
            let i: u16 = small(a.index, "GUIDInfo index")?;
            db.aliases
                .entry(Guid(a.port_guid))
                .or_default()
                .insert(i, Guid(a.alias));
        }
        for a in &s.assigned {
            let i: u16 = small(a.index, "GUIDInfo index")?;
            db.assigned.insert((Guid(a.port_guid), i), Guid(a.alias));
        }
        db.assigned_counter = s.assigned_counter;
        Ok(db)
    }
}

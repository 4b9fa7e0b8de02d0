//! [`SaEngine`]: one SA request in, one answer out (plus, for a request that changes the
//! SA database, the fact that it changed: the glue proposes [`SaEngine::state`] to Raft and
//! sends the answer once it is committed).
//!
//! Methods per attribute (IBA 15.4, Table 209):
//!
//! | attribute | Get | GetTable | Set | Delete | other |
//! |---|---|---|---|---|---|
//! | ClassPortInfo | yes | | | | |
//! | NodeRecord, PortInfoRecord, LinkRecord, SMInfoRecord, SwitchInfoRecord, LinearForwardingTableRecord | yes | yes | | | |
//! | MulticastForwardingTableRecord, SLtoVLMappingTableRecord, VLArbitrationTableRecord | yes | yes | | | |
//! | P_KeyTableRecord | trusted | trusted | | | untrusted: ERR_REQ_INVALID (as OpenSM) |
//! | PathRecord | yes | yes | | | |
//! | MultiPathRecord | | yes | | | GetMulti (single-MAD request) |
//! | ServiceRecord | yes | yes | register | yes | |
//! | MCMemberRecord | yes | yes | join/create | leave | |
//! | InformInfo | | | subscribe | | |
//! | InformInfoRecord | yes | yes | | | |
//!
//! A Get that matches no record answers ERR_NO_RECORDS, more than one ERR_TOO_MANY_RECORDS.
//! A requester is trusted when its SA header carries the cluster's SM_Key (non-zero).

use crate::db::SaDb;
use crate::guidinfo;

/// Alias GUIDs by end port GUID and GUIDInfo index.
pub type AliasTable =
    std::collections::BTreeMap<fabric::Guid, std::collections::BTreeMap<u16, fabric::Guid>>;
use crate::mcast::{self, PolicyGroup};
use crate::path::{self, PathQuery};
use crate::records;
use crate::service::{self, Outgoing};
use crate::view::FabricView;
use crate::{SaError, VTime};
use fabric::Lid;
use mad::sa::{
    ClassPortInfo, GuidInfoRecord, InformInfo, InformInfoRecord, LftRecord, LinkRecord,
    McMemberRecord, MultiPathRecord, NodeRecord, PKeyTableRecord, PathRecord, PortInfoRecord,
    SA_DATA_LEN, SaMad, SaRecord, ServiceRecord, SmInfoRecord, SwitchInfoRecord, comp_match,
    sa_status,
};
use mad::{AttributeId, MadStatus, Method};
use std::sync::Arc;

/// Source x destination pairs one PathRecord query may ask for (a table of 100,000 records
/// is 6.4 MB in RMPP segments); more is answered ERR_NO_RESOURCES.
pub const MAX_PATH_PAIRS: usize = 100_000;

/// ClassPortInfo.CapabilityMask2 of the SA: IsMulticastFDBTopSupported.
const CAP2_MCAST_TOP: u32 = 1 << 3;

/// The well-known Q_Key of QP1 (IBA 9.6.1.1.1).
const QP1_QKEY: u32 = 0x8001_0000;

/// P_KeyTableRecord ComponentMask bits of BlockNum and PortNum.
const PKEY_CM_BLOCK: u64 = 1 << 1;
const PKEY_CM_PORT_NUM: u64 = 1 << 2;
/// SLtoVLMappingTableRecord ComponentMask bits of InputPortNum and OutputPortNum.
const SL2VL_CM_PORTS: u64 = 0b110;
/// VLArbitrationTableRecord ComponentMask bit of OutputPortNum.
const VLARB_CM_PORT: u64 = 1 << 1;

/// A big-endian u16 at `o` of `b` (0 past the end).
fn get_be16(b: &[u8], o: usize) -> u16 {
    match b.get(o..o + 2) {
        Some(&[h, l]) => u16::from_be_bytes([h, l]),
        _ => 0,
    }
}

/// SA settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaConfig {
    /// SM_Key: requests carrying it are trusted (0: nobody is).
    pub sm_key: u64,
    /// RespTimeValue reported in ClassPortInfo (OpenSM's 16: 4.096 µs * 2^16 = 268 ms,
    /// from its 200 ms transaction timeout).
    pub resp_time_value: u8,
    /// PacketLifeTime of paths and groups.
    pub pkt_life: u8,
    /// The byte SA-assigned alias GUIDs carry (OpenSM's `sm_assigned_guid`, default 0).
    pub assigned_guid_byte: u8,
}

impl Default for SaConfig {
    fn default() -> SaConfig {
        SaConfig {
            sm_key: 1,
            resp_time_value: 16,
            pkt_life: 18,
            assigned_guid_byte: 0,
        }
    }
}

/// A request that reached the SA.
#[derive(Clone, Debug)]
pub struct Request {
    /// LRH source LID.
    pub slid: Lid,
    /// The MAD.
    pub mad: SaMad,
}

/// The answer to a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Where it goes (the requester's LID).
    pub dlid: Lid,
    /// The response MAD: header, status, and the data of a single-record answer.
    pub mad: SaMad,
    /// The records of a table answer (GetTableResp/GetMultiResp), concatenated every
    /// AttributeOffset * 8 bytes; empty otherwise.
    pub table: Option<Vec<u8>>,
}

impl Reply {
    /// The answer as one MAD when it fits: a single-record answer, or a table of at most 200
    /// bytes (sent with RMPP flags Active|First|Last and its PayloadLength). None for a table
    /// that needs an RMPP transfer ([`crate::RmppSender`]).
    pub fn single(&self) -> Option<SaMad> {
        let Some(t) = &self.table else {
            return Some(self.mad.clone());
        };
        if t.len() > SA_DATA_LEN {
            return None;
        }
        let mut m = self.mad.clone();
        m.data = [0; SA_DATA_LEN];
        m.data[..t.len()].copy_from_slice(t);
        m.header.rmpp = mad::RmppHeader {
            version: 1,
            rmpp_type: mad::RmppHeader::TYPE_DATA,
            resp_time: mad::RmppHeader::NO_RESP_TIME,
            flags: mad::RmppHeader::FLAG_ACTIVE
                | mad::RmppHeader::FLAG_FIRST
                | mad::RmppHeader::FLAG_LAST,
            status: 0,
            data1: 1,
            data2: (t.len() + crate::rmpp::SA_HDR_EXTRA) as u32,
        };
        Some(m)
    }
}

/// What handling a request produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handled {
    /// The answer (None: nothing to answer, e.g. a ReportResp).
    pub reply: Option<Reply>,
    /// The database changed: propose [`SaEngine::state`] and send `reply` after commit.
    pub changed: bool,
}

/// The SA: a fabric view, a database, a configuration.
#[derive(Clone, Debug)]
pub struct SaEngine {
    cfg: SaConfig,
    view: Arc<FabricView>,
    db: SaDb,
    policy_groups: Vec<PolicyGroup>,
    report_tid: u64,
}

fn error_reply(req: &Request, status: u16) -> Handled {
    let mut m = req.mad.response();
    if !m.header.mad.method.is_response() {
        // Trap and the like: not SA methods; answer with the R bit set.
        m.header.mad.method = Method(req.mad.header.mad.method.0 | Method::RESPONSE_BIT);
    }
    m.header.mad.status = status;
    Handled {
        reply: Some(Reply {
            dlid: req.slid,
            mad: m,
            table: None,
        }),
        changed: false,
    }
}

impl SaEngine {
    /// An SA with an empty view and database.
    pub fn new(cfg: SaConfig) -> SaEngine {
        SaEngine {
            cfg,
            view: Arc::new(FabricView::default()),
            db: SaDb::default(),
            policy_groups: Vec::new(),
            report_tid: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SaConfig {
        &self.cfg
    }

    /// Replaces the fabric view (after a sweep).
    pub fn set_view(&mut self, view: Arc<FabricView>) {
        self.view = view;
        self.sync_aliases();
    }

    /// Gives the view the alias GUIDs of the database (PathRecords resolve them).
    fn sync_aliases(&mut self) {
        let map = crate::guidinfo::alias_map(&self.db);
        if self.view.aliases() != &map {
            Arc::make_mut(&mut self.view).set_aliases(map);
        }
    }

    /// Takes the MFT blocks the switches now hold (see [`FabricView::set_mfts`]).
    pub fn set_mfts(&mut self, mfts: &std::collections::HashMap<fabric::Guid, crate::MftBlocks>) {
        Arc::make_mut(&mut self.view).set_mfts(mfts);
    }

    /// The fabric view.
    pub fn view(&self) -> &FabricView {
        &self.view
    }

    /// The database.
    pub fn db(&self) -> &SaDb {
        &self.db
    }

    /// Rebuilds the database from the replicated state (a new master; or after a proposal
    /// was refused).
    pub fn load(&mut self, s: &proto::state::SaState) -> Result<(), SaError> {
        self.db = SaDb::from_proto(s)?;
        Ok(())
    }

    /// The database as the replicated state keeps it.
    pub fn state(&self) -> proto::state::SaState {
        self.db.to_proto()
    }

    /// Sets the policy's groups (IPoIB broadcast groups) and creates the missing ones.
    /// Returns true when the database changed (propose it).
    pub fn set_policy_groups(&mut self, groups: Vec<PolicyGroup>) -> bool {
        self.policy_groups = groups;
        mcast::ensure_policy_groups(&mut self.db, &self.policy_groups, self.cfg.pkt_life)
    }

    /// Drops services whose lease ended at `now_ms`; true when the database changed.
    pub fn expire(&mut self, now_ms: VTime) -> bool {
        service::expire(&mut self.db, now_ms)
    }

    /// The groups for multicast forwarding: MLID and member port GUIDs.
    pub fn forwarding_groups(&self) -> Vec<(Lid, Vec<fabric::Guid>)> {
        mcast::forwarding_groups(&self.db)
    }

    /// The alias GUIDs clients set, by port GUID and GUIDInfo index (what the master
    /// programs into the ports' GUIDInfo).
    pub fn aliases(&self) -> &AliasTable {
        &self.db.aliases
    }

    /// Reports (Notice 64/65) for ports that came into / went out of service.
    pub fn port_changes(
        &mut self,
        ports_in: &[fabric::Guid],
        ports_out: &[(fabric::Guid, Lid)],
    ) -> Vec<Outgoing> {
        let view = self.view.clone();
        let gin: Vec<_> = ports_in
            .iter()
            .map(|g| {
                let lid = view
                    .port_by_guid(*g)
                    .and_then(|at| view.port(at))
                    .map(|p| p.lid)
                    .unwrap_or_default();
                (mad::sa::Gid::new(view.subnet_prefix, g.0), lid)
            })
            .collect();
        let gout: Vec<_> = ports_out
            .iter()
            .map(|(g, l)| (mad::sa::Gid::new(view.subnet_prefix, g.0), *l))
            .collect();
        service::notices(&self.db, &view, &gin, &gout, &mut self.report_tid)
    }

    /// Answers one request at SA time `now_ms` (milliseconds, the clock leases use).
    pub fn handle(&mut self, now_ms: VTime, req: &Request) -> Handled {
        let h = &req.mad.header;
        if h.mad.method.is_response() {
            return Handled::default();
        }
        if h.mad.class_version != 2 || h.mad.base_version != 1 {
            return error_reply(req, MadStatus::BAD_VERSION.0);
        }
        let trusted = self.cfg.sm_key != 0 && h.sm_key == self.cfg.sm_key;
        let requester = self.view.port_by_lid(req.slid);
        let mask = h.comp_mask;
        let method = h.mad.method;
        let attr = h.mad.attr_id;
        let view = self.view.clone();
        let v = &*view;
        match (attr, method) {
            (AttributeId::CLASS_PORT_INFO, Method::GET) => {
                let c = ClassPortInfo {
                    base_version: 1,
                    class_version: 2,
                    capability_mask: 0x2602,
                    // IsMulticastFDBTopSupported (bit 3): the SM keeps SwitchInfo.
                    // MulticastFDBTop (sm-core `mcast`), as OpenSM with `use_mfttop`.
                    // Nothing else: no alias GUIDs, QoS classes, extended speeds...
                    capability_mask2: CAP2_MCAST_TOP,
                    resp_time_value: self.cfg.resp_time_value,
                    // As OpenSM: no redirection (QP1 with the well-known Q_Key), traps
                    // to QP1's Q_Key too.
                    redirect_qp: 1,
                    redirect_qkey: QP1_QKEY,
                    trap_qkey: QP1_QKEY,
                    ..ClassPortInfo::default()
                };
                self.single(req, c.to_data())
            }
            (AttributeId::SA_NODE_RECORD, _) => {
                self.query(req, records::node_records(v), mask, method)
            }
            (AttributeId::SA_PORT_INFO_RECORD, _) => {
                self.query(req, records::port_info_records(v), mask, method)
            }
            (AttributeId::SA_LINK_RECORD, _) => {
                self.query(req, records::link_records(v), mask, method)
            }
            (AttributeId::SA_SM_INFO_RECORD, _) => self.query(
                req,
                records::sm_info_records(v, self.cfg.sm_key, trusted),
                mask,
                method,
            ),
            (AttributeId::SA_SWITCH_INFO_RECORD, _) => {
                self.query(req, records::switch_info_records(v), mask, method)
            }
            (AttributeId::SA_GUID_INFO_RECORD, Method::GET | Method::GET_TABLE) => {
                self.query(req, records::guid_info_records(v, &self.db), mask, method)
            }
            (AttributeId::SA_GUID_INFO_RECORD, Method::SET | Method::DELETE) => {
                let r = GuidInfoRecord::decode_data(&req.mad.data);
                let res = if method == Method::SET {
                    let byte = self.cfg.assigned_guid_byte;
                    guidinfo::set(&mut self.db, v, requester, mask, &r, byte)
                } else {
                    guidinfo::delete(&mut self.db, v, requester, mask, &r)
                };
                match res {
                    Err(guidinfo::Refused::Silent) => Handled::default(),
                    Err(guidinfo::Refused::Status(st)) => error_reply(req, st),
                    Ok(rec) => {
                        self.sync_aliases();
                        self.changed(req, Ok(rec.to_data()))
                    }
                }
            }
            (AttributeId::SA_LFT_RECORD, _) => {
                self.query(req, records::lft_records(v), mask, method)
            }
            (AttributeId::SA_MFT_RECORD, Method::GET | Method::GET_TABLE) => {
                self.query(req, records::mft_records(v), mask, method)
            }
            // A CA port is named by its LID: the port numbers of the request are not
            // matched (reserved in an SLtoVL record of a CA, IBA 15.2.5.4; OpenSM takes
            // the port of the LID for a VLArb record).
            (AttributeId::SA_SL_TO_VL_RECORD, Method::GET | Method::GET_TABLE) => {
                let recs = records::sl_to_vl_records(v);
                let recs = self.matching_ca_lenient(req, recs, SL2VL_CM_PORTS, |r| r.lid);
                self.answer(req, recs, method)
            }
            (AttributeId::SA_VL_ARBITRATION_RECORD, Method::GET | Method::GET_TABLE) => {
                let recs = records::vl_arb_records(v);
                let recs = self.matching_ca_lenient(req, recs, VLARB_CM_PORT, |r| r.lid);
                self.answer(req, recs, method)
            }
            (AttributeId::SA_P_KEY_TABLE_RECORD, _) => {
                if !trusted {
                    return error_reply(req, sa_status::REQ_INVALID);
                }
                // As OpenSM: a request's BlockNum is read in network order (IBA; saquery
                // sends it so) while the records carry it in host order (see
                // `PKeyTableRecord::block`); a CA port is named by its LID, its PortNum is
                // not matched (`saquery PKTR LID/2/0` of a CA answers port 1's table).
                let q = &req.mad.data;
                let want_block = (mask & PKEY_CM_BLOCK != 0).then(|| get_be16(q, 2));
                let recs = records::pkey_records(v)
                    .into_iter()
                    .filter(|r| {
                        let ca = v
                            .port_by_lid(r.lid)
                            .is_some_and(|(n, _)| v.nodes.get(n).is_some_and(|n| !n.is_switch()));
                        let mut m = mask & !PKEY_CM_BLOCK;
                        if ca {
                            m &= !PKEY_CM_PORT_NUM;
                        }
                        want_block.is_none_or(|b| b == r.block)
                            && comp_match(PKeyTableRecord::FIELDS, m, q, &r.to_data())
                    })
                    .collect();
                self.answer(req, recs, method)
            }
            (AttributeId::SA_PATH_RECORD, Method::GET | Method::GET_TABLE) => {
                match self.paths(req) {
                    Ok(p) => self.answer(req, p, method),
                    Err(s) => error_reply(req, s),
                }
            }
            (AttributeId::SA_MULTI_PATH_RECORD, Method::GET_MULTI | Method::GET_TABLE) => {
                let m = MultiPathRecord::decode_data(&req.mad.data);
                let q = self.path_query(mask_for_multipath(mask), &path_from_multi(&m));
                let paths = path::multipath(v, &m, &q);
                let mut r = self.table(req, &paths);
                if let Some(rep) = r.reply.as_mut() {
                    rep.mad.header.mad.attr_id = AttributeId::SA_PATH_RECORD;
                }
                r
            }
            (AttributeId::SA_SERVICE_RECORD, Method::GET | Method::GET_TABLE) => {
                self.query(req, service::records(&self.db, now_ms), mask, method)
            }
            (AttributeId::SA_SERVICE_RECORD, Method::SET) => {
                let r = ServiceRecord::decode_data(&req.mad.data);
                let res = service::register(&mut self.db, v, requester, trusted, mask, &r, now_ms);
                self.changed(req, res.map(|r| r.to_data()))
            }
            (AttributeId::SA_SERVICE_RECORD, Method::DELETE) => {
                let r = ServiceRecord::decode_data(&req.mad.data);
                let res = service::delete(&mut self.db, v, requester, trusted, mask, &r, now_ms);
                self.changed(req, res.map(|r| r.to_data()))
            }
            (AttributeId::SA_MC_MEMBER_RECORD, Method::GET | Method::GET_TABLE) => {
                self.query(req, mcast::all_records(&self.db), mask, method)
            }
            (AttributeId::SA_MC_MEMBER_RECORD, Method::SET) => {
                let r = McMemberRecord::decode_data(&req.mad.data);
                let res = mcast::join(
                    &mut self.db,
                    v,
                    requester,
                    trusted,
                    mask,
                    &r,
                    self.cfg.pkt_life,
                );
                self.changed(req, res.map(|r| r.to_data()))
            }
            (AttributeId::SA_MC_MEMBER_RECORD, Method::DELETE) => {
                let r = McMemberRecord::decode_data(&req.mad.data);
                let res = mcast::leave(&mut self.db, v, requester, trusted, mask, &r);
                self.changed(req, res.map(|r| r.to_data()))
            }
            (AttributeId::INFORM_INFO, Method::SET) => {
                let ii = InformInfo::decode_data(&req.mad.data);
                let res = service::inform(&mut self.db, v, req.slid, &ii);
                self.changed(req, res.map(|r| r.to_data()))
            }
            (AttributeId::SA_INFORM_INFO_RECORD, Method::GET | Method::GET_TABLE) => {
                self.query(req, service::inform_records(&self.db), mask, method)
            }
            (_, Method::GET | Method::GET_TABLE | Method::SET | Method::DELETE) => {
                error_reply(req, MadStatus::METHOD_ATTR_UNSUPPORTED.0)
            }
            _ => error_reply(req, MadStatus::METHOD_UNSUPPORTED.0),
        }
    }

    fn single(&self, req: &Request, data: [u8; SA_DATA_LEN]) -> Handled {
        let mut m = req.mad.response();
        m.data = data;
        Handled {
            reply: Some(Reply {
                dlid: req.slid,
                mad: m,
                table: None,
            }),
            changed: false,
        }
    }

    fn changed(&self, req: &Request, res: Result<[u8; SA_DATA_LEN], u16>) -> Handled {
        match res {
            Ok(d) => {
                let mut h = self.single(req, d);
                h.changed = true;
                h
            }
            Err(s) => error_reply(req, s),
        }
    }

    fn table<R: SaRecord>(&self, req: &Request, recs: &[R]) -> Handled {
        let mut m = req.mad.response();
        m.header.attr_offset = R::attr_offset();
        let mut t = Vec::with_capacity(recs.len() * R::LEN);
        for r in recs {
            t.extend_from_slice(&r.to_bytes());
        }
        Handled {
            reply: Some(Reply {
                dlid: req.slid,
                mad: m,
                table: Some(t),
            }),
            changed: false,
        }
    }

    fn answer<R: SaRecord>(&self, req: &Request, recs: Vec<R>, method: Method) -> Handled {
        if method == Method::GET {
            match recs.len() {
                0 => error_reply(req, sa_status::NO_RECORDS),
                1 => self.single(req, recs[0].to_data()),
                _ => error_reply(req, sa_status::TOO_MANY_RECORDS),
            }
        } else if method == Method::GET_TABLE {
            self.table(req, &recs)
        } else {
            error_reply(req, MadStatus::METHOD_ATTR_UNSUPPORTED.0)
        }
    }

    fn query<R: SaRecord>(&self, req: &Request, all: Vec<R>, mask: u64, method: Method) -> Handled {
        let q = &req.mad.data;
        let recs: Vec<R> = all
            .into_iter()
            .filter(|r| comp_match(R::FIELDS, mask, q, &r.to_data()))
            .collect();
        self.answer(req, recs, method)
    }

    /// The records of `all` the request's ComponentMask selects, where the bits
    /// `ignore_on_ca` are not matched on a record of a CA port (named by its LID).
    fn matching_ca_lenient<R: SaRecord>(
        &self,
        req: &Request,
        all: Vec<R>,
        ignore_on_ca: u64,
        lid: fn(&R) -> Lid,
    ) -> Vec<R> {
        let (v, q, mask) = (&*self.view, &req.mad.data, req.mad.header.comp_mask);
        all.into_iter()
            .filter(|r| {
                let ca = v
                    .port_by_lid(lid(r))
                    .is_some_and(|(n, _)| v.nodes.get(n).is_some_and(|n| !n.is_switch()));
                let m = if ca { mask & !ignore_on_ca } else { mask };
                comp_match(R::FIELDS, m, q, &r.to_data())
            })
            .collect()
    }

    fn path_query(&self, mask: u64, p: &PathRecord) -> PathQuery {
        let has = |b: u64| mask & b != 0;
        PathQuery {
            pkey: has(PathRecord::CM_PKEY).then_some(p.pkey),
            sl: has(PathRecord::CM_SL).then_some(p.sl),
            mtu: has(PathRecord::CM_MTU).then(|| {
                let sel = if has(PathRecord::CM_MTU_SELECTOR) {
                    p.mtu_selector
                } else {
                    mad::sa::selector::EXACTLY
                };
                (sel, p.mtu)
            }),
            rate: has(PathRecord::CM_RATE).then(|| {
                let sel = if has(PathRecord::CM_RATE_SELECTOR) {
                    p.rate_selector
                } else {
                    mad::sa::selector::EXACTLY
                };
                (sel, p.rate)
            }),
            reversible: has(PathRecord::CM_REVERSIBLE) && p.reversible,
            pkt_life: self.cfg.pkt_life,
            service_id: (mask & PathRecord::CM_SERVICE_ID == PathRecord::CM_SERVICE_ID)
                .then_some(p.service_id),
            qos_class: has(PathRecord::CM_QOS_CLASS).then_some(p.qos_class),
        }
    }

    fn paths(&self, req: &Request) -> Result<Vec<PathRecord>, u16> {
        let mask = req.mad.header.comp_mask;
        let p = PathRecord::decode_data(&req.mad.data);
        let has = |b: u64| mask & b != 0;
        let v = &*self.view;
        let src = path::ends(
            v,
            has(PathRecord::CM_SGID).then_some(p.sgid),
            has(PathRecord::CM_SLID).then_some(p.slid),
        )?;
        let dst = path::ends(
            v,
            has(PathRecord::CM_DGID).then_some(p.dgid),
            has(PathRecord::CM_DLID).then_some(p.dlid),
        )?;
        if src.len().saturating_mul(dst.len()) > MAX_PATH_PAIRS {
            // `saquery -p` on a large fabric: every pair would be millions of records.
            return Err(sa_status::NO_RESOURCES);
        }
        let q = self.path_query(mask, &p);
        let limit = if has(PathRecord::CM_NUMB_PATH) && p.numb_path > 0 {
            usize::from(p.numb_path) * src.len().max(1) * dst.len().max(1)
        } else {
            usize::MAX
        };
        // Fields checked by the path computation itself are not compared again.
        let rest = mask
            & !(PathRecord::CM_SERVICE_ID
                | PathRecord::CM_SGID
                | PathRecord::CM_SLID
                | PathRecord::CM_DGID
                | PathRecord::CM_DLID
                | PathRecord::CM_PKEY
                | PathRecord::CM_SL
                | PathRecord::CM_MTU
                | PathRecord::CM_MTU_SELECTOR
                | PathRecord::CM_RATE
                | PathRecord::CM_RATE_SELECTOR
                | PathRecord::CM_REVERSIBLE
                | PathRecord::CM_NUMB_PATH
                | (1 << 20)
                | (1 << 21));
        let qdata = req.mad.data;
        let mut out = Vec::new();
        for &(s, sl) in &src {
            for &(d, dl) in &dst {
                if out.len() >= limit {
                    return Ok(out);
                }
                if let Some(mut r) = path::path_record(v, s, sl, d, dl, &q) {
                    r.service_id = if has(PathRecord::CM_SERVICE_ID) {
                        p.service_id
                    } else {
                        0
                    };
                    if comp_match(PathRecord::FIELDS, rest, &qdata, &r.to_data()) {
                        out.push(r);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The PathRecord-shaped constraints of a MultiPathRecord request.
fn path_from_multi(m: &MultiPathRecord) -> PathRecord {
    PathRecord {
        reversible: m.reversible,
        pkey: m.pkey,
        sl: m.sl,
        mtu_selector: m.mtu_selector,
        mtu: m.mtu,
        rate_selector: m.rate_selector,
        rate: m.rate,
        ..PathRecord::default()
    }
}

/// Maps MultiPathRecord ComponentMask bits to the PathRecord bits [`SaEngine::path_query`]
/// reads.
fn mask_for_multipath(m: u64) -> u64 {
    let map = [
        (5, PathRecord::CM_REVERSIBLE),
        (7, PathRecord::CM_PKEY),
        (9, PathRecord::CM_SL),
        (10, PathRecord::CM_MTU_SELECTOR),
        (11, PathRecord::CM_MTU),
        (12, PathRecord::CM_RATE_SELECTOR),
        (13, PathRecord::CM_RATE),
    ];
    map.iter()
        .filter(|(b, _)| m & (1u64 << b) != 0)
        .fold(0, |acc, (_, p)| acc | p)
}

// Keep every record type in the build even where only its table is used.
const _: [usize; 7] = [
    NodeRecord::LEN,
    PortInfoRecord::LEN,
    LinkRecord::LEN,
    SmInfoRecord::LEN,
    SwitchInfoRecord::LEN,
    LftRecord::LEN,
    PKeyTableRecord::LEN + InformInfoRecord::LEN,
];

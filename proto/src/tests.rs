//! Every command (and the snapshot, peer and admin messages) survives encode -> decode.

use crate::Message;
use crate::state::*;

fn contents() -> IntentContents {
    IntentContents {
        vport_writes: vec![VportWrite {
            port_guid: 0x1000,
            index: 2,
            attribute: 0xFFB1,
            data: vec![9; 64],
        }],
        lfts: vec![SwitchLft {
            switch_guid: 0x2001_0003_0000_0007,
            blocks: vec![LftBlock {
                block: 207,
                ports: (0..64).collect(),
            }],
        }],
        pkeys: vec![PortPKeys {
            node_guid: u64::MAX,
            port: 36,
            blocks: vec![PKeyBlock {
                block: 1,
                pkeys: (0..32).map(|i| 0x8000 | i).collect(),
            }],
        }],
        port_infos: vec![PortInfoChange {
            node_guid: 1,
            port: 1,
            lid: Some(0xBFFF),
            lmc: Some(0),
            m_key: Some(0),
            port_state: Some(4),
            ..PortInfoChange::default()
        }],
        mfts: vec![MftTable {
            switch_guid: 0x2001_0003_0000_0008,
            blocks: vec![MftBlock {
                block: 511,
                position: 2,
                masks: (0..32).map(|i| 1 << (i % 16)).collect(),
            }],
        }],
        vl_blocks: vec![VlBlock {
            node_guid: 0x2001_0003_0000_0009,
            attr: 2,
            modifier: 4 << 16 | 36,
            data: (0..64).collect(),
        }],
    }
}

/// One command of every kind, each with non-default fields.
fn every_command() -> Vec<Command> {
    let kinds = vec![
        command::Kind::Noop(Noop {}),
        command::Kind::SetConfig(ClusterConfig {
            subnet_prefix: 0xfe80_0000_0000_0000,
            sm_key: 1,
            m_key_base: u64::MAX,
            m_key_protect_bits: 2,
            m_key_lease_period: 60,
            routing_engines: vec!["ftree".into(), "updn".into()],
            lmc: 1,
            sweep_interval_ms: 10_000,
            replicas: vec![ReplicaInfo {
                id: 3,
                peer_address: "127.0.0.1:7003".into(),
                admin_address: "127.0.0.1:8003".into(),
                priority: 15,
                port_guid: 0xabc,
            }],
        }),
        command::Kind::ApplyPolicy(ApplyPolicy {
            text: "Default=0x7fff : ALL=full ;\n".into(),
            expected_version: 7,
        }),
        command::Kind::ApplyQosPolicy(ApplyPolicy {
            text: "qos-ulps\n default : 0\nend-qos-ulps\n".into(),
            expected_version: 3,
        }),
        command::Kind::SetTopology(Topology {
            nodes: vec![
                TopoNode {
                    node_guid: 2,
                    sys_image_guid: 2,
                    node_type: 2,
                    description: "switch é".into(),
                    num_ports: 36,
                    vendor_id: 0x2c9,
                    device_id: 0xbd36,
                    port_guids: vec![],
                    port0_guid: 2,
                },
                TopoNode {
                    node_guid: 3,
                    node_type: 1,
                    num_ports: 2,
                    port_guids: vec![4, 5],
                    ..TopoNode::default()
                },
            ],
            links: vec![TopoLink {
                a_node: 0,
                a_port: 1,
                b_node: 1,
                b_port: 2,
                width: 4,
                speed: 2,
            }],
        }),
        command::Kind::UpdateLids(LidUpdate {
            set: vec![LidEntry {
                port_guid: 4,
                base_lid: 12,
                lmc: 2,
            }],
            remove: vec![9, 10],
            replace_all: true,
        }),
        command::Kind::BeginIntent(BeginIntent {
            id: 1 << 40,
            term: 9,
            contents: Some(contents()),
        }),
        command::Kind::IntentChunk(IntentChunk {
            id: 1 << 40,
            seq: 3,
            contents: Some(contents()),
        }),
        command::Kind::SealIntent(SealIntent { id: 5, chunks: 4 }),
        command::Kind::IntentDone(IntentDone {
            id: 5,
            failed_switches: vec![2],
            failed_ports: vec![PortRef {
                node_guid: 3,
                port: 1,
            }],
        }),
        command::Kind::AbortIntent(AbortIntent { id: 6 }),
        command::Kind::SetMaster(MasterRecord {
            term: 4,
            replica_id: 2,
            sm_port_guid: 0xabc,
            sm_lid: 1,
            m_key: 0x1234_5678_9abc_def0,
        }),
        command::Kind::SetTenants(Tenants {
            tenants: vec![Tenant {
                name: "blue".into(),
                pkey: 0x102,
                members: vec![TenantMember {
                    kind: Some(tenant_member::Kind::PortGuid(4)),
                }],
                rdma: vec![RdmaLimit {
                    device: "mlx5_0".into(),
                    hca_handle: Some(2),
                    hca_object: None,
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
        command::Kind::SetSaState(SaState {
            groups: vec![McGroup {
                mgid: vec![0xff; 16],
                mlid: 0xC001,
                pkey: 0xffff,
                qkey: 0x0b1b,
                mtu: 4,
                rate: 3,
                members: vec![McMember {
                    port_gid: vec![1; 16],
                    join_state: 1,
                    proxy_join: true,
                }],
                ..McGroup::default()
            }],
            services: vec![ServiceRecord {
                service_id: 7,
                service_name: "svc".into(),
                service_data: vec![1, 2, 3],
                ..ServiceRecord::default()
            }],
            informs: vec![InformSubscription {
                subscriber_lid: 3,
                trap_number: 64,
                inform_info: vec![0; 36],
                ..InformSubscription::default()
            }],
            aliases: vec![AliasGuid {
                port_guid: 0x1000,
                index: 1,
                alias: 0x0014_0500_0000_0001,
            }],
            assigned: Vec::new(),
            assigned_counter: 1,
        }),
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, k)| Command {
            request_id: i as u64 * 0x1_0000_0001 + 1,
            kind: Some(k),
        })
        .collect()
}

/// Variant number; exhaustive, so a new variant breaks the build until it is listed here and
/// in `every_command`.
fn variant(k: &command::Kind) -> usize {
    use command::Kind::*;
    match k {
        Noop(_) => 0,
        SetConfig(_) => 1,
        ApplyPolicy(_) => 2,
        SetTopology(_) => 3,
        UpdateLids(_) => 4,
        BeginIntent(_) => 5,
        IntentChunk(_) => 6,
        SealIntent(_) => 7,
        IntentDone(_) => 8,
        AbortIntent(_) => 9,
        SetMaster(_) => 10,
        SetTenants(_) => 11,
        SetSaState(_) => 12,
        ApplyQosPolicy(_) => 13,
    }
}

#[test]
fn every_command_round_trips() {
    let cmds = every_command();
    let mut seen: Vec<usize> = cmds
        .iter()
        .filter_map(|c| c.kind.as_ref())
        .map(variant)
        .collect();
    seen.sort();
    assert_eq!(seen, (0..14).collect::<Vec<_>>(), "one command per variant");
    for c in cmds {
        let bytes = c.encode_to_vec();
        let back = Command::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.encode_to_vec(), bytes);
    }
}

#[test]
fn lft_blocks_stay_compact() {
    // A 64-entry block costs its 64 bytes plus a few bytes of framing.
    let b = LftBlock {
        block: 767,
        ports: vec![0xff; 64],
    };
    assert!(b.encoded_len() <= 64 + 6, "{}", b.encoded_len());
}

#[test]
fn snapshot_and_peer_messages_round_trip() {
    let snap = StateSnapshot {
        applied_index: 10,
        applied_term: 2,
        intent: Some(Intent {
            id: 1,
            term: 2,
            chunks: 3,
            sealed: true,
            begun_at_index: 8,
            contents: Some(contents()),
        }),
        lfts: vec![LftTable {
            switch_guid: 2,
            ports: vec![1; 128],
        }],
        pkeys: vec![PKeyTable {
            node_guid: 3,
            port: 1,
            pkeys: vec![0xffff; 32],
        }],
        recent_requests: vec![1, 2, 3],
        format: 1,
        ..StateSnapshot::default()
    };
    let back = StateSnapshot::decode(snap.encode_to_vec().as_slice()).unwrap();
    assert_eq!(back, snap);

    let req = crate::peer::ProposeRequest {
        from: 2,
        command: every_command().into_iter().nth(2),
    };
    let back = crate::peer::ProposeRequest::decode(req.encode_to_vec().as_slice()).unwrap();
    assert_eq!(back, req);
    let reply = crate::peer::ProposeReply {
        result: Some(crate::peer::propose_reply::Result::Applied(ApplyResult {
            index: 5,
            term: 2,
            code: "REPL-E003".into(),
            line: 2,
            col: 9,
            ..ApplyResult::default()
        })),
    };
    let back = crate::peer::ProposeReply::decode(reply.encode_to_vec().as_slice()).unwrap();
    assert_eq!(back, reply);
    let batch = crate::peer::RaftBatch {
        from: 1,
        to: 2,
        messages: vec![vec![8, 1], vec![]],
    };
    let back = crate::peer::RaftBatch::decode(batch.encode_to_vec().as_slice()).unwrap();
    assert_eq!(back, batch);
}

#[test]
fn admin_messages_round_trip() {
    let r = crate::admin::ClusterStatusReply {
        self_id: 1,
        term: 3,
        leader_id: 2,
        commit_index: 100,
        applied_index: 99,
        replicas: vec![crate::admin::ReplicaStatus {
            id: 2,
            role: crate::admin::Role::Leader as i32,
            ..Default::default()
        }],
        master: Some(crate::admin::MasterInfo {
            term: 3,
            replica_id: 2,
            sm_port_guid: 5,
            sm_lid: 1,
        }),
        policy_version: 4,
        ..Default::default()
    };
    let back = crate::admin::ClusterStatusReply::decode(r.encode_to_vec().as_slice()).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.replicas[0].role(), crate::admin::Role::Leader);
}

#[test]
fn garbage_never_panics() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..300usize {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let _ = Command::decode(bytes.as_slice());
        let _ = StateSnapshot::decode(bytes.as_slice());
    }
}

#[cfg(feature = "grpc")]
#[test]
fn grpc_services_are_generated() {
    // Type-level check that the tonic clients and servers exist under the feature.
    fn _names(
        _: Option<crate::peer::peer_client::PeerClient<tonic::transport::Channel>>,
        _: Option<crate::admin::sm_admin_client::SmAdminClient<tonic::transport::Channel>>,
    ) {
    }
    let _ = crate::peer::peer_server::SERVICE_NAME;
    let _ = crate::admin::sm_admin_server::SERVICE_NAME;
}

//! sm-node's configuration: fabric specs, the config file (its documented example parses),
//! flags over the file, the admin security section, the partitions file.

use sm_node::config::*;
use std::path::Path;
#[test]
fn fabric_specs_parse() {
    assert_eq!(
        "sim:ft2:8".parse::<FabricSpec>().unwrap(),
        FabricSpec::Sim {
            topology: "ft2:8".into(),
            port: None
        }
    );
    assert_eq!(
        "sim:net.topo@H1".parse::<FabricSpec>().unwrap(),
        FabricSpec::Sim {
            topology: "net.topo".into(),
            port: Some("H1".into())
        }
    );
    assert_eq!(
        "simd:/tmp/a.sock@0x10".parse::<FabricSpec>().unwrap(),
        FabricSpec::Simd {
            socket: "/tmp/a.sock".into(),
            port: "0x10".into()
        }
    );
    assert_eq!(
        "umad:/dev/infiniband/umad0".parse::<FabricSpec>().unwrap(),
        FabricSpec::Umad {
            device: "/dev/infiniband/umad0".into(),
            port: None
        }
    );
    assert_eq!(
        "umad:/dev/infiniband/umad1:2"
            .parse::<FabricSpec>()
            .unwrap(),
        FabricSpec::Umad {
            device: "/dev/infiniband/umad1".into(),
            port: Some(2)
        }
    );
    for bad in [
        "simd:/tmp/a.sock",
        "umad:0",
        "sim:",
        "umad:",
        "umad:/dev/x:300",
    ] {
        let e = bad.parse::<FabricSpec>().unwrap_err().to_string();
        assert!(e.starts_with("E_NODE_CONFIG"), "{bad}: {e}");
    }
}

/// The documented example is the file the package ships (config.rs points to it); every
/// key in it is checked in `ops.rs`.
#[test]
fn the_documented_example_parses() {
    let example = include_str!("../../packaging/etc/sm-node.toml");
    let c = NodeConfig::try_from(toml::from_str::<FileConfig>(example).unwrap()).unwrap();
    assert_eq!(c.priority, 0);
    assert_eq!(c.engines, ["ftree", "updn", "minhop"]);
    assert_eq!(c.smp_timeout_ms, 200, "umad's default");
    assert_eq!(
        c.guid2lid.as_deref(),
        Some(Path::new("/var/lib/quorum-sm/guid2lid"))
    );
}

#[test]
fn flags_override_the_file_and_values_are_checked() {
    let file: FileConfig =
        toml::from_str("fabric = \"sim:ft2:8\"\npriority = 3\nsweep-interval = 2.5\n").unwrap();
    let flags = FileConfig {
        priority: Some(9),
        ..FileConfig::default()
    };
    let c = NodeConfig::try_from(file.clone().overlay(flags)).unwrap();
    assert_eq!(c.priority, 9);
    assert_eq!(c.sweep_interval_ms, 2500);
    assert_eq!(c.engines, ["ftree", "updn", "minhop"]);
    let bad = FileConfig {
        priority: Some(16),
        ..FileConfig::default()
    };
    assert!(NodeConfig::try_from(file.clone().overlay(bad)).is_err());
    let bad = FileConfig {
        routing_engine: Some("nosuch".into()),
        ..FileConfig::default()
    };
    assert!(NodeConfig::try_from(file.overlay(bad)).is_err());
    assert!(toml::from_str::<FileConfig>("bogus = 1\n").is_err());
}

#[test]
fn admin_security_section_and_flags() {
    let file: FileConfig = toml::from_str(
        "fabric = \"sim:ft2:8\"\n[admin]\ntls-cert = \"/a.pem\"\ntls-key = \"/a.key\"\ninsecure-loopback = false\n",
    )
    .unwrap();
    let flags = FileConfig {
        admin: Some(AdminSecurity {
            tls_ca: Some("/ca.pem".into()),
            insecure_loopback: Some(true),
            ..AdminSecurity::default()
        }),
        ..FileConfig::default()
    };
    let c = NodeConfig::try_from(file.overlay(flags)).unwrap();
    assert_eq!(c.admin.tls_cert.as_deref(), Some(Path::new("/a.pem")));
    assert_eq!(c.admin.tls_key.as_deref(), Some(Path::new("/a.key")));
    assert_eq!(c.admin.tls_ca.as_deref(), Some(Path::new("/ca.pem")));
    assert_eq!(c.admin.insecure_loopback, Some(true), "the flag wins");
    assert!(toml::from_str::<FileConfig>("[admin]\ntls-certs = \"x\"\n").is_err());
}

#[test]
fn bad_partitions_file_is_refused_with_line_and_column() {
    let dir = std::env::temp_dir().join(format!("smnode-parts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("partitions.conf");
    std::fs::write(
        &p,
        "Default=0x7fff : ALL=full ;\nBroken=0x0002 ALL=full ;\n",
    )
    .unwrap();
    let e = load_partitions(&p).unwrap_err().to_string();
    assert!(e.starts_with("E_NODE_PARTITIONS"), "{e}");
    assert!(e.contains("partitions.conf:2:"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ufm_keys_need_a_password_file_and_default_the_user() {
    let file: FileConfig = toml::from_str(
        "fabric = \"sim:ft2:8\"\nufm-listen = \"127.0.0.1:8443\"\nufm-token-file = \"/t\"\n",
    )
    .unwrap();
    let e = NodeConfig::try_from(file.clone()).unwrap_err();
    assert!(e.to_string().contains("ufm-password-file"), "{e}");
    let flags = FileConfig {
        ufm_password_file: Some("/p".into()),
        ..FileConfig::default()
    };
    let u = NodeConfig::try_from(file.overlay(flags))
        .unwrap()
        .ufm
        .unwrap();
    assert_eq!(u.listen.to_string(), "127.0.0.1:8443");
    assert_eq!(
        (u.username.as_str(), u.token_file.is_some()),
        ("admin", true)
    );
    let off: FileConfig = toml::from_str("fabric = \"sim:ft2:8\"\n").unwrap();
    assert!(NodeConfig::try_from(off).unwrap().ufm.is_none());
}

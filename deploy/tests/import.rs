//! The OpenSM import: every key of OpenSM's own default configuration gets a verdict (the
//! copy in tests/data, and `opensm -c` when OpenSM is installed), the files it writes, and
//! bad input that writes nothing.

use deploy::DeployError;
use deploy::import::{self, ImportOptions};
use deploy::opensm::{self, Verdict};
use std::path::{Path, PathBuf};

const DEFAULT_CONF: &str = include_str!("data/opensm.conf.default");

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("deploy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every key classified; none unknown; every QoS key the same or mapped to `[qos]`.
fn check_every_key_classified(text: &str) -> usize {
    let entries = opensm::parse(text).unwrap();
    assert!(entries.len() > 150, "{} keys", entries.len());
    for e in &entries {
        let (v, _) = opensm::classify(&e.key, &e.value)
            .unwrap_or_else(|why| panic!("{} {}: {why}", e.key, e.value));
        let d = v.describe();
        assert!(!d.contains("unknown key"), "{}: {d}", e.key);
        if e.key.starts_with("qos") {
            assert!(!matches!(v, Verdict::NotSupported(_)), "{}: {d}", e.key);
        }
    }
    entries.len()
}

#[test]
fn every_key_of_the_default_config_is_classified() {
    check_every_key_classified(DEFAULT_CONF);
}

#[test]
fn every_key_of_opensm_c_is_classified() {
    let Some([opensm]) = testenv::require("every_key_of_opensm_c_is_classified", ["opensm"]) else {
        return;
    };
    let dir = temp_dir("opensm-c");
    let conf = dir.join("opensm.conf");
    // `opensm -c FILE` writes its defaults and exits.
    let out = std::process::Command::new(opensm)
        .arg("-c")
        .arg(&conf)
        .env("OSM_TMP_DIR", &dir)
        .env("OSM_CACHE_DIR", &dir)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&conf)
        .unwrap_or_else(|e| panic!("opensm -c wrote nothing ({e}): {out:?}"));
    let n = check_every_key_classified(&text);
    eprintln!("opensm -c: {n} keys classified");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn options(dir: &Path) -> ImportOptions {
    ImportOptions {
        conf: dir.join("opensm.conf"),
        partitions: None,
        guid2lid: None,
        root_guid_file: None,
        fabric: "umad:/dev/infiniband/umad0".into(),
        data_dir: dir.join("data"),
        out_dir: dir.join("etc"),
        force: false,
        dry_run: false,
    }
}

#[test]
fn import_writes_the_config_and_copies_the_files() {
    let dir = temp_dir("import");
    let parts = dir.join("partitions.conf");
    std::fs::write(&parts, "Default=0x7fff : ALL=full ;\n").unwrap();
    let roots = dir.join("roots");
    std::fs::write(&roots, "0x0002c90200000001\n").unwrap();
    let conf = DEFAULT_CONF
        .replace("sm_priority 0", "sm_priority 7")
        .replace("routing_engine (null)", "routing_engine updn,minhop")
        .replace(
            "partition_config_file /etc/opensm/partitions.conf",
            &format!("partition_config_file {}", parts.display()),
        )
        .replace(
            "root_guid_file (null)",
            &format!("root_guid_file {}", roots.display()),
        );
    std::fs::write(dir.join("opensm.conf"), conf).unwrap();
    let g2l = dir.join("guid2lid");
    std::fs::write(&g2l, "0x0002c90300000011 0x0005 0x0005\n").unwrap();
    let mut o = options(&dir);
    o.guid2lid = Some(g2l);
    let r = import::run(&o).unwrap();
    let cfg = std::fs::read_to_string(dir.join("etc/sm-node.toml")).unwrap();
    assert_eq!(cfg, r.config);
    let v: toml::Table = toml::from_str(&cfg).unwrap();
    assert_eq!(v["priority"].as_integer(), Some(7));
    assert_eq!(v["routing-engine"].as_str(), Some("updn,minhop"));
    assert_eq!(v["smp-timeout-ms"].as_integer(), Some(200));
    assert_eq!(v["sweep-interval"].as_integer(), Some(10));
    let etc = dir.join("etc");
    assert_eq!(
        v["partitions"].as_str(),
        etc.join("partitions.conf").to_str()
    );
    assert_eq!(
        v["root-guid-file"].as_str(),
        etc.join("root-guids").to_str()
    );
    assert!(etc.join("partitions.conf").exists() && etc.join("root-guids").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("data/guid2lid")).unwrap(),
        "0x0002c90300000011 0x0005 0x0005\n"
    );
    // The table names every key once, QoS included.
    let table = r.render();
    assert!(table.contains("qos_max_vls"), "{table}");
    assert!(r.rows.iter().any(|row| row.key == "sm_priority"
        && matches!(row.verdict, Verdict::Mapped { to: "priority", .. })));

    // A second import without --force writes nothing.
    let e = import::run(&o).unwrap_err();
    assert!(matches!(e, DeployError::Exists(_)), "{e}");
    o.force = true;
    import::run(&o).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn qos_options_and_policy_go_to_the_qos_table() {
    let dir = temp_dir("qos");
    let policy = dir.join("qos-policy.conf");
    std::fs::write(
        &policy,
        "qos-levels\n    qos-level\n        name: DEFAULT\n        sl: 0\n    end-qos-level\nend-qos-levels\n",
    )
    .unwrap();
    let conf = DEFAULT_CONF
        .replace("qos FALSE", "qos TRUE")
        .replace(
            "qos_sl2vl (null)",
            "qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3",
        )
        .replace(
            "qos_policy_file /etc/opensm/qos-policy.conf",
            &format!("qos_policy_file {}", policy.display()),
        );
    std::fs::write(dir.join("opensm.conf"), conf).unwrap();
    let o = options(&dir);
    let r = import::run(&o).unwrap();
    let v: toml::Table = toml::from_str(&r.config).unwrap();
    let q = v["qos"].as_table().expect("[qos]");
    assert_eq!(q["enabled"].as_bool(), Some(true));
    assert_eq!(
        q["qos_sl2vl"].as_str(),
        Some("0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3")
    );
    let copied = dir.join("etc/qos-policy.conf");
    assert_eq!(q["qos_policy_file"].as_str(), copied.to_str());
    assert!(copied.exists());
    // The daemon reads it back: the tables and the policy file check out.
    let f = deploy::config::FileConfig::load(&dir.join("etc/sm-node.toml")).unwrap();
    let n = deploy::config::NodeConfig::try_from(f).unwrap();
    assert!(n.qos.is_some());
    // A bad table is refused and nothing is written.
    let dir2 = temp_dir("qos-bad");
    let bad = DEFAULT_CONF.replace("qos_sl2vl (null)", "qos_sl2vl 0,1");
    std::fs::write(dir2.join("opensm.conf"), bad).unwrap();
    assert!(import::run(&options(&dir2)).is_err());
    assert!(!dir2.join("etc/sm-node.toml").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&dir2).unwrap();
}

#[test]
fn bad_input_writes_nothing() {
    let dir = temp_dir("bad");
    std::fs::write(dir.join("opensm.conf"), DEFAULT_CONF).unwrap();
    let parts = dir.join("bad-partitions.conf");
    std::fs::write(
        &parts,
        "Default=0x7fff : ALL=full ;\nTenant=0x0002 ALL=full ;\n",
    )
    .unwrap();
    let mut o = options(&dir);
    o.partitions = Some(parts);
    let e = import::run(&o).unwrap_err().to_string();
    assert!(
        e.starts_with("E_IMPORT_INPUT") && e.contains("bad-partitions.conf:2:"),
        "{e}"
    );
    assert!(!dir.join("etc").exists() && !dir.join("data").exists());

    let mut o = options(&dir);
    let g2l = dir.join("guid2lid");
    std::fs::write(&g2l, "0x11 0x0005\n").unwrap();
    o.guid2lid = Some(g2l);
    let e = import::run(&o).unwrap_err().to_string();
    assert!(e.starts_with("E_IMPORT_INPUT"), "{e}");

    let o = options(&dir);
    std::fs::write(dir.join("opensm.conf"), "sm_priority 99\n").unwrap();
    let e = import::run(&o).unwrap_err().to_string();
    assert!(e.starts_with("E_IMPORT_CONF") && e.contains(":1:"), "{e}");
    assert!(!dir.join("etc").exists() && !dir.join("data").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

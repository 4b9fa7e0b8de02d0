//! The agent against temporary directories laid out like the kernel's sysfs and cgroup v2
//! trees: limits written and cleared exactly as the kernel documentation's examples read,
//! rdma.current parsed, a missing device / malformed file / missing controller refused with
//! nothing written, P_Key drift reported, several tenants refused.

use fabric::Guid;
use partitions::tenants::RdmaLimit;
use sm_agent::reconcile::{Assignment, Config, Level, PortIntent, reconcile};
use sm_agent::{Roots, sysfs};
use std::fs;
use std::path::PathBuf;

/// A temporary tree, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(name: &str) -> Tree {
        let p = std::env::temp_dir().join(format!("sm-agent-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        Tree(p)
    }
    fn roots(&self) -> Roots {
        Roots {
            sysfs: self.0.join("sys"),
            cgroup: self.0.join("sys/fs/cgroup"),
        }
    }
    fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.0.join(rel)).unwrap()
    }
    /// An IB port: GID 0 with `guid`, link layer, P_Key entries (padded with 0x0000 to 8).
    fn port(&self, dev: &str, port: u8, guid: u64, pkeys: &[u16], link: &str) {
        let base = format!("sys/class/infiniband/{dev}/ports/{port}");
        let g = guid.to_be_bytes();
        let gid = format!(
            "fe80:0000:0000:0000:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}\n",
            g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]
        );
        self.write(&format!("{base}/gids/0"), &gid);
        self.write(&format!("{base}/link_layer"), &format!("{link}\n"));
        for i in 0..8 {
            let k = pkeys.get(i).copied().unwrap_or(0);
            self.write(&format!("{base}/pkeys/{i}"), &format!("0x{k:04x}\n"));
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const MAX: &str = "sys/fs/cgroup/tenants/red/rdma.max";
const CUR: &str = "sys/fs/cgroup/tenants/red/rdma.current";

/// Host with mlx4_0 port 1 (GUID 0x0002c90300001235) and ocrdma1 port 1 (Ethernet), the
/// tenant cgroup with an empty rdma.max and a usage file.
fn host(name: &str) -> Tree {
    let t = Tree::new(name);
    t.port(
        "mlx4_0",
        1,
        0x0002_c903_0000_1235,
        &[0x7fff, 0x8101, 0x0200],
        "InfiniBand",
    );
    t.port("ocrdma1", 1, 0x0002_c903_0000_9999, &[0xffff], "Ethernet");
    t.write(MAX, "");
    t.write(
        CUR,
        "mlx4_0 hca_handle=1 hca_object=20\nocrdma1 hca_handle=1 hca_object=23\n",
    );
    t
}

fn cfg(t: &Tree) -> Config {
    Config {
        roots: t.roots(),
        cgroup_path: "tenants/{tenant}".into(),
    }
}

fn limit(dev: &str, h: Option<u32>, o: Option<u32>) -> RdmaLimit {
    RdmaLimit {
        device: dev.into(),
        hca_handle: h,
        hca_object: o,
    }
}

fn assignment(limits: Vec<RdmaLimit>, pkeys: &[u16]) -> Assignment {
    Assignment {
        tenant: "red".into(),
        limits,
        ports: vec![PortIntent {
            guid: Guid(0x0002_c903_0000_1235),
            tenant: "red".into(),
            pkeys: pkeys.to_vec(),
            known: true,
        }],
        tenants_version: 3,
    }
}

fn ports(t: &Tree) -> Vec<sysfs::HostPort> {
    sysfs::host_ports(&t.roots()).unwrap()
}

fn codes(r: &sm_agent::reconcile::Report) -> Vec<String> {
    r.log_lines()
        .into_iter()
        .map(|(_, l)| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

const INTENT: &[u16] = &[0x0200, 0x7fff, 0x8101];

#[test]
fn writes_limits_as_the_kernel_documentation_reads_then_leaves_them() {
    let t = host("write");
    let a = assignment(
        vec![
            limit("mlx4_0", Some(2), Some(2000)),
            limit("ocrdma1", Some(3), None),
        ],
        INTENT,
    );
    let r = reconcile(&cfg(&t), &ports(&t), &a);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // Exactly the documentation's "cat rdma.max" output.
    assert_eq!(
        t.read(MAX),
        "mlx4_0 hca_handle=2 hca_object=2000\nocrdma1 hca_handle=3 hca_object=max\n"
    );
    assert_eq!(r.applied.as_ref().unwrap().written.len(), 2);
    assert!(codes(&r).contains(&"AGENT-I002".to_string()));
    // Usage parsed and matched with the limits.
    assert_eq!(r.usage.len(), 2);
    assert_eq!(r.usage[0].usage.hca_object, 20);
    assert_eq!(r.usage[0].hca_object_max, Some(2000));
    assert!(r.drift.is_empty(), "{:?}", r.drift);
    // The next cycle finds them in place and writes nothing.
    let r = reconcile(&cfg(&t), &ports(&t), &a);
    assert!(r.applied.as_ref().unwrap().written.is_empty());
    assert!(codes(&r).contains(&"AGENT-I001".to_string()));
}

#[test]
fn removing_limits_writes_max_for_both_keys() {
    let t = host("clear");
    t.write(
        MAX,
        "mlx4_0 hca_handle=2 hca_object=2000\nocrdma1 hca_handle=3 hca_object=max\n",
    );
    // ocrdma1 stays limited, mlx4_0's limit goes.
    let r = reconcile(
        &cfg(&t),
        &ports(&t),
        &assignment(vec![limit("ocrdma1", Some(3), None)], INTENT),
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(
        t.read(MAX),
        "ocrdma1 hca_handle=3 hca_object=max\nmlx4_0 hca_handle=max hca_object=max\n"
    );
    // No limit at all: the documentation's "Delete resource limit" line for each device.
    t.write(MAX, "mlx4_0 hca_handle=2 hca_object=2000\n");
    let r = reconcile(&cfg(&t), &ports(&t), &assignment(vec![], INTENT));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(t.read(MAX), "mlx4_0 hca_handle=max hca_object=max\n");
    // A device already unlimited needs nothing.
    t.write(MAX, "mlx4_0 hca_handle=max hca_object=max\n");
    let r = reconcile(&cfg(&t), &ports(&t), &assignment(vec![], INTENT));
    assert!(r.applied.unwrap().written.is_empty());
}

#[test]
fn missing_device_is_an_error_and_nothing_is_written() {
    let t = host("nodev");
    let before = "mlx4_0 hca_handle=5 hca_object=max\n";
    t.write(MAX, before);
    let a = assignment(
        vec![
            limit("mlx4_0", Some(2), Some(2000)),
            limit("mlx5_9", Some(1), None),
        ],
        INTENT,
    );
    let r = reconcile(&cfg(&t), &ports(&t), &a);
    assert_eq!(t.read(MAX), before, "no partial write");
    assert!(r.applied.is_none());
    assert!(r.errors[0].starts_with("AGENT-E002"), "{:?}", r.errors);
    assert!(r.errors[0].contains("mlx5_9"));
}

#[test]
fn malformed_rdma_max_is_an_error_and_nothing_is_written() {
    for bad in [
        "mlx4_0 hca_handle=two hca_object=max\n",
        "mlx4_0 hca_handle=1 hca_handle=2\n",
        "mlx4_0 qp=4\n",
        "mlx4_0 hca_handle=1\nmlx4_0 hca_handle=2\n",
    ] {
        let t = host("badmax");
        t.write(MAX, bad);
        let r = reconcile(
            &cfg(&t),
            &ports(&t),
            &assignment(vec![limit("mlx4_0", Some(2), Some(2000))], INTENT),
        );
        assert_eq!(t.read(MAX), bad, "no write over a malformed file");
        assert!(
            r.errors[0].starts_with("AGENT-E003"),
            "{bad:?}: {:?}",
            r.errors
        );
        assert!(r.errors[0].contains("line"), "{:?}", r.errors);
    }
}

#[test]
fn missing_rdma_max_means_no_controller_and_is_not_created() {
    let t = host("nomax");
    fs::remove_file(t.0.join(MAX)).unwrap();
    let r = reconcile(
        &cfg(&t),
        &ports(&t),
        &assignment(vec![limit("mlx4_0", Some(2), None)], INTENT),
    );
    assert!(r.errors[0].starts_with("AGENT-E004"), "{:?}", r.errors);
    assert!(!t.0.join(MAX).exists());
}

#[test]
fn rdma_current_parsing_and_near_limit_warning() {
    let t = host("usage");
    t.write(CUR, "mlx4_0 hca_handle=2 hca_object=20\n");
    let r = reconcile(
        &cfg(&t),
        &ports(&t),
        &assignment(vec![limit("mlx4_0", Some(2), Some(2000))], INTENT),
    );
    let lines = r.log_lines();
    assert!(
        lines.iter().any(|(l, s)| *l == Level::Warn
            && s.starts_with("AGENT-W001")
            && s.contains("hca_handle=2/2")),
        "{lines:?}"
    );
    for bad in [
        "mlx4_0 hca_handle=1\n",
        "mlx4_0 hca_handle=max hca_object=1\n",
        "mlx4_0 hca_handle=1 hca_object=2 extra\n",
        "hca_handle=1 hca_object=2\n",
    ] {
        t.write(CUR, bad);
        let r = reconcile(
            &cfg(&t),
            &ports(&t),
            &assignment(vec![limit("mlx4_0", Some(2), Some(2000))], INTENT),
        );
        assert!(
            r.errors
                .iter()
                .any(|e| e.starts_with("AGENT-E003") && e.contains("rdma.current")),
            "{bad:?}: {:?}",
            r.errors
        );
    }
}

#[test]
fn pkey_drift_is_reported_and_a_widening_one_is_an_error() {
    let t = host("drift");
    // The host holds 0xffff (full Default) where limited 0x7fff is intended, and lacks 0x0200.
    t.port(
        "mlx4_0",
        1,
        0x0002_c903_0000_1235,
        &[0xffff, 0x8101],
        "InfiniBand",
    );
    let r = reconcile(&cfg(&t), &ports(&t), &assignment(vec![], INTENT));
    assert_eq!(r.drift.len(), 1, "{:?}", r.drift);
    let d = &r.drift[0];
    assert_eq!(d.device, "mlx4_0");
    assert_eq!(
        d.missing.iter().map(|k| k.0).collect::<Vec<_>>(),
        vec![0x0200, 0x7fff]
    );
    assert_eq!(
        d.extra.iter().map(|k| k.0).collect::<Vec<_>>(),
        vec![0xffff]
    );
    assert!(d.widens());
    let lines = r.log_lines();
    assert!(
        lines
            .iter()
            .any(|(l, s)| *l == Level::Error && s.starts_with("AGENT-W002")),
        "{lines:?}"
    );
    // A port the SM does not know has no intent to compare with.
    let mut a = assignment(vec![], INTENT);
    a.ports[0].known = false;
    assert!(reconcile(&cfg(&t), &ports(&t), &a).drift.is_empty());
}

#[test]
fn malformed_pkey_entry_is_a_clear_error() {
    let t = host("badpkey");
    t.write("sys/class/infiniband/mlx4_0/ports/1/pkeys/3", "ffff\n");
    let r = reconcile(&cfg(&t), &ports(&t), &assignment(vec![], INTENT));
    assert!(
        r.errors
            .iter()
            .any(|e| e.starts_with("AGENT-E003") && e.contains("pkeys/3")),
        "{:?}",
        r.errors
    );
}

#[test]
fn host_ports_come_from_gid0_and_skip_ethernet() {
    let t = host("ports");
    let p = ports(&t);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].guid, Guid(0x0002_c903_0000_1235));
    assert_eq!((p[0].device.as_str(), p[0].port), ("mlx4_0", 1));
    t.write("sys/class/infiniband/mlx4_0/ports/1/gids/0", "fe80::2\n");
    assert_eq!(
        sysfs::host_ports(&t.roots()).unwrap_err().code(),
        "AGENT-E003"
    );
}

#[test]
fn ports_of_two_tenants_are_refused_with_nothing_written() {
    let t = host("split");
    let mut a = assignment(vec![limit("mlx4_0", Some(2), None)], INTENT);
    a.ports.push(PortIntent {
        guid: Guid(0x99),
        tenant: "blue".into(),
        pkeys: vec![],
        known: true,
    });
    let r = reconcile(&cfg(&t), &ports(&t), &a);
    assert!(r.errors[0].starts_with("AGENT-E006"), "{:?}", r.errors);
    assert_eq!(t.read(MAX), "");
}

#[test]
fn no_tenant_means_no_cgroup_write() {
    let t = host("none");
    let mut a = assignment(vec![], &[0xffff]);
    a.tenant.clear();
    a.ports[0].tenant.clear();
    let r = reconcile(&cfg(&t), &ports(&t), &a);
    assert!(r.applied.is_none() && r.usage.is_empty());
    // The host view (0x7fff, 0x8101, 0x0200) differs from 0xffff alone.
    assert_eq!(r.drift.len(), 1);
}

/// `text` followed by blank lines up to one byte over the agent's read limit.
fn oversized(text: &str) -> String {
    let mut s = text.to_string();
    s.push_str(&"\n".repeat(sm_agent::MAX_KERNEL_FILE + 1 - text.len()));
    s
}

#[test]
fn an_oversized_rdma_max_is_refused_and_nothing_is_written() {
    // Blank lines parse (the kernel never writes them, a wrong path might hold them): past
    // MAX_KERNEL_FILE the file is not read further, not parsed, and not written.
    let t = host("bigmax");
    let big = oversized("");
    t.write(MAX, &big);
    let r = reconcile(
        &cfg(&t),
        &ports(&t),
        &assignment(vec![limit("mlx4_0", Some(2), Some(2000))], INTENT),
    );
    assert!(t.read(MAX) == big, "rdma.max was written");
    assert!(
        r.errors
            .iter()
            .any(|e| e.starts_with("AGENT-E007") && e.contains("rdma.max")),
        "{:?}",
        r.errors
    );
    // At the limit it is read.
    t.write(MAX, &"\n".repeat(sm_agent::MAX_KERNEL_FILE));
    let r = reconcile(
        &cfg(&t),
        &ports(&t),
        &assignment(vec![limit("mlx4_0", Some(2), Some(2000))], INTENT),
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(t.read(MAX), "mlx4_0 hca_handle=2 hca_object=2000\n");
}

#[test]
fn oversized_rdma_current_and_sysfs_files_are_refused() {
    let t = host("bigcur");
    t.write(CUR, &oversized("mlx4_0 hca_handle=1 hca_object=20\n"));
    let r = reconcile(
        &cfg(&t),
        &ports(&t),
        &assignment(vec![limit("mlx4_0", Some(2), Some(2000))], INTENT),
    );
    assert!(
        r.errors
            .iter()
            .any(|e| e.starts_with("AGENT-E007") && e.contains("rdma.current")),
        "{:?}",
        r.errors
    );
    // A P_Key entry and a GID file.
    let t = host("bigsys");
    t.write(
        "sys/class/infiniband/mlx4_0/ports/1/pkeys/3",
        &oversized("0xffff\n"),
    );
    let r = reconcile(&cfg(&t), &ports(&t), &assignment(vec![], INTENT));
    assert!(
        r.errors
            .iter()
            .any(|e| e.starts_with("AGENT-E007") && e.contains("pkeys/3")),
        "{:?}",
        r.errors
    );
    t.write(
        "sys/class/infiniband/mlx4_0/ports/1/gids/0",
        &oversized("fe80:0000:0000:0000:0002:c903:0000:1235\n"),
    );
    assert_eq!(
        sysfs::host_ports(&t.roots()).unwrap_err().code(),
        "AGENT-E007"
    );
}

#[test]
fn an_endless_kernel_file_costs_the_limit_not_the_memory() {
    // /dev/zero never ends: the read stops one byte past MAX_KERNEL_FILE (today's
    // read_to_string grew without bound on such a path).
    let e = sm_agent::read_kernel_file(std::path::Path::new("/dev/zero")).unwrap_err();
    assert_eq!(e.code(), "AGENT-E007", "{e}");
}

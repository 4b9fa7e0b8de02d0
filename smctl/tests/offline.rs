//! The smctl binary's offline commands (no cluster): topology counts, routing with the
//! thread executor (same tables for any worker count, a fallback chain that reports the
//! refusal), a drawing from a generator spec, shell completion, and the exit code of a
//! cluster command without a reachable server. The cluster commands are exercised against
//! process clusters in sm-node's tests (`smctl_sweep`, `tenants`, `dashboard`, ...).

use std::process::{Command, Output};

fn smctl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smctl"))
        .args(args)
        .env_remove("SMCTL_SERVER")
        .output()
        .expect("smctl runs")
}

fn stdout_ok(args: &[&str]) -> String {
    let out = smctl(args);
    assert!(
        out.status.success(),
        "smctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn topo_info_counts_a_generated_fat_tree() {
    let text = stdout_ok(&["topo", "info", "ft2:4"]);
    // ft2:4: 2 spines + 4 leaves, 2 hosts per leaf.
    assert!(text.contains("switches:        6"), "{text}");
    assert!(text.contains("hosts (CAs):     8"), "{text}");
}

#[test]
fn routing_is_the_same_for_any_worker_count_and_falls_back_through_the_chain() {
    let dump = |workers: &str| {
        let f = std::env::temp_dir().join(format!(
            "smctl-offline-{}-{workers}.lfts",
            std::process::id()
        ));
        let f_str = f.to_str().expect("UTF-8 temp path").to_string();
        stdout_ok(&[
            "route",
            "--topology",
            "ft2:8",
            "--engine",
            "ftree",
            "--workers",
            workers,
            "--dump-lfts",
            &f_str,
            "--no-metrics",
        ]);
        let text = std::fs::read_to_string(&f).expect("dump written");
        let _ = std::fs::remove_file(&f);
        text
    };
    let one = dump("1");
    assert!(!one.is_empty());
    assert_eq!(one, dump("3"), "tables differ between 1 and 3 workers");

    // ftree refuses a torus; updn takes it and the refusal is reported.
    let v: serde_json::Value = serde_json::from_str(&stdout_ok(&[
        "route",
        "--topology",
        "torus:3x3x2",
        "--engine",
        "ftree,updn",
        "--workers",
        "2",
        "--json",
    ]))
    .expect("JSON");
    assert_eq!(v["engine"], "updn", "{v}");
    assert_eq!(v["refusals"][0]["engine"], "ftree", "{v}");
}

#[test]
fn draw_fabric_offline_from_a_spec() {
    let dot = stdout_ok(&["draw", "fabric", "--topology", "ft2:4", "--format", "dot"]);
    assert!(
        dot.starts_with("digraph") || dot.starts_with("graph"),
        "{dot}"
    );
}

#[test]
fn completion_script_names_the_subcommands() {
    let text = stdout_ok(&["completion", "bash"]);
    assert!(text.contains("smctl") && text.contains("partitions"));
}

#[test]
fn a_cluster_command_without_a_server_fails_with_a_usage_or_unavailable_code() {
    let out = smctl(&["cluster"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("smctl: error"), "{err}");
}

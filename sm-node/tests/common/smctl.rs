//! The `smctl` binary for the tests that drive a cluster with it.
//!
//! smctl is its own package, and Cargo sets `CARGO_BIN_EXE_<name>` only for the binaries of
//! the package under test, nor does `cargo test` build other packages' binaries unless they
//! have integration tests of their own (and `cargo test -p sm-node` never does). So [`bin`]
//! asks Cargo itself: `cargo build -p smctl --bin smctl` into this test's target directory
//! and profile, once per test process (a no-op when it is fresh; the first time after a
//! change it compiles smctl), and returns `target/<profile>/smctl` — never a stale binary.
//! `SMCTL_BIN` names a prebuilt binary instead.
//!
//! The nested cargo runs without the variables Cargo sets for a running test
//! (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...): build scripts such as ring's track some of
//! them, and seeing them change would rebuild the TLS stack under both builds every time. It
//! keeps the user's settings (`CARGO_BUILD_JOBS`, `CARGO_HOME`, `RUSTFLAGS`, ...). Smctl's
//! dependencies are resolved for smctl alone, so the first build in a target directory
//! compiles them once more with smctl's own feature set.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Path of a fresh smctl binary (built on first use).
pub fn bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(build)
}

fn build() -> PathBuf {
    if let Some(p) = std::env::var_os("SMCTL_BIN") {
        return PathBuf::from(p);
    }
    // This test runs as target/[<triple>/]<profile>/deps/<name>-<hash>.
    let exe = std::env::current_exe().expect("path of the test executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(p) => p,
        None => panic!("no profile directory above {}", exe.display()),
    };
    let above = profile_dir.parent().expect("a target directory");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "--package", "smctl", "--bin", "smctl"])
        .args(["--profile", profile])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(set_by_cargo_for_this_test) {
            cmd.env_remove(&k);
        }
    }
    // The target directory is the parent of Cargo's tmp directory for integration tests
    // (`CARGO_TARGET_TMPDIR`, target/tmp with or without --target); a fresh target directory
    // has no CACHEDIR.TAG to tell it by.
    let target_tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    if target_tmp.parent() == Some(above) {
        cmd.arg("--target-dir").arg(above);
    } else {
        // Built with --target: target/<triple>/<profile>.
        let triple = above.file_name().expect("a target triple directory");
        let target_dir = above.parent().expect("a target directory");
        cmd.arg("--target")
            .arg(triple)
            .arg("--target-dir")
            .arg(target_dir);
    }
    let out = cmd.output().expect("running cargo to build smctl");
    assert!(
        out.status.success(),
        "cargo build -p smctl failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = profile_dir.join(format!("smctl{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "cargo built smctl but {} is missing",
        bin.display()
    );
    bin
}

/// Variables Cargo sets in the environment of a test it runs (not user configuration).
fn set_by_cargo_for_this_test(name: &str) -> bool {
    const EXACT: [&str; 9] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    const PREFIXES: [&str; 4] = [
        "CARGO_PKG_",
        "CARGO_BIN_EXE_",
        "CARGO_CFG_",
        "CARGO_FEATURE_",
    ];
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

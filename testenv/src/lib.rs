//! `testenv` — how Quorum SM's tests find what they need outside the workspace, in one
//! place: the InfiniBand tools we prove against (ibsim, OpenSM, infiniband-diags), the files
//! they bring (umad2sim, ibsim's example fabrics) and headless Chromium for the dashboard.
//!
//! * **One lookup**: [`find_tool`] searches `PATH`, then `/usr/sbin` and `/sbin` (OpenSM and
//!   the diags live in `/usr/sbin`, which a non-root `PATH` often lacks). Tests run the path
//!   it returns, never a bare name. `scripts/tools.sh` is the same lookup for the scripts
//!   (a test of this crate checks that both agree, tool by tool).
//! * **One table**: [`TOOLS`] and [`FILES`] name the Debian package of everything tests use;
//!   `scripts/tools.sh` carries the same table (checked by the same test) and
//!   `scripts/test.sh` installs from it.
//! * **One rule for what is missing** ([`skip`], and [`require`] / [`require_files`] on top):
//!   with `CI=true` (or `CI=1`) in the environment a missing prerequisite *fails* the test,
//!   naming the tool and its package (`TESTENV-E001`). Otherwise the test is reported as
//!   skipped in a way a run shows: `SKIPPED: <test>: <tool> not installed (Debian package
//!   <pkg>)` is written straight to the process's stderr (past libtest's output capture, so
//!   it appears under a passing test too) and appended to the file named by
//!   `QSM_SKIP_LOG` when set, which `scripts/test.sh` counts and lists at the end.
//!
//! What is not built: stable Rust cannot mark a running test as ignored, so a skipped test
//! still counts as passed in cargo's own summary line; the `SKIPPED:` line and test.sh's
//! summary are what tell it apart.
//!
//! This crate only looks at the file system and the environment; it starts no process.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable that makes missing prerequisites failures (`true` or `1`).
pub const CI_ENV: &str = "CI";
/// The environment variable naming a file every skip is appended to (`test<TAB>reason`).
pub const SKIP_LOG_ENV: &str = "QSM_SKIP_LOG";
/// Searched after `PATH`, in this order.
pub const EXTRA_DIRS: [&str; 2] = ["/usr/sbin", "/sbin"];
/// umad2sim as Debian's libumad2sim0 installs it (ibsim's `LD_PRELOAD` library).
pub const UMAD2SIM_LIB: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
/// ibsim's example fabrics as Debian's ibsim-utils installs them.
pub const NET_EXAMPLES: &str = "/usr/share/doc/ibsim-utils/net-examples";

/// Every external program a test or script of the workspace runs, with the Debian package
/// that installs it. `scripts/tools.sh` holds the same table (`QSM_TOOLS`).
pub const TOOLS: &[(&str, &str)] = &[
    ("ibsim", "ibsim-utils"),
    ("opensm", "opensm"),
    ("osmtest", "opensm"),
    ("ibnetdiscover", "infiniband-diags"),
    ("ibroute", "infiniband-diags"),
    ("ibswitches", "infiniband-diags"),
    ("perfquery", "infiniband-diags"),
    ("saquery", "infiniband-diags"),
    ("sminfo", "infiniband-diags"),
    ("smpdump", "infiniband-diags"),
    ("smpquery", "infiniband-diags"),
    ("timeout", "coreutils"),
    ("chromium", "chromium"),
    ("chromedriver", "chromium-driver"),
];

/// Every external file (or directory) tests read, with its Debian package. `scripts/tools.sh`
/// holds the same table (`QSM_FILES`).
pub const FILES: &[(&str, &str)] = &[
    (UMAD2SIM_LIB, "libumad2sim0"),
    (NET_EXAMPLES, "ibsim-utils"),
];

/// The Debian package of tool `name` (None for a name not in [`TOOLS`]).
pub fn package_of(name: &str) -> Option<&'static str> {
    TOOLS.iter().find(|(t, _)| *t == name).map(|(_, p)| *p)
}

/// The Debian package of file `path`: the entry of [`FILES`] it is or lies under.
pub fn package_of_file(path: &str) -> Option<&'static str> {
    FILES
        .iter()
        .find(|(f, _)| Path::new(path).starts_with(f))
        .map(|(_, p)| *p)
}

/// True when missing prerequisites fail tests (`CI` is `true` or `1`, any case).
pub fn strict() -> bool {
    strict_value(std::env::var(CI_ENV).ok().as_deref())
}

fn strict_value(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// The full path of program `name`: a name with a `/` is taken as a path; otherwise the
/// first executable regular file `DIR/name` for DIR in `PATH`, then [`EXTRA_DIRS`].
pub fn find_tool(name: &str) -> Option<PathBuf> {
    find_in(
        name,
        std::env::var_os("PATH").as_deref(),
        &EXTRA_DIRS.map(Path::new),
    )
}

fn find_in(name: &str, path: Option<&OsStr>, extra: &[&Path]) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    let from_path: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    from_path
        .into_iter()
        // An empty PATH entry means the working directory to a shell; tests never rely
        // on it, and scripts/tools.sh skips it too.
        .filter(|d| !d.as_os_str().is_empty())
        .chain(extra.iter().map(|d| d.to_path_buf()))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The tools `names` for test `test`, by full path, in order; when one is missing, reports
/// it through [`skip`] (which fails the test under `CI=true`) and returns None: the test
/// then returns.
pub fn require<const N: usize>(test: &str, names: [&str; N]) -> Option<[PathBuf; N]> {
    let mut found = Vec::with_capacity(N);
    for name in names {
        match find_tool(name) {
            Some(p) => found.push(p),
            None => {
                skip(
                    test,
                    &format!("{name} not installed"),
                    &remedy(package_of(name)),
                );
                return None;
            }
        }
    }
    <[PathBuf; N]>::try_from(found).ok()
}

/// True when every file of `paths` exists; otherwise reports the first missing one through
/// [`skip`] (a failure under `CI=true`) and returns false.
pub fn require_files(test: &str, paths: &[&str]) -> bool {
    for p in paths {
        if !Path::new(p).exists() {
            skip(test, &format!("{p} missing"), &remedy(package_of_file(p)));
            return false;
        }
    }
    true
}

fn remedy(package: Option<&str>) -> String {
    match package {
        Some(p) => format!("Debian package {p}; scripts/test.sh installs it"),
        None => "not in testenv's package table: add it to TOOLS or FILES".into(),
    }
}

/// The one way a test reports a prerequisite it lacks: `what` is missing (e.g. "opensm not
/// installed"), `remedy` says how to get it. Under `CI=true` this panics (the test fails)
/// with `TESTENV-E001`; otherwise it writes `SKIPPED: <test>: <what> (<remedy>)` to stderr
/// (not captured by libtest) and appends `<test>\t<what>` to `$QSM_SKIP_LOG`; the caller
/// then returns.
pub fn skip(test: &str, what: &str, remedy: &str) {
    let log = std::env::var_os(SKIP_LOG_ENV).map(PathBuf::from);
    let mut stderr = std::io::stderr();
    if let Err(msg) = report(test, what, remedy, strict(), log.as_deref(), &mut stderr) {
        panic!("{msg}");
    }
}

/// [`skip`] with its inputs given (`out`: the process's stderr): Err(the failure message)
/// when strict.
fn report(
    test: &str,
    what: &str,
    remedy: &str,
    strict: bool,
    log: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), String> {
    if strict {
        return Err(format!(
            "TESTENV-E001 {test}: {what} ({remedy}); with {CI_ENV}=true a missing \
             prerequisite fails the test"
        ));
    }
    // Straight to fd 2: libtest captures `eprintln!`, not writes to `io::stderr()`, so the
    // line shows under a test that "passes".
    let line = format!("SKIPPED: {test}: {what} ({remedy})\n");
    let _ = out.write_all(line.as_bytes());
    if let Some(path) = log {
        // One append of one short line (O_APPEND): parallel tests do not interleave.
        let entry = format!("{test}\t{what}\n");
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(entry.as_bytes()));
    }
    Ok(())
}

pub mod corpus;

#[cfg(test)]
mod tests;

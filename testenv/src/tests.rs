use super::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("testenv-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn touch(path: &Path, mode: u32) {
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn tools_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/tools.sh")
}

/// Runs `body` in bash after sourcing scripts/tools.sh, with PATH set to `path`.
fn bash(path: &str, body: &str) -> (bool, String) {
    let out = Command::new("/bin/bash")
        .arg("-c")
        .arg(format!(". '{}' && {body}", tools_sh().display()))
        .env("PATH", path)
        .output()
        .expect("bash runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
    )
}

#[test]
fn path_first_then_the_extra_directories_executables_only() {
    let d = scratch("order");
    let (a, b, x) = (d.join("a"), d.join("b"), d.join("x"));
    for p in [&a, &b, &x] {
        std::fs::create_dir_all(p).unwrap();
    }
    touch(&a.join("tool"), 0o644); // not executable: passed over
    touch(&b.join("tool"), 0o755);
    touch(&x.join("tool"), 0o755);
    touch(&x.join("only-extra"), 0o755);
    std::fs::create_dir_all(b.join("dir-tool")).unwrap(); // a directory is no program
    let path = std::env::join_paths([&a, &b]).unwrap();
    let extra = [x.as_path()];
    assert_eq!(find_in("tool", Some(&path), &extra), Some(b.join("tool")));
    assert_eq!(
        find_in("only-extra", Some(&path), &extra),
        Some(x.join("only-extra"))
    );
    assert_eq!(
        find_in("only-extra", None, &extra),
        Some(x.join("only-extra"))
    );
    assert_eq!(find_in("dir-tool", Some(&path), &extra), None);
    assert_eq!(find_in("absent", Some(&path), &extra), None);
    assert_eq!(find_in("", Some(&path), &extra), None);
    // A name with a slash is a path.
    let full = b.join("tool");
    assert_eq!(
        find_in(full.to_str().unwrap(), None, &[]),
        Some(full.clone())
    );
    assert_eq!(find_in(a.join("tool").to_str().unwrap(), None, &[]), None);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn ci_true_or_1_is_strict() {
    for (v, want) in [
        (None, false),
        (Some(""), false),
        (Some("false"), false),
        (Some("0"), false),
        (Some("true"), true),
        (Some("TRUE"), true),
        (Some("1"), true),
    ] {
        assert_eq!(strict_value(v), want, "{v:?}");
    }
}

#[test]
fn strict_fails_naming_the_tool_and_package_and_writes_nothing() {
    let d = scratch("strict");
    let log = d.join("skips");
    let mut out = Vec::new();
    let e = report(
        "t1",
        "opensm not installed",
        &remedy(package_of("opensm")),
        true,
        Some(&log),
        &mut out,
    )
    .unwrap_err();
    assert!(
        e.starts_with("TESTENV-E001 t1: opensm not installed"),
        "{e}"
    );
    assert!(e.contains("Debian package opensm"), "{e}");
    assert!(!log.exists() && out.is_empty(), "a failure is not a skip");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn outside_ci_a_skip_is_logged_once_per_call() {
    let d = scratch("log");
    let log = d.join("skips");
    let mut out = Vec::new();
    report(
        "t1",
        "ibsim not installed",
        "r1",
        false,
        Some(&log),
        &mut out,
    )
    .unwrap();
    report(
        "t2",
        "saquery not installed",
        "r2",
        false,
        Some(&log),
        &mut out,
    )
    .unwrap();
    report("t3", "chromium not installed", "r3", false, None, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "SKIPPED: t1: ibsim not installed (r1)\nSKIPPED: t2: saquery not installed (r2)\n\
         SKIPPED: t3: chromium not installed (r3)\n"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "t1\tibsim not installed\nt2\tsaquery not installed\n"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn packages_of_tools_and_files() {
    assert_eq!(package_of("saquery"), Some("infiniband-diags"));
    assert_eq!(package_of("osmtest"), Some("opensm"));
    assert_eq!(package_of("nope"), None);
    assert_eq!(package_of_file(UMAD2SIM_LIB), Some("libumad2sim0"));
    assert_eq!(
        package_of_file(&format!("{NET_EXAMPLES}/net.2sw2path4hca")),
        Some("ibsim-utils")
    );
    assert_eq!(package_of_file("/etc/passwd"), None);
    assert!(remedy(None).contains("TOOLS"));
}

#[test]
fn require_returns_full_paths_in_order() {
    // `sh` is on every machine this runs on; a made-up name never is.
    let [sh] = require("require_returns_full_paths_in_order", ["sh"]).expect("sh");
    assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
    assert!(require_files("require_returns_full_paths_in_order", &["/"]));
}

/// scripts/tools.sh is the same table and the same lookup.
#[test]
fn the_shell_twin_has_the_same_table() {
    let (ok, tools) = bash("/usr/bin:/bin", "printf '%s\\n' $QSM_TOOLS");
    assert!(ok);
    let rust: Vec<String> = TOOLS.iter().map(|(t, p)| format!("{t}={p}")).collect();
    assert_eq!(tools.lines().collect::<Vec<_>>(), rust);
    let (ok, files) = bash("/usr/bin:/bin", "printf '%s\\n' $QSM_FILES");
    assert!(ok);
    let rust: Vec<String> = FILES.iter().map(|(f, p)| format!("{f}={p}")).collect();
    assert_eq!(files.lines().collect::<Vec<_>>(), rust);
    for (t, p) in TOOLS {
        assert_eq!(
            bash("/usr/bin:/bin", &format!("qsm_tool_package {t}")).1,
            *p
        );
    }
}

#[test]
fn the_shell_twin_finds_the_same_paths() {
    let d = scratch("twin");
    let (a, b) = (d.join("a"), d.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    touch(&a.join("fake-tool"), 0o644);
    touch(&b.join("fake-tool"), 0o755);
    // bash itself needs /usr/bin and /bin for nothing here: tools.sh uses builtins only.
    let path = format!("{}::{}:/usr/bin:/bin", a.display(), b.display());
    let names: Vec<&str> = TOOLS
        .iter()
        .map(|(t, _)| *t)
        .chain(["fake-tool", "no-such-tool-anywhere"])
        .collect();
    for name in names {
        let rust = find_in(name, Some(OsStr::new(&path)), &EXTRA_DIRS.map(Path::new));
        let (ok, shell) = bash(&path, &format!("qsm_find_tool {name}"));
        assert_eq!(ok, rust.is_some(), "{name}");
        assert_eq!(
            shell,
            rust.map(|p| p.display().to_string()).unwrap_or_default(),
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

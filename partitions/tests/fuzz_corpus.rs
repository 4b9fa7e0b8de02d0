//! The fuzz corpus as regression tests: every file under `partitions/fuzz/corpus/*/` (seeds
//! and any input a fuzzing run added and someone committed) goes through the `parse` fuzz
//! target's own checks (`fuzz/fuzz_targets/parse_check.rs`, the same module the target runs),
//! so a parser or planner change that panics on a known input fails `cargo test`, without
//! cargo-fuzz or a nightly toolchain.

#[path = "../fuzz/fuzz_targets/parse_check.rs"]
mod parse_check;

use std::path::{Path, PathBuf};

/// libFuzzer's default `-max_len` is 4096; a corpus file far beyond it is a mistake.
const MAX_INPUT: u64 = 64 * 1024;

fn corpus_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for target in std::fs::read_dir(root).expect("fuzz/corpus exists") {
        let target = target.expect("corpus entry").path();
        if !target.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&target).expect("target corpus") {
            let f = f.expect("corpus file").path();
            if f.is_file() {
                files.push(f);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_corpus_input_passes_the_fuzz_target_checks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let files = corpus_files(&root);
    assert!(
        files.len() >= 6,
        "the committed seeds are gone from {}: {files:?}",
        root.display()
    );
    for f in &files {
        let len = std::fs::metadata(f).expect("corpus file").len();
        assert!(len <= MAX_INPUT, "{}: {len} bytes", f.display());
        let data = std::fs::read(f).expect("read corpus file");
        let r = std::panic::catch_unwind(|| parse_check::run(&data));
        assert!(
            r.is_ok(),
            "the fuzz target's checks fail on {}",
            f.display()
        );
    }
}

//! The fuzz corpora as regression tests: every file under `<crate>/fuzz/corpus/*/` (seeds and
//! any input a fuzzing run added and someone committed) goes through the fuzz target's own
//! checks, so a change that panics on a known input fails `cargo test`.

use std::path::{Path, PathBuf};

/// libFuzzer's default `-max_len` is 4096; a corpus file far beyond it is a mistake.
const MAX_INPUT: u64 = 64 * 1024;

/// The files of every target directory under `root`, sorted.
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

/// Feeds every corpus file under `root` to `check` (the fuzz target's checks); panics naming
/// the file whose check panicked, and when fewer than `at_least` files are there (the
/// committed seeds are gone).
pub fn replay(root: &Path, at_least: usize, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
    let files = corpus_files(root);
    assert!(
        files.len() >= at_least,
        "the committed seeds are gone from {}: {files:?}",
        root.display()
    );
    for f in &files {
        let len = std::fs::metadata(f).expect("corpus file").len();
        assert!(len <= MAX_INPUT, "{}: {len} bytes", f.display());
        let data = std::fs::read(f).expect("read corpus file");
        let r = std::panic::catch_unwind(|| check(&data));
        assert!(
            r.is_ok(),
            "the fuzz target's checks fail on {}",
            f.display()
        );
    }
}

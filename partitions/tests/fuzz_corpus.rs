//! The fuzz corpus as regression tests: every file under `partitions/fuzz/corpus/*/` (seeds
//! and any input a fuzzing run added and someone committed) goes through the `parse` fuzz
//! target's own checks (`fuzz/fuzz_targets/parse_check.rs`, the same module the target runs),
//! so a parser or planner change that panics on a known input fails `cargo test`, without
//! cargo-fuzz or a nightly toolchain.

#[path = "../fuzz/fuzz_targets/parse_check.rs"]
mod parse_check;

#[test]
fn every_corpus_input_passes_the_fuzz_target_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    testenv::corpus::replay(&root, 6, parse_check::run);
}

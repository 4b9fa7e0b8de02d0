//! The fuzz corpus as regression tests: every file under `mad/fuzz/corpus/*/` (seeds and any
//! input a fuzzing run added and someone committed) goes through the `mad_decode` fuzz
//! target's own checks (`fuzz/fuzz_targets/mad_decode_check.rs`, the same module the target
//! runs), so a decoder change that panics on a known input fails `cargo test`, without
//! cargo-fuzz or a nightly toolchain.

#[path = "../fuzz/fuzz_targets/mad_decode_check.rs"]
mod mad_decode_check;

#[test]
fn every_corpus_input_passes_the_fuzz_target_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    testenv::corpus::replay(&root, 4, mad_decode_check::run);
}

#[path = "../fuzz/fuzz_targets/perf_decode_check.rs"]
mod perf_decode_check;

#[test]
fn every_corpus_input_passes_the_perf_fuzz_target_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    testenv::corpus::replay(&root, 8, perf_decode_check::run);
}

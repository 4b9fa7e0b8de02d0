//! Fuzzes the partitions.conf parser, the semantics, the planner and the dump parser:
//! none may panic on any input, and every error position must lie inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod parse_check;

fuzz_target!(|data: &[u8]| parse_check::run(data));

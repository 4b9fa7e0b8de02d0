//! Fuzz target: the Performance Management decoders of the `mad` crate (PerfMad,
//! PortCounters, PortCountersExtended, PerfMgt ClassPortInfo) on arbitrary bytes. Decoding
//! must never panic; whatever decodes must re-encode to the input with reserved bits
//! cleared, and decode again to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod perf_decode_check;

fuzz_target!(|data: &[u8]| perf_decode_check::run(data));

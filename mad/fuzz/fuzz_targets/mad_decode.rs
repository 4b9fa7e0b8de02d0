//! Fuzz target: every decoder of the `mad` crate on arbitrary bytes. Decoding must never
//! panic; whatever decodes must re-encode to the input with reserved bits cleared, and
//! decode again to the same value. The DR step function runs on every DR SMP that decodes.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod mad_decode_check;

fuzz_target!(|data: &[u8]| mad_decode_check::run(data));

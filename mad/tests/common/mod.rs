// Shared by the test files: hex parsing for byte vectors written as text.

/// Parses whitespace-separated hex digits ("0101 0208 ..." as smpdump prints) into bytes.
#[allow(dead_code)]
pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| b.is_ascii_hexdigit())
        .map(|b| (b as char).to_digit(16).unwrap() as u8)
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect()
}

/// `hex` into a fixed array (panics on a length mismatch: tests only).
#[allow(dead_code)]
pub fn hex_arr<const N: usize>(s: &str) -> [u8; N] {
    let v = hex(s);
    assert_eq!(v.len(), N, "hex vector length");
    v.try_into().unwrap()
}

//! The one number reader of the crate, strict where OpenSM's `strtoul(s, NULL, 0)` is lenient.

/// Reads an unsigned number: `0x`/`0X` hex or decimal. A multi-digit decimal with a leading
/// zero is refused: OpenSM reads `010` as octal 8, which is never what an operator meant.
pub(crate) fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty number".to_string());
    }
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (t, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(format!("`{t}` is not a number (decimal or 0x hex)"));
    }
    if radix == 10 && digits.len() > 1 && digits.starts_with('0') {
        return Err(format!(
            "`{t}` has a leading zero (OpenSM would read it as octal); write it in decimal without the zero or in 0x hex"
        ));
    }
    u64::from_str_radix(digits, radix).map_err(|_| format!("`{t}` does not fit in 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::parse_u64;

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("0"), Ok(0));
        assert_eq!(parse_u64(" 15 "), Ok(15));
        assert_eq!(parse_u64("0x1F"), Ok(31));
        assert_eq!(parse_u64("0XfF"), Ok(255));
        assert!(parse_u64("010").is_err());
        assert!(parse_u64("0x").is_err());
        assert!(parse_u64("-1").is_err());
        assert!(parse_u64("1a").is_err());
        assert!(parse_u64("0x10000000000000000").is_err());
    }
}

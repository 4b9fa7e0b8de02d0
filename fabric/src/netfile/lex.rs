//! Line cursor and number syntax of the topology file format.

use super::error::{ParseError, ParseErrorKind};

/// A cursor over one line, tracking the byte offset for column reporting.
#[derive(Clone, Copy)]
pub(super) struct Cur<'a> {
    /// The whole line.
    pub(super) line: &'a str,
    /// 1-based line number.
    pub(super) lineno: u32,
    /// Byte offset of the cursor.
    pub(super) pos: usize,
}

impl<'a> Cur<'a> {
    pub(super) fn new(line: &'a str, lineno: u32, pos: usize) -> Cur<'a> {
        Cur { line, lineno, pos }
    }

    pub(super) fn rest(&self) -> &'a str {
        self.line.get(self.pos..).unwrap_or("")
    }

    pub(super) fn col_at(&self, pos: usize) -> u32 {
        let prefix = self.line.get(..pos).unwrap_or(self.line);
        u32::try_from(prefix.chars().count() + 1).unwrap_or(u32::MAX)
    }

    pub(super) fn err_at(&self, pos: usize, kind: ParseErrorKind) -> ParseError {
        ParseError {
            line: self.lineno,
            col: self.col_at(pos),
            kind,
        }
    }

    pub(super) fn err(&self, kind: ParseErrorKind) -> ParseError {
        self.err_at(self.pos, kind)
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.pos).copied()
    }

    pub(super) fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\x0b' | b'\x0c')) {
            self.pos += 1;
        }
    }

    pub(super) fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, b: u8, what: &'static str) -> Result<(), ParseError> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.err(ParseErrorKind::Expected(what)))
        }
    }

    /// A C `strtoull(.., 0)` number: `0x` hex, leading-0 octal, else decimal.
    pub(super) fn c_number(&mut self, what: &'static str) -> Result<u64, ParseError> {
        let start = self.pos;
        let (v, len) = c_number(self.rest()).map_err(|e| match e {
            NumError::Missing => self.err(ParseErrorKind::Expected(what)),
            NumError::Overflow(len) => self.err(ParseErrorKind::BadNumber(
                self.rest().get(..len).unwrap_or("").to_string(),
            )),
        })?;
        self.pos = start + len;
        Ok(v)
    }

    /// Plain hex digits (no prefix), as ibnetdiscover prints port GUIDs in parentheses.
    pub(super) fn hex(&mut self, what: &'static str) -> Result<u64, ParseError> {
        let rest = self.rest().as_bytes();
        let len = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if len == 0 {
            return Err(self.err(ParseErrorKind::Expected(what)));
        }
        let digits = &self.rest()[..len];
        let v = u64::from_str_radix(digits, 16)
            .map_err(|_| self.err(ParseErrorKind::BadNumber(digits.to_string())))?;
        self.pos += len;
        Ok(v)
    }

    /// Decimal digits.
    pub(super) fn decimal(&mut self, what: &'static str) -> Result<u64, ParseError> {
        let rest = self.rest().as_bytes();
        let len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return Err(self.err(ParseErrorKind::Expected(what)));
        }
        let digits = &self.rest()[..len];
        let v = digits
            .parse::<u64>()
            .map_err(|_| self.err(ParseErrorKind::BadNumber(digits.to_string())))?;
        self.pos += len;
        Ok(v)
    }

    /// A `"quoted"` string; returns it and the byte offset of its first character.
    pub(super) fn quoted(&mut self, what: &'static str) -> Result<(&'a str, usize), ParseError> {
        if !self.eat(b'"') {
            return Err(self.err(ParseErrorKind::Expected(what)));
        }
        let start = self.pos;
        let rest = self.rest();
        match rest.find('"') {
            Some(end) => {
                self.pos += end + 1;
                Ok((&rest[..end], start))
            }
            None => Err(self.err_at(self.line.len(), ParseErrorKind::Expected("closing '\"'"))),
        }
    }

    /// Skips an ibnetdiscover `[ext N]` external-port annotation if present.
    pub(super) fn skip_ext(&mut self) {
        if self.rest().starts_with("[ext") {
            match self.rest().find(']') {
                Some(end) => self.pos += end + 1,
                None => self.pos = self.line.len(),
            }
        }
    }
}

pub(super) enum NumError {
    Missing,
    Overflow(usize),
}

/// Parses a C `strtoull(s, _, 0)`-style unsigned number at the start of `s` (leading
/// whitespace allowed); returns the value and the number of bytes consumed.
pub(super) fn c_number(s: &str) -> Result<(u64, usize), NumError> {
    let b = s.as_bytes();
    let mut i = b.iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
    if b.get(i) == Some(&b'+') {
        i += 1;
    }
    let (radix, start) = if b.get(i) == Some(&b'0')
        && matches!(b.get(i + 1), Some(b'x' | b'X'))
        && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        (16, i + 2)
    } else if b.get(i) == Some(&b'0') {
        (8, i)
    } else {
        (10, i)
    };
    let len = b[start.min(b.len())..]
        .iter()
        .take_while(|c| (**c as char).is_digit(radix))
        .count();
    if len == 0 {
        return Err(NumError::Missing);
    }
    let digits = &s[start..start + len];
    u64::from_str_radix(digits, radix)
        .map(|v| (v, start + len))
        .map_err(|_| NumError::Overflow(start + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_numbers() {
        assert!(matches!(c_number("0x200000(200000)"), Ok((0x200000, 8))));
        assert!(matches!(c_number("17"), Ok((17, 2))));
        assert!(matches!(c_number("010"), Ok((8, 3))));
        assert!(matches!(c_number("0"), Ok((0, 1))));
        assert!(matches!(c_number(" 0x"), Ok((0, 2))));
        assert!(matches!(c_number("x"), Err(NumError::Missing)));
        assert!(matches!(
            c_number("0x1ffffffffffffffff"),
            Err(NumError::Overflow(_))
        ));
    }
}

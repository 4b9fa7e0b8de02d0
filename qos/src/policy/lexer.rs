//! Lines and values of a policy text, with positions. OpenSM's grammar is keyword first on
//! a line (its documentation: "any keyword should be the first non-blank in the line"), so
//! the text is read line by line: a block keyword alone, `key: value`, or in qos-ulps a
//! rule `ulp[, qualifier list] : level`.

use crate::error::Pos;

/// One line with its comment removed and its blanks trimmed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line<'a> {
    /// Line number, from 1.
    pub no: u32,
    /// The whole line as written.
    pub raw: &'a str,
    /// The content: comment removed, trimmed.
    pub text: &'a str,
    /// Byte offset of `text` in `raw`.
    pub start: usize,
}

impl<'a> Line<'a> {
    /// The position of byte offset `off` of `raw`.
    pub fn pos_at(&self, off: usize) -> Pos {
        let off = off.min(self.raw.len());
        let col = self.raw.get(..off).map_or(off, |s| s.chars().count()) + 1;
        Pos::new(self.no, u32::try_from(col).unwrap_or(u32::MAX))
    }

    /// The position of the line's content.
    pub fn pos(&self) -> Pos {
        self.pos_at(self.start)
    }

    /// The byte offset in `raw` of a sub-slice of `raw`.
    pub fn offset_of(&self, sub: &str) -> usize {
        (sub.as_ptr() as usize).saturating_sub(self.raw.as_ptr() as usize)
    }
}

/// The non-empty lines of a text. `#` starts a comment except inside double quotes.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let mut in_quote = false;
        let mut end = raw.len();
        for (b, c) in raw.char_indices() {
            match c {
                '"' => in_quote = !in_quote,
                '#' if !in_quote => {
                    end = b;
                    break;
                }
                _ => {}
            }
        }
        let body = &raw[..end];
        let text = body.trim();
        if text.is_empty() {
            return None;
        }
        let start = body.len() - body.trim_start().len();
        Some(Line {
            no: u32::try_from(i + 1).unwrap_or(u32::MAX),
            raw,
            text,
            start,
        })
    })
}

/// One comma-separated item, trimmed, with its byte offset in the line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item<'a> {
    /// The item text.
    pub text: &'a str,
    /// Byte offset in the line's `raw`.
    pub off: usize,
}

/// Splits a value on commas (keeping commas inside double quotes), trimming each item.
pub(crate) fn split_list<'a>(line: &Line<'a>, value: &'a str) -> Vec<Item<'a>> {
    let mut out = Vec::new();
    let mut in_quote = false;
    let mut from = 0;
    let mut push = |piece: &'a str| {
        let t = piece.trim();
        let lead = piece.len() - piece.trim_start().len();
        out.push(Item {
            text: t,
            off: line.offset_of(piece) + lead,
        });
    };
    for (b, c) in value.char_indices() {
        match c {
            '"' => in_quote = !in_quote,
            ',' if !in_quote => {
                push(&value[from..b]);
                from = b + 1;
            }
            _ => {}
        }
    }
    push(&value[from..]);
    out
}

/// A string value: double quotes removed when the whole value is quoted.
pub(crate) fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(s)
}

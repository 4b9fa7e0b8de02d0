//! Link width and speed as ibsim negotiates them: per-port enable masks, set by defaults,
//! `w=`/`s=`/`e=` options and the ibnetdiscover `lid N 4xQDR` comment; a link's active
//! width and speed are the best both ends enable.

use super::error::ParseErrorKind;
use super::lex::{Cur, NumError, c_number};
use crate::topology::{LinkSpeed, LinkWidth};

/// Enabled width/speed masks of one port (PortInfo wire bits).
#[derive(Clone, Copy, Debug)]
pub(super) struct Enables {
    pub(super) width: u8,
    pub(super) speed: u8,
    pub(super) ext: u8,
}

pub(super) const DEFAULT_ENABLES: Enables = Enables {
    width: 2, // 4x
    speed: 1, // SDR
    ext: 0,
};

/// Applies ibsim port options `w=`, `s=`, `e=` found in `rest` (outside quotes). Returns the
/// byte offset and error of a bad value.
pub(super) fn apply_options(rest: &str, en: &mut Enables) -> Result<(), (usize, ParseErrorKind)> {
    let b = rest.as_bytes();
    let mut in_quote = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'"' => in_quote = !in_quote,
            b'=' if !in_quote => {
                let Some(letter) = b[..i].iter().rev().find(|c| c.is_ascii_alphabetic()) else {
                    continue;
                };
                let value = match c_number(&rest[i + 1..]) {
                    Ok((v, _)) => v,
                    Err(NumError::Missing) => 0,
                    Err(NumError::Overflow(_)) => u64::MAX,
                };
                let bad = |option| Err((i + 1, ParseErrorKind::BadValue { option, value }));
                match letter {
                    b'w' => {
                        if !(1..=31).contains(&value) {
                            return bad("port option w=");
                        }
                        en.width = value as u8;
                    }
                    b's' => {
                        if value > 7 {
                            return bad("port option s=");
                        }
                        // 0 means QDR, as in ibsim >= 0.11.
                        en.speed = if value == 0 { 4 } else { value as u8 };
                    }
                    b'e' => {
                        if value > 15 {
                            return bad("port option e=");
                        }
                        en.ext = value as u8;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Applies the ibnetdiscover `lid N <width>x<speed>` comment: the first "lid" after the
/// last double quote of the line. Unparseable text is ignored, as ibsim does.
pub(super) fn apply_connection_comment(rest: &str, en: &mut Enables) {
    let tail_start = rest.rfind('"').map_or(0, |q| q + 1);
    let tail = &rest[tail_start..];
    let Some(at) = tail.find("lid") else {
        return;
    };
    let mut c = Cur::new(&tail[at + 3..], 0, 0);
    c.skip_ws();
    if c.eat(b'-') {
        c.skip_ws();
    }
    if c.decimal("").is_err() {
        return;
    }
    c.skip_ws();
    let Ok(width) = c.decimal("") else {
        return;
    };
    if !c.eat(b'x') {
        return;
    }
    // The speed token runs to the next whitespace (ibsim reads it with %9s; every valid
    // token is shorter than that).
    let speed = c.rest().split_ascii_whitespace().next().unwrap_or("");
    match width {
        12 => en.width = 1 | 2 | 8,
        8 => en.width = 4,
        4 => en.width = 1 | 2,
        2 => en.width = 16,
        1 => en.width = 1,
        _ => {}
    }
    match speed {
        "SDR" => en.speed = 1,
        "DDR" => en.speed = 1 | 2,
        "QDR" | "FDR10" => en.speed = 7,
        "FDR" => {
            en.speed = 7;
            en.ext = 1;
        }
        "EDR" => {
            en.speed = 7;
            en.ext = 3;
        }
        "HDR" => {
            en.speed = 7;
            en.ext = 7;
        }
        "NDR" => {
            en.speed = 7;
            en.ext = 15;
        }
        _ => {}
    }
}

pub(super) fn active_width(a: Enables, b: Enables) -> Option<LinkWidth> {
    let c = a.width & b.width;
    [
        (8, LinkWidth::X12),
        (4, LinkWidth::X8),
        (2, LinkWidth::X4),
        (16, LinkWidth::X2),
        (1, LinkWidth::X1),
    ]
    .into_iter()
    .find(|(bit, _)| c & bit != 0)
    .map(|(_, w)| w)
}

pub(super) fn active_speed(a: Enables, b: Enables) -> Option<LinkSpeed> {
    let base = a.speed & b.speed;
    let base = [
        (4, LinkSpeed::Qdr),
        (2, LinkSpeed::Ddr),
        (1, LinkSpeed::Sdr),
    ]
    .into_iter()
    .find(|(bit, _)| base & bit != 0)
    .map(|(_, s)| s)?;
    let ext = a.ext & b.ext;
    Some(
        [
            (8, LinkSpeed::Ndr),
            (4, LinkSpeed::Hdr),
            (2, LinkSpeed::Edr),
            (1, LinkSpeed::Fdr),
        ]
        .into_iter()
        .find(|(bit, _)| ext & bit != 0)
        .map_or(base, |(_, s)| s),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multibyte_text_after_the_width_is_harmless() {
        let mut en = DEFAULT_ENABLES;
        apply_connection_comment("# lid 0 4xSDRéééééééé", &mut en);
        apply_connection_comment("# lid 0 4xéééééééééé", &mut en);
        assert_eq!(en.width, 3);
        assert_eq!(en.speed, 1);
    }

    #[test]
    fn connection_comment() {
        let mut en = DEFAULT_ENABLES;
        apply_connection_comment("[1]\t\t# lid 5 lmc 0 \"Switch1\" lid 2 12xEDR", &mut en);
        assert_eq!(en.width, 11);
        assert_eq!(en.ext, 3);
        assert_eq!(active_width(en, en), Some(LinkWidth::X12));
        assert_eq!(active_speed(en, en), Some(LinkSpeed::Edr));
        assert_eq!(active_speed(en, DEFAULT_ENABLES), Some(LinkSpeed::Sdr));
        assert_eq!(active_width(en, DEFAULT_ENABLES), Some(LinkWidth::X4));
    }
}

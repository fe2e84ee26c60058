//! Text from files (variable, file and output names, library messages quoting them) made safe for a
//! terminal before vzarr prints it: control characters (C0, DEL, C1) and the Unicode bidirectional
//! overrides are written as escapes (`\n`, `\r`, `\t`, `\x1b`, `\u{202e}`), so a sidecar variable
//! named `ESC [2J` cannot clear the screen, and a name holding a newline or a carriage return cannot
//! forge or hide a line of output.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character escaped; newlines kept when `keep_newlines` (output that is
/// several lines by design).
pub(crate) fn escaped(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && !(keep_newlines && c == '\n')) || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Unicode's bidirectional embedding, override and isolate controls (which reorder what a terminal
/// shows).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters_and_keeps_the_rest() {
        assert_eq!(escaped("tas/température", false), "tas/température");
        assert_eq!(escaped("a\u{1b}[2J\rb\tc\u{7}", false), "a\\x1b[2J\\rb\\tc\\x07");
        assert_eq!(escaped("one\ntwo", false), "one\\ntwo");
        assert_eq!(escaped("one\ntwo\r", true), "one\ntwo\\r");
        assert_eq!(escaped("x\u{9b}y\u{202e}z", false), "x\\u{9b}y\\u{202e}z");
    }
}

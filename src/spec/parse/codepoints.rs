//! The code points KDL v2 does not allow in a file, found at their place:
//! kdl reports one inside a string only as "Expected quoted string", which
//! says neither what nor where. Invisible ones (controls, bidirectional
//! overrides that make text read other than it parses) are named by code.

use miette::SourceSpan;

use crate::spec::diag::SpecDiagnostic;

/// KDL v2's disallowed literal code points, with a name for each range.
fn disallowed(c: char, at: usize) -> Option<&'static str> {
    Some(match c {
        '\u{0}'..='\u{8}' | '\u{e}'..='\u{1f}' | '\u{7f}' => "a control character",
        '\u{200e}' | '\u{200f}' => "a directional mark",
        '\u{202a}'..='\u{202e}' => "a bidirectional embedding or override",
        '\u{2066}'..='\u{2069}' => "a bidirectional isolate",
        '\u{feff}' if at > 0 => "a byte order mark",
        _ => return None,
    })
}

/// KDL v2 does not allow `c` anywhere in a file (a BOM only at its start):
/// a writer of KDL escapes it.
pub fn kdl_disallows(c: char) -> bool {
    disallowed(c, 1).is_some()
}

/// A diagnostic at each code point of `text` that KDL v2 does not allow.
pub fn check(text: &str) -> Vec<SpecDiagnostic> {
    text.char_indices()
        .filter_map(|(at, c)| {
            let what = disallowed(c, at)?;
            Some(
                SpecDiagnostic::new(
                    SourceSpan::from(at..at + c.len_utf8()),
                    format!(
                        "`U+{:04X}` ({what}) is not allowed in a KDL file",
                        u32::from(c)
                    ),
                    "this character",
                )
                .with_help(format!(
                    "remove it; in a string, the escape `\\u{{{:x}}}` stands for it",
                    u32::from(c)
                )),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_controls_and_bidi_overrides_at_their_place() {
        let found = check("\u{feff}a \"x\u{0}y\u{202e}\" é\u{2067}");
        let places: Vec<(usize, usize)> = found
            .iter()
            .map(|d| (d.span.offset(), d.span.len()))
            .collect();
        assert_eq!(places, [(7, 1), (9, 3), (16, 3)]);
        assert_eq!(
            found[1].message,
            "`U+202E` (a bidirectional embedding or override) is not allowed in a KDL file"
        );
        assert!(check("tab\tand\r\nnewlines 日本 🦀").is_empty());
    }
}

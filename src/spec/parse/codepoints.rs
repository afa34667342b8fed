//! The code points KDL v2 does not allow in a file, found at their place:
//! kdl reports one inside a string only as "Expected quoted string", which
//! says neither what nor where. Invisible ones (controls, bidirectional
//! overrides that make text read other than it parses) are named by code.

use miette::SourceSpan;

use crate::kdl_string::disallowed;
use crate::spec::diag::SpecDiagnostic;

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

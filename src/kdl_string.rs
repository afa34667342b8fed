//! The one writer of KDL strings and comments, and the code points KDL v2
//! does not allow in a file (the parser reports them, the writer escapes
//! them): every file perfpipe writes in KDL (lockfiles, `init --from-page`
//! drafts) quotes text here, so what it writes its own parser reads back as
//! the same text, whatever the text (a page's title with a NUL or a
//! right-to-left override included).

use std::fmt::Write;

/// `text` as a KDL v2 quoted string. Controls, KDL's newlines and the code
/// points KDL v2 does not allow in a file (bidirectional marks and
/// overrides, a BOM) are written as `\u{…}` escapes: the file shows them
/// (an override cannot make it read other than it parses) and reading it
/// gives the same text.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `text` made fit for a `//` comment, which has no escapes: each code point
/// [`quote`] escapes is shown as its escape, so a comment can neither end
/// its line early nor hold what KDL refuses.
pub fn comment_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if needs_escape(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// Controls (KDL's other newlines among them: NEL, VT, FF), the line and
/// paragraph separators, and what KDL v2 does not allow in a file.
fn needs_escape(c: char) -> bool {
    c.is_control() || kdl_disallows(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// KDL v2's disallowed literal code points, with a name for each range.
pub fn disallowed(c: char, at: usize) -> Option<&'static str> {
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The value of `title` in a document of one node, read by the parser
    /// perfpipe reads experiments with.
    fn read_back(quoted: &str) -> String {
        let doc = kdl::KdlDocument::parse_v2(&format!("title {quoted}\n"))
            .unwrap_or_else(|e| panic!("{quoted}: {e:?}"));
        doc.nodes()[0].entries()[0]
            .value()
            .as_string()
            .expect("a string")
            .to_owned()
    }

    #[test]
    fn nul_controls_and_overrides_are_escaped_and_read_back() {
        let text = "Tiny\u{0} \u{202e}evil\u{2066} \u{85}\u{b}\u{c}\u{2028}\u{feff}\"\\ end";
        let quoted = quote(text);
        assert_eq!(
            quoted,
            r#""Tiny\u{0} \u{202e}evil\u{2066} \u{85}\u{b}\u{c}\u{2028}\u{feff}\"\\ end""#
        );
        assert_eq!(read_back(&quoted), text);
        assert_eq!(
            comment_text("a\nb\u{202e}c"),
            "a\\u{a}b\\u{202e}c",
            "a comment stays one line and shows the override"
        );
    }

    proptest! {
        #[test]
        fn any_text_reads_back_as_itself(text in any::<String>()) {
            prop_assert_eq!(read_back(&quote(&text)), text);
        }

        #[test]
        fn any_comment_is_one_line_kdl_accepts(text in any::<String>()) {
            let doc = format!("// {}\nn\n", comment_text(&text));
            prop_assert!(kdl::KdlDocument::parse_v2(&doc).is_ok(), "{doc:?}");
            prop_assert_eq!(doc.lines().count(), 2);
        }
    }
}

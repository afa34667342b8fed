//! What is checked before kdl reads an experiment file, so that no file
//! crashes perfpipe.
//!
//! kdl's v2 parser recurses once per nested block, per nested comment, per
//! slashdash and per stray token it recovers from, and a stack overflow
//! aborts the process instead of failing. The cost of each recursion is paid
//! at a punctuation mark (`{`, `/-`, `}`, `=`, ...), never at a letter or a
//! space, so the parse runs on a thread whose stack is sized from the number
//! of marks, and a file with more marks, or with blocks nested deeper, than
//! any experiment has is refused here, at its place.

use miette::SourceSpan;

use crate::spec::diag::SpecDiagnostic;

/// Far above any hand-written experiment (the largest example is ~20 KB).
pub const MAX_BYTES: usize = 1 << 20;
/// An experiment nests 3 deep (`experiment` → `step` → `expect`).
pub const MAX_DEPTH: usize = 32;
/// The largest example has ~1,900.
pub const MAX_MARKS: usize = 16_384;

/// Stack kdl needs per mark at worst, with margin: a nested block costs
/// up to 31 KiB in a debug build (~6 KiB optimized), any other mark at most 16 KiB.
const STACK_PER_MARK: usize = 40 << 10;
/// Stack for everything but kdl's recursion: the decoder, miette, drops.
const STACK_BASE: usize = 8 << 20;

/// The stack a thread parsing `text` needs; only touched pages cost memory.
pub fn stack_size(text: &str) -> usize {
    STACK_BASE + marks(text).min(MAX_MARKS) * STACK_PER_MARK
}

/// The first limit `text` exceeds, as a diagnostic at the place.
pub fn check(text: &str) -> Option<SpecDiagnostic> {
    if text.len() > MAX_BYTES {
        let at = text.floor_char_boundary(MAX_BYTES);
        return Some(
            SpecDiagnostic::new(
                SourceSpan::from(at..at),
                format!(
                    "the file is {} bytes; an experiment file has at most {MAX_BYTES}",
                    text.len()
                ),
                "the limit is reached here",
            )
            .with_help("experiment files are written by hand; is this the right file?"),
        );
    }
    if let Some((at, _)) = text
        .bytes()
        .enumerate()
        .filter(|(_, b)| b.is_ascii_punctuation())
        .nth(MAX_MARKS)
    {
        return Some(
            SpecDiagnostic::new(
                SourceSpan::from(at..at + 1),
                format!("the file has more than {MAX_MARKS} brackets, quotes, `=` and other marks"),
                "one too many",
            )
            .with_help("experiment files are written by hand; is this the right file?"),
        );
    }
    match scan(text)? {
        Problem::TooDeep(at) => Some(
            SpecDiagnostic::new(
                SourceSpan::from(at..at + 1),
                format!("blocks nest more than {MAX_DEPTH} deep"),
                format!("block {} levels deep", MAX_DEPTH + 1),
            )
            .with_help(
                "an experiment nests 3 deep (`experiment` → `step` → `expect`); is a `}` missing?",
            ),
        ),
        Problem::SlashdashTwice(at) => Some(
            SpecDiagnostic::new(
                SourceSpan::from(at..at + 2),
                "`/-` follows another `/-`",
                "second `/-`",
            )
            .with_help("one `/-` comments out the node, value or block after it; remove this one"),
        ),
    }
}

fn marks(text: &str) -> usize {
    text.bytes().filter(u8::is_ascii_punctuation).count()
}

#[derive(Debug, PartialEq)]
enum Problem {
    /// A `{` opens a block deeper than [`MAX_DEPTH`].
    TooDeep(usize),
    /// `/- /-`, which KDL does not allow and kdl takes exponential time over.
    SlashdashTwice(usize),
}

/// The first problem in `text`, skipping strings and comments as KDL v2 does.
fn scan(text: &str) -> Option<Problem> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut after_slashdash = false;
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        let comment = c == '/' && matches!(b.get(i + 1), Some(b'/' | b'*'));
        let next = match c {
            '/' if b.get(i + 1) == Some(&b'/') => line_end(text, i),
            '/' if b.get(i + 1) == Some(&b'*') => comment_end(b, i),
            '/' if b.get(i + 1) == Some(&b'-') => {
                if after_slashdash {
                    return Some(Problem::SlashdashTwice(i));
                }
                after_slashdash = true;
                i += 2;
                continue;
            }
            '"' => string_end(text, i, 0),
            '#' => {
                let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + hashes) == Some(&b'"') {
                    string_end(text, i + hashes, hashes)
                } else {
                    i + hashes
                }
            }
            '{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(Problem::TooDeep(i));
                }
                i + 1
            }
            '}' => {
                depth = depth.saturating_sub(1);
                i + 1
            }
            _ => i + c.len_utf8(),
        };
        // Spaces, newlines, comments and line continuations keep a `/-` pending.
        after_slashdash &= comment || c.is_whitespace() || c == '\\' || c == '\u{feff}';
        i = next;
    }
    None
}

fn is_newline(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Where the line that `from` is on ends (at its newline, which is code again).
fn line_end(text: &str, from: usize) -> usize {
    text[from..]
        .find(is_newline)
        .map_or(text.len(), |n| from + n)
}

/// Just past the `*/` that closes the (nestable) comment opened at `from`.
fn comment_end(b: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i + 1 < b.len() {
        match (b[i], b[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// Just past the string whose opening quote is at `quote`, `hashes` being
/// the `#`s of a raw string. A single-line string also ends at a newline
/// (kdl reports it and reads on).
fn string_end(text: &str, quote: usize, hashes: usize) -> usize {
    let closing = format!("\"{}", "#".repeat(hashes));
    let raw = hashes > 0;
    if text[quote..].starts_with("\"\"\"") {
        let closing = format!("\"\"{closing}");
        let mut i = quote + 3;
        while let Some(c) = text[i..].chars().next() {
            if text[i..].starts_with(&closing) {
                return i + closing.len();
            }
            i += c.len_utf8();
            if c == '\\' && !raw {
                i += text[i..].chars().next().map_or(0, char::len_utf8);
            }
        }
        return text.len();
    }
    let mut i = quote + 1;
    while let Some(c) = text[i..].chars().next() {
        if text[i..].starts_with(&closing) {
            return i + closing.len();
        }
        if is_newline(c) {
            return i;
        }
        i += c.len_utf8();
        if c == '\\' && !raw {
            i += text[i..].chars().next().map_or(0, char::len_utf8);
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "a {".repeat(n), "}".repeat(n))
    }

    #[test]
    fn nesting_is_refused_at_the_first_brace_too_deep() {
        assert_eq!(scan(&nested(MAX_DEPTH)), None);
        let text = nested(MAX_DEPTH + 1);
        assert_eq!(scan(&text), Some(Problem::TooDeep(3 * MAX_DEPTH + 2)));
        assert_eq!(&text[3 * MAX_DEPTH + 2..][..1], "{");
    }

    #[test]
    fn braces_in_strings_and_comments_do_not_nest() {
        let braces = "{".repeat(100);
        for text in [
            format!("a \"{braces}\""),
            format!("a #\"{braces}\"#"),
            format!("a ##\"\"#{braces}\"##"),
            format!("a \"\\\"{braces}\""),
            format!("a \"\"\"\n{braces}\n\"\"\""),
            format!("// {braces}\na"),
            format!("/* /* */ {braces} */ a"),
        ] {
            assert_eq!(scan(&text), None, "{text}");
        }
        // A single-line string ends at its line, as kdl reads it.
        let deep = nested(MAX_DEPTH + 1);
        assert!(scan(&format!("a \"x\n{deep}")).is_some());
        assert!(scan(&format!("// x\r{deep}")).is_some());
        assert!(scan(&format!("a #\"x\u{2028}{deep}")).is_some());
    }

    #[test]
    fn a_slashdash_after_a_slashdash_is_refused() {
        assert_eq!(scan("a /- /- b"), Some(Problem::SlashdashTwice(5)));
        assert_eq!(
            scan("/-\n  // why\n  /* x */ \\\n /- a"),
            Some(Problem::SlashdashTwice(25))
        );
        for fine in ["/- a /- b", "a /- b=1 /- { c }", "a \"/- /-\"", "// /- /-"] {
            assert_eq!(scan(fine), None, "{fine}");
        }
    }

    #[test]
    fn limits_name_their_place() {
        let big = format!("a \"{}\"", "é".repeat(MAX_BYTES));
        let diag = check(&big).unwrap();
        assert!(big.is_char_boundary(diag.span.offset()));
        assert!(diag.message.contains("bytes"), "{}", diag.message);

        let marks = "=".repeat(MAX_MARKS + 10);
        assert_eq!(check(&marks).unwrap().span.offset(), MAX_MARKS);

        let deep = nested(1000);
        let diag = check(&deep).unwrap();
        assert_eq!(diag.span, SourceSpan::from(98..99));
        assert!(check(&nested(3)).is_none());
    }

    #[test]
    fn the_stack_grows_with_the_marks_only() {
        assert_eq!(stack_size("abc def"), STACK_BASE);
        assert_eq!(stack_size("a=1 {}"), STACK_BASE + 3 * STACK_PER_MARK);
        assert_eq!(
            stack_size(&"{".repeat(10 * MAX_MARKS)),
            STACK_BASE + MAX_MARKS * STACK_PER_MARK
        );
    }
}

//! A lexer of KDL v2 just good enough to find, before kdl parses a file,
//! what it would crash or hang on: strings and comments are skipped as KDL
//! reads them, so that what they hold is not taken for structure.

use std::ops::Range;

use super::limits::MAX_DEPTH;

#[derive(Debug, PartialEq)]
pub enum Problem {
    /// A `{` opens a block deeper than [`MAX_DEPTH`].
    TooDeep(usize),
    /// `/- /-`, which KDL does not allow and kdl takes exponential time over.
    SlashdashTwice(usize),
    /// An integer beyond `i128`, which kdl reports without its place.
    NumberTooLarge(Range<usize>),
}

/// The first problem in `text`, skipping strings and comments as KDL v2 does.
pub fn scan(text: &str) -> Option<Problem> {
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
            '0'..='9' | '+' | '-' if starts_value(text, i) => {
                let end = token_end(text, i);
                if overflows_i128(&text[i..end]) {
                    return Some(Problem::NumberTooLarge(i..end));
                }
                end
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

/// Whether a value can start at `i`: the text before it is not part of a word.
fn starts_value(text: &str, i: usize) -> bool {
    text[..i]
        .chars()
        .next_back()
        .is_none_or(|c| c.is_whitespace() || "=(){};\u{feff}".contains(c))
}

/// Where the word starting at `from` ends.
fn token_end(text: &str, from: usize) -> usize {
    text[from..]
        .find(|c: char| c.is_whitespace() || "=(){};\"/\\#".contains(c))
        .map_or(text.len(), |n| from + n)
}

/// An integer literal (decimal, `0x`, `0o`, `0b`, with `_`) too large for
/// kdl's `i128`; anything else, kdl judges.
fn overflows_i128(word: &str) -> bool {
    let (sign, unsigned) = match word.strip_prefix(['+', '-']) {
        Some(rest) => (&word[..1], rest),
        None => ("", word),
    };
    let (radix, digits) = match unsigned.get(..2) {
        Some("0x") => (16, &unsigned[2..]),
        Some("0o") => (8, &unsigned[2..]),
        Some("0b") => (2, &unsigned[2..]),
        _ if unsigned.contains(['.', 'e', 'E']) => return false,
        _ => (10, unsigned),
    };
    let digits = digits.replace('_', "");
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    let digits = format!("{}{digits}", sign.trim_start_matches('+'));
    matches!(
        i128::from_str_radix(&digits, radix).map_err(|e| *e.kind()),
        Err(std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow)
    )
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
    fn integers_beyond_i128_are_found_where_kdl_would_read_them() {
        let max = i128::MAX.to_string();
        let over = "170141183460469231731687303715884105728";
        assert_eq!(scan(&format!("a {max} -{max} 1e999999")), None);
        assert_eq!(
            scan(&format!("a b={over}")),
            Some(Problem::NumberTooLarge(4..4 + over.len()))
        );
        for too_large in [
            format!("-{over}1"),
            format!("+{over}"),
            "0x1_0000_0000_0000_0000_0000_0000_0000_0000".to_owned(),
            format!("0b1{}", "0".repeat(127)),
        ] {
            assert!(
                matches!(
                    scan(&format!("a {too_large}")),
                    Some(Problem::NumberTooLarge(_))
                ),
                "{too_large}"
            );
        }
        for not_a_number in [
            format!("a \"{over}\""),
            format!("a{over}"),
            format!("// {over}"),
            format!("a 0x{over}g"),
        ] {
            assert_eq!(scan(&not_a_number), None, "{not_a_number}");
        }
    }
}

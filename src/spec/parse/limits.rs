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

use super::scan::{Problem, scan};
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
                "is a `}` missing? an experiment nests 3 deep: `experiment` → `step` → `expect`",
            ),
        ),
        Problem::NumberTooLarge(span) => Some(
            SpecDiagnostic::new(
                SourceSpan::from(span.clone()),
                format!("`{}` is too large a number", &text[span]),
                "too large",
            )
            .with_help(format!(
                "no value in an experiment is larger than {}",
                u64::MAX
            )),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        format!("{}{}", "a {".repeat(n), "}".repeat(n))
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

        let huge = "a b=170141183460469231731687303715884105728";
        let diag = check(huge).unwrap();
        assert_eq!(diag.span, SourceSpan::from(4..huge.len()));
        assert_eq!(
            diag.message,
            "`170141183460469231731687303715884105728` is too large a number"
        );
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

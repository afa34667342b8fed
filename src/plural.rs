//! Counts in messages: `1 run`, `2 runs`. Every count perfpipe prints goes
//! through [`count`], so none reads "1 runs".

/// `1 entry`, `2 entries`, `0 entries`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", noun(n, one, many))
}

/// `one` for 1, else `many`: for a count printed apart from its noun.
pub fn noun<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "run", "runs"), "1 run");
        assert_eq!(count(0, "run", "runs"), "0 runs");
        assert_eq!(count(2, "entry", "entries"), "2 entries");
        assert_eq!(noun(1, "launch", "launches"), "launch");
    }
}

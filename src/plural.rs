//! Counts in messages: `1 run`, `2 runs`. Every count perfpipe prints goes
//! through [`count`], so none reads "1 runs"; lists through [`and_list`].

/// `1 entry`, `2 entries`, `0 entries`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", noun(n, one, many))
}

/// `one` for 1, else `many`: for a count printed apart from its noun.
pub fn noun<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// `a`, `a and b`, `a, b and c`; nothing for no items.
pub fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", init.join(", "), last.as_ref())
        }
    }
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

    #[test]
    fn a_list_joins_its_last_item_with_and() {
        assert_eq!(and_list::<&str>(&[]), "");
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
        assert_eq!(
            and_list(&["a".to_owned(), "b".into(), "c".into()]),
            "a, b and c"
        );
    }
}

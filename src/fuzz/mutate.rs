//! The moves of a mutation fuzzer over text seeds, as a proptest strategy:
//! delete, insert, duplicate, swap and truncate spans, and splice in a span of
//! another seed. Places are fractions of the text's length, so one mutation
//! fits any seed and shrinks towards the start; every edit keeps UTF-8.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

#[derive(Debug, Clone)]
pub enum Mutation {
    Delete {
        at: f64,
        len: usize,
    },
    Insert {
        at: f64,
        text: String,
    },
    Duplicate {
        from: f64,
        len: usize,
        to: f64,
    },
    Swap {
        a: f64,
        b: f64,
        len: usize,
    },
    Splice {
        seed: usize,
        from: f64,
        len: usize,
        to: f64,
    },
    Truncate {
        at: f64,
    },
}

/// A seed with 1 to 8 mutations applied; `tokens` are what the format is
/// made of, inserted as often as random characters.
pub fn mutated(
    seeds: &'static [String],
    tokens: &'static [&'static str],
) -> impl Strategy<Value = String> {
    (0..seeds.len(), vec(mutation(tokens, seeds.len()), 1..8)).prop_map(move |(seed, mutations)| {
        mutations
            .iter()
            .fold(seeds[seed].clone(), |text, m| apply(&text, m, seeds))
    })
}

fn mutation(tokens: &'static [&'static str], seeds: usize) -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    let len = prop_oneof![1..8usize, 1..200usize];
    let text = prop_oneof![
        3 => select(tokens).prop_map(str::to_owned),
        1 => vec(any::<char>(), 1..4).prop_map(String::from_iter),
        1 => (select(tokens), 2..64usize).prop_map(|(t, n)| t.repeat(n)),
    ];
    prop_oneof![
        1 => (at.clone(), len.clone()).prop_map(|(at, len)| Mutation::Delete { at, len }),
        3 => (at.clone(), text).prop_map(|(at, text)| Mutation::Insert { at, text }),
        1 => (at.clone(), len.clone(), at.clone())
            .prop_map(|(from, len, to)| Mutation::Duplicate { from, len, to }),
        1 => (at.clone(), at.clone(), len.clone())
            .prop_map(|(a, b, len)| Mutation::Swap { a, b, len }),
        1 => (0..seeds, at.clone(), len, at.clone())
            .prop_map(|(seed, from, len, to)| Mutation::Splice { seed, from, len, to }),
        1 => at.prop_map(|at| Mutation::Truncate { at }),
    ]
}

pub fn apply(text: &str, m: &Mutation, seeds: &[String]) -> String {
    match m {
        Mutation::Delete { at, len } => {
            let (s, e) = span(text, *at, *len);
            [&text[..s], &text[e..]].concat()
        }
        Mutation::Insert { at, text: t } => {
            let p = place(text, *at);
            [&text[..p], t, &text[p..]].concat()
        }
        Mutation::Duplicate { from, len, to } => {
            let (s, e) = span(text, *from, *len);
            let p = place(text, *to);
            [&text[..p], &text[s..e], &text[p..]].concat()
        }
        Mutation::Swap { a, b, len } => {
            let (a, b) = (a.min(*b), a.max(*b));
            let (s1, e1) = span(text, a, *len);
            let (s2, e2) = span(text, b, *len);
            if s2 < e1 {
                return text.to_owned();
            }
            [
                &text[..s1],
                &text[s2..e2],
                &text[e1..s2],
                &text[s1..e1],
                &text[e2..],
            ]
            .concat()
        }
        Mutation::Splice {
            seed,
            from,
            len,
            to,
        } => {
            let other = &seeds[*seed];
            let (s, e) = span(other, *from, *len);
            let p = place(text, *to);
            [&text[..p], &other[s..e], &text[p..]].concat()
        }
        Mutation::Truncate { at } => text[..place(text, *at)].to_owned(),
    }
}

fn place(text: &str, at: f64) -> usize {
    text.floor_char_boundary((at * text.len() as f64) as usize)
}

fn span(text: &str, at: f64, len: usize) -> (usize, usize) {
    let start = place(text, at);
    (start, text.floor_char_boundary(start + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_keep_utf8_and_do_what_they_say() {
        let seeds = vec!["aé日🦀z".to_owned(), "XYZ".to_owned()];
        let t = &seeds[0];
        assert_eq!(
            apply(t, &Mutation::Delete { at: 0.0, len: 1 }, &seeds),
            "é日🦀z"
        );
        // A span ending inside `é` stops before it.
        assert_eq!(
            apply(t, &Mutation::Delete { at: 0.0, len: 2 }, &seeds),
            "é日🦀z"
        );
        let insert = Mutation::Insert {
            at: 0.5,
            text: "{".into(),
        };
        assert_eq!(apply(t, &insert, &seeds), "aé{日🦀z");
        let splice = Mutation::Splice {
            seed: 1,
            from: 0.0,
            len: 2,
            to: 1.0,
        };
        assert_eq!(apply(t, &splice, &seeds), "aé日🦀zXY");
        let swap = Mutation::Swap {
            a: 0.0,
            b: 0.99,
            len: 1,
        };
        assert_eq!(apply(t, &swap, &seeds), "zé日🦀a");
        assert_eq!(apply(t, &Mutation::Truncate { at: 0.2 }, &seeds), "a");
    }
}

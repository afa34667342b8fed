//! The page's benchmark commands or profiles → the experiment's workloads,
//! and a result block's `# label` → the workload it measured.

use crate::page::model::Page;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Workload {
    pub name: String,
    pub title: String,
    pub comments: Vec<String>,
    pub sharegpt: bool,
    /// `benchmark-runner` conversion, constant arrivals (the guidellm era).
    pub guidellm: bool,
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub seed: Option<u64>,
    pub prompts: Option<u64>,
    pub rate: Option<String>,
    pub concurrency: Option<u64>,
    /// The profile's name (guidellm era).
    pub profile: Option<String>,
    /// Where the prompts were read from when no command states them.
    pub prompts_from_blocks: bool,
}

/// The workloads of a page, in the order of its conclusion table.
pub fn from_page(page: &Page, cases: &[String]) -> Vec<Workload> {
    let mut list = Vec::new();
    if page.profiles.is_empty() {
        for cmd in &page.bench_commands {
            let words = &cmd.value;
            let opt = |name: &str| {
                words
                    .iter()
                    .position(|w| w == name)
                    .and_then(|i| words.get(i + 1))
                    .cloned()
            };
            let num = |name: &str| opt(name).and_then(|v| v.parse::<u64>().ok());
            match opt("--dataset-name").as_deref() {
                Some("sharegpt") => list.push(Workload {
                    name: "sharegpt".into(),
                    title: "ShareGPT".into(),
                    sharegpt: true,
                    prompts: num("--num-prompts"),
                    concurrency: num("--max-concurrency"),
                    comments: vec![format!("`{}`", words.join(" "))],
                    ..Workload::default()
                }),
                Some("random") => {
                    // The page's one random command: its prompts and seed
                    // apply to the dataset item of the same lengths.
                    list.push(Workload {
                        name: String::new(),
                        input: num("--random-input-len"),
                        output: num("--random-output-len"),
                        seed: num("--seed"),
                        prompts: num("--num-prompts"),
                        comments: vec![format!("`{}`", words.join(" "))],
                        ..Workload::default()
                    });
                }
                _ => {}
            }
        }
        let seed = list.iter().find_map(|w| w.seed);
        let template = list.iter().position(|w| !w.sharegpt && w.name.is_empty());
        let template = template.map(|i| list.remove(i));
        for item in &page.datasets {
            let Some((kind, input, output)) = dataset_item(&item.value) else {
                continue;
            };
            let mut w = Workload {
                name: kind.to_lowercase().replace(' ', "-"),
                title: format!("{} Prompt", title_case(&kind)),
                input: Some(input),
                output: Some(output),
                seed,
                comments: vec![format!("\"{}\"", item.value)],
                ..Workload::default()
            };
            if let Some(t) = &template
                && t.input == Some(input)
                && t.output == Some(output)
            {
                w.prompts = t.prompts;
                w.comments.extend(t.comments.clone());
            }
            list.push(w);
        }
    } else {
        for p in &page.profiles {
            let profile = &p.value;
            let num = |k: &str| profile.get(k).and_then(|v| v.parse::<u64>().ok());
            let sharegpt = profile
                .get("dataset_name")
                .is_some_and(|d| d.eq_ignore_ascii_case("sharegpt"));
            let fields: Vec<String> = profile
                .fields
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            list.push(Workload {
                name: slug(&profile.name),
                title: profile.name.clone(),
                sharegpt,
                guidellm: true,
                input: num("dataset_input_tokens"),
                output: num("dataset_output_tokens"),
                seed: num("dataset_seed"),
                prompts: num("total_requests"),
                rate: profile.get("request_rate").map(str::to_owned),
                // guidellm 0.5's default cap, as GPUStack's benchmark-runner ran it.
                concurrency: Some(512),
                profile: Some(profile.name.clone()),
                comments: vec![format!(
                    "profile \"{}\": {}",
                    profile.name,
                    fields.join(", ")
                )],
                ..Workload::default()
            });
        }
    }
    // The titles the conclusion table prints, and its order.
    for w in &mut list {
        if let Some(case) = cases.iter().find(|c| case_matches(c, w)) {
            w.title = case.clone();
        }
    }
    list.sort_by_key(|w| {
        cases
            .iter()
            .position(|c| *c == w.title)
            .unwrap_or(usize::MAX)
    });
    list
}

/// A conclusion case's name without the description a page may print
/// beside it: "Small Context (2K in / 256 out)" → "Small Context",
/// "Mixed: chat and RAG (the target)" → "Mixed".
fn case_name(case: &str) -> &str {
    case.split([':', '(']).next().unwrap_or(case).trim()
}

pub fn case_matches(case: &str, w: &Workload) -> bool {
    let c = case_name(case).to_lowercase();
    if let Some(p) = &w.profile {
        let p = p.to_lowercase();
        return c == p
            || c.strip_suffix(" profile") == Some(p.as_str())
            || c.strip_prefix("rate ")
                .is_some_and(|r| w.rate.as_deref() == Some(r));
    }
    if w.sharegpt {
        return c == "sharegpt" && w.concurrency.is_none()
            || w.concurrency
                .is_some_and(|n| c == format!("sharegpt bs={n}"));
    }
    c == w.title.to_lowercase() || case.eq_ignore_ascii_case(&w.title)
}

/// "Very long prompt: 32000 input tokens, 100 output tokens" → ("Very long", 32000, 100).
fn dataset_item(text: &str) -> Option<(String, u64, u64)> {
    let (kind, rest) = text.split_once(" prompt:")?;
    let mut numbers = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().ok());
    Some((kind.trim().to_owned(), numbers.next()??, numbers.next()??))
}

fn title_case(words: &str) -> String {
    words
        .split(' ')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        })
        .collect::<Vec<String>>()
        .join(" ")
}

/// `[a-z0-9-]` words of a text.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(if c == '.' { '-' } else { c });
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// The workload a block's `# label` names: `random 32K input` (by input
/// length), `ShareGPT batch size 4`/`BS=4` (ShareGPT at that concurrency,
/// added if the page declares none); `None` for a label that names a
/// configuration (`# --max-num-batched-tokens 4096`).
pub fn for_label(list: &mut Vec<Workload>, label: &str, completed: Option<u64>) -> Option<usize> {
    let lower = label.to_lowercase();
    if let Some((input, output)) = random_sizes(&lower) {
        return list.iter().position(|w| {
            !w.sharegpt
                && w.input.is_some_and(|i| input.is(i))
                && output.is_none_or(|o| w.output.is_some_and(|n| o.is(n)))
        });
    }
    let bs = lower
        .split_once("batch size")
        .or_else(|| lower.split_once("bs="))
        .and_then(|(_, n)| n.trim().parse::<u64>().ok())?;
    if let Some(i) = list
        .iter()
        .position(|w| w.sharegpt && w.concurrency == Some(bs))
    {
        return Some(i);
    }
    let base = list
        .iter()
        .find(|w| w.sharegpt)
        .cloned()
        .unwrap_or_default();
    list.push(Workload {
        name: format!("sharegpt-bs{bs}"),
        title: format!("ShareGPT BS={bs}"),
        sharegpt: true,
        concurrency: Some(bs),
        prompts: completed,
        prompts_from_blocks: true,
        comments: vec![format!(
            "result blocks labelled \"# {label}\": ShareGPT at {bs} requests in flight"
        )],
        ..base
    });
    Some(list.len() - 1)
}

/// A token count as a label prints it: `128`, `1024`, `4K`, `16k`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Size {
    n: u64,
    /// Written with `k`/`K`: thousands, as 1000 or 1024.
    k: bool,
}

impl Size {
    fn parse(word: &str) -> Option<Self> {
        let (digits, k) = match word.strip_suffix(['k', 'K']) {
            Some(d) => (d, true),
            None => (word, false),
        };
        Some(Self {
            n: digits.parse().ok()?,
            k,
        })
    }

    /// Whether `tokens` is this size: `64` is 64 tokens, `64K` is 64000 or
    /// 65536, never 64.
    fn is(self, tokens: u64) -> bool {
        if self.k {
            tokens == self.n * 1000 || tokens == self.n * 1024
        } else {
            tokens == self.n
        }
    }
}

/// The input sizes a warning says fail: `inputs above 32K run out of
/// memory`, `fails at 16k tokens or more`. A warning that says nothing
/// fails, or names no bound, names none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailingInputs {
    bound: Size,
    /// `or more`, `at least`: the bound itself fails too.
    inclusive: bool,
}

impl FailingInputs {
    pub fn of(warning: &str) -> Option<Self> {
        let lower = warning.to_lowercase();
        let fails = [
            "out of memory",
            "oom",
            "fail",
            "crash",
            "error",
            "cannot run",
        ]
        .iter()
        .any(|w| lower.contains(w));
        if !fails {
            return None;
        }
        let words: Vec<&str> = lower
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ';' | ':' | '(' | ')'))
            .filter(|w| !w.is_empty())
            .collect();
        const ABOVE: [&[&str]; 9] = [
            &["above"],
            &["over"],
            &["beyond"],
            &["exceeding"],
            &["larger", "than"],
            &["longer", "than"],
            &["more", "than"],
            &["greater", "than"],
            &[">"],
        ];
        const FROM: [&[&str]; 2] = [&["at", "least"], &[">="]];
        const AND_UP: [&[&str]; 4] = [
            &["or", "more"],
            &["and", "above"],
            &["or", "longer"],
            &["or", "larger"],
        ];
        let at = |i: usize, phrase: &[&str]| words[i..].starts_with(phrase);
        for i in 0..words.len() {
            for (phrases, inclusive) in [(&ABOVE[..], false), (&FROM[..], true)] {
                if let Some(p) = phrases.iter().find(|p| at(i, p))
                    && let Some(bound) = words.get(i + p.len()).and_then(|w| Size::parse(w))
                {
                    return Some(Self { bound, inclusive });
                }
            }
            if let Some(bound) = Size::parse(words[i]) {
                let next = words.get(i + 1).copied();
                // `16k tokens or more`: the unit may sit between.
                let j = if matches!(next, Some("tokens" | "token")) {
                    i + 2
                } else {
                    i + 1
                };
                if AND_UP.iter().any(|p| j <= words.len() && at(j, p)) {
                    return Some(Self {
                        bound,
                        inclusive: true,
                    });
                }
            }
        }
        None
    }

    /// Whether the workload's input size is one the warning says fails.
    /// `32K` is 32000 or 32768: above it is above both, at least it is at
    /// least the smaller.
    pub fn include(self, w: &Workload) -> bool {
        let Some(input) = w.input.filter(|_| !w.sharegpt) else {
            return false;
        };
        let (low, high) = if self.bound.k {
            (self.bound.n * 1000, self.bound.n * 1024)
        } else {
            (self.bound.n, self.bound.n)
        };
        if self.inclusive {
            input >= low
        } else {
            input > high
        }
    }
}

/// A random workload's label → its input size and, where it says, its
/// output size: `random 32K input`, `4k random input + 1k generation`,
/// `random 2048 input, 128 output`.
fn random_sizes(label: &str) -> Option<(Size, Option<Size>)> {
    let words: Vec<&str> = label
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '+' | '/' | '(' | ')'))
        .filter(|w| !w.is_empty())
        .collect();
    if !words.contains(&"random") {
        return None;
    }
    // The size before a word (`32k input`), or after `random` (`random 32k input`).
    let before = |names: &[&str]| {
        words.iter().enumerate().find_map(|(i, w)| {
            if !names.contains(w) || i == 0 {
                return None;
            }
            Size::parse(words[i - 1]).or_else(|| {
                (words[i - 1] == "random")
                    .then(|| i.checked_sub(2).and_then(|j| Size::parse(words[j])))
                    .flatten()
            })
        })
    };
    let input = before(&["input", "prompt", "in"])?;
    let output = before(&["output", "generation", "out", "generated"]);
    Some((input, output))
}

/// The workload of a profile named `name` ("ShareGPT", "Throughput
/// Profile"), or of the case the conclusion calls it ("Rate 8").
pub fn for_profile(list: &[Workload], name: &str) -> Option<usize> {
    let n = name.to_lowercase();
    let n = n.strip_suffix(" profile").unwrap_or(&n);
    list.iter()
        .position(|w| w.profile.as_deref().is_some_and(|p| p.to_lowercase() == n))
        .or_else(|| {
            list.iter()
                .position(|w| w.title.to_lowercase() == name.to_lowercase())
        })
        .or_else(|| {
            let rate = n.strip_prefix("rate ")?;
            list.iter().position(|w| w.rate.as_deref() == Some(rate))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_items_and_names() {
        assert_eq!(
            dataset_item("Very long prompt: 32000 input tokens, 100 output tokens"),
            Some(("Very long".into(), 32000, 100))
        );
        assert_eq!(slug("Long Context"), "long-context");
        assert_eq!(slug("TP+DP Attention"), "tp-dp-attention");
    }

    #[test]
    fn labels_name_workloads_by_length_or_concurrency() {
        let mut list = vec![
            Workload {
                name: "sharegpt".into(),
                sharegpt: true,
                ..Workload::default()
            },
            Workload {
                name: "very-long".into(),
                input: Some(32000),
                ..Workload::default()
            },
        ];
        assert_eq!(for_label(&mut list, "random 32K input", None), Some(1));
        assert_eq!(
            for_label(&mut list, "--max-num-batched-tokens 4096", None),
            None
        );
        assert_eq!(
            for_label(&mut list, "ShareGPT batch size 4", Some(100)),
            Some(2)
        );
        assert_eq!(list[2].name, "sharegpt-bs4");
        assert_eq!(list[2].prompts, Some(100));
        assert_eq!(for_label(&mut list, "BS=4", None), Some(2));
    }

    /// Class 4: a conclusion row labelled with a profile's name and a
    /// description is that profile's, whatever the profile.
    #[test]
    fn a_case_with_a_description_is_its_profiles() {
        use crate::page::model::{At, Profile};
        let profile = |name: &str, input: &str| {
            At::new(
                1,
                Profile {
                    name: name.into(),
                    fields: vec![
                        ("dataset_name".into(), "Random".into()),
                        ("dataset_input_tokens".into(), input.into()),
                        ("dataset_output_tokens".into(), "256".into()),
                    ],
                },
            )
        };
        let page = Page {
            profiles: vec![profile("Mixed", "1000"), profile("Small Context", "2048")],
            ..Page::default()
        };
        let cases = [
            "Small Context (2K in / 256 out)".to_owned(),
            "Mixed: chat and retrieval (the target)".to_owned(),
        ];
        let list = from_page(&page, &cases);
        let titles: Vec<(&str, &str)> = list
            .iter()
            .map(|w| (w.name.as_str(), w.title.as_str()))
            .collect();
        assert_eq!(
            titles,
            [
                ("small-context", cases[0].as_str()),
                ("mixed", cases[1].as_str())
            ]
        );
        assert_eq!(for_profile(&list, "Mixed"), Some(1));
    }

    /// Class 5: `64K` is a size (64000 or 65536 tokens), never 64 tokens;
    /// `64` is 64; a caption names its output size too.
    #[test]
    fn a_warning_names_the_input_sizes_that_fail() {
        let random = |input| Workload {
            input: Some(input),
            ..Workload::default()
        };
        let above = FailingInputs::of("Inputs above 32K run out of memory (OOM).").unwrap();
        assert!(above.include(&random(65536)));
        assert!(!above.include(&random(32768)));
        assert!(!above.include(&random(32000)));
        let from = FailingInputs::of("SGLang fails with 16k tokens or more").unwrap();
        assert!(from.include(&random(16000)));
        assert!(!from.include(&random(8192)));
        let sharegpt = Workload {
            sharegpt: true,
            ..random(65536)
        };
        assert!(!above.include(&sharegpt));
        // A warning that says nothing fails, or names no bound, names none.
        assert_eq!(
            FailingInputs::of("Results above 32K vary from run to run."),
            None
        );
        assert_eq!(
            FailingInputs::of("FP8 runs out of memory on this GPU."),
            None
        );
    }

    #[test]
    fn sizes_with_k_are_thousands_and_plain_sizes_are_tokens() {
        let random = |name: &str, input, output| Workload {
            name: name.into(),
            input: Some(input),
            output: Some(output),
            ..Workload::default()
        };
        let mut list = vec![
            random("short", 64, 4),
            random("long", 64000, 100),
            random("long-1k", 4096, 1024),
            random("long-200", 4096, 200),
        ];
        assert_eq!(for_label(&mut list, "random 64K input", None), Some(1));
        assert_eq!(for_label(&mut list, "random 64k input", None), Some(1));
        assert_eq!(for_label(&mut list, "random 64 input", None), Some(0));
        assert_eq!(for_label(&mut list, "random 1024 input", None), None);
        assert_eq!(
            for_label(&mut list, "4k random input + 1k generation", None),
            Some(2)
        );
        assert_eq!(
            for_label(&mut list, "random 4096 input, 200 output", None),
            Some(3)
        );
    }
}

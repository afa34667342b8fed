//! The page's elements → the typed [`Page`]: which heading a text, code block
//! or table is under says what it is.

use super::PageError;
use super::markdown::{Element, Located, elements};
use super::model::{At, Config, Page, Profile, Role, Section};
use super::results::outcomes;

/// Where in the page an element is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Top,
    Conclusion,
    Objective,
    Model,
    Hardware,
    Engines,
    Datasets,
    Script,
    Profiles,
    Setup,
    Results,
    Summary,
}

/// What the next code block holds, from the admonition or list item above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Nothing,
    Serving(Option<Role>),
    Params(Option<Role>),
    Results,
    Recommended,
}

/// Whether a text opens a warning admonition (`!!! warning`, `??? danger
/// "Out of memory"`): what it says may name configurations that fail.
fn is_warning(text: &str) -> bool {
    let first = text.lines().next().unwrap_or("").trim();
    let Some(rest) = ["!!! ", "???+ ", "??? "]
        .iter()
        .find_map(|p| first.strip_prefix(p))
    else {
        return false;
    };
    let kind = rest.split_whitespace().next().unwrap_or("").to_lowercase();
    [
        "warning",
        "danger",
        "failure",
        "caution",
        "attention",
        "bug",
    ]
    .contains(&kind.as_str())
}

/// Reads a page; an element it cannot place is an error naming its line.
pub fn read(text: &str) -> Result<Page, PageError> {
    let mut page = Page::default();
    let mut part = Part::Top;
    let mut next = Next::Nothing;
    let mut label: Option<String> = None;
    let mut profile: Option<String> = None;
    let mut profile_name: Option<At<String>> = None;
    let mut title_seen = false;
    // A warning admonition whose title was read and whose body comes next.
    let mut warning: Option<usize> = None;
    for Located { line, element } in elements(text) {
        match element {
            Element::Heading { level, text } => {
                next = Next::Nothing;
                warning = None;
                if level == 1 && !title_seen {
                    page.title = At::new(line, text);
                    title_seen = true;
                    continue;
                }
                let lower = text.to_lowercase();
                if level == 2 {
                    part = match lower.as_str() {
                        "conclusion" => Part::Conclusion,
                        "optimization objective" => Part::Objective,
                        "experiment results" => Part::Results,
                        _ => Part::Setup,
                    };
                    continue;
                }
                if part == Part::Results || part == Part::Summary {
                    if level == 3 {
                        label = None;
                        profile = None;
                        if lower == "summary of optimization options" {
                            part = Part::Summary;
                            continue;
                        }
                        part = Part::Results;
                        page.sections.push(Section {
                            title: At::new(line, strip_number(&text)),
                            other_cases: lower == "other benchmark cases",
                            ..Section::default()
                        });
                    } else {
                        // `#### vLLM` names the configuration below it; under
                        // "Other Benchmark Cases", `#### ShareGPT` the workload.
                        let other = page.sections.last().is_some_and(|s| s.other_cases);
                        if other {
                            profile = Some(text);
                        } else {
                            label = Some(text);
                        }
                    }
                    continue;
                }
                part = match lower.as_str() {
                    "model" => Part::Model,
                    "hardware" => Part::Hardware,
                    "engine version" => Part::Engines,
                    "benchmark dataset" => Part::Datasets,
                    "benchmark script" => Part::Script,
                    "benchmark profiles" => Part::Profiles,
                    _ if part == Part::Profiles && level >= 5 => {
                        profile_name = Some(At::new(line, text));
                        Part::Profiles
                    }
                    _ => Part::Setup,
                };
            }
            Element::Text(text) => match part {
                Part::Objective => page.objective = Some(At::new(line, text)),
                Part::Model if page.model.is_none() => page.model = Some(At::new(line, text)),
                Part::Hardware if page.hardware.is_none() => {
                    page.hardware = Some(At::new(line, text));
                }
                Part::Engines => {
                    for (i, l) in text.lines().enumerate() {
                        page.engines.push(At::new(line + i, engine_version(l)));
                    }
                }
                Part::Datasets => {
                    for (i, l) in text.lines().enumerate() {
                        page.datasets.push(At::new(line + i, l.trim().to_owned()));
                    }
                }
                Part::Conclusion if text.to_lowercase().contains("serving command") => {
                    next = Next::Recommended;
                }
                Part::Results | Part::Summary if warning.is_some() || is_warning(&text) => {
                    // A warning's title line, then its body (in this text or the next).
                    let body = match warning.take() {
                        Some(_) => text.as_str(),
                        None => text.split_once('\n').map_or("", |(_, b)| b),
                    };
                    let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
                    if body.is_empty() {
                        warning = Some(line);
                    } else if let Some(section) = page.sections.last_mut() {
                        section.notes.push(At::new(line, body.clone()));
                        section.warnings.push(At::new(line, body));
                    }
                }
                Part::Results | Part::Summary => {
                    let section_lines: Vec<&str> = text.lines().collect();
                    let admonition = section_lines
                        .iter()
                        .position(|l| l.trim_start().starts_with("???"));
                    let (words, admonition) = match admonition {
                        Some(i) => (&section_lines[..i], Some(section_lines[i])),
                        None => (&section_lines[..], None),
                    };
                    let words = words.join(" ");
                    let words = words.trim();
                    if let Some(rest) = words.strip_prefix("Profile:") {
                        profile = Some(rest.trim().trim_matches('`').to_owned());
                    } else if let Some(role) = params_item(words) {
                        next = Next::Params(role);
                    } else if !words.is_empty() && admonition.is_some() {
                        label = Some(words.to_owned());
                    } else if !words.is_empty()
                        && let Some(section) = page.sections.last_mut()
                    {
                        section.notes.push(At::new(line, words.to_owned()));
                    }
                    if let Some(title) = admonition {
                        let title = title.to_lowercase();
                        let role = if title.contains("baseline") {
                            Some(Role::Baseline)
                        } else if title.contains("optimized") {
                            Some(Role::Optimized)
                        } else {
                            None
                        };
                        next = if title.contains("serving script") {
                            Next::Serving(role)
                        } else if title.contains("benchmark result") {
                            Next::Results
                        } else {
                            Next::Nothing
                        };
                    }
                }
                _ => {}
            },
            Element::Code { text, .. } => match (part, next) {
                (Part::Conclusion, Next::Recommended) => {
                    page.recommended = Some(At::new(line, command_line(&text)));
                    next = Next::Nothing;
                }
                (Part::Script, _) => {
                    for (i, l) in text.lines().enumerate() {
                        let l = l.trim();
                        if l.starts_with("vllm bench serve") {
                            let words = l.split_whitespace().map(str::to_owned).collect();
                            page.bench_commands.push(At::new(line + i, words));
                        }
                    }
                }
                (Part::Profiles, _) => {
                    if let Some(name) = profile_name.take() {
                        let fields = text
                            .lines()
                            .filter_map(|l| l.split_once(':'))
                            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                            .collect();
                        page.profiles.push(At::new(
                            name.line,
                            Profile {
                                name: name.value,
                                fields,
                            },
                        ));
                    }
                }
                (Part::Results, Next::Serving(role) | Next::Params(role)) => {
                    let Some(section) = page.sections.last_mut() else {
                        continue;
                    };
                    let mut config = Config {
                        line,
                        label: label.take(),
                        role,
                        profile: profile.clone(),
                        ..Config::default()
                    };
                    if matches!(next, Next::Serving(_)) {
                        config.command = Some(At::new(line, command_line(&text)));
                    } else {
                        let params = text
                            .lines()
                            .map(str::trim)
                            .filter(|l| !l.is_empty() && !l.starts_with('#'))
                            .map(|l| l.trim_end_matches('\\').trim().to_owned())
                            .collect();
                        config.params = Some(At::new(line, params));
                    }
                    section.configs.push(config);
                    next = Next::Nothing;
                }
                (Part::Results, Next::Results) => {
                    let (found, unplaced) = outcomes(&text, line)?;
                    if let Some(section) = page.sections.last_mut() {
                        section
                            .unplaced
                            .extend(unplaced.into_iter().map(|(l, t)| At::new(l, t)));
                    }
                    let Some(config) = page.sections.last_mut().and_then(|s| s.configs.last_mut())
                    else {
                        return Err(PageError::Unexpected {
                            line,
                            what: "a benchmark result before any serving script".into(),
                        });
                    };
                    config.results.extend(found);
                    next = Next::Nothing;
                }
                _ => {}
            },
            Element::Table { rows } => {
                let rows: Vec<At<Vec<String>>> = rows
                    .into_iter()
                    .map(|(line, cells)| At::new(line, cells))
                    .collect();
                match part {
                    Part::Conclusion => page.conclusion = Some(At::new(line, rows)),
                    Part::Summary => page.summary = Some(At::new(line, rows)),
                    _ => {}
                }
            }
        }
    }
    if !title_seen {
        return Err(PageError::Missing {
            what: "title (a `# ` heading)",
        });
    }
    if page.sections.iter().all(|s| s.configs.is_empty()) {
        return Err(PageError::Missing {
            what: "measured configuration (a serving script or backend parameters under \"Experiment Results\")",
        });
    }
    Ok(page)
}

/// "1. Choosing the Inference Engine" → "Choosing the Inference Engine".
fn strip_number(title: &str) -> String {
    match title.split_once(". ") {
        Some((n, rest)) if n.chars().all(|c| c.is_ascii_digit()) => rest.to_owned(),
        _ => title.to_owned(),
    }
}

/// "vLLM: v0.11.0", "vLLM v0.17.1", "MindIE: 2.1RC1" → (engine, version).
fn engine_version(line: &str) -> (String, String) {
    let line = line.trim();
    let (name, version) = match line.split_once(':') {
        Some((n, v)) => (n, v),
        None => line.rsplit_once(' ').unwrap_or((line, "")),
    };
    let version = version.trim();
    let version = version.strip_prefix('v').unwrap_or(version);
    (name.trim().to_owned(), version.to_owned())
}

/// "Backend Parameters:", "Baseline Backend Parameters:" → the side, if any.
fn params_item(words: &str) -> Option<Option<Role>> {
    let lower = words.to_lowercase();
    let rest = lower.strip_suffix("backend parameters:")?.trim();
    match rest {
        "" => Some(None),
        "baseline" => Some(Some(Role::Baseline)),
        "optimized" => Some(Some(Role::Optimized)),
        _ => None,
    }
}

/// A shell script of one command → the command on one line: comment lines
/// dropped, `\` continuations joined.
fn command_line(script: &str) -> String {
    script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_end_matches('\\').trim())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_versions_of_both_eras() {
        assert_eq!(
            engine_version("vLLM: v0.11.0"),
            ("vLLM".into(), "0.11.0".into())
        );
        assert_eq!(
            engine_version("SGLang v0.5.9"),
            ("SGLang".into(), "0.5.9".into())
        );
        assert_eq!(
            engine_version("MindIE: 2.1RC1"),
            ("MindIE".into(), "2.1RC1".into())
        );
    }

    #[test]
    fn commands_join_continuations_and_drop_comments() {
        assert_eq!(
            command_line("# simplified\nvllm serve m \\\n    --a=1 \\\n    --b\n"),
            "vllm serve m --a=1 --b"
        );
    }

    #[test]
    fn a_page_is_read_section_by_section() {
        let page = "# Optimizing X Throughput on NVIDIA A100 GPUs\n\n## Experimental Setup\n\n### Model\n\nQwen/X\n\n### Hardware\n\nA single NVIDIA A100 SXM GPU.\n\n### Engine Version\n\n- vLLM: v0.11.0\n\n## Experiment Results\n\n### 1. Choosing the Inference Engine\n\nvLLM\n??? info \"Serving script\"\n    ```bash\n    vllm serve Qwen/X\n    ```\n\n??? info \"Benchmark result\"\n    ```\n    # KeyError: 'weight'\n    ```\n\nResult: none\n";
        let page = read(page).unwrap();
        assert_eq!(
            page.title.value,
            "Optimizing X Throughput on NVIDIA A100 GPUs"
        );
        assert_eq!(page.model.unwrap().value, "Qwen/X");
        assert_eq!(page.engines[0].value, ("vLLM".into(), "0.11.0".into()));
        let section = &page.sections[0];
        assert_eq!(section.title.value, "Choosing the Inference Engine");
        assert_eq!(section.configs[0].label.as_deref(), Some("vLLM"));
        assert_eq!(
            section.configs[0].command.as_ref().unwrap().value,
            "vllm serve Qwen/X"
        );
        assert_eq!(section.configs[0].command.as_ref().unwrap().line, 24);
        assert_eq!(section.configs[0].results.len(), 1);
        assert_eq!(section.notes[0].value, "Result: none");
    }

    #[test]
    fn a_page_without_configurations_is_refused() {
        assert_eq!(read("# T\n\nnothing\n").unwrap_err().line(), 1);
    }
}

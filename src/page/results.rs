//! A "Benchmark result" code block of a page → its outcomes: each "Serving
//! Benchmark Result" block (read by [`crate::metrics::parse_block`]) with the
//! `# …` comment above it, or, where the page prints no block, the failure it
//! prints instead.

use super::PageError;
use super::model::Outcome;
use crate::metrics::parse_block;

/// A line of a result's code block that is neither a block, a comment nor
/// a caption above one (prose after the last block): its page line and text.
pub type Unplaced = (usize, String);

/// The outcomes of the code block whose first line is page line `first`,
/// and the lines it cannot place. A line above a block, `# …` or not, is
/// its caption (`4k random input + 1k generation`).
pub fn outcomes(text: &str, first: usize) -> Result<(Vec<Outcome>, Vec<Unplaced>), PageError> {
    let lines: Vec<&str> = text.lines().collect();
    let is_header = |l: &str| l.starts_with('=') && l.contains("Serving Benchmark Result");
    if !lines.iter().any(|l| is_header(l.trim())) {
        let error: Vec<&str> = lines
            .iter()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .filter(|l| !l.is_empty())
            .collect();
        if error.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let failure = Outcome::Failure {
            line: first,
            label: None,
            error: error.join(" "),
        };
        return Ok((vec![failure], Vec::new()));
    }
    let mut out = Vec::new();
    let mut unplaced = Vec::new();
    let mut label: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        if is_header(l) {
            let start = i;
            let end = (i + 1..lines.len())
                .find(|&j| {
                    let t = lines[j].trim();
                    !t.is_empty() && t.chars().all(|c| c == '=')
                })
                .unwrap_or(lines.len() - 1);
            let block_text = lines[start..=end].join("\n");
            let block = parse_block(&block_text).map_err(|e| {
                let within = e.line().unwrap_or(1);
                let message = e.to_string();
                // The block's own line number gives way to the page's.
                let message = message
                    .strip_prefix(&format!("line {within}: "))
                    .unwrap_or(&message)
                    .to_owned();
                PageError::Block {
                    line: first + start + within - 1,
                    message,
                }
            })?;
            out.push(Outcome::Block {
                line: first + start,
                label: label.take(),
                block,
            });
            i = end + 1;
            continue;
        }
        let block_below = lines[i + 1..].iter().any(|l| is_header(l.trim()));
        if let Some(comment) = l.strip_prefix('#') {
            label = Some(comment.trim().to_owned());
        } else if !l.is_empty() && block_below {
            label = Some(l.to_owned());
        } else if !l.is_empty() {
            unplaced.push((first + i, l.to_owned()));
        }
        i += 1;
    }
    Ok((out, unplaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "============ Serving Benchmark Result ============
Successful requests:                     100
Benchmark duration (s):                  724.56
Total input tokens:                      3200000
Request throughput (req/s):              0.14
Total Token throughput (tok/s):          4430.00
==================================================
";

    #[test]
    fn each_block_takes_the_comment_above_it_and_its_line() {
        let text = format!("# random 32K input\n{BLOCK}\n# random 4K input\n{BLOCK}");
        let (out, _) = outcomes(&text, 10).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].label(), Some("random 32K input"));
        assert_eq!(out[0].line(), 11);
        assert_eq!(out[1].label(), Some("random 4K input"));
        assert_eq!(out[1].line(), 20);
        let Outcome::Block { block, .. } = &out[0] else {
            panic!()
        };
        assert_eq!(block.texts["total_token_throughput"], "4430.00");
    }

    #[test]
    fn a_result_without_a_block_is_the_failure_it_prints() {
        let (out, _) = outcomes("# RuntimeError: Unsupported SM version\n", 5).unwrap();
        assert_eq!(
            out,
            vec![Outcome::Failure {
                line: 5,
                label: None,
                error: "RuntimeError: Unsupported SM version".into()
            }]
        );
    }

    /// Class 6: a line of prose inside the fence above a block is its
    /// caption; one no block follows is returned, placed nowhere, and the
    /// reading goes on.
    #[test]
    fn a_caption_inside_the_fence_labels_the_block_below_it() {
        let text = format!("4k random input + 1k generation\n{BLOCK}\nwe stopped here\n");
        let (out, unplaced) = outcomes(&text, 10).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].label(), Some("4k random input + 1k generation"));
        assert_eq!(out[0].line(), 11);
        assert_eq!(unplaced, vec![(19, "we stopped here".to_owned())]);
    }

    #[test]
    fn a_broken_block_is_an_error_at_its_page_line() {
        let text = BLOCK.replace("724.56", "soon");
        let err = outcomes(&text, 100).unwrap_err();
        assert_eq!(err.line(), 102, "{err}");
    }
}

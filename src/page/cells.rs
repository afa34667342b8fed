//! The page's table cells as printed: their lines, the numbers and deltas
//! they print, and what they say about how (per GPU). (pure)

/// Whether a page's text says its number is per device: `/GPU`, "per
/// GPU", "scaled to the same GPU count" (or NPU).
pub fn says_per_device(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "/gpu",
        "/npu",
        "per gpu",
        "per npu",
        "same gpu count",
        "same npu count",
    ]
    .iter()
    .any(|m| t.contains(m))
}

pub fn strip_bold(cell: &str) -> String {
    cell.trim().trim_matches('*').trim().to_owned()
}

/// A cell's lines as printed: split at `<br>`, HTML tags left out.
pub fn cell_lines(cell: &str) -> Vec<String> {
    cell.split("<br>")
        .map(|line| {
            let mut text = String::new();
            let mut in_tag = false;
            for c in line.chars() {
                match c {
                    '<' => in_tag = true,
                    '>' if in_tag => in_tag = false,
                    c if !in_tag => text.push(c),
                    _ => {}
                }
            }
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            strip_bold(&text)
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// `gain` printed as `like` is printed ("+47.1%": sign, same decimals).
pub fn format_delta(gain: f64, like: &str) -> String {
    let decimals = like
        .trim_end_matches('%')
        .split_once('.')
        .map_or(0, |(_, f)| f.len());
    let sign = if gain >= 0.0 { "+" } else { "" };
    format!("{sign}{gain:.decimals$}%")
}

/// The first delta a text prints: "(+47.1%)" or "+47.1%" → "+47.1%".
pub fn printed_delta(text: &str) -> Option<String> {
    let start = text.find(['+', '-'])?;
    let rest = &text[start..];
    let end = rest.find('%')?;
    let delta = &rest[..=end];
    delta[1..end].parse::<f64>().ok()?;
    Some(delta.to_owned())
}

/// "Total TPS: 7081.34x2 <span…>" → ("7081.34", Some(2)).
pub fn cell_number(cell: &str, label: &str) -> Option<(String, Option<u32>)> {
    let rest = cell.split(label).nth(1)?.trim_start();
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .collect();
    let number = number.replace(',', "");
    number.parse::<f64>().ok()?;
    let after = &rest[rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .unwrap_or(rest.len())..];
    let replicas = after.strip_prefix('x').and_then(|r| {
        r.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()
    });
    Some((number, replicas))
}

/// The decimals of the first delta a cell prints: "(+47.1%)" → 1, "(1.23x faster)" → 2.
pub fn delta_decimals(cell: &str) -> Option<usize> {
    let start = cell.find('(')?;
    let inner = &cell[start + 1..];
    let end = inner.find(['%', 'x'])?;
    let number = inner[..end].trim_start_matches(['+', '-']);
    number.parse::<f64>().ok()?;
    Some(number.split_once('.').map_or(0, |(_, f)| f.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conclusion_cells() {
        assert_eq!(
            cell_number("Total TPS: 7081.34x2 <span>(+134.8%)</span>", "Total TPS:"),
            Some(("7081.34".into(), Some(2)))
        );
        assert_eq!(
            cell_number(
                "Total TPS: 3922.41<br>Mean TPOT(ms): 114.34",
                "Mean TPOT(ms):"
            ),
            Some(("114.34".into(), None))
        );
        assert_eq!(delta_decimals("x <span>(+47.1%)</span>"), Some(1));
        assert_eq!(
            cell_lines(
                "Total TPS: 5770.24 <span style=\"background-color:lightgreen;\">(+47.1%)</span><br>Mean TPOT(ms): 260.46"
            ),
            ["Total TPS: 5770.24 (+47.1%)", "Mean TPOT(ms): 260.46"]
        );
        assert_eq!(
            printed_delta("<span>+47.1%</span>").as_deref(),
            Some("+47.1%")
        );
        assert_eq!(printed_delta("-"), None);
        assert_eq!(delta_decimals("x <span>(1.23x faster)</span>"), Some(2));
        assert_eq!(format_delta(47.06, "+47.1%"), "+47.1%");
        assert_eq!(format_delta(-0.4, "-0.4%"), "-0.4%");
    }

    #[test]
    fn a_page_says_where_a_number_is_per_device() {
        assert!(says_per_device("+26.8%/GPU"));
        assert!(says_per_device("26.8% higher token throughput per GPU."));
        assert!(says_per_device("scaled to the same GPU count"));
        assert!(!says_per_device("+26.8%"));
    }
}

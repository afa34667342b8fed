//! Progress on stderr, drawn from the library's progress model: on a
//! terminal, live indicatif bars (a spinner while an engine starts, then
//! requests done; one per launch under `--jobs`); otherwise plain lines, at
//! each tenth of a benchmark's requests and every 30 s of it, never one per
//! request, so CI logs stay readable.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress::BenchProgress;

/// The least time between two plain lines of a benchmark; a test sets
/// `PERFPIPE_PROGRESS_SECS` (0: a line per tenth).
const PLAIN_GAP: Duration = Duration::from_secs(10);
/// A benchmark's tenths come slower than this many gaps: a line anyway.
const PLAIN_GAPS_AT_MOST: u32 = 6;
/// How often a plain log hears of an engine still starting (or every
/// `PERFPIPE_PROGRESS_SECS`).
const PLAIN_START_EVERY: Duration = Duration::from_secs(15);
/// The most of an engine's log line a plain line shows.
const LOG_LINE_CHARS: usize = 160;

/// Every bar on stderr, by the id of what it follows (a run's key, or one
/// `bench`).
pub struct Display {
    live: Option<MultiProgress>,
    /// What a plain line starts with (the indentation of the lines it follows).
    indent: &'static str,
    /// The least time between two plain lines of a benchmark.
    plain_gap: Duration,
    /// The time between two plain lines of a starting engine.
    plain_start_gap: Duration,
    bars: HashMap<String, Bar>,
}

#[derive(Default)]
struct Bar {
    live: Option<ProgressBar>,
    /// Requests done when the last plain line was written, and when.
    plain_done: usize,
    plain_at: Duration,
    /// When the last plain "still starting" line was written.
    plain_start_at: Duration,
    last: Option<BenchProgress>,
}

impl Display {
    /// Live bars when stderr is a terminal, else plain lines indented by `indent`.
    pub fn new(indent: &'static str) -> Self {
        let live = std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let set: Option<Duration> = std::env::var("PERFPIPE_PROGRESS_SECS")
            .ok()
            .and_then(|s| Duration::try_from_secs_f64(s.parse().ok()?).ok());
        Self {
            live,
            indent,
            plain_gap: set.unwrap_or(PLAIN_GAP),
            plain_start_gap: set.unwrap_or(PLAIN_START_EVERY),
            bars: HashMap::new(),
        }
    }

    /// A line above the bars.
    pub fn line(&self, text: &str) {
        match &self.live {
            Some(multi) if !self.bars.is_empty() => {
                if multi.println(text).is_err() {
                    eoutln!("{text}");
                }
            }
            _ => eoutln!("{text}"),
        }
    }

    /// A spinner for `id`, labelled `prefix`, until its benchmark starts.
    pub fn start(&mut self, id: &str, prefix: String) {
        let live = self.live.as_ref().map(|multi| {
            let bar = multi.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix}{wide_msg}")
                    .expect("a valid template"),
            );
            bar.set_prefix(format!("{prefix} "));
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        self.bars.insert(
            id.to_owned(),
            Bar {
                live,
                ..Bar::default()
            },
        );
    }

    /// What `id`'s starting engine waits for, and the last line it logged.
    pub fn starting(
        &mut self,
        id: &str,
        after: Duration,
        waiting_for: &str,
        last_line: Option<&str>,
    ) {
        let bar = self.bars.entry(id.to_owned()).or_default();
        let said = last_line.map(|l| format!(": {l}")).unwrap_or_default();
        if let Some(live) = &bar.live {
            live.set_message(format!(
                "engine starting, {}s, {waiting_for}{said}",
                after.as_secs()
            ));
            return;
        }
        if after < bar.plain_start_at {
            // Started again (a retry): its time counts from zero.
            bar.plain_start_at = Duration::ZERO;
        }
        if after < bar.plain_start_at + self.plain_start_gap {
            return;
        }
        bar.plain_start_at = after;
        let said: String = said.chars().take(LOG_LINE_CHARS + 2).collect();
        eoutln!(
            "{}engine still starting after {}s ({waiting_for}){said}",
            self.indent,
            after.as_secs()
        );
    }

    /// `id`'s benchmark of `total` requests starts: its spinner becomes a bar.
    pub fn benchmark(&mut self, id: &str, total: usize) {
        let bar = self.bars.entry(id.to_owned()).or_default();
        bar.last = Some(BenchProgress::new(total));
        (bar.plain_done, bar.plain_at) = (0, Duration::ZERO);
        let Some(multi) = &self.live else { return };
        let live = bar
            .live
            .get_or_insert_with(|| multi.add(ProgressBar::no_length()));
        live.disable_steady_tick();
        live.set_length(total as u64);
        live.set_position(0);
        live.set_style(
            ProgressStyle::with_template("{prefix}[{bar:30}] {wide_msg}")
                .expect("a valid template")
                .progress_chars("#>-"),
        );
        live.set_message(summary(&BenchProgress::new(total)));
    }

    /// A request of `id`'s benchmark ended.
    pub fn request(&mut self, id: &str, progress: &BenchProgress) {
        let bar = self.bars.entry(id.to_owned()).or_default();
        bar.last = Some(progress.clone());
        if let Some(live) = &bar.live {
            live.set_position(progress.done as u64);
            live.set_message(summary(progress));
            return;
        }
        if plain_due(bar.plain_done, bar.plain_at, progress, self.plain_gap) {
            (bar.plain_done, bar.plain_at) = (progress.done, progress.elapsed);
            eoutln!("{}{}", self.indent, summary(progress));
        }
    }

    /// `id` is done: its bar goes, leaving a line with its final counts.
    pub fn finish(&mut self, id: &str) {
        let Some(bar) = self.bars.remove(id) else {
            return;
        };
        if let Some(live) = bar.live {
            live.finish_and_clear();
            if let Some(last) = &bar.last
                && last.done > 0
            {
                self.line(&format!("{}{}", self.indent, summary(last)));
            }
        }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        for (_, bar) in self.bars.drain() {
            if let Some(live) = bar.live {
                live.finish_and_clear();
            }
        }
    }
}

/// Whether a plain log hears of this request: `gap` after the last line,
/// at a new tenth of the requests, the last one, or six gaps on. A
/// benchmark shorter than `gap` adds no line to the log.
fn plain_due(done_then: usize, at_then: Duration, now: &BenchProgress, gap: Duration) -> bool {
    let tenth = (now.total / 10).max(1);
    now.elapsed >= at_then + gap
        && (now.done == now.total
            || now.done / tenth > done_then / tenth
            || (!gap.is_zero() && now.elapsed >= at_then + gap * PLAIN_GAPS_AT_MOST))
}

/// `12/40 requests (0 failed) · 830 output tok/s · 3.1s elapsed · ETA 7s`.
pub fn summary(p: &BenchProgress) -> String {
    let eta = match p.eta() {
        Some(eta) if p.done < p.total => format!(" · ETA {}s", eta.as_secs_f64().ceil()),
        _ => String::new(),
    };
    format!(
        "{}/{} requests ({} failed) · {:.0} output tok/s · {:.1}s elapsed{eta}",
        p.done,
        p.total,
        p.failed,
        p.output_tokens_per_s(),
        p.elapsed.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(done: usize, total: usize, secs: f64) -> BenchProgress {
        BenchProgress {
            total,
            done,
            elapsed: Duration::from_secs_f64(secs),
            ..BenchProgress::default()
        }
    }

    #[test]
    fn plain_lines_come_per_tenth_and_gap_not_per_request() {
        let lines = |secs: f64, gap: u64| {
            let mut lines = Vec::new();
            let (mut done, mut when) = (0, Duration::ZERO);
            for n in 1..=1000 {
                let now = at(n, 1000, secs * n as f64 / 1000.0);
                if plain_due(done, when, &now, Duration::from_secs(gap)) {
                    (done, when) = (n, now.elapsed);
                    lines.push(n);
                }
            }
            lines
        };
        // Without a gap, a line per tenth.
        assert_eq!(
            lines(20.0, 0),
            (1..=10).map(|k| k * 100).collect::<Vec<_>>()
        );
        // 1000 requests in 20 s, 10 s apart: the tenth after 10 s, the last.
        assert_eq!(lines(20.0, 10), [500, 1000]);
        // Done within the gap: no line.
        assert_eq!(lines(5.0, 10), Vec::<usize>::new());
        // A tenth every 200 s: a line a minute anyway.
        assert!(plain_due(
            101,
            Duration::from_secs(10),
            &at(102, 1000, 70.0),
            Duration::from_secs(10)
        ));
        assert!(!plain_due(
            101,
            Duration::from_secs(10),
            &at(102, 1000, 69.0),
            Duration::from_secs(10)
        ));
    }

    #[test]
    fn the_summary_names_counts_rate_and_time_left() {
        let mut p = at(12, 40, 3.0);
        p.failed = 1;
        p.output_tokens = 2400;
        assert_eq!(
            summary(&p),
            "12/40 requests (1 failed) · 800 output tok/s · 3.0s elapsed · ETA 7s"
        );
        assert_eq!(
            summary(&at(40, 40, 3.0)),
            "40/40 requests (0 failed) · 0 output tok/s · 3.0s elapsed"
        );
    }
}

//! `search concurrency|rate from=… to=…`: a workload whose load is found,
//! not declared — the largest load within its SLO (issue 19 part 4). Each
//! probe of a search is the point a workload declaring that single load is.

use miette::SourceSpan;

use super::{RequestRate, Workload};

/// Which load a search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchAxis {
    /// The cap on requests in flight: whole numbers.
    Concurrency,
    /// Requests per second: reals, down to a precision.
    Rate,
}

impl SearchAxis {
    pub const NAMES: &[&str] = &["concurrency", "rate"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "concurrency" => Some(Self::Concurrency),
            "rate" => Some(Self::Rate),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Concurrency => "concurrency",
            Self::Rate => "rate",
        }
    }
}

/// How many midpoints a rate search takes at most when no `precision` is
/// given: the bracket ends no wider than 1/16 of the range.
pub const DEFAULT_RATE_DIVISIONS: f64 = 16.0;

/// A workload's `search`: bisection over `from..=to`.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchDecl {
    pub axis: SearchAxis,
    pub from: f64,
    pub to: f64,
    /// The percentage of requests sent that must meet the SLO for a probe to pass.
    pub attainment_pct: f64,
    /// How narrow a rate search's bracket ends (req/s); none for concurrency.
    pub precision: Option<f64>,
    /// Where it is written, for errors about it.
    pub span: SourceSpan,
}

impl SearchDecl {
    /// The precision a rate search stops at: declared, else a 16th of the range.
    pub fn rate_precision(&self) -> f64 {
        self.precision
            .unwrap_or((self.to - self.from) / DEFAULT_RATE_DIVISIONS)
    }

    /// How a probe at `load` is named after the workload: `chat@c=8`,
    /// `chat@rate=2.5`, as the points of a load axis are.
    pub fn point_name(&self, workload: &str, load: f64) -> String {
        match self.axis {
            SearchAxis::Concurrency => format!("{workload}@c={load}"),
            SearchAxis::Rate => format!("{workload}@rate={load}"),
        }
    }
}

impl Workload {
    /// The point of this searched workload at `load`: the workload a
    /// declaration of that single load would be, so its key is that one's
    /// (a probe is shared with a load axis and cached as any run is).
    pub fn probe(&self, load: f64) -> Option<Workload> {
        let search = self.search.as_ref()?;
        let mut point = self.clone();
        point.search = None;
        match search.axis {
            SearchAxis::Concurrency => point.concurrency = Some(load as u32),
            SearchAxis::Rate => point.rate = RequestRate::PerSecond(load),
        }
        point.name.value = search.point_name(&self.name.value, load);
        point.axis = Some(self.name.value.clone());
        Some(point)
    }
}

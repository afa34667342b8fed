//! `perfpipe report`: the report from the store or the published numbers.

use super::args::ReportArgs;
use super::plan::build_plan;
use super::{CliError, Loaded, load, write_text};
use crate::analyze::{self, RunRecord};
use crate::exit_code;
use crate::plan::Plan;

pub fn report(args: &ReportArgs) -> Result<u8, CliError> {
    let loaded = load(&args.common)?;
    let records = if args.published {
        analyze::from_expectations(&loaded.spec)
    } else {
        let plan = build_plan(&loaded, &args.common)?;
        stored_records(&loaded, &plan)?
    };
    let text = render(&loaded, records)?;
    print!("{text}");
    if let Some(out) = &args.out {
        write_text(out, &text)?;
    }
    Ok(exit_code::OK)
}

pub(super) fn stored_records(loaded: &Loaded, plan: &Plan) -> Result<Vec<RunRecord>, CliError> {
    let index = loaded
        .store
        .index(plan.runs.iter().map(|r| &r.key))
        .map_err(CliError::Store)?;
    Ok(analyze::from_store(plan, &index))
}

pub(super) fn render(loaded: &Loaded, records: Vec<RunRecord>) -> Result<String, CliError> {
    let analysis = analyze::analyze(&loaded.spec, records).map_err(CliError::Analysis)?;
    Ok(crate::report::markdown(&loaded.spec, &analysis))
}

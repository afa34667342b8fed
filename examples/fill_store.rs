//! Fills a store with one sample per run of an experiment, committed by the
//! store's own code, for `scripts/bench-noop.sh`: measuring `plan` and
//! `report` over 10,000 stored results must not wait for 10,000 real runs.
//!
//! Usage: `fill_store EXPERIMENT STORE TEMPLATE_RESULT_JSON [RUNTIME [LOG]]`;
//! each run's sample is the template (a `result.json` of a real run) under
//! the run's key, with LOG (say, a real run's engine log) as its
//! `logs/engine.log` when given (`scripts/bench-cache.sh` pushes them). Keys are those of the experiment as declared (no lockfile pins),
//! which is what `plan` computes for an experiment locked `--offline`.
#![expect(
    clippy::disallowed_macros,
    reason = "a developer's tool run by hand, outside perfpipe's stderr writer"
)]

use std::path::Path;
use std::process::ExitCode;

use perfpipe::facts::Runtime;
use perfpipe::spec::SourceFile;
use perfpipe::store::{RunResult, Store};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [experiment, store, template, rest @ ..] = args.as_slice() else {
        eprintln!(
            "usage: fill_store EXPERIMENT STORE TEMPLATE_RESULT_JSON [docker|local|sim [LOG]]"
        );
        return ExitCode::from(2);
    };
    let runtime = match rest.first().map(String::as_str) {
        None | Some("sim") => Runtime::Sim,
        Some("docker") => Runtime::Docker,
        Some("local") => Runtime::Local,
        Some(other) => {
            eprintln!("unknown runtime `{other}`");
            return ExitCode::from(2);
        }
    };
    match fill(
        Path::new(experiment),
        Path::new(store),
        Path::new(template),
        runtime,
        rest.get(1).map(Path::new),
    ) {
        Ok(n) => {
            eprintln!("fill_store: committed {n} samples");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fill_store: {e}");
            ExitCode::FAILURE
        }
    }
}

fn fill(
    experiment: &Path,
    store: &Path,
    template: &Path,
    runtime: Runtime,
    log: Option<&Path>,
) -> Result<usize, Box<dyn std::error::Error>> {
    let log = log.map(std::fs::read).transpose()?;
    let source = SourceFile {
        name: experiment.display().to_string(),
        text: std::fs::read_to_string(experiment)?,
    };
    let spec = perfpipe::spec::parse(&source).map_err(|e| format!("{e:?}"))?;
    let inputs = perfpipe::inputs::resolve(
        &spec,
        Path::new(""),
        &mut perfpipe::inputs::HashCache::in_memory(),
    )?;
    let template: RunResult = serde_json::from_str(&std::fs::read_to_string(template)?)?;
    let store = Store::open(store)?;
    store.prepare_to_write()?;
    let runs = perfpipe::key::keyed_runs(&spec, runtime, &inputs);
    for run in &runs {
        let lock = store.lock(&run.key)?;
        let pending = store.begin_sample()?;
        if let Some(log) = &log {
            pending.write_log("engine.log", log)?;
        }
        let mut result = template.clone();
        result.key = run.key.to_string();
        pending.commit(&store, &run.key, &run.canonical, &result, &lock)?;
    }
    Ok(runs.len())
}

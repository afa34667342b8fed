//! The report's numbers as JSON, for other tools: the same analysis the
//! markdown shows, with every number's source. (pure)

use serde_json::json;

use crate::analyze::Analysis;
use crate::spec::Spec;

pub fn json(spec: &Spec, analysis: &Analysis) -> String {
    let mut value = json!({
        "experiment": spec.name,
        "title": spec.title,
        "hardware": {"gpu": spec.hardware.gpu, "gpus": spec.hardware.gpus},
        "harness": spec.harness.kind.name(),
        "tolerance_pct": spec.report.tolerance_pct,
        "analysis": analysis,
    });
    // What the markdown derives per ranked step: the aggregate and per GPU.
    for (c, comparison) in analysis.comparisons.iter().enumerate() {
        for (i, r) in comparison.ranking.iter().enumerate() {
            let entry = &mut value["analysis"]["comparisons"][c]["ranking"][i];
            entry["aggregate_tps"] = r.aggregate().into();
            entry["tps_per_gpu"] = r.per_gpu().into();
        }
    }
    // serde_json writes NaN (an unknown number) as null.
    let mut text = serde_json::to_string_pretty(&value).expect("plain data");
    text.push('\n');
    text
}

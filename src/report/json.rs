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
    if let Some(cpu) = &spec.hardware.cpu {
        value["hardware"]["cpu"] = serde_json::to_value(cpu).expect("plain data");
    }
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

#[cfg(test)]
mod tests {
    use crate::analyze::{analyze, from_expectations};
    use crate::spec::{SourceFile, parse};

    #[test]
    fn a_cpu_study_names_its_cpu_and_a_gpu_study_has_no_cpu() {
        let study = |hardware: &str, gpus: &str| {
            parse(&SourceFile {
                name: "e.kdl".into(),
                text: format!(
                    "experiment e {{\n {hardware}\n model \"/m\"\n engine vllm version=\"0.32.0\"\n \
                     workload w {{ dataset random input=8 output=8; prompts 1 }}\n step s engine=vllm{gpus}\n}}\n"
                ),
            })
            .unwrap()
        };
        let hardware = |spec: &crate::spec::Spec| {
            let analysis = analyze(spec, from_expectations(spec));
            let json: serde_json::Value =
                serde_json::from_str(&super::json(spec, &analysis)).unwrap();
            json["hardware"].clone()
        };
        let cpu = study(r#"hardware "cpu" model="AMD EPYC" cores=2 isa="avx2""#, "");
        assert_eq!(
            hardware(&cpu),
            serde_json::json!({"gpu": "cpu", "gpus": 0, "cpu": {"model": "AMD EPYC", "cores": 2, "isa": ["avx2"]}})
        );
        let gpu = study(r#"hardware "nvidia-h100-sxm5-80gb" gpus=1"#, " gpus=1");
        assert_eq!(
            hardware(&gpu),
            serde_json::json!({"gpu": "nvidia-h100-sxm5-80gb", "gpus": 1})
        );
    }
}

//! Where and how jobs are submitted: from the command line or the
//! `[executor.slurm]` section of `perfpipe.toml`, never from the experiment
//! and never into a key (the same run measured through Slurm or locally has
//! one key). (pure)

use serde::Deserialize;

/// How a job runs the engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerMode {
    /// perfpipe on the node starts the engine as under `--runtime docker`.
    #[default]
    Docker,
    /// The job step runs in the engine's image through Pyxis/enroot
    /// (`srun --container-image`), perfpipe inside it.
    Pyxis,
}

/// The `[executor.slurm]` options; `None` leaves Slurm's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// In a form `sbatch --time` takes (`90`, `1:30:00`, `2-00:00:00`).
    pub time_limit: Option<String>,
    /// Further `sbatch` arguments, after perfpipe's own (they win).
    #[serde(default)]
    pub sbatch_args: Vec<String>,
    #[serde(default)]
    pub container: ContainerMode,
    /// Resubmissions of a launch whose job Slurm ended (node failure,
    /// preemption, time limit, out of memory, cancelled by an admin).
    pub retries: Option<u32>,
}

/// Resubmissions when neither the command line nor the file says.
pub const DEFAULT_RETRIES: u32 = 2;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a Slurm time limit")]
pub struct BadTimeLimit(pub String);

impl SlurmOptions {
    pub fn retries(&self) -> u32 {
        self.retries.unwrap_or(DEFAULT_RETRIES)
    }

    /// Refuses a time limit `sbatch` would refuse, before anything is submitted.
    pub fn check(&self) -> Result<(), BadTimeLimit> {
        match &self.time_limit {
            Some(limit) if !is_time_limit(limit) => Err(BadTimeLimit(limit.clone())),
            _ => Ok(()),
        }
    }
}

/// `minutes`, `minutes:seconds`, `hours:minutes:seconds`, `days-hours`,
/// `days-hours:minutes`, `days-hours:minutes:seconds`, or `UNLIMITED`
/// (sbatch(1), `--time`).
fn is_time_limit(text: &str) -> bool {
    let numbers = |part: &str, max: usize| {
        let fields: Vec<&str> = part.split(':').collect();
        fields.len() <= max
            && fields
                .iter()
                .all(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
    };
    if text.eq_ignore_ascii_case("unlimited") || text.eq_ignore_ascii_case("infinite") {
        return true;
    }
    match text.split_once('-') {
        Some((days, rest)) => numbers(days, 1) && numbers(rest, 3),
        None => numbers(text, 3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_default_to_two() {
        assert_eq!(SlurmOptions::default().retries(), DEFAULT_RETRIES);
    }

    #[test]
    fn time_limits_are_checked_as_sbatch_reads_them() {
        for good in [
            "90",
            "90:30",
            "1:30:00",
            "2-00",
            "2-12:30",
            "2-12:30:00",
            "UNLIMITED",
        ] {
            assert!(is_time_limit(good), "{good}");
        }
        for bad in ["", "1h", "1:2:3:4", "2-", "-5", "1.5", "2-1:2:3:4"] {
            assert!(!is_time_limit(bad), "{bad}");
        }
        let bad = SlurmOptions {
            time_limit: Some("1h".into()),
            ..Default::default()
        };
        assert_eq!(
            bad.check().unwrap_err().to_string(),
            "`1h` is not a Slurm time limit"
        );
    }

    #[test]
    fn the_file_section_reads_every_option_and_refuses_unknown_keys() {
        let options: SlurmOptions = toml::from_str(
            "partition = \"gpu\"\naccount = \"a\"\nqos = \"high\"\ntime_limit = \"4:00:00\"\n\
             sbatch_args = [\"--mem=0\"]\ncontainer = \"pyxis\"\nretries = 1\n",
        )
        .unwrap();
        assert_eq!(options.qos.as_deref(), Some("high"));
        assert_eq!(options.container, ContainerMode::Pyxis);
        assert_eq!(options.retries(), 1);
        assert!(toml::from_str::<SlurmOptions>("partiton = \"gpu\"\n").is_err());
        assert!(toml::from_str::<SlurmOptions>("container = \"podman\"\n").is_err());
    }
}

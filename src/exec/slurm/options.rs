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

/// The `[executor.slurm]` options; `None` leaves Slurm's default. Each
/// value is checked against what Slurm accepts when it is read (the file
/// at its line, a flag by its name) and again before anything is
/// submitted ([`SlurmOptions::check`]); each reaches `sbatch` as one
/// argument of its own, never as a line of the batch script.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    #[serde(default, deserialize_with = "partition")]
    pub partition: Option<String>,
    #[serde(default, deserialize_with = "account")]
    pub account: Option<String>,
    #[serde(default, deserialize_with = "qos")]
    pub qos: Option<String>,
    /// In a form `sbatch --time` takes (`90`, `1:30:00`, `2-00:00:00`).
    #[serde(default, deserialize_with = "time_limit")]
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

/// A value of `[executor.slurm]` (or of its flag) Slurm would not take as
/// it is: refused before anything is submitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{}` is not a Slurm {}: {}", .value.escape_debug(), .option.what(), .option.expected())]
pub struct BadOption {
    pub option: Checked,
    pub value: String,
}

/// The options whose values perfpipe checks (`sbatch_args` are `sbatch`'s
/// own arguments, passed through as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    Partition,
    Account,
    Qos,
    TimeLimit,
}

impl Checked {
    /// The `sbatch` option it is (`--partition`…): perfpipe's flag of the same name sets it.
    pub fn sbatch_flag(self) -> &'static str {
        match self {
            Self::Partition => "--partition",
            Self::Account => "--account",
            Self::Qos => "--qos",
            Self::TimeLimit => "--time",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Partition => "partition (`partition`, `--partition`)",
            Self::Account => "account (`account`, `--account`)",
            Self::Qos => "QOS (`qos`, `--qos`)",
            Self::TimeLimit => "time limit (`time_limit`, `--time-limit`)",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Self::Partition => {
                "a name (ASCII letters, digits, `_`, `-`, `.`, `+`), or several separated by `,`"
            }
            Self::Account | Self::Qos => "a name (ASCII letters, digits, `_`, `-`, `.`, `+`)",
            Self::TimeLimit => {
                "minutes, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS` or `UNLIMITED` (sbatch --time)"
            }
        }
    }

    /// Whether Slurm takes `value` for this option; a conservative
    /// allow-list, so no value can carry a newline, a quote, a space or an
    /// option of its own.
    fn accepts(self, value: &str) -> bool {
        match self {
            Self::Partition => value.split(',').all(is_name),
            Self::Account | Self::Qos => is_name(value),
            Self::TimeLimit => is_time_limit(value),
        }
    }

    /// `value` when Slurm takes it for this option.
    pub fn check(self, value: &str) -> Result<(), BadOption> {
        if self.accepts(value) {
            Ok(())
        } else {
            Err(BadOption {
                option: self,
                value: value.to_owned(),
            })
        }
    }
}

/// A partition, account or QOS name: 1 to 64 of ASCII letters, digits,
/// `_`, `-`, `.`, `+`, not starting with `-`.
fn is_name(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && !text.starts_with('-')
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+'))
}

impl SlurmOptions {
    pub fn retries(&self) -> u32 {
        self.retries.unwrap_or(DEFAULT_RETRIES)
    }

    /// The checked options and their values, as set.
    pub fn checked(&self) -> impl Iterator<Item = (Checked, &str)> {
        [
            (Checked::Partition, &self.partition),
            (Checked::Account, &self.account),
            (Checked::Qos, &self.qos),
            (Checked::TimeLimit, &self.time_limit),
        ]
        .into_iter()
        .filter_map(|(option, value)| Some((option, value.as_deref()?)))
    }

    /// Refuses a value `sbatch` would refuse or misread, before anything is
    /// submitted (options built in code, not read from the file or flags).
    pub fn check(&self) -> Result<(), BadOption> {
        self.checked()
            .try_for_each(|(option, value)| option.check(value))
    }
}

/// A checked option of the file: refused at its line.
fn checked<'de, D: serde::Deserializer<'de>>(
    option: Checked,
    d: D,
) -> Result<Option<String>, D::Error> {
    let value = String::deserialize(d)?;
    option.check(&value).map_err(serde::de::Error::custom)?;
    Ok(Some(value))
}

fn partition<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(Checked::Partition, d)
}

fn account<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(Checked::Account, d)
}

fn qos<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(Checked::Qos, d)
}

fn time_limit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(Checked::TimeLimit, d)
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
        assert!(
            bad.check().unwrap_err().to_string().starts_with(
                "`1h` is not a Slurm time limit (`time_limit`, `--time-limit`): minutes"
            ),
            "{:?}",
            bad.check()
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

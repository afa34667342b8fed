//! Where and how jobs are submitted: from the command line or the
//! `[executor.slurm]` section of `perfpipe.toml`, never from the experiment
//! and never into a key (the same run measured through Slurm or locally has
//! one key). (pure)

use std::collections::BTreeMap;

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
    /// Resubmissions of a launch whose job reached its time limit, each
    /// with twice the limit (up to `longest_time_limit`); 0: none.
    pub timeout_retries: Option<u32>,
    /// The longest time limit a resubmission after a TIMEOUT asks.
    #[serde(default, deserialize_with = "time_limit")]
    pub longest_time_limit: Option<String>,
    /// Whether a launch owns its nodes (`--exclusive`, all their memory):
    /// `true` unless the operator says otherwise, as a local run never
    /// measures two launches on one machine at once.
    pub exclusive: Option<bool>,
    /// CPUs a launch asks per GPU when it shares its node (`exclusive = false`).
    pub cpus_per_gpu: Option<u32>,
    /// Memory a launch asks per GPU when it shares its node: megabytes, or
    /// a number with `K`, `M`, `G` or `T` (as `sbatch --mem` reads it).
    #[serde(default, deserialize_with = "memory")]
    pub mem_per_gpu: Option<String>,
    /// The declared hardware (`hardware "NAME"` of the experiment) as Slurm
    /// knows it: its GPU type, a node feature, a partition. With any
    /// mapping, a study of hardware not mapped is refused before anything
    /// is submitted.
    #[serde(default)]
    pub hardware: BTreeMap<String, HardwareMapping>,
}

/// Where one declared hardware's launches go (`[executor.slurm.hardware."NAME"]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareMapping {
    /// The GPU type of `Gres=gpu:TYPE:N` on its nodes: `--gres=gpu:TYPE:N`.
    #[serde(default, deserialize_with = "name")]
    pub gres: Option<String>,
    /// A node feature: `--constraint`.
    #[serde(default, deserialize_with = "name")]
    pub constraint: Option<String>,
    /// Its partition: `--partition` (over `partition` of the section).
    #[serde(default, deserialize_with = "partition")]
    pub partition: Option<String>,
}

/// What a launch asks of the node it runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Share {
    /// The whole node: `--exclusive --mem=0`.
    Exclusive,
    /// Its CPUs and memory (`--cpus-per-task`, `--mem` in megabytes), beside
    /// other jobs.
    Shared { cpus: u32, mem_mb: u64 },
}

/// Where and how one launch's job runs: every resource asked explicitly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub gpus: u32,
    /// The GPU type of `--gres=gpu:TYPE:N`.
    pub gpu_type: Option<String>,
    pub constraint: Option<String>,
    /// Over the section's `partition`.
    pub partition: Option<String>,
    pub share: Share,
}

/// A launch perfpipe cannot place as the operator asked: refused before
/// anything is submitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unplaceable {
    #[error(
        "the experiment's hardware `{hardware}` has no Slurm mapping in `[executor.slurm.hardware]` of perfpipe.toml (mapped: {})",
        crate::plural::and_list(.mapped)
    )]
    Unmapped {
        hardware: String,
        mapped: Vec<String>,
    },
    #[error(
        "launches share their nodes (`exclusive = false` in `[executor.slurm]`) but ask no {missing}"
    )]
    Unsized { missing: &'static str },
    #[error(
        "`container = \"pyxis\"` runs each job in its engine's image, but the experiment's engine names no `image=`"
    )]
    NoImage,
    #[error("`container = \"pyxis\"` runs the engine's image by digest, and `{image}` names none")]
    NotByDigest { image: String },
    #[error(
        "Pyxis cannot mount `{path}` into the job's container (`,` and `:` separate its mounts)"
    )]
    Unmountable { path: String },
}

impl Unplaceable {
    pub fn hint(&self) -> String {
        match self {
            Self::Unmapped { hardware, .. } => format!(
                "add `[executor.slurm.hardware.\"{hardware}\"]` with its `gres` (the GPU type of its nodes' `Gres=gpu:TYPE:N`), `constraint` or `partition`, so that it never lands on other GPUs"
            ),
            Self::Unsized { .. } => "set `cpus_per_gpu` and `mem_per_gpu` in `[executor.slurm]`, or leave `exclusive` at its default (`true`)".to_owned(),
            Self::NoImage => "name the engine's image (`engine … image=\"…\"`, pinned by `perfpipe lock`), or leave `container` at `\"docker\"`: a job never runs bare in its place".to_owned(),
            Self::NotByDigest { .. } => "`perfpipe lock` pins each image by digest; run it, then `run --locked`".to_owned(),
            Self::Unmountable { .. } => "put the store and perfpipe under paths without `,` or `:`".to_owned(),
        }
    }
}

/// Resubmissions when neither the command line nor the file says.
pub const DEFAULT_RETRIES: u32 = 2;

/// Resubmissions after a TIMEOUT, each with twice the limit, when the file
/// does not say.
pub const DEFAULT_TIMEOUT_RETRIES: u32 = 1;

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

    pub fn timeout_retries(&self) -> u32 {
        self.timeout_retries.unwrap_or(DEFAULT_TIMEOUT_RETRIES)
    }

    /// The limit of the resubmission after the `done`-th TIMEOUT of a job
    /// whose limit was `limit` (`None`: the partition's default): twice
    /// it, up to `longest_time_limit`; or why there is none.
    pub fn longer_limit(&self, limit: Option<&str>, done: u32) -> Result<String, String> {
        if done >= self.timeout_retries() {
            return Err(match self.timeout_retries() {
                0 => "`timeout_retries = 0` in `[executor.slurm]`".to_owned(),
                n => format!("after {n} resubmission(s) with longer limits (`timeout_retries`)"),
            });
        }
        let Some(limit) = limit else {
            return Err(
                "perfpipe does not know the partition's default limit to lengthen".to_owned(),
            );
        };
        let Some(seconds) = limit_seconds(limit) else {
            return Err(format!("`{limit}` has no longer limit"));
        };
        let longest = self.longest_time_limit.as_deref().map(limit_seconds);
        let doubled = seconds.saturating_mul(2);
        let longer = match longest {
            Some(Some(longest)) => doubled.min(longest),
            Some(None) | None => doubled,
        };
        if longer <= seconds {
            return Err(format!(
                "`longest_time_limit` (`{}`) allows no longer one",
                self.longest_time_limit.as_deref().unwrap_or_default()
            ));
        }
        Ok(limit_text(longer))
    }

    /// Where a launch of `gpus` GPUs of the declared `hardware` runs, and
    /// what it asks of its node.
    pub fn placement(&self, hardware: &str, gpus: u32) -> Result<Placement, Unplaceable> {
        let mapping = match self.hardware.get(hardware) {
            Some(mapping) => mapping.clone(),
            None if self.hardware.is_empty() => HardwareMapping::default(),
            None => {
                return Err(Unplaceable::Unmapped {
                    hardware: hardware.to_owned(),
                    mapped: self.hardware.keys().map(|k| format!("`{k}`")).collect(),
                });
            }
        };
        let share = if self.exclusive.unwrap_or(true) {
            Share::Exclusive
        } else {
            let cpus = self.cpus_per_gpu.ok_or(Unplaceable::Unsized {
                missing: "`cpus_per_gpu`",
            })?;
            let mem = self.mem_per_gpu.as_deref().ok_or(Unplaceable::Unsized {
                missing: "`mem_per_gpu`",
            })?;
            let per_gpu = megabytes(mem).expect("checked when read");
            Share::Shared {
                cpus: cpus.max(1) * gpus.max(1),
                mem_mb: per_gpu * u64::from(gpus.max(1)),
            }
        };
        Ok(Placement {
            gpus,
            gpu_type: mapping.gres,
            constraint: mapping.constraint,
            partition: mapping.partition,
            share,
        })
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

/// A GPU type or node feature: a name as a partition's.
fn name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = String::deserialize(d)?;
    if !is_name(&value) {
        return Err(serde::de::Error::custom(format!(
            "`{}` is not a Slurm name: a name (ASCII letters, digits, `_`, `-`, `.`, `+`)",
            value.escape_debug()
        )));
    }
    Ok(Some(value))
}

fn memory<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = String::deserialize(d)?;
    if megabytes(&value).is_none() {
        return Err(serde::de::Error::custom(format!(
            "`{}` is not an amount of memory: megabytes, or a number with `K`, `M`, `G` or `T` (`64G`)",
            value.escape_debug()
        )));
    }
    Ok(Some(value))
}

/// `text` (`sbatch --mem`'s form: a number, megabytes unless it ends with
/// `K`, `M`, `G` or `T`) in megabytes, rounded up; `None` when it is not
/// one, or is zero.
fn megabytes(text: &str) -> Option<u64> {
    let (number, per_unit_kb) = match text.char_indices().last()? {
        (i, 'K' | 'k') => (&text[..i], 1),
        (i, 'M' | 'm') => (&text[..i], 1 << 10),
        (i, 'G' | 'g') => (&text[..i], 1 << 20),
        (i, 'T' | 't') => (&text[..i], 1 << 30),
        _ => (text, 1 << 10),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let kb = number.parse::<u64>().ok()?.checked_mul(per_unit_kb)?;
    (kb > 0).then(|| kb.div_ceil(1 << 10))
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

/// A time limit in seconds; `None` for `UNLIMITED` (or a text that is not one).
fn limit_seconds(text: &str) -> Option<u64> {
    if !is_time_limit(text)
        || text.eq_ignore_ascii_case("unlimited")
        || text.eq_ignore_ascii_case("infinite")
    {
        return None;
    }
    let numbers =
        |part: &str| -> Option<Vec<u64>> { part.split(':').map(|f| f.parse().ok()).collect() };
    let (days, rest) = match text.split_once('-') {
        Some((days, rest)) => (days.parse::<u64>().ok()?, rest),
        None => (0, text),
    };
    let fields = numbers(rest)?;
    let seconds = match (text.contains('-'), fields.as_slice()) {
        // D-HH, D-HH:MM, D-HH:MM:SS
        (true, [h]) => h * 3600,
        (true, [h, m]) => h * 3600 + m * 60,
        (true, [h, m, s]) => h * 3600 + m * 60 + s,
        // MM, MM:SS, HH:MM:SS
        (false, [m]) => m * 60,
        (false, [m, s]) => m * 60 + s,
        (false, [h, m, s]) => h * 3600 + m * 60 + s,
        _ => return None,
    };
    Some(days * 86_400 + seconds)
}

/// `seconds` as `sbatch --time` takes it: `D-HH:MM:SS`.
fn limit_text(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    format!(
        "{days}-{:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
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
    fn a_launch_owns_its_node_unless_the_operator_sizes_its_share() {
        let default = SlurmOptions::default();
        assert_eq!(
            default.placement("nvidia-h100-80gb-hbm3", 4).unwrap(),
            Placement {
                gpus: 4,
                gpu_type: None,
                constraint: None,
                partition: None,
                share: Share::Exclusive
            }
        );
        let shared: SlurmOptions =
            toml::from_str("exclusive = false\ncpus_per_gpu = 8\nmem_per_gpu = \"64G\"\n").unwrap();
        assert_eq!(
            shared.placement("x", 4).unwrap().share,
            Share::Shared {
                cpus: 32,
                mem_mb: 4 * 65536
            }
        );
        let unsized_: SlurmOptions =
            toml::from_str("exclusive = false\ncpus_per_gpu = 8\n").unwrap();
        assert_eq!(
            unsized_.placement("x", 1).unwrap_err(),
            Unplaceable::Unsized {
                missing: "`mem_per_gpu`"
            }
        );
        assert!(toml::from_str::<SlurmOptions>("mem_per_gpu = \"64 G\"\n").is_err());
        assert_eq!(megabytes("1500"), Some(1500));
        assert_eq!(megabytes("1K"), Some(1));
        assert_eq!(megabytes("2T"), Some(2 << 20));
        assert_eq!(megabytes("0"), None);
        assert_eq!(megabytes("G"), None);
    }

    #[test]
    fn declared_hardware_goes_to_its_gpu_type_and_unmapped_hardware_is_refused() {
        let options: SlurmOptions = toml::from_str(
            "[hardware.\"nvidia-h100-80gb-hbm3\"]\ngres = \"h100\"\nconstraint = \"hbm3\"\npartition = \"gpu-h100\"\n\
             [hardware.\"nvidia-a100-sxm4-80gb\"]\ngres = \"a100\"\n",
        )
        .unwrap();
        let h100 = options.placement("nvidia-h100-80gb-hbm3", 8).unwrap();
        assert_eq!(h100.gpu_type.as_deref(), Some("h100"));
        assert_eq!(h100.constraint.as_deref(), Some("hbm3"));
        assert_eq!(h100.partition.as_deref(), Some("gpu-h100"));
        let refused = options.placement("nvidia-b200", 8).unwrap_err();
        insta::assert_snapshot!(refused.to_string(), @"the experiment's hardware `nvidia-b200` has no Slurm mapping in `[executor.slurm.hardware]` of perfpipe.toml (mapped: `nvidia-a100-sxm4-80gb` and `nvidia-h100-80gb-hbm3`)");
        assert!(toml::from_str::<SlurmOptions>("[hardware.x]\ngres = \"a b\"\n").is_err());
        assert!(toml::from_str::<SlurmOptions>("[hardware.x]\ngpu = \"a\"\n").is_err());
    }

    #[test]
    fn a_timeout_is_resubmitted_with_twice_the_limit_up_to_the_longest() {
        let options = SlurmOptions {
            timeout_retries: Some(3),
            longest_time_limit: Some("3:00:00".into()),
            ..Default::default()
        };
        assert_eq!(options.longer_limit(Some("1"), 0), Ok("0-00:02:00".into()));
        assert_eq!(
            options.longer_limit(Some("1:00:00"), 0),
            Ok("0-02:00:00".into())
        );
        assert_eq!(
            options.longer_limit(Some("0-02:00:00"), 1),
            Ok("0-03:00:00".into())
        );
        assert!(
            options
                .longer_limit(Some("0-03:00:00"), 2)
                .unwrap_err()
                .contains("`longest_time_limit` (`3:00:00`) allows no longer one")
        );
        assert!(
            options
                .longer_limit(Some("1"), 3)
                .unwrap_err()
                .contains("after 3 resubmission(s)")
        );
        assert!(
            options
                .longer_limit(None, 0)
                .unwrap_err()
                .contains("default limit")
        );
        assert!(options.longer_limit(Some("UNLIMITED"), 0).is_err());
        let none = SlurmOptions {
            timeout_retries: Some(0),
            ..Default::default()
        };
        assert_eq!(
            none.longer_limit(Some("1"), 0),
            Err("`timeout_retries = 0` in `[executor.slurm]`".into())
        );
        assert_eq!(
            SlurmOptions::default().longer_limit(Some("2-1"), 0),
            Ok("4-02:00:00".into())
        );
        assert_eq!(limit_seconds("90:30"), Some(90 * 60 + 30));
        assert_eq!(limit_seconds("1-2:3:4"), Some(86_400 + 7384));
    }

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

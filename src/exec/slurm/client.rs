//! Slurm's own commands, through `crate::external`: `sbatch --parsable`,
//! `squeue` about queued and running jobs only, `scontrol show job` about one
//! that just left the queue (it forgets it after `MinJobAge`), `scancel`.
//! (effects)

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::Error;
use super::state::{self, QueuedJob, ShownJob};
use crate::external;

/// A Slurm command that takes longer than this has a stuck controller.
const LIMIT: Duration = Duration::from_secs(60);

/// The Slurm cluster of this machine's clients.
#[derive(Debug, Clone, Default)]
pub struct Slurm {
    /// `SLURM_CONF` for every command; the environment's (or Slurm's
    /// default) when `None`.
    pub conf: Option<PathBuf>,
}

impl Slurm {
    async fn read(
        &self,
        program: &str,
        args: &[&str],
        stdin: Option<&[u8]>,
    ) -> Result<String, Error> {
        let conf: OsString = self.conf.clone().unwrap_or_default().into();
        let env: &[(&str, &std::ffi::OsStr)] = match &self.conf {
            Some(_) => &[("SLURM_CONF", &conf)],
            None => &[],
        };
        let extra = external::Extra { env, stdin };
        Ok(external::read_with(program, args, extra, LIMIT).await?)
    }

    /// Submits the batch `script` (on sbatch's standard input; Slurm keeps
    /// it: `scontrol write batch_script ID`) and returns the job id;
    /// `extra` are further `sbatch` arguments.
    pub async fn submit(&self, script: &str, extra: &[String]) -> Result<u64, Error> {
        let mut args = vec!["--parsable"];
        args.extend(extra.iter().map(String::as_str));
        let out = self.read("sbatch", &args, Some(script.as_bytes())).await?;
        // `ID` or `ID;CLUSTER`.
        let id = out.trim().split(';').next().unwrap_or("");
        id.parse().map_err(|_| Error::Unreadable {
            command: "sbatch --parsable",
            text: out.trim().to_owned(),
        })
    }

    /// This user's jobs Slurm still queues or runs.
    pub async fn queued(&self) -> Result<Vec<QueuedJob>, Error> {
        let out = self
            .read("squeue", &["--me", "-h", "-o", state::SQUEUE_FORMAT], None)
            .await?;
        Ok(state::parse_squeue(&out)?)
    }

    /// How a job ended, while Slurm remembers it (`MinJobAge`); `None` after.
    pub async fn shown(&self, id: u64) -> Result<Option<ShownJob>, Error> {
        match self
            .read("scontrol", &["show", "job", "-o", &id.to_string()], None)
            .await
        {
            Ok(out) => Ok(Some(state::parse_scontrol(&out)?)),
            Err(Error::Command(external::Error::Failed { stderr, .. }))
                if stderr.contains("Invalid job id") =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Cancels `ids` (jobs this perfpipe submitted or adopted).
    pub async fn cancel(&self, ids: &[u64]) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
        let args: Vec<&str> = ids.iter().map(String::as_str).collect();
        self.read("scancel", &args, None).await?;
        Ok(())
    }
}

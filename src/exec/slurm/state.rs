//! What Slurm says about a job (`squeue --states=all`), and what
//! perfpipe makes of it: still queued or running, ended, or ended by Slurm
//! for a cause of its own that a resubmission may not meet. (pure)

/// A job's state as `squeue %T` and `scontrol`'s `JobState=` print it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Configuring,
    Running,
    Suspended,
    Completing,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    NodeFail,
    Preempted,
    OutOfMemory,
    BootFail,
    Deadline,
    /// A state this version of perfpipe does not know (`REQUEUED`, `RESIZING`…).
    Other(String),
}

impl JobState {
    pub fn parse(text: &str) -> Self {
        // `CANCELLED by 0` in some outputs.
        let word = text.split_whitespace().next().unwrap_or("");
        match word {
            "PENDING" | "PD" => Self::Pending,
            "CONFIGURING" | "CF" => Self::Configuring,
            "RUNNING" | "R" => Self::Running,
            "SUSPENDED" | "S" => Self::Suspended,
            "COMPLETING" | "CG" => Self::Completing,
            "COMPLETED" | "CD" => Self::Completed,
            "FAILED" | "F" => Self::Failed,
            "CANCELLED" | "CA" => Self::Cancelled,
            "TIMEOUT" | "TO" => Self::Timeout,
            "NODE_FAIL" | "NF" => Self::NodeFail,
            "PREEMPTED" | "PR" => Self::Preempted,
            "OUT_OF_MEMORY" | "OOM" => Self::OutOfMemory,
            "BOOT_FAIL" | "BF" => Self::BootFail,
            "DEADLINE" | "DL" => Self::Deadline,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Queued or running: Slurm still has work to do for it.
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            Self::Pending | Self::Configuring | Self::Running | Self::Suspended | Self::Completing
        )
    }
}

/// What an ended job means for its launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The job's command ran to its end: the store holds what it measured
    /// (an engine's own failure inside it is a stored result, as locally).
    Ended,
    /// `perfpipe realise` itself failed in the job (a fault of the node's
    /// environment): not retried, its log says why.
    Failed { why: String },
    /// Slurm ended the job for a cause of its own; a resubmission may not
    /// meet it.
    Transient { why: String },
    /// Slurm ended the job at its time limit (`TIMEOUT`): a resubmission
    /// with the same limit would meet it again, so there is none.
    TimedOut,
}

/// The verdict on a job that left the queue: in `state` as Slurm still
/// lists it, or `None` once Slurm forgot it (`MinJobAge`); `exit` is the
/// exit status its command recorded beside its log, none when Slurm ended
/// the job before its command ended. A job perfpipe cancelled itself never
/// gets here: it was interrupted.
pub fn verdict(state: Option<&JobState>, exit: Option<i32>) -> Verdict {
    let transient = |why: &str| Verdict::Transient {
        why: why.to_owned(),
    };
    let exited = |code: i32, how: &str| Verdict::Failed {
        why: format!("the job's command exited with status {code} ({how})"),
    };
    let Some(state) = state else {
        return match exit {
            Some(0) | None => Verdict::Ended,
            Some(code) => exited(code, "its record; Slurm no longer lists the job"),
        };
    };
    match state {
        JobState::Completed => Verdict::Ended,
        JobState::Failed => match exit {
            Some(code) => exited(code, "FAILED"),
            None => Verdict::Failed {
                why: "the job's command failed (FAILED)".to_owned(),
            },
        },
        JobState::NodeFail => transient("its node failed (NODE_FAIL)"),
        JobState::BootFail => transient("its node failed to boot (BOOT_FAIL)"),
        JobState::Preempted => transient("it was preempted (PREEMPTED)"),
        JobState::OutOfMemory => transient("it ran out of memory (OUT_OF_MEMORY)"),
        JobState::Cancelled => {
            transient("it was cancelled by someone other than this perfpipe (CANCELLED)")
        }
        JobState::Timeout => Verdict::TimedOut,
        JobState::Deadline => Verdict::Failed {
            why: "it passed its deadline (DEADLINE)".to_owned(),
        },
        other => transient(&format!("Slurm ended it in state {other:?}")),
    }
}

/// One line of `squeue -h -o` [`SQUEUE_FORMAT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedJob {
    pub id: u64,
    pub name: String,
    pub state: JobState,
    /// Why it waits (`Resources`, `Priority`) or `None`.
    pub reason: String,
    /// The nodes it runs or ran on (`%N`); empty while it waits.
    pub nodes: String,
    pub comment: String,
}

impl QueuedJob {
    /// Why Slurm keeps it pending (`Resources`, `Priority`, `QOSMaxJobsPerUserLimit`…),
    /// when it is pending for a reason it names (`squeue` prints `None` before the
    /// scheduler has looked at it).
    pub fn pending_reason(&self) -> Option<&str> {
        let reason = self.reason.trim();
        (self.state == JobState::Pending && !reason.is_empty() && reason != "None")
            .then_some(reason)
    }
}

/// Job id, name, state, reason, nodes, comment; the comment last, as it may
/// hold anything.
pub const SQUEUE_FORMAT: &str = "%i|%j|%T|%r|%N|%k";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read what `{command}` printed: `{line}`")]
pub struct ParseError {
    pub command: &'static str,
    pub line: String,
}

pub fn parse_squeue(text: &str) -> Result<Vec<QueuedJob>, ParseError> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let bad = || ParseError {
                command: "squeue",
                line: line.to_owned(),
            };
            let mut fields = line.splitn(6, '|');
            let mut next = || fields.next().ok_or_else(bad);
            let id = next()?.trim().parse().map_err(|_| bad())?;
            let (name, state, reason) = (next()?, next()?, next()?);
            let (nodes, comment) = (next()?, next()?);
            Ok(QueuedJob {
                id,
                name: name.to_owned(),
                state: JobState::parse(state),
                reason: reason.to_owned(),
                nodes: nodes.to_owned(),
                comment: comment.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_are_read_with_the_comment_last() {
        let jobs = parse_squeue(
            "12|pp-0123456789ab|PENDING|Resources||perfpipe:aa,bb\n\
             13|other|RUNNING|None|n1|a|comment|with|bars\n",
        )
        .unwrap();
        assert_eq!(jobs[0].id, 12);
        assert_eq!(jobs[0].state, JobState::Pending);
        assert_eq!(jobs[0].reason, "Resources");
        assert_eq!(jobs[0].comment, "perfpipe:aa,bb");
        assert_eq!(jobs[1].comment, "a|comment|with|bars");
        assert_eq!((jobs[0].nodes.as_str(), jobs[1].nodes.as_str()), ("", "n1"));
        assert!(jobs.iter().all(|j| j.state.is_active()));
        assert!(parse_squeue("x|y|z|w|u|v\n").is_err());
        assert!(parse_squeue("12|pp\n").is_err());
        assert_eq!(parse_squeue("\n").unwrap(), []);
    }

    #[test]
    fn a_pending_job_gives_the_reason_it_waits_and_others_none() {
        let jobs = parse_squeue(
            "1|pp-a|PENDING|Resources||perfpipe:aa\n\
             2|pp-b|PENDING|Priority||perfpipe:bb\n\
             3|pp-c|PENDING|None||perfpipe:cc\n\
             4|pp-d|RUNNING|None|n1|perfpipe:dd\n\
             5|pp-e|PENDING|(ReqNodeNotAvail, UnavailableNodes:n1)||perfpipe:ee\n",
        )
        .unwrap();
        let reasons: Vec<Option<&str>> = jobs.iter().map(QueuedJob::pending_reason).collect();
        assert_eq!(
            reasons,
            [
                Some("Resources"),
                Some("Priority"),
                None,
                None,
                Some("(ReqNodeNotAvail, UnavailableNodes:n1)")
            ]
        );
    }

    /// A failed job's exit status comes from its own record, which also
    /// says how a job ended that Slurm no longer lists.
    #[test]
    fn a_failed_or_forgotten_job_is_judged_by_its_exit_record() {
        assert_eq!(
            verdict(Some(&JobState::Failed), Some(3)),
            Verdict::Failed {
                why: "the job's command exited with status 3 (FAILED)".into()
            }
        );
        assert_eq!(
            verdict(None, Some(2)),
            Verdict::Failed {
                why: "the job's command exited with status 2 (its record; Slurm no longer lists the job)".into()
            }
        );
        // Ended, or ended by Slurm before its command: the store says what it measured.
        assert_eq!(verdict(None, Some(0)), Verdict::Ended);
        assert_eq!(verdict(None, None), Verdict::Ended);
        // Slurm's own ending wins over what the command recorded.
        assert_eq!(
            verdict(Some(&JobState::Timeout), Some(143)),
            Verdict::TimedOut
        );
    }

    #[test]
    fn slurms_own_failures_are_transient_but_a_time_limit_is_not() {
        for state in [
            JobState::NodeFail,
            JobState::Preempted,
            JobState::OutOfMemory,
            JobState::Cancelled,
            JobState::BootFail,
        ] {
            assert!(
                matches!(verdict(Some(&state), None), Verdict::Transient { .. }),
                "{state:?}"
            );
        }
        assert_eq!(
            verdict(Some(&JobState::Timeout), None),
            Verdict::TimedOut,
            "the same limit would end it again"
        );
        assert_eq!(verdict(Some(&JobState::Completed), Some(0)), Verdict::Ended);
        assert_eq!(
            verdict(Some(&JobState::Failed), None),
            Verdict::Failed {
                why: "the job's command failed (FAILED)".into()
            }
        );
        assert_eq!(JobState::parse("CANCELLED by 0"), JobState::Cancelled);
        assert_eq!(
            JobState::parse("REQUEUED"),
            JobState::Other("REQUEUED".into())
        );
    }
}

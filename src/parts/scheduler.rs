//! The shard of a job-array task, from the scheduler's environment.
//!
//! | scheduler | shard number | shard count |
//! | --- | --- | --- |
//! | Slurm (`sbatch --array`) | `(SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP` | `SLURM_ARRAY_TASK_COUNT`, else from MIN, MAX and STEP |
//! | Kubernetes Indexed Job | `JOB_COMPLETION_INDEX` | the command line (`--shard-count`, the Job's `completions`) |
//! | AWS Batch array job | `AWS_BATCH_JOB_ARRAY_INDEX` | `AWS_BATCH_JOB_ARRAY_SIZE`, else the command line |
//!
//! Slurm arrays may start anywhere and step (`--array=1-16`, `--array=0-30:2`); a task whose id is
//! not on the array's step, or an array given as an irregular list (`--array=1,5,7`), has no shard
//! number and needs `--shard I/N`.

use super::{Shard, ShardError};

/// Where a task's shard came from, for the line `scan` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardSource {
    /// The scheduler (`Slurm`, `Kubernetes`, `AWS Batch`).
    pub scheduler: &'static str,
    /// The variables read, `NAME=value`, and the count's origin.
    pub variables: Vec<String>,
}

impl std::fmt::Display for ShardSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} job array: {}", self.scheduler, self.variables.join(", "))
    }
}

/// The shard of this task when it runs as a job-array task (Slurm, Kubernetes Indexed Job, AWS Batch
/// array job), else `None`. `env` reads a variable (`std::env::var(name).ok()` in the binary);
/// `count` is the shard count given on the command line, needed for Kubernetes (and for AWS Batch
/// when `AWS_BATCH_JOB_ARRAY_SIZE` is not set).
///
/// # Errors
/// [`ShardError::Spec`] naming the variables when they are present but do not give a shard.
pub(crate) fn shard_from_env(
    env: &dyn Fn(&str) -> Option<String>,
    count: Option<u32>,
) -> Result<Option<(Shard, ShardSource)>, ShardError> {
    if let Some(id) = env("SLURM_ARRAY_TASK_ID") {
        return slurm(env, &id, count).map(Some);
    }
    if let Some(index) = env("JOB_COMPLETION_INDEX") {
        return indexed("Kubernetes", "JOB_COMPLETION_INDEX", &index, None, count).map(Some);
    }
    if let Some(index) = env("AWS_BATCH_JOB_ARRAY_INDEX") {
        let size = env("AWS_BATCH_JOB_ARRAY_SIZE").map(|s| ("AWS_BATCH_JOB_ARRAY_SIZE", s));
        return indexed("AWS Batch", "AWS_BATCH_JOB_ARRAY_INDEX", &index, size, count).map(Some);
    }
    Ok(None)
}

fn number(name: &str, value: &str) -> Result<u64, ShardError> {
    value.trim().parse().map_err(|_| ShardError::Spec(format!("{name}={value:?}: not a non-negative integer")))
}

fn to_u32(what: &str, value: u64) -> Result<u32, ShardError> {
    u32::try_from(value).map_err(|_| ShardError::Spec(format!("{what} {value} is too large")))
}

fn slurm(
    env: &dyn Fn(&str) -> Option<String>,
    id_text: &str,
    count_arg: Option<u32>,
) -> Result<(Shard, ShardSource), ShardError> {
    let get = |name: &str| env(name).map(|v| number(name, &v)).transpose();
    let id = number("SLURM_ARRAY_TASK_ID", id_text)?;
    let min = get("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
    let step = get("SLURM_ARRAY_TASK_STEP")?.unwrap_or(1).max(1);
    let max = get("SLURM_ARRAY_TASK_MAX")?;
    let listed = get("SLURM_ARRAY_TASK_COUNT")?;
    let mut variables = vec![format!("SLURM_ARRAY_TASK_ID={id}"), format!("SLURM_ARRAY_TASK_MIN={min}")];
    if step != 1 {
        variables.push(format!("SLURM_ARRAY_TASK_STEP={step}"));
    }
    let spanned = max.filter(|&m| m >= min).map(|m| (m - min) / step + 1);
    let count = match (listed, spanned, count_arg) {
        (Some(c), Some(s), _) if c != s => {
            return Err(ShardError::NoShard(format!(
                "SLURM_ARRAY_TASK_COUNT={c} but the array spans {s} ids from {min} to {max:?} in steps of {step}: \
                 an array given as a list has no shard numbers; give the shard explicitly"
            )))
        }
        (Some(c), _, _) => {
            variables.push(format!("SLURM_ARRAY_TASK_COUNT={c}"));
            c
        }
        (None, Some(s), _) => {
            variables.push(format!("SLURM_ARRAY_TASK_MAX={}", max.unwrap_or_default()));
            s
        }
        (None, None, Some(c)) => {
            variables.push(format!("--shard-count {c}"));
            u64::from(c)
        }
        (None, None, None) => return Err(ShardError::NoShard(
            "SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX: give the shard explicitly"
                .into(),
        )),
    };
    if id < min || (id - min) % step != 0 {
        return Err(ShardError::NoShard(format!(
            "SLURM_ARRAY_TASK_ID={id} is not on the array's steps (from {min} by {step}): give the shard explicitly"
        )));
    }
    let shard = Shard::new(to_u32("shard", (id - min) / step)?, to_u32("shard count", count)?)
        .map_err(|e| ShardError::Spec(format!("{}: {e}", variables.join(", "))))?;
    Ok((shard, ShardSource { scheduler: "Slurm", variables }))
}

fn indexed(
    scheduler: &'static str,
    name: &str,
    index_text: &str,
    size: Option<(&str, String)>,
    count_arg: Option<u32>,
) -> Result<(Shard, ShardSource), ShardError> {
    let index = number(name, index_text)?;
    let mut variables = vec![format!("{name}={index}")];
    let count = match (size, count_arg) {
        (Some((size_name, text)), _) => {
            let size = number(size_name, &text)?;
            if count_arg.is_some_and(|c| u64::from(c) != size) {
                return Err(ShardError::Spec(format!(
                    "{size_name}={size} but {} shards were given: give one or make them agree",
                    count_arg.unwrap_or_default()
                )));
            }
            variables.push(format!("{size_name}={size}"));
            size
        }
        (None, Some(c)) => {
            variables.push(format!("--shard-count {c}"));
            u64::from(c)
        }
        (None, None) => {
            return Err(ShardError::NoCount(format!(
                "{name} is set ({scheduler} job array) but the number of tasks is not known: give the number of shards"
            )))
        }
    };
    let shard = Shard::new(to_u32("shard", index)?, to_u32("shard count", count)?)
        .map_err(|e| ShardError::Spec(format!("{}: {e}", variables.join(", "))))?;
    Ok((shard, ShardSource { scheduler, variables }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)], count: Option<u32>) -> Result<Option<Shard>, ShardError> {
        let env = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string());
        shard_from_env(&env, count).map(|s| s.map(|(shard, _)| shard))
    }

    fn shard(index: u32, count: u32) -> Option<Shard> {
        Some(Shard { index, count })
    }

    #[test]
    fn no_scheduler_no_shard() {
        assert_eq!(from(&[], Some(4)).unwrap(), None);
    }

    #[test]
    fn slurm_arrays_of_any_start_and_step() {
        let zero = [("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_COUNT", "4"), ("SLURM_ARRAY_TASK_MIN", "0")];
        assert_eq!(from(&zero, None).unwrap(), shard(3, 4));
        let one = [("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_MAX", "16")];
        assert_eq!(from(&one, None).unwrap(), shard(0, 16));
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "20"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_MAX", "30"),
            ("SLURM_ARRAY_TASK_STEP", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "5"),
        ];
        assert_eq!(from(&stepped, None).unwrap(), shard(2, 5));
        let only_id = [("SLURM_ARRAY_TASK_ID", "2")];
        assert_eq!(from(&only_id, Some(8)).unwrap(), shard(2, 8));
    }

    #[test]
    fn slurm_lists_and_bad_values_are_refused() {
        let list = [
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ];
        assert!(from(&list, None).unwrap_err().to_string().contains("give the shard explicitly"));
        assert!(from(&[("SLURM_ARRAY_TASK_ID", "2")], None).is_err());
        assert!(from(&[("SLURM_ARRAY_TASK_ID", "x"), ("SLURM_ARRAY_TASK_COUNT", "4")], None).is_err());
        assert!(from(&[("SLURM_ARRAY_TASK_ID", "4"), ("SLURM_ARRAY_TASK_COUNT", "4")], None).is_err());
    }

    #[test]
    fn kubernetes_needs_the_count_on_the_command_line() {
        assert_eq!(from(&[("JOB_COMPLETION_INDEX", "5")], Some(8)).unwrap(), shard(5, 8));
        let err = from(&[("JOB_COMPLETION_INDEX", "5")], None).unwrap_err().to_string();
        assert!(err.contains("number of shards"), "{err}");
    }

    #[test]
    fn aws_batch_size_from_the_environment_or_the_command_line() {
        let both = [("AWS_BATCH_JOB_ARRAY_INDEX", "0"), ("AWS_BATCH_JOB_ARRAY_SIZE", "2")];
        assert_eq!(from(&both, None).unwrap(), shard(0, 2));
        assert_eq!(from(&both[..1], Some(3)).unwrap(), shard(0, 3));
        assert!(from(&both, Some(3)).is_err());
        assert!(from(&[("AWS_BATCH_JOB_ARRAY_INDEX", "3"), ("AWS_BATCH_JOB_ARRAY_SIZE", "2")], None).is_err());
    }
}

//! A real scheduler: a single-node Slurm cluster (Debian's `slurmctld`, `slurmd` and `munge`, set up
//! by `./dev setup`) started by the test as root without systemd, every file of it in a temporary
//! directory (its own munge key and socket, `slurm.conf`, state, logs, ports). The documented scripts
//! (`docs/scale/submit.sh 4`) submit `sbatch --array=0-3 scan-array.sbatch`, four scan tasks each
//! taking its shard from Slurm's environment, and `merge.sbatch` with `--dependency=afterok` on the
//! array. The merged store must be the single-process scan's, byte for byte, and `vzarr verify`
//! (libnetcdf) must find every value equal. The daemons are stopped at the end.
//!
//! On a machine where the cluster cannot start (not root, Slurm not installed, a daemon that does not
//! come up) the test says why in one line and passes, unless `VZARR_REQUIRE_SLURM=1` (set by
//! `./dev test` once the packages are installed), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{s, strings, vzarr, yearly_archive, EPOCH};
use crate::common::assert_same_tree;
use crate::common::no_hdf5_files_open;

/// The node's name in `slurm.conf` (slurmd is started as this node, whatever the host is called).
const NODE: &str = "vzarrnode";

fn required() -> bool {
    std::env::var_os("VZARR_REQUIRE_SLURM").is_some_and(|v| v == "1")
}

/// A running single-node cluster; stopped on drop.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

/// The absolute path of `program` (on PATH or in /usr/sbin).
fn find(program: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{program} is not installed (./dev setup installs slurmctld, slurmd and munge)"))
}

fn short_hostname() -> Result<String, String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return Err("gethostname failed".into());
    }
    let name = std::ffi::CStr::from_bytes_until_nul(&buf).map_err(|_| "hostname too long")?;
    Ok(name.to_string_lossy().split('.').next().unwrap_or_default().to_string())
}

/// A TCP port free right now on 127.0.0.1.
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn slurm_conf(dir: &Path, host: &str, ports: (u16, u16)) -> String {
    let d = dir.display();
    format!(
        "ClusterName=vzarrtest\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\n\
         SlurmctldPort={}\nSlurmdPort={}\nAuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\nCredType=cred/munge\n\
         StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\n\
         SlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
         ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
         AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nMpiDefault=none\n\
         SwitchType=switch/none\nSchedulerType=sched/builtin\nSelectType=select/cons_tres\n\
         SelectTypeParameters=CR_Core\nReturnToService=2\nMinJobAge=600\n\
         NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={} State=UNKNOWN\n\
         PartitionName=vzarr Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
        ports.0,
        ports.1,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    )
}

impl Cluster {
    /// Starts munged, slurmctld and slurmd in `dir`, and waits until the node is idle.
    fn start(dir: &Path) -> Result<Cluster, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root (slurmd runs jobs as root here)".into());
        }
        let (munged, slurmctld, slurmd) = (find("munged")?, find("slurmctld")?, find("slurmd")?);
        find("sbatch")?;
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
        }
        write_munge_key(&dir.join("munge.key"))?;
        let conf = dir.join("slurm.conf");
        let config = slurm_conf(dir, &short_hostname()?, (free_port()?, free_port()?));
        std::fs::write(&conf, config).map_err(|e| e.to_string())?;
        let mut cluster = Cluster { dir: dir.to_path_buf(), conf, daemons: Vec::new() };
        let d = |name: &str| format!("--{name}={}", dir.join(format!("munged.{name}")).display());
        let socket = format!("--socket={}", dir.join("munge.sock").display());
        let key = format!("--key-file={}", dir.join("munge.key").display());
        let args = vec!["-F".to_string(), "-f".into(), socket, key, d("log-file"), d("pid-file"), d("seed-file")];
        cluster.spawn("munged", &munged, &args)?;
        cluster.wait_for("the munge socket", Duration::from_secs(10), |c| Ok(c.dir.join("munge.sock").exists()))?;
        let conf = cluster.conf.display().to_string();
        cluster.spawn("slurmctld", &slurmctld, &strings(&["-D", "-c", "-f", &conf]))?;
        cluster.spawn("slurmd", &slurmd, &strings(&["-D", "-N", NODE, "-f", &conf]))?;
        cluster.wait_for("the node to be idle", Duration::from_secs(60), |c| {
            Ok(c.command("sinfo", &["-h", "-N", "-o", "%T"])?.trim() == "idle")
        })?;
        Ok(cluster)
    }

    fn spawn(&mut self, name: &'static str, program: &Path, args: &[String]) -> Result<(), String> {
        let log = std::fs::File::create(self.dir.join(format!("{name}.out"))).map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let child = {
            let _exclusive = no_hdf5_files_open();
            Command::new(program)
                .args(args)
                .env("SLURM_CONF", &self.conf)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(err)
                .spawn()
                .map_err(|e| format!("starting {name}: {e}"))?
        };
        self.daemons.push((name, child));
        Ok(())
    }

    /// Runs a Slurm client command; its stdout, or an error with its stderr.
    fn command(&self, program: &str, args: &[&str]) -> Result<String, String> {
        self.command_env(program, args, &[])
    }

    /// [`Cluster::command`] with more environment variables.
    fn command_env(&self, program: &str, args: &[&str], env: &[(&str, String)]) -> Result<String, String> {
        let output = {
            let _exclusive = no_hdf5_files_open();
            Command::new(program)
                .args(args)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .env("SLURM_CONF", &self.conf)
                .env("SOURCE_DATE_EPOCH", EPOCH)
                .env_remove("SLURM_JOB_ID")
                .current_dir(&self.dir)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("{program}: {e}"))?
        };
        if !output.status.success() {
            return Err(format!("{program} {args:?}: {}", String::from_utf8_lossy(&output.stderr).trim()));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Polls `ready` until it says yes; an error naming what did not happen (and a daemon that
    /// exited, with the end of its log) after `limit`.
    fn wait_for(
        &mut self,
        what: &str,
        limit: Duration,
        ready: impl Fn(&Cluster) -> Result<bool, String>,
    ) -> Result<(), String> {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < limit {
            match ready(self) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => last = e,
            }
            if let Some(exited) = self.exited() {
                return Err(exited);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(format!("timed out after {limit:?} waiting for {what} ({last})"))
    }

    /// A daemon that has exited, with the last line of its output.
    fn exited(&mut self) -> Option<String> {
        for (name, child) in &mut self.daemons {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(self.dir.join(format!("{name}.out"))).unwrap_or_default();
                let last = log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
                return Some(format!("{name} exited ({status}): {last}"));
            }
        }
        None
    }

    /// The state of a job (`PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, ...), every task of an array.
    fn job_states(&self, job: &str) -> Result<Vec<String>, String> {
        let out = self.command("scontrol", &["show", "job", "-o", job])?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_whitespace().find_map(|f| f.strip_prefix("JobState=")))
            .map(str::to_string)
            .collect())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // slurmd first (it ends the job steps), then slurmctld, then munged.
        for (_, child) in self.daemons.iter_mut().rev() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let start = Instant::now();
            while !matches!(child.try_wait(), Ok(Some(_))) && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn write_munge_key(path: &Path) -> Result<(), String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut key = [0u8; 1024];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut key)).map_err(|e| e.to_string())?;
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(|e| e.to_string())?;
    std::io::Write::write_all(&mut file, &key).map_err(|e| e.to_string())
}

#[test]
fn slurm_array_scan_then_dependent_merge_is_the_single_scan() {
    let dir = tempfile::tempdir().unwrap();
    let cluster_dir = dir.path().join("slurm");
    std::fs::create_dir_all(&cluster_dir).unwrap();
    let mut cluster = match Cluster::start(&cluster_dir) {
        Ok(cluster) => cluster,
        Err(why) => {
            assert!(!required(), "VZARR_REQUIRE_SLURM=1 but the Slurm cluster did not start: {why}");
            eprintln!("notice: Slurm test not run: {why}");
            return;
        }
    };
    let src = dir.path().join("in");
    std::fs::create_dir_all(&src).unwrap();
    let inputs = yearly_archive(&src);
    let single = dir.path().join("single.vzarr");
    vzarr(&strings(&["scan", &inputs, "--concat", "time", "-o", &s(&single)]), 0);

    // The documented job scripts, as a user submits them: docs/scale/submit.sh runs
    // `sbatch --array=0-3 scan-array.sbatch` and `sbatch --dependency=afterok:<array> merge.sbatch`.
    let (parts, merged, list) =
        (dir.path().join("parts"), dir.path().join("merged.vzarr"), dir.path().join("inputs.txt"));
    let files: Vec<String> = (2001..=2004).map(|y| s(&src.join(format!("tas_{y}.nc")))).collect();
    std::fs::write(&list, files.join("\n")).unwrap();
    let env = [
        ("VZARR", env!("CARGO_BIN_EXE_vzarr").to_string()),
        ("VZARR_INPUTS", s(&list)),
        ("VZARR_PARTS", s(&parts)),
        ("VZARR_STORE", s(&merged)),
        ("VZARR_CONCAT", "--concat time".to_string()),
    ];
    let submit = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scale/submit.sh");
    let ids = cluster.command_env("bash", &[&s(&submit), "4"], &env).unwrap();
    let [array, job] = ids.split_whitespace().collect::<Vec<_>>()[..] else { panic!("submit.sh printed {ids:?}") };
    let (array, job) = (array.to_string(), job.to_string());

    let finished = ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"];
    let waited = cluster.wait_for("the merge job", Duration::from_secs(180), |c| {
        Ok(c.job_states(&job)?.first().is_some_and(|state| finished.contains(&state.as_str())))
    });
    let log = |name: &str| std::fs::read_to_string(cluster_dir.join(name)).unwrap_or_default();
    let merge_log = format!("vzarr-merge-{job}.log");
    waited.unwrap_or_else(|e| {
        panic!("{e}\nscan tasks: {:?}\nmerge log: {}", cluster.job_states(&array), log(&merge_log))
    });
    assert_eq!(cluster.job_states(&job).unwrap(), ["COMPLETED"], "merge log: {}", log(&merge_log));
    assert_eq!(cluster.job_states(&array).unwrap(), ["COMPLETED"; 4]);
    for task in 0..4 {
        let out = log(&format!("vzarr-scan-{array}_{task}.log"));
        assert!(out.starts_with(&format!("shard {task}/4 (Slurm job array: SLURM_ARRAY_TASK_ID={task}")), "{out}");
    }
    assert_same_tree(&single, &merged);
    vzarr(&strings(&["verify", &s(&merged)]), 0);
    drop(cluster);
}

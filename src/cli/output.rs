//! Where a file output goes: `-` is standard output; an existing FIFO or character device (also
//! through a symbolic link, such as `/dev/stdout`) is written through, never replaced; anything else
//! is published atomically by `store/publish` (which refuses to replace a symbolic link, an ordinary
//! file of the user's, or an output without `--overwrite`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// A new directory only this user can enter, under the system's temporary directory (removed by the
/// caller).
///
/// # Errors
/// The I/O error of creating it.
pub(crate) fn private_temp_dir() -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("vzarr-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).with_context(|| format!("{}: creating", dir.display()))?;
    Ok(dir)
}

/// The resolved destination of a file output.
#[derive(Debug)]
pub(crate) enum Target {
    /// Standard output (`-o -`).
    Stdout,
    /// An existing FIFO or character device, opened for writing as it is.
    Special(PathBuf),
    /// A path to publish a new file at.
    File(PathBuf),
}

impl Target {
    /// Classifies `path` from its metadata (following links), without opening it.
    ///
    /// # Errors
    /// A block device or socket: writing a file over a disk is never what was meant.
    pub(crate) fn of(path: &Path) -> anyhow::Result<Self> {
        use std::os::unix::fs::FileTypeExt;
        if path.as_os_str() == "-" {
            return Ok(Target::Stdout);
        }
        let Ok(meta) = std::fs::metadata(path) else { return Ok(Target::File(path.to_path_buf())) };
        let t = meta.file_type();
        if t.is_fifo() || t.is_char_device() {
            return Ok(Target::Special(path.to_path_buf()));
        }
        if t.is_block_device() || t.is_socket() {
            anyhow::bail!("{}: is a block device or socket: refusing to write there", path.display());
        }
        Ok(Target::File(path.to_path_buf()))
    }

    /// Writes to standard output or through the special file with `write`.
    ///
    /// # Errors
    /// The I/O error, naming the destination.
    pub(crate) fn write_through(
        &self,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> anyhow::Result<()> {
        match self {
            Target::Stdout => {
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                write(&mut out).and_then(|()| out.flush()).context("writing to standard output")
            }
            Target::Special(path) => {
                // No create, no truncate: the file is written as it is, never replaced.
                let file = std::fs::OpenOptions::new().write(true).open(path);
                let file = file.with_context(|| format!("{}: opening for writing", path.display()))?;
                let mut out = std::io::BufWriter::new(file);
                write(&mut out).and_then(|()| out.flush()).with_context(|| format!("{}: writing", path.display()))
            }
            Target::File(path) => anyhow::bail!("{}: not a special file", path.display()),
        }
    }
}

/// The URL of an object-store output (`s3://bucket/stores/tas.vzarr`), `None` for a local path.
pub(crate) fn remote_url(path: &Path) -> Option<&str> {
    match crate::source::Location::from(path) {
        crate::source::Location::Url(_) => path.to_str(),
        crate::source::Location::Local(_) => None,
    }
}

/// How an object-store output is written: what it is, whether it may replace one, what it must not
/// hold, and how the store is reached (see `store/publish_remote`).
pub(crate) struct RemoteTarget<'a> {
    pub(crate) url: &'a str,
    pub(crate) kind: crate::store::OutputKind,
    pub(crate) overwrite: bool,
    /// Input URLs the output must not be, nor contain.
    pub(crate) inputs: Vec<String>,
    pub(crate) remote: crate::source::RemoteOptions,
    pub(crate) max_concurrent: usize,
}

impl RemoteTarget<'_> {
    /// Checks the destination, runs `write` on a private local path, then publishes what it wrote on
    /// the object store.
    ///
    /// # Errors
    /// The destination's refusal, `write`'s error, or the upload's.
    pub(crate) async fn write_async<T, F>(&self, write: impl FnOnce(PathBuf) -> F) -> anyhow::Result<T>
    where
        F: std::future::Future<Output = anyhow::Result<T>>,
    {
        let output = self.begin().await?;
        let value = write(output.local_path().to_path_buf()).await?;
        output.publish().await?;
        Ok(value)
    }

    /// Refuses at once a destination [`RemoteTarget::write_async`] would refuse (before a long scan).
    ///
    /// # Errors
    /// The destination's refusal.
    pub(crate) fn check(&self, runtime: &tokio::runtime::Handle) -> anyhow::Result<()> {
        runtime.block_on(self.begin()).map(drop).with_context(|| format!("writing {}", self.url))
    }

    /// Takes the destination for writing (see [`crate::store::RemoteOutput::begin`]).
    async fn begin(&self) -> Result<crate::store::RemoteOutput, crate::store::WriteError> {
        crate::store::RemoteOutput::begin(
            self.url,
            self.kind,
            self.overwrite,
            &self.inputs,
            &self.remote,
            self.max_concurrent,
        )
        .await
    }

    /// [`RemoteTarget::write_async`] for a blocking `write`, on a runtime of its own.
    ///
    /// # Errors
    /// As [`RemoteTarget::write_async`].
    pub(crate) fn write<T>(&self, write: impl FnOnce(&Path) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let runtime = crate::pipeline::runtime()?;
        runtime.block_on(self.write_async(|local| async move { write(&local) }))
    }
}

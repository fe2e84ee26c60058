//! The Icechunk writer's error ([`IcechunkError`]), kept beside [`WriteError`](super::WriteError),
//! which wraps it, so that the stage error names it without depending on the format
//! (`formats/icechunk` returns it); and [`one_line`], Icechunk's error text in one line.

use std::path::PathBuf;

/// An Icechunk write that failed. The repository's branches are as they were: a failed write
/// leaves at most unreferenced objects (removed by Icechunk's garbage collection).
///
/// Needs feature `icechunk`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[cfg_attr(not(feature = "icechunk"), allow(dead_code, unreachable_pub))]
pub enum IcechunkError {
    /// The repository exists and committing to it was not asked for.
    #[error("{repo}: an Icechunk repository already exists")]
    Exists {
        /// The repository location.
        repo: String,
    },
    /// The destination is a local path that exists and is not an Icechunk repository.
    #[error("{}: exists and is not an Icechunk repository: refusing to write there", path.display())]
    NotRepository {
        /// The destination.
        path: PathBuf,
    },
    /// The branch to commit to does not exist.
    #[error("{repo}: no branch {branch:?} (branches: {available})")]
    NoBranch {
        /// The repository location.
        repo: String,
        /// The branch asked for.
        branch: String,
        /// The branches the repository has, comma-separated.
        available: String,
    },
    /// A source location cannot be referenced from Icechunk.
    #[error("{location}: cannot be referenced from Icechunk: {}", one_line(reason))]
    Location {
        /// The source location (or container prefix).
        location: String,
        /// Why.
        reason: String,
    },
    /// A node of the dataset cannot be written.
    #[error("{repo}: {node}: {}", one_line(reason))]
    Node {
        /// The repository location.
        repo: String,
        /// The group or array path.
        node: String,
        /// Why.
        reason: String,
    },
    /// An Icechunk operation failed.
    #[error("{repo}: {what}: {}", one_line(reason))]
    Repository {
        /// The repository location.
        repo: String,
        /// What was being done.
        what: String,
        /// The cause, as Icechunk reported it.
        reason: String,
    },
}

/// An error's text in one line: Icechunk's errors add a multi-line `context:` section (a span trace)
/// that says nothing to a user; it is dropped and the rest joined.
pub(crate) fn one_line(text: &str) -> String {
    let head = text.split("context:").next().unwrap_or(text);
    head.split_whitespace().collect::<Vec<_>>().join(" ").trim_end_matches([':', ' ']).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn errors_become_one_line_without_the_context_section() {
        let text = "repo: opening: the repository doesn't exist\n\ncontext:\n   0: icechunk::x\n";
        assert_eq!(super::one_line(text), "repo: opening: the repository doesn't exist");
        assert_eq!(super::one_line("plain"), "plain");
        let error = super::IcechunkError::Repository { repo: "r".into(), what: "w".into(), reason: text.into() };
        assert_eq!(error.to_string(), "r: w: repo: opening: the repository doesn't exist");
    }
}

//! Progress bars on stderr (hidden when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `total` units with a message.
pub(crate) fn bar(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template("{spinner} {msg:<24} [{bar:30}] {pos}/{len} ({per_sec}, {eta})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

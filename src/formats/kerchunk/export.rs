//! A native store, Icechunk repository or kerchunk document exported as kerchunk reference JSON: the
//! document `formats/kerchunk`'s writer produces for a scanned dataset, byte for byte, written from an
//! opened [`Store`] array by array, a round of manifest entries at a time.

use std::path::{Path, PathBuf};

use crate::formats::exports::{checked_nodes, reference_urls, source_url, staged, store_inputs, ExportError};
use crate::formats::{KerchunkReport, RefsWriter, UrlPrefix};
use crate::manifest::ChunkEntry;
use crate::metadata::{chunk_key, node_key};
use crate::read::{ArrayReader, EntryRounds, Store};
use crate::store::OutputKind;

/// Options of [`export_kerchunk`].
#[derive(Debug, Clone, Default)]
pub struct KerchunkOptions {
    /// Location rewrites, tried in order; the first match applies. Default: none (absolute
    /// `file://` URLs for local paths, URLs as stored).
    pub url_prefixes: Vec<UrlPrefix>,
    /// Replace an existing file (atomically). Default: false.
    pub overwrite: bool,
    /// An array whose grid is rectilinear and whose decoded values take at most this many bytes is
    /// written as one inline `base64:` chunk of those values, read through the store
    /// (`formats/inline`); a larger one keeps its grid. Default: 0, nothing inlined (as
    /// [`crate::formats::KerchunkWriter`]'s).
    pub inline_threshold: u64,
}

/// Exports the native store `store` as kerchunk reference JSON at `destination`, streaming: manifest
/// entries are fetched [`ENTRIES_PER_ROUND`](crate::read::ENTRIES_PER_ROUND) at a time and written
/// one by one. The file is written with blocking I/O from this async function.
///
/// # Errors
/// [`ExportError`] naming the store, array or file; nothing is left at `destination`.
pub async fn export_kerchunk(
    store: &Store,
    destination: &Path,
    options: &KerchunkOptions,
) -> Result<KerchunkReport, ExportError> {
    let urls = reference_urls(store, &options.url_prefixes).await?;
    let (groups, arrays) = checked_nodes(store)?;
    let build = |staging: PathBuf| async move {
        let info = store.info();
        let mut refs = RefsWriter::create(&staging, &urls, &info.provenance, &info.warnings)?;
        refs.raw_text("zarr.json", &store.node_metadata("").await?)?;
        for node in &groups {
            refs.raw_text(&node_key(node), &store.node_metadata(node).await?)?;
        }
        // Small rectilinear arrays inlined (`formats/inline`): their metadata rewritten, one chunk.
        let mut inlined = Vec::new();
        for path in &arrays {
            let array = store.array(path).await?;
            match crate::formats::inline_candidate(array.metadata()) {
                Some(Some(bytes)) if bytes <= options.inline_threshold => {
                    let metadata = crate::formats::inlined_metadata(array.metadata(), path, destination)?;
                    refs.text(&node_key(path), &metadata.to_json())?;
                    inlined.push(path);
                }
                _ => refs.raw_text(&node_key(path), &store.node_metadata(path).await?)?,
            }
        }
        for path in &arrays {
            let array = store.array(path).await?;
            if inlined.contains(&path) {
                let origin = vec![0; array.metadata().chunk_grid.ndim()];
                refs.inline(&chunk_key(path, &origin), &crate::formats::read_whole(&array).await?)?;
            } else {
                array_refs(&mut refs, &array, &urls).await?;
            }
        }
        Ok(refs.finish()?)
    };
    staged(destination, OutputKind::KerchunkJson, options.overwrite, &store_inputs(store), build).await
}

/// Writes the chunk references of one array of a store.
async fn array_refs(refs: &mut RefsWriter, array: &ArrayReader, urls: &[String]) -> Result<(), ExportError> {
    let grid = &array.metadata().chunk_grid;
    let mut rounds = EntryRounds::new(array);
    while let Some((start, entries)) = rounds.next_round().await? {
        for (linear, entry) in (start..).zip(&entries) {
            let key = || chunk_key(array.path(), &grid.chunk_coords(linear));
            match *entry {
                ChunkEntry::Missing => {}
                ChunkEntry::Source { source, offset, length } => {
                    refs.reference(&key(), source_url(urls, source, array.path(), linear)?, offset, length)?;
                }
                ChunkEntry::Owned { .. } => {
                    let bytes = array.stored_chunk(entry).await?.unwrap_or_default();
                    refs.inline(&key(), &bytes)?;
                }
            }
        }
    }
    Ok(())
}

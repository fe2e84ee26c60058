//! `vzarr info`: what a store holds, per array.

use serde_json::json;

use super::args::InfoArgs;
use super::Outcome;
use crate::grid::ChunkDim;
use crate::read::Store;

/// The containers the store's sources lie in (resolved as a reader would) and whether each is
/// authorized: what reading this store would touch.
fn containers(store: &Store) -> Vec<serde_json::Value> {
    let auth = store.authorization();
    // A repository's sources are named in its manifests; its summary lists their containers.
    let containers = match store.is_repository() {
        true => store.info().source_containers.clone(),
        false => crate::trust::containers_of(&store.sources()),
    };
    containers.iter().map(|c| json!({"container": c, "authorized": auth.covers(c)})).collect()
}

pub(crate) async fn run(args: InfoArgs) -> anyhow::Result<Outcome> {
    let store = args.open.open().await?;
    let info = store.info();
    let mut arrays = Vec::new();
    let mut times = TimeCoordinates::new();
    for summary in &info.arrays {
        let array = store.array(&summary.path).await?;
        let meta = array.metadata();
        let names = meta.dimension_names.clone().unwrap_or_default();
        let mut dims = Vec::new();
        for (d, dim) in meta.chunk_grid.dims().iter().enumerate() {
            let name = names.get(d).cloned().unwrap_or_else(|| format!("dim{d}"));
            // A grid of calendar periods reads as months, seasons or years of the time coordinate.
            // Best effort, and native stores only: `info` of a repository reads its snapshot alone,
            // and a source `info` cannot read leaves the plain summary.
            let calendar = match (dim.regular_size(), store.is_repository()) {
                (None, false) => calendar_summary(&store, &mut times, &name, dim).await,
                _ => None,
            };
            dims.push((name, calendar.unwrap_or_else(|| dim_summary(dim))));
        }
        arrays.push(json!({
            "path": summary.path,
            "shape": array.shape(),
            "data_type": meta.data_type.to_string(),
            "grid": if meta.chunk_grid.is_regular() { "regular" } else { "rectilinear" },
            "dimensions": dims.iter().map(|(n, s)| json!({"name": n, "chunks": s})).collect::<Vec<_>>(),
            "codecs": meta.codecs.to_json(),
            "chunks": summary.chunks,
            "references": summary.stats.referenced,
            "referenced_bytes": summary.stats.referenced_bytes,
            "store_owned_chunks": summary.stats.owned,
            "store_owned_bytes": summary.stats.owned_bytes,
            "rewritten_chunks": summary.rewritten_chunks,
            "missing_chunks": summary.stats.missing,
            "copied_chunks": meta.notes.copied_chunks,
        }));
    }
    let doc = json!({
        "store": args.open.name(),
        "format_version": info.format_version,
        "generator": info.generator,
        "sources": info.sources,
        "source_files": (!store.is_repository()).then(|| store.sources().iter().map(|s| s.location.clone()).collect::<Vec<_>>()),
        "source_containers": containers(&store),
        "concat_dim": info.provenance.concat_dim,
        "concat_dims": concat_dims(&store).await?,
        "gaps": info.provenance.gaps,
        "reencoded": info.provenance.reencoded,
        "reencoded_units": info.provenance.units.as_ref().map(|(u, c)| json!({"units": u, "calendar": c})),
        "arrays": arrays,
        "warnings": info.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
    });
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_text(&doc)?;
    }
    Ok(Outcome::Done)
}

/// Every concatenation dimension with its key source, and the keys of new dimensions.
async fn concat_dims(store: &Store) -> anyhow::Result<serde_json::Value> {
    let mut out = Vec::new();
    for dim in &store.info().provenance.concat_dims {
        let mut entry = json!({"name": dim.name, "key": dim.key});
        if dim.key != "coordinate" && store.info().arrays.iter().any(|a| a.path == dim.name) {
            let array = store.array(&dim.name).await?;
            let all = crate::Selection::all(&array.shape());
            let keys: Vec<String> = if array.metadata().data_type == crate::metadata::DataType::String {
                array.read_strings(&all).await?
            } else {
                let data = array.read(&all, &crate::ReadOptions::default()).await?;
                data.to_f64_vec().iter().map(f64::to_string).collect()
            };
            entry["values"] = json!(keys);
        }
        out.push(entry);
    }
    Ok(json!(out))
}

/// The time coordinates read so far, by dimension name (None: the dimension has none).
type TimeCoordinates = std::collections::HashMap<String, Option<crate::chunking::TimeCoordinate>>;

/// `12 chunks, one a month: Jan 2001 31 ... Dec 2001 31` for a dimension whose chunks hold one
/// calendar period each of its CF time coordinate (read once per dimension into `times`); None when
/// it has none or it cannot be read.
async fn calendar_summary(store: &Store, times: &mut TimeCoordinates, name: &str, dim: &ChunkDim) -> Option<String> {
    if !times.contains_key(name) {
        let coordinate = crate::chunking::TimeCoordinate::read(store, name, dim.extent()).await.ok().flatten();
        times.insert(name.to_string(), coordinate);
    }
    let Some(Some(coordinate)) = times.get(name) else { return None };
    coordinate.describe_grid(&dim.held_edges().collect::<Vec<u64>>())
}

/// `31 chunks of 10` / `24 chunks, edges 28..31`: varying edges as the chunks hold them (the last
/// chunk of a file's unlimited `time`, 512 long, holding 31, says 31: [`ChunkDim::held_range`]).
fn dim_summary(dim: &ChunkDim) -> String {
    let n = dim.num_chunks();
    match (dim.regular_size(), dim.held_range()) {
        (Some(size), _) => format!("{n} chunks of {size}"),
        (None, Some((lo, hi))) if lo == hi => format!("{n} chunks of {lo}"),
        (None, Some((lo, hi))) => format!("{n} chunks, edges {lo}..{hi}"),
        (None, None) => "0 chunks".into(),
    }
}

fn print_text(doc: &serde_json::Value) -> std::io::Result<()> {
    let s = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    outln!("store:   {} (format {}, {})", s(&doc["store"]), doc["format_version"], s(&doc["generator"]));
    outln!("sources: {} file(s)", doc["sources"]);
    for c in doc["source_containers"].as_array().into_iter().flatten() {
        let state = if c["authorized"] == true { "authorized" } else { "NOT authorized (see `vzarr trust`)" };
        outln!("  container {}: {state}", c["container"].as_str().unwrap_or_default());
    }
    for d in doc["concat_dims"].as_array().into_iter().flatten() {
        let values = d["values"].as_array().map(|v| v.iter().map(s).collect::<Vec<_>>().join(", "));
        match values {
            Some(values) => outln!("dimension {} ({}): {values}", s(&d["name"]), s(&d["key"])),
            None => outln!("dimension {} (ordered by its coordinate)", s(&d["name"])),
        }
    }
    let concatenated = doc["concat_dim"].as_str().map(str::to_string).or_else(|| {
        let names: Vec<String> = doc["concat_dims"].as_array()?.iter().map(|d| s(&d["name"])).collect();
        (!names.is_empty()).then(|| names.join(" x "))
    });
    if let Some(dim) = concatenated {
        outln!("concatenated along: {dim}");
        let gaps = doc["gaps"].as_array().map_or(0, Vec::len);
        outln!("gaps: {}", if gaps == 0 { "none".to_string() } else { gaps.to_string() });
        for g in doc["gaps"].as_array().into_iter().flatten() {
            outln!("  {}", s(g));
        }
        for r in doc["reencoded"].as_array().into_iter().flatten() {
            outln!("re-encoded to {}: {}", s(&doc["reencoded_units"]["units"]), s(r));
        }
    }
    for a in doc["arrays"].as_array().into_iter().flatten() {
        outln!("\n{}  {} {}  grid {}", s(&a["path"]), s(&a["data_type"]), a["shape"], s(&a["grid"]));
        for d in a["dimensions"].as_array().into_iter().flatten() {
            outln!("  {}: {}", s(&d["name"]), s(&d["chunks"]));
        }
        outln!(
            "  chunks {}: {} referenced ({} bytes), {} store-owned ({} bytes, {} rewritten), {} missing",
            a["chunks"],
            a["references"],
            a["referenced_bytes"],
            a["store_owned_chunks"],
            a["store_owned_bytes"],
            a["rewritten_chunks"],
            a["missing_chunks"]
        );
        if let Some(why) = a["copied_chunks"].as_str() {
            outln!("  chunks are {why}");
        }
    }
    for w in doc["warnings"].as_array().into_iter().flatten() {
        outln!("warning: {}", s(w));
    }
    Ok(())
}

//! Inputs of several files (a store directory, a sidecar and its data file): a bundle is the bytes
//! `VZFB`, then per file a little-endian `u16` name length, the name (a relative path), a
//! little-endian `u32` length and the bytes. A target that reads a directory writes the bundle out and
//! mutates one of its files at a time, with that file's own structure.

use std::path::Path;

use crate::mutate::{self, Shape};
use crate::rng::Rng;

const MAGIC: &[u8; 4] = b"VZFB";

/// The files of a bundle, in order.
pub type Files = Vec<(String, Vec<u8>)>;

/// The files of `bytes`; what does not parse as a bundle (a mutation's damage) gives the files that did.
pub fn parse(bytes: &[u8]) -> Files {
    let mut files = Vec::new();
    let Some(mut rest) = bytes.strip_prefix(MAGIC) else { return files };
    while let Some((name_len, tail)) = rest.split_first_chunk::<2>() {
        let name_len = usize::from(u16::from_le_bytes(*name_len));
        let Some((name, tail)) = tail.split_at_checked(name_len) else { break };
        let Some((len, tail)) = tail.split_first_chunk::<4>() else { break };
        let Some((data, tail)) = tail.split_at_checked(u32::from_le_bytes(*len) as usize) else { break };
        files.push((String::from_utf8_lossy(name).into_owned(), data.to_vec()));
        rest = tail;
    }
    files
}

/// The bundle of `files`.
pub fn encode(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for (name, data) in files {
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}

/// The bundle of every file under `dir` (names relative to it, sorted).
pub fn from_dir(dir: &Path) -> std::io::Result<Vec<u8>> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    Ok(encode(&files))
}

fn collect(root: &Path, dir: &Path, files: &mut Files) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, files)?;
        } else {
            let name = path.strip_prefix(root).expect("under root").to_string_lossy().into_owned();
            files.push((name, std::fs::read(&path)?));
        }
    }
    Ok(())
}

/// Writes `files` under `dir` (names that would leave it are skipped: the harness writes only there).
pub fn write(files: &[(String, Vec<u8>)], dir: &Path) -> std::io::Result<()> {
    for (name, data) in files {
        let relative = Path::new(name);
        if name.is_empty() || !relative.components().all(|c| matches!(c, std::path::Component::Normal(_))) {
            continue;
        }
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, data)?;
    }
    Ok(())
}

/// The shape of a file of a bundle, by its name: text for JSON and XML, else `binary`.
pub fn shape_of(name: &str, binary: Shape) -> Shape {
    let text = [".json", ".dmrpp", ".zmetadata", ".zarray", ".zattrs", ".zgroup", ".xml"];
    if text.iter().any(|ext| name.ends_with(ext)) {
        Shape::Text
    } else {
        binary
    }
}

/// A bundle with one of its files mutated (files whose name contains `prefer` are chosen three
/// times in four), sometimes a file dropped or one file's bytes spliced from another seed's.
pub fn mutate(rng: &mut Rng, input: &[u8], others: &[&[u8]], prefer: &str, binary: Shape) -> Vec<u8> {
    let mut files = parse(input);
    if files.is_empty() {
        return mutate::mutate(rng, input, others, binary);
    }
    if rng.one_in(40) {
        files.remove(rng.below(files.len()));
        return encode(&files);
    }
    let preferred: Vec<usize> = (0..files.len()).filter(|&i| files[i].0.contains(prefer)).collect();
    let k = if !preferred.is_empty() && !rng.one_in(4) { *rng.pick(&preferred) } else { rng.below(files.len()) };
    let other_files: Vec<Vec<u8>> =
        others.iter().flat_map(|o| parse(o)).filter(|(n, _)| *n == files[k].0).map(|(_, d)| d).collect();
    let other_refs: Vec<&[u8]> = other_files.iter().map(Vec::as_slice).collect();
    let shape = shape_of(&files[k].0, binary);
    files[k].1 = mutate::mutate(rng, &files[k].1, &other_refs, shape);
    encode(&files)
}

//! Damaged Icechunk repositories (issue 28, items 4 and 9): seeded sweeps of single-byte flips in the
//! branch's snapshot and in its manifests, each followed by `vzarr read` of every array in a child
//! process with its address space capped and a timeout.
//!
//! Every read gives the values libnetcdf reads from the sources, or fails with one line naming the
//! repository (or, where only decoding a chunk shows the damage, the source and the chunk): never
//! chunks silently read as fill values or as other bytes. Icechunk keeps no checksum of its files; vzarr
//! checks what the manifests give (chunk counts and a digest of every reference and stored chunk)
//! against the summary it records with each snapshot.
//!
//! Never a panic, a hang or a multi-line error.

use std::path::{Path, PathBuf};

use super::{scan_icechunk, tip};
use crate::common::archives::{write_series_file, yearly};
use crate::common::hostile::{cli_limited, CHILD_TIMEOUT};
use crate::common::{parse_npy, try_read, with_hdf5_files};
use crate::interop::{assert_same, oracle, s};

/// Flips per swept file.
const FLIPS: usize = 30;

/// The files of the snapshot at the tip of `main` and of every manifest.
fn damageable_files(repo: &Path) -> (PathBuf, Vec<PathBuf>) {
    let snapshot = repo.join("snapshots").join(tip(repo, "main"));
    assert!(snapshot.is_file(), "no snapshot file {}", snapshot.display());
    let mut manifests: Vec<PathBuf> =
        std::fs::read_dir(repo.join("manifests")).unwrap().map(|e| e.unwrap().path()).collect();
    manifests.sort();
    assert!(!manifests.is_empty(), "no manifest files");
    (snapshot, manifests)
}

/// Byte positions to flip in a file of `len` bytes: seeded, spread over the whole file.
fn positions(len: usize, seed: u64) -> Vec<usize> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..FLIPS.min(len))
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % len as u64) as usize
        })
        .collect()
}

/// Reads `var` of `repo` in a limited child: the values equal libnetcdf's, or one clean line naming
/// the repository or a source.
fn assert_read_exact_or_refused(repo: &Path, var: &str, sources: &[PathBuf], what: &str) {
    let out = repo.with_extension(format!("{var}.npy"));
    let run = cli_limited(
        &["read".as_ref(), repo.as_os_str(), var.as_ref(), "-o".as_ref(), out.as_os_str(), "--overwrite".as_ref()],
        CHILD_TIMEOUT,
    );
    if run.code == 0 {
        let ours = parse_npy(&std::fs::read(&out).unwrap());
        assert_same(&format!("{var} after {what}"), &ours.data, &oracle(sources, var));
        return;
    }
    assert_eq!(run.code, 1, "{what}: read {var}: exit code {} (killed or hung?):\n{}", run.code, run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{what}: read {var}: one line on stderr:\n{}", run.stderr);
    // A damaged reference is refused naming the repository, or, where only reading the chunk shows
    // it (bytes that do not decode), the source file and the chunk.
    let named = lines[0].contains(&s(repo)) || sources.iter().any(|f| lines[0].contains(&s(f)));
    assert!(named, "{what}: read {var}: neither the repository nor a source is named: {}", lines[0]);
    for bad in ["context:", "panicked", "RUST_BACKTRACE"] {
        assert!(!lines[0].contains(bad), "{what}: read {var}: {bad:?} in {}", lines[0]);
    }
}

fn sweep(repo: &Path, file: &Path, seed: u64, sources: &[PathBuf]) {
    let pristine = std::fs::read(file).unwrap();
    for at in positions(pristine.len(), seed) {
        let mut damaged = pristine.clone();
        damaged[at] ^= 0x5A;
        std::fs::write(file, &damaged).unwrap();
        let what = format!("flipping byte {at} of {}", file.display());
        for var in ["tas", "time", "lat", "lon"] {
            assert_read_exact_or_refused(repo, var, sources, &what);
        }
    }
    std::fs::write(file, &pristine).unwrap();
}

/// Two yearly files (chunks of 61 days, the last partial) scanned into `dir/repo.icechunk`.
fn two_years_in_a_repository(dir: &Path) -> (Vec<PathBuf>, PathBuf) {
    let sources: Vec<PathBuf> =
        with_hdf5_files(|| yearly(2001..=2002, 61).iter().map(|f| write_series_file(dir, f)).collect());
    let repo = dir.join("repo.icechunk");
    scan_icechunk(&sources, &repo, &[], 0);
    (sources, repo)
}

#[test]
fn flipped_bytes_in_snapshots_and_manifests_read_exactly_or_fail_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (sources, repo) = two_years_in_a_repository(dir.path());
    for var in ["tas", "time", "lat", "lon"] {
        assert_read_exact_or_refused(&repo, var, &sources, "no damage");
    }
    let (snapshot, manifests) = damageable_files(&repo);
    sweep(&repo, &snapshot, 1, &sources);
    for (i, manifest) in manifests.iter().enumerate() {
        sweep(&repo, manifest, 2 + i as u64, &sources);
    }
}

/// Every byte of the branch's snapshot flipped in turn and the repository opened and read in this
/// process (the sweep above runs in limited children, this one covers every byte): each array reads
/// exactly libnetcdf's values, or the open or the read fails with one line naming the repository.
/// Flips that drop a node's manifest or move its extents must be among the refusals, not fill values.
#[test]
fn every_flipped_snapshot_byte_reads_exactly_or_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (sources, repo) = two_years_in_a_repository(dir.path());
    let vars = ["tas", "time", "time_bnds", "lat", "lon"];
    let expected: Vec<Vec<u8>> = vars.iter().map(|v| oracle(&sources, v)).collect();
    let (snapshot, _) = damageable_files(&repo);
    let pristine = std::fs::read(&snapshot).unwrap();
    let authorization = vzarr::read::Authorization::new([s(dir.path())]);
    let one_clean_line = |message: &str, what: &str| {
        assert!(!message.contains('\n') && !message.contains("context:"), "{what}: {message:?}");
        assert!(message.contains(&s(&repo)), "{what}: the repository is not named: {message}");
    };
    let (mut refused, mut exact) = (0, 0);
    for at in 0..pristine.len() {
        let mut damaged = pristine.clone();
        damaged[at] ^= 0x5A;
        std::fs::write(&snapshot, &damaged).unwrap();
        let what = format!("snapshot byte {at} flipped");
        let store = match vzarr::read::blocking::BlockingStore::open(s(&repo), &authorization) {
            Ok(store) => store,
            Err(e) => {
                one_clean_line(&e.to_string(), &what);
                refused += 1;
                continue;
            }
        };
        for (var, theirs) in vars.iter().zip(&expected) {
            match try_read(&store, var, "") {
                Ok(ours) => assert_same(&format!("{var} after {what}"), &ours.bytes, theirs),
                Err(e) => one_clean_line(&e, &format!("{what}: {var}")),
            }
        }
        exact += 1;
    }
    std::fs::write(&snapshot, &pristine).unwrap();
    println!("{} snapshot bytes: {refused} flips refused, {exact} read exactly", pristine.len());
    assert!(refused > 0 && exact > 0, "the sweep reaches both outcomes");
}

/// The Icechunk file header's length: the zstd frame follows it.
const FILE_HEADER: usize = icechunk::format::format_constants::ICECHUNK_FILE_HEADER_LEN;

/// `file` (an Icechunk file: header, one zstd frame) with its frame's header declaring `declared`
/// decoded bytes, the frame's blocks unchanged.
fn redeclared(file: &[u8], declared: u64) -> Vec<u8> {
    let frame = &file[FILE_HEADER..];
    assert_eq!(frame[..4], [0x28, 0xb5, 0x2f, 0xfd], "a zstd frame follows the header");
    [&file[..FILE_HEADER], vzarr::testing::redeclared_frame(frame, declared).as_slice()].concat()
}

/// Reads `tas` of `repo` in a child limited to 4 GiB of address space: refused in one line naming
/// the repository, `file` and `reason` (Icechunk alone would try to allocate what the file declares:
/// under the limit it fails as an I/O error, without it the gigabytes are reserved).
fn assert_refused_naming(repo: &Path, file: &str, reason: &str, what: &str) {
    let out = repo.with_extension("tas.npy");
    let args = ["read".as_ref(), repo.as_os_str(), "tas".as_ref(), "-o".as_ref(), out.as_os_str()];
    let run = cli_limited(&args, CHILD_TIMEOUT);
    assert_eq!(run.code, 1, "{what}: exit code {} (an abort on allocation is 134):\n{}", run.code, run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{what}: one line:\n{}", run.stderr);
    for part in [&s(repo), file, reason] {
        assert!(lines[0].contains(part), "{what}: {part:?} is not in: {}", lines[0]);
    }
}

/// A snapshot or `repo` file whose zstd frame declares 12 GiB (Icechunk 2.3 allocates what a frame
/// declares, up to 16 GiB, before decoding it) is refused before Icechunk reads it; the honest file
/// back in place, the repository reads as libnetcdf reads the sources.
#[test]
fn a_frame_declaring_gigabytes_is_refused_before_it_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let (sources, repo) = two_years_in_a_repository(dir.path());
    let (snapshot, _) = damageable_files(&repo);
    for file in [snapshot, repo.join("repo")] {
        let pristine = std::fs::read(&file).unwrap();
        std::fs::write(&file, redeclared(&pristine, 12 << 30)).unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        let what = format!("{name} declaring 12 GiB");
        assert_refused_naming(&repo, name, &format!("declares {} decoded bytes", 12u64 << 30), &what);
        std::fs::write(&file, &pristine).unwrap();
    }
    // The honest files back: read exactly (a check refusing an honest repository would fail here).
    let out = repo.with_extension("honest.npy");
    crate::common::cli_expect(&["read", &s(&repo), "tas", "-o", &s(&out)], 0);
    let ours = parse_npy(&std::fs::read(&out).unwrap());
    assert_same("tas, the honest files back", &ours.data, &oracle(&sources, "tas"));
    let run = cli_limited(&["info".as_ref(), repo.as_os_str()], CHILD_TIMEOUT);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A snapshot that records 40 GiB for a manifest (Icechunk sizes its request and its buffer by the
/// recorded size) is refused when the manifest is first needed, naming it and the size.
#[test]
fn a_manifest_size_recorded_wrong_is_refused_before_it_is_fetched() {
    let dir = tempfile::tempdir().unwrap();
    let (_sources, repo) = two_years_in_a_repository(dir.path());
    let (snapshot, manifests) = damageable_files(&repo);
    let pristine = std::fs::read(&snapshot).unwrap();
    let plain = zstd::decode_all(&pristine[FILE_HEADER..]).unwrap();
    // The largest manifest (tas's, which the read below needs) whose size appears exactly once in
    // the snapshot's flatbuffer: that is its record.
    let mut by_size = manifests.clone();
    by_size.sort_by_key(|m| std::cmp::Reverse(std::fs::metadata(m).unwrap().len()));
    let (manifest, at) = by_size
        .iter()
        .find_map(|m| {
            let size = std::fs::metadata(m).unwrap().len().to_le_bytes();
            let found: Vec<usize> = plain.windows(8).enumerate().filter(|(_, w)| *w == size).map(|(i, _)| i).collect();
            (found.len() == 1).then(|| (m.clone(), found[0]))
        })
        .expect("a manifest's size recorded once in the snapshot");
    let mut damaged = plain.clone();
    damaged[at..at + 8].copy_from_slice(&(40u64 << 30).to_le_bytes());
    let mut file = pristine[..FILE_HEADER].to_vec();
    file.extend(zstd::encode_all(damaged.as_slice(), 3).unwrap());
    std::fs::write(&snapshot, file).unwrap();
    let id = manifest.file_name().unwrap().to_str().unwrap();
    let reason = format!("(manifests/{id}) is shorter than the {} bytes the snapshot records", 40u64 << 30);
    assert_refused_naming(&repo, id, &reason, "a manifest recorded as 40 GiB");
}

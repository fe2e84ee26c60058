//! The codec floor of a copy (issue 40): the byte work any correct rewrite of chunks must do, timed
//! with nothing else. The stored bytes of every source chunk are read into memory first (through
//! the store's own reader, untimed); the timed part only decodes, moves elements between chunk
//! shapes and encodes, on rayon's global pool (one thread per core), with vzarr's own codec pipeline
//! ([`vzarr::dataset::CodecChain`]: zlib-rs through flate2, libzstd through the `zstd` crate).
//! No I/O, no planning, no scheduling beyond rayon's work stealing.

use bytes::Bytes;

use vzarr::dataset::ArrayMetadata;
use vzarr::read::Authorization;
use vzarr::read::Store;

/// Wall and CPU seconds (every thread of this process, user + system).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Elapsed seconds.
    pub wall: f64,
    /// CPU seconds.
    pub cpu: f64,
}

impl Timing {
    /// The run with the least wall time.
    pub fn best(runs: impl IntoIterator<Item = Timing>) -> Timing {
        runs.into_iter().min_by(|a, b| a.wall.total_cmp(&b.wall)).expect("at least one run")
    }

    /// Two phases one after the other.
    pub fn plus(self, other: Timing) -> Timing {
        Timing { wall: self.wall + other.wall, cpu: self.cpu + other.cpu }
    }
}

/// CPU seconds of this process so far (every thread, user + system).
pub fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is valid; getrusage fills it for this process.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to our rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The wall and CPU time `f` takes, and its result.
pub fn measure<T>(f: impl FnOnce() -> T) -> (Timing, T) {
    let (cpu, start) = (cpu_seconds(), std::time::Instant::now());
    let out = f();
    (Timing { wall: start.elapsed().as_secs_f64(), cpu: cpu_seconds() - cpu }, out)
}

/// An array's metadata and the stored (encoded) bytes of each of its chunks, by linear chunk index
/// (`None`: a missing chunk), read through the store's reader as `vzarr` reads them.
pub fn stored_chunks(
    runtime: &tokio::runtime::Runtime,
    location: &str,
    authorization: &Authorization,
    array: &str,
) -> (ArrayMetadata, Vec<Option<Bytes>>) {
    runtime.block_on(async {
        let store = Store::open(location, authorization).await.unwrap();
        let reader = store.array(array).await.unwrap();
        let entries = reader.entries(0..reader.metadata().chunk_grid.num_chunks()).await.unwrap();
        let chunks = reader.stored_chunks(&entries).await.unwrap();
        (reader.metadata().clone(), chunks)
    })
}

/// Decodes chunk `linear` of `meta`'s grid (its full edge shape, native byte order).
pub fn decode_chunk(meta: &ArrayMetadata, linear: u64, stored: &[u8]) -> Vec<u8> {
    let edges = meta.chunk_grid.chunk_shape(&meta.chunk_grid.chunk_coords(linear));
    let mut out = vec![0u8; edges.iter().product::<u64>() as usize * meta.element_size()];
    meta.codecs.decode_into(stored, meta.element_size(), &mut out).unwrap();
    out
}

/// Copies the box `count` (elements per dimension) from `src` (C order, shape `src_shape`) at
/// `src_at` to `dst` (shape `dst_shape`) at `dst_at`, one contiguous run of the last dimension at
/// a time; `size` bytes an element.
#[allow(clippy::too_many_arguments)] // two boxes and their shapes: grouping them would only rename them
pub fn copy_box(
    src: &[u8],
    src_shape: &[u64],
    src_at: &[u64],
    dst: &mut [u8],
    dst_shape: &[u64],
    dst_at: &[u64],
    count: &[u64],
    size: usize,
) {
    let n = count.len();
    let run = count[n - 1] as usize * size;
    let rows: u64 = count[..n - 1].iter().product();
    let mut index = vec![0u64; n - 1];
    for _ in 0..rows {
        let offset = |shape: &[u64], at: &[u64]| {
            let mut linear = 0;
            for d in 0..n {
                linear = linear * shape[d] + at[d] + if d < n - 1 { index[d] } else { 0 };
            }
            linear as usize * size
        };
        let (s, d) = (offset(src_shape, src_at), offset(dst_shape, dst_at));
        dst[d..d + run].copy_from_slice(&src[s..s + run]);
        for d in (0..n - 1).rev() {
            index[d] += 1;
            if index[d] < count[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

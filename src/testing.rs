//! Not part of the API: the few helpers of the on-disk formats that the integration tests use to
//! craft damaged stores, parts, shards and Icechunk files (`tests/`) and the fuzz targets (`fuzz/`).
//! Hidden, unstable, and not for pipelines.

pub use crate::codec::sharding::{index_len, parse_shard, ShardBuilder, ShardIndexError};
pub use crate::manifest::binding::metadata_digest;
pub use crate::manifest::format::ManifestHeader;
pub use crate::parts::record::{decode_dataset, encode_dataset, RecordError};

/// `frame` (a zstd frame) with its header rewritten to declare `declared` decoded bytes (an 8-byte
/// content size field, an 8 MiB window, the checksum flag kept), its blocks unchanged: a damaged
/// frame, for the tests of the checks of a repository's files (`formats/icechunk/read/frames`).
pub fn redeclared_frame(frame: &[u8], declared: u64) -> Vec<u8> {
    let descriptor = frame[4];
    let single_segment = descriptor & 0x20 != 0;
    let size_field = match descriptor >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let blocks = 5 + usize::from(!single_segment) + [0, 1, 2, 4][usize::from(descriptor & 3)] + size_field;
    let mut out = frame[..4].to_vec();
    out.push(0xC0 | (descriptor & 0x04));
    out.push(0x68); // window 2^23
    out.extend(declared.to_le_bytes());
    out.extend(&frame[blocks..]);
    out
}

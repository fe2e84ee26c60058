#!/usr/bin/env bash
# Regenerates the fuzz seeds under fuzz/corpus/ (committed; run again only when a format changes):
# small files from fixtures/ for the scanners, stores written by this tree's `vzarr` for the store
# readers (their sources in /tmp/vzarr-fuzz-sources, where the harness installs
# fuzz/corpus/sources/ before each run), and the decoder seeds from vzarr's own encoders.
#   fuzz/make_seeds.sh   (after `cargo build --bin vzarr`)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=fuzz/corpus
bin=target/debug/vzarr
fuzz() { cargo test --quiet --test fuzz -- "$@"; }
src=/tmp/vzarr-fuzz-sources
rm -rf "$corpus" && mkdir -p "$corpus"/{hdf5,netcdf3,hdf4,dmrpp,kerchunk-json,kerchunk-parquet,native,native-sources,icechunk,sources}

# HDF5: BES's small files (layouts, filters in every order, compounds, enums, strings, fill values),
# the libver fixtures (v1 and v2 B-trees, fixed and extensible arrays, v2 object headers), and an
# szip copy made with h5repack.
for f in dmrpp/Scalar_compact dmrpp/compact_example dmrpp/d_size64_be dmrpp/chunked_enum \
  dmrpp/compound_simple_chunk dmrpp/compound_two_chunks_naligned dmrpp/chunked_string_array \
  dmrpp/t_special_name dmrpp/SDS_fle_shuf_def dmrpp/SDS_shuf_2def_fle fill_value/FValue_c_b \
  fill_value/comp_array2_udf_nfv_chunk_cmp_right string_arrays/cont_fstr string_arrays/chunked_one_comp_fstr \
  deflate_twice/One_chunk_c_c deflate_twice/fill_some_chunks_c_c dmrpp/t_enum2_mt_scalar; do
  cp "fixtures/dmrpp/$f.h5" "$corpus/hdf5/$(basename "$f").h5"
done
cp fixtures/hdf5/libver_earliest.h5 fixtures/hdf5/libver_latest.h5 fixtures/hdf5/text_compound.h5 "$corpus/hdf5/"
h5repack -f SZIP=8,NN fixtures/dmrpp/dmrpp/SDS_fle_shuf_def.h5 "$corpus/hdf5/szip.h5"

# NetCDF-3: classic, 64-bit offset and CDF-5 headers with every kind of variable and attribute.
cat > /tmp/vzarr-fuzz-seed.cdl <<'CDL'
netcdf seed {
dimensions:
  time = UNLIMITED ; lat = 3 ; lon = 4 ; name = 5 ;
variables:
  double time(time) ; time:units = "days since 2000-01-01" ;
  float tas(time, lat, lon) ; tas:_FillValue = -999.f ; tas:scale = 1.5, 2.5 ;
  short mask(lat, lon) ;
  char label(lat, name) ;
  byte flag ;
  int count(lon) ;
  :title = "fuzz seed" ; :version = 3 ;
data:
  time = 0, 1 ;
  tas = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24 ;
  mask = 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0 ;
  label = "north", "mid", "south" ;
  flag = 1 ;
  count = 1, 2, 3, 4 ;
}
CDL
for kind in 1 2 5; do ncgen -k "$kind" -o "$corpus/netcdf3/kind$kind.nc" /tmp/vzarr-fuzz-seed.cdl; done

# HDF4: the small fixtures (SDS, compressed and chunked special elements, Vdata, Vgroups).
cp fixtures/hdf4/{compressed,tables,vgroups,types,deflate,chunked_partial}.hdf "$corpus/hdf4/"

# DMR++: sidecars with their data files, as bundles.
for f in chunked_shufzip_oneD compact_example fill_some_chunks_c_c nc4_group_atomic_default SDS_simple_chunk_comp.hdf; do
  case $f in *.hdf) data=$f ;; *) data=$f.h5 ;; esac
  tmp=$(mktemp -d); cp "fixtures/dmrpp_out/$data" "fixtures/dmrpp_out/$data.dmrpp" "$tmp/"
  fuzz --bundle "$tmp" "$PWD/$corpus/dmrpp/${f%.hdf}.bundle"; rm -rf "$tmp"
done

# Stores over three small sources, in every format vzarr reads.
cp fixtures/dmrpp/dmrpp/SDS_fle_shuf_def.h5 "$corpus/sources/chunked.h5"
cp "$corpus/netcdf3/kind1.nc" "$corpus/sources/classic.nc"
cp fixtures/hdf4/compressed.hdf "$corpus/sources/compressed.hdf"
cp fixtures/dmrpp/dmrpp/compound_simple_chunk.h5 "$corpus/sources/compound.h5"
rm -rf "$src" && mkdir -p "$src" && cp "$corpus"/sources/* "$src/"
for s in chunked.h5 classic.nc compressed.hdf compound.h5; do
  name=${s%.*}
  out=$(mktemp -d)
  "$bin" scan "$src/$s" -o "$out/native" --skip-unsupported >/dev/null
  fuzz --bundle "$out/native" "$PWD/$corpus/native/$name.bundle"
  cp "$corpus/native/$name.bundle" "$corpus/native-sources/$name.bundle"
  "$bin" scan "$src/$s" --format kerchunk-json -o "$corpus/kerchunk-json/$name.json" --skip-unsupported >/dev/null
  if "$bin" scan "$src/$s" --format kerchunk-parquet -o "$out/parquet" --skip-unsupported >/dev/null; then
    fuzz --bundle "$out/parquet" "$PWD/$corpus/kerchunk-parquet/$name.bundle"
  fi
  "$bin" scan "$src/$s" --format icechunk -o "$out/icechunk" --skip-unsupported >/dev/null
  fuzz --bundle "$out/icechunk" "$PWD/$corpus/icechunk/$name.bundle"
  rm -rf "$out"
done

fuzz --codec-seeds
du -sh "$corpus"

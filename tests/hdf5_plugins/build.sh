#!/usr/bin/env bash
# Builds the HDF5 filter plugins of the tests (lzo_plugin.c: PyTables' LZO, filter 305; lzf_plugin.c:
# h5py's LZF, filter 32000) into DIR and
# prints the HDF5_PLUGIN_PATH that puts them before libhdf5's default plugin directory (where Debian's
# blosc plugin is). When a Python with hdf5plugin is at hand ($VZARR_PYTHON, else the project's
# target/pyenv), its build of the blosc2 filter (32026, which Debian lacks; it loads in Debian's
# libhdf5) is linked into DIR/blosc2 and that directory listed second: verify reads blosc2 chunks
# through it. The first entry alone holds the LZO and LZF plugins.
#
#   tests/hdf5_plugins/build.sh DIR
#
# Needs gcc, Debian libhdf5-dev (headers), liblzo2-dev and liblzf-dev; exits non-zero with the reason on the last
# line of stderr otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh DIR}
mkdir -p "$out"
include=$(pkg-config --cflags-only-I hdf5 2>/dev/null || echo "-I/usr/include/hdf5/serial")
if [ ! -f /usr/include/lzo/lzo1x.h ]; then
  echo "build.sh: no LZO headers (Debian liblzo2-dev)" >&2
  exit 1
fi
if [ ! -f /usr/include/liblzf/lzf.h ]; then
  echo "build.sh: no LibLZF headers (Debian liblzf-dev)" >&2
  exit 1
fi
# shellcheck disable=SC2086
gcc -shared -fPIC -O2 -Wall $include "$here/lzo_plugin.c" -llzo2 -o "$out/libvzarr_test_lzo.so"
# shellcheck disable=SC2086
gcc -shared -fPIC -O2 -Wall $include -I/usr/include/liblzf "$here/lzf_plugin.c" -llzf -o "$out/libvzarr_test_lzf.so"
blosc2=""
py=${VZARR_PYTHON:-$here/../../target/pyenv/bin/python}
if lib=$("$py" -c 'import hdf5plugin, os; print(os.path.join(hdf5plugin.PLUGIN_PATH, "libh5blosc2.so"))' 2>/dev/null) \
    && [ -f "$lib" ]; then
  mkdir -p "$out/blosc2"
  ln -sf "$lib" "$out/blosc2/libh5blosc2.so"
  blosc2=":$out/blosc2"
fi
# libhdf5's compiled-in default directory: HDF5_PLUGIN_PATH replaces it, so it is listed after ours.
default=$(printf '#include <H5pubconf.h>\nH5_DEFAULT_PLUGINDIR\n' | gcc -E -P $include - 2>/dev/null | tail -n 1 | tr -d '"')
case "$default" in
  /*) echo "$out$blosc2:$default" ;;
  *) echo "$out$blosc2" ;;
esac

/* h5py's LZF filter (HDF5 filter 32000) as an HDF5 filter plugin: the oracle of vzarr's LZF decoder.
 *
 * h5py registers its filter (lzf/lzf_filter.c) inside its own extension, and Debian's plugin of it
 * (hdf5-plugin-lzf 3.7.0-8) does not load: it leaves lzf_decompress undefined and does not link
 * liblzf. This plugin does what h5py's filter does: one LibLZF stream per chunk, no header or trailer;
 * the cd_values (filter revision, LZF version, chunk size in bytes) give the decompression buffer's
 * first size (the chunk's, else the stored size), grown until the stream fits; compression fails (the
 * chunk is then stored without the filter, which is optional) when the stream would not be smaller.
 *
 * It calls no libhdf5 function (only the filter class structure is shared), so any libhdf5 from 1.10
 * on loads it. Built by tests/hdf5_plugins/build.sh against LibLZF (Debian liblzf-dev).
 */
#include <errno.h>
#include <stdlib.h>

#include <H5PLextern.h>
#include <lzf.h>

static size_t lzf_h5_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                            size_t *buf_size, void **buf)
{
    if (flags & H5Z_FLAG_REVERSE) {
        size_t nalloc = (cd_nelmts >= 3 && cd_values[2] != 0) ? cd_values[2] : *buf_size;
        for (;;) {
            void *out = malloc(nalloc);
            unsigned status;
            if (out == NULL)
                return 0;
            status = lzf_decompress(*buf, (unsigned)nbytes, out, (unsigned)nalloc);
            if (status != 0) {
                free(*buf);
                *buf = out;
                *buf_size = nalloc;
                return status;
            }
            free(out);
            if (errno != E2BIG || nalloc > ((size_t)1 << 31))
                return 0;
            nalloc += *buf_size;
        }
    } else {
        void *out = malloc(nbytes);
        unsigned status = out ? lzf_compress(*buf, (unsigned)nbytes, out, (unsigned)nbytes) : 0;
        if (status == 0) {
            free(out);
            return 0;
        }
        free(*buf);
        *buf = out;
        *buf_size = nbytes;
        return status;
    }
}

static const H5Z_class2_t LZF_CLASS[1] = {{
    H5Z_CLASS_T_VERS, (H5Z_filter_t)32000, 1, 1, "lzf", NULL, NULL, (H5Z_func_t)lzf_h5_filter,
}};

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

const void *H5PLget_plugin_info(void) { return LZF_CLASS; }

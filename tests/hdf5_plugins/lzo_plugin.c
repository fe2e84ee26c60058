/* PyTables' LZO filter (HDF5 filter 305) as an HDF5 filter plugin: the oracle of vzarr's LZO decoder.
 *
 * PyTables registers its filter (src/H5Zlzo.c) inside its own extension only, and no LZO plugin ships
 * with Debian or h5py, so nothing else lets libhdf5 read LZO chunks. This plugin does what PyTables'
 * filter does (since PyTables 0.8, CHECKSUM compiled out): one LZO1X-1 stream per chunk, no header
 * or trailer; the cd_values (level, table version, object type) change nothing; compression fails
 * (the chunk is then stored without the filter, which is optional) when the stream would not be
 * smaller than the chunk; decompression is liblzo's lzo1x_decompress_safe into a buffer grown until
 * the stream fits, and fails on any other error (trailing bytes included).
 *
 * It calls no libhdf5 function (only the filter class structure is shared), so any libhdf5 from 1.10
 * on loads it: Debian's (libhdf5 in `verify` and the tests, h5repack) and the ones h5py and
 * netCDF4-python bundle. Built by tests/hdf5_plugins/build.sh against liblzo2 (Debian liblzo2-dev).
 */
#include <stdlib.h>
#include <string.h>

#include <H5PLextern.h>
#include <lzo/lzo1x.h>

static int lzo_ready = 0;

static size_t lzo_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                         size_t *buf_size, void **buf)
{
    (void)cd_nelmts;
    (void)cd_values;
    if (!lzo_ready) {
        if (lzo_init() != LZO_E_OK)
            return 0;
        lzo_ready = 1;
    }
    if (flags & H5Z_FLAG_REVERSE) {
        size_t nalloc = *buf_size > nbytes ? *buf_size : nbytes;
        if (nalloc < 1024)
            nalloc = 1024;
        for (;;) {
            unsigned char *out = malloc(nalloc);
            lzo_uint out_len = (lzo_uint)nalloc;
            int status;
            if (out == NULL)
                return 0;
            status = lzo1x_decompress_safe(*buf, (lzo_uint)nbytes, out, &out_len, NULL);
            if (status == LZO_E_OK) {
                free(*buf);
                *buf = out;
                *buf_size = nalloc;
                return out_len;
            }
            free(out);
            if (status != LZO_E_OUTPUT_OVERRUN || nalloc > ((size_t)1 << 40))
                return 0;
            nalloc *= 2;
        }
    } else {
        lzo_uint out_len = (lzo_uint)(nbytes + nbytes / 8 + 128 + 3);
        unsigned char *out = malloc(out_len);
        void *work = malloc(LZO1X_1_MEM_COMPRESS);
        int status = (out && work) ? lzo1x_1_compress(*buf, (lzo_uint)nbytes, out, &out_len, work) : LZO_E_ERROR;
        free(work);
        if (status != LZO_E_OK || out_len >= nbytes) {
            free(out);
            return 0;
        }
        free(*buf);
        *buf = out;
        *buf_size = out_len;
        return out_len;
    }
}

static const H5Z_class2_t LZO_CLASS[1] = {{
    H5Z_CLASS_T_VERS, (H5Z_filter_t)305, 1, 1, "lzo", NULL, NULL, (H5Z_func_t)lzo_filter,
}};

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

const void *H5PLget_plugin_info(void) { return LZO_CLASS; }

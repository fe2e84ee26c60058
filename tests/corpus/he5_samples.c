/* Writes HDF-EOS5 sample files for the real-world corpus with Debian's HDF-EOS5 library.
 *
 * No package ships HDF-EOS5 products worth the name (libhe5-hdfeos-dev's examples are the output
 * of its tutorial programs), so tests/corpus/fetch.py compiles this program and runs it, as it runs
 * ncgen on CDL files. Each file is made through the HE5 API only, the way NASA's product
 * generators make theirs: the library lays out the HDFEOS/GRIDS|SWATHS|ZAS groups, the
 * StructMetadata.0 string and the chunked, compressed datasets.
 *
 *   grid_geo_polar.he5  a geographic grid (float32 Time,YDim,XDim, deflate;
 *                       int16 with a fill value, scale_factor/add_offset, shuffle + deflate and
 *                       tiles never written; uint8 contiguous) and a polar stereographic grid
 *   swath_l2.he5        a swath: Latitude/Longitude/Time geolocation fields, chunked compressed
 *                       data fields whose last chunk along the track is partial, a dimension map
 *                       and a field on an unlimited dimension
 *   zonal_average.he5   a zonal-average (ZA) file: monthly zonal means over pressure levels
 *   grid_szip.he5       a geographic grid with szip (and shuffle + szip) tiles, when the library's
 *                       libhdf5 can encode szip; otherwise one line says it was not made
 *
 *   gcc he5_samples.c -o he5_samples -I/usr/include/hdf-eos5 $(pkg-config --cflags --libs hdf-eos5 hdf5) -lm
 *   ./he5_samples OUTDIR
 *
 * HE5_GDdeffield refuses tiles that do not divide the grid, so only swath and ZA chunks are cut at
 * the edge. Types are libhdf5's H5T_NATIVE_* as in HDF-EOS5's examples (the attribute calls refuse
 * HE5T_NATIVE_*, and HE5_GDwriteattr still returns success). Values are deterministic functions of
 * the indices. Exits non-zero (with the failing call) when a file other than the szip one cannot
 * be made.
 */

#include <HE5_HdfEosDef.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *out_dir;

/* Exits with the failing call unless `status` is non-negative. */
#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((long)(call) < 0) {                                                      \
            fprintf(stderr, "he5_samples: %s:%d: %s failed\n", __FILE__, __LINE__, #call); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static char *path_of(const char *name) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", out_dir, name);
    return buf;
}

/* Writes a string attribute through `write` (HE5_GDwriteattr, HE5_SWwriteattr, ...). */
static void text_attr(herr_t (*write)(hid_t, const char *, hid_t, hsize_t[], void *), hid_t id,
                      const char *name, const char *text) {
    hsize_t count[1] = {strlen(text)};
    CHECK(write(id, name, H5T_NATIVE_CHAR, count, (void *)text));
}

/* Writes units, scale_factor and add_offset of one field through a *writelocattr call. */
static void packing_attrs(herr_t (*write)(hid_t, const char *, const char *, hid_t, hsize_t[], void *),
                          hid_t id, const char *field, const char *units, float scale, float offset) {
    hsize_t one[1] = {1};
    hsize_t len[1] = {strlen(units)};
    CHECK(write(id, field, "units", H5T_NATIVE_CHAR, len, (void *)units));
    CHECK(write(id, field, "scale_factor", H5T_NATIVE_FLOAT, one, &scale));
    CHECK(write(id, field, "add_offset", H5T_NATIVE_FLOAT, one, &offset));
}

static void units_attr(herr_t (*write)(hid_t, const char *, const char *, hid_t, hsize_t[], void *),
                       hid_t id, const char *field, const char *units) {
    hsize_t len[1] = {strlen(units)};
    CHECK(write(id, field, "units", H5T_NATIVE_CHAR, len, (void *)units));
}

/* ---- grid_geo_polar.he5 ---------------------------------------------------------------------- */

enum { GX = 72, GY = 36, GT = 4, PX = 40, PY = 40 };

static void geo_grid(hid_t fid) {
    double upleft[2] = {HE5_EHconvAng(-180.0, HE5_HDFE_DEG_DMS), HE5_EHconvAng(90.0, HE5_HDFE_DEG_DMS)};
    double lowright[2] = {HE5_EHconvAng(180.0, HE5_HDFE_DEG_DMS), HE5_EHconvAng(-90.0, HE5_HDFE_DEG_DMS)};
    hid_t gid = HE5_GDcreate(fid, "GeoGrid", GX, GY, upleft, lowright);
    CHECK(gid);
    CHECK(HE5_GDdefproj(gid, HE5_GCTP_GEO, 0, 0, NULL));
    CHECK(HE5_GDdefpixreg(gid, HE5_HDFE_CENTER));
    CHECK(HE5_GDdeforigin(gid, HE5_HDFE_GD_UL));
    CHECK(HE5_GDdefdim(gid, "Time", GT));

    /* uint8 YDim,XDim, contiguous (no tiling set). A tiling and compression set apply to the next
     * field only (HE5_GDdeftile(HE5_HDFE_NOTILE, 0, NULL) makes libhdf5 refuse that field). */
    CHECK(HE5_GDdeffield(gid, "LandSeaMask", "YDim,XDim", NULL, H5T_NATIVE_UCHAR, 0));

    /* float32 Time,YDim,XDim: deflate, 1x12x24 tiles. */
    float tfill = -9999.0f;
    hsize_t tile3[3] = {1, 12, 24};
    int level[5] = {6, 0, 0, 0, 0};
    CHECK(HE5_GDsetfillvalue(gid, "SurfaceTemperature", H5T_NATIVE_FLOAT, &tfill));
    CHECK(HE5_GDdeftile(gid, HE5_HDFE_TILE, 3, tile3));
    CHECK(HE5_GDdefcomp(gid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_GDdeffield(gid, "SurfaceTemperature", "Time,YDim,XDim", NULL, H5T_NATIVE_FLOAT, 0));

    /* int16 YDim,XDim packed, fill -32767, shuffle + deflate, 12x24 tiles; rows 24.. never written. */
    short pfill = -32767;
    hsize_t tile2[2] = {12, 24};
    int level4[5] = {4, 0, 0, 0, 0};
    CHECK(HE5_GDsetfillvalue(gid, "Precipitation", H5T_NATIVE_SHORT, &pfill));
    CHECK(HE5_GDdeftile(gid, HE5_HDFE_TILE, 2, tile2));
    CHECK(HE5_GDdefcomp(gid, HE5_HDFE_COMP_SHUF_DEFLATE, level4));
    CHECK(HE5_GDdeffield(gid, "Precipitation", "YDim,XDim", NULL, H5T_NATIVE_SHORT, 0));

    static float temp[GT][GY][GX];
    static short precip[GY][GX];
    static unsigned char mask[GY][GX];
    for (int y = 0; y < GY; y++) {
        double lat = 87.5 - 5.0 * y;
        for (int x = 0; x < GX; x++) {
            double lon = -177.5 + 5.0 * x;
            int land = (sin(lon * 0.05) + cos(lat * 0.07)) > 0.6;
            mask[y][x] = (unsigned char)(land ? 1 : (lat < -60.0 ? 2 : 0));
            for (int t = 0; t < GT; t++)
                temp[t][y][x] = (y == 0 && x % 7 == 3)
                                    ? tfill
                                    : (float)(300.0 - 0.6 * fabs(lat) + 3.0 * sin((lon + 30.0 * t) * M_PI / 180.0));
            precip[y][x] = land && x % 5 == 0 ? pfill : (short)(100.0 * (2.0 + 1.5 * cos(lat * M_PI / 45.0)));
        }
    }
    hssize_t start3[3] = {0, 0, 0};
    hsize_t edge3[3] = {GT, GY, GX};
    CHECK(HE5_GDwritefield(gid, "SurfaceTemperature", start3, NULL, edge3, temp));
    hssize_t start2[2] = {0, 0};
    hsize_t half[2] = {24, GX};
    CHECK(HE5_GDwritefield(gid, "Precipitation", start2, NULL, half, precip));
    hsize_t edge2[2] = {GY, GX};
    CHECK(HE5_GDwritefield(gid, "LandSeaMask", start2, NULL, edge2, mask));

    units_attr(HE5_GDwritelocattr, gid, "SurfaceTemperature", "K");
    packing_attrs(HE5_GDwritelocattr, gid, "Precipitation", "mm/day", 0.01f, 0.0f);
    hsize_t three[1] = {3};
    unsigned char flag_values[3] = {0, 1, 2};
    CHECK(HE5_GDwritelocattr(gid, "LandSeaMask", "flag_values", H5T_NATIVE_UCHAR, three, flag_values));
    text_attr(HE5_GDwriteattr, gid, "GridSpacing", "(5.0,5.0)");
    CHECK(HE5_GDdetach(gid));
}

static void polar_grid(hid_t fid) {
    double upleft[2] = {-3850000.0, 5850000.0};
    double lowright[2] = {3750000.0, -5350000.0};
    double projparm[13] = {0};
    projparm[4] = HE5_EHconvAng(-45.0, HE5_HDFE_DEG_DMS); /* longitude below the pole */
    projparm[5] = HE5_EHconvAng(70.0, HE5_HDFE_DEG_DMS);  /* latitude of true scale */
    hid_t gid = HE5_GDcreate(fid, "NorthPolarGrid", PX, PY, upleft, lowright);
    CHECK(gid);
    CHECK(HE5_GDdefproj(gid, HE5_GCTP_PS, 0, 12 /* WGS 84 */, projparm));
    CHECK(HE5_GDdefpixreg(gid, HE5_HDFE_CORNER));

    unsigned char ifill = 255;
    hsize_t tile[2] = {10, 20};
    int level[5] = {9, 0, 0, 0, 0};
    CHECK(HE5_GDsetfillvalue(gid, "SeaIceConcentration", H5T_NATIVE_UCHAR, &ifill));
    CHECK(HE5_GDdeftile(gid, HE5_HDFE_TILE, 2, tile));
    CHECK(HE5_GDdefcomp(gid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_GDdeffield(gid, "SeaIceConcentration", "YDim,XDim", NULL, H5T_NATIVE_UCHAR, 0));
    CHECK(HE5_GDdeftile(gid, HE5_HDFE_TILE, 2, tile));
    CHECK(HE5_GDdefcomp(gid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_GDdeffield(gid, "SnowDepth", "YDim,XDim", NULL, H5T_NATIVE_FLOAT, 0));

    static unsigned char ice[PY][PX];
    static float snow[PY][PX];
    for (int y = 0; y < PY; y++)
        for (int x = 0; x < PX; x++) {
            double r = hypot(x - 19.5, y - 21.0);
            ice[y][x] = r > 18.0 ? ifill : (unsigned char)(r < 8.0 ? 100 : 100 - 9 * (r - 8.0));
            snow[y][x] = (float)(r > 18.0 ? 0.0 : 0.35 * exp(-r / 6.0));
        }
    hssize_t start[2] = {0, 0};
    hsize_t edge[2] = {PY, PX};
    CHECK(HE5_GDwritefield(gid, "SeaIceConcentration", start, NULL, edge, ice));
    CHECK(HE5_GDwritefield(gid, "SnowDepth", start, NULL, edge, snow));
    units_attr(HE5_GDwritelocattr, gid, "SeaIceConcentration", "percent");
    units_attr(HE5_GDwritelocattr, gid, "SnowDepth", "m");
    CHECK(HE5_GDdetach(gid));
}

static void grid_file(void) {
    hid_t fid = HE5_GDopen(path_of("grid_geo_polar.he5"), H5F_ACC_TRUNC);
    CHECK(fid);
    geo_grid(fid);
    polar_grid(fid);
    hsize_t one[1] = {1};
    int version = 3;
    CHECK(HE5_EHwriteglbattr(fid, "CollectionVersion", H5T_NATIVE_INT, one, &version));
    text_attr(HE5_EHwriteglbattr, fid, "InstrumentName", "vzarr synthetic radiometer");
    CHECK(HE5_GDclose(fid));
}

/* ---- swath_l2.he5 ---------------------------------------------------------------------------- */

enum { TRACK = 45, XTRACK = 30, BANDS = 4 };

static void swath_fields(hid_t sid) {
    CHECK(HE5_SWdefdim(sid, "GeoTrack", TRACK));
    CHECK(HE5_SWdefdim(sid, "GeoXtrack", XTRACK));
    CHECK(HE5_SWdefdim(sid, "Bands", BANDS));
    CHECK(HE5_SWdefdim(sid, "DataTrack", 2 * TRACK));
    CHECK(HE5_SWdefdim(sid, "Unlim", H5S_UNLIMITED));
    CHECK(HE5_SWdefdimmap(sid, "GeoTrack", "DataTrack", 0, 2));

    /* The chunking and compression set apply to the next field only. Geolocation: 10x30 chunks,
     * deflate (the last chunk along the track holds 5 rows); Time: 16-element chunks, no filter. */
    hsize_t geo_chunk[2] = {10, XTRACK};
    hsize_t time_chunk[1] = {16};
    int level[5] = {5, 0, 0, 0, 0};
    CHECK(HE5_SWdefchunk(sid, 2, geo_chunk));
    CHECK(HE5_SWdefcomp(sid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_SWdefgeofield(sid, "Latitude", "GeoTrack,GeoXtrack", NULL, H5T_NATIVE_FLOAT, 0));
    CHECK(HE5_SWdefchunk(sid, 2, geo_chunk));
    CHECK(HE5_SWdefcomp(sid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_SWdefgeofield(sid, "Longitude", "GeoTrack,GeoXtrack", NULL, H5T_NATIVE_FLOAT, 0));
    CHECK(HE5_SWdefchunk(sid, 1, time_chunk));
    CHECK(HE5_SWdefgeofield(sid, "Time", "GeoTrack", NULL, H5T_NATIVE_DOUBLE, 0));

    /* Radiance: 1x10x16 chunks, deflate; partial along the track and across it. */
    float rfill = -1.0e30f;
    hsize_t rad_chunk[3] = {1, 10, 16};
    CHECK(HE5_SWsetfillvalue(sid, "Radiance", H5T_NATIVE_FLOAT, &rfill));
    CHECK(HE5_SWdefchunk(sid, 3, rad_chunk));
    CHECK(HE5_SWdefcomp(sid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_SWdefdatafield(sid, "Radiance", "Bands,GeoTrack,GeoXtrack", NULL, H5T_NATIVE_FLOAT, 0));

    /* CloudFraction: int16 packed, fill -999, shuffle + deflate, 16x16 chunks. */
    short cfill = -999;
    hsize_t cf_chunk[2] = {16, 16};
    CHECK(HE5_SWsetfillvalue(sid, "CloudFraction", H5T_NATIVE_SHORT, &cfill));
    CHECK(HE5_SWdefchunk(sid, 2, cf_chunk));
    CHECK(HE5_SWdefcomp(sid, HE5_HDFE_COMP_SHUF_DEFLATE, level));
    CHECK(HE5_SWdefdatafield(sid, "CloudFraction", "GeoTrack,GeoXtrack", NULL, H5T_NATIVE_SHORT, 0));

    /* QualityFlags: uint8 on the mapped (finer) track dimension, 32x30 chunks, deflate. */
    hsize_t qf_chunk[2] = {32, XTRACK};
    CHECK(HE5_SWdefchunk(sid, 2, qf_chunk));
    CHECK(HE5_SWdefcomp(sid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_SWdefdatafield(sid, "QualityFlags", "DataTrack,GeoXtrack", NULL, H5T_NATIVE_UCHAR, 0));

    /* ScanCount: int32 on GeoTrack, extendible along Unlim (chunked, uncompressed). */
    int none[5] = {0, 0, 0, 0, 0};
    hsize_t sc_chunk[1] = {20};
    CHECK(HE5_SWdefchunk(sid, 1, sc_chunk));
    CHECK(HE5_SWdefcomp(sid, HE5_HDFE_COMP_NONE, none));
    CHECK(HE5_SWdefdatafield(sid, "ScanCount", "GeoTrack", "Unlim", H5T_NATIVE_INT, 0));
}

static void swath_data(hid_t sid) {
    static float lat[TRACK][XTRACK], lon[TRACK][XTRACK], rad[BANDS][TRACK][XTRACK];
    static double time[TRACK];
    static short cloud[TRACK][XTRACK];
    static unsigned char qf[2 * TRACK][XTRACK];
    static int scans[TRACK];
    for (int t = 0; t < TRACK; t++) {
        time[t] = 8.5e8 + 1.5 * t;
        scans[t] = 1000 + t;
        for (int x = 0; x < XTRACK; x++) {
            lat[t][x] = (float)(-20.0 + 0.9 * t + 0.02 * x);
            lon[t][x] = (float)(140.0 - 0.3 * t + 0.5 * (x - XTRACK / 2));
            cloud[t][x] = (t + x) % 11 == 0 ? -999 : (short)((t * 37 + x * 13) % 1000);
            for (int b = 0; b < BANDS; b++)
                rad[b][t][x] = (x == 0 && t % 9 == 4) ? -1.0e30f
                                                      : (float)((b + 1) * 12.5 + sin(0.1 * t) * cos(0.2 * x));
        }
    }
    for (int t = 0; t < 2 * TRACK; t++)
        for (int x = 0; x < XTRACK; x++) qf[t][x] = (unsigned char)((t * 3 + x) & 0x0f);
    hssize_t s[3] = {0, 0, 0};
    hsize_t e2[2] = {TRACK, XTRACK}, e1[1] = {TRACK}, e3[3] = {BANDS, TRACK, XTRACK};
    hsize_t eq[2] = {2 * TRACK, XTRACK};
    CHECK(HE5_SWwritefield(sid, "Latitude", s, NULL, e2, lat));
    CHECK(HE5_SWwritefield(sid, "Longitude", s, NULL, e2, lon));
    CHECK(HE5_SWwritefield(sid, "Time", s, NULL, e1, time));
    CHECK(HE5_SWwritefield(sid, "Radiance", s, NULL, e3, rad));
    CHECK(HE5_SWwritefield(sid, "CloudFraction", s, NULL, e2, cloud));
    CHECK(HE5_SWwritefield(sid, "QualityFlags", s, NULL, eq, qf));
    CHECK(HE5_SWwritefield(sid, "ScanCount", s, NULL, e1, scans));
}

static void swath_file(void) {
    hid_t fid = HE5_SWopen(path_of("swath_l2.he5"), H5F_ACC_TRUNC);
    CHECK(fid);
    hid_t sid = HE5_SWcreate(fid, "L2Swath");
    CHECK(sid);
    swath_fields(sid);
    swath_data(sid);
    units_attr(HE5_SWwritelocattr, sid, "Latitude", "degrees_north");
    units_attr(HE5_SWwritelocattr, sid, "Longitude", "degrees_east");
    units_attr(HE5_SWwritelocattr, sid, "Time", "s since 1993-01-01");
    units_attr(HE5_SWwritelocattr, sid, "Radiance", "W m-2 sr-1 um-1");
    packing_attrs(HE5_SWwritelocattr, sid, "CloudFraction", "1", 0.001f, 0.0f);
    text_attr(HE5_SWwriteattr, sid, "OrbitDirection", "ascending");
    hsize_t one[1] = {1};
    int orbit = 41235;
    CHECK(HE5_SWwritegrpattr(sid, "OrbitNumber", H5T_NATIVE_INT, one, &orbit));
    text_attr(HE5_EHwriteglbattr, fid, "ProcessingLevel", "L2");
    CHECK(HE5_SWdetach(sid));
    CHECK(HE5_SWclose(fid));
}

/* ---- zonal_average.he5 ----------------------------------------------------------------------- */

enum { MONTHS = 12, LEVELS = 17, LATS = 36 };

static void zonal_file(void) {
    hid_t fid = HE5_ZAopen(path_of("zonal_average.he5"), H5F_ACC_TRUNC);
    CHECK(fid);
    hid_t zid = HE5_ZAcreate(fid, "ZonalMeans");
    CHECK(zid);
    CHECK(HE5_ZAdefdim(zid, "nMonths", MONTHS));
    CHECK(HE5_ZAdefdim(zid, "nLevels", LEVELS));
    CHECK(HE5_ZAdefdim(zid, "nLatitudes", LATS));

    CHECK(HE5_ZAdefine(zid, "Latitude", "nLatitudes", NULL, H5T_NATIVE_FLOAT));
    CHECK(HE5_ZAdefine(zid, "Pressure", "nLevels", NULL, H5T_NATIVE_DOUBLE));
    CHECK(HE5_ZAdefine(zid, "SampleCount", "nMonths,nLatitudes", NULL, H5T_NATIVE_INT));

    /* 4x8x36 chunks: the last chunk along nLevels holds one level. */
    hsize_t chunk[3] = {4, 8, LATS};
    int level[5] = {6, 0, 0, 0, 0};
    float ofill = -999.0f;
    CHECK(HE5_ZAdefchunk(zid, 3, chunk));
    CHECK(HE5_ZAdefcomp(zid, HE5_HDFE_COMP_DEFLATE, level));
    CHECK(HE5_ZAdefine(zid, "Temperature", "nMonths,nLevels,nLatitudes", NULL, H5T_NATIVE_FLOAT));
    CHECK(HE5_ZAsetfillvalue(zid, "OzoneMixingRatio", H5T_NATIVE_FLOAT, &ofill));
    CHECK(HE5_ZAdefchunk(zid, 3, chunk));
    CHECK(HE5_ZAdefcomp(zid, HE5_HDFE_COMP_SHUF_DEFLATE, level));
    CHECK(HE5_ZAdefine(zid, "OzoneMixingRatio", "nMonths,nLevels,nLatitudes", NULL, H5T_NATIVE_FLOAT));

    static float lats[LATS], temp[MONTHS][LEVELS][LATS], ozone[MONTHS][LEVELS][LATS];
    static double pres[LEVELS];
    static int count[MONTHS][LATS];
    for (int j = 0; j < LATS; j++) lats[j] = (float)(-87.5 + 5.0 * j);
    for (int k = 0; k < LEVELS; k++) pres[k] = 1000.0 * pow(0.68, k);
    for (int m = 0; m < MONTHS; m++)
        for (int j = 0; j < LATS; j++) {
            count[m][j] = (m * 31 + j * 7) % 500;
            for (int k = 0; k < LEVELS; k++) {
                temp[m][k][j] = (float)(288.0 - 6.5 * k + 20.0 * cos(lats[j] * M_PI / 180.0) +
                                        4.0 * sin(2.0 * M_PI * m / 12.0));
                ozone[m][k][j] = (k > 14 && (j < 3 || j > 32)) ? ofill : (float)(1e-7 * (1 + k) * (1.0 + 0.01 * m));
            }
        }
    hssize_t s[3] = {0, 0, 0};
    hsize_t e_lat[1] = {LATS}, e_lev[1] = {LEVELS}, e_cnt[2] = {MONTHS, LATS};
    hsize_t e3[3] = {MONTHS, LEVELS, LATS};
    CHECK(HE5_ZAwrite(zid, "Latitude", s, NULL, e_lat, lats));
    CHECK(HE5_ZAwrite(zid, "Pressure", s, NULL, e_lev, pres));
    CHECK(HE5_ZAwrite(zid, "SampleCount", s, NULL, e_cnt, count));
    CHECK(HE5_ZAwrite(zid, "Temperature", s, NULL, e3, temp));
    CHECK(HE5_ZAwrite(zid, "OzoneMixingRatio", s, NULL, e3, ozone));
    units_attr(HE5_ZAwritelocattr, zid, "Pressure", "hPa");
    units_attr(HE5_ZAwritelocattr, zid, "Temperature", "K");
    units_attr(HE5_ZAwritelocattr, zid, "OzoneMixingRatio", "mol/mol");
    text_attr(HE5_ZAwriteattr, zid, "AveragingPeriod", "monthly");
    text_attr(HE5_EHwriteglbattr, fid, "ProcessingLevel", "L3");
    CHECK(HE5_ZAdetach(zid));
    CHECK(HE5_ZAclose(fid));
}

/* ---- grid_szip.he5 --------------------------------------------------------------------------- */

enum { SX = 64, SY = 30 };

/* Defines and writes the szip fields; returns 0, or -1 when a call fails (szip not available). */
static int szip_fields(hid_t gid) {
    hsize_t tile[2] = {10, 32};
    int nn[5] = {16, 0, 0, 0, 0};
    int k13[5] = {8, 0, 0, 0, 0};
    if (HE5_GDdeftile(gid, HE5_HDFE_TILE, 2, tile) < 0) return -1;
    if (HE5_GDdefcomp(gid, HE5_HDFE_COMP_SZIP_NN, nn) < 0) return -1;
    if (HE5_GDdeffield(gid, "Reflectance", "YDim,XDim", NULL, H5T_NATIVE_FLOAT, 0) < 0) return -1;
    if (HE5_GDdeftile(gid, HE5_HDFE_TILE, 2, tile) < 0) return -1;
    if (HE5_GDdefcomp(gid, HE5_HDFE_COMP_SHUF_SZIP_K13, k13) < 0) return -1;
    if (HE5_GDdeffield(gid, "BrightnessTemperature", "YDim,XDim", NULL, H5T_NATIVE_SHORT, 0) < 0) return -1;

    static float refl[SY][SX];
    static short bt[SY][SX];
    for (int y = 0; y < SY; y++)
        for (int x = 0; x < SX; x++) {
            refl[y][x] = (float)(0.05 + 0.9 * fabs(sin(0.11 * x) * cos(0.17 * y)));
            bt[y][x] = (short)(2200 + (x * 17 + y * 29) % 800);
        }
    hssize_t start[2] = {0, 0};
    hsize_t edge[2] = {SY, SX};
    if (HE5_GDwritefield(gid, "Reflectance", start, NULL, edge, refl) < 0) return -1;
    if (HE5_GDwritefield(gid, "BrightnessTemperature", start, NULL, edge, bt) < 0) return -1;
    return 0;
}

static void szip_file(void) {
    const char *path = path_of("grid_szip.he5");
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", path);
    double upleft[2] = {HE5_EHconvAng(100.0, HE5_HDFE_DEG_DMS), HE5_EHconvAng(45.0, HE5_HDFE_DEG_DMS)};
    double lowright[2] = {HE5_EHconvAng(132.0, HE5_HDFE_DEG_DMS), HE5_EHconvAng(30.0, HE5_HDFE_DEG_DMS)};
    hid_t fid = HE5_GDopen(saved, H5F_ACC_TRUNC);
    CHECK(fid);
    hid_t gid = HE5_GDcreate(fid, "SzipGrid", SX, SY, upleft, lowright);
    CHECK(gid);
    CHECK(HE5_GDdefproj(gid, HE5_GCTP_GEO, 0, 0, NULL));
    int ok = szip_fields(gid) == 0;
    if (ok) {
        packing_attrs(HE5_GDwritelocattr, gid, "BrightnessTemperature", "K", 0.1f, 0.0f);
    }
    HE5_GDdetach(gid);
    HE5_GDclose(fid);
    if (!ok) {
        remove(saved);
        printf("he5_samples: szip: this HDF-EOS5/libhdf5 cannot write szip; grid_szip.he5 not made\n");
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: he5_samples OUTDIR\n");
        return 2;
    }
    out_dir = argv[1];
    grid_file();
    swath_file();
    zonal_file();
    szip_file();
    return 0;
}

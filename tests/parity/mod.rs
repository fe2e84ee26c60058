//! xarray parity (issue 17): xarray opens vzarr's kerchunk JSON, materialized Zarr store and Icechunk
//! repository exactly as it opens the source files with netCDF4 (variables, dimensions, coordinates, decoded dtypes and
//! values, attributes), checked by the script users run, `examples/xarray_parity.py`, over the
//! fixtures, an attribute fixture (char coordinate, char fill value, non-finite and one-element
//! attributes, packed data; NetCDF-4 and NetCDF-3) and the generated archives (concatenated along
//! time, with interior partial chunks, and N-D tiles). Every remaining difference is listed with
//! its reason in `tests/python/parity_expected.tsv`; an unlisted one, or a listed one that no longer
//! happens, fails.

use std::path::{Path, PathBuf};

use netcdf::types::NcVariableType;
use netcdf::NcTypeDescriptor;

use crate::common::archives::{monthly, write_series_file, yearly};
use crate::common::classic::write_monthly_classic;
use crate::common::cmip::{write_tile, Tile};
use crate::common::{cli_expect, supported_fixtures, with_hdf5_files, Fixture};
use crate::interop::{python, s};

/// One `NC_CHAR` element.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct Char(u8);

// SAFETY: `Char` is a transparent `u8`, the in-memory layout of `NC_CHAR`.
unsafe impl NcTypeDescriptor for Char {
    fn type_descriptor() -> NcVariableType {
        NcVariableType::Char
    }
}

fn chars(text: &[u8]) -> Vec<Char> {
    text.iter().map(|&b| Char(b)).collect()
}

/// The attribute fixture: a 1-D char coordinate `x(x)`, a char array with a `_FillValue`, packed
/// int16 data (float32 `scale_factor`/`add_offset`), a CF time coordinate, and attributes that are
/// non-finite floats, one-element lists, the text "NaN", empty text and lists.
fn write_attributes(dir: &Path, name: &str, options: netcdf::Options) -> PathBuf {
    let path = dir.join(name);
    with_hdf5_files(|| {
        let classic = options.bits() == netcdf::Options::CLASSIC.bits();
        let mut f = netcdf::create_with(&path, options).expect("create the attribute fixture");
        f.add_attribute("title", "parity").unwrap();
        f.add_attribute("nan_global", f64::NAN).unwrap();
        f.add_attribute("ints", vec![1i32, 2, 3]).unwrap();
        f.add_attribute("one_float", vec![0.1f32]).unwrap();
        f.add_attribute("empty", "").unwrap();
        f.add_dimension("x", 3).unwrap();
        f.add_dimension("time", 2).unwrap();
        f.add_dimension("n", 2).unwrap();
        f.add_dimension("strlen", 4).unwrap();
        f.add_variable::<Char>("x", &["x"]).unwrap();
        let mut t = f.add_variable::<f64>("time", &["time"]).unwrap();
        t.put_attribute("units", "days since 2000-01-01").unwrap();
        t.put_attribute("calendar", "noleap").unwrap();
        let mut names = f.add_variable::<Char>("names", &["n", "strlen"]).unwrap();
        names.put_attribute("_FillValue", "-").unwrap();
        names.put_attribute("long_name", "station names").unwrap();
        let mut packed = f.add_variable::<i16>("packed", &["time", "x"]).unwrap();
        packed.put_attribute("scale_factor", 0.5f32).unwrap();
        packed.put_attribute("add_offset", 10f32).unwrap();
        packed.put_attribute("_FillValue", -1i16).unwrap();
        let mut v = f.add_variable::<f32>("v", &["time", "x"]).unwrap();
        v.put_attribute("valid_range", vec![f32::NEG_INFINITY, f32::INFINITY]).unwrap();
        v.put_attribute("missing_value", f32::NAN).unwrap();
        v.put_attribute("specials", vec![f64::NEG_INFINITY, f64::NAN, f64::INFINITY]).unwrap();
        v.put_attribute("one", vec![5i16]).unwrap();
        v.put_attribute("text_nan", "NaN").unwrap();
        v.put_attribute("pair", vec![1.5f64, 2.5]).unwrap();
        if classic {
            f.enddef().unwrap();
        }
        f.variable_mut("x").unwrap().put_values(&chars(b"abc"), ..).unwrap();
        f.variable_mut("time").unwrap().put_values(&[0.0f64, 1.0], ..).unwrap();
        f.variable_mut("names").unwrap().put_values(&chars(b"ab\0\0cdef"), ..).unwrap();
        f.variable_mut("packed").unwrap().put_values(&[1i16, -1, 3, 4, 5, 6], ..).unwrap();
        f.variable_mut("v").unwrap().put_values(&[1f32, f32::NAN, 3.0, 4.0, 5.0, 6.0], ..).unwrap();
    });
    path
}

/// One case: source files scanned (with `concat` dimensions) to a native store, verified against
/// libnetcdf, exported as kerchunk JSON and materialized, and scanned to an Icechunk repository.
fn case(dir: &Path, name: &str, files: Vec<PathBuf>, concat: &[&str]) -> serde_json::Value {
    let store = dir.join(format!("{name}.vzarr"));
    let mut args = vec![s("scan")];
    args.extend(files.iter().map(s));
    for dim in concat {
        args.extend([s("--concat"), s(dim)]);
    }
    args.extend([s("-o"), s(&store)]);
    cli_expect(&args, 0);
    // Every value of the store equals libnetcdf's read of the files (char coordinates included).
    cli_expect(&[s("verify"), s(&store)], 0);
    let refs = dir.join(format!("{name}.json"));
    cli_expect(&[s("export"), s(&store), s("--kerchunk"), s(&refs)], 0);
    let zarr = dir.join(format!("{name}.zarr"));
    cli_expect(&[s("materialize"), s(&store), s(&zarr)], 0);
    // The same scan as an Icechunk repository.
    let repo = dir.join(format!("{name}.icechunk"));
    let mut args = args[..args.len() - 2].to_vec();
    args.extend([s("--format"), s("icechunk"), s("-o"), s(&repo)]);
    cli_expect(&args, 0);
    let files: Vec<String> = files.iter().map(s).collect();
    serde_json::json!({"case": name, "stores": [s(&refs), s(&zarr), s(&repo)], "files": files, "concat": concat})
}

fn tiles(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (x0, nx) in [(0, 7), (7, 7), (14, 3)] {
        for (y0, ny) in [(0, 5), (5, 4)] {
            paths.push(write_tile(dir, &Tile { y0, ny, x0, nx, chunk: [2, 3, nx.min(4)], compress: true }));
        }
    }
    paths
}

/// Every case; the fixtures' directories go in `keep` (removed when it is dropped).
fn cases(dir: &Path, keep: &mut Vec<Fixture>) -> Vec<serde_json::Value> {
    let mut cases = Vec::new();
    for (name, fixture) in supported_fixtures() {
        cases.push(case(dir, name, vec![fixture.path.clone()], &[]));
        keep.push(fixture);
    }
    let attrs4 = write_attributes(dir, "attributes_nc4.nc", netcdf::Options::NETCDF4);
    cases.push(case(dir, "attributes_nc4", vec![attrs4], &[]));
    let attrs3 = write_attributes(dir, "attributes_nc3.nc", netcdf::Options::CLASSIC);
    cases.push(case(dir, "attributes_nc3", vec![attrs3], &[]));
    let sub = |name: &str| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (m, y, t, c) = (sub("monthly"), sub("yearly"), sub("tiles"), sub("classic"));
    let months =
        with_hdf5_files(|| monthly(2023..=2023, None, true).iter().map(|f| write_series_file(&m, f)).collect());
    cases.push(case(dir, "archive_monthly", months, &["time"]));
    let years = with_hdf5_files(|| yearly(2000..=2001, 61).iter().map(|f| write_series_file(&y, f)).collect());
    cases.push(case(dir, "archive_yearly_partial_chunks", years, &["time"]));
    cases.push(case(dir, "archive_tiles_y_x", tiles(&t), &["y", "x"]));
    let classic: Vec<PathBuf> = (1..=2).map(|month| write_monthly_classic(&c, 2023, month)).collect();
    cases.push(case(dir, "archive_classic_monthly", classic, &["time"]));
    cases
}

#[test]
fn xarray_opens_every_store_as_it_opens_the_sources() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with zarr and xarray (run tests/python/setup.sh); skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut fixtures = Vec::new();
    let cases = cases(dir.path(), &mut fixtures);
    let batch = dir.path().join("cases.json");
    std::fs::write(&batch, serde_json::to_vec(&cases).unwrap()).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = std::process::Command::new(&python);
    command.arg(root.join("examples/xarray_parity.py")).args(["--batch", &s(&batch), "--expected"]);
    command.arg(root.join("tests/python/parity_expected.tsv")).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    eprintln!("{}", run.stdout);
    assert_eq!(run.code, 0, "xarray_parity.py found unexpected differences:\n{}\n{}", run.stdout, run.stderr);
    for case in &cases {
        let name = case["case"].as_str().unwrap();
        for kind in ["kerchunk", "materialized", "icechunk"] {
            assert!(run.stdout.contains(&format!("{name}: {kind} ")), "{name} {kind} not checked:\n{}", run.stdout);
        }
    }
}

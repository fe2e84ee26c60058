//! The library's rooms import each other in one direction only: no cycle between top-level modules
//! (`read` -> `store` -> `dataset`, never back) nor between the modules of one room. Read from the
//! sources: every `crate::` and `super::` path of every file under `src/` (test modules left out).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path of a source file (`src/read/open.rs` -> `read::open`, `src/lib.rs` -> ``).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let parts: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if parts == ["lib"] {
        return String::new();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.ends_with("bin") {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every module path a file names through `crate::` or `super::`, resolved to the longest module of
/// `modules` that is a prefix of it.
fn imports(module: &str, text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    let path = regex::Regex::new(r"\b(crate::|(?:super::)+)((?:\w+::)*\w+)").unwrap();
    let mut found = BTreeSet::new();
    for capture in path.captures_iter(text) {
        let mut base: Vec<&str> = if module.is_empty() { Vec::new() } else { module.split("::").collect() };
        if &capture[1] == "crate::" {
            base.clear();
        } else {
            for _ in 0..capture[1].matches("super").count() {
                base.pop();
            }
        }
        let mut segments: Vec<&str> = base;
        segments.extend(capture[2].split("::"));
        let target = (0..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|prefix| modules.contains(prefix))
            .unwrap_or_default();
        found.insert(target);
    }
    found
}

/// `module` cut to its first `depth` segments.
fn room(module: &str, depth: usize) -> String {
    module.split("::").take(depth).collect::<Vec<_>>().join("::")
}

/// The strongly connected components of more than one node (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, (n, n));
        s.stack.push(v);
        for w in s.edges.get(v).into_iter().flatten() {
            match s.index.get(w.as_str()).copied() {
                None => {
                    visit(s, w);
                    let low = s.index[w.as_str()].1.min(s.index[v].1);
                    s.index.get_mut(v).unwrap().1 = low;
                }
                Some((wi, _)) if s.stack.contains(&w.as_str()) => {
                    let low = wi.min(s.index[v].1);
                    s.index.get_mut(v).unwrap().1 = low;
                }
                Some(_) => {}
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let at = s.stack.iter().rposition(|x| *x == v).unwrap();
            let component: Vec<String> = s.stack.drain(at..).map(str::to_string).collect();
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state = State { edges, index: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in edges.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

#[test]
fn rooms_and_their_modules_import_each_other_in_one_direction() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    assert!(modules.contains("read::open") && modules.contains("store"), "{modules:?}");
    let imported: Vec<(String, BTreeSet<String>)> = files
        .iter()
        .map(|f| {
            let module = module_of(&src, f);
            let found = imports(&module, &std::fs::read_to_string(f).unwrap(), &modules);
            (module, found)
        })
        .collect();
    let mut problems = Vec::new();
    for depth in [1, 2] {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, targets) in &imported {
            let from = room(module, depth);
            for target in targets {
                let to = room(target, depth);
                let nested = from.starts_with(&format!("{to}::")) || to.starts_with(&format!("{from}::"));
                if !from.is_empty() && !to.is_empty() && from != to && !nested {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        for component in cycles(&edges) {
            let members: BTreeSet<&String> = component.iter().collect();
            let links: Vec<String> = component
                .iter()
                .flat_map(|a| edges[a].iter().filter(|b| members.contains(b)).map(move |b| format!("{a} -> {b}")))
                .collect();
            problems.push(format!("import cycle: {}", links.join(", ")));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("read".into()).or_default().insert("store".into());
    edges.entry("store".into()).or_default().insert("dataset".into());
    assert!(cycles(&edges).is_empty());
    edges.entry("dataset".into()).or_default().insert("read".into());
    assert_eq!(cycles(&edges).len(), 1);
    let modules: BTreeSet<String> = ["", "read", "read::open", "store"].iter().map(|s| s.to_string()).collect();
    let found = imports("read::open", "use super::super::store::X; use crate::read::Y;", &modules);
    assert_eq!(found, ["read", "store"].iter().map(|s| s.to_string()).collect());
}

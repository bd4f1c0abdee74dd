//! The code's shape, checked from its `use` lines: the module graph of
//! `src/` (one node a file, an edge for every `crate::` or `super::` path a
//! file names outside its tests) has no circle, and every import goes down
//! the layers docs/architecture.md draws; every file is on that page's map;
//! no file outgrows what one reader holds in mind.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a file of `src/` may have.
const MAX_FILE_LINES: usize = 700;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A module's path from the crate root (`["runner", "phases"]`; the crate
/// root itself is empty), and its file.
type Module = Vec<String>;

fn modules() -> BTreeMap<Module, PathBuf> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("src/ is readable") {
            let path = entry.expect("src/ is listed").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src()).expect("under src/");
            let mut module: Module = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|last| last == "mod") {
                module.pop();
            }
            if module == ["main"] || module == ["lib"] {
                module.clear();
            }
            found.insert(module, path);
        }
    }
    found
}

/// The text a file's imports are read from: without comments and without its
/// `#[cfg(test)] mod … { … }` blocks (a test may use anything).
fn code_of(path: &Path) -> String {
    let text = fs::read_to_string(path).expect("a source file is readable");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(open) = after.find('{') else {
            rest = "";
            break;
        };
        let head = &after[..open];
        if !head.contains("mod ") {
            // A single test-only item: skip the attribute, keep the rest.
            rest = &after["#[cfg(test)]".len()..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path a text names after `prefix` (`crate::` or `super::`), braces
/// expanded one level deep: `crate::a::{b, c::d}` gives `a::b` and `a::c::d`.
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(prefix) {
        let start = from + at;
        from = start + prefix.len();
        if text[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let tail = &text[from..];
        let base_len = tail
            .find(|c: char| !(is_ident(c) || c == ':'))
            .unwrap_or(tail.len());
        let base: Vec<String> = tail[..base_len]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if tail[base_len..].starts_with('{') {
            let inner = &tail[base_len + 1..];
            let close = inner.find('}').unwrap_or(inner.len());
            for item in inner[..close].split(',') {
                let item = item.split(" as ").next().unwrap_or("").trim();
                let item = item.trim_start_matches('{');
                if item.is_empty() || item == "self" || item == "*" {
                    continue;
                }
                let mut path = base.clone();
                path.extend(
                    item.split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                );
                paths.push(path);
            }
        }
        paths.push(base);
    }
    paths
}

/// The modules declared `#[cfg(test)] mod name;`: test code, which may use
/// anything.
fn test_only(modules: &BTreeMap<Module, PathBuf>) -> BTreeSet<Module> {
    let mut found = BTreeSet::new();
    for (module, file) in modules {
        let text = fs::read_to_string(file).expect("a source file is readable");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            if pair[0] != "#[cfg(test)]" {
                continue;
            }
            if let Some(name) = pair[1]
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'))
            {
                let mut child = module.clone();
                child.push(name.to_owned());
                found.insert(child);
            }
        }
    }
    found
}

/// The module graph: for each file, the files it imports from (test-only
/// files left out).
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let mut modules = modules();
    for module in test_only(&modules) {
        modules.remove(&module);
    }
    let deepest = |path: &[String]| -> Option<Module> {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].to_vec())
            .find(|m| modules.contains_key(m))
    };
    let mut edges = BTreeMap::new();
    for (module, file) in &modules {
        let code = code_of(file);
        let mut paths = paths_after(&code, "crate::");
        let parent: Module = module[..module.len().saturating_sub(1)].to_vec();
        for path in paths_after(&code, "super::") {
            let mut full = parent.clone();
            full.extend(path);
            paths.push(full);
        }
        let targets: BTreeSet<Module> = paths
            .iter()
            .filter_map(|p| deepest(p))
            .filter(|t| t != module)
            .collect();
        edges.insert(module.clone(), targets);
    }
    edges
}

fn shown(module: &Module) -> String {
    if module.is_empty() {
        "the crate root".to_owned()
    } else {
        module.join("::")
    }
}

/// The circles of a graph: its strongly connected components of more than
/// one node (Tarjan's algorithm).
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.edges[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn the_reader_sees_the_imports_a_file_makes() {
    let code = "use crate::a::{b, c::d as e};\nfn f() { crate::x::y(); }\nlet z = my_crate::no;";
    let paths = paths_after(code, "crate::");
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(joined, ["a::b", "a::c::d", "a", "x::y"]);
    let stripped = code_of(&src().join("stats/summary.rs"));
    assert!(
        !stripped.contains("#[cfg(test)]\nmod"),
        "test blocks are left out"
    );
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let m = |s: &str| -> Module { s.split("::").map(str::to_owned).collect() };
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    edges.insert(m("a"), [m("b")].into());
    edges.insert(m("b"), [m("c")].into());
    edges.insert(m("c"), [m("a")].into());
    edges.insert(m("d"), [m("a")].into());
    let found = circles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].len(), 3);
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let edges = graph();
    assert!(
        edges.len() > 50,
        "the module graph was read: {} files",
        edges.len()
    );
    let found: Vec<String> = circles(&edges)
        .iter()
        .map(|c| c.iter().map(shown).collect::<Vec<_>>().join(" -> "))
        .collect();
    assert!(
        found.is_empty(),
        "import circles in src/:\n{}",
        found.join("\n")
    );
}

/// The layers of docs/architecture.md, top first: a module may import from
/// its own layer and those below, never from one above. A module is in the
/// layer of the longest prefix listed (`calibrate::finding` is not where
/// `calibrate` is).
const LAYERS: &[(&str, &[&str])] = &[
    ("entry", &["", "cli"]),
    (
        "orchestration",
        &[
            "app",
            "calibrate",
            "compare",
            "probe",
            "sweep",
            "attach::run",
            "history",
        ],
    ),
    ("output", &["report"]),
    ("families", &["benches", "attach"]),
    (
        "results",
        &[
            "results",
            "figures",
            "lines",
            "calibrate::finding",
            "history::entry",
            "history::store",
            "history::series",
            "history::bmf",
            "history::time",
            "history::backend",
            "history::postgres",
            "history::spool",
        ],
    ),
    (
        "engine",
        &[
            "runner",
            "latency",
            "profile",
            "noise",
            "bpf",
            "perf_event",
            "targets",
            "probe_path",
            "red_zone",
            "trigger_path",
            "kernel",
            "attach::facts",
        ],
    ),
    (
        "foundation",
        &["stats", "config", "lists", "channels", "runner::affinity"],
    ),
    ("base", &["error", "interrupt", "progress"]),
];

/// A module's layer: its index in [`LAYERS`], by the longest prefix.
fn layer_of(module: &Module) -> Option<usize> {
    let path = module.join("::");
    let mut best: Option<(usize, usize)> = None;
    for (i, (_, prefixes)) in LAYERS.iter().enumerate() {
        for prefix in *prefixes {
            let matches =
                path == *prefix || (!prefix.is_empty() && path.starts_with(&format!("{prefix}::")));
            if matches && best.is_none_or(|(_, len)| prefix.len() > len) {
                best = Some((i, prefix.len()));
            }
        }
    }
    best.map(|(i, _)| i)
}

#[test]
fn every_import_goes_down_the_layers() {
    let mut unplaced = Vec::new();
    let mut upward = Vec::new();
    for (module, targets) in graph() {
        let Some(from) = layer_of(&module) else {
            unplaced.push(shown(&module));
            continue;
        };
        for target in targets {
            match layer_of(&target) {
                Some(to) if to < from => upward.push(format!(
                    "{} ({}) imports {} ({})",
                    shown(&module),
                    LAYERS[from].0,
                    shown(&target),
                    LAYERS[to].0
                )),
                _ => {}
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules in no layer: {}",
        unplaced.join(", ")
    );
    assert!(
        upward.is_empty(),
        "imports up the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_layer_check_sees_an_import_up() {
    let m = |s: &str| -> Module { s.split("::").map(str::to_owned).collect() };
    let (report, runner) = (layer_of(&m("report::text")), layer_of(&m("runner::phases")));
    assert!(report < runner, "report is above the runner");
    assert!(layer_of(&m("calibrate::finding")) > layer_of(&m("calibrate::measure")));
    assert_eq!(
        layer_of(&Vec::new()),
        Some(0),
        "the crate root is the entry"
    );
}

#[test]
fn no_file_outgrows_a_reader() {
    let long: Vec<String> = modules()
        .values()
        .filter_map(|path| {
            let lines = fs::read_to_string(path).ok()?.lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines: {}",
        long.join(", ")
    );
}

#[test]
fn every_file_is_on_the_architecture_map() {
    let map =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .expect("docs/architecture.md is readable");
    let missing: Vec<String> = modules()
        .values()
        .map(|path| {
            path.strip_prefix(src())
                .expect("under src/")
                .to_string_lossy()
                .into_owned()
        })
        .filter(|rel| !map.contains(&format!("`{rel}`")) && !map.contains(&format!("{rel}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "src/ files docs/architecture.md does not name (as `path/file.rs`): {}",
        missing.join(", ")
    );
}

/// The name of each BPF program `bpf/*.bpf.c` defines: the function after a
/// `SEC(...)` line, or the name given to a program-making macro. The
/// programs `HELPER_ENTRIES` makes are named by the macro itself.
fn bpf_program_names() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf");
    let mut found = Vec::new();
    for entry in fs::read_dir(&dir).expect("bpf/ is readable") {
        let path = entry.expect("bpf/ is listed").path();
        if !path.to_string_lossy().ends_with(".bpf.c") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("a BPF source is readable");
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
        let file = file.unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let name = if line.starts_with("SEC(") {
                let next = lines.get(i + 1).copied().unwrap_or_default();
                next.split('(')
                    .next()
                    .and_then(|head| head.split_whitespace().last())
            } else if line.starts_with("EMPTY_PROGRAM(") || line.starts_with("BODY_PROGRAM(") {
                line.split(',')
                    .nth(1)
                    .map(|arg| arg.trim().trim_end_matches(')'))
            } else {
                None
            };
            if let Some(name) = name {
                found.push((format!("{file}:{}", i + 1), name.to_string()));
            }
        }
    }
    found
}

/// The leak checks know bench's programs by their names' prefixes
/// (`tests/common`'s `PROGRAM_PREFIXES`): a program named otherwise would
/// stay loaded unseen.
#[test]
fn every_bpf_program_is_named_for_the_leak_checks() {
    let names = bpf_program_names();
    assert!(
        names.len() > 30,
        "the sources' programs were not found: {names:?}"
    );
    let unseen: Vec<String> = names
        .iter()
        .filter(|(_, name)| !crate::common::is_ours(name))
        .map(|(place, name)| format!("{name} ({place})"))
        .collect();
    assert!(
        unseen.is_empty(),
        "BPF programs the leak checks would not see (name them count_..., drive_...): {}",
        unseen.join(", ")
    );
}

/// Every line bench writes is built and written in `report/`: elsewhere no
/// `print!`, `println!`, `eprint!` or `eprintln!` (a comment may name them).
#[test]
fn nothing_outside_report_prints() {
    let printers = ["print!(", "println!(", "eprint!(", "eprintln!("];
    let mut found = Vec::new();
    for (module, path) in modules() {
        if module.first().is_some_and(|first| first == "report") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("a source file is readable");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if printers.iter().any(|p| code.contains(p)) {
                found.push(format!("{}:{}", path.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "printing outside src/report/: {}",
        found.join(", ")
    );
}

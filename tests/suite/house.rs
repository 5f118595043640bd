//! The house stays one-way: no import cycle between src/'s top-level modules (a file `src/x.rs`
//! or a folder `src/x/`, lib.rs aside), read from every `crate::` and `$crate::` path in the code
//! (comments left out), nested `{…}` groups included; a path through one of lib.rs's re-exports
//! (`crate::Name`) counts as an edge to the module that defines the name.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Edges between top-level modules: from → to → the places (file:line) that make the edge.
type Edges = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The text without `//` comments (line and doc comments alike).
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text inside the `{…}` group that opens at `text[0] == '{'`, nesting included.
fn group(text: &str) -> &str {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[1..i];
                }
            }
            _ => {}
        }
    }
    &text[1.min(text.len())..]
}

/// The leading identifier of `text` (after whitespace).
fn ident(text: &str) -> Option<&str> {
    let t = text.trim_start();
    let end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(t.len());
    (end > 0 && !t.starts_with(|c: char| c.is_ascii_digit())).then(|| &t[..end])
}

/// The first path segment of each item of a use-group: `a::{X}, b, C as D` → a, b, C.
fn heads(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items.into_iter().filter_map(ident).collect()
}

/// The names lib.rs re-exports at the root, mapped to the top-level module defining them.
fn reexports(lib: &str, tops: &BTreeSet<String>) -> BTreeMap<String, String> {
    let text = strip_comments(lib);
    let mut names = BTreeMap::new();
    for (at, _) in text.match_indices("pub use ") {
        let rest = &text[at + "pub use ".len()..];
        let Some(module) = ident(rest) else { continue };
        if !tops.contains(module) || !rest[module.len()..].starts_with("::") {
            continue;
        }
        let path = &rest[module.len() + 2..];
        let items: Vec<String> = if path.starts_with('{') {
            group(path).split(',').map(str::to_string).collect()
        } else {
            vec![path.split(';').next().unwrap_or("").to_string()]
        };
        for item in items {
            let last = item.rsplit("::").next().unwrap_or("");
            let name = match last.split_once(" as ") {
                Some((_, alias)) => alias,
                None => last,
            };
            if let Some(name) = ident(name) {
                names.insert(name.to_string(), module.to_string());
            }
        }
    }
    names
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The import edges between the top-level modules of the source tree `src`.
fn edges(src: &Path) -> Edges {
    let mut tops = BTreeSet::new();
    for entry in fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && name != "lib") {
            tops.insert(name);
        }
    }
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let names = reexports(&lib, &tops);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges = Edges::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let from = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if !tops.contains(&from) {
            continue;
        }
        let text = strip_comments(&fs::read_to_string(&file).unwrap());
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let targets = if rest.starts_with('{') {
                heads(group(rest))
            } else {
                ident(rest).into_iter().collect()
            };
            let line = text[..at].matches('\n').count() + 1;
            for target in targets {
                let to = names.get(target).map_or(target, String::as_str);
                if tops.contains(to) && to != from {
                    edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to.to_string())
                        .or_default()
                        .insert(format!("{}:{line}", rel.display()));
                }
            }
        }
    }
    edges
}

/// The strongly connected groups of two or more modules (Tarjan), each sorted.
fn cycles(edges: &Edges) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        groups: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flat_map(|m| m.keys()) {
                let w = w.as_str();
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
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.groups
}

/// Each cycle with the references that close it.
fn report(edges: &Edges, groups: &[Vec<String>]) -> String {
    let mut out = String::new();
    for group in groups {
        out += &format!("cycle: {}\n", group.join(" "));
        for a in group {
            for (b, places) in &edges[a] {
                if group.contains(b) {
                    let places: Vec<_> = places.iter().cloned().collect();
                    out += &format!("  {a} -> {b}: {}\n", places.join(", "));
                }
            }
        }
    }
    out
}

#[test]
fn imports_between_top_level_modules_run_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = edges(&src);
    assert!(
        edges.len() > 10,
        "the crate's modules were not read: {edges:?}"
    );
    let groups = cycles(&edges);
    assert!(groups.is_empty(), "{}", report(&edges, &groups));
}

/// The floors of `docs/design.md`'s table ("| floor | modules | …"): each backquoted module of a
/// row's second cell at the number that starts its first.
fn floors(design: &str) -> BTreeMap<String, usize> {
    let mut floors = BTreeMap::new();
    for line in design.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(floor) = cells
            .get(1)
            .and_then(|c| c.split_whitespace().next())
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        for name in cells[2].split('`').skip(1).step_by(2) {
            floors.insert(name.to_string(), floor);
        }
    }
    floors
}

/// Every import between top-level modules that runs up `floors` (from a module to one on a
/// higher floor), and every module the floors leave out (`guide`, documentation only, aside),
/// as lines of a report.
fn against_the_floors(edges: &Edges, floors: &BTreeMap<String, usize>, src: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut tops: BTreeSet<String> = BTreeSet::new();
    for entry in fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if (path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
            && name != "lib"
            && name != "guide"
        {
            tops.insert(name);
        }
    }
    for top in &tops {
        if !floors.contains_key(top) {
            wrong.push(format!("{top} is on no floor of docs/design.md"));
        }
    }
    for (from, targets) in edges {
        for (to, places) in targets {
            if let (Some(a), Some(b)) = (floors.get(from), floors.get(to)) {
                if b > a {
                    let places: Vec<_> = places.iter().cloned().collect();
                    wrong.push(format!(
                        "{from} (floor {a}) -> {to} (floor {b}): {}",
                        places.join(", ")
                    ));
                }
            }
        }
    }
    wrong
}

/// The floors `docs/design.md` gives are the code's: every top-level module is on one, and no
/// import runs up them.
#[test]
fn imports_run_down_the_floors_of_the_design() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let floors = floors(&fs::read_to_string(root.join("docs/design.md")).unwrap());
    assert!(
        floors.len() > 20 && floors.get("termination") == Some(&0),
        "the floors were not read: {floors:?}"
    );
    let src = root.join("src");
    let wrong = against_the_floors(&edges(&src), &floors, &src);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The reader finds a cycle closed through a nested group, `$crate::` in a macro and a root
/// re-export, and none in a tree whose imports run one way.
#[test]
fn the_reader_sees_cycles_through_groups_macros_and_reexports() {
    let dir = std::env::temp_dir().join(format!("ssgp-house-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(
        "src/lib.rs",
        "pub mod low;\npub mod high;\npub mod top;\npub use top::{Top, Other as Named};\n",
    );
    write(
        "src/low.rs",
        "// use crate::high; (a comment)\npub struct Low;\n",
    );
    write(
        "src/high/mod.rs",
        "use crate::{error, low::{self, Low}};\npub struct High;\n",
    );
    write(
        "src/top.rs",
        "use crate::high::High;\nmacro_rules! m { () => { $crate::low::Low } }\npub struct Top;\n",
    );
    let src = dir.join("src");
    assert!(cycles(&edges(&src)).is_empty(), "{:?}", edges(&src));
    // Floors: an import within a floor or down one passes; one up a floor, or a module on none,
    // is reported.
    let design = "| floor | modules |\n|---|---|\n| 0 leaves | `low` |\n| 1 | `high`, `top` |\n";
    assert_eq!(
        against_the_floors(&edges(&src), &floors(design), &src),
        Vec::<String>::new()
    );
    let up = against_the_floors(
        &edges(&src),
        &floors("| 0 | `low`, `top` |\n| 1 | `high` |"),
        &src,
    );
    assert_eq!(up, vec!["top (floor 0) -> high (floor 1): top.rs:1"]);
    let missing = against_the_floors(&edges(&src), &floors("| 0 | `low` |"), &src);
    assert_eq!(
        missing,
        vec![
            "high is on no floor of docs/design.md",
            "top is on no floor of docs/design.md"
        ]
    );
    // low → top through the re-export `crate::Named`, top → high, high → low: one cycle of three.
    write("src/low.rs", "pub struct Low(crate::Named);\n");
    let e = edges(&src);
    let groups = cycles(&e);
    assert_eq!(groups, vec![vec!["high", "low", "top"]], "{e:?}");
    let text = report(&e, &groups);
    assert!(text.contains("low -> top: low.rs:1"), "{text}");
    assert!(text.contains("high -> low: high/mod.rs:1"), "{text}");
    // A `$crate::` path in a macro closes one too.
    write("src/low.rs", "pub struct Low;\n");
    write(
        "src/high/mod.rs",
        "macro_rules! h { () => { $crate::top::Top } }\npub struct High;\n",
    );
    assert_eq!(cycles(&edges(&src)), vec![vec!["high", "top"]]);
    fs::remove_dir_all(&dir).unwrap();
}

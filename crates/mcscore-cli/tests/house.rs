//! The house drawn from its imports: within each crate, no module reaches
//! back to a module that reaches it (a circle makes two modules one unit to
//! read and to change). Crates cannot form circles (cargo refuses them);
//! modules can, so every `crate::module` path outside comments and tests is
//! read from the sources and the graph checked for strongly connected parts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[test]
fn no_module_imports_a_module_that_imports_it() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (mut circles, mut modules) = (Vec::new(), 0);
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let graph = imports(&src);
        modules += graph.len();
        for circle in strongly_connected(&graph) {
            circles.push(format!("{}: {}", src.display(), circle.join(" ↔ ")));
        }
    }
    assert!(modules > 50, "read only {modules} modules under {}", crates.display());
    assert!(circles.is_empty(), "modules that import each other:\n{}", circles.join("\n"));
}

/// Each top-level module of `src` (a file or a folder) and the modules of
/// the same crate it names: `crate::m::…` names `m`, and `crate::X` names the
/// module the crate root re-exports `X` from.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    let mut root = String::new();
    let mut files = vec![src.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(src).unwrap();
        let module = relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        let text = code(&std::fs::read_to_string(&path).unwrap());
        if module == "lib" || module == "main" {
            root.push_str(&text);
        } else {
            texts.entry(module).or_default().push_str(&text);
        }
    }
    let modules: BTreeSet<String> = texts.keys().cloned().collect();
    // `pub use m::{A, b::C};` at the root: A and C are m's.
    let mut reexported: BTreeMap<String, String> = BTreeMap::new();
    for statement in root.split("pub use ").skip(1) {
        let statement = statement.split(';').next().unwrap();
        let Some(module) = modules.iter().find(|m| statement.trim_start().starts_with(&format!("{m}::"))) else { continue };
        for name in statement.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()) {
            reexported.insert(name.to_owned(), module.clone());
        }
    }
    texts
        .iter()
        .map(|(module, text)| {
            let mut named = BTreeSet::new();
            for (at, _) in text.match_indices("crate::") {
                for first in first_segments(&text[at + "crate::".len()..]) {
                    if let Some(m) = modules.get(&first).or_else(|| reexported.get(&first)) {
                        if m != module {
                            named.insert(m.clone());
                        }
                    }
                }
            }
            (module.clone(), named)
        })
        .collect()
}

/// A file's code: before its first test module, without comment lines.
fn code(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]").next().unwrap();
    before_tests.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The first segment of each path after `crate::`: one, or one per item of
/// a `{…}` group (which may span lines and nest).
fn first_segments(rest: &str) -> Vec<String> {
    let ident = |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let Some(group) = rest.strip_prefix('{') else { return vec![ident(rest)] };
    let (mut depth, mut items, mut start) = (0usize, Vec::new(), 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(ident(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    items.into_iter().filter(|s| !s.is_empty()).collect()
}

/// The graph's strongly connected parts of more than one module (Tarjan).
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let at = s.stack.iter().rposition(|&x| x == v).unwrap();
            let part: Vec<String> = s.stack.split_off(at).into_iter().map(str::to_owned).collect();
            if part.len() > 1 {
                s.found.push(part);
            }
        }
    }
    let mut state = State { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

#[test]
fn a_circle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]
        .into_iter()
        .map(|(m, named)| (m.to_owned(), named.iter().map(|n| n.to_string()).collect()))
        .collect();
    let mut found = strongly_connected(&graph);
    found[0].sort();
    assert_eq!(found, vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]);
}

#[test]
fn paths_are_read_through_groups_over_lines() {
    assert_eq!(first_segments("log::{self, Header};"), ["log"]);
    assert_eq!(first_segments("{\n    fills::Cancel,\n    job::{End, Running},\n    EvalError,\n};"), ["fills", "job", "EvalError"]);
}

//! The architecture, checked from the source: every module of `src/` belongs to a
//! layer, a module only imports modules of lower layers, and no files import each
//! other in a loop.
//!
//! Top level: a module imports only top-level modules of a lower layer ([`LAYERS`])
//! or its own top-level module. Inside `jit/` the same rule holds between the
//! backend's layers ([`JIT_LAYERS`]: IR-side plans → emitters → lowerings →
//! drivers → runtime), with one exception: a module may import its own ancestors
//! (a folder's `mod.rs` holds what its subtree shares, such as `JitError` or an
//! ISA's `Emitter`).
//!
//! Imports are read from the text: every path that starts with `crate::`,
//! `super::` or `self::`, in `use` declarations (braced ones included:
//! `use crate::{a::b, c::{d, e}}`) and in expressions (`crate::jit::compile(…)`),
//! outside comments, string literals and `#[cfg(test)]` items. A path is resolved
//! to the longest module path that exists, following `pub use` re-exports (so
//! `crate::Shader` is an import of `engine`). A parent module's use of the
//! children it declares (`mod lower;` … `lower::emit`) is composition, not an
//! import, and is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules, lower numbers lower: a module may import only top-level
/// modules with a smaller number (and anything inside its own top-level module,
/// except `jit`, which is layered by [`JIT_LAYERS`]).
const LAYERS: &[(&str, u32)] = &[
    ("isa", 0),
    ("arith", 1),
    ("program", 1),
    ("shbin", 2),
    ("asm", 3),
    ("state", 3),
    ("machine", 4),
    // Models the machine's stacks (`analysis::static_flow`).
    ("analysis", 5),
    ("interp", 6),
    ("ir", 6),
    ("jit", 7),
    ("engine", 8),
    ("describe", 8),
    ("testgen", 10),
];

/// The backend's layers, lowest first. Each module of `jit/` takes the layer of
/// the longest prefix listed here (a new file in `jit/x64/emit/` is an emitter
/// without a new line). To extend: add the module's path under the layer whose
/// job it does.
const JIT_LAYERS: &[(u32, &str, &[&str])] = &[
    (
        0,
        "shared by every layer: executable memory, the frame and the uniform cache generated code and the runtime share",
        &["jit::memory", "jit::frame", "jit::uniform_cache"],
    ),
    (
        1,
        "IR side: what to generate (spill plans, inline flow plans, the wide engine's row layout, widths and block plans)",
        &[
            "jit::spill",
            "jit::inline_flow",
            "jit::wide::layout",
            "jit::wide::width",
            "jit::wide::lanes",
            "jit::wide::plan",
        ],
    ),
    (
        2,
        "ISA-generic code generation, written against traits each ISA implements: the flow dispatch, the register allocator, the single-vertex and the wide drivers",
        &[
            "jit::flow_dispatch",
            "jit::regalloc",
            "jit::single",
            "jit::wide::codegen",
        ],
    ),
    (
        3,
        "emitters: instruction encoders, constants and the primitive emitters, one per ISA",
        &[
            "jit::x64::emit",
            "jit::x64::evex",
            "jit::x64::consts",
            "jit::x64::fp_env",
            "jit::x64::offsets",
            "jit::x64::wide::isa",
            "jit::a64::emit",
            "jit::a64::consts",
        ],
    ),
    (
        4,
        "lowerings: IR blocks and control flow to instructions, one vertex per register or one per lane",
        &[
            "jit::x64::lower",
            "jit::x64::flow",
            "jit::x64::entry",
            "jit::x64::wide::kernel",
            "jit::a64::lower",
            "jit::a64::operands",
            "jit::a64::flow",
            "jit::a64::wide::kernel",
        ],
    ),
    (
        5,
        "drivers: compile a shader (plan, lower every block through the ISA's target, link)",
        &["jit::x64", "jit::a64", "jit::x64::wide", "jit::a64::wide"],
    ),
    (
        6,
        "runtime: the code cache, compiled shaders and running invocations and batches",
        &[
            "jit",
            "jit::wide",
            "jit::wide::batch",
            "jit::wide::transpose",
        ],
    ),
];

/// Modules the tables name before they exist (other work in progress adds them);
/// every other name in the tables must exist, so a deleted module's line goes.
const PLANNED: &[&str] = &[];

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

type Module = Vec<String>;

/// One source file: its text without comments, string contents and test items.
struct Source {
    text: String,
}

type Tree = BTreeMap<Module, Source>;

fn key(path: &str) -> Module {
    if path.is_empty() {
        return Vec::new();
    }
    path.split("::").map(str::to_string).collect()
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

/// Module path (`["jit", "x64", "lower"]`) → source, for every file of `src/`
/// except the binary and test files.
fn read_tree() -> Tree {
    let mut out = Tree::new();
    let mut stack = vec![Path::new(SRC).to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            let rel = path
                .strip_prefix(SRC)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                if rel != "bin" && !rel.ends_with("tests") {
                    stack.push(path);
                }
                continue;
            }
            if !rel.ends_with(".rs") || rel.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            insert(&mut out, &rel, &text);
        }
    }
    out
}

/// Adds the file at `rel` (`jit/x64/mod.rs`) with `text` to `tree`.
fn insert(tree: &mut Tree, rel: &str, text: &str) {
    let mut segments: Module = rel[..rel.len() - 3]
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(segments.last().map(String::as_str), Some("mod" | "lib")) {
        segments.pop();
    }
    let text = strip_test_items(&strip_comments_and_strings(text));
    tree.insert(segments, Source { text });
}

/// The text without comments (line, doc and nested block comments) and with
/// the contents of string and character literals removed (a `{` inside a
/// string must not unbalance the braces; a path in a message is no import).
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !i.checked_sub(1).is_some_and(|p| ident(chars[p]))
            && chars[i + 1..]
                .iter()
                .find(|&&c| c != '#')
                .is_some_and(|&c| c == '"')
        {
            // A raw string: `r#"…"#` ends at a quote followed by as many `#`.
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            i += 2 + hashes;
            while i < chars.len() {
                if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&c| c == '#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The text without the items and statements under `#[cfg(test)]` (or any
/// `cfg` that needs `test`, such as `#[cfg(all(test, …))]`): test code may use
/// anything.
fn strip_test_items(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = text[search..].find("#[cfg(") {
        let start = search + found;
        let Some(attr_end) = matching(bytes, start + 1) else {
            break;
        };
        // `cfg(test)` or `cfg(all(test, …))`: compiled in test builds only
        // (`any(test, …)` and `not(test)` items are in other builds too).
        let condition: String = tokens(&text[start + "#[cfg(".len()..attr_end - 1]).concat();
        let needs_test = condition == "test"
            || (condition.starts_with("all(")
                && tokens(&condition).iter().any(|t| t == "test")
                && !condition.contains("not(")
                && !condition.contains("any("));
        if !needs_test {
            search = attr_end + 1;
            continue;
        }
        // Skip further attributes, then the item: up to its `;` or its braced body.
        let mut at = attr_end + 1;
        let mut end = bytes.len();
        while at < bytes.len() {
            match bytes[at] {
                b'#' if bytes.get(at + 1) == Some(&b'[') => {
                    at = matching(bytes, at + 1).map_or(bytes.len(), |e| e + 1);
                }
                b'(' | b'[' => at = matching(bytes, at).map_or(bytes.len(), |e| e + 1),
                b';' => {
                    end = at + 1;
                    break;
                }
                b'{' => {
                    end = matching(bytes, at).map_or(bytes.len(), |e| e + 1);
                    break;
                }
                _ => at += 1,
            }
        }
        out.push_str(&text[copied..start]);
        out.push(' ');
        copied = end;
        search = end;
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

/// The index of the bracket closing the one at `open` (`(`, `[` or `{`).
fn matching(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (at, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at);
                }
            }
            _ => {}
        }
    }
    None
}

/// Identifiers and punctuation (`::` as one token), whitespace dropped.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// A path as written: its first segment is `crate`, `self`, `super` or (in a
/// `use` of a child module) a plain name; `alias` is the name it is known by.
#[derive(Clone, Debug, PartialEq, Eq)]
struct WrittenPath {
    segments: Vec<String>,
    alias: Option<String>,
}

/// Reads the path or use tree starting at `tokens[at]` below `prefix`; returns
/// every complete path it names and the index after it.
fn read_tree_at(tokens: &[String], mut at: usize, prefix: &[String]) -> (Vec<WrittenPath>, usize) {
    let mut segments = prefix.to_vec();
    let mut out = Vec::new();
    while let Some(token) = tokens.get(at) {
        if token == "{" {
            at += 1;
            while let Some(t) = tokens.get(at) {
                if t == "}" {
                    break;
                }
                if t == "," {
                    at += 1;
                    continue;
                }
                let (inner, next) = read_tree_at(tokens, at, &segments);
                out.extend(inner);
                at = next.max(at + 1);
            }
            return (out, at + 1);
        }
        if token == "*" {
            out.push(WrittenPath {
                segments,
                alias: None,
            });
            return (out, at + 1);
        }
        if !token.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            break;
        }
        if token == "self" && !segments.is_empty() {
            // `a::{self, b}`: `a` itself.
        } else {
            segments.push(token.clone());
        }
        at += 1;
        if tokens.get(at).is_some_and(|t| t == "::") {
            at += 1;
            continue;
        }
        break;
    }
    let mut alias = None;
    if tokens.get(at).is_some_and(|t| t == "as") {
        alias = tokens.get(at + 1).cloned();
        at += 2;
    }
    if !segments.is_empty() {
        out.push(WrittenPath { segments, alias });
    }
    (out, at)
}

/// Every path rooted at `crate`, `super` or `self`, in `use` declarations and
/// expressions alike (visibilities such as `pub(in crate::jit)` are not imports).
fn rooted_paths(tokens: &[String]) -> Vec<WrittenPath> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let root = matches!(tokens[at].as_str(), "crate" | "super" | "self");
        let before = at.checked_sub(1).map(|b| tokens[b].as_str());
        let followed = tokens.get(at + 1).is_some_and(|t| t == "::");
        if root && followed && before != Some("::") && before != Some("in") {
            let (paths, next) = read_tree_at(tokens, at, &[]);
            out.extend(paths);
            at = next.max(at + 1);
        } else {
            at += 1;
        }
    }
    out
}

/// The paths of every `pub use` (any visibility) declaration, with the name
/// each one is re-exported as.
fn reexported_paths(tokens: &[String]) -> Vec<WrittenPath> {
    let mut out = Vec::new();
    for (at, token) in tokens.iter().enumerate() {
        if token != "use" || at == 0 {
            continue;
        }
        // `pub use` or `pub(crate) use`, `pub(in path) use`.
        let public = tokens[at - 1] == "pub"
            || (tokens[at - 1] == ")"
                && tokens[..at]
                    .iter()
                    .rposition(|t| t == "(")
                    .is_some_and(|open| open > 0 && tokens[open - 1] == "pub"));
        if public {
            out.extend(read_tree_at(tokens, at + 1, &[]).0);
        }
    }
    out
}

/// The import graph of a tree, resolved to modules.
struct Graph {
    imports: BTreeMap<Module, BTreeSet<Module>>,
}

/// The absolute segments of `path` written in `module` (`self` is the module,
/// `super` the one above it), or `None` for a path that names no module of the
/// crate (another crate's, in a `use`).
fn absolute(tree: &Tree, module: &[String], path: &WrittenPath) -> Option<Vec<String>> {
    let mut segments = path.segments.iter().peekable();
    let mut base: Module = match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            Vec::new()
        }
        Some("self") => {
            segments.next();
            module.to_vec()
        }
        Some("super") => module.to_vec(),
        Some(first) => {
            // A `use` of a child module (composition) or of another crate.
            let mut child = module.to_vec();
            child.push(first.to_string());
            if !tree.contains_key(&child) {
                return None;
            }
            module.to_vec()
        }
        None => return None,
    };
    while segments.peek().is_some_and(|s| *s == "super") {
        segments.next();
        base.pop();
    }
    base.extend(segments.cloned());
    Some(base)
}

impl Graph {
    fn new(tree: &Tree) -> Graph {
        // Re-exports: module → name → absolute path of what it names.
        let mut reexports: BTreeMap<Module, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (module, source) in tree {
            for path in reexported_paths(&tokens(&source.text)) {
                let Some(target) = absolute(tree, module, &path) else {
                    continue;
                };
                let Some(name) = path.alias.clone().or_else(|| target.last().cloned()) else {
                    continue;
                };
                reexports
                    .entry(module.clone())
                    .or_default()
                    .insert(name, target);
            }
        }
        let mut imports = BTreeMap::new();
        for (module, source) in tree {
            let mut targets = BTreeSet::new();
            for path in rooted_paths(&tokens(&source.text)) {
                if let Some(full) = absolute(tree, module, &path) {
                    targets.insert(resolve(tree, &reexports, &full, 8));
                }
            }
            targets.remove(module);
            targets.remove(&Vec::new()); // the crate root: items defined in lib.rs
            imports.insert(module.clone(), targets);
        }
        Graph { imports }
    }

    /// Strongly connected groups of more than one module: files importing
    /// each other in a loop (Tarjan's algorithm).
    fn loops(&self) -> Vec<Vec<Module>> {
        struct Walk<'a> {
            graph: &'a BTreeMap<Module, BTreeSet<Module>>,
            index: BTreeMap<&'a Module, usize>,
            low: BTreeMap<&'a Module, usize>,
            stack: Vec<&'a Module>,
            on_stack: BTreeSet<&'a Module>,
            found: Vec<Vec<Module>>,
        }
        impl<'a> Walk<'a> {
            fn visit(&mut self, node: &'a Module) {
                let n = self.index.len();
                self.index.insert(node, n);
                self.low.insert(node, n);
                self.stack.push(node);
                self.on_stack.insert(node);
                let graph = self.graph;
                for next in graph.get(node).into_iter().flatten() {
                    let Some((next, _)) = graph.get_key_value(next) else {
                        continue;
                    };
                    if !self.index.contains_key(next) {
                        self.visit(next);
                        let low = self.low[node].min(self.low[next]);
                        self.low.insert(node, low);
                    } else if self.on_stack.contains(next) {
                        let low = self.low[node].min(self.index[next]);
                        self.low.insert(node, low);
                    }
                }
                if self.low[node] == self.index[node] {
                    let mut group = Vec::new();
                    while let Some(member) = self.stack.pop() {
                        self.on_stack.remove(member);
                        group.push(member.clone());
                        if member == node {
                            break;
                        }
                    }
                    if group.len() > 1 {
                        group.sort();
                        self.found.push(group);
                    }
                }
            }
        }
        let mut walk = Walk {
            graph: &self.imports,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for node in self.imports.keys() {
            if !walk.index.contains_key(node) {
                walk.visit(node);
            }
        }
        walk.found
    }
}

/// The module `full` names: the longest module prefix, then through the
/// re-export of the next segment, if that module re-exports it.
fn resolve(
    tree: &Tree,
    reexports: &BTreeMap<Module, BTreeMap<String, Vec<String>>>,
    full: &[String],
    hops: u32,
) -> Module {
    let k = (0..=full.len())
        .rev()
        .find(|&k| tree.contains_key(&full[..k]))
        .unwrap_or(0);
    let module = full[..k].to_vec();
    if hops > 0
        && let Some(segment) = full.get(k)
        && let Some(target) = reexports.get(&module).and_then(|r| r.get(segment))
    {
        let mut next = target.clone();
        next.extend(full[k + 1..].iter().cloned());
        if next != full {
            return resolve(tree, reexports, &next, hops - 1);
        }
    }
    module
}

fn top_layer(module: &[String]) -> Option<u32> {
    let top = module.first()?;
    LAYERS.iter().find(|(n, _)| n == top).map(|&(_, l)| l)
}

/// The backend layer of a module inside `jit/`: the layer of its longest
/// listed prefix.
fn jit_layer(module: &[String]) -> Option<u32> {
    JIT_LAYERS
        .iter()
        .flat_map(|&(layer, _, names)| names.iter().map(move |n| (layer, key(n))))
        .filter(|(_, prefix)| module.starts_with(prefix))
        .max_by_key(|(_, prefix)| prefix.len())
        .map(|(layer, _)| layer)
}

fn jit_layer_name(layer: u32) -> &'static str {
    JIT_LAYERS
        .iter()
        .find(|(l, _, _)| *l == layer)
        .map_or("?", |(_, job, _)| job.split(':').next().unwrap_or("?"))
}

/// Every import that goes up a layer (or leaves the tables).
fn upward_imports(graph: &Graph) -> Vec<String> {
    let mut problems = Vec::new();
    for (module, targets) in &graph.imports {
        if module.is_empty() {
            continue; // lib.rs declares and re-exports everything
        }
        let Some(own) = top_layer(module) else {
            problems.push(format!("{}: not in the layer table", name(module)));
            continue;
        };
        for target in targets {
            if target.first() != module.first() {
                match top_layer(target) {
                    Some(l) if l < own => {}
                    other => problems.push(format!(
                        "{} (layer {own}) imports {} (layer {other:?})",
                        name(module),
                        name(target),
                    )),
                }
                continue;
            }
            if module[0] != "jit" || module.starts_with(target) {
                continue; // inside one top-level module; a module's own ancestors
            }
            match (jit_layer(module), jit_layer(target)) {
                (Some(from), Some(to)) if to <= from => {}
                (Some(from), Some(to)) => problems.push(format!(
                    "{} ({} layer) imports {} ({} layer): upward inside jit/ \
                     (a module not in JIT_LAYERS takes its folder's layer)",
                    name(module),
                    jit_layer_name(from),
                    name(target),
                    jit_layer_name(to),
                )),
                (from, to) => problems.push(format!(
                    "{} imports {}: not in the jit layer table ({:?} → {:?})",
                    name(module),
                    name(target),
                    from,
                    to
                )),
            }
        }
    }
    problems
}

fn describe_loops(loops: &[Vec<Module>]) -> String {
    loops
        .iter()
        .map(|group| {
            let names: Vec<String> = group.iter().map(|m| name(m)).collect();
            format!("  {} ", names.join(" ⇄ "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_module_imports_only_lower_layers() {
    let tree = read_tree();
    let problems = upward_imports(&Graph::new(&tree));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every module of jit/ has a backend layer.
    let unlayered: Vec<String> = tree
        .keys()
        .filter(|m| m.first().is_some_and(|t| t == "jit") && jit_layer(m).is_none())
        .map(|m| name(m))
        .collect();
    assert!(unlayered.is_empty(), "not in JIT_LAYERS: {unlayered:?}");
}

#[test]
fn no_files_import_each_other_in_a_loop() {
    let tree = read_tree();
    assert!(tree.len() > 40, "the source walk found too few modules");
    let loops = Graph::new(&tree).loops();
    assert_eq!(
        loops.len(),
        0,
        "files import each other in a loop:\n{}",
        describe_loops(&loops)
    );
}

/// The tables name only modules that exist (or are planned): a deleted
/// module's line goes with it.
#[test]
fn the_tables_name_existing_modules() {
    let tree = read_tree();
    let exists = |n: &str| {
        let prefix = key(n);
        tree.keys().any(|m| m.starts_with(&prefix))
    };
    let stale: Vec<&str> = LAYERS
        .iter()
        .map(|&(n, _)| n)
        .chain(
            JIT_LAYERS
                .iter()
                .flat_map(|(_, _, names)| names.iter().copied()),
        )
        .filter(|n| !exists(n) && !PLANNED.contains(n))
        .collect();
    assert!(
        stale.is_empty(),
        "the layer tables name missing modules: {stale:?}"
    );
    for planned in PLANNED {
        assert!(
            jit_layer(&key(planned)).is_some(),
            "{planned} is planned but has no layer"
        );
    }
}

/// The reader sees braced imports, expression paths, `super::super`, crate-root
/// re-exports and aliases, and nothing in comments, strings or test items.
#[test]
fn the_reader_sees_every_kind_of_path() {
    let paths = |text: &str| -> Vec<String> {
        let text = strip_test_items(&strip_comments_and_strings(text));
        rooted_paths(&tokens(&text))
            .into_iter()
            .map(|p| p.segments.join("::"))
            .collect()
    };
    assert_eq!(
        paths("use crate::{a::b, c::{self, d, e as f}, g::*};"),
        [
            "crate::a::b",
            "crate::c",
            "crate::c::d",
            "crate::c::e",
            "crate::g"
        ]
    );
    assert_eq!(
        paths("fn f() { let x = crate::jit::compile(p)?; super::super::evex::V::A }"),
        ["crate::jit::compile", "super::super::evex::V::A"]
    );
    assert_eq!(
        paths("pub(in crate::jit) fn f() { self::mem(x); self.y }"),
        ["self::mem"]
    );
    assert_eq!(
        paths(
            "// crate::a\n/* crate::b /* nested */ crate::c */ \"crate::d {\" '{' \
             r#\"crate::e\"# fn g<'a>(x: &'a u8) { crate::f::g() }\n\
             #[cfg(test)]\nmod tests;\nuse crate::h;\n\
             #[cfg(all(test, target_arch = \"x86_64\"))]\nmod t { use crate::i; }\n\
             #[cfg(not(test))]\nuse crate::j;\n\
             #[cfg(any(test, feature = \"x\"))]\nuse crate::k;"
        ),
        ["crate::f::g", "crate::h", "crate::j", "crate::k"]
    );
    let reexports: Vec<(String, Option<String>)> = reexported_paths(&tokens(
        "pub use a::{B, c::D as E}; pub(crate) use self::f::G; use h::I;",
    ))
    .into_iter()
    .map(|p| (p.segments.join("::"), p.alias))
    .collect();
    assert_eq!(
        reexports,
        [
            ("a::B".to_string(), None),
            ("a::c::D".to_string(), Some("E".to_string())),
            ("self::f::G".to_string(), None),
        ]
    );
}

/// The checker finds what it must: in the real tree, the imports it is known
/// to have; in a tree with an injected upward import inside `jit/` and an
/// injected braced-import loop, both.
#[test]
fn the_checker_complains_about_injected_faults() {
    let tree = read_tree();
    let graph = Graph::new(&tree);
    let imports = |m: &str| &graph.imports[&key(m)];
    let machine = key("machine");
    assert!(
        imports("interp").iter().any(|m| m.starts_with(&machine)),
        "{:?}",
        imports("interp")
    );
    // A crate-root path through a re-export: `crate::Vec4` is `arith::Vec4`.
    assert!(imports("jit::wide::transpose").contains(&key("arith")));
    // A braced import of a parent's children.
    assert!(imports("ir::recipes").contains(&key("ir::builder")));

    // Inject into the real tree: an emitter importing the runtime, a lowering
    // importing a driver, and two ir modules importing each other in braces.
    let mut tree = read_tree();
    let emitter = tree
        .keys()
        .find(|m| m.first().is_some_and(|t| t == "jit") && jit_layer(m) == Some(2))
        .expect("an emitter module")
        .clone();
    tree.get_mut(&emitter)
        .unwrap()
        .text
        .push_str("\nfn injected() { crate::jit::wide::batch::run_states(); }\n");
    tree.get_mut(&key("jit::spill"))
        .expect("jit::spill")
        .text
        .push_str("\nuse crate::{isa::Instruction, jit::{frame, x64::Emitter}};\n");
    insert(
        &mut tree,
        "ir/injected_a.rs",
        "use crate::{isa, ir::{Ty, injected_b::{B, C}}};",
    );
    insert(&mut tree, "ir/injected_b.rs", "use super::injected_a::A;");
    let graph = Graph::new(&tree);
    let problems = upward_imports(&graph);
    let complains = |from: &[String], to: &str| {
        problems.iter().any(|p| {
            p.starts_with(&format!("{} (", name(from))) && p.contains(&format!("imports {to} ("))
        })
    };
    assert!(
        complains(&emitter, "jit::wide::batch"),
        "no complaint about {} importing the runtime: {problems:#?}",
        name(&emitter)
    );
    assert!(
        complains(&key("jit::spill"), "jit::x64"),
        "no complaint about jit::spill importing a driver: {problems:#?}"
    );
    let loops = graph.loops();
    assert!(
        loops.contains(&vec![key("ir::injected_a"), key("ir::injected_b")]),
        "the injected loop went unseen: {loops:?}"
    );
    // An injected top-level upward import through the crate root's re-export.
    let mut tree = read_tree();
    tree.get_mut(&key("isa"))
        .unwrap()
        .text
        .push_str("\nfn injected(_: &crate::Shader) {}\n");
    let problems = upward_imports(&Graph::new(&tree));
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("isa (layer 0) imports engine")),
        "{problems:#?}"
    );
}

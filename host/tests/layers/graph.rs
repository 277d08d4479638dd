//! The file-level import graph of the host crate: an edge from a file to
//! the file that defines each item of ours it names (a `pub use`
//! re-export followed to where the item lives, so a folder's `mod.rs`
//! that re-exports is not mistaken for the item's home), and its
//! strongly connected components (Tarjan), the circles of the crate.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::paths::{self, Names};

/// The crate's files and what each names.
pub struct Crate {
    /// Module path → file (below `src/`).
    pub files: BTreeMap<Vec<String>, String>,
    pub names: BTreeMap<String, Names>,
}

impl Crate {
    /// Reads `sources` (file below `root` → text); the binary's root
    /// (`main.rs`, another crate) is left out.
    pub fn read(sources: &BTreeMap<String, String>) -> Crate {
        let files: BTreeMap<Vec<String>, String> = sources
            .keys()
            .filter(|f| *f != "main.rs")
            .map(|f| (paths::module_of(f), f.clone()))
            .collect();
        let modules: HashSet<Vec<String>> = files.keys().cloned().collect();
        let names = files
            .iter()
            .map(|(module, file)| (file.clone(), paths::names(&sources[file], module, &modules)))
            .collect();
        Crate { files, names }
    }

    /// The file that defines what `path` (from the crate root) names:
    /// the deepest module file on the path, past any re-export.
    pub fn file_of(&self, path: &[String]) -> &str {
        let mut path = path.to_vec();
        // Re-exports may chain; a loop of them ends somewhere.
        for _ in 0..8 {
            let depth = (0..=path.len())
                .rev()
                .find(|&n| self.files.contains_key(&path[..n]))
                .unwrap_or(0);
            let file = &self.files[&path[..depth]];
            let exported = path
                .get(depth)
                .and_then(|name| self.names.get(file)?.exports.get(name));
            match exported {
                Some(target) if *target != path[..=depth] => {
                    let mut next = target.clone();
                    next.extend_from_slice(&path[depth + 1..]);
                    path = next;
                }
                _ => return file,
            }
        }
        &self.files[&Vec::new()]
    }

    /// Each file's edges: the other files it names something of.
    pub fn edges(&self) -> BTreeMap<&str, BTreeSet<&str>> {
        self.names
            .iter()
            .map(|(file, names)| {
                let to = names
                    .ours
                    .iter()
                    .map(|n| self.file_of(&n.path))
                    .filter(|to| to != file)
                    .collect();
                (file.as_str(), to)
            })
            .collect()
    }
}

/// The strongly connected components of `edges` with more than one file
/// (the circles), each sorted, largest first.
pub fn circles<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Tarjan<'a, 'e> {
        edges: &'e BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: HashMap<&'a str, usize>,
        low: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: HashSet<&'a str>,
        found: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'a, '_> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for &w in self.edges.get(v).into_iter().flatten() {
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
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort_unstable();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        edges,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: HashSet::new(),
        found: Vec::new(),
    };
    for &v in edges.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.visit(v);
        }
    }
    let mut found = tarjan.found;
    found.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    found
}

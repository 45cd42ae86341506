//! The crate's shape, checked from its source: no module imports one that imports it
//! back, and the architecture map names every column family and worker
//! (docs/internals/architecture.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::visit::Visit;

/// Every file module of the library (`a::b` for `src/a/b.rs` or `src/a/b/mod.rs`), with
/// its path; the binaries' own modules are left out.
fn file_modules(src: &Path) -> BTreeMap<String, std::path::PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p != src.join("bin") {
                    dirs.push(p);
                }
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") || p == src.join("main.rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|x| x.to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            out.insert(parts.join("::"), p);
        }
    }
    out
}

/// The `crate::`, `super::` and `self::` paths a file names (in `use` and in code), each
/// resolved to the module it starts from; test modules left out.
struct Names<'a> {
    module: Vec<String>,
    modules: &'a BTreeMap<String, std::path::PathBuf>,
    found: BTreeSet<String>,
}

impl Names<'_> {
    fn add(&mut self, segments: &[String]) {
        let mut path = match segments.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("super" | "self") => self.module.clone(),
            _ => return,
        };
        let mut rest = &segments[usize::from(segments[0] == "crate")..];
        while let Some(first) = rest.first() {
            match first.as_str() {
                "super" => drop(path.pop()),
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        path.extend(rest.iter().cloned());
        if let Some(m) = (1..=path.len()).rev().map(|n| path[..n].join("::")).find(|m| self.modules.contains_key(m)) {
            self.found.insert(m);
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.add(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.add(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.add(&prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.add(&segments);
        syn::visit::visit_path(self, p);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let test =
            m.attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"));
        if test || m.content.is_none() {
            return;
        }
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }
}

/// Whether `inner` is `outer` or inside it (a module may use its parent and declare its
/// children: those are not circles).
fn within(inner: &str, outer: &str) -> bool {
    outer.is_empty() || inner == outer || inner.starts_with(&format!("{outer}::"))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = file_modules(&src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, path) in &modules {
        let file = syn::parse_file(&std::fs::read_to_string(path).unwrap()).unwrap();
        let module = if m.is_empty() { Vec::new() } else { m.split("::").map(str::to_string).collect() };
        let mut names = Names { module, modules: &modules, found: BTreeSet::new() };
        names.visit_file(&file);
        let to = names.found.into_iter().filter(|t| !within(m, t) && !within(t, m)).collect();
        edges.insert(m.clone(), to);
    }
    assert!(edges.len() > 100 && edges["api::orders"].contains("app::orders"), "the source was read: {edges:?}");
    // A module on a circle reaches itself: report the first circle found.
    for start in edges.keys() {
        let mut trail: Vec<&String> = vec![start];
        let mut seen = BTreeSet::new();
        if let Some(circle) = reach(&edges, start, &mut trail, &mut seen) {
            panic!("import circle: {circle}");
        }
    }
}

fn reach<'a>(
    edges: &'a BTreeMap<String, BTreeSet<String>>,
    start: &str,
    trail: &mut Vec<&'a String>,
    seen: &mut BTreeSet<&'a String>,
) -> Option<String> {
    let here = *trail.last().unwrap();
    for next in &edges[here] {
        if next == start {
            let names: Vec<&str> = trail.iter().map(|s| s.as_str()).chain([start]).collect();
            return Some(names.join(" → "));
        }
        if seen.insert(next) {
            trail.push(next);
            if let Some(c) = reach(edges, start, trail, seen) {
                return Some(c);
            }
            trail.pop();
        }
    }
    None
}

/// The names in the first cell of each row of the first table after `heading` in `doc`
/// (each name in backticks; a cell may name several).
fn table_names(doc: &str, heading: &str) -> BTreeSet<String> {
    let start = doc.find(heading).unwrap_or_else(|| panic!("{heading} in the architecture"));
    let rows = doc[start..].lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
    let mut names = BTreeSet::new();
    for row in rows.skip(2) {
        let cell = row.split('|').nth(1).unwrap_or_default();
        names.extend(cell.split('`').skip(1).step_by(2).map(str::to_string));
    }
    names
}

/// The string constants of `mod cf` in the schema: every column family's name.
fn column_families(schema: &syn::File) -> BTreeSet<String> {
    let cf = schema.items.iter().find_map(|i| match i {
        syn::Item::Mod(m) if m.ident == "cf" => m.content.as_ref().map(|(_, items)| items),
        _ => None,
    });
    let mut names = BTreeSet::new();
    for item in cf.expect("mod cf in store/schema.rs") {
        if let syn::Item::Const(c) = item {
            if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &*c.expr {
                names.insert(s.value());
            }
        }
    }
    names
}

/// The names of the workers: each `impl Worker for …` outside tests, by what its `name`
/// returns.
fn workers(file: &syn::File) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for item in &file.items {
        let syn::Item::Impl(i) = item else { continue };
        let is_worker =
            i.trait_.as_ref().is_some_and(|(_, p, _)| p.segments.last().is_some_and(|s| s.ident == "Worker"));
        if !is_worker {
            continue;
        }
        for f in &i.items {
            let syn::ImplItem::Fn(f) = f else { continue };
            if f.sig.ident != "name" {
                continue;
            }
            if let Some(syn::Stmt::Expr(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }), None)) =
                f.block.stmts.last()
            {
                names.insert(s.value());
            }
        }
    }
    names
}

/// The architecture's map names every column family and every worker the code has, and
/// nothing else, as the OpenAPI test holds the documents to the routes.
#[test]
fn the_architecture_names_every_column_family_and_worker() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let parse = |p: &str| syn::parse_file(&std::fs::read_to_string(root.join(p)).unwrap()).unwrap();
    let doc = std::fs::read_to_string(root.join("docs/internals/architecture.md")).unwrap();
    let families = column_families(&parse("src/store/schema.rs"));
    assert!(families.len() > 30 && families.contains("live_orders"), "{families:?}");
    assert_eq!(
        table_names(&doc, "### Column families"),
        families,
        "the column families of docs/internals/architecture.md"
    );
    let workers = workers(&parse("src/app/workers.rs"));
    assert!(workers.len() >= 7 && workers.contains("settlement"), "{workers:?}");
    assert_eq!(table_names(&doc, "## Background workers"), workers, "the workers of docs/internals/architecture.md");
}

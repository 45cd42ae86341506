//! The OpenAPI documents (docs/reference/openapi/): each public server serves its own at
//! `GET /openapi.json`, outside the rate limit; every operation a document names is
//! answered by a route; and every route the server answers — probed with every path the
//! project's tests, docs and the official clients' endpoint tables name — is in it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

const METHODS: [&str; 5] = ["GET", "POST", "DELETE", "PUT", "PATCH"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// (status, body) of a request with an empty JSON object as the body of non-GETs.
fn call(base: &str, method: &str, path: &str) -> (u16, String) {
    let r = ureq::request(method, &format!("{base}{path}"));
    let r = if method == "GET" { r.call() } else { r.set("content-type", "application/json").send_string("{}") };
    match r {
        Ok(r) => (r.status(), r.into_string().unwrap()),
        Err(ureq::Error::Status(st, r)) => (st, r.into_string().unwrap()),
        Err(e) => panic!("transport: {e}"),
    }
}

/// Whether a route answered: the router's own refusals are 404 `not found` and 405.
fn answered((status, body): &(u16, String)) -> bool {
    !(*status == 405 || (*status == 404 && body == r#"{"error":"not found"}"#))
}

/// A document's operations as (method, path template).
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            ops.insert((method.to_uppercase(), path.clone()));
        }
    }
    ops
}

/// Whether `path` is an instance of `template` (`{name}` matches one segment).
fn instance(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len() && t.iter().zip(&p).all(|(t, p)| t == p || (t.starts_with('{') && !p.is_empty()))
}

/// Every absolute path written in a file: after a quote, backtick, parenthesis or space,
/// up to the first character no path has; `{…}` and `${…}` become one segment `x`, and a
/// query is dropped.
fn paths_in(text: &str, into: &mut BTreeSet<String>) {
    let b = text.as_bytes();
    for i in 1..b.len() {
        if b[i] != b'/' || !matches!(b[i - 1], b'"' | b'`' | b'(' | b' ' | b'\'') {
            continue;
        }
        let end =
            (i..b.len()).find(|&j| !(b[j].is_ascii_alphanumeric() || b"_-{}/.:$".contains(&b[j]))).unwrap_or(b.len());
        let mut p = String::new();
        let mut depth = 0;
        for c in text[i..end].chars() {
            match c {
                '{' => {
                    if depth == 0 {
                        p.push('x');
                    }
                    depth += 1;
                }
                '}' => depth -= 1,
                '$' => {}
                c if depth == 0 => p.push(c),
                _ => {}
            }
        }
        let p = p.trim_end_matches(['/', '.', ':']);
        // Not a route: a file path (`/tmp/x.json`) or a URL's `//`.
        if p.is_empty() || p.starts_with("//") || p.contains('.') {
            continue;
        }
        into.insert(p.to_string());
    }
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && p.file_name().is_some_and(|n| n != "node_modules") {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// The candidate paths: what the tests, the sources, the docs and the official clients'
/// endpoint tables name.
fn corpus() -> BTreeSet<String> {
    let r = root();
    let mut found = Vec::new();
    for (dir, ext) in [("tests", "rs"), ("tests", "py"), ("tests", "mjs"), ("src", "rs"), ("docs", "md")] {
        files(&r.join(dir), ext, &mut found);
    }
    found.push(r.join("README.md"));
    for client in ["clob-client", "clob-client-v2"] {
        found.push(r.join(format!("tests/clients/node/node_modules/@polymarket/{client}/dist/endpoints.js")));
    }
    for client in ["py_clob_client", "py_clob_client_v2"] {
        let py = std::fs::read_dir(r.join("tools/py/lib"))
            .expect("run scripts/setup.sh")
            .flatten()
            .map(|e| e.path().join(format!("site-packages/{client}/endpoints.py")))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{client} installed (scripts/setup.sh)"));
        found.push(py);
    }
    let mut paths = BTreeSet::from(["/".to_string()]);
    for f in found {
        paths_in(&std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())), &mut paths);
    }
    paths
}

/// Every operation of `doc` is answered by a route of `base`, and every route of `base`
/// that answers a path of `corpus` is an operation of `doc`.
fn document_matches_routes(name: &str, base: &str, doc: &Value, corpus: &BTreeSet<String>) {
    let ops = operations(doc);
    for (method, template) in &ops {
        let path: Vec<&str> = template
            .split('/')
            .map(|seg| match seg {
                "{cluster_id}" => "1",
                s if s.starts_with('{') => "x",
                s => s,
            })
            .collect();
        assert!(
            answered(&call(base, method, &path.join("/"))),
            "{name}: {method} {template} is documented but not served"
        );
    }
    for path in corpus {
        for method in METHODS {
            if answered(&call(base, method, path)) {
                assert!(
                    ops.iter().any(|(m, t)| m == method && instance(t, path)),
                    "{name}: {method} {path} is served but not documented"
                );
            }
        }
    }
}

fn committed(name: &str) -> Value {
    let text = std::fs::read_to_string(root().join(format!("docs/reference/openapi/{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn each_server_serves_its_document_and_answers_exactly_its_paths() {
    // The committed documents are what their source writes.
    let out = std::process::Command::new("python3")
        .arg(root().join("docs/reference/openapi/build.py"))
        .arg("--check")
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // Each server serves its own document, the order book's even past its rate limit.
    let limited = Server::start_tuned(|c| {
        c.rate_limit_max = 2;
        c.rate_limit_window_secs = 60;
    });
    let servers = |s: &Server| {
        [
            ("clob", s.clob.clone()),
            ("catalogue", s.catalogue.clone()),
            ("analytics", s.analytics.clone()),
            ("bridge", s.bridge.clone()),
        ]
    };
    for (name, base) in servers(&limited) {
        for _ in 0..3 {
            let (st, served) = call(&base, "GET", "/openapi.json");
            assert_eq!(st, 200, "{name}");
            assert_eq!(serde_json::from_str::<Value>(&served).unwrap(), committed(name), "{name} serves its document");
        }
        assert_eq!(committed(name)["openapi"], "3.1.0");
    }
    let times: Vec<u16> = (0..3).map(|_| call(&limited.clob, "GET", "/time").0).collect();
    assert_eq!(times, [200, 200, 429], "the limit applies to the rest");
    drop(limited);

    let corpus = corpus();
    assert!(corpus.len() > 150, "{} candidate paths", corpus.len());
    let s = Server::start();
    for (name, base) in servers(&s) {
        document_matches_routes(name, &base, &committed(name), &corpus);
    }
}

#[test]
fn paths_are_read_from_text_and_matched_to_templates() {
    let mut p = BTreeSet::new();
    paths_in(
        r#"get("/rfq/data/best-quote?requestId={rfq}") `/markets/${id}/x` "/tmp/a.json" "https://h/p" '/ok'"#,
        &mut p,
    );
    let want: BTreeSet<String> =
        ["/rfq/data/best-quote", "/markets/x/x", "/ok"].iter().map(|s| s.to_string()).collect();
    assert_eq!(p, want);
    assert!(instance("/markets/{id}", "/markets/0xc0ffee"));
    assert!(!instance("/markets/{id}", "/markets"));
    assert!(!instance("/markets/{id}", "/markets/a/b"));
}

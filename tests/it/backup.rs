//! Online backup and restore (docs/operating/backups.md): `predex admin backup --to DIR` while
//! trading goes on, `predex restore --from DIR --data-dir D`, and a server started on D
//! holds every order and trade acknowledged before the backup and the books the backup
//! reported.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::support::*;

fn predex(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_predex")).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// A book's levels as (price, size) in micro-units, whatever their decimal spelling and
/// order.
fn levels(v: &Value) -> Vec<(u64, u64)> {
    let mut l: Vec<(u64, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let n = |k: &str| predex::domain::parse_decimal(l[k].as_str().unwrap(), 6).unwrap();
            (n("price"), n("size"))
        })
        .collect();
    l.sort();
    l
}

#[test]
fn a_backup_taken_under_load_restores_everything_acknowledged_before_it() {
    let work = tempfile::tempdir().unwrap();
    let s = Server::start_tuned(|c| c.backup_dir = Some(work.path().to_path_buf()));
    let maker = s.trader(m("100000"));
    let taker = s.trader(m("100000"));
    s.credit(&maker.address, YES, m("100000"));
    let v = Venue {
        internal: s.internal.trim_start_matches("http://").to_string(),
        data_dir: s.config.data_dir.to_str().unwrap().to_string(),
        to: work.path().join("backup"),
        work: work.path().to_path_buf(),
    };
    let (acked, reported) = a_backup_is_taken_while_trading_goes_on(&s, &v, [&maker, &taker]);
    a_backup_goes_only_to_a_new_directory_under_the_backup_directory(&s, &v);
    let data = a_restore_fills_only_an_empty_directory_from_a_backup(&v);
    drop(s);
    let r = Server::start_with(test_config(&data));
    the_restored_venue_holds_what_was_acknowledged_and_the_books_reported(&r, [&maker, &taker], &acked, &reported);
}

/// Where the venue and its backup are.
struct Venue {
    /// The internal server's address and the data directory, as `predex admin` takes them.
    internal: String,
    data_dir: String,
    /// The backup directory the venue allows, and the backup's directory in it.
    work: std::path::PathBuf,
    to: std::path::PathBuf,
}

/// `predex admin backup` into the venue's backup directory.
fn admin_backup(v: &Venue) -> (bool, String) {
    let to = v.to.to_str().unwrap();
    predex(&["admin", "--internal", &v.internal, "--data-dir", &v.data_dir, "backup", "--to", to])
}

/// What was acknowledged before a backup: orders as (trader, order id), and trades.
struct Acked {
    orders: Vec<(usize, String)>,
    trades: Vec<String>,
}

/// `predex admin backup` while a maker and a taker trade; what was acknowledged before it
/// and the books the backup reported.
fn a_backup_is_taken_while_trading_goes_on(s: &Server, v: &Venue, [maker, taker]: [&Trader; 2]) -> (Acked, Value) {
    // (owner: 0 maker / 1 taker, order id) and trade ids, in the order they were acknowledged.
    let orders = Mutex::new(Vec::<(usize, String)>::new());
    let trades = Mutex::new(Vec::<String>::new());
    let stop = AtomicBool::new(false);
    let (acked_orders, acked_trades, backup) = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // A resting bid that moves the book, an ask, and a buy that takes it.
                let bid = format!("0.{}", 30 + i % 20);
                let o = maker.place(s, YES, "BUY", &bid, "5");
                orders.lock().unwrap().push((0, o["orderID"].as_str().unwrap().to_string()));
                let o = maker.place(s, YES, "SELL", "0.70", "5");
                orders.lock().unwrap().push((0, o["orderID"].as_str().unwrap().to_string()));
                let o = taker.place(s, YES, "BUY", "0.70", "5");
                orders.lock().unwrap().push((1, o["orderID"].as_str().unwrap().to_string()));
                let ids: Vec<String> =
                    o["tradeIds"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
                assert!(!ids.is_empty(), "the buy trades: {o}");
                trades.lock().unwrap().extend(ids);
                i += 1;
            }
        });
        std::thread::sleep(Duration::from_millis(500));
        // Everything acknowledged so far must be in the backup.
        let (o, t) = (orders.lock().unwrap().clone(), trades.lock().unwrap().clone());
        let (ok, out) = admin_backup(v);
        assert!(ok, "{out}");
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        (o, t, serde_json::from_str::<Value>(&out).unwrap())
    });
    assert!(acked_orders.len() >= 6 && !acked_trades.is_empty(), "load ran before the backup");
    eprintln!(
        "backup: {} orders and {} trades acknowledged before it, {} orders in all; writes held {} ms",
        acked_orders.len(),
        acked_trades.len(),
        orders.lock().unwrap().len(),
        backup["heldMs"]
    );
    assert!(orders.lock().unwrap().len() > acked_orders.len(), "and went on during and after it");
    let reported = backup["books"].as_array().unwrap().iter().find(|b| b["market"] == COND).unwrap().clone();
    (Acked { orders: acked_orders, trades: acked_trades }, reported)
}

/// Refused: the directory exists now; a relative path; a backup into nowhere; a directory
/// elsewhere, or out of the backup directory by `..` or by a link.
fn a_backup_goes_only_to_a_new_directory_under_the_backup_directory(s: &Server, v: &Venue) {
    let (ok, out) = admin_backup(v);
    assert!(!ok && out.contains("already exists"), "{out}");
    let (st, b) = s.internal_post("/internal/backup", &serde_json::json!({"to": "relative/dir"}));
    assert_eq!((st, b["error"].as_str()), (400, Some("to must be an absolute path")));
    let (st, _) = s.internal_post("/internal/backup", &serde_json::json!({"to": "/nonexistent/x/y"}));
    assert_eq!(st, 400);
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = format!("to must be a new directory under the backup directory {}", v.work.display());
    let link = v.work.join("link");
    std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();
    for to in [
        elsewhere.path().join("copy"),
        v.work.join("..").join(elsewhere.path().file_name().unwrap()).join("copy"),
        link.join("copy"),
    ] {
        let (st, b) = s.internal_post("/internal/backup", &serde_json::json!({ "to": to }));
        assert_eq!((st, b["error"].as_str()), (400, Some(outside.as_str())), "{}", to.display());
    }
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0, "nothing written outside");
}

/// Restore into a fresh directory, refusing a non-empty one and a directory that holds no
/// backup. Returns the restored data directory.
fn a_restore_fills_only_an_empty_directory_from_a_backup(v: &Venue) -> std::path::PathBuf {
    let data = v.work.join("restored");
    let (ok, out) = predex(&["restore", "--from", v.to.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    assert!(ok, "{out}");
    let (ok, out) = predex(&["restore", "--from", v.to.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]);
    assert!(!ok && out.contains("is not empty"), "{out}");
    let (ok, out) = predex(&["restore", "--from", v.work.to_str().unwrap(), "--data-dir", "/tmp/predex-none"]);
    assert!(!ok && out.contains("holds no backup"), "{out}");
    data
}

fn the_restored_venue_holds_what_was_acknowledged_and_the_books_reported(
    r: &Server,
    who: [&Trader; 2],
    acked: &Acked,
    reported: &Value,
) {
    for (owner, id) in &acked.orders {
        let (st, o) = who[*owner].l2(r, "GET", &format!("/data/order/{id}"), None);
        assert_eq!(st, 200, "order {id} acknowledged before the backup: {o}");
    }
    for id in &acked.trades {
        let (st, t) = who[1].l2(r, "GET", &format!("/data/trades?id={id}"), None);
        assert_eq!((st, t["count"].as_u64()), (200, Some(1)), "trade {id} acknowledged before the backup: {t}");
    }
    let book = r.get(&format!("/book?token_id={YES}")).1;
    assert_eq!(levels(&book["bids"]), levels(&reported["bids"]), "bids as the backup reported them");
    assert_eq!(levels(&book["asks"]), levels(&reported["asks"]), "asks as the backup reported them");
    assert!(!levels(&book["bids"]).is_empty());
    r.check();
}

//! The analytics server ({data_url}) and price history: every figure checked against a
//! scripted trading session made through the order-book server.

use serde_json::{json, Value};

use crate::support::*;

fn ok(r: (u16, Value)) -> Value {
    assert_eq!(r.0, 200, "{}", r.1);
    r.1
}

fn col<'a>(v: &'a Value, field: &str) -> Vec<&'a Value> {
    v.as_array().unwrap().iter().map(|x| &x[field]).collect()
}

struct Session {
    s: Server,
    alice: Trader,
    bob: Trader,
    carol: Trader,
}

/// T1: alice buys 10 YES @0.40 from bob; T2: carol buys 5 @0.40 from bob; T3: carol buys 5
/// @0.55 from alice. Then a book of alice's bid 5 @0.50 and bob's ask 5 @0.70 (mark 0.60).
fn session() -> Session {
    let s = Server::start();
    let (st, b) = s.internal_post(
        "/internal/events",
        &json!({"title": "Will it happen", "slug": "e-slug", "markets": [{"condition_id": COND}]}),
    );
    assert_eq!(st, 200, "{b}");
    let alice = s.trader(m("100"));
    let bob = s.trader(0);
    let carol = s.trader(m("100"));
    s.credit(&bob.address, YES, m("50"));
    bob.place(&s, YES, "SELL", "0.40", "15");
    alice.place(&s, YES, "BUY", "0.40", "10");
    carol.place(&s, YES, "BUY", "0.40", "5");
    alice.place(&s, YES, "SELL", "0.55", "5");
    carol.place(&s, YES, "BUY", "0.55", "5");
    alice.place(&s, YES, "BUY", "0.50", "5");
    bob.place(&s, YES, "SELL", "0.70", "5");
    Session { s, alice, bob, carol }
}

#[test]
fn trades_follow_every_parameter_of_the_spec() {
    let Session { s, alice, bob, carol } = session();
    let all = ok(s.analytics_get(&format!("/trades?market={COND}")));
    assert_eq!(col(&all, "size"), vec!["5", "5", "10"], "takers, newest first: {all}");
    assert_eq!(col(&all, "proxyWallet"), vec![&json!(carol.address), &json!(carol.address), &json!(alice.address)]);
    let t = &all[0];
    assert_eq!((t["side"].clone(), t["price"].clone(), t["asset"].clone()), (json!("BUY"), json!("0.55"), json!(YES)));
    assert_eq!(
        (t["title"].clone(), t["slug"].clone(), t["eventSlug"].clone()),
        (json!("Will it?"), json!("will-it"), json!("e-slug"))
    );
    assert_eq!(
        (t["outcome"].clone(), t["outcomeIndex"].clone(), t["conditionId"].clone()),
        (json!("Yes"), json!(0), json!(COND))
    );
    assert!(t["timestamp"].as_u64().unwrap() > 1_700_000_000);
    // Defaults: all markets, takerOnly=true, limit 100.
    assert_eq!(ok(s.analytics_get("/trades")), all);
    let both = ok(s.analytics_get(&format!("/trades?market={COND}&takerOnly=false")));
    assert_eq!(col(&both, "side"), vec!["BUY", "SELL", "BUY", "SELL", "BUY", "SELL"]);
    assert_eq!(both[1]["proxyWallet"], alice.address.as_str());
    assert_eq!(ok(s.analytics_get(&format!("/trades?user={}", alice.address))).as_array().unwrap().len(), 1);
    let mine = ok(s.analytics_get(&format!("/trades?user={}&takerOnly=false", alice.address)));
    assert_eq!(col(&mine, "side"), vec!["SELL", "BUY"]);
    let sells = ok(s.analytics_get("/trades?takerOnly=false&side=SELL"));
    assert_eq!(col(&sells, "proxyWallet"), vec![&json!(alice.address), &json!(bob.address), &json!(bob.address)]);
    assert_eq!(col(&ok(s.analytics_get("/trades?filterType=CASH&filterAmount=2.5")), "size"), vec!["5", "10"]);
    assert_eq!(col(&ok(s.analytics_get("/trades?filterType=TOKENS&filterAmount=10")), "size"), vec!["10"]);
    assert_eq!(col(&ok(s.analytics_get("/trades?eventId=1")), "size"), vec!["5", "5", "10"]);
    assert_eq!(col(&ok(s.analytics_get("/trades?limit=1&offset=1")), "size"), vec!["5"]);
    assert_eq!(ok(s.analytics_get("/trades?limit=0")), json!([]));

    for (q, msg) in [
        ("filterType=CASH", "filterType and filterAmount must be used together"),
        ("filterAmount=3", "filterType and filterAmount must be used together"),
        ("filterType=USD&filterAmount=3", "filterType must be CASH or TOKENS"),
        ("market=0xc0ffee&eventId=1", "market and eventId are mutually exclusive"),
        ("limit=10001", "limit must be an integer between 0 and 10000"),
        ("offset=x", "offset must be an integer between 0 and 10000"),
        ("offset=10001", "offset must be an integer between 0 and 10000"),
        ("takerOnly=yes", "takerOnly must be true or false"),
        ("side=HOLD", "side must be BUY or SELL"),
        ("user=bob", "user must be a 0x address"),
        ("market=0xdead", "unknown market: 0xdead"),
    ] {
        assert_eq!(err(s.analytics_get(&format!("/trades?{q}"))), (400, msg.to_string()), "{q}");
    }
    assert_eq!(ok(s.analytics_get("/trades?limit=10000")).as_array().unwrap().len(), 3);
}

#[test]
fn positions_pnl_and_holders_agree_with_the_trades() {
    let Session { s, alice, bob, carol } = session();
    let mp = ok(s.analytics_get(&format!("/v1/market-positions?market={COND}")));
    assert_eq!(col(&mp, "proxyWallet"), vec![&json!(carol.address), &json!(alice.address)], "by size: {mp}");
    assert_eq!(col(&mp, "size"), vec!["10", "5"]);
    assert_eq!(col(&mp, "avgPrice"), vec!["0.475", "0.4"]);
    assert_eq!(col(&mp, "curPrice"), vec!["0.6", "0.6"]);
    // carol: 10 × (0.60 − 0.475); alice: 5 × (0.60 − 0.40).
    assert_eq!(col(&mp, "cashPnl"), vec!["1.25", "1"]);
    assert_eq!(
        (mp[0]["asset"].clone(), mp[0]["outcome"].clone(), mp[0]["outcomeIndex"].clone()),
        (json!(YES), json!("Yes"), json!(0))
    );
    assert!(mp[0].get("name").is_none() && mp[0].get("profileImage").is_none(), "null fields omitted");
    let asc = ok(s.analytics_get(&format!("/v1/market-positions?market={COND}&sortBy=AVGPRICE&sortDirection=ASC")));
    assert_eq!(col(&asc, "size"), vec!["5", "10"]);
    let one = ok(s.analytics_get(&format!("/v1/market-positions?market={COND}&user={}", alice.address)));
    assert_eq!(col(&one, "size"), vec!["5"]);
    let closed = ok(s.analytics_get(&format!("/v1/market-positions?market={COND}&status=closed")));
    assert_eq!(col(&closed, "proxyWallet"), vec![&json!(bob.address)]);
    assert_eq!(ok(s.analytics_get(&format!("/v1/market-positions?market={COND}&limit=1&offset=1")))[0]["size"], "5");
    for (q, status) in
        [("", 400), ("&limit=501", 400), ("&sortBy=PRICE", 400), ("&status=all", 400), ("&sortDirection=UP", 400)]
    {
        let path = if q.is_empty() {
            "/v1/market-positions".to_string()
        } else {
            format!("/v1/market-positions?market={COND}{q}")
        };
        assert_eq!(s.analytics_get(&path).0, status, "{path}");
    }

    let pos = ok(s.analytics_get(&format!("/positions?user={}", carol.address)));
    assert_eq!(pos.as_array().unwrap().len(), 1);
    let p = &pos[0];
    assert_eq!(
        (p["size"].clone(), p["avgPrice"].clone(), p["curPrice"].clone()),
        (json!(10), json!(0.475), json!(0.6))
    );
    assert_eq!((p["initialValue"].clone(), p["currentValue"].clone()), (json!(4.75), json!(6)));
    assert_eq!(
        (p["totalBought"].clone(), p["oppositeAsset"].clone(), p["eventSlug"].clone()),
        (json!(10), json!(NO), json!("e-slug"))
    );
    let a = &ok(s.analytics_get(&format!("/positions?user={}", alice.address)))[0];
    assert_eq!(
        (a["realizedPnl"].clone(), a["cashPnl"].clone(), a["percentPnl"].clone()),
        (json!(0.75), json!(1), json!(50))
    );
    assert_eq!(
        ok(s.analytics_get(&format!("/positions?user={}", bob.address))),
        json!([]),
        "bob sold what he was credited"
    );
    assert_eq!(s.analytics_get("/positions").0, 400);
    assert_eq!(
        ok(s.analytics_get(&format!("/value?user={}", alice.address))),
        json!([{"user": alice.address, "value": 3}])
    );

    let h = ok(s.analytics_get(&format!("/holders?market={COND}")));
    assert_eq!(h[0]["token"], YES);
    assert_eq!(col(&h[0]["holders"], "amount"), vec![&json!(10), &json!(5)]);
    assert_eq!(h[1]["holders"], json!([]));
    assert_eq!(
        col(&ok(s.analytics_get(&format!("/holders?market={COND}&limit=1")))[0]["holders"], "amount"),
        vec![&json!(10)]
    );

    let act = ok(s.analytics_get(&format!("/activity?user={}", alice.address)));
    assert_eq!(col(&act, "type"), vec!["TRADE", "TRADE"]);
    assert_eq!(col(&act, "usdcSize"), vec![&json!(2.75), &json!(4)]);
    assert_eq!(ok(s.analytics_get(&format!("/activity?user={}&type=REDEEM", alice.address))), json!([]));
    assert_eq!(s.analytics_get(&format!("/activity?user={}&type=GIFT", alice.address)).0, 400);

    let by_pnl = ok(s.analytics_get("/v1/leaderboard?timePeriod=ALL"));
    assert_eq!(col(&by_pnl, "proxyWallet"), vec![&json!(alice.address), &json!(carol.address), &json!(bob.address)]);
    // alice: 2.75 − 4 + 5 × 0.6; carol: −4.75 + 10 × 0.6; bob: 6 − 15 × 0.6.
    assert_eq!(col(&by_pnl, "pnl"), vec![&json!(1.75), &json!(1.25), &json!(-3)]);
    assert_eq!(col(&by_pnl, "rank"), vec!["1", "2", "3"]);
    let by_vol = ok(s.analytics_get("/v1/leaderboard?orderBy=VOL&timePeriod=WEEK"));
    assert_eq!(col(&by_vol, "vol"), vec![&json!(6.75), &json!(6), &json!(4.75)]);
    assert_eq!(s.analytics_get("/v1/leaderboard?timePeriod=YEAR").0, 400);

    // Settlement changes none of it.
    s.settle();
    assert_eq!(ok(s.analytics_get(&format!("/v1/market-positions?market={COND}"))), mp);
}

#[test]
fn price_history_and_candles_come_from_the_trades() {
    let Session { s, .. } = session();
    // The session takes well under a minute: one or two one-minute buckets, the last one
    // closing at the last trade.
    let h = ok(s.get(&format!("/prices-history?market={YES}&interval=max")));
    let points = h["history"].as_array().unwrap();
    assert!((1..=2).contains(&points.len()), "{h}");
    assert_eq!(points.last().unwrap()["p"], json!(0.55), "the bucket's last trade");
    let no = ok(s.get(&format!("/prices-history?market={NO}&interval=1d&fidelity=60")));
    assert_eq!(no["history"].as_array().unwrap().last().unwrap()["p"], json!(0.45));
    let later = now() + 3600;
    assert_eq!(
        ok(s.get(&format!("/prices-history?market={YES}&startTs={later}&endTs={}", later + 60)))["history"],
        json!([])
    );
    assert_eq!(err(s.get(&format!("/prices-history?market={YES}&startTs={later}"))).0, 400, "start after end (now)");
    assert_eq!(err(s.get(&format!("/prices-history?market={YES}&interval=1d&startTs=1"))).0, 400);
    assert_eq!(err(s.get(&format!("/prices-history?market={YES}&interval=2d"))).0, 400);
    assert_eq!(err(s.get("/prices-history")), (400, "market is required".into()));

    // Candles of an hour (the session may straddle an hour's end: combine them).
    let combined = |token: &str| {
        let c = ok(s.analytics_get(&format!("/ohlc?market={token}&resolution=1h")));
        let k = c["candles"].as_array().unwrap().clone();
        assert!(!k.is_empty() && k.len() <= 2, "{c}");
        let f = |x: &Value, f: &str| x[f].as_f64().unwrap();
        let hi = k.iter().map(|x| f(x, "high")).fold(0.0, f64::max);
        let lo = k.iter().map(|x| f(x, "low")).fold(1.0, f64::min);
        let n: u64 = k.iter().map(|x| x["trades"].as_u64().unwrap()).sum();
        let vol: f64 = k.iter().map(|x| f(x, "volume")).sum();
        (f(&k[0], "open"), hi, lo, f(k.last().unwrap(), "close"), vol, n)
    };
    assert_eq!(combined(YES), (0.4, 0.55, 0.4, 0.55, 20.0, 3));
    assert_eq!(combined(NO), (0.6, 0.6, 0.45, 0.45, 20.0, 3));
    let k = &ok(s.analytics_get(&format!("/ohlc?market={YES}&resolution=1d&limit=1")))["candles"];
    assert_eq!(k.as_array().unwrap().len(), 1);
    assert_eq!(s.analytics_get(&format!("/ohlc?market={YES}&resolution=2m")).0, 400);
}

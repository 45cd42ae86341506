//! Book and price endpoints (SPEC §2.8–2.10, §4.3, §7.3), including the NO mirror.

use serde_json::{json, Value};

use crate::support::*;

#[test]
fn book_prices_and_mirror() {
    let s = Server::start();
    let t = s.trader(m("1000"));
    s.credit(&t.address, YES, m("100"));
    t.place(&s, YES, "BUY", "0.40", "10");
    t.place(&s, YES, "BUY", "0.42", "5");
    t.place(&s, YES, "SELL", "0.48", "7");
    t.place(&s, YES, "SELL", "0.50", "6");

    let (st, b) = s.get(&format!("/book?token_id={YES}"));
    assert_eq!(st, 200);
    assert_eq!(b["market"], COND);
    assert_eq!(b["asset_id"], YES);
    // Best level last, as the live service lists them.
    assert_eq!(b["bids"], json!([{"price": "0.4", "size": "10"}, {"price": "0.42", "size": "5"}]));
    assert_eq!(b["asks"], json!([{"price": "0.5", "size": "6"}, {"price": "0.48", "size": "7"}]));
    assert_eq!(b["tick_size"], "0.01");
    assert_eq!(b["min_order_size"], json!(5));
    assert_eq!(b["neg_risk"], false);
    assert_eq!(b["last_trade_price"], "0.0000");
    assert!(b["timestamp"].as_str().unwrap().parse::<u64>().is_ok());
    // The hash the official clients recompute to check the book they hold.
    assert_eq!(b["hash"].as_str().unwrap().len(), 40);
    assert_eq!(b["hash"], client_book_hash(&b), "{b}");
    // Sent in Polymarket's field order, which the TypeScript client hashes as received.
    let raw = ureq::get(&format!("{}/book?token_id={YES}", s.clob)).call().unwrap().into_string().unwrap();
    let keys: Vec<&str> = [
        "market",
        "asset_id",
        "timestamp",
        "hash",
        "bids",
        "asks",
        "min_order_size",
        "tick_size",
        "neg_risk",
        "last_trade_price",
    ]
    .into_iter()
    .collect();
    let at: Vec<usize> = keys.iter().map(|k| raw.find(&format!("\"{k}\":")).unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{raw}");

    // NO book is the mirror: YES asks at p are NO bids at 1−p.
    let nb = s.get(&format!("/book?token_id={NO}")).1;
    assert_eq!(nb["asset_id"], NO);
    assert_eq!(nb["hash"], client_book_hash(&nb));
    assert_ne!(nb["hash"], b["hash"]);
    assert_eq!(nb["bids"], json!([{"price": "0.5", "size": "6"}, {"price": "0.52", "size": "7"}]));
    assert_eq!(nb["asks"], json!([{"price": "0.6", "size": "10"}, {"price": "0.58", "size": "5"}]));

    assert_eq!(s.get(&format!("/price?token_id={YES}&side=BUY")).1, json!({"price": "0.42"}));
    assert_eq!(s.get(&format!("/price?token_id={YES}&side=SELL")).1, json!({"price": "0.48"}));
    assert_eq!(s.get(&format!("/price?token_id={NO}&side=BUY")).1, json!({"price": "0.52"}));
    assert_eq!(s.get(&format!("/midpoint?token_id={YES}")).1, json!({"mid": "0.4500"}));
    assert_eq!(s.get(&format!("/midpoint?token_id={NO}")).1, json!({"mid": "0.5500"}));
    assert_eq!(s.get(&format!("/spread?token_id={YES}")).1, json!({"spread": "0.0600"}));
    assert_eq!(s.get(&format!("/tick-size?token_id={YES}")).1, json!({"minimum_tick_size": 0.01}));
    assert_eq!(s.get(&format!("/neg-risk?token_id={YES}")).1, json!({"neg_risk": false}));
    assert_eq!(s.get(&format!("/last-trade-price?token_id={YES}")).1, json!({"price": "0.0000", "side": "BUY"}));

    let (st, books) = s.post("/books", &json!([{"token_id": YES}, {"token_id": NO}]));
    assert_eq!(st, 200);
    assert_eq!(books.as_array().unwrap().len(), 2);
    assert_eq!(books[1]["asset_id"], NO);
    for book in books.as_array().unwrap() {
        assert_eq!(book["hash"], client_book_hash(book));
    }
    let (_, p) = s.post("/prices", &json!([{"token_id": YES, "side": "BUY"}, {"token_id": NO, "side": "SELL"}]));
    assert_eq!(p, json!({YES: {"BUY": "0.42"}, NO: {"SELL": "0.58"}}));
    let (_, mids) = s.post("/midpoints", &json!([{"token_id": YES}]));
    assert_eq!(mids, json!({YES: "0.4500"}));
    let (_, sp) = s.post("/spreads", &json!([{"token_id": NO}]));
    assert_eq!(sp, json!({"spreads": {NO: "0.0600"}}));
    let (_, lt) = s.post("/last-trades-prices", &json!([{"token_id": YES}]));
    assert_eq!(lt, json!([{"token_id": YES, "price": "0.0000", "side": "BUY"}]));

    // Market and simplified markets.
    let (st, mk) = s.get(&format!("/market?condition_id={COND}"));
    assert_eq!(st, 200);
    assert_eq!(mk["condition_id"], COND);
    assert_eq!(mk["tokens"][0]["token_id"], YES);
    assert_eq!(mk["tokens"][0]["price"], json!(0.45));
    assert_eq!(s.get("/market?condition_id=0xnope").0, 404);
    let (st, sm) = s.get("/simplified-markets");
    assert_eq!(st, 200);
    assert_eq!(sm["count"], 1);
    assert_eq!(sm["next_cursor"], "LTE=");
    assert_eq!(sm["data"][0]["accepting_orders"], true);
    assert_eq!(sm["data"][0]["tokens"][1]["outcome"], "No");
}

#[test]
fn book_errors() {
    let s = Server::start();
    assert_eq!(err(s.get("/book")), (400, "Invalid token id".into()));
    assert_eq!(err(s.get("/book?token_id=abc")), (400, "Invalid token id".into()));
    assert_eq!(err(s.get("/book?token_id=123")), (404, "No orderbook exists for the requested token id".into()));
    assert_eq!(err(s.get(&format!("/price?token_id={YES}&side=UP"))), (400, "Invalid side".into()));
    assert_eq!(err(s.get(&format!("/price?token_id={YES}"))), (400, "Invalid side".into()));
    assert_eq!(err(s.post("/books", &json!({"token_id": YES}))), (400, "Invalid payload".into()));
    assert_eq!(err(s.post("/books", &json!([{"id": YES}]))), (400, "Invalid payload".into()));
    let many: Vec<Value> = (0..501).map(|_| json!({"token_id": YES})).collect();
    assert_eq!(err(s.post("/books", &json!(many))), (400, "Payload exceeds the limit".into()));
    assert_eq!(
        err(s.post("/midpoints", &json!([{"token_id": "77"}]))),
        (404, "No orderbook exists for the requested token id".into())
    );
}

/// The CLOB's market listings the official clients read first (`get_markets`,
/// `get_market`, `get_sampling_markets`, `get_sampling_simplified_markets`): every market,
/// and the sampling ones only while their reward program runs.
#[test]
fn market_listings_and_sampling_markets() {
    let s = Server::start();
    let (st, all) = s.get("/markets");
    assert_eq!(st, 200);
    assert_eq!(
        (all["count"].clone(), all["next_cursor"].clone(), all["limit"].clone()),
        (json!(1), json!("LTE="), json!(100))
    );
    let mk = &all["data"][0];
    assert_eq!(mk["condition_id"], COND);
    assert_eq!(mk["enable_order_book"], true);
    assert_eq!(mk["accepting_orders"], true);
    assert_eq!(mk["minimum_tick_size"], json!(0.01));
    assert_eq!(mk["minimum_order_size"], json!(5));
    assert_eq!(mk["tokens"][0], json!({"token_id": YES, "outcome": "Yes", "price": 0, "winner": false}));
    assert_eq!(mk["rewards"], json!({"rates": [], "min_size": 0, "max_spread": 0}));
    assert_eq!(s.get(&format!("/markets/{COND}")).1, *mk);
    assert_eq!(s.get(&format!("/market?condition_id={COND}")).1, *mk);
    assert_eq!(s.get("/markets/0xnope"), (404, json!({"error": "market not found"})));
    // A cursor past the end is an empty last page; a malformed one is refused.
    let (_, past) = s.get("/markets?next_cursor=MQ==");
    assert_eq!((past["count"].clone(), past["next_cursor"].clone()), (json!(0), json!("LTE=")));
    assert_eq!(s.get("/markets?next_cursor=!!").0, 400);

    for path in ["/sampling-markets", "/sampling-simplified-markets"] {
        assert_eq!(s.get(path).1["data"], json!([]), "{path}: no program yet");
    }
    let program = json!({"condition_id": COND, "rate_per_day": "10", "min_size": 5, "max_spread": 3});
    assert_eq!(s.internal_post("/internal/rewards", &program).0, 200);
    let (st, sm) = s.get("/sampling-markets");
    assert_eq!(st, 200);
    assert_eq!(sm["data"][0]["condition_id"], COND);
    assert_eq!(sm["data"][0]["rewards"]["max_spread"], json!(3));
    assert_eq!(sm["data"][0]["tokens"][1]["winner"], false);
    let (_, ss) = s.get("/sampling-simplified-markets");
    assert_eq!(ss["data"], s.get("/simplified-markets").1["data"]);
    assert_eq!(ss["data"][0]["rewards"]["min_size"], json!(5));
    let off = json!({"condition_id": COND, "rate_per_day": "0", "min_size": 5, "max_spread": 3});
    assert_eq!(s.internal_post("/internal/rewards", &off).0, 200);
    assert_eq!(s.get("/sampling-markets").1["data"], json!([]), "an ended program samples nothing");
}

//! Book and price endpoints (SPEC §2.8–2.10, §4.3, §7.3), including the NO mirror.

use serde_json::{json, Value};

use crate::fixture::*;

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
    assert_eq!(b["bids"], json!([{"price": "0.4000", "size": "10"}, {"price": "0.4200", "size": "5"}]));
    assert_eq!(b["asks"], json!([{"price": "0.5000", "size": "6"}, {"price": "0.4800", "size": "7"}]));
    assert_eq!(b["tick_size"], "0.01");
    assert_eq!(b["min_order_size"], json!(5));
    assert_eq!(b["neg_risk"], false);
    assert_eq!(b["last_trade_price"], "0.0000");
    assert!(b["timestamp"].as_str().unwrap().parse::<u64>().is_ok());
    // The hash the official clients recompute to check the book they hold.
    assert_eq!(b["hash"].as_str().unwrap().len(), 40);
    assert_eq!(b["hash"], client_book_hash(&b), "{b}");

    // NO book is the mirror: YES asks at p are NO bids at 1−p.
    let nb = s.get(&format!("/book?token_id={NO}")).1;
    assert_eq!(nb["asset_id"], NO);
    assert_eq!(nb["hash"], client_book_hash(&nb));
    assert_ne!(nb["hash"], b["hash"]);
    assert_eq!(nb["bids"], json!([{"price": "0.5000", "size": "6"}, {"price": "0.5200", "size": "7"}]));
    assert_eq!(nb["asks"], json!([{"price": "0.6000", "size": "10"}, {"price": "0.5800", "size": "5"}]));

    assert_eq!(s.get(&format!("/price?token_id={YES}&side=BUY")).1, json!({"price": "0.4200"}));
    assert_eq!(s.get(&format!("/price?token_id={YES}&side=SELL")).1, json!({"price": "0.4800"}));
    assert_eq!(s.get(&format!("/price?token_id={NO}&side=BUY")).1, json!({"price": "0.5200"}));
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
    assert_eq!(p, json!({YES: {"BUY": "0.4200"}, NO: {"SELL": "0.5800"}}));
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
    assert_eq!(mk["tokens"][0]["price"], "0.4500");
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

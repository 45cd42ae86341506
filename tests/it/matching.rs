//! Matching over HTTP: crossing orders, partial fills across makers, price-time priority,
//! mint and merge across YES/NO, FOK/FAK/post-only, fees, trades for taker and makers.

use serde_json::{json, Value};

use crate::support::*;

#[test]
fn crossing_orders_trade_at_maker_price() {
    let s = Server::start();
    let buyer = s.trader(m("100"));
    let seller = s.trader(0);
    s.credit(&seller.address, YES, m("20"));
    let maker = seller.place(&s, YES, "SELL", "0.60", "20");
    let maker_id = maker["orderID"].as_str().unwrap().to_string();
    // Buyer bids 0.65 for 10: executes at the maker's 0.60.
    let r = buyer.place(&s, YES, "BUY", "0.65", "10");
    assert_eq!(r["status"], "MATCHED");
    assert_eq!(r["makingAmount"], "6");
    assert_eq!(r["takingAmount"], "10");
    let trade_id = r["tradeIds"][0].as_str().unwrap().to_string();
    // Usable the moment the fill is acknowledged, settled by the settlement worker.
    assert_eq!(buyer.available(&s, "USDC"), m("94"));
    assert_eq!(buyer.available(&s, YES), m("10"));
    assert_eq!(seller.available(&s, "USDC"), m("6"));
    assert_eq!(buyer.balance(&s, "USDC"), m("100"));
    assert_eq!(buyer.balances(&s)["USDC"]["reserved"], "6", "the payment is held until settlement");
    assert_eq!(buyer.balance(&s, YES), 0);
    s.check();

    // The taker sees TAKER, the maker sees MAKER.
    let (st, tp) = buyer.l2(&s, "GET", "/data/trades", None);
    assert_eq!(st, 200);
    assert_eq!(tp["count"], 1);
    let t = &tp["data"][0];
    assert_eq!(t["id"], trade_id.as_str());
    assert_eq!(t["taker_order_id"], r["orderID"]);
    assert_eq!(t["market"], COND);
    assert_eq!(t["asset_id"], YES);
    assert_eq!(t["side"], "BUY");
    assert_eq!(t["size"], "10");
    assert_eq!(t["price"], "0.6");
    assert_eq!(t["status"], "PENDING");
    assert_eq!(t["trader_side"], "TAKER");
    assert_eq!(t["bucket_index"], 0);
    assert_eq!(t["owner"], buyer.key.as_str());
    assert_eq!(t["maker_orders"][0]["order_id"], maker_id.as_str());
    assert_eq!(t["maker_orders"][0]["owner"], seller.key.as_str());
    assert_eq!(t["maker_orders"][0]["matched_amount"], "10");
    assert!(t["match_time"].is_string());
    let mp = seller.l2(&s, "GET", "/data/trades", None).1;
    assert_eq!(mp["data"][0]["trader_side"], "MAKER");
    assert_eq!(mp["data"][0]["id"], trade_id.as_str());

    assert_eq!(s.settle(), (1, 0));
    assert_eq!(buyer.balance(&s, "USDC"), m("94"));
    assert_eq!(buyer.balance(&s, YES), m("10"));
    assert_eq!(seller.balance(&s, "USDC"), m("6"));
    assert_eq!(seller.balance(&s, YES), m("10"));
    assert_eq!(buyer.balances(&s)["USDC"]["reserved"], "0");
    assert_eq!(buyer.balances(&s)[YES]["incoming"], "0");
    let t = &buyer.l2(&s, "GET", "/data/trades", None).1["data"][0];
    assert_eq!(t["status"], "CONFIRMED");
    assert!(t["transaction_hash"].as_str().unwrap().starts_with("0x"));
    assert_eq!(s.settle(), (0, 0), "a trade settles once");

    // Filters on trades.
    assert_eq!(buyer.l2(&s, "GET", "/data/trades?market=0xnope", None).1["count"], 0);
    assert_eq!(buyer.l2(&s, "GET", &format!("/data/trades?maker_address={}", seller.address), None).1["count"], 1);
    assert_eq!(buyer.l2(&s, "GET", &format!("/data/trades?after={}", now() + 10), None).1["count"], 0);
    assert_eq!(buyer.l2(&s, "GET", &format!("/data/trades?before={}", now() + 10), None).1["count"], 1);

    // Maker order is half filled and still live.
    let o = seller.l2(&s, "GET", &format!("/data/order/{maker_id}"), None).1;
    assert_eq!(o["size_matched"], "10");
    assert_eq!(o["status"], "LIVE");
    assert_eq!(o["associate_trades"], json!([trade_id]));
    let book = s.get(&format!("/book?token_id={YES}")).1;
    assert_eq!(book["asks"], json!([{"price": "0.6", "size": "10"}]));
    assert_eq!(book["last_trade_price"], "0.6000");
    s.check();
}

#[test]
fn partial_fills_across_makers_in_price_time_priority() {
    let s = Server::start();
    let makers: Vec<Trader> = (0..3).map(|_| s.trader(0)).collect();
    for mk in &makers {
        s.credit(&mk.address, YES, m("10"));
    }
    // Two at 0.50 (first in time wins), one better at 0.49.
    let a = makers[0].place(&s, YES, "SELL", "0.50", "10")["orderID"].clone();
    let b = makers[1].place(&s, YES, "SELL", "0.50", "10")["orderID"].clone();
    let c = makers[2].place(&s, YES, "SELL", "0.49", "10")["orderID"].clone();
    let taker = s.trader(m("100"));
    let r = taker.place(&s, YES, "BUY", "0.50", "25");
    assert_eq!(r["status"], "MATCHED");
    assert_eq!(r["tradeIds"].as_array().unwrap().len(), 3);
    // 10 @ 0.49 + 10 @ 0.50 + 5 @ 0.50.
    assert_eq!(r["makingAmount"], "12.4");
    let trades = taker.l2(&s, "GET", "/data/trades", None).1;
    let fills: Vec<(Value, Value, Value)> = trades["data"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|t| (t["maker_orders"][0]["order_id"].clone(), t["size"].clone(), t["bucket_index"].clone()))
        .collect();
    assert_eq!(fills, vec![(c, json!("10"), json!(0)), (a, json!("10"), json!(1)), (b.clone(), json!("5"), json!(2))]);
    let o = makers[1].l2(&s, "GET", &format!("/data/order/{}", b.as_str().unwrap()), None).1;
    assert_eq!((o["size_matched"].clone(), o["status"].clone()), (json!("5"), json!("LIVE")));
    s.settle();
    assert_eq!(makers[2].balance(&s, "USDC"), m("4.9"));
    assert_eq!(makers[0].balance(&s, "USDC"), m("5"));
    assert_eq!(makers[1].balance(&s, "USDC"), m("2.5"));
    assert_eq!(taker.balance(&s, YES), m("25"));
    assert_eq!(taker.balance(&s, "USDC"), m("87.6"));
    s.check();
}

#[test]
fn mint_buy_yes_meets_buy_no() {
    let s = Server::start();
    let no_buyer = s.trader(m("100"));
    let yes_buyer = s.trader(m("100"));
    // BUY NO at 0.45 is a YES ask at 0.55.
    no_buyer.place(&s, NO, "BUY", "0.45", "10");
    let yb = s.get(&format!("/book?token_id={YES}")).1;
    assert_eq!(yb["asks"], json!([{"price": "0.55", "size": "10"}]));
    let nb = s.get(&format!("/book?token_id={NO}")).1;
    assert_eq!(nb["bids"], json!([{"price": "0.45", "size": "10"}]));
    let r = yes_buyer.place(&s, YES, "BUY", "0.60", "10");
    assert_eq!(r["status"], "MATCHED");
    assert_eq!(r["makingAmount"], "5.5");
    // Both paid their price; 10 USDC became 10 YES + 10 NO.
    s.settle();
    assert_eq!(yes_buyer.balance(&s, YES), m("10"));
    assert_eq!(yes_buyer.balance(&s, "USDC"), m("94.5"));
    assert_eq!(no_buyer.balance(&s, NO), m("10"));
    assert_eq!(no_buyer.balance(&s, "USDC"), m("95.5"));
    let t = &yes_buyer.l2(&s, "GET", "/data/trades", None).1["data"][0];
    assert_eq!(t["type"], "MINT");
    assert_eq!(t["maker_orders"][0]["asset_id"], NO);
    assert_eq!(t["maker_orders"][0]["price"], "0.45");
    // The NO side saw a trade at 0.45.
    assert_eq!(s.get(&format!("/last-trade-price?token_id={NO}")).1["price"], "0.4500");
    assert_eq!(s.get(&format!("/last-trade-price?token_id={YES}")).1["price"], "0.5500");
    s.check();
}

#[test]
fn merge_sell_yes_meets_sell_no() {
    let s = Server::start();
    let a = s.trader(0);
    let b = s.trader(0);
    s.credit(&a.address, YES, m("10"));
    s.credit(&b.address, NO, m("10"));
    // SELL NO at 0.35 is a YES bid at 0.65.
    b.place(&s, NO, "SELL", "0.35", "10");
    let r = a.place(&s, YES, "SELL", "0.60", "10");
    assert_eq!(r["status"], "MATCHED");
    // Executed at the maker's price: YES 0.65, NO 0.35; 10 YES + 10 NO merged into 10 USDC.
    s.settle();
    assert_eq!(a.balance(&s, "USDC"), m("6.5"));
    assert_eq!(b.balance(&s, "USDC"), m("3.5"));
    assert_eq!(a.balance(&s, YES), 0);
    assert_eq!(b.balance(&s, NO), 0);
    assert_eq!(a.l2(&s, "GET", "/data/trades", None).1["data"][0]["type"], "MERGE");
    s.check();
}

#[test]
fn fok_fak_and_post_only() {
    let s = Server::start();
    let maker = s.trader(0);
    s.credit(&maker.address, YES, m("10"));
    maker.place(&s, YES, "SELL", "0.50", "10");
    let t = s.trader(m("100"));

    // FOK for more than the book holds: killed, nothing changes.
    let o = t.order(&s, YES, "BUY", "0.50", "11");
    assert_eq!(
        err(t.submit(&s, o, "FOK")),
        (400, "order couldn't be fully filled. FOK orders are fully filled or killed.".into())
    );
    // FAK below the ask: nothing to match.
    let o = t.order(&s, YES, "BUY", "0.40", "5");
    assert_eq!(err(t.submit(&s, o, "FAK")), (400, "no orders found to match with FAK order.".into()));
    // Post-only that would cross.
    let o = t.order(&s, YES, "BUY", "0.50", "5");
    let body = json!({"order": o, "owner": t.key, "orderType": "GTC", "postOnly": true});
    assert_eq!(
        err(t.l2(&s, "POST", "/order", Some(&body))),
        (400, "invalid post-only order: order crosses book".into())
    );
    // Post-only that rests.
    let o = t.order(&s, YES, "BUY", "0.45", "5");
    let body = json!({"order": o, "owner": t.key, "orderType": "GTC", "postOnly": true});
    assert_eq!(t.l2(&s, "POST", "/order", Some(&body)).1["status"], "LIVE");
    assert_eq!(t.balance(&s, "USDC"), m("100"));

    // A market BUY as the clients build it: $3 at worst price 0.55 → taker = 3/0.55 =
    // 5.4545 tokens (4 decimals for tick 0.01), an implied price between ticks. Accepted.
    let o = t.signed(YES, "BUY", m("3"), 5_454_500).sign(&s);
    let (st, r) = t.submit(&s, o, "FAK");
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["status"], "MATCHED");
    assert_eq!(r["takingAmount"], "5.4545");
    // FOK that fits fully.
    let o = t.order(&s, YES, "BUY", "0.50", "4.54");
    let (st, r) = t.submit(&s, o, "FOK");
    assert_eq!((st, r["status"].clone()), (200, json!("MATCHED")));
    // FAK that fills partly: the rest is killed, not rested.
    let o = t.order(&s, YES, "BUY", "0.50", "5");
    let (st, r) = t.submit(&s, o, "FAK");
    assert_eq!((st, r["status"].clone(), r["takingAmount"].clone()), (200, json!("MATCHED"), json!("0.0055")));
    assert_eq!(s.get(&format!("/book?token_id={YES}")).1["asks"], json!([]));
    assert_eq!(t.balances(&s)["USDC"]["reserved"], "7.25", "2.25 for the resting order, 5 held for settlement");
    s.settle();
    assert_eq!(t.balances(&s)["USDC"]["reserved"], "2.25");
    s.check();
}

#[test]
fn expired_gtd_orders_never_trade() {
    let s = Server::start();
    let maker = s.trader(m("100"));
    let exp = (now() + 2) as u64;
    let o = maker.signed(YES, "BUY", m("5"), m("10")).expiration(exp).sign(&s);
    let (st, r) = maker.submit(&s, o, "GTD");
    assert_eq!(st, 200, "{r}");
    let id = r["orderID"].as_str().unwrap().to_string();
    std::thread::sleep(std::time::Duration::from_millis(3100));
    let taker = s.trader(0);
    s.credit(&taker.address, YES, m("10"));
    let o = taker.order(&s, YES, "SELL", "0.50", "10");
    let (st, r) = taker.submit(&s, o, "GTC");
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["status"], "LIVE");
    assert_eq!(r["tradeIds"], json!([]));
    assert_eq!(maker.l2(&s, "GET", &format!("/data/order/{id}"), None).1["status"], "CANCELED");
    assert_eq!(maker.balances(&s)["USDC"]["reserved"], "0");
    assert_eq!(s.get(&format!("/book?token_id={YES}")).1["bids"], json!([]));
    s.check();
}

#[test]
fn fees_follow_the_exchange_formula() {
    let s = Server::start();
    let seller = s.trader(0);
    s.credit(&seller.address, YES, m("100"));
    let buyer = s.trader(m("100"));
    // Maker SELL with 100 bps, taker BUY with 100 bps, 100 tokens at 0.50.
    let o = seller.signed(YES, "SELL", m("100"), m("50")).fee_bps(100).sign(&s);
    assert_eq!(seller.submit(&s, o, "GTC").0, 200);
    let o = buyer.signed(YES, "BUY", m("50"), m("100")).fee_bps(100).sign(&s);
    let (st, r) = buyer.submit(&s, o, "GTC");
    assert_eq!(st, 200, "{r}");
    // SELL pays 0.01·min(0.5,0.5)·100 = 0.5 USDC; BUY pays 0.01·0.5·100/0.5 = 1 token.
    s.settle();
    assert_eq!(seller.balance(&s, "USDC"), m("49.5"));
    assert_eq!(buyer.balance(&s, YES), m("99"));
    let t = &buyer.l2(&s, "GET", "/data/trades", None).1["data"][0];
    assert_eq!(t["taker_fee"], "1");
    assert_eq!(t["fee_rate_bps"], "100");
    let mt = &seller.l2(&s, "GET", "/data/trades", None).1["data"][0];
    assert_eq!(mt["maker_fee"], "0.5");
    // Fee over the exchange's limit is refused.
    let o = buyer.signed(YES, "BUY", m("5"), m("10")).fee_bps(1001).sign(&s);
    assert_eq!(err(buyer.submit(&s, o, "GTC")), (400, "Invalid order payload".into()));
    s.check();
}

#[test]
fn neg_risk_orders_use_the_neg_risk_exchange_domain() {
    let s = Server::start();
    s.create_market("0xnr1", "3001", "3002", "0.001", true);
    let t = s.trader(m("100"));
    let o = t.signed("3001", "BUY", m("1.23"), m("10")).neg_risk().sign(&s);
    let (st, r) = t.submit(&s, o, "GTC");
    assert_eq!(st, 200, "{r}");
    // Signed against the standard exchange: refused.
    let o = t.signed("3001", "BUY", m("1.24"), m("10")).sign(&s);
    assert_eq!(err(t.submit(&s, o, "GTC")), (400, "invalid signature".into()));
    assert_eq!(s.get("/neg-risk?token_id=3001").1, json!({"neg_risk": true}));
    assert_eq!(s.get("/tick-size?token_id=3002").1, json!({"minimum_tick_size": 0.001}));
}

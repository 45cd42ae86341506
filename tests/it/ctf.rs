//! Conditional tokens in ledger mode: split, merge and redeem conserve value exactly, take
//! only free balances, and show in the wallet's activity and positions.

use serde_json::{json, Value};

use crate::support::*;

fn op(t: &Trader, s: &Server, name: &str, body: Value) -> (u16, Value) {
    t.l2(s, "POST", &format!("/ctf/{name}"), Some(&body))
}

fn holdings(t: &Trader, s: &Server) -> [u64; 3] {
    [t.balance(s, "USDC"), t.balance(s, YES), t.balance(s, NO)]
}

#[test]
fn split_merge_and_redeem_conserve_value_and_show_in_activity() {
    let s = Server::start();
    let t = s.trader(m("100"));
    let other = s.trader(m("100"));
    a_split_turns_collateral_into_both_tokens_at_half_each(&s, &t);
    refusals_change_nothing(&s, &t, &other);
    what_an_open_order_holds_cannot_be_merged(&s, &t);
    let redeemed = once_resolved_redeem_pays_the_free_winners_and_burns_the_losers(&s, &t);
    the_activity_lists_the_operations_newest_first(&s, &t, &redeemed);
}

fn a_split_turns_collateral_into_both_tokens_at_half_each(s: &Server, t: &Trader) {
    let split = json!({"conditionId": COND, "amount": "30000000"});
    assert_eq!(err(s.post("/ctf/split", &split)), (401, "L2 authentication failure".into()));
    let (st, r) = op(t, s, "split", split.clone());
    assert_eq!(st, 200, "{r}");
    assert_eq!(
        (r["type"].clone(), r["size"].clone(), r["usdcSize"].clone()),
        (json!("SPLIT"), json!("30000000"), json!("30000000"))
    );
    assert_eq!(r["balances"], json!({"USDC": "70000000", YES: "30000000", NO: "30000000"}));
    assert_eq!(r["transactionHash"].as_str().unwrap().len(), 66);
    assert_eq!(holdings(t, s), [m("70"), m("30"), m("30")]);
    // Positions: a complete set costs one, half to each side.
    let (_, pos) = s.analytics_get(&format!("/positions?user={}", t.address));
    let yes = pos.as_array().unwrap().iter().find(|p| p["asset"] == YES).expect("YES position").clone();
    assert_eq!((yes["size"].clone(), yes["avgPrice"].clone()), (json!(30), json!(0.5)), "{pos}");
}

fn refusals_change_nothing(s: &Server, t: &Trader, other: &Trader) {
    let refused = [
        ("split", json!({"conditionId": COND, "amount": "71000000"}), 400, "not enough balance / allowance"),
        (
            "split",
            json!({"conditionId": COND, "amount": "0"}),
            400,
            "amount must be a positive integer string (base units)",
        ),
        (
            "split",
            json!({"conditionId": COND, "amount": "1.5"}),
            400,
            "amount must be a positive integer string (base units)",
        ),
        ("split", json!({"conditionId": COND}), 400, "amount must be a positive integer string (base units)"),
        ("split", json!({"conditionId": "0xnone", "amount": "1"}), 404, "market not found"),
        ("merge", json!({"conditionId": COND, "amount": "31000000"}), 400, "not enough balance / allowance"),
        (
            "split",
            json!({"conditionId": COND, "amount": "1", "address": other.address}),
            400,
            "the address has to be the owner of the API KEY",
        ),
        ("redeem", json!({"conditionId": COND}), 400, "market is not resolved"),
        (
            "redeem",
            json!({"conditionId": COND, "amount": "1"}),
            400,
            "redeem takes no amount: it redeems every free token of the market",
        ),
    ];
    for (name, body, code, msg) in refused {
        assert_eq!(err(op(t, s, name, body.clone())), (code, msg.to_string()), "{name} {body}");
    }
    assert_eq!(err(op(t, s, "merge", json!({"conditionId": COND, "amount": 5}))).0, 400, "amounts are strings");
    assert_eq!(holdings(t, s), [m("70"), m("30"), m("30")]);
}

fn what_an_open_order_holds_cannot_be_merged(s: &Server, t: &Trader) {
    let sell = t.place(s, YES, "SELL", "0.60", "10");
    assert_eq!(sell["status"], "LIVE");
    assert_eq!(
        err(op(t, s, "merge", json!({"conditionId": COND, "amount": "25000000"}))),
        (400, "not enough balance / allowance".into())
    );
    let (st, r) = op(t, s, "merge", json!({"conditionId": COND, "amount": "20000000"}));
    assert_eq!((st, r["type"].clone()), (200, json!("MERGE")), "{r}");
    assert_eq!(holdings(t, s), [m("90"), m("10"), m("10")]);
    t.l2(s, "DELETE", "/order", Some(&json!({"orderID": sell["orderID"]})));
}

/// Resolved YES: the redeem receipt.
fn once_resolved_redeem_pays_the_free_winners_and_burns_the_losers(s: &Server, t: &Trader) -> Value {
    let (st, b) =
        s.internal_post("/internal/resolution", &json!({"condition_id": COND, "status": "RESOLVED", "outcome": "Yes"}));
    assert_eq!(st, 200, "{b}");
    let (st, r) = op(t, s, "redeem", json!({"conditionId": COND}));
    assert_eq!(st, 200, "{r}");
    assert_eq!((r["size"].clone(), r["usdcSize"].clone()), (json!("20000000"), json!("10000000")));
    assert_eq!(holdings(t, s), [m("100"), 0, 0]);
    assert_eq!(err(op(t, s, "redeem", json!({"conditionId": COND}))), (400, "nothing to redeem".into()));
    s.check();
    r
}

/// Newest first, filtered by type, paged; a side filter keeps trades only.
fn the_activity_lists_the_operations_newest_first(s: &Server, t: &Trader, redeemed: &Value) {
    let user = &t.address;
    let kinds = |q: &str| -> Vec<Value> {
        let (st, a) = s.analytics_get(&format!("/activity?user={user}{q}"));
        assert_eq!(st, 200, "{a}");
        a.as_array().unwrap().iter().map(|r| r["type"].clone()).collect()
    };
    assert_eq!(kinds(""), vec![json!("REDEEM"), json!("MERGE"), json!("SPLIT")]);
    assert_eq!(kinds("&type=SPLIT,MERGE"), vec![json!("MERGE"), json!("SPLIT")]);
    assert_eq!(kinds("&limit=1&offset=1"), vec![json!("MERGE")]);
    assert_eq!(kinds("&type=TRADE"), Vec::<Value>::new());
    assert_eq!(kinds("&side=BUY"), Vec::<Value>::new());
    let (_, a) = s.analytics_get(&format!("/activity?user={user}&type=REDEEM"));
    let row = &a[0];
    assert_eq!(
        (row["size"].clone(), row["usdcSize"].clone(), row["outcomeIndex"].clone()),
        (json!(20), json!(10), json!(999))
    );
    assert_eq!((row["conditionId"].clone(), row["proxyWallet"].clone()), (json!(COND), json!(user)));
    assert_eq!(row["transactionHash"], redeemed["transactionHash"]);
    // Positions closed out: nothing held.
    let (_, pos) = s.analytics_get(&format!("/positions?user={user}"));
    assert_eq!(pos, json!([]), "{pos}");
}

#[test]
fn activity_merges_trades_and_token_operations_by_time() {
    let s = Server::start();
    let buyer = s.trader(m("100"));
    let seller = s.trader(m("100"));
    let (st, _) = op(&seller, &s, "split", json!({"conditionId": COND, "amount": "10000000"}));
    assert_eq!(st, 200);
    // Activity timestamps are in seconds: keep the trade a second after the split.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    buyer.place(&s, YES, "BUY", "0.50", "10");
    assert_eq!(seller.place(&s, YES, "SELL", "0.50", "10")["status"], "MATCHED");
    let (_, a) = s.analytics_get(&format!("/activity?user={}", seller.address));
    let kinds: Vec<_> = a.as_array().unwrap().iter().map(|r| r["type"].clone()).collect();
    assert_eq!(kinds, vec![json!("TRADE"), json!("SPLIT")], "{a}");
    assert_eq!(a[0]["side"], "SELL");
    let (_, a) = s.analytics_get(&format!("/activity?user={}&limit=1&offset=1", seller.address));
    assert_eq!(a[0]["type"], "SPLIT");
    assert_eq!(s.analytics_get(&format!("/activity?user={}&limit=1", seller.address)).1[0]["type"], "TRADE");
    // The split's YES went out by the trade; its NO stays.
    assert_eq!([seller.available(&s, YES), seller.available(&s, NO)], [0, m("10")]);
}

#[test]
fn convert_positions_conserves_value_whichever_question_wins() {
    let s = Server::start();
    let qs = [("0xq0", "2001", "2002"), ("0xq1", "3001", "3002"), ("0xq2", "4001", "4002")];
    for (c, y, n) in qs {
        let (st, r) = s.internal_post(
            "/internal/markets",
            &json!({"condition_id": c, "question": format!("Who? {c}"), "neg_risk": true, "neg_risk_market_id": "0xnr",
                "tokens": [{"token_id": y, "outcome": "Yes"}, {"token_id": n, "outcome": "No"}]}),
        );
        assert_eq!(st, 200, "{r}");
    }
    let t = s.trader(m("100"));
    for (c, ..) in qs {
        assert_eq!(op(&t, &s, "split", json!({"conditionId": c, "amount": "10000000"})).0, 200);
    }
    // What a wallet is worth if question w wins: collateral, YES of w, NO of the others.
    let worth = |w: usize| -> u64 {
        let mut v = t.balance(&s, "USDC");
        for (i, (_, y, n)) in qs.iter().enumerate() {
            v += if i == w { t.balance(&s, y) } else { t.balance(&s, n) };
        }
        v
    };
    let before: Vec<u64> = (0..3).map(worth).collect();

    let refused = [
        (json!({"marketId": "0xnone", "indexSet": 1, "amount": "1"}), 404, "market not found"),
        (
            json!({"marketId": "0xnr", "indexSet": 0, "amount": "1"}),
            400,
            "indexSet must be a non-zero bitmask of the market's 3 questions",
        ),
        (
            json!({"marketId": "0xnr", "indexSet": "8", "amount": "1"}),
            400,
            "indexSet must be a non-zero bitmask of the market's 3 questions",
        ),
        (
            json!({"marketId": "0xnr", "indexSet": 3, "amount": "0"}),
            400,
            "amount must be a positive integer string (base units)",
        ),
        (json!({"marketId": "0xnr", "indexSet": 3, "amount": "11000000"}), 400, "not enough balance / allowance"),
    ];
    for (body, code, msg) in refused {
        assert_eq!(err(op(&t, &s, "convert", body.clone())), (code, msg.to_string()), "{body}");
    }
    assert_eq!(err(s.post("/ctf/convert", &json!({}))), (401, "L2 authentication failure".into()));
    assert_eq!((0..3).map(worth).collect::<Vec<_>>(), before, "refusals change nothing");

    // NO of questions 0 and 1 → YES of question 2 plus one unit of collateral per unit.
    let (st, r) = op(&t, &s, "convert", json!({"marketId": "0xnr", "indexSet": "3", "amount": "4000000"}));
    assert_eq!(st, 200, "{r}");
    assert_eq!((r["type"].clone(), r["usdcSize"].clone()), (json!("CONVERSION"), json!("4000000")));
    assert_eq!(t.balance(&s, "USDC"), m("74"));
    assert_eq!([t.balance(&s, "2002"), t.balance(&s, "3002"), t.balance(&s, "4001")], [m("6"), m("6"), m("14")]);
    assert_eq!([t.balance(&s, "2001"), t.balance(&s, "3001"), t.balance(&s, "4002")], [m("10"), m("10"), m("10")]);
    assert_eq!((0..3).map(worth).collect::<Vec<_>>(), before, "value conserved for every winner");
    s.check();

    let (_, a) = s.analytics_get(&format!("/activity?user={}&type=CONVERSION", t.address));
    let rows = a.as_array().unwrap();
    let mut conds: Vec<_> = rows.iter().map(|r| r["conditionId"].as_str().unwrap()).collect();
    conds.sort();
    assert_eq!(conds, vec!["0xq0", "0xq1"], "{a}");
    let paid: f64 = rows.iter().map(|r| r["usdcSize"].as_f64().unwrap()).sum();
    assert_eq!(paid, 4.0);

    // The same operation through the gasless relay (L2 mode).
    let body = json!({"operation": "convertPositions", "marketId": "0xnr", "indexSet": "3", "amount": "1000000"});
    let (st, tx) = t.l2(&s, "POST", "/submit", Some(&body));
    assert_eq!(
        (st, tx["state"].as_str(), tx["result"]["usdcSize"].as_str()),
        (200, Some("STATE_CONFIRMED"), Some("1000000")),
        "{tx}"
    );
    assert_eq!(t.balance(&s, "USDC"), m("75"));
    assert_eq!(t.balance(&s, "4001"), m("15"));
    assert_eq!((0..3).map(worth).collect::<Vec<_>>(), before, "value conserved through the relay");
    s.check();
}

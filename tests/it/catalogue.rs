//! The catalogue server ({gamma_url}): series, events, markets, comments and search, created
//! through the internal server, with live volume and liquidity.

use serde_json::{json, Value};

use crate::support::*;

fn ok(r: (u16, Value)) -> Value {
    assert_eq!(r.0, 200, "{}", r.1);
    r.1
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect()
}

fn market(cond: &str, yes: &str, no: &str, q: &str, slug: &str) -> Value {
    json!({"condition_id": cond, "question": q, "slug": slug,
        "tokens": [{"token_id": yes, "outcome": "Yes"}, {"token_id": no, "outcome": "No"}],
        "description": format!("About {q}"), "end_date": "2027-01-01"})
}

/// Two series, three events (one with a new market and the fixture's market).
fn seed(s: &Server) {
    ok(s.internal_post(
        "/internal/series",
        &json!({"title": "Weekly Crypto", "slug": "weekly-crypto", "recurrence": "weekly", "start_date": "2026-01-05"}),
    ));
    ok(s.internal_post("/internal/series", &json!({"title": "Elections", "recurrence": "annual", "closed": true})));
    let e = ok(s.internal_post(
        "/internal/events",
        &json!({"title": "Bitcoin weekly close", "slug": "btc-weekly", "series_slug": "weekly-crypto",
            "tags": ["Crypto"], "end_date": "2027-01-01T00:00:00Z",
            "markets": [{"condition_id": COND, "group_item_title": "Up", "resolution_source": "https://example.com/btc"},
                        market("0xbeef", "2001", "2002", "Will ETH flip BTC?", "eth-flip")]}),
    ));
    assert_eq!(e["id"], "1");
    assert_eq!(e["markets"].as_array().unwrap().len(), 2);
    ok(s.internal_post(
        "/internal/events",
        &json!({"title": "Mayor of Springfield", "series_id": 2, "tags": ["Politics"]}),
    ));
    ok(s.internal_post(
        "/internal/events",
        &json!({"title": "Ethereum ETF", "tags": ["Crypto", "ETF"], "closed": true,
            "markets": [market("0xcafe", "3001", "3002", "Will an ETH ETF stake?", "eth-etf-stake")]}),
    ));
}

#[test]
fn events_series_and_markets_read_as_gamma_shows_them() {
    let s = Server::start();
    seed(&s);
    let e = ok(s.catalogue_get("/events/1"));
    assert_eq!((e["slug"].clone(), e["title"].clone()), (json!("btc-weekly"), json!("Bitcoin weekly close")));
    assert_eq!(e["series"][0]["slug"], "weekly-crypto");
    assert_eq!(e["tags"][0], json!({"label": "Crypto", "slug": "crypto"}));
    assert_eq!(e["endDate"], "2027-01-01T00:00:00Z");
    let m = &e["markets"][0];
    assert_eq!(m["conditionId"], COND);
    assert_eq!(m["groupItemTitle"], "Up");
    assert_eq!(m["resolutionSource"], "https://example.com/btc");
    let tokens: Vec<String> = serde_json::from_str(m["clobTokenIds"].as_str().unwrap()).unwrap();
    assert_eq!(tokens, vec![YES, NO]);
    let outcomes: Vec<String> = serde_json::from_str(m["outcomes"].as_str().unwrap()).unwrap();
    assert_eq!(outcomes, vec!["Yes", "No"]);
    assert_eq!((m["orderPriceMinTickSize"].clone(), m["orderMinSize"].clone()), (json!(0.01), json!(5)));
    assert_eq!(m["events"][0]["id"], "1");
    assert_eq!(ok(s.catalogue_get("/events/slug/btc-weekly"))["id"], "1");

    // 404s are JSON errors (SPEC §7.6), for unknown and malformed ids alike.
    assert_eq!(err(s.catalogue_get("/events/99")), (404, "event not found".into()));
    assert_eq!(err(s.catalogue_get("/events/abc")), (404, "event not found".into()));
    assert_eq!(err(s.catalogue_get("/events/slug/nope")).0, 404);
    assert_eq!(err(s.catalogue_get("/markets/999")), (404, "market not found".into()));
    assert_eq!(err(s.catalogue_get("/series/7")), (404, "series not found".into()));

    // Markets by Gamma id, slug, condition ids, token ids.
    let eth = ok(s.catalogue_get("/markets/slug/eth-flip"));
    assert_eq!(eth["conditionId"], "0xbeef");
    assert_eq!(eth["description"], "About Will ETH flip BTC?");
    assert_eq!(ok(s.catalogue_get(&format!("/markets/{}", eth["id"].as_str().unwrap())))["slug"], "eth-flip");
    let by_cond = ok(s.catalogue_get("/markets?condition_ids=0xbeef,0xcafe"));
    assert_eq!(by_cond.as_array().unwrap().len(), 2);
    let by_tok = ok(s.catalogue_get("/markets?clob_token_ids=3002"));
    assert_eq!(by_tok[0]["conditionId"], "0xcafe");
    assert_eq!(ok(s.catalogue_get("/markets?tag=etf")).as_array().unwrap().len(), 1);

    // Events: filters.
    assert_eq!(ids(&ok(s.catalogue_get("/events"))), vec!["1", "2", "3"]);
    assert_eq!(ids(&ok(s.catalogue_get("/events?closed=false"))), vec!["1", "2"]);
    assert_eq!(ids(&ok(s.catalogue_get("/events?tag=crypto"))), vec!["1", "3"]);
    assert_eq!(ids(&ok(s.catalogue_get("/events?slug=btc-weekly&slug=ethereum-etf"))), vec!["1", "3"]);
    assert_eq!(ids(&ok(s.catalogue_get("/events?id=2,3&order=id"))), vec!["3", "2"], "order given: descending");
    assert_eq!(ids(&ok(s.catalogue_get("/events?series_id=2"))), vec!["2"]);
    assert_eq!(err(s.catalogue_get("/events?closed=maybe")), (400, "closed must be true or false".into()));
    assert_eq!(err(s.catalogue_get("/events?order=colour")).0, 400);

    // Series: every parameter of §4.6.
    let all = ok(s.catalogue_get("/series"));
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert_eq!(all[0]["events"][0]["slug"], "btc-weekly");
    assert_eq!(ids(&ok(s.catalogue_get("/series?closed=true"))), vec!["2"]);
    assert_eq!(ids(&ok(s.catalogue_get("/series?slug=weekly-crypto"))), vec!["1"]);
    assert_eq!(ids(&ok(s.catalogue_get("/series?recurrence=annual"))), vec!["2"]);
    assert_eq!(ids(&ok(s.catalogue_get("/series?order=start_date&ascending=true"))), vec!["2", "1"]);
    assert_eq!(ids(&ok(s.catalogue_get("/series?order=start_date"))), vec!["1", "2"]);
    assert_eq!(ids(&ok(s.catalogue_get("/series?limit=1&offset=1&order=created_at&ascending=true"))), vec!["2"]);
    assert_eq!(ok(s.catalogue_get("/series?limit=500")).as_array().unwrap().len(), 2);
    assert_eq!(err(s.catalogue_get("/series?limit=501")), (400, "limit must be an integer between 0 and 500".into()));
    assert_eq!(err(s.catalogue_get("/series?offset=-1")).0, 400);
    assert_eq!(err(s.catalogue_get("/series?order=name")).0, 400);
    let one = ok(s.catalogue_get("/series/1"));
    assert_eq!((one["seriesType"].clone(), one["recurrence"].clone()), (json!("single"), json!("weekly")));
}

#[test]
fn bad_catalogue_writes_are_refused_and_change_nothing() {
    let s = Server::start();
    seed(&s);
    let before = ok(s.catalogue_get("/events"));
    let refused = [
        ("/internal/events", json!({"title": "Again", "slug": "btc-weekly"}), 409),
        ("/internal/events", json!({"title": "Orphan", "series_id": 42}), 400),
        ("/internal/events", json!({"title": "Taken", "markets": [{"condition_id": COND}]}), 400),
        ("/internal/events", json!({"title": "Unknown market", "markets": [{"condition_id": "0xdead"}]}), 400),
        ("/internal/events", json!({"title": "Bad date", "end_date": "next tuesday"}), 400),
        ("/internal/events", json!({"title": ""}), 400),
        ("/internal/events", json!({"title": "Extra", "colour": "red"}), 400),
        ("/internal/series", json!({"title": "Weekly Crypto", "slug": "weekly-crypto"}), 409),
        ("/internal/series", json!({"title": "Bad slug", "slug": "Not A Slug"}), 400),
    ];
    for (path, body, status) in refused {
        let (st, b) = s.internal_post(path, &body);
        assert_eq!(st, status, "{body}: {b}");
        assert!(b["error"].is_string(), "{b}");
    }
    assert_eq!(ok(s.catalogue_get("/events")), before);
    assert_eq!(ok(s.catalogue_get("/markets?condition_ids=0xdead")), json!([]));
}

#[test]
fn pages_of_events_cover_every_event_once() {
    let s = Server::start();
    for i in 0..23 {
        ok(s.internal_post("/internal/events", &json!({"title": format!("Event number {i}")})));
    }
    let mut seen = Vec::new();
    for offset in (0..30).step_by(7) {
        seen.extend(ids(&ok(s.catalogue_get(&format!("/events?limit=7&offset={offset}")))));
    }
    let want: Vec<String> = (1..=23).map(|i| i.to_string()).collect();
    assert_eq!(seen, want);
    // Default page: 25; ordered by volume (all equal), ties by id.
    assert_eq!(ids(&ok(s.catalogue_get("/events?order=volume"))), want);
}

#[test]
fn volume_and_liquidity_follow_the_trades_and_the_book() {
    let s = Server::start();
    seed(&s);
    let buyer = s.trader(m("100"));
    let seller = s.trader(0);
    s.credit(&seller.address, YES, m("50"));
    seller.place(&s, YES, "SELL", "0.40", "20");
    buyer.place(&s, YES, "BUY", "0.40", "10");
    buyer.place(&s, YES, "BUY", "0.30", "10");
    let mk = ok(s.catalogue_get("/markets/slug/will-it"));
    // Volume: 10 × 0.40; liquidity: asks 10 × 0.40 + bids 10 × 0.30.
    assert_eq!((mk["volume"].clone(), mk["volumeNum"].clone()), (json!("4"), json!(4)));
    assert_eq!((mk["liquidity"].clone(), mk["liquidityNum"].clone()), (json!("7"), json!(7)));
    assert_eq!(
        (mk["bestBid"].clone(), mk["bestAsk"].clone(), mk["lastTradePrice"].clone()),
        (json!(0.3), json!(0.4), json!(0.4))
    );
    let prices: Vec<String> = serde_json::from_str(mk["outcomePrices"].as_str().unwrap()).unwrap();
    assert_eq!(prices, vec!["0.35", "0.65"]);
    let e = ok(s.catalogue_get("/events/1"));
    assert_eq!((e["volume"].clone(), e["liquidity"].clone()), (json!(4), json!(7)));
    assert_eq!(ok(s.catalogue_get("/series/1"))["volume"], json!(4));
    // Order by volume puts the traded event first.
    assert_eq!(ids(&ok(s.catalogue_get("/events?order=volume")))[0], "1");

    // Resolution metadata.
    let r = ok(
        s.internal_post("/internal/resolution", &json!({"condition_id": COND, "status": "RESOLVED", "outcome": "Yes"}))
    );
    assert_eq!((r["resolutionStatus"].clone(), r["resolvedOutcome"].clone()), (json!("RESOLVED"), json!("Yes")));
    let prices: Vec<String> = serde_json::from_str(r["outcomePrices"].as_str().unwrap()).unwrap();
    assert_eq!(prices, vec!["1", "0"]);
    assert_eq!(s.internal_post("/internal/resolution", &json!({"condition_id": COND, "status": "RESOLVED"})).0, 400);
}

#[test]
fn comments_page_newest_first_and_search_ranks_matches() {
    let s = Server::start();
    seed(&s);
    let user = Trader::new();
    for i in 0..5 {
        ok(s.internal_post(
            "/internal/comments",
            &json!({"parent_entity_type": "Event", "parent_entity_id": 1, "body": format!("comment {i}"), "user_address": user.address}),
        ));
    }
    let c = ok(s.internal_post(
        "/internal/comments",
        &json!({"parent_entity_type": "market", "parent_entity_id": "0xbeef", "body": "on a market", "user_address": user.address}),
    ));
    assert_eq!(c["parentEntityType"], "market");
    let page = ok(s.catalogue_get("/comments?parent_entity_type=Event&parent_entity_id=1&limit=2&offset=1"));
    let bodies: Vec<&str> = page.as_array().unwrap().iter().map(|c| c["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, vec!["comment 3", "comment 2"]);
    let asc = ok(s.catalogue_get("/comments?parent_entity_type=Event&parent_entity_id=1&ascending=true&limit=1"));
    assert_eq!(asc[0]["body"], "comment 0");
    assert_eq!(asc[0]["userAddress"], user.address.as_str());
    let on_market =
        ok(s.catalogue_get(&format!("/comments?parent_entity_type=market&parent_entity_id={}", c["parentEntityID"])));
    assert_eq!(on_market.as_array().unwrap().len(), 1);
    assert_eq!(err(s.catalogue_get("/comments?parent_entity_type=Event")).0, 400);
    assert_eq!(err(s.catalogue_get("/comments?parent_entity_type=Blog&parent_entity_id=1")).0, 400);
    assert_eq!(
        err(s.catalogue_get("/comments?parent_entity_type=Event&parent_entity_id=9")),
        (404, "event not found".into())
    );
    let bad = s.internal_post(
        "/internal/comments",
        &json!({"parent_entity_type": "Event", "parent_entity_id": 1, "body": " ", "user_address": user.address}),
    );
    assert_eq!(bad.0, 400);

    // Search: title and slug, case-insensitive, best match first.
    let r = ok(s.catalogue_get("/public-search?q=ETH"));
    let titles: Vec<&str> = r["events"].as_array().unwrap().iter().map(|e| e["title"].as_str().unwrap()).collect();
    assert_eq!(titles, vec!["Ethereum ETF"], "prefix of a title word");
    let markets: Vec<&str> = r["markets"].as_array().unwrap().iter().map(|m| m["slug"].as_str().unwrap()).collect();
    assert_eq!(markets, vec!["eth-flip", "eth-etf-stake"], "same score: by id");
    let r = ok(s.catalogue_get("/public-search?q=crypto&limit_per_type=1"));
    assert_eq!(r["series"][0]["slug"], "weekly-crypto");
    assert_eq!(r["pagination"]["totalResults"], 1);
    assert_eq!(err(s.catalogue_get("/public-search")), (400, "q is required".into()));
    assert_eq!(err(s.catalogue_get("/public-search?q=x&limit_per_type=101")).0, 400);
}

#[test]
fn the_catalogue_survives_a_restart() {
    let s = Server::start();
    seed(&s);
    let before = ok(s.catalogue_get("/events"));
    let (config, dir) = s.stop();
    let s = Server::start_with(config);
    assert_eq!(ok(s.catalogue_get("/events")), before);
    // Ids continue after the stored ones.
    assert_eq!(ok(s.internal_post("/internal/events", &json!({"title": "After restart"})))["id"], "4");
    drop(dir);
}

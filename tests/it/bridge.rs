//! The bridge server ({bridge_url}): supported assets and quotes from data/bridge-assets.json;
//! deposits and withdrawals in ledger mode.

use serde_json::{json, Value};

use crate::support::*;

const ETH_USDC: &str = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
const POLY_USDC: &str = "0x2791bca1f2de4661ed88a30c99a7a9449aa84174";
const ETH: &str = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
const BASE_USDC: &str = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";

fn server() -> Server {
    Server::start_tuned(|c| c.catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/data/markets.json").into())
}

fn quote(amount: &str, from_chain: &str, from: &str, to_chain: &str, to: &str) -> Value {
    json!({"fromAmountBaseUnit": amount, "fromChainId": from_chain, "fromTokenAddress": from,
        "recipientAddress": "0x000000000000000000000000000000000000dEaD", "toChainId": to_chain, "toTokenAddress": to})
}

#[test]
fn supported_assets_and_quotes_follow_the_asset_table() {
    let s = server();
    let (st, a) = s.bridge_get("/supported-assets");
    assert_eq!(st, 200, "{a}");
    let list = a["supportedAssets"].as_array().unwrap();
    assert_eq!(list.len(), 5);
    assert_eq!(list[0]["chainId"], "137");
    assert_eq!(
        list[0]["token"],
        json!({"name": "USD Coin (PoS)", "symbol": "USDC.e", "address": POLY_USDC, "decimals": 6})
    );
    assert_eq!(list[1]["minCheckoutUsd"], json!(10));
    assert!(a["note"].as_str().unwrap().contains("minimum"));

    // 100 USDC from Ethereum: 0.1% app fee, 0.05% fill cost, 2.5 USD gas, no swap.
    let (st, q) = s.bridge_post("/quote", &quote("100000000", "1", ETH_USDC, "137", POLY_USDC));
    assert_eq!(st, 200, "{q}");
    let f = &q["estFeeBreakdown"];
    assert_eq!((q["estInputUsd"].clone(), q["estOutputUsd"].clone()), (json!(100), json!(97.35)));
    assert_eq!(q["estToTokenBaseUnit"], "97350000");
    assert_eq!((f["appFeePercent"].clone(), f["appFeeUsd"].clone()), (json!(0.1), json!(0.1)));
    assert_eq!(
        (f["fillCostPercent"].clone(), f["fillCostUsd"].clone(), f["gasUsd"].clone()),
        (json!(0.05), json!(0.05), json!(2.5))
    );
    assert_eq!((f["swapImpact"].clone(), f["swapImpactUsd"].clone()), (json!(0), json!(0)));
    assert_eq!((f["totalImpact"].clone(), f["totalImpactUsd"].clone()), (json!(2.65), json!(2.65)));
    assert_eq!((f["maxSlippage"].clone(), f["minReceived"].clone()), (json!(0.5), json!(96.86325)));
    assert_eq!(f["appFeeLabel"], "predex bridge fee");
    assert_eq!(q["estCheckoutTimeMs"], 45000);
    assert_eq!(q["quoteId"].as_str().unwrap().len(), 36);

    // 0.01 ETH at 3000 USD: a 0.3% swap impact on top.
    let (st, q) = s.bridge_post("/quote", &quote("10000000000000000", "1", ETH, "137", POLY_USDC));
    assert_eq!(st, 200, "{q}");
    assert_eq!((q["estInputUsd"].clone(), q["estFeeBreakdown"]["swapImpactUsd"].clone()), (json!(30), json!(0.09)));
    assert_eq!(q["estToTokenBaseUnit"], "27365000");
    // A withdrawal: Polygon USDC.e out to Base.
    let (st, q) = s.bridge_post(
        "/quote",
        &quote("50000000", "137", POLY_USDC, "8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"),
    );
    assert_eq!(st, 200, "{q}");
    assert_eq!(q["estOutputUsd"], json!(49.915));
    // The same asset both sides: a plain move, fees and gas only.
    let (st, q) = s.bridge_post("/quote", &quote("100000000", "137", POLY_USDC, "137", POLY_USDC));
    assert_eq!((st, q["estToTokenBaseUnit"].clone()), (200, json!("99840000")), "{q}");

    let refused = [
        (
            quote("5000000", "1", ETH_USDC, "137", POLY_USDC),
            "amount is below the minimum checkout of 10 USD for USDC on Ethereum",
        ),
        (quote("1.5", "1", ETH_USDC, "137", POLY_USDC), "fromAmountBaseUnit must be a positive integer string"),
        (quote("0", "1", ETH_USDC, "137", POLY_USDC), "fromAmountBaseUnit must be a positive integer string"),
        (
            quote("100000000", "10", ETH_USDC, "137", POLY_USDC),
            "unsupported source chain and token (see /supported-assets)",
        ),
        (
            quote("100000000", "1", ETH_USDC, "137", ETH),
            "unsupported destination chain and token (see /supported-assets)",
        ),
    ];
    for (body, msg) in refused {
        assert_eq!(err(s.bridge_post("/quote", &body)), (400, msg.to_string()), "{body}");
    }
    let mut bad = quote("100000000", "1", ETH_USDC, "137", POLY_USDC);
    bad["recipientAddress"] = json!("nobody");
    assert_eq!(err(s.bridge_post("/quote", &bad)), (400, "recipientAddress must be a 0x address".into()));
    bad.as_object_mut().unwrap().remove("toChainId");
    let (st, m) = err(s.bridge_post("/quote", &bad));
    assert_eq!(st, 400);
    assert!(m.contains("missing field `toChainId`"), "{m}");
    let mut num = quote("100000000", "1", ETH_USDC, "137", POLY_USDC);
    num["fromChainId"] = json!(1);
    assert_eq!(err(s.bridge_post("/quote", &num)).0, 400, "ids are strings");
}

#[test]
fn without_an_asset_table_the_bridge_says_so() {
    let s = Server::start();
    assert_eq!(err(s.bridge_get("/supported-assets")), (503, "bridge is not configured".into()));
    assert_eq!(err(s.bridge_get("/nothing-here")).0, 404);
}

fn arrival(to: &str, chain: &str, token: &str, amount: &str, tx: &str) -> Value {
    json!({"depositAddress": to, "fromChainId": chain, "fromTokenAddress": token, "fromAmountBaseUnit": amount, "txHash": tx})
}

fn status(s: &Server, address: &str) -> Vec<Value> {
    let (st, b) = s.bridge_get(&format!("/status/{address}"));
    assert_eq!(st, 200, "{b}");
    b["transactions"].as_array().unwrap().clone()
}

#[test]
fn deposits_get_addresses_per_wallet_and_are_credited_once_confirmed() {
    let s = server();
    let t = s.trader(0);
    let d = each_wallet_has_its_own_deposit_addresses_every_time(&s, &t);
    let rec = a_reported_arrival_is_priced_like_the_quote_and_credited_net(&s, &t, &d.evm);
    a_repeated_report_credits_nothing_and_a_different_one_is_refused(&s, &t, &d.evm, &rec);
    below_the_minimum_an_arrival_is_recorded_failed(&s, &t, &d.evm);
    refused_reports_change_nothing(&s, &t, &d);
    the_status_is_by_deposit_address_and_by_wallet_newest_first(&s, &t, &d, &rec);
    s.check();
}

/// A wallet's deposit addresses on each kind of chain.
struct DepositAddresses {
    evm: String,
    svm: String,
    btc: String,
}

/// The same addresses every time; another wallet's differ.
fn each_wallet_has_its_own_deposit_addresses_every_time(s: &Server, t: &Trader) -> DepositAddresses {
    let (st, d) = s.bridge_post("/deposit", &json!({"address": t.address}));
    assert_eq!(st, 201, "{d}");
    let (evm, svm, btc) = (
        d["address"]["evm"].as_str().unwrap().to_string(),
        d["address"]["svm"].as_str().unwrap().to_string(),
        d["address"]["btc"].as_str().unwrap().to_string(),
    );
    assert!(evm.starts_with("0x") && evm.len() == 42 && evm != evm.to_lowercase(), "checksummed: {evm}");
    assert!(btc.starts_with("bc1q") && !svm.is_empty(), "{d}");
    assert!(d["note"].as_str().unwrap().contains("credited"));
    // The same addresses every time; another wallet's differ.
    assert_eq!(
        s.bridge_post("/deposit", &json!({"address": t.address.to_uppercase().replace("0X", "0x")})),
        (201, d.clone())
    );
    let other = s.bridge_post("/deposit", &json!({"address": "0x000000000000000000000000000000000000dEaD"})).1;
    assert_ne!(other["address"]["evm"], d["address"]["evm"]);
    assert_eq!(
        err(s.bridge_post("/deposit", &json!({"address": "nobody"}))),
        (400, "address must be a 0x address".into())
    );
    assert_eq!(err(s.bridge_post("/deposit", &json!({}))).0, 400);
    assert!(status(s, &evm).is_empty(), "nothing arrived yet");
    DepositAddresses { evm, svm, btc }
}

/// The operator reports 100 USDC from Ethereum; the wallet trades with it at once.
fn a_reported_arrival_is_priced_like_the_quote_and_credited_net(s: &Server, t: &Trader, evm: &str) -> Value {
    let (st, rec) = s.internal_post("/internal/bridge/deposits", &arrival(evm, "1", ETH_USDC, "100000000", "0xaa01"));
    assert_eq!(st, 201, "{rec}");
    assert_eq!(
        (rec["type"].clone(), rec["status"].clone(), rec["address"].clone()),
        (json!("DEPOSIT"), json!("COMPLETED"), json!(t.address))
    );
    assert_eq!(
        (rec["fromAmountBaseUnit"].clone(), rec["toAmountBaseUnit"].clone()),
        (json!("100000000"), json!("97350000"))
    );
    assert_eq!((rec["toChainId"].clone(), rec["toTokenAddress"].clone()), (json!("137"), json!(POLY_USDC)));
    assert_eq!((rec["txHash"].clone(), rec["bridgeAddress"].clone()), (json!("0xaa01"), json!(evm.to_lowercase())));
    assert_eq!(t.balance(s, "USDC"), 97_350_000);
    // The wallet trades with it at once.
    assert_eq!(t.place(s, YES, "BUY", "0.50", "10")["status"], "LIVE");
    rec
}

fn a_repeated_report_credits_nothing_and_a_different_one_is_refused(s: &Server, t: &Trader, evm: &str, rec: &Value) {
    assert_eq!(
        s.internal_post("/internal/bridge/deposits", &arrival(evm, "1", ETH_USDC, "100000000", "0xAA01")),
        (200, rec.clone())
    );
    assert_eq!(
        err(s.internal_post("/internal/bridge/deposits", &arrival(evm, "1", ETH_USDC, "200000000", "0xaa01"))),
        (409, "transaction 0xaa01 on chain 1 is already recorded with other details".into())
    );
    assert_eq!(t.balance(s, "USDC"), 97_350_000);
}

/// Below the source's minimum: recorded FAILED, nothing credited.
fn below_the_minimum_an_arrival_is_recorded_failed(s: &Server, t: &Trader, evm: &str) {
    let (st, failed) = s.internal_post("/internal/bridge/deposits", &arrival(evm, "1", ETH_USDC, "5000000", "0xaa02"));
    assert_eq!((st, failed["status"].clone()), (201, json!("FAILED")), "{failed}");
    assert_eq!(failed["reason"], "amount is below the minimum checkout of 10 USD for USDC on Ethereum");
    assert_eq!(failed["toAmountBaseUnit"], "0");
    assert_eq!(t.balance(s, "USDC"), 97_350_000);
}

fn refused_reports_change_nothing(s: &Server, t: &Trader, d: &DepositAddresses) {
    let (evm, svm) = (d.evm.as_str(), d.svm.as_str());
    let refused = [
        (
            arrival("0x000000000000000000000000000000000000bEEF", "1", ETH_USDC, "100000000", "0x1"),
            404,
            "unknown deposit address",
        ),
        (arrival("nobody", "1", ETH_USDC, "100000000", "0x1"), 404, "unknown deposit address"),
        (arrival(svm, "1", ETH_USDC, "100000000", "0x1"), 400, "the deposit address is not an address on Ethereum"),
        (
            arrival(evm, "10", ETH_USDC, "100000000", "0x1"),
            400,
            "unsupported source chain and token (see /supported-assets)",
        ),
        (arrival(evm, "1", ETH_USDC, "-5", "0x1"), 400, "fromAmountBaseUnit must be a positive integer string"),
        (arrival(evm, "1", ETH_USDC, "100000000", " "), 400, "txHash is required"),
    ];
    for (body, code, msg) in refused {
        assert_eq!(err(s.internal_post("/internal/bridge/deposits", &body)), (code, msg.to_string()), "{body}");
    }
    assert_eq!(t.balance(s, "USDC"), 97_350_000);
}

/// Empty for the other addresses.
fn the_status_is_by_deposit_address_and_by_wallet_newest_first(
    s: &Server,
    t: &Trader,
    d: &DepositAddresses,
    rec: &Value,
) {
    let (evm, svm, btc) = (d.evm.as_str(), d.svm.as_str(), d.btc.as_str());
    let by_address = status(s, evm);
    assert_eq!(
        by_address.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(),
        vec![json!("FAILED"), json!("COMPLETED")]
    );
    assert_eq!(&by_address[1], rec);
    assert_eq!(status(s, &t.address), by_address);
    assert!(status(s, svm).is_empty() && status(s, btc).is_empty());
    assert_eq!(err(s.bridge_get("/status/nobody")), (400, "address must be an EVM, Solana or Bitcoin address".into()));
}

#[test]
fn withdrawals_debit_at_once_and_the_operator_completes_or_refunds_them() {
    let s = server();
    let t = s.trader(m("100"));
    let stranger = s.trader(m("100"));
    t.place(&s, YES, "BUY", "0.50", "10"); // holds 5 USDC
    refused_withdrawals_change_nothing(&s, &t, &stranger);
    let first = withdrawals_are_debited_at_once_with_a_bridge_address_per_destination(&s, &t);
    let done = the_operator_completes_one_and_failing_the_other_refunds_it(&s, &t);
    let mine = the_status_is_by_wallet_and_by_a_destinations_bridge_address(&s, &t, &stranger, &first, &done);
    s.check();
    everything_survives_a_restart_and_numbering_goes_on(s, &t, &first, &mine);
}

const DEST: &str = "0x000000000000000000000000000000000000dEaD";

/// A withdrawal's body for `t`'s own wallet.
fn withdrawal(t: &Trader, amount: &str, chain: &str, token: &str, to: &str) -> Value {
    json!({"address": t.address, "toChainId": chain, "toTokenAddress": token, "recipientAddr": to, "fromAmountBaseUnit": amount})
}

fn refused_withdrawals_change_nothing(s: &Server, t: &Trader, stranger: &Trader) {
    let dest = DEST;
    assert_eq!(
        err(s.bridge_post("/withdraw", &withdrawal(t, "50000000", "8453", BASE_USDC, dest))),
        (401, "L2 authentication failure".into())
    );
    assert_eq!(
        err(stranger.l2_at(&s.bridge, "POST", "/withdraw", Some(&withdrawal(t, "50000000", "8453", BASE_USDC, dest)))),
        (400, "the withdrawal address has to be the owner of the API KEY".into())
    );
    let refused = [
        (withdrawal(t, "96000000", "8453", BASE_USDC, dest), "not enough balance / allowance"),
        (
            withdrawal(t, "1000000", "8453", BASE_USDC, dest),
            "amount is below the minimum checkout of 2 USD for USDC.e on Polygon",
        ),
        (
            withdrawal(t, "50000000", "8453", ETH_USDC, dest),
            "unsupported destination chain and token (see /supported-assets)",
        ),
        (
            withdrawal(t, "50000000", "8453", BASE_USDC, "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"),
            "recipientAddr must be an address on Base",
        ),
        (withdrawal(t, "0", "8453", BASE_USDC, dest), "fromAmountBaseUnit must be a positive integer string"),
    ];
    for (body, msg) in refused {
        assert_eq!(err(t.l2_at(&s.bridge, "POST", "/withdraw", Some(&body))), (400, msg.to_string()), "{body}");
    }
    assert_eq!((t.balance(s, "USDC"), t.available(s, "USDC")), (m("100"), m("95")));
}

/// 50 USDC to Base, then 20 USDC.e on Polygon itself: debited at once, PROCESSING, the
/// output priced like a quote; what open orders hold cannot leave. Returns the first.
fn withdrawals_are_debited_at_once_with_a_bridge_address_per_destination(s: &Server, t: &Trader) -> Value {
    let dest = DEST;
    let (st, first) =
        t.l2_at(&s.bridge, "POST", "/withdraw", Some(&withdrawal(t, "50000000", "8453", BASE_USDC, dest)));
    assert_eq!(st, 201, "{first}");
    let tx = &first["transaction"];
    assert_eq!(
        (tx["id"].clone(), tx["type"].clone(), tx["status"].clone()),
        (json!("1"), json!("WITHDRAWAL"), json!("PROCESSING"))
    );
    assert_eq!((tx["fromChainId"].clone(), tx["fromTokenAddress"].clone()), (json!("137"), json!(POLY_USDC)));
    assert_eq!(
        (tx["toAmountBaseUnit"].clone(), tx["recipientAddr"].clone()),
        (json!("49915000"), json!(dest.to_lowercase()))
    );
    assert_eq!(tx["bridgeAddress"], first["address"]["evm"].as_str().unwrap().to_lowercase());
    assert_eq!((t.balance(s, "USDC"), t.available(s, "USDC")), (m("50"), m("45")));
    // 20 USDC.e out on Polygon itself.
    let (st, second) =
        t.l2_at(&s.bridge, "POST", "/withdraw", Some(&withdrawal(t, "20000000", "137", POLY_USDC, dest)));
    assert_eq!((st, second["transaction"]["toAmountBaseUnit"].clone()), (201, json!("19960000")), "{second}");
    assert_ne!(second["address"], first["address"], "one bridge address per destination");
    assert_eq!(t.balance(s, "USDC"), m("30"));
    // What open orders hold cannot leave.
    assert_eq!(
        err(t.l2_at(&s.bridge, "POST", "/withdraw", Some(&withdrawal(t, "26000000", "137", POLY_USDC, dest)))),
        (400, "not enough balance / allowance".into())
    );
    first
}

/// The queue is oldest first; a withdrawal completes with its hash, once. Returns the
/// completed one.
fn the_operator_completes_one_and_failing_the_other_refunds_it(s: &Server, t: &Trader) -> Value {
    let (_, open) = s.internal_get("/internal/bridge/withdrawals");
    let ids: Vec<_> = open.as_array().unwrap().iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, vec![json!("1"), json!("2")]);

    assert_eq!(
        err(s.internal_post("/internal/bridge/withdrawals/1", &json!({"status": "COMPLETED"}))),
        (400, "txHash is required to complete a withdrawal".into())
    );
    assert_eq!(err(s.internal_post("/internal/bridge/withdrawals/1", &json!({"status": "PROCESSING"}))).0, 400);
    let (st, done) =
        s.internal_post("/internal/bridge/withdrawals/1", &json!({"status": "COMPLETED", "txHash": "0xbb01"}));
    assert_eq!(
        (st, done["status"].clone(), done["txHash"].clone()),
        (200, json!("COMPLETED"), json!("0xbb01")),
        "{done}"
    );
    assert_eq!(
        err(s.internal_post("/internal/bridge/withdrawals/1", &json!({"status": "FAILED"}))),
        (409, "withdrawal 1 is already COMPLETED".into())
    );
    assert_eq!(t.balance(s, "USDC"), m("30"));
    // Failing the second refunds it.
    let (st, back) =
        s.internal_post("/internal/bridge/withdrawals/2", &json!({"status": "FAILED", "reason": "destination paused"}));
    assert_eq!(
        (st, back["status"].clone(), back["reason"].clone()),
        (200, json!("FAILED"), json!("destination paused"))
    );
    assert_eq!(t.balance(s, "USDC"), m("50"));
    for missing in ["3", "x"] {
        assert_eq!(
            err(s.internal_post(&format!("/internal/bridge/withdrawals/{missing}"), &json!({"status": "FAILED"}))),
            (404, format!("withdrawal {missing} not found"))
        );
    }
    assert_eq!(s.internal_get("/internal/bridge/withdrawals").1, json!([]));
    done
}

/// By the wallet newest first; a destination's bridge address shows its own. Returns the
/// wallet's.
fn the_status_is_by_wallet_and_by_a_destinations_bridge_address(
    s: &Server,
    t: &Trader,
    stranger: &Trader,
    first: &Value,
    done: &Value,
) -> Vec<Value> {
    let mine = status(s, &t.address);
    assert_eq!(mine.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), vec![json!("FAILED"), json!("COMPLETED")]);
    assert_eq!(status(s, first["address"]["evm"].as_str().unwrap()), vec![done.clone()]);
    assert!(status(s, &stranger.address).is_empty());
    mine
}

fn everything_survives_a_restart_and_numbering_goes_on(s: Server, t: &Trader, first: &Value, mine: &[Value]) {
    let dest = DEST;
    let (cfg, _dir) = s.stop();
    let s = Server::start_with(cfg);
    assert_eq!(status(&s, &t.address), mine);
    assert_eq!(t.balance(&s, "USDC"), m("50"));
    let (st, third) =
        t.l2_at(&s.bridge, "POST", "/withdraw", Some(&withdrawal(t, "10000000", "8453", BASE_USDC, dest)));
    assert_eq!((st, third["transaction"]["id"].clone()), (201, json!("3")), "{third}");
    assert_eq!(third["address"], first["address"], "the same destination, the same bridge address");
    assert_eq!(status(&s, &t.address).len(), 3);
    s.check();
}

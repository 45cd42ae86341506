//! The bridge server ({bridge_url}): supported assets and quotes from data/bridge-assets.json.

use serde_json::{json, Value};

use crate::fixture::*;

const ETH_USDC: &str = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
const POLY_USDC: &str = "0x2791bca1f2de4661ed88a30c99a7a9449aa84174";
const ETH: &str = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";

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
        (quote("100000000", "137", POLY_USDC, "137", POLY_USDC), "source and destination are the same asset"),
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

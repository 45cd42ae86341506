//! The relayer (docs/reference/relay.md): a Safe's transactions run only as its owner signed
//! them, only toward the venue's contracts, once, and durably.

use alloy_primitives::{Address, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::{sol, SolCall};
use serde_json::{json, Value};

use crate::chain_wallets::multi_send;
use crate::support::*;

sol! {
    struct ProxyCall {
        uint8 typeCode;
        address to;
        uint256 value;
        bytes data;
    }
    function proxy(ProxyCall[] calls) returns (bytes[] returnValues);
    function splitPosition(address collateralToken, bytes32 parentCollectionId, bytes32 conditionId, uint256[] partition, uint256 amount);
    function incrementNonce();
    function mergePositions(address collateralToken, bytes32 parentCollectionId, bytes32 conditionId, uint256[] partition, uint256 amount);
    function redeemPositions(bytes32 conditionId, uint256[] amounts);
}

const USDC: Address = alloy_primitives::address!("2791Bca1f2de4661ED88A30C99A7a9449Aa84174");
const CTF: Address = alloy_primitives::address!("4D97DCd97eC945f40cF65F87097ACe5EA0476045");
const FACTORY: &str = "0xaacFeEa03eb1561C4e67d661e40682Bd20E3541b";
const EXCHANGE: Address = alloy_primitives::address!("4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E");
const PROXY_FACTORY: Address = alloy_primitives::address!("aB45c5A4B0c941a2F231C04C3f49182e1A254052");
const RELAY_HUB: Address = alloy_primitives::address!("D216153c06E857cD7f72665E0aF1d7D82172F494");
const ADAPTER: Address = alloy_primitives::address!("d91E80cF2E7be2e162c6513ceD06f1dD0dA35296");
const MULTISEND: Address = alloy_primitives::address!("A238CBeb142c10Ef7Ad8442C6D1f9E89e07e7761");

fn hex(b: &[u8]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(b))
}

/// The Safe deployment request `key` signs for `owner`'s Safe.
fn create_request(s: &Server, owner: &Trader, key: &PrivateKeySigner) -> Value {
    let hash = predex::auth::relay::create_proxy_hash(s.config.chain_id, FACTORY.parse().unwrap());
    json!({
        "type": "SAFE-CREATE", "from": owner.address, "to": FACTORY,
        "proxyWallet": format!("{:#x}", owner.derived(s, 2)), "data": "0x",
        "signature": hex(&key.sign_hash_sync(&hash).unwrap().as_bytes()),
        "signatureParams": {"paymentToken": Address::ZERO, "payment": "0", "paymentReceiver": Address::ZERO},
    })
}

/// A Safe transaction of `owner`'s Safe running `data` at `to` with `nonce`, signed by `key`
/// as the official client signs (eth_sign, v + 4).
fn safe_request(s: &Server, owner: &Trader, key: &PrivateKeySigner, to: Address, data: &[u8], nonce: u64) -> Value {
    safe_request_op(s, owner, key, to, data, nonce, 0)
}

/// [`safe_request`] with the Safe's `operation` (1: a delegatecall, MultiSend's).
pub(crate) fn safe_request_op(
    s: &Server,
    owner: &Trader,
    key: &PrivateKeySigner,
    to: Address,
    data: &[u8],
    nonce: u64,
    operation: u8,
) -> Value {
    let safe = owner.derived(s, 2);
    let hash = predex::auth::relay::safe_tx_hash(s.config.chain_id, safe, to, data, operation, U256::from(nonce));
    let mut sig = key.sign_message_sync(hash.as_slice()).unwrap().as_bytes();
    sig[64] += 4;
    json!({
        "type": "SAFE", "from": owner.address, "to": format!("{to:#x}"), "proxyWallet": format!("{safe:#x}"),
        "data": hex(data), "nonce": nonce.to_string(), "signature": hex(&sig),
        "signatureParams": {"gasPrice": "0", "operation": operation.to_string(), "safeTxnGas": "0", "baseGas": "0",
                            "gasToken": Address::ZERO, "refundReceiver": Address::ZERO},
    })
}

fn split(cond: &str, amount: u64, collateral: Address) -> Vec<u8> {
    splitPositionCall {
        collateralToken: collateral,
        parentCollectionId: Default::default(),
        conditionId: cond.parse().unwrap(),
        partition: vec![U256::from(1), U256::from(2)],
        amount: U256::from(amount),
    }
    .abi_encode()
}

fn merge(cond: &str, amount: u64) -> Vec<u8> {
    mergePositionsCall {
        collateralToken: USDC,
        parentCollectionId: Default::default(),
        conditionId: cond.parse().unwrap(),
        partition: vec![U256::from(1), U256::from(2)],
        amount: U256::from(amount),
    }
    .abi_encode()
}

#[test]
fn a_safe_runs_only_what_its_owner_signed_once_and_durably() {
    let s = Server::start();
    let cond = format!("0x{}", "c4".repeat(32));
    s.create_market(&cond, "4401", "4402", "0.01", false);
    let (owner, stranger) = (s.trader(0), s.trader(0));
    let safe = format!("{:#x}", owner.derived(&s, 2));
    s.credit(&safe, "USDC", m("50"));
    let submit = |t: &Trader, body: &Value| t.l2(&s, "POST", "/submit", Some(body));
    let nonce = || s.get(&format!("/nonce?address={}&type=SAFE", owner.address)).1["nonce"].clone();
    let deployed = || s.get(&format!("/deployed?address={safe}")).1["deployed"].clone();
    let held = |asset: &str| -> u64 {
        let b = s.internal_get(&format!("/internal/balances?address={safe}")).1;
        b[asset]["balance"].as_str().map_or(0, |x| predex::domain::parse_decimal(x, 6).unwrap())
    };

    // Not deployed: nothing runs. Deployed only by its owner's signature, once.
    let ten = split(&cond, m("10"), USDC);
    let early = safe_request(&s, &owner, &owner.wallet, CTF, &ten, 0);
    assert_eq!(err(submit(&owner, &early)), (400, "safe not deployed".into()));
    let forged = create_request(&s, &owner, &stranger.wallet);
    assert_eq!(err(submit(&owner, &forged)), (400, "invalid signature".into()));
    assert_eq!(deployed(), json!(false));
    let (st, created) = submit(&owner, &create_request(&s, &owner, &owner.wallet));
    assert_eq!((st, &created["state"]), (200, &json!("STATE_CONFIRMED")), "{created}");
    assert_eq!(deployed(), json!(true));
    assert_eq!(err(submit(&owner, &create_request(&s, &owner, &owner.wallet))), (400, "safe already deployed".into()));

    // The attacks: another key's signature, a nonce not the Safe's, someone else's key
    // sending the owner's signed transaction, gas refunds, a collateral not the venue's,
    // no credentials. Each changes nothing.
    let attacks = [
        (&owner, safe_request(&s, &owner, &stranger.wallet, CTF, &ten, 0), "invalid signature"),
        (&owner, safe_request(&s, &owner, &owner.wallet, CTF, &ten, 1), "invalid nonce: the wallet's nonce is 0"),
        (
            &stranger,
            safe_request(&s, &owner, &owner.wallet, CTF, &ten, 0),
            "the signer has to be the owner of the API KEY",
        ),
        (
            &owner,
            {
                let mut r = safe_request(&s, &owner, &owner.wallet, CTF, &ten, 0);
                r["signatureParams"]["gasPrice"] = json!("1");
                r
            },
            "the relayer pays the gas: gas fields must be zero",
        ),
        (
            &owner,
            safe_request(&s, &owner, &owner.wallet, CTF, &split(&cond, m("10"), Address::repeat_byte(7)), 0),
            "call not allowed",
        ),
        (&owner, safe_request(&s, &owner, &owner.wallet, Address::repeat_byte(7), &ten, 0), "call not allowed"),
        (
            &owner,
            {
                let mut r = safe_request(&s, &owner, &owner.wallet, CTF, &ten, 0);
                r["metadata"] = json!("m".repeat(501));
                r
            },
            "metadata longer than 500 bytes",
        ),
        (
            &owner,
            {
                let mut r = safe_request(&s, &owner, &owner.wallet, CTF, &ten, 0);
                r["signatureParams"]["operation"] = json!("1");
                r
            },
            "call not allowed",
        ),
    ];
    for (who, body, why) in attacks {
        assert_eq!(err(submit(who, &body)), (400, why.into()), "{body}");
    }
    assert_eq!(s.post("/submit", &safe_request(&s, &owner, &owner.wallet, CTF, &ten, 0)).0, 401);
    assert_eq!((nonce(), held("USDC"), held("4401")), (json!("0"), m("50"), 0));

    // The owner's split runs once: the same signed transaction again is a stale nonce.
    let good = safe_request(&s, &owner, &owner.wallet, CTF, &ten, 0);
    let (st, done) = submit(&owner, &good);
    assert_eq!((st, &done["state"]), (200, &json!("STATE_CONFIRMED")), "{done}");
    assert_eq!(err(submit(&owner, &good)), (400, "invalid nonce: the wallet's nonce is 1".into()));
    assert_eq!((nonce(), held("USDC"), held("4401"), held("4402")), (json!("1"), m("40"), m("10"), m("10")));

    // A merge of more than the Safe holds fails as a reverted transaction: recorded, the
    // nonce unused, nothing moved.
    let (st, failed) = submit(&owner, &safe_request(&s, &owner, &owner.wallet, CTF, &merge(&cond, m("20")), 1));
    assert_eq!((st, &failed["state"]), (200, &json!("STATE_FAILED")), "{failed}");
    let id = failed["transactionID"].as_str().unwrap().to_string();
    let record = s.get(&format!("/transaction?id={id}")).1;
    assert_eq!(record[0]["errorMsg"], "not enough balance / allowance", "{record}");
    assert_eq!((nonce(), held("USDC"), held("4401")), (json!("1"), m("40"), m("10")));
    assert_eq!(s.get(&format!("/transaction?id={}", uuid::Uuid::new_v4())).1, json!([]));
    assert_eq!(err(s.get("/transaction?id=nope")), (400, "invalid id".into()));

    // The Safe's order, then the exchange's incrementNonce from the Safe: the order is
    // cancelled with the transaction.
    let ask = owner.signed("4401", "SELL", m("5"), m("2.5")).maker(owner.derived(&s, 2), 2).sign(&s);
    let (st, placed) = owner.submit(&s, ask, "GTC");
    assert_eq!((st, &placed["status"]), (200, &json!("LIVE")), "{placed}");
    let order = placed["orderID"].as_str().unwrap().to_string();
    let bump = incrementNonceCall {}.abi_encode();
    let (st, bumped) = submit(&owner, &safe_request(&s, &owner, &owner.wallet, EXCHANGE, &bump, 1));
    assert_eq!((st, &bumped["state"]), (200, &json!("STATE_CONFIRMED")), "{bumped}");
    assert_eq!(owner.l2(&s, "GET", &format!("/data/order/{order}"), None).1["status"], "CANCELED");
    assert_eq!(nonce(), json!("2"));

    // Durable: after a restart the records, the nonce and the deployment are there.
    let (cfg, _dir) = s.stop();
    let s = Server::start_with(cfg);
    let (st, mine) = owner.l2(&s, "GET", "/transactions", None);
    assert_eq!(st, 200, "{mine}");
    let states: Vec<_> = mine.as_array().unwrap().iter().map(|t| (t["type"].clone(), t["state"].clone())).collect();
    assert_eq!(
        states,
        [
            (json!("SAFE"), json!("STATE_CONFIRMED")),
            (json!("SAFE"), json!("STATE_FAILED")),
            (json!("SAFE"), json!("STATE_CONFIRMED")),
            (json!("SAFE-CREATE"), json!("STATE_CONFIRMED"))
        ]
    );
    assert_eq!(mine[2]["transactionHash"], done["transactionHash"]);
    assert_eq!(s.get(&format!("/nonce?address={}&type=SAFE", owner.address)).1["nonce"], "2");
    assert_eq!(s.get(&format!("/deployed?address={safe}")).1["deployed"], true);
    assert_eq!(stranger.l2(&s, "GET", "/transactions", None).1, json!([]), "none of the stranger's");
    assert_eq!(s.get("/transactions").0, 401);
    assert_eq!(err(s.get("/nonce?address=0x12&type=SAFE")), (400, "invalid address".into()));
    s.check();
}

/// The negative-risk adapter's redemption through the relayer redeems the amounts the
/// call gives (YES, NO), not everything held: the winners pay one unit each; more than the
/// Safe holds fails as a reverted transaction, nothing moved; a call not of two amounts is
/// not relayed.
#[test]
fn the_adapters_redemption_redeems_the_amounts_it_is_given() {
    let s = Server::start();
    let cond = format!("0x{}", "c5".repeat(32));
    s.create_market(&cond, "4501", "4502", "0.01", true);
    let owner = s.trader(0);
    let safe = format!("{:#x}", owner.derived(&s, 2));
    s.credit(&safe, "USDC", m("50"));
    let submit = |body: &Value| owner.l2(&s, "POST", "/submit", Some(body));
    let held = |asset: &str| -> u64 {
        let b = s.internal_get(&format!("/internal/balances?address={safe}")).1;
        b[asset]["balance"].as_str().map_or(0, |x| predex::domain::parse_decimal(x, 6).unwrap())
    };
    let safe_tx = |to: Address, data: &[u8], nonce: u64| safe_request(&s, &owner, &owner.wallet, to, data, nonce);
    let redeem = |yes: u64, no: u64| {
        redeemPositionsCall { conditionId: cond.parse().unwrap(), amounts: vec![U256::from(yes), U256::from(no)] }
            .abi_encode()
    };
    assert_eq!(submit(&create_request(&s, &owner, &owner.wallet)).0, 200);
    let (st, b) = submit(&safe_tx(CTF, &split(&cond, m("10"), USDC), 0));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_CONFIRMED")), "{b}");
    let (st, b) =
        s.internal_post("/internal/resolution", &json!({"condition_id": cond, "status": "RESOLVED", "outcome": "Yes"}));
    assert_eq!(st, 200, "{b}");

    let (st, b) = submit(&safe_tx(ADAPTER, &redeem(m("4"), m("1")), 1));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_CONFIRMED")), "{b}");
    assert_eq!((held("USDC"), held("4501"), held("4502")), (m("44"), m("6"), m("9")));
    let (st, b) = submit(&safe_tx(ADAPTER, &redeem(m("7"), 0), 2));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_FAILED")), "{b}");
    let three = redeemPositionsCall { conditionId: cond.parse().unwrap(), amounts: vec![U256::from(1); 3] };
    assert_eq!(err(submit(&safe_tx(ADAPTER, &three.abi_encode(), 2))), (400, "call not allowed".into()));
    assert_eq!((held("USDC"), held("4501"), held("4502")), (m("44"), m("6"), m("9")));
    let (st, b) = submit(&safe_tx(ADAPTER, &redeem(m("6"), m("9")), 2));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_CONFIRMED")), "{b}");
    assert_eq!((held("USDC"), held("4501"), held("4502")), (m("50"), 0, 0));
    s.check();
}

#[test]
fn a_safe_cancels_only_its_own_open_orders_on_the_exchange() {
    use predex::chain::IExchange::{cancelOrderCall, cancelOrdersCall};
    let s = Server::start();
    let cond = format!("0x{}", "c6".repeat(32));
    s.create_market(&cond, "4601", "4602", "0.01", false);
    let (owner, other) = (s.trader(0), s.trader(0));
    let safe = format!("{:#x}", owner.derived(&s, 2));
    s.credit(&safe, "USDC", m("10"));
    s.credit(&other.address, "USDC", m("10"));
    let submit = |body: &Value| owner.l2(&s, "POST", "/submit", Some(body));
    let safe_tx = |to: Address, data: &[u8], nonce: u64| safe_request(&s, &owner, &owner.wallet, to, data, nonce);
    let status = |t: &Trader, id: &str| t.l2(&s, "GET", &format!("/data/order/{id}"), None).1["status"].clone();
    let available = || s.internal_get(&format!("/internal/balances?address={safe}")).1["USDC"]["available"].clone();
    assert_eq!(submit(&create_request(&s, &owner, &owner.wallet)).0, 200);

    // Two bids of the Safe (2.5 USDC each held for them) and one of another trader.
    let bid = |t: &Trader, maker: Option<Address>| {
        let b = t.signed("4601", "BUY", m("2.5"), m("5"));
        let o = match maker {
            Some(safe) => b.maker(safe, 2).sign(&s),
            None => b.sign(&s),
        };
        let (st, placed) = t.submit(&s, o.clone(), "GTC");
        assert_eq!((st, &placed["status"]), (200, &json!("LIVE")), "{placed}");
        (crate::support::chain::onchain_order(&o), placed["orderID"].as_str().unwrap().to_string())
    };
    let (a, a_id) = bid(&owner, Some(owner.derived(&s, 2)));
    let (b, b_id) = bid(&owner, Some(owner.derived(&s, 2)));
    let (c, c_id) = bid(&other, None);
    assert_eq!(available(), json!("5"));
    let neg_risk_exchange = s.domains().neg_risk.domain.verifying_contract.unwrap();

    // What the exchange would revert: another maker's order, an order named twice, an
    // order signed for the other exchange. Each fails as a reverted transaction: recorded,
    // the nonce unused, nothing cancelled.
    let failures = [
        (EXCHANGE, cancelOrderCall { order: c.clone() }.abi_encode(), "not the order's maker"),
        (EXCHANGE, cancelOrdersCall { orders: vec![a.clone(), a.clone()] }.abi_encode(), "order filled or cancelled"),
        (neg_risk_exchange, cancelOrderCall { order: a.clone() }.abi_encode(), "order filled or cancelled"),
    ];
    for (to, data, why) in failures {
        let (st, r) = submit(&safe_tx(to, &data, 0));
        assert_eq!((st, &r["state"]), (200, &json!("STATE_FAILED")), "{r}");
        let id = r["transactionID"].as_str().unwrap();
        assert_eq!(s.get(&format!("/transaction?id={id}")).1[0]["errorMsg"], why);
    }
    let none = cancelOrdersCall { orders: vec![] }.abi_encode();
    assert_eq!(err(submit(&safe_tx(EXCHANGE, &none, 0))), (400, "call not allowed".into()));
    assert_eq!((status(&owner, &a_id), status(&other, &c_id)), (json!("LIVE"), json!("LIVE")));
    assert_eq!(s.get(&format!("/nonce?address={}&type=SAFE", owner.address)).1["nonce"], "0");

    // The Safe's own two orders, in one call: both cancelled, their collateral freed.
    let (st, r) = submit(&safe_tx(EXCHANGE, &cancelOrdersCall { orders: vec![a.clone(), b] }.abi_encode(), 0));
    assert_eq!((st, &r["state"]), (200, &json!("STATE_CONFIRMED")), "{r}");
    assert_eq!((status(&owner, &a_id), status(&owner, &b_id)), (json!("CANCELED"), json!("CANCELED")));
    assert_eq!((available(), status(&other, &c_id)), (json!("10"), json!("LIVE")));
    let (st, r) = submit(&safe_tx(EXCHANGE, &cancelOrderCall { order: a }.abi_encode(), 1));
    assert_eq!((st, &r["state"]), (200, &json!("STATE_FAILED")), "{r}");

    // A MultiSend's calls run in order: a merge may spend what the split before it made,
    // a second split may not spend what the first took.
    let twice = multi_send(&[(CTF, split(&cond, m("6"), USDC)), (CTF, split(&cond, m("6"), USDC))]);
    let (st, r) = submit(&safe_request_op(&s, &owner, &owner.wallet, MULTISEND, &twice, 1, 1));
    assert_eq!((st, &r["state"]), (200, &json!("STATE_FAILED")), "{r}");
    let there_and_back = multi_send(&[(CTF, split(&cond, m("10"), USDC)), (CTF, merge(&cond, m("4")))]);
    let (st, r) = submit(&safe_request_op(&s, &owner, &owner.wallet, MULTISEND, &there_and_back, 1, 1));
    assert_eq!((st, &r["state"]), (200, &json!("STATE_CONFIRMED")), "{r}");
    let b = s.internal_get(&format!("/internal/balances?address={safe}")).1;
    assert_eq!(
        (&b["USDC"]["balance"], &b["4601"]["balance"], &b["4602"]["balance"]),
        (&json!("4"), &json!("6"), &json!("6"))
    );

    // Durable: the cancels are there after a restart.
    let (cfg, _dir) = s.stop();
    let s = Server::start_with(cfg);
    assert_eq!(owner.l2(&s, "GET", &format!("/data/order/{a_id}"), None).1["status"], "CANCELED");
    assert_eq!(other.l2(&s, "GET", &format!("/data/order/{c_id}"), None).1["status"], "LIVE");
    s.check();
}

/// A proxy-wallet transaction of `owner` running `calls` (to, data) with `nonce` through the
/// relay `relay`, signed by `key` as the official client signs the relay hub's hash.
fn proxy_request(
    owner: &Trader,
    key: &PrivateKeySigner,
    s: &Server,
    calls: &[(Address, Vec<u8>)],
    nonce: u64,
    relay: Address,
) -> Value {
    let calls = calls
        .iter()
        .map(|(to, data)| ProxyCall { typeCode: 1, to: *to, value: U256::ZERO, data: data.clone().into() })
        .collect();
    let data = proxyCall { calls }.abi_encode();
    let from: Address = owner.address.parse().unwrap();
    let gas_limit = U256::from(10_000_000u64);
    let words = [U256::ZERO, U256::ZERO, gas_limit, U256::from(nonce)].map(|w| w.to_be_bytes::<32>());
    let hash = alloy_primitives::keccak256(
        [
            b"rlx:".as_slice(),
            from.as_slice(),
            PROXY_FACTORY.as_slice(),
            &data,
            &words[0],
            &words[1],
            &words[2],
            &words[3],
            RELAY_HUB.as_slice(),
            relay.as_slice(),
        ]
        .concat(),
    );
    json!({
        "type": "PROXY", "from": owner.address, "to": format!("{PROXY_FACTORY:#x}"),
        "proxyWallet": format!("{:#x}", owner.derived(s, 1)), "data": hex(&data), "nonce": nonce.to_string(),
        "signature": hex(&key.sign_message_sync(hash.as_slice()).unwrap().as_bytes()),
        "signatureParams": {"gasPrice": "0", "gasLimit": gas_limit.to_string(), "relayerFee": "0",
                            "relayHub": format!("{RELAY_HUB:#x}"), "relay": format!("{relay:#x}")},
        "metadata": "",
    })
}

#[test]
fn a_proxy_wallet_runs_only_what_its_owner_signed_for_the_venues_relay() {
    let s = Server::start();
    let cond = format!("0x{}", "c5".repeat(32));
    s.create_market(&cond, "4501", "4502", "0.01", false);
    let (owner, stranger) = (s.trader(0), s.trader(0));
    let proxy = format!("{:#x}", owner.derived(&s, 1));
    s.credit(&proxy, "USDC", m("30"));
    let payload = s.get(&format!("/relay-payload?address={}&type=PROXY", owner.address)).1;
    assert_eq!(payload, json!({"address": format!("{:#x}", Address::ZERO), "nonce": "0"}));
    let relay = Address::ZERO;
    let ten = vec![(CTF, split(&cond, m("10"), USDC))];
    let submit = |t: &Trader, body: &Value| t.l2(&s, "POST", "/submit", Some(body));
    let attacks = [
        (&owner, proxy_request(&owner, &stranger.wallet, &s, &ten, 0, relay), "invalid signature"),
        (&owner, proxy_request(&owner, &owner.wallet, &s, &ten, 3, relay), "invalid nonce: the wallet's nonce is 0"),
        (
            &owner,
            proxy_request(&owner, &owner.wallet, &s, &ten, 0, Address::repeat_byte(9)),
            "not the venue's relay hub and relay",
        ),
        (
            &stranger,
            proxy_request(&owner, &owner.wallet, &s, &ten, 0, relay),
            "the signer has to be the owner of the API KEY",
        ),
        (
            &owner,
            proxy_request(&owner, &owner.wallet, &s, &[(Address::repeat_byte(7), vec![1, 2, 3, 4])], 0, relay),
            "call not allowed",
        ),
    ];
    for (who, body, why) in attacks {
        assert_eq!(err(submit(who, &body)), (400, why.into()), "{body}");
    }
    assert_eq!(s.get(&format!("/deployed?address={proxy}")).1["deployed"], false);
    let (st, done) = submit(&owner, &proxy_request(&owner, &owner.wallet, &s, &ten, 0, relay));
    assert_eq!((st, &done["state"]), (200, &json!("STATE_CONFIRMED")), "{done}");
    assert_eq!(s.get(&format!("/deployed?address={proxy}")).1["deployed"], true, "made at its first call");
    assert_eq!(s.get(&format!("/nonce?address={}&type=PROXY", owner.address)).1["nonce"], "1");
    let b = s.internal_get(&format!("/internal/balances?address={proxy}")).1;
    assert_eq!((&b["USDC"]["balance"], &b["4501"]["balance"]), (&json!("20"), &json!("10")), "{b}");
    assert_eq!(
        err(s.get(&format!("/nonce?address={}&type=OTHER", owner.address))),
        (400, "type must be SAFE or PROXY".into())
    );
    s.check();
}

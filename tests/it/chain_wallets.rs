//! Wallets on chain: the Safe and proxy-wallet factories `predex chain deploy` makes put an
//! owner's wallet where predex (and Polymarket's clients) derive it, the wallet does only
//! what its owner signed, and orders whose maker is such a wallet settle on chain.

use alloy_primitives::{Address, Bytes, U256};
use alloy_provider::Provider;
use alloy_signer::SignerSync;
use alloy_sol_types::SolCall;
use predex::auth::relay::{create_proxy_hash, relay_hash, safe_tx_hash};
use predex::chain::{
    wallet_provider, ICollateral, IConditionalTokens, IExchange, IProxyFactory, IRelayHub, ISafe, ISafeFactory,
};
use serde_json::json;

use crate::support::chain::*;
use crate::support::Trader;

/// The gas limit a proxy call is signed with.
const PROXY_GAS: u64 = 2_000_000;

#[test]
fn wallets_land_where_they_are_derived_and_their_orders_settle_on_chain() {
    let v = Venue::start();
    let s = &v.server;
    let (_, yes, no) = v.market();
    let (alice, bob) = (s.trader(0), s.trader(0));
    let (safe, proxy) = (alice.derived(s, 2), bob.derived(s, 1));
    // The exchanges derive them alike (predex checked so at start).
    let exchange = v.exchange();
    let (their_safe, their_proxy) = v.rt.block_on(async {
        let p = wallet_provider_ro(&v.anvil.url);
        let x = IExchange::new(exchange, &p);
        (
            x.getSafeAddress(alice.wallet.address()).call().await.unwrap(),
            x.getPolyProxyWalletAddress(bob.wallet.address()).call().await.unwrap(),
        )
    });
    assert_eq!((their_safe, their_proxy), (safe, proxy));

    // Alice's Safe, made for her signature by someone else who pays: hers alone, once.
    create_safe(&v, &alice).expect("the Safe is made");
    assert_eq!(v.rt.block_on(async { safe_owners(&v, safe).await }), vec![alice.wallet.address()]);
    assert!(create_safe(&v, &alice).is_err(), "a second Safe for one owner");
    let approvals = approvals(&v);
    for (to, data) in &approvals {
        safe_exec(&v, &alice, safe, *to, data.clone()).expect("the owner's Safe transaction runs");
    }
    // A transaction signed by someone else, or replayed, is refused by the Safe.
    let (to, data) = approvals[0].clone();
    assert!(safe_exec(&v, &bob, safe, to, data.clone()).is_err(), "a stranger's signature");

    // Bob's proxy wallet, made at its first call through the relay hub, which the relay
    // (someone else) pays for: the approvals at once.
    let calls = approvals.iter().map(|(to, data)| call(*to, data.clone())).collect();
    let signed = proxy_request(&v, &bob, calls);
    relay(&v, &signed).expect("the owner's proxy call runs");
    assert!(!code(&v, proxy).is_empty(), "no proxy wallet at {proxy}");
    assert!(relay(&v, &signed).is_err(), "a relayed call replayed");

    v.mint(safe, 100_000_000);
    v.mint(proxy, 100_000_000);
    // A mint: the Safe buys YES, the proxy wallet NO, each at 0.50 for 100 tokens.
    let (st, b) = alice.submit(s, alice.signed(&yes, "BUY", 50_000_000, 100_000_000).maker(safe, 2).sign(s), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("LIVE")), "{b}");
    // An order naming another's Safe is refused.
    let (st, b) = bob.submit(s, bob.signed(&no, "BUY", 50_000_000, 100_000_000).maker(safe, 2).sign(s), "GTC");
    assert_eq!(st, 400, "{b}");
    let (st, b) = bob.submit(s, bob.signed(&no, "BUY", 50_000_000, 100_000_000).maker(proxy, 1).sign(s), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    let t = crate::chain::settled(&v, &bob);
    assert_eq!(t["status"], "CONFIRMED", "{t}");
    assert_eq!(v.holdings_of(safe, &[&yes, &no]), (50_000_000, vec![100_000_000, 0]));
    assert_eq!(v.holdings_of(proxy, &[&yes, &no]), (50_000_000, vec![0, 100_000_000]));
    // The owners' own addresses hold nothing and paid no gas.
    for t in [&alice, &bob] {
        assert_eq!(v.holdings(t, &[&yes, &no]), (0, vec![0, 0]));
        let gas = v.gas_of(t.wallet.address());
        assert_eq!(gas, U256::ZERO);
    }
}

/// The approvals a wallet gives the venue: collateral to both exchanges, positions to both
/// exchanges and the adapter.
pub(crate) fn approvals(v: &Venue) -> Vec<(Address, Bytes)> {
    let collateral = Venue::address(&v.deployed.collateral_address);
    let ctf = Venue::address(&v.deployed.ctf_address);
    let adapter = Venue::address(&v.deployed.neg_risk_adapter_address);
    let (x, nrx) = (v.exchange(), v.neg_risk_exchange());
    let mut out = Vec::new();
    for spender in [x, nrx] {
        out.push((collateral, ICollateral::approveCall { spender, amount: U256::MAX }.abi_encode().into()));
    }
    for operator in [x, nrx, adapter] {
        out.push((ctf, IConditionalTokens::setApprovalForAllCall { operator, approved: true }.abi_encode().into()));
    }
    out
}

fn call(to: Address, data: Bytes) -> IProxyFactory::ProxyCall {
    IProxyFactory::ProxyCall { typeCode: 1, to, value: U256::ZERO, data }
}

/// Sends a transaction from anvil's second account (a relayer: not the operator, whose
/// nonces predex allocates); Err with the node's refusal when it would revert.
fn send(v: &Venue, to: Address, data: Vec<u8>) -> Result<(), String> {
    let url = v.anvil.url.clone();
    v.rt.block_on(async move {
        let p = wallet_provider(&url, OTHER_KEY.parse().unwrap()).unwrap();
        let tx = alloy_rpc_types_eth::TransactionRequest::default().to(to).input(data.into());
        let pending = p.send_transaction(tx).await.map_err(|e| e.to_string())?;
        let r = pending.get_receipt().await.map_err(|e| e.to_string())?;
        if r.status() {
            Ok(())
        } else {
            Err("reverted".into())
        }
    })
}

fn relayer() -> Address {
    OTHER_KEY.parse::<alloy_signer_local::PrivateKeySigner>().unwrap().address()
}

pub(crate) fn create_safe(v: &Venue, owner: &Trader) -> Result<(), String> {
    let factory = Venue::address(&Some(v.deployed.safe_factory_address.clone()));
    let sig = owner.wallet.sign_hash_sync(&create_proxy_hash(v.deployed.chain_id, factory)).unwrap();
    let sig = ISafeFactory::Sig { v: 27 + u8::from(sig.v()), r: sig.r().into(), s: sig.s().into() };
    let call = ISafeFactory::createProxyCall {
        paymentToken: Address::ZERO,
        payment: U256::ZERO,
        paymentReceiver: Address::ZERO,
        createSig: sig,
    };
    send(v, factory, call.abi_encode())
}

async fn safe_owners(v: &Venue, safe: Address) -> Vec<Address> {
    ISafe::new(safe, wallet_provider_ro(&v.anvil.url)).getOwners().call().await.unwrap()
}

/// `signer` signs the Safe's next transaction (a call of `data` at `to`), which the relayer sends.
pub(crate) fn safe_exec(v: &Venue, signer: &Trader, safe: Address, to: Address, data: Bytes) -> Result<(), String> {
    let nonce =
        v.rt.block_on(async { ISafe::new(safe, wallet_provider_ro(&v.anvil.url)).nonce().call().await.unwrap() });
    let hash = safe_tx_hash(v.deployed.chain_id, safe, to, &data, 0, nonce);
    let signature = signer.wallet.sign_hash_sync(&hash).unwrap().as_bytes().to_vec();
    let call = ISafe::execTransactionCall {
        to,
        value: U256::ZERO,
        data,
        operation: 0,
        safeTxGas: U256::ZERO,
        baseGas: U256::ZERO,
        gasPrice: U256::ZERO,
        gasToken: Address::ZERO,
        refundReceiver: Address::ZERO,
        signatures: signature.into(),
    };
    send(v, safe, call.abi_encode())
}

/// The relay hub's call of the proxy factory's `proxy(calls)`, signed by `owner` for the
/// relayer with the hub's nonce.
fn proxy_request(v: &Venue, owner: &Trader, calls: Vec<IProxyFactory::ProxyCall>) -> IRelayHub::relayCallCall {
    let hub = Venue::address(&Some(v.deployed.relay_hub_address.clone()));
    let factory = Venue::address(&Some(v.deployed.proxy_factory_address.clone()));
    let from = owner.wallet.address();
    let nonce = v
        .rt
        .block_on(async { IRelayHub::new(hub, wallet_provider_ro(&v.anvil.url)).getNonce(from).call().await.unwrap() });
    let data = IProxyFactory::proxyCall { calls }.abi_encode();
    let gas = U256::from(PROXY_GAS);
    let hash = relay_hash(from, factory, &data, U256::ZERO, U256::ZERO, gas, nonce, hub, relayer());
    let signature = owner.wallet.sign_message_sync(hash.as_slice()).unwrap().as_bytes().to_vec();
    IRelayHub::relayCallCall {
        from,
        recipient: factory,
        encodedFunction: data.into(),
        transactionFee: U256::ZERO,
        gasPrice: U256::ZERO,
        gasLimit: gas,
        nonce,
        signature: signature.into(),
        approvalData: Bytes::new(),
    }
}

fn relay(v: &Venue, call: &IRelayHub::relayCallCall) -> Result<(), String> {
    let hub = Venue::address(&Some(v.deployed.relay_hub_address.clone()));
    send(v, hub, call.abi_encode())
}

fn code(v: &Venue, at: Address) -> Bytes {
    v.rt.block_on(async { wallet_provider_ro(&v.anvil.url).get_code_at(at).await.unwrap() })
}

/// The relayer in chain mode: the operator sends what wallets' owners signed — a Safe's
/// deployment, its transactions, a proxy wallet's calls through the hub — recorded before
/// they are broadcast, followed to STATE_CONFIRMED; one that would revert is FAILED with
/// nothing sent and its nonce left free; the owners never pay gas, and the operator's
/// nonces stay its settlements' too.
#[test]
fn the_relayer_sends_wallets_transactions_from_the_operator() {
    let v = Venue::start();
    let s = &v.server;
    let (cond, yes, no) = v.market();
    let (alice, bob) = (s.trader(0), s.trader(0));
    let (safe, proxy) = (alice.derived(s, 2), bob.derived(s, 1));
    let operator = DEPLOYER_KEY.parse::<alloy_signer_local::PrivateKeySigner>().unwrap().address();
    let submit = |t: &Trader, body: &serde_json::Value| t.l2(s, "POST", "/submit", Some(body));
    let nonce = |t: &Trader, kind: &str| -> u64 {
        let (st, b) = s.get(&format!("/nonce?address={}&type={kind}", t.address));
        assert_eq!(st, 200, "{b}");
        b["nonce"].as_str().unwrap().parse().unwrap()
    };
    let deployed = |a: Address| s.get(&format!("/deployed?address={a:#x}")).1["deployed"].clone();
    let state_of = |id: &serde_json::Value| -> serde_json::Value {
        s.get(&format!("/transaction?id={}", id.as_str().unwrap())).1[0].clone()
    };
    let confirmed = |id: &serde_json::Value| -> serde_json::Value {
        crate::support::wait_for(60, || {
            let t = state_of(id);
            assert_ne!(t["state"], "STATE_FAILED", "{t}");
            (t["state"] == "STATE_CONFIRMED").then_some(t)
        })
    };

    // The Safe, deployed by the operator for the owner's signature, once.
    assert_eq!(deployed(safe), json!(false));
    let (st, created) = submit(&alice, &create_request(&v, &alice));
    assert_eq!((st, &created["state"]), (200, &json!("STATE_EXECUTED")), "{created}");
    let t = confirmed(&created["transactionID"]);
    assert_eq!(t["transactionHash"], created["transactionHash"]);
    let receipt = v.rt.block_on(async {
        let hash = created["transactionHash"].as_str().unwrap().parse().unwrap();
        wallet_provider_ro(&v.anvil.url).get_transaction_receipt(hash).await.unwrap().unwrap()
    });
    assert!(receipt.status() && receipt.from == operator, "sent by the operator");
    assert_eq!(deployed(safe), json!(true));
    assert_eq!(v.rt.block_on(async { safe_owners(&v, safe).await }), vec![alice.wallet.address()]);
    let (st, b) = submit(&alice, &create_request(&v, &alice));
    assert_eq!((st, b["error"].as_str()), (400, Some("safe already deployed")), "{b}");

    // Its approvals, signed as the official client signs (eth_sign), sent back to back:
    // each holds the next nonce before the one before it is mined.
    let ids: Vec<_> = approvals(&v)
        .into_iter()
        .enumerate()
        .map(|(n, (to, data))| {
            assert_eq!(nonce(&alice, "SAFE"), n as u64);
            let (st, b) = submit(&alice, &safe_request(&v, &alice, to, &data, n as u64));
            assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
            b["transactionID"].clone()
        })
        .collect();
    for id in &ids {
        confirmed(id);
    }
    assert_eq!(nonce(&alice, "SAFE"), ids.len() as u64);
    let safe_nonce =
        v.rt.block_on(async { ISafe::new(safe, wallet_provider_ro(&v.anvil.url)).nonce().call().await.unwrap() });
    assert_eq!(safe_nonce, U256::from(ids.len()));
    // A nonce the Safe used is refused.
    let (to, data) = approvals(&v)[0].clone();
    let (st, b) = submit(&alice, &safe_request(&v, &alice, to, &data, 0));
    assert_eq!(
        (st, b["error"].as_str()),
        (400, Some(format!("invalid nonce: the wallet's nonce is {}", ids.len()).as_str()))
    );

    // A split the Safe cannot pay for reverts in the gas estimate: FAILED with the reason,
    // nothing sent, the nonce still free.
    let before = operator_nonce(&v);
    let split = split_call(&v, cond.parse().unwrap(), 10_000_000);
    let (st, b) = submit(&alice, &safe_request(&v, &alice, split.0, &split.1, ids.len() as u64));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_FAILED")), "{b}");
    let failed = state_of(&b["transactionID"]);
    assert_eq!(failed["state"], "STATE_FAILED");
    assert!(failed["errorMsg"].as_str().is_some_and(|e| e.contains("revert")), "{failed}");
    assert_eq!(operator_nonce(&v), before, "nothing sent");
    assert_eq!(nonce(&alice, "SAFE"), ids.len() as u64);

    // Paid for, and with ConditionalTokens allowed to pull the collateral in the same
    // transaction (MultiSend), the split runs with that nonce: the Safe holds both positions.
    v.mint(safe, 100_000_000);
    let collateral = Venue::address(&v.deployed.collateral_address);
    let allow = ICollateral::approveCall { spender: split.0, amount: U256::MAX }.abi_encode();
    let multisend = Venue::address(&Some(v.deployed.safe_multisend_address.clone()));
    let batch = multi_send(&[(collateral, allow), split.clone()]);
    let request = safe_request_op(&v, &alice, multisend, &batch, ids.len() as u64, 1);
    let (st, b) = submit(&alice, &request);
    assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
    confirmed(&b["transactionID"]);
    assert_eq!(v.holdings_of(safe, &[&yes, &no]), (90_000_000, vec![10_000_000, 10_000_000]));

    // /ctf/merge for the Safe answers the relayer request and the hash its owner signs;
    // signed, the relayer runs it.
    let body = json!({"conditionId": cond, "amount": "5000000", "address": format!("{safe:#x}")});
    let (st, prepared) = alice.l2(s, "POST", "/ctf/merge", Some(&body));
    assert_eq!(
        (st, &prepared["submit"]["type"], &prepared["type"]),
        (200, &json!("SAFE"), &json!("MERGE")),
        "{prepared}"
    );
    let hash: alloy_primitives::B256 = prepared["hash"].as_str().unwrap().parse().unwrap();
    let mut sig = alice.wallet.sign_message_sync(hash.as_slice()).unwrap().as_bytes();
    sig[64] += 4;
    let mut request = prepared["submit"].clone();
    request["signature"] = json!(format!("0x{}", alloy_primitives::hex::encode(sig)));
    let (st, b) = submit(&alice, &request);
    assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
    confirmed(&b["transactionID"]);
    assert_eq!(v.holdings_of(safe, &[&yes, &no]), (95_000_000, vec![5_000_000, 5_000_000]));
    // Another's Safe is not the key's to prepare for.
    let (st, b) = bob.l2(s, "POST", "/ctf/merge", Some(&body));
    assert_eq!((st, b["error"].as_str()), (400, Some("the address has to be the owner of the API KEY")), "{b}");

    // For the key's own address, /ctf/split answers the transaction it signs and sends.
    let carol = v.trader(20_000_000, true);
    let read = |path: &str| carol.l2(s, "GET", &format!("{path}?asset_type=COLLATERAL&signature_type=0"), None).1;
    assert_eq!(read("/balance-allowance/update")["balance"], "20000000");
    let body = json!({"conditionId": cond, "amount": "10000000"});
    let (st, prepared) = carol.l2(s, "POST", "/ctf/split", Some(&body));
    assert_eq!(st, 200, "{prepared}");
    let tx = &prepared["transaction"];
    assert_eq!((tx["chainId"].as_u64(), &tx["value"]), (Some(v.deployed.chain_id), &json!("0")), "{prepared}");
    let to: Address = tx["to"].as_str().unwrap().parse().unwrap();
    let data = alloy_primitives::hex::decode(tx["data"].as_str().unwrap()).unwrap();
    let (url, key) = (v.anvil.url.clone(), carol.wallet.clone());
    let allow = ICollateral::approveCall { spender: to, amount: U256::MAX }.abi_encode();
    let collateral = Venue::address(&v.deployed.collateral_address);
    v.rt.block_on(async move {
        let p = wallet_provider(&url, key).unwrap();
        for (at, input) in [(collateral, allow), (to, data)] {
            let tx = alloy_rpc_types_eth::TransactionRequest::default().to(at).input(input.into());
            assert!(p.send_transaction(tx).await.unwrap().get_receipt().await.unwrap().status());
        }
    });
    assert_eq!(v.holdings(&carol, &[&yes, &no]), (10_000_000, vec![10_000_000, 10_000_000]));
    // The venue's figure follows what she did on chain herself, unasked.
    crate::support::wait_for(30, || (read("/balance-allowance")["balance"] == "10000000").then_some(()));
    // /activity shows what each wallet did on chain: the Safe's split and merge (relayed),
    // Carol's split (her own); not the exchange's mints.
    let activity = |who: Address| {
        crate::support::wait_for(30, || {
            let (st, a) = s.analytics_get(&format!("/activity?user={who:#x}"));
            let rows: Vec<(String, String, String)> = a
                .as_array()?
                .iter()
                .map(|r| (r["type"].to_string(), r["size"].to_string(), r["conditionId"].to_string()))
                .collect();
            (st == 200 && !rows.is_empty()).then_some(rows)
        })
    };
    let row = |kind: &str, size: &str| (format!("{kind:?}"), size.to_string(), format!("{cond:?}"));
    assert_eq!(activity(safe), vec![row("MERGE", "5"), row("SPLIT", "10")]);
    assert_eq!(activity(carol.wallet.address()), vec![row("SPLIT", "10")]);

    // Bob's proxy wallet: its calls through the hub, relayed by the operator, which
    // /relay-payload names.
    let (st, payload) = s.get(&format!("/relay-payload?address={}&type=PROXY", bob.address));
    assert_eq!((st, payload["address"].as_str()), (200, Some(format!("{operator:#x}").as_str())), "{payload}");
    let calls = approvals(&v).into_iter().map(|(to, data)| call(to, data)).collect();
    let (st, b) = submit(&bob, &proxy_submission(&v, &bob, calls, operator, nonce(&bob, "PROXY")));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
    confirmed(&b["transactionID"]);
    assert_eq!(deployed(proxy), json!(true));
    assert_eq!(nonce(&bob, "PROXY"), 1);

    // The wallets trade, and the operator's settlement takes the nonce after its relaying.
    // Collateral that arrives from outside is read when its owner asks (the relayed
    // approvals had the proxy's balance read, at 0).
    v.mint(proxy, 100_000_000);
    let (st, b) = bob.l2(s, "GET", "/balance-allowance/update?asset_type=COLLATERAL&signature_type=1", None);
    assert_eq!((st, b["balance"].as_str()), (200, Some("100000000")), "{b}");
    let (st, b) = alice.submit(s, alice.signed(&yes, "BUY", 40_000_000, 80_000_000).maker(safe, 2).sign(s), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("LIVE")), "{b}");
    let (st, b) = bob.submit(s, bob.signed(&no, "BUY", 40_000_000, 80_000_000).maker(proxy, 1).sign(s), "GTC");
    assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    assert_eq!(crate::chain::settled(&v, &bob)["status"], "CONFIRMED");
    assert_eq!(v.holdings_of(safe, &[&yes, &no]), (55_000_000, vec![85_000_000, 5_000_000]));
    assert_eq!(v.holdings_of(proxy, &[&yes, &no]), (60_000_000, vec![0, 80_000_000]));
    for t in [&alice, &bob] {
        let gas = v.gas_of(t.wallet.address());
        assert_eq!(gas, U256::ZERO);
    }
}

/// A negative-risk conversion on chain: `/ctf/convert` answers the adapter's
/// `convertPositions` for an EOA to send and the relayer request for a Safe; run, each
/// wallet's NO of the converted questions are gone, the other question's YES and the
/// collateral (questions converted − 1, per unit) are there, on chain and in predex's
/// figures. Bad terms are refused as in ledger mode.
#[test]
fn a_negative_risk_conversion_and_redemption_run_on_chain_for_an_eoa_and_for_a_safe() {
    let v = Venue::start();
    let s = &v.server;
    let question = |q: &str, market: Option<&str>| {
        let mut body = json!({"question": q, "neg_risk": true});
        if let Some(m) = market {
            body["neg_risk_market_id"] = json!(m);
        }
        let (st, m) = s.internal_post("/internal/markets", &body);
        assert_eq!(st, 200, "{m}");
        m
    };
    let a = question("Candidate A?", None);
    let market_id = a["neg_risk_market_id"].as_str().unwrap().to_string();
    let (b, c) = (question("Candidate B?", Some(&market_id)), question("Candidate C?", Some(&market_id)));
    let token = |m: &serde_json::Value, i: usize| m["tokens"][i]["token_id"].as_str().unwrap().to_string();
    let tokens = [token(&a, 1), token(&b, 1), token(&c, 1), token(&a, 0), token(&b, 0), token(&c, 0)];
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let adapter = Venue::address(&v.deployed.neg_risk_adapter_address);
    let collateral = Venue::address(&v.deployed.collateral_address);
    let split = |m: &serde_json::Value| {
        let id = m["condition_id"].as_str().unwrap().parse().unwrap();
        let amount = U256::from(10_000_000u64);
        (adapter, predex::chain::INegRiskAdapter::splitPositionCall { conditionId: id, amount }.abi_encode())
    };
    let convert = json!({"marketId": market_id, "indexSet": "3", "amount": "10000000"});

    // Carol, on her own: splits A and B at the adapter, then converts their NO.
    let carol = v.trader(30_000_000, true);
    let (url, key) = (v.anvil.url.clone(), carol.wallet.clone());
    let send_all = |key: alloy_signer_local::PrivateKeySigner, calls: Vec<(Address, Vec<u8>)>| {
        let url = url.clone();
        v.rt.block_on(async move {
            let p = wallet_provider(&url, key).unwrap();
            for (at, input) in calls {
                let tx = alloy_rpc_types_eth::TransactionRequest::default().to(at).input(input.into());
                assert!(p.send_transaction(tx).await.unwrap().get_receipt().await.unwrap().status());
            }
        })
    };
    let allow = ICollateral::approveCall { spender: adapter, amount: U256::MAX }.abi_encode();
    send_all(key.clone(), vec![(collateral, allow.clone()), split(&a), split(&b)]);
    assert_eq!(v.holdings(&carol, &tokens), (10_000_000, vec![10_000_000, 10_000_000, 0, 10_000_000, 10_000_000, 0]));
    let (st, prepared) = carol.l2(s, "POST", "/ctf/convert", Some(&convert));
    assert_eq!((st, &prepared["type"], &prepared["indexSet"]), (200, &json!("CONVERSION"), &json!("3")), "{prepared}");
    let tx = &prepared["transaction"];
    assert_eq!(tx["to"], json!(format!("{adapter:#x}")), "{prepared}");
    let data = alloy_primitives::hex::decode(tx["data"].as_str().unwrap()).unwrap();
    send_all(key, vec![(adapter, data)]);
    // Two NO in, one unit of collateral and C's YES out.
    let after = (20_000_000, vec![0, 0, 0, 10_000_000, 10_000_000, 10_000_000]);
    assert_eq!(v.holdings(&carol, &tokens), after);
    let read = |t: &Trader, asset: &str, sig: u8| {
        let q = match asset {
            "COLLATERAL" => format!("asset_type=COLLATERAL&signature_type={sig}"),
            id => format!("asset_type=CONDITIONAL&token_id={id}&signature_type={sig}"),
        };
        t.l2(s, "GET", &format!("/balance-allowance?{q}"), None).1["balance"].clone()
    };
    assert_eq!(read(&carol, tokens[5], 0), json!("10000000"), "C's YES, read from the chain");
    crate::support::wait_for(30, || (read(&carol, "COLLATERAL", 0) == json!("20000000")).then_some(()));

    // Alice's Safe, through the relayer: deployed, approvals and splits in one MultiSend,
    // then the conversion /ctf/convert prepares, signed by her.
    let alice = s.trader(0);
    let safe = alice.derived(s, 2);
    let submit = |body: &serde_json::Value| alice.l2(s, "POST", "/submit", Some(body));
    let confirmed = |b: &serde_json::Value| {
        let id = b["transactionID"].as_str().unwrap().to_string();
        crate::support::wait_for(60, || {
            let t = s.get(&format!("/transaction?id={id}")).1[0].clone();
            assert_ne!(t["state"], "STATE_FAILED", "{t}");
            (t["state"] == "STATE_CONFIRMED").then_some(())
        })
    };
    // A request /ctf/* prepared for the Safe, signed by its owner and relayed, decided.
    let relayed = |prepared: &serde_json::Value| {
        let hash: alloy_primitives::B256 = prepared["hash"].as_str().unwrap().parse().unwrap();
        let mut sig = alice.wallet.sign_message_sync(hash.as_slice()).unwrap().as_bytes();
        sig[64] += 4;
        let mut request = prepared["submit"].clone();
        request["signature"] = json!(format!("0x{}", alloy_primitives::hex::encode(sig)));
        let (st, b) = submit(&request);
        assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
        confirmed(&b);
    };
    let (st, created) = submit(&create_request(&v, &alice));
    assert_eq!(st, 200, "{created}");
    confirmed(&created);
    v.mint(safe, 30_000_000);
    // The venue's approvals (so predex counts what the Safe holds), the adapter's allowance.
    let mut calls: Vec<(Address, Vec<u8>)> = approvals(&v).into_iter().map(|(to, d)| (to, d.to_vec())).collect();
    calls.extend([(collateral, allow), split(&a), split(&b)]);
    let batch = multi_send(&calls);
    let multisend = Venue::address(&Some(v.deployed.safe_multisend_address.clone()));
    let (st, done) = submit(&safe_request_op(&v, &alice, multisend, &batch, 0, 1));
    assert_eq!(st, 200, "{done}");
    confirmed(&done);
    let mut body = convert.clone();
    body["address"] = json!(format!("{safe:#x}"));
    let (st, prepared) = alice.l2(s, "POST", "/ctf/convert", Some(&body));
    assert_eq!((st, &prepared["submit"]["type"]), (200, &json!("SAFE")), "{prepared}");
    relayed(&prepared);
    assert_eq!(v.holdings_of(safe, &tokens), after);
    // Read again when the relayed transaction was decided (one asset after another).
    crate::support::wait_for(30, || {
        (read(&alice, tokens[5], 2) == json!("10000000") && read(&alice, "COLLATERAL", 2) == json!("20000000"))
            .then_some(())
    });
    assert_eq!(v.gas_of(alice.wallet.address()), U256::ZERO);

    // C wins (its oracle, the operator, reports it to the adapter): /ctf/redeem answers the
    // adapter's redeemPositions of what each wallet holds, paying C's YES.
    let question: alloy_primitives::B256 = c["question_id"].as_str().unwrap().parse().unwrap();
    let report = reportOutcomeCall { questionId: question, outcome: true }.abi_encode();
    send_all(DEPLOYER_KEY.parse().unwrap(), vec![(adapter, report)]);
    let redeem = json!({"conditionId": c["condition_id"]});
    let (st, prepared) = carol.l2(s, "POST", "/ctf/redeem", Some(&redeem));
    assert_eq!((st, &prepared["transaction"]["to"]), (200, &json!(format!("{adapter:#x}"))), "{prepared}");
    let data = alloy_primitives::hex::decode(prepared["transaction"]["data"].as_str().unwrap()).unwrap();
    send_all(carol.wallet.clone(), vec![(adapter, data)]);
    let won = (30_000_000, vec![0, 0, 0, 10_000_000, 10_000_000, 0]);
    assert_eq!(v.holdings(&carol, &tokens), won);
    let mut body = redeem.clone();
    body["address"] = json!(format!("{safe:#x}"));
    let (st, prepared) = alice.l2(s, "POST", "/ctf/redeem", Some(&body));
    assert_eq!(st, 200, "{prepared}");
    relayed(&prepared);
    assert_eq!(v.holdings_of(safe, &tokens), won);
    crate::support::wait_for(30, || (read(&alice, "COLLATERAL", 2) == json!("30000000")).then_some(()));
    let (st, nothing) = carol.l2(s, "POST", "/ctf/redeem", Some(&redeem));
    assert_eq!((st, nothing["error"].as_str()), (400, Some("nothing to redeem")), "{nothing}");

    // /activity shows what each wallet did at the adapter (ConditionalTokens' logs name the
    // adapter): its splits, the conversion (a row per question given), the redemption (the
    // collateral paid); the same for Carol's own transactions and the Safe's relayed ones.
    let row = |kind: &str, m: &serde_json::Value| (kind.to_string(), "10".to_string(), m["condition_id"].to_string());
    let expected =
        vec![row("REDEEM", &c), row("CONVERSION", &b), row("CONVERSION", &a), row("SPLIT", &b), row("SPLIT", &a)];
    for who in [carol.wallet.address(), safe] {
        let rows = crate::support::wait_for(30, || {
            let (st, list) = s.analytics_get(&format!("/activity?user={who:#x}"));
            let rows: Vec<(String, String, String)> = list
                .as_array()?
                .iter()
                .map(|r| (r["type"].as_str().unwrap().to_string(), r["size"].to_string(), r["conditionId"].to_string()))
                .collect();
            (st == 200 && rows.len() >= expected.len()).then_some(rows)
        });
        assert_eq!(rows, expected, "{who:#x}");
    }

    // Bad terms: as in ledger mode, nothing prepared.
    for (terms, status) in [
        (json!({"marketId": market_id, "indexSet": "8", "amount": "1"}), 400),
        (json!({"marketId": market_id, "indexSet": "0", "amount": "1"}), 400),
        (json!({"marketId": market_id, "indexSet": "1", "amount": "0"}), 400),
        (json!({"marketId": format!("0x{}", "ab".repeat(32)), "indexSet": "1", "amount": "1"}), 404),
    ] {
        let (st, b) = carol.l2(s, "POST", "/ctf/convert", Some(&terms));
        assert_eq!(st, status, "{terms}: {b}");
    }
}

/// The relayer's SAFE-CREATE request `owner` signs.
fn create_request(v: &Venue, owner: &Trader) -> serde_json::Value {
    let factory = Venue::address(&Some(v.deployed.safe_factory_address.clone()));
    let sig = owner.wallet.sign_hash_sync(&create_proxy_hash(v.deployed.chain_id, factory)).unwrap();
    json!({
        "type": "SAFE-CREATE", "from": owner.address, "to": format!("{factory:#x}"),
        "proxyWallet": format!("{:#x}", owner.derived(&v.server, 2)), "data": "0x",
        "signature": format!("0x{}", alloy_primitives::hex::encode(sig.as_bytes())),
        "signatureParams": {"paymentToken": Address::ZERO, "payment": "0", "paymentReceiver": Address::ZERO},
    })
}

/// The relayer's SAFE request: `owner`'s Safe calls `data` at `to` with `nonce`, signed as
/// the official client signs (eth_sign of the Safe's hash, v + 4).
fn safe_request(v: &Venue, owner: &Trader, to: Address, data: &[u8], nonce: u64) -> serde_json::Value {
    safe_request_op(v, owner, to, data, nonce, 0)
}

/// [`safe_request`] with the Safe's `operation` (1: a delegatecall, MultiSend's).
fn safe_request_op(
    v: &Venue,
    owner: &Trader,
    to: Address,
    data: &[u8],
    nonce: u64,
    operation: u8,
) -> serde_json::Value {
    crate::relay::safe_request_op(&v.server, owner, &owner.wallet, to, data, nonce, operation)
}

alloy_sol_types::sol! {
    function multiSend(bytes transactions);
    function reportOutcome(bytes32 questionId, bool outcome);
    function transferFrom(address from, address to, uint256 amount) returns (bool);
}

/// MultiSend's `multiSend` of plain calls: each `0 ‖ to ‖ value 0 ‖ length ‖ data`.
pub(crate) fn multi_send(calls: &[(Address, Vec<u8>)]) -> Vec<u8> {
    let mut packed = Vec::new();
    for (to, data) in calls {
        packed.push(0u8);
        packed.extend_from_slice(to.as_slice());
        packed.extend_from_slice(&U256::ZERO.to_be_bytes::<32>());
        packed.extend_from_slice(&U256::from(data.len()).to_be_bytes::<32>());
        packed.extend_from_slice(data);
    }
    multiSendCall { transactions: packed.into() }.abi_encode()
}

/// The relayer's PROXY request: `owner`'s proxy wallet runs `calls`, signed for `relay`
/// with the hub's `nonce`.
fn proxy_submission(
    v: &Venue,
    owner: &Trader,
    calls: Vec<IProxyFactory::ProxyCall>,
    relay: Address,
    nonce: u64,
) -> serde_json::Value {
    let hub = Venue::address(&Some(v.deployed.relay_hub_address.clone()));
    let factory = Venue::address(&Some(v.deployed.proxy_factory_address.clone()));
    let from = owner.wallet.address();
    let data = IProxyFactory::proxyCall { calls }.abi_encode();
    let gas = U256::from(PROXY_GAS);
    let hash = relay_hash(from, factory, &data, U256::ZERO, U256::ZERO, gas, U256::from(nonce), hub, relay);
    let sig = owner.wallet.sign_message_sync(hash.as_slice()).unwrap();
    json!({
        "type": "PROXY", "from": owner.address, "to": format!("{factory:#x}"),
        "proxyWallet": format!("{:#x}", owner.derived(&v.server, 1)),
        "data": format!("0x{}", alloy_primitives::hex::encode(&data)), "nonce": nonce.to_string(),
        "signature": format!("0x{}", alloy_primitives::hex::encode(sig.as_bytes())),
        "signatureParams": {"gasPrice": "0", "gasLimit": gas.to_string(), "relayerFee": "0",
                            "relayHub": format!("{hub:#x}"), "relay": format!("{relay:#x}")},
    })
}

/// ConditionalTokens' binary split of `amount` collateral on `condition`.
fn split_call(v: &Venue, condition: alloy_primitives::B256, amount: u64) -> (Address, Vec<u8>) {
    let call = IConditionalTokens::splitPositionCall {
        collateralToken: Venue::address(&v.deployed.collateral_address),
        parentCollectionId: Default::default(),
        conditionId: condition,
        partition: vec![U256::from(1), U256::from(2)],
        amount: U256::from(amount),
    };
    (Venue::address(&v.deployed.ctf_address), call.abi_encode())
}

/// `kill -9` of `child`, then predex started again on its data (with the settings `more`),
/// straight to the node.
fn restart(
    v: Venue,
    mut child: crate::support::Proc,
    data: &std::path::Path,
    key: &std::path::Path,
    more: &[(&str, String)],
) -> (crate::support::Proc, Venue) {
    let _ = child.child.kill();
    let _ = child.child.wait();
    drop(child);
    let Venue { server, deployed, anvil, _dir, rt } = v;
    drop(server);
    let (child, server) = spawn_predex_with(data, &deployed, key, &anvil.url, more);
    (child, Venue { server, deployed, anvil, _dir, rt })
}

fn operator() -> Address {
    DEPLOYER_KEY.parse::<alloy_signer_local::PrivateKeySigner>().unwrap().address()
}

fn operator_nonce(v: &Venue) -> u64 {
    nonce_of(v, operator(), "pending")
}

/// `account`'s transaction count at the node, at `tag` (`pending`, `latest`).
fn nonce_of(v: &Venue, account: Address, tag: &str) -> u64 {
    let n = v.anvil.rpc("eth_getTransactionCount", json!([format!("{account:#x}"), tag])).unwrap();
    u64::from_str_radix(n.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// With a relayer key of its own (`--relayer-key-file`), the relayer account sends and
/// pays for wallets' transactions, its nonces apart from the operator's: a relayed
/// transaction and a settlement both in the pool when predex is killed (`kill -9`) are
/// each mined once after the restart, each from its account; and a settlement the node
/// lost, waiting to be sent again, holds back none of the relayer's transactions.
#[test]
fn a_relayer_key_of_its_own_sends_wallets_transactions_beside_the_operators_settlements() {
    let anvil = Anvil::start();
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
    let relayer_signer = alloy_signer_local::PrivateKeySigner::random();
    let relayer = relayer_signer.address();
    let relayer_key = key_file(dir.path(), "relayer.key", &format!("{:#x}", relayer_signer.to_bytes()));
    anvil.rpc("anvil_setBalance", json!([format!("{relayer:#x}"), "0x3635C9ADC5DEA00000"])).unwrap();
    let more = [("PREDEX_RELAYER_KEY_FILE", relayer_key.display().to_string())];
    let deployed = deploy(&anvil, &key, &root().join("contracts"), &[]);
    let data = dir.path().join("data");
    let (child, server) = spawn_predex_with(&data, &deployed, &key, &anvil.url, &more);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let v = Venue { server, deployed, anvil, _dir: dir, rt };
    let alice = v.server.trader(0);
    let safe = alice.derived(&v.server, 2);
    let (_, yes, no) = v.market();
    let (carol, dave) = (v.trader(100_000_000, true), v.trader(100_000_000, true));
    let trade = |v: &Venue| {
        let (st, b) = carol.submit(&v.server, carol.order(&v.server, &yes, "BUY", "0.50", "20"), "GTC");
        assert_eq!(st, 200, "{b}");
        let (st, b) = dave.submit(&v.server, dave.order(&v.server, &no, "BUY", "0.50", "20"), "GTC");
        assert_eq!((st, &b["status"]), (200, &json!("MATCHED")), "{b}");
    };
    // Proxy wallets' owners sign over the account that relays their calls.
    let (_, payload) = v.server.get(&format!("/relay-payload?address={}&type=PROXY", alice.address));
    assert_eq!(payload["address"], json!(format!("{relayer:#x}")), "{payload}");
    let (operator_before, relayer_before) = (operator_nonce(&v), nonce_of(&v, relayer, "pending"));

    // The Safe's deployment (the relayer's) and a settlement (the operator's), both in the
    // pool when predex is killed.
    v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
    let (st, created) = alice.l2(&v.server, "POST", "/submit", Some(&create_request(&v, &alice)));
    assert_eq!((st, &created["state"]), (200, &json!("STATE_EXECUTED")), "{created}");
    trade(&v);
    crate::support::wait_for(30, || (operator_nonce(&v) == operator_before + 1).then_some(()));
    assert_eq!(nonce_of(&v, relayer, "pending"), relayer_before + 1);
    let (_child, v) = restart(v, child, &data, &key, &more);
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    v.anvil.rpc("evm_setAutomine", json!([true])).unwrap();
    let state = |v: &Venue, id: &serde_json::Value| {
        v.server.get(&format!("/transaction?id={}", id.as_str().unwrap())).1[0]["state"].clone()
    };
    crate::support::wait_for(60, || (state(&v, &created["transactionID"]) == "STATE_CONFIRMED").then_some(()));
    let t = crate::chain::settled(&v, &dave);
    assert_eq!(t["status"], "CONFIRMED", "{t}");
    assert_eq!(nonce_of(&v, operator(), "latest"), operator_before + 1, "the settlement, once");
    assert_eq!(nonce_of(&v, relayer, "latest"), relayer_before + 1, "the deployment, once");
    let sent = v.anvil.rpc("eth_getTransactionByHash", json!([created["transactionHash"]])).unwrap();
    assert_eq!(sent["from"], json!(format!("{relayer:#x}")), "{sent}");
    assert!(!code(&v, safe).is_empty());

    // A settlement the node lost waits RESEND_SECS to be sent again; the relayer's
    // transaction meanwhile is decided.
    v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
    trade(&v);
    crate::support::wait_for(30, || (operator_nonce(&v) == operator_before + 2).then_some(()));
    v.anvil.rpc("anvil_dropAllTransactions", json!([])).unwrap();
    let lost = std::time::Instant::now();
    let ctf = Venue::address(&v.deployed.ctf_address);
    let allow = ICollateral::approveCall { spender: ctf, amount: U256::MAX }.abi_encode();
    let collateral = Venue::address(&v.deployed.collateral_address);
    let (st, approved) = alice.l2(&v.server, "POST", "/submit", Some(&safe_request(&v, &alice, collateral, &allow, 0)));
    assert_eq!((st, &approved["state"]), (200, &json!("STATE_EXECUTED")), "{approved}");
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    v.anvil.rpc("evm_setAutomine", json!([true])).unwrap();
    crate::support::wait_for(60, || (state(&v, &approved["transactionID"]) == "STATE_CONFIRMED").then_some(()));
    let (_, trades) = dave.l2(&v.server, "GET", "/data/trades", None);
    assert!(lost.elapsed().as_secs() < 25, "decided before the settlement was sent again");
    assert!(["MATCHED", "PENDING"].iter().any(|s| trades["data"][0]["status"] == *s), "{trades}");
    let t = crate::chain::settled(&v, &dave);
    assert_eq!(t["status"], "CONFIRMED", "{t}");
    assert_eq!(nonce_of(&v, operator(), "latest"), operator_before + 2);
    assert_eq!(nonce_of(&v, relayer, "latest"), relayer_before + 2);
}

/// A relayed transaction recorded but not at the node when predex is killed (`kill -9`) is
/// sent after the restart, once, as recorded; one that reverts when mined is FAILED and
/// leaves the wallet's nonce free for the owner's next signature.
#[test]
fn a_relayed_transaction_survives_kill_9_and_one_that_reverts_frees_its_nonce() {
    use std::sync::atomic::Ordering;
    let anvil = Anvil::start();
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "operator.key", DEPLOYER_KEY);
    let deployed = deploy(&anvil, &key, &root().join("contracts"), &[]);
    let data = dir.path().join("data");
    let holding = crate::chain::HoldingProxy::start(&anvil.url);
    let (mut child, server) = spawn_predex(&data, &deployed, &key, &holding.url);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let v = Venue { server, deployed, anvil, _dir: dir, rt };
    let alice = v.server.trader(0);
    let safe = alice.derived(&v.server, 2);
    let before = operator_nonce(&v);

    // The Safe's deployment recorded, its broadcast held short of the node: killed there.
    holding.holding.store(true, Ordering::SeqCst);
    let request = create_request(&v, &alice);
    let sent = std::thread::scope(|scope| {
        // Its reply never comes: the request ends with the process.
        scope.spawn(|| {
            let body = request.to_string();
            let mut r = ureq::post(&format!("{}/submit", v.server.clob));
            for (k, value) in alice.l2_headers("POST", "/submit", &body) {
                r = r.set(k, &value);
            }
            let _ = r.send_string(&body);
        });
        let raw = crate::support::wait_for(30, || holding.held.lock().unwrap().first().cloned());
        assert_eq!(operator_nonce(&v), before, "the node never got it");
        child.child.kill().unwrap();
        child.child.wait().unwrap();
        format!("{}", alloy_primitives::keccak256(alloy_primitives::hex::decode(raw).unwrap()))
    });
    let (child, v) = restart(v, child, &data, &key, &[]);
    let confirmed = |v: &Venue, n: usize| {
        crate::support::wait_for(60, || {
            let (_, list) = alice.l2(&v.server, "GET", "/transactions", None);
            let t = list.as_array()?.get(n)?.clone();
            (t["state"] == "STATE_CONFIRMED").then_some(t)
        })
    };
    let recorded = confirmed(&v, 0);
    assert_eq!(recorded["transactionHash"], json!(sent), "the recorded transaction: {recorded}");
    assert_eq!(operator_nonce(&v), before + 1, "sent once");
    assert!(!code(&v, safe).is_empty());

    // The Safe lets a third party (the test's own account) take its collateral.
    let collateral = Venue::address(&v.deployed.collateral_address);
    let ctf = Venue::address(&v.deployed.ctf_address);
    let taker = relayer();
    safe_exec(
        &v,
        &alice,
        safe,
        collateral,
        ICollateral::approveCall { spender: taker, amount: U256::MAX }.abi_encode().into(),
    )
    .unwrap();

    // The relayer's transaction giving ConditionalTokens its allowance is at the node,
    // unmined, when predex is killed: after the restart it is mined once.
    v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
    let allow = ICollateral::approveCall { spender: ctf, amount: U256::MAX }.abi_encode();
    let (st, b) = alice.l2(&v.server, "POST", "/submit", Some(&safe_request(&v, &alice, collateral, &allow, 1)));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
    assert_eq!(operator_nonce(&v), before + 2, "in the pool");
    let (_child, v) = restart(v, child, &data, &key, &[]);
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    v.anvil.rpc("evm_setAutomine", json!([true])).unwrap();
    let recorded = confirmed(&v, 0);
    assert_eq!(recorded["transactionHash"], b["transactionHash"], "{recorded}");
    let latest = v.anvil.rpc("eth_getTransactionCount", json!([format!("{:#x}", operator()), "latest"])).unwrap();
    assert_eq!(latest, json!(format!("{:#x}", before + 2)), "mined once");
    let s = &v.server;
    let (cond, yes, no) = v.market();
    let submit = |body: &serde_json::Value| alice.l2(s, "POST", "/submit", Some(body));
    let state = |id: &serde_json::Value| s.get(&format!("/transaction?id={}", id.as_str().unwrap())).1[0].clone();
    v.mint(safe, 10_000_000);

    // A split that would run is sent; the third party's transfer, paying more, is mined
    // before it in the same block: the Safe has nothing to split and the call reverts.
    v.anvil.rpc("evm_setAutomine", json!([false])).unwrap();
    let split = split_call(&v, cond.parse().unwrap(), 10_000_000);
    let (st, b) = submit(&safe_request(&v, &alice, split.0, &split.1, 2));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
    let id = b["transactionID"].clone();
    let url = v.anvil.url.clone();
    v.rt.block_on(async move {
        let p = wallet_provider(&url, OTHER_KEY.parse().unwrap()).unwrap();
        let take = transferFromCall { from: safe, to: taker, amount: U256::from(10_000_000u64) };
        let tx = alloy_rpc_types_eth::TransactionRequest::default()
            .to(collateral)
            .input(take.abi_encode().into())
            .gas_limit(200_000)
            .max_priority_fee_per_gas(100_000_000_000)
            .max_fee_per_gas(200_000_000_000);
        let _in_the_pool = p.send_transaction(tx).await.unwrap();
    });
    v.anvil.rpc("evm_mine", json!([])).unwrap();
    v.anvil.rpc("evm_setAutomine", json!([true])).unwrap();
    let failed = crate::support::wait_for(60, || {
        let t = state(&id);
        assert_ne!(t["state"], "STATE_CONFIRMED", "{t}");
        (t["state"] == "STATE_FAILED").then_some(t)
    });
    assert!(failed["errorMsg"].as_str().is_some_and(|e| !e.is_empty()), "{failed}");
    assert_eq!(v.holdings_of(taker, &[]).0, 10_000_000, "the transfer went first");
    let (_, n) = s.get(&format!("/nonce?address={}&type=SAFE", alice.address));
    assert_eq!(n["nonce"], "2", "the reverted transaction's nonce is free");

    // Paid for again, the owner's next signature with that nonce runs.
    v.mint(safe, 10_000_000);
    let (st, b) = submit(&safe_request(&v, &alice, split.0, &split.1, 2));
    assert_eq!((st, &b["state"]), (200, &json!("STATE_EXECUTED")), "{b}");
    let id = b["transactionID"].clone();
    crate::support::wait_for(60, || (state(&id)["state"] == "STATE_CONFIRMED").then_some(()));
    assert_eq!(v.holdings_of(safe, &[&yes, &no]), (0, vec![10_000_000, 10_000_000]));
}

//! polymarket_client_sdk_v2, unpatched, against a running predex: keys, limit and market
//! orders, batch orders, cancels, books and prices, trades, balances. It asks `GET
//! /version` and signs the orders of the version the venue names (PREDEX_ORDER_VERSION).
//! Run by tests/it/clients.rs, which credits the two wallets whose keys it passes.

use std::str::FromStr;

use alloy::signers::local::PrivateKeySigner;
use alloy::signers::Signer as _;
use anyhow::Context;
use polymarket_client_sdk_v2::clob::types::request::{
    BalanceAllowanceRequest, CancelMarketOrderRequest, MidpointRequest, OrderBookSummaryRequest, OrdersRequest,
    PriceRequest, SpreadRequest, TradesRequest,
};
use polymarket_client_sdk_v2::clob::types::{Amount, AssetType, OrderStatusType, OrderType, Side};
use polymarket_client_sdk_v2::clob::{Client, Config};
use polymarket_client_sdk_v2::types::{B256, U256};
use polymarket_client_sdk_v2::POLYGON;
use v2_client_check::{dec, env, Checks};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut c = Checks(0);
    let result = run(&mut c).await;
    result.with_context(|| format!("after {} checks", c.0))
}

async fn run(c: &mut Checks) -> anyhow::Result<()> {
    let host = env("PREDEX_CLOB")?;
    let version: u32 = env("PREDEX_ORDER_VERSION")?.parse()?;
    let cond = B256::from_str(&env("PREDEX_COND")?)?;
    let yes = U256::from_str(&env("PREDEX_YES")?)?;
    let no = U256::from_str(&env("PREDEX_NO")?)?;
    let signer = |var: &str| -> anyhow::Result<PrivateKeySigner> {
        Ok(PrivateKeySigner::from_str(&env(var)?)?.with_chain_id(Some(POLYGON)))
    };
    let (maker_key, taker_key) = (signer("PREDEX_MAKER_KEY")?, signer("PREDEX_TAKER_KEY")?);

    let public = Client::new(&host, Config::default())?;
    c.check(public.ok().await.is_ok(), "GET /ok")?;
    c.check(public.version().await? == version, "the venue's order version")?;
    let info = public.clob_market_info(&format!("{cond}")).await?;
    c.check(format!("{info:?}").contains(&yes.to_string()), format!("clob market {info:?}"))?;

    // Keys: each derives its own L2 key from its wallet.
    let maker = Client::new(&host, Config::default())?.authentication_builder(&maker_key).authenticate().await?;
    let taker = Client::new(&host, Config::default())?.authentication_builder(&taker_key).authenticate().await?;
    let keys = maker.api_keys().await?;
    c.check(format!("{keys:?}").contains(&maker.credentials().key().to_string()), format!("api keys {keys:?}"))?;

    // Limit orders: a bid and an ask.
    let limit = |side: Side, price: &str, size: &str| {
        maker.limit_order().token_id(yes).price(dec(price)).size(dec(size)).side(side).order_type(OrderType::GTC)
    };
    let bid = maker.post_order(maker.sign(&maker_key, limit(Side::Buy, "0.40", "10").build().await?).await?).await?;
    c.check(bid.success && bid.status == OrderStatusType::Live, format!("bid {bid:?}"))?;
    let ask = maker.post_order(maker.sign(&maker_key, limit(Side::Sell, "0.60", "10").build().await?).await?).await?;
    c.check(ask.success && ask.status == OrderStatusType::Live, format!("ask {ask:?}"))?;

    // The book, checked with the client's own hash; prices.
    let book = public.order_book(&OrderBookSummaryRequest::builder().token_id(yes).build()).await?;
    let best = |levels: &[polymarket_client_sdk_v2::clob::types::response::OrderSummary]| {
        levels.iter().map(|l| l.price).collect::<Vec<_>>()
    };
    c.check(
        best(&book.bids).contains(&dec("0.4")) && best(&book.asks).contains(&dec("0.6")),
        format!("book {book:?}"),
    )?;
    // The client's own `order_book_hash` hashes its re-serialized struct, the hash field
    // included: no server's hash can match it. The book carries one.
    c.check(book.hash.as_deref().is_some_and(|h| !h.is_empty()), format!("book hash {:?}", book.hash))?;
    c.check(book.market == cond && book.asset_id == yes, "book ids")?;
    let price = public.price(&PriceRequest::builder().token_id(yes).side(Side::Buy).build()).await?;
    c.check(price.price == dec("0.4"), format!("price {price:?}"))?;
    let mid = public.midpoint(&MidpointRequest::builder().token_id(yes).build()).await?;
    c.check(mid.mid == dec("0.5"), format!("midpoint {mid:?}"))?;
    let spread = public.spread(&SpreadRequest::builder().token_id(yes).build()).await?;
    c.check(spread.spread == dec("0.2"), format!("spread {spread:?}"))?;
    let no_book = public.order_book(&OrderBookSummaryRequest::builder().token_id(no).build()).await?;
    c.check(no_book.asset_id == no, "the other outcome's book")?;

    let open = maker.orders(&OrdersRequest::builder().market(cond).build(), None).await?;
    let ids: Vec<&str> = open.data.iter().map(|o| o.id.as_str()).collect();
    c.check(ids.contains(&bid.order_id.as_str()) && ids.contains(&ask.order_id.as_str()), "open orders")?;
    c.check(maker.order(&ask.order_id).await?.price == dec("0.6"), "one order")?;

    // A market order (FOK) that takes the ask.
    let buy = taker.market_order().token_id(yes).amount(Amount::usdc(dec("3"))?).side(Side::Buy).build().await?;
    let filled = taker.post_order(taker.sign(&taker_key, buy).await?).await?;
    c.check(filled.success && filled.status == OrderStatusType::Matched, format!("market order {filled:?}"))?;
    c.check(filled.trade_ids.len() == 1, format!("trade ids {filled:?}"))?;
    let trades = taker.trades(&TradesRequest::builder().market(cond).build(), None).await?;
    c.check(trades.data.len() == 1 && trades.data[0].size == dec("5") && trades.data[0].price == dec("0.6"), "trades")?;
    c.check(trades.data[0].id == filled.trade_ids[0], "the reply's trade id")?;

    // `balance_allowance` reads `allowances` as spender → amount: a version 2 venue answers
    // so; SPEC §2.11 (version 1) writes token → amount, which this client cannot parse for a
    // wallet holding tokens (docs/reference/spec-choices.md).
    if version == 2 {
        let request = BalanceAllowanceRequest::builder().asset_type(AssetType::Conditional).token_id(yes);
        let held = taker.balance_allowance(request.build()).await?;
        let each = held.allowances.values().all(|a| a == "5000000");
        c.check(held.balance == dec("5000000") && held.allowances.len() == 2 && each, format!("balance {held:?}"))?;
    }
    c.check(taker.notifications().await.is_ok(), "notifications")?;

    // Batch orders, cancel one, some, the market's, all.
    let mut signed = Vec::new();
    for p in ["0.30", "0.31", "0.32"] {
        signed.push(maker.sign(&maker_key, limit(Side::Buy, p, "5").build().await?).await?);
    }
    let batch = maker.post_orders(signed).await?;
    c.check(batch.len() == 3 && batch.iter().all(|o| o.success), format!("post_orders {batch:?}"))?;
    let one = maker.cancel_order(&batch[0].order_id).await?;
    c.check(one.canceled == vec![batch[0].order_id.clone()], format!("cancel_order {one:?}"))?;
    let some = maker.cancel_orders(&[batch[1].order_id.as_str()]).await?;
    c.check(some.canceled == vec![batch[1].order_id.clone()], format!("cancel_orders {some:?}"))?;
    let mkt =
        maker.cancel_market_orders(&CancelMarketOrderRequest::builder().market(cond).asset_id(yes).build()).await?;
    c.check(mkt.canceled.contains(&batch[2].order_id), format!("cancel_market_orders {mkt:?}"))?;
    let last = maker.post_order(maker.sign(&maker_key, limit(Side::Buy, "0.35", "5").build().await?).await?).await?;
    c.check(last.success, format!("one more {last:?}"))?;
    let every = maker.cancel_all_orders().await?;
    c.check(every.canceled.contains(&last.order_id), format!("cancel_all {every:?}"))?;
    c.check(maker.orders(&OrdersRequest::builder().build(), None).await?.data.is_empty(), "nothing open")?;

    println!("polymarket_client_sdk_v2 (order version {version}): {} checks passed", c.0);
    Ok(())
}

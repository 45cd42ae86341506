//! polymarket-client-sdk (Polymarket's Rust client for version 1 orders), unpatched, against
//! a running chain-mode predex on the Polygon layout: a maker trading for its Safe
//! (signature type 2, the Safe as funder) and a taker trading for itself (type 0). Each
//! makes or derives its key; the maker's Safe's balance is read, a bid rests and another is
//! cancelled, the taker's bid for the other outcome matches the first (a mint), and both
//! see the trade. Run by tests/it/clients.rs, which funds the wallets on chain and then
//! checks the settlement there.

use std::str::FromStr;

use alloy::primitives::Address;
use alloy::signers::local::PrivateKeySigner;
use alloy::signers::Signer as _;
use anyhow::Context;
use polymarket_client_sdk::clob::types::request::{BalanceAllowanceRequest, TradesRequest};
use polymarket_client_sdk::clob::types::{AssetType, OrderStatusType, OrderType, Side, SignatureType};
use polymarket_client_sdk::clob::{Client, Config};
use polymarket_client_sdk::types::{B256, U256};
use polymarket_client_sdk::POLYGON;
use v2_client_check::{dec, env, Checks};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut c = Checks(0);
    let result = run(&mut c).await;
    result.with_context(|| format!("after {} checks", c.0))
}

async fn run(c: &mut Checks) -> anyhow::Result<()> {
    let host = env("PREDEX_CLOB")?;
    let cond = B256::from_str(&env("PREDEX_COND")?)?;
    let yes = U256::from_str(&env("PREDEX_YES")?)?;
    let no = U256::from_str(&env("PREDEX_NO")?)?;
    let safe = Address::from_str(&env("PREDEX_FUNDER")?)?;
    let safe_usdc = dec(&env("PREDEX_FUNDER_USDC")?);
    let signer = |var: &str| -> anyhow::Result<PrivateKeySigner> {
        Ok(PrivateKeySigner::from_str(&env(var)?)?.with_chain_id(Some(POLYGON)))
    };
    let (maker_key, taker_key) = (signer("PREDEX_MAKER_KEY")?, signer("PREDEX_TAKER_KEY")?);

    // Keys, each made or derived from its wallet; the maker's for its Safe.
    let maker = Client::new(&host, Config::default())?
        .authentication_builder(&maker_key)
        .signature_type(SignatureType::GnosisSafe)
        .funder(safe)
        .authenticate()
        .await?;
    let taker = Client::new(&host, Config::default())?.authentication_builder(&taker_key).authenticate().await?;
    let keys = maker.api_keys().await?;
    c.check(format!("{keys:?}").contains(&maker.credentials().key().to_string()), format!("api keys {keys:?}"))?;

    // The Safe's collateral, as the venue reads it on chain for the owner's key and type 2.
    let request =
        BalanceAllowanceRequest::builder().asset_type(AssetType::Collateral).signature_type(SignatureType::GnosisSafe);
    let held = maker.balance_allowance(request.build()).await?;
    c.check(held.balance == safe_usdc, format!("the Safe's balance {held:?}"))?;

    // A bid for the Safe rests; a second is cancelled.
    let limit = |side: Side, token: U256, price: &str, size: &str| {
        maker.limit_order().token_id(token).price(dec(price)).size(dec(size)).side(side).order_type(OrderType::GTC)
    };
    let bid =
        maker.post_order(maker.sign(&maker_key, limit(Side::Buy, yes, "0.40", "10").build().await?).await?).await?;
    c.check(bid.success && bid.status == OrderStatusType::Live, format!("bid {bid:?}"))?;
    let order = maker.order(&bid.order_id).await?;
    c.check(order.maker_address == safe && order.asset_id == yes, format!("the Safe's order {order:?}"))?;
    let other =
        maker.post_order(maker.sign(&maker_key, limit(Side::Buy, yes, "0.30", "5").build().await?).await?).await?;
    c.check(other.success, format!("another bid {other:?}"))?;
    let cancelled = maker.cancel_order(&other.order_id).await?;
    c.check(cancelled.canceled == vec![other.order_id.clone()], format!("cancel_order {cancelled:?}"))?;

    // The taker, an EOA, bids for NO at 0.60: with the Safe's bid, a mint.
    let take = taker.limit_order().token_id(no).price(dec("0.60")).size(dec("10")).side(Side::Buy);
    let taken = taker.post_order(taker.sign(&taker_key, take.order_type(OrderType::GTC).build().await?).await?).await?;
    c.check(taken.success && taken.status == OrderStatusType::Matched, format!("the taker's bid {taken:?}"))?;
    // The client parses a trade's `transaction_hash` as 32 bytes, and SPEC populates it once
    // the settlement's transaction exists (a pass of the settlement worker after the match):
    // until then the client fails to read the trade, so it asks again.
    for (who, client) in [("taker", &taker), ("maker", &maker)] {
        let request = TradesRequest::builder().market(cond).build();
        let mut trades = client.trades(&request, None).await;
        for _ in 0..100 {
            if trades.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            trades = client.trades(&request, None).await;
        }
        let trades = trades?;
        c.check(trades.data.len() == 1 && trades.data[0].size == dec("10"), format!("the {who}'s trades {trades:?}"))?;
    }

    println!("polymarket-client-sdk (signature types 0 and 2): {} checks passed", c.0);
    Ok(())
}

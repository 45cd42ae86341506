//! `predex sign`: a minimal signing client for trying the exchange with curl. It prints
//! curl arguments (`-H NAME:VALUE ...`) or request bodies, signed exactly as the official
//! clients sign them: L1 ClobAuth, L2 HMAC, and EIP-712 orders with the clients' rounding.

use alloy_primitives::{Address, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde_json::{json, Value};

use crate::auth::{self, OrderDomains, SignedOrderFields};
use crate::domain::{mul_div_floor, now_secs, parse_decimal, parse_price, PRICE_ONE};

fn wallet(private_key: &str) -> anyhow::Result<PrivateKeySigner> {
    Ok(private_key.trim().parse()?)
}

fn hex_sig(s: alloy_primitives::Signature) -> String {
    format!("0x{}", alloy_primitives::hex::encode(s.as_bytes()))
}

/// L1 headers for POST /auth/api-key and GET /auth/derive-api-key.
pub fn l1_headers(private_key: &str, chain_id: u64, nonce: u64) -> anyhow::Result<Vec<(String, String)>> {
    let w = wallet(private_key)?;
    let ts = now_secs().to_string();
    let h = auth::eip712::clob_auth_hash(chain_id, w.address(), &ts, U256::from(nonce), auth::CLOB_AUTH_MESSAGE);
    Ok(vec![
        ("SERVICE_ADDRESS".into(), format!("{:#x}", w.address())),
        ("SERVICE_SIGNATURE".into(), hex_sig(w.sign_hash_sync(&h)?)),
        ("SERVICE_TIMESTAMP".into(), ts),
        ("SERVICE_NONCE".into(), nonce.to_string()),
    ])
}

/// L2 headers for a request, from the credentials JSON that POST /auth/api-key returned.
pub fn l2_headers(
    private_key: &str,
    creds: &Value,
    method: &str,
    path: &str,
    body: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    let w = wallet(private_key)?;
    let field = |k: &str| creds[k].as_str().map(str::to_string).ok_or_else(|| anyhow::anyhow!("credentials lack {k}"));
    let (address, api_key, secret, passphrase) =
        (format!("{:#x}", w.address()), field("apiKey")?, field("secret")?, field("passphrase")?);
    let c = auth::L2Creds { address: &address, api_key: &api_key, secret: &secret, passphrase: &passphrase };
    Ok(auth::l2_headers(&c, now_secs() as i64, &method.to_uppercase(), path, body)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect())
}

/// A POST /order body: a GTC-style limit order of `size` tokens at `price`, amounts as
/// the clients compute them (size × price, in 6-decimal units).
#[allow(clippy::too_many_arguments)]
pub fn order_body(
    private_key: &str,
    domains: &OrderDomains,
    neg_risk: bool,
    token_id: &str,
    side: &str,
    price: &str,
    size: &str,
    owner: &str,
    order_type: &str,
) -> anyhow::Result<Value> {
    let w = wallet(private_key)?;
    let p = parse_price(price).map_err(|_| anyhow::anyhow!("bad price {price}"))? as u64;
    let q = parse_decimal(size, 6).map_err(|_| anyhow::anyhow!("bad size {size}"))?;
    let cost = mul_div_floor(q, p, PRICE_ONE as u64);
    let buy = side.eq_ignore_ascii_case("BUY");
    let (maker_amount, taker_amount) = if buy { (cost, q) } else { (q, cost) };
    let mut salt_bytes = [0u8; 8];
    getrandom::getrandom(&mut salt_bytes)?;
    let salt = u64::from_le_bytes(salt_bytes) >> 12;
    let f = SignedOrderFields {
        salt: U256::from(salt),
        maker: w.address(),
        signer: w.address(),
        taker: Address::ZERO,
        token_id: U256::from_str_radix(token_id, 10)?,
        maker_amount: U256::from(maker_amount),
        taker_amount: U256::from(taker_amount),
        expiration: U256::ZERO,
        nonce: U256::ZERO,
        fee_rate_bps: U256::ZERO,
        side: if buy { 0 } else { 1 },
        signature_type: 0,
    };
    let h = auth::order_hash(&f, if neg_risk { &domains.neg_risk } else { &domains.standard });
    Ok(json!({
        "order": {
            "salt": salt,
            "maker": format!("{:#x}", w.address()),
            "signer": format!("{:#x}", w.address()),
            "taker": format!("{:#x}", Address::ZERO),
            "tokenId": token_id,
            "makerAmount": maker_amount.to_string(),
            "takerAmount": taker_amount.to_string(),
            "expiration": "0",
            "nonce": "0",
            "feeRateBps": "0",
            "side": if buy { "BUY" } else { "SELL" },
            "signatureType": 0,
            "signature": hex_sig(w.sign_hash_sync(&h)?),
        },
        "owner": owner,
        "orderType": order_type,
    }))
}

/// Formats headers as curl arguments: `-H NAME:VALUE ...` (values carry no spaces).
pub fn curl_args(headers: &[(String, String)]) -> String {
    headers.iter().map(|(k, v)| format!("-H {k}:{v}")).collect::<Vec<_>>().join(" ")
}

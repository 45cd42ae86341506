//! A trader: a wallet with its API key, and the signed requests and orders it sends.

use alloy_primitives::{Address, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use predex::auth::{self, SignedOrderFields};
use serde_json::{json, Value};

use super::*;

pub struct Trader {
    pub wallet: PrivateKeySigner,
    pub address: String,
    pub key: String,
    pub secret: String,
    pub passphrase: String,
    /// Seconds added to the L2 timestamp (drift tests).
    pub skew: i64,
}

impl Trader {
    pub fn new() -> Trader {
        let wallet = PrivateKeySigner::random();
        let address = format!("{:#x}", wallet.address());
        Trader { wallet, address, key: String::new(), secret: String::new(), passphrase: String::new(), skew: 0 }
    }

    pub fn set_creds(&mut self, b: &Value) {
        self.key = b["apiKey"].as_str().unwrap().to_string();
        self.secret = b["secret"].as_str().unwrap().to_string();
        self.passphrase = b["passphrase"].as_str().unwrap().to_string();
    }

    /// L1 headers as the clients build them.
    pub fn l1_headers(&self, chain_id: u64, ts: i64, nonce: u64) -> Vec<(&'static str, String)> {
        let h = auth::eip712::clob_auth_hash(
            chain_id,
            self.wallet.address(),
            &ts.to_string(),
            U256::from(nonce),
            auth::CLOB_AUTH_MESSAGE,
        );
        let sig = self.wallet.sign_hash_sync(&h).unwrap();
        vec![
            ("SERVICE_ADDRESS", self.address.clone()),
            ("SERVICE_SIGNATURE", format!("0x{}", alloy_primitives::hex::encode(sig.as_bytes()))),
            ("SERVICE_TIMESTAMP", ts.to_string()),
            ("SERVICE_NONCE", nonce.to_string()),
        ]
    }

    pub fn l1(&self, s: &Server, method: &str, path: &str, nonce: u64, code: Option<&str>) -> (u16, Value) {
        let mut r = ureq::request(method, &format!("{}{}", s.clob, path));
        for (k, v) in self.l1_headers(s.config.chain_id, now(), nonce) {
            r = r.set(k, &v);
        }
        if let Some(c) = code {
            r = r.set("SERVICE_INVITATION_CODE", c);
        }
        send(r, None)
    }

    pub fn l2_headers(&self, method: &str, path: &str, body: &str) -> Vec<(&'static str, String)> {
        let c = auth::L2Creds {
            address: &self.address,
            api_key: &self.key,
            secret: &self.secret,
            passphrase: &self.passphrase,
        };
        let ts = match method {
            "GET" | "HEAD" => now() + self.skew,
            _ => fresh_timestamp(&self.key, method, path, body, now() + self.skew),
        };
        auth::l2_headers(&c, ts, method, path, body)
    }

    /// An L2-signed request; `path` may carry a query string (signed with it).
    pub fn l2(&self, s: &Server, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.l2_at(&s.clob, method, path, body)
    }

    /// An L2-signed request with a raw body (malformed-JSON tests).
    pub fn l2_raw(&self, s: &Server, method: &str, path: &str, body: &str) -> (u16, Value) {
        let mut r = ureq::request(method, &format!("{}{path}", s.clob));
        for (k, v) in self.l2_headers(method, path, body) {
            r = r.set(k, &v);
        }
        send(r, Some(body.to_string()))
    }

    /// An L2-signed request to another of the servers (`base`: its URL).
    pub fn l2_at(&self, base: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let b = body.map(|v| v.to_string()).unwrap_or_default();
        let mut r = ureq::request(method, &format!("{base}{path}"));
        for (k, v) in self.l2_headers(method, path, &b) {
            r = r.set(k, &v);
        }
        send(r, body.map(|_| b))
    }

    /// A signed limit order built with the clients' rounding (price × size).
    pub fn order(&self, s: &Server, token: &str, side: &str, price: &str, size: &str) -> Value {
        let p = predex::domain::parse_price(price).unwrap() as u64; // 1e-4
        let q = predex::domain::parse_decimal(size, 6).unwrap();
        let cost = q * p / 10_000;
        let (maker, taker) = if side == "BUY" { (cost, q) } else { (q, cost) };
        self.signed(token, side, maker, taker).sign(s)
    }

    /// A signed order of `maker_amount` for `taker_amount` ([`OrderBuilder`]: the rest has
    /// defaults).
    pub fn signed(&self, token: &str, side: &str, maker_amount: u64, taker_amount: u64) -> OrderBuilder<'_> {
        OrderBuilder {
            trader: self,
            token: token.to_string(),
            side: side.to_string(),
            amounts: (maker_amount, taker_amount),
            expiration: 0,
            nonce: 0,
            fee_bps: 0,
            neg_risk: false,
            maker: None,
            salt: None,
        }
    }

    /// POST /order with a wrapper.
    pub fn submit(&self, s: &Server, order: Value, order_type: &str) -> (u16, Value) {
        self.l2(s, "POST", "/order", Some(&json!({"order": order, "owner": self.key, "orderType": order_type})))
    }

    /// Places a GTC limit order and asserts it was accepted; returns the result.
    pub fn place(&self, s: &Server, token: &str, side: &str, price: &str, size: &str) -> Value {
        let o = self.order(s, token, side, price, size);
        let (st, b) = self.submit(s, o, "GTC");
        assert_eq!(st, 200, "{b}");
        assert_eq!(b["success"], true, "{b}");
        b
    }

    /// The wallet of signature type `t` derived from this trader's address with the
    /// server's factories: 1 its proxy wallet, 2 its Safe.
    pub fn derived(&self, s: &Server, t: u8) -> Address {
        let f = s.config.wallet_factories().unwrap();
        match t {
            1 => f.proxy(self.wallet.address()),
            _ => f.safe(self.wallet.address()),
        }
    }

    pub fn balances(&self, s: &Server) -> Value {
        s.internal_get(&format!("/internal/balances?address={}", self.address)).1
    }

    /// Balance of an asset in micro-units.
    /// Settled balance of an asset.
    pub fn balance(&self, s: &Server, asset: &str) -> u64 {
        self.account(s, asset, "balance")
    }

    /// What the trader can use now: settled + incoming − reserved.
    pub fn available(&self, s: &Server, asset: &str) -> u64 {
        self.account(s, asset, "available")
    }

    fn account(&self, s: &Server, asset: &str, field: &str) -> u64 {
        let b = self.balances(s);
        b[asset][field].as_str().map(|x| predex::domain::parse_decimal(x, 6).unwrap()).unwrap_or(0)
    }
}

fn rand_salt() -> u64 {
    let mut b = [0u8; 8];
    getrandom::getrandom(&mut b).unwrap();
    u64::from_le_bytes(b) >> 12
}

/// A signed order as [`Trader::signed`] starts it: no expiration, nonce 0, no fee, the
/// standard exchange's domain, the trader's own address as maker (signature type 0) and a
/// random salt sent as a JSON number; each method changes one of them.
pub struct OrderBuilder<'a> {
    trader: &'a Trader,
    token: String,
    side: String,
    amounts: (u64, u64),
    expiration: u64,
    nonce: u64,
    fee_bps: u64,
    neg_risk: bool,
    maker: Option<(Address, u8)>,
    salt: Option<U256>,
}

impl OrderBuilder<'_> {
    pub fn expiration(mut self, at: u64) -> Self {
        self.expiration = at;
        self
    }
    pub fn nonce(mut self, nonce: u64) -> Self {
        self.nonce = nonce;
        self
    }
    pub fn fee_bps(mut self, bps: u64) -> Self {
        self.fee_bps = bps;
        self
    }
    /// Signed for the negative-risk exchange.
    pub fn neg_risk(mut self) -> Self {
        self.neg_risk = true;
        self
    }
    /// Made by `maker` (a wallet derived from the trader, or a stranger's) with signature
    /// type `signature_type`.
    pub fn maker(mut self, maker: Address, signature_type: u8) -> Self {
        self.maker = Some((maker, signature_type));
        self
    }
    /// A salt of the caller's, sent as a decimal string (a JSON number cannot hold every
    /// uint256).
    pub fn salt(mut self, salt: U256) -> Self {
        self.salt = Some(salt);
        self
    }

    /// The order signed under `s`'s domains, as a client sends it.
    pub fn sign(self, s: &Server) -> Value {
        let this = self.trader;
        let (salt, random) = match self.salt {
            Some(salt) => (salt, None),
            None => {
                let n = rand_salt();
                (U256::from(n), Some(n))
            }
        };
        let (token, side, (maker_amount, taker_amount)) = (self.token.as_str(), self.side.as_str(), self.amounts);
        let (expiration, nonce, fee_bps) = (self.expiration, self.nonce, self.fee_bps);
        let (maker_addr, sig_type) = self.maker.unwrap_or((this.wallet.address(), 0));
        let f = SignedOrderFields {
            salt,
            maker: maker_addr,
            signer: this.wallet.address(),
            taker: Address::ZERO,
            token_id: U256::from_str_radix(token, 10).unwrap(),
            maker_amount: U256::from(maker_amount),
            taker_amount: U256::from(taker_amount),
            expiration: U256::from(expiration),
            nonce: U256::from(nonce),
            fee_rate_bps: U256::from(fee_bps),
            side: if side == "BUY" { 0 } else { 1 },
            signature_type: sig_type,
        };
        let d = s.domains();
        let h = auth::order_hash(&f, if self.neg_risk { &d.neg_risk } else { &d.standard });
        let sig = this.wallet.sign_hash_sync(&h).unwrap();
        let mut o = json!({
            "salt": salt.to_string(),
            "maker": format!("{maker_addr:#x}"),
            "signer": this.address,
            "taker": format!("{:#x}", Address::ZERO),
            "tokenId": token,
            "makerAmount": maker_amount.to_string(),
            "takerAmount": taker_amount.to_string(),
            "expiration": expiration.to_string(),
            "nonce": nonce.to_string(),
            "feeRateBps": fee_bps.to_string(),
            "side": side,
            "signatureType": sig_type,
            "signature": format!("0x{}", alloy_primitives::hex::encode(sig.as_bytes())),
        });
        if let Some(n) = random {
            o["salt"] = json!(n);
        }
        o
    }

    /// The order as version 2 (no taker, nonce or fee rate; a timestamp, metadata and
    /// `builder`), signed under `s`'s version 2 domains, as the V2 clients send it.
    pub fn sign_v2(self, s: &Server, builder: alloy_primitives::B256) -> Value {
        let this = self.trader;
        let salt = self.salt.unwrap_or_else(|| U256::from(rand_salt()));
        let (maker_addr, sig_type) = self.maker.unwrap_or((this.wallet.address(), 0));
        let timestamp = predex::domain::now_millis();
        let f = auth::OrderFieldsV2 {
            salt,
            maker: maker_addr,
            signer: this.wallet.address(),
            token_id: U256::from_str_radix(&self.token, 10).unwrap(),
            maker_amount: U256::from(self.amounts.0),
            taker_amount: U256::from(self.amounts.1),
            side: if self.side == "BUY" { 0 } else { 1 },
            signature_type: sig_type,
            timestamp: U256::from(timestamp),
            metadata: alloy_primitives::B256::ZERO,
            builder,
        };
        let h = auth::order_hash_v2(&f, s.domains().of(2, self.neg_risk));
        let sig = this.wallet.sign_hash_sync(&h).unwrap();
        json!({
            "salt": salt.to_string(),
            "maker": format!("{maker_addr:#x}"),
            "signer": this.address,
            "tokenId": self.token,
            "makerAmount": self.amounts.0.to_string(),
            "takerAmount": self.amounts.1.to_string(),
            "side": self.side,
            "expiration": self.expiration.to_string(),
            "signatureType": sig_type,
            "timestamp": timestamp.to_string(),
            "metadata": format!("{:#x}", alloy_primitives::B256::ZERO),
            "builder": format!("{builder:#x}"),
            "signature": format!("0x{}", alloy_primitives::hex::encode(sig.as_bytes())),
        })
    }
}

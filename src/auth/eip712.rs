//! EIP-712 hashing for ClobAuth (L1) and CTF exchange orders, and signer recovery through
//! libsecp256k1 (alloy-primitives' `secp256k1` feature, global context).

use alloy_primitives::{keccak256, Address, Signature, B256, U256};
use alloy_sol_types::{sol, Eip712Domain, SolStruct};
use std::borrow::Cow;

sol! {
    struct ClobAuth {
        address address;
        string timestamp;
        uint256 nonce;
        string message;
    }

    struct Order {
        uint256 salt;
        address maker;
        address signer;
        address taker;
        uint256 tokenId;
        uint256 makerAmount;
        uint256 takerAmount;
        uint256 expiration;
        uint256 nonce;
        uint256 feeRateBps;
        uint8 side;
        uint8 signatureType;
    }
}

/// Version 2's order (Polymarket's CTF Exchange V2): no taker, nonce or fee rate; the
/// creation time, and two 32-byte tags.
mod v2 {
    alloy_sol_types::sol! {
        struct Order {
            uint256 salt;
            address maker;
            address signer;
            uint256 tokenId;
            uint256 makerAmount;
            uint256 takerAmount;
            uint8 side;
            uint8 signatureType;
            uint256 timestamp;
            bytes32 metadata;
            bytes32 builder;
        }
    }
}

/// An EIP-712 domain with its separator computed once (hashing it per order would cost
/// more than the order's own struct hash).
#[derive(Debug, Clone)]
pub struct Domain {
    pub domain: Eip712Domain,
    pub separator: B256,
}

impl Domain {
    pub fn new(domain: Eip712Domain) -> Domain {
        Domain { separator: domain.separator(), domain }
    }
}

/// The order domains: standard and negative-risk exchanges share name and version and
/// differ in verifyingContract; version 2's orders are signed under domain version "2" and
/// the V2 exchanges' addresses. The name is a setting (`order-domain-name`): Polymarket's
/// contracts and official clients use [`POLYMARKET_ORDER_DOMAIN`].
#[derive(Debug, Clone)]
pub struct OrderDomains {
    pub standard: Domain,
    pub neg_risk: Domain,
    pub v2_standard: Domain,
    pub v2_neg_risk: Domain,
    pub chain_id: u64,
}

/// Polymarket's CTF Exchange V2 on Polygon (and Amoy): version 2's verifyingContract unless
/// set.
pub const POLYGON_EXCHANGE_V2: Address = alloy_primitives::address!("E111180000d2663C0091e4f400237545B87B996B");
/// Polymarket's Neg Risk CTF Exchange V2 on Polygon (and Amoy).
pub const POLYGON_NEG_RISK_EXCHANGE_V2: Address =
    alloy_primitives::address!("e2222d279d744050d28e00520010520000310F59");

fn domain(name: &str, version: &'static str, chain_id: u64, contract: Address) -> Domain {
    Domain::new(Eip712Domain {
        name: Some(Cow::Owned(name.to_string())),
        version: Some(Cow::Borrowed(version)),
        chain_id: Some(U256::from(chain_id)),
        verifying_contract: Some(contract),
        salt: None,
    })
}

impl OrderDomains {
    /// Version 1's domains over these exchanges; version 2's over Polygon's V2 exchanges
    /// ([`OrderDomains::with_v2`] sets others).
    pub fn new(name: &str, chain_id: u64, exchange: Address, neg_risk_exchange: Address) -> Self {
        OrderDomains {
            standard: domain(name, "1", chain_id, exchange),
            neg_risk: domain(name, "1", chain_id, neg_risk_exchange),
            v2_standard: domain(name, "2", chain_id, POLYGON_EXCHANGE_V2),
            v2_neg_risk: domain(name, "2", chain_id, POLYGON_NEG_RISK_EXCHANGE_V2),
            chain_id,
        }
    }

    /// With version 2's exchanges at these addresses.
    pub fn with_v2(self, exchange: Address, neg_risk_exchange: Address) -> Self {
        let name = self.standard.domain.name.clone().unwrap_or_default();
        OrderDomains {
            v2_standard: domain(&name, "2", self.chain_id, exchange),
            v2_neg_risk: domain(&name, "2", self.chain_id, neg_risk_exchange),
            ..self
        }
    }

    /// The domain an order of `version` for a market (negative risk or not) is signed under.
    pub fn of(&self, version: u8, neg_risk: bool) -> &Domain {
        match (version, neg_risk) {
            (2, false) => &self.v2_standard,
            (2, true) => &self.v2_neg_risk,
            (_, false) => &self.standard,
            (_, true) => &self.neg_risk,
        }
    }

    /// The two exchanges (standard, negative risk) orders of `version` are signed for.
    pub fn exchanges(&self, version: u8) -> [Address; 2] {
        [false, true].map(|neg_risk| self.of(version, neg_risk).domain.verifying_contract.unwrap_or_default())
    }
}

/// The order domain name hard-coded in Polymarket's exchange contracts (`CTFExchange.sol`:
/// `Hashing("Polymarket CTF Exchange", "1")`) and signed under by its official clients.
pub const POLYMARKET_ORDER_DOMAIN: &str = "Polymarket CTF Exchange";

/// The signed fields of an order, parsed.
#[derive(Debug, Clone)]
pub struct SignedOrderFields {
    pub salt: U256,
    pub maker: Address,
    pub signer: Address,
    pub taker: Address,
    pub token_id: U256,
    pub maker_amount: U256,
    pub taker_amount: U256,
    pub expiration: U256,
    pub nonce: U256,
    pub fee_rate_bps: U256,
    pub side: u8,
    pub signature_type: u8,
}

/// The signed fields of a version 2 order, parsed.
#[derive(Debug, Clone)]
pub struct OrderFieldsV2 {
    pub salt: U256,
    pub maker: Address,
    pub signer: Address,
    pub token_id: U256,
    pub maker_amount: U256,
    pub taker_amount: U256,
    pub side: u8,
    pub signature_type: u8,
    /// Creation time (ms); signed, not checked by the exchange.
    pub timestamp: U256,
    pub metadata: B256,
    /// The builder code the order is attributed to (zero: none).
    pub builder: B256,
}

/// What an order's signature covers, in either version.
#[derive(Debug, Clone)]
pub enum OrderFields {
    V1(SignedOrderFields),
    V2(OrderFieldsV2),
}

impl OrderFields {
    pub fn version(&self) -> u8 {
        match self {
            OrderFields::V1(_) => 1,
            OrderFields::V2(_) => 2,
        }
    }

    pub fn maker(&self) -> Address {
        match self {
            OrderFields::V1(f) => f.maker,
            OrderFields::V2(f) => f.maker,
        }
    }

    pub fn signer(&self) -> Address {
        match self {
            OrderFields::V1(f) => f.signer,
            OrderFields::V2(f) => f.signer,
        }
    }

    pub fn salt(&self) -> U256 {
        match self {
            OrderFields::V1(f) => f.salt,
            OrderFields::V2(f) => f.salt,
        }
    }

    /// The order's EIP-712 hash under its version's domain for a market.
    pub fn hash(&self, domains: &OrderDomains, neg_risk: bool) -> B256 {
        let domain = domains.of(self.version(), neg_risk);
        match self {
            OrderFields::V1(f) => order_hash(f, domain),
            OrderFields::V2(f) => order_hash_v2(f, domain),
        }
    }
}

/// keccak256 of the Order type string, computed once.
static ORDER_TYPEHASH: std::sync::LazyLock<B256> =
    std::sync::LazyLock::new(|| keccak256(Order::eip712_root_type().as_bytes()));

/// EIP-712 signing hash of an order: keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(order)),
/// with hashStruct = keccak256(typeHash ‖ encodeData).
pub fn order_hash(o: &SignedOrderFields, domain: &Domain) -> B256 {
    let data = Order {
        salt: o.salt,
        maker: o.maker,
        signer: o.signer,
        taker: o.taker,
        tokenId: o.token_id,
        makerAmount: o.maker_amount,
        takerAmount: o.taker_amount,
        expiration: o.expiration,
        nonce: o.nonce,
        feeRateBps: o.fee_rate_bps,
        side: o.side,
        signatureType: o.signature_type,
    }
    .eip712_encode_data();
    signing_hash(&ORDER_TYPEHASH, &data, domain)
}

static ORDER_V2_TYPEHASH: std::sync::LazyLock<B256> =
    std::sync::LazyLock::new(|| keccak256(v2::Order::eip712_root_type().as_bytes()));

/// EIP-712 signing hash of a version 2 order under `domain` (version "2").
pub fn order_hash_v2(o: &OrderFieldsV2, domain: &Domain) -> B256 {
    let data = v2::Order {
        salt: o.salt,
        maker: o.maker,
        signer: o.signer,
        tokenId: o.token_id,
        makerAmount: o.maker_amount,
        takerAmount: o.taker_amount,
        side: o.side,
        signatureType: o.signature_type,
        timestamp: o.timestamp,
        metadata: o.metadata,
        builder: o.builder,
    }
    .eip712_encode_data();
    signing_hash(&ORDER_V2_TYPEHASH, &data, domain)
}

/// keccak256(0x1901 ‖ domainSeparator ‖ keccak256(typeHash ‖ encodeData)).
fn signing_hash(type_hash: &B256, data: &[u8], domain: &Domain) -> B256 {
    let mut st = Vec::with_capacity(32 + data.len());
    st.extend_from_slice(type_hash.as_slice());
    st.extend_from_slice(data);
    let s = keccak256(&st);
    let mut buf = [0u8; 66];
    buf[..2].copy_from_slice(&[0x19, 0x01]);
    buf[2..34].copy_from_slice(domain.separator.as_slice());
    buf[34..].copy_from_slice(s.as_slice());
    keccak256(buf)
}

/// The order ID: a UUID made of the first 16 bytes of the order's EIP-712 hash, so a client
/// knows it before sending and a resubmitted order is recognised.
pub fn order_id(hash: &B256) -> uuid::Uuid {
    uuid::Builder::from_custom_bytes(hash.0[..16].try_into().expect("16 bytes")).into_uuid()
}

/// Parses a 65-byte hex signature (v = 27/28 or 0/1).
pub fn parse_signature(hex: &str) -> Option<Signature> {
    let bytes = alloy_primitives::hex::decode(hex.trim()).ok()?;
    if bytes.len() != 65 {
        return None;
    }
    Signature::from_raw(&bytes).ok()
}

/// Recovers the address that signed `hash`.
pub fn recover(hash: &B256, signature: &str) -> Option<Address> {
    parse_signature(signature)?.recover_address_from_prehash(hash).ok()
}

/// Recovers the signer of an order of either version: (order hash, recovered address).
pub fn recover_signer(
    o: &OrderFields,
    domains: &OrderDomains,
    neg_risk: bool,
    signature: &str,
) -> (B256, Option<Address>) {
    let h = o.hash(domains, neg_risk);
    (h, recover(&h, signature))
}

/// Recovers the signer of an order: returns (order hash, recovered address).
pub fn recover_order_signer(o: &SignedOrderFields, domain: &Domain, signature: &str) -> (B256, Option<Address>) {
    let h = order_hash(o, domain);
    (h, recover(&h, signature))
}

/// ClobAuth domain: name ClobAuthDomain, version 1, chainId; no verifyingContract.
pub fn clob_auth_domain(chain_id: u64) -> Eip712Domain {
    Eip712Domain {
        name: Some(Cow::Borrowed("ClobAuthDomain")),
        version: Some(Cow::Borrowed("1")),
        chain_id: Some(U256::from(chain_id)),
        verifying_contract: None,
        salt: None,
    }
}

/// The ClobAuth signing hash over one spelling of the message.
pub fn clob_auth_hash(chain_id: u64, address: Address, timestamp: &str, nonce: U256, message: &str) -> B256 {
    ClobAuth { address, timestamp: timestamp.to_string(), nonce, message: message.to_string() }
        .eip712_signing_hash(&clob_auth_domain(chain_id))
}

/// Verifies L1 headers: true when `signature` over ClobAuth (either message spelling) was
/// made by `address`.
pub fn recover_clob_auth(chain_id: u64, address: Address, timestamp: &str, nonce: U256, signature: &str) -> bool {
    let Some(sig) = parse_signature(signature) else { return false };
    super::CLOB_AUTH_MESSAGES.iter().any(|m| {
        sig.recover_address_from_prehash(&clob_auth_hash(chain_id, address, timestamp, nonce, m)).ok() == Some(address)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The official clients' published L1 vector: the well-known test key
    /// 0xac09…ff80 (address 0xf39F…2266), chain 80002, timestamp 10000000, nonce 23.
    #[test]
    fn clob_auth_matches_official_clients() {
        let address: Address = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".parse().unwrap();
        let sig = "0xf62319a987514da40e57e2f4d7529f7bac38f0355bd88bb5adbb3768d80de6c1682518e0af677d5260366425f4361e7b70c25ae232aff0ab2331e2b164a1aedc1b";
        assert!(recover_clob_auth(80002, address, "10000000", U256::from(23), sig));
        assert!(!recover_clob_auth(137, address, "10000000", U256::from(23), sig));
        assert!(!recover_clob_auth(80002, address, "10000001", U256::from(23), sig));
        let h = clob_auth_hash(80002, address, "10000000", U256::from(23), super::super::CLOB_AUTH_MESSAGE);
        assert_eq!(recover(&h, sig), Some(address));
    }

    /// The cached-separator hash equals alloy's full EIP-712 signing hash.
    #[test]
    fn order_hash_matches_eip712_signing_hash() {
        let d = OrderDomains::new("Service CTF Exchange", 137, Address::repeat_byte(7), Address::repeat_byte(9));
        let f = SignedOrderFields {
            salt: U256::from(42),
            maker: Address::repeat_byte(1),
            signer: Address::repeat_byte(1),
            taker: Address::ZERO,
            token_id: U256::from(1234),
            maker_amount: U256::from(5_000_000),
            taker_amount: U256::from(10_000_000),
            expiration: U256::ZERO,
            nonce: U256::ZERO,
            fee_rate_bps: U256::from(100),
            side: 1,
            signature_type: 2,
        };
        let full = Order {
            salt: f.salt,
            maker: f.maker,
            signer: f.signer,
            taker: f.taker,
            tokenId: f.token_id,
            makerAmount: f.maker_amount,
            takerAmount: f.taker_amount,
            expiration: f.expiration,
            nonce: f.nonce,
            feeRateBps: f.fee_rate_bps,
            side: f.side,
            signatureType: f.signature_type,
        }
        .eip712_signing_hash(&d.neg_risk.domain);
        assert_eq!(order_hash(&f, &d.neg_risk), full);
        assert_ne!(order_hash(&f, &d.standard), full);
    }

    /// Version 2's hash is alloy's EIP-712 signing hash of the V2 struct under domain
    /// version "2" and the V2 exchange, and the V2 clients' published type string.
    #[test]
    fn v2_order_hash_matches_eip712_signing_hash() {
        assert_eq!(
            v2::Order::eip712_root_type(),
            "Order(uint256 salt,address maker,address signer,uint256 tokenId,uint256 makerAmount,\
             uint256 takerAmount,uint8 side,uint8 signatureType,uint256 timestamp,bytes32 metadata,bytes32 builder)"
        );
        let d = OrderDomains::new(POLYMARKET_ORDER_DOMAIN, 137, Address::repeat_byte(7), Address::repeat_byte(9));
        assert_eq!(d.of(2, false).domain.verifying_contract, Some(POLYGON_EXCHANGE_V2));
        assert_eq!(d.of(2, true).domain.version.as_deref(), Some("2"));
        let f = OrderFieldsV2 {
            salt: U256::from(42),
            maker: Address::repeat_byte(1),
            signer: Address::repeat_byte(1),
            token_id: U256::from(1234),
            maker_amount: U256::from(5_000_000),
            taker_amount: U256::from(10_000_000),
            side: 0,
            signature_type: 0,
            timestamp: U256::from(1_777_000_000_000u64),
            metadata: B256::ZERO,
            builder: B256::repeat_byte(3),
        };
        let d = d.with_v2(Address::repeat_byte(5), Address::repeat_byte(6));
        let full = v2::Order {
            salt: f.salt,
            maker: f.maker,
            signer: f.signer,
            tokenId: f.token_id,
            makerAmount: f.maker_amount,
            takerAmount: f.taker_amount,
            side: f.side,
            signatureType: f.signature_type,
            timestamp: f.timestamp,
            metadata: f.metadata,
            builder: f.builder,
        }
        .eip712_signing_hash(&d.v2_standard.domain);
        assert_eq!(d.v2_standard.domain.verifying_contract, Some(Address::repeat_byte(5)));
        assert_eq!(OrderFields::V2(f.clone()).hash(&d, false), full);
        assert_ne!(OrderFields::V2(f).hash(&d, true), full);
    }
}

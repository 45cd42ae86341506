//! The auth path per operation: L2 HMAC verification, EIP-712 order hashing, and order
//! signature recovery through libsecp256k1; and the rate limiter every order-book request
//! passes (`ratelimit/check`: client IP from X-Forwarded-For, then the sliding-window count,
//! over 10,000 distinct clients).

use alloy_primitives::{Address, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use predex::auth::{self, OrderDomains, SignedOrderFields};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("auth");
    let secret = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let body = r#"{"order":{"salt":123,"maker":"0x0000000000000000000000000000000000000001","tokenId":"1","makerAmount":"5000000","takerAmount":"10000000","side":"BUY"},"owner":"x","orderType":"GTC"}"#;
    let sig = auth::build_hmac_signature(secret, "1700000000", "POST", "/order", body);
    g.bench_function("hmac_verify", |b| {
        b.iter(|| auth::verify_hmac(secret, "1700000000", "POST", &["/order"], &[body.as_bytes()], black_box(&sig)))
    });

    let wallet = PrivateKeySigner::random();
    let d = OrderDomains::new(
        predex::config::DEFAULT_ORDER_DOMAIN_NAME,
        137,
        Address::repeat_byte(1),
        Address::repeat_byte(2),
    );
    let f = SignedOrderFields {
        salt: U256::from(123u64),
        maker: wallet.address(),
        signer: wallet.address(),
        taker: Address::ZERO,
        token_id: U256::from(1u64),
        maker_amount: U256::from(5_000_000u64),
        taker_amount: U256::from(10_000_000u64),
        expiration: U256::ZERO,
        nonce: U256::ZERO,
        fee_rate_bps: U256::ZERO,
        side: 0,
        signature_type: 0,
    };
    g.bench_function("order_hash", |b| b.iter(|| auth::order_hash(black_box(&f), &d.standard)));
    let h = auth::order_hash(&f, &d.standard);
    let s = format!("0x{}", alloy_primitives::hex::encode(wallet.sign_hash_sync(&h).unwrap().as_bytes()));
    g.bench_function("order_recover", |b| b.iter(|| auth::recover_order_signer(black_box(&f), &d.standard, &s)));
    g.finish();

    let mut g = c.benchmark_group("ratelimit");
    let l = predex::app::ratelimit::RateLimiter::new(u32::MAX, 60, vec!["127.0.0.1".parse().unwrap()]);
    let peer: std::net::SocketAddr = "127.0.0.1:4000".parse().unwrap();
    let xffs: Vec<String> = (0..10_000u32).map(|i| std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string()).collect();
    let mut i = 0;
    g.bench_function("check", |b| {
        b.iter(|| {
            i = (i + 1) % xffs.len();
            let ip = l.client_ip(Some(peer), Some(black_box(&xffs[i])), None).unwrap();
            l.allow(ip)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

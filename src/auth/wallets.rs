//! The wallets an owner's key acts for: its own address (signature type 0), and the proxy
//! wallet (type 1) and the Safe (type 2) derived from it by CREATE2, exactly as Polymarket's
//! exchange checks an order's maker (`Signatures.sol`) and as its clients derive a funder
//! (`../shared/REFERENCE.md`, "Wallets"). Pure arithmetic: no deployment is looked up, so a
//! wallet acts for its owner before it exists on any chain.
//!
//! Nothing here binds an address by use: a stranger's address is never one of these three
//! for a key it does not hold.

use alloy_primitives::{keccak256, Address, B256};

/// Polygon's proxy-wallet factory (Polymarket's `ProxyWalletFactory`).
pub const POLYGON_PROXY_FACTORY: &str = "0xaB45c5A4B0c941a2F231C04C3f49182e1A254052";
/// keccak256 of the proxy wallet's init code on Polygon (the clone of the factory's
/// implementation `0x44e999d5…aEB4f`; see [`proxy_init_code`]).
pub const POLYGON_PROXY_INIT_CODE_HASH: &str = "0xd21df8dc65880a8606f09fe0ce3df9b8869287ab0b058be05aa9e8af6330a00b";
/// Polygon's Safe factory (Polymarket's `SafeProxyFactory`).
pub const POLYGON_SAFE_FACTORY: &str = "0xaacFeEa03eb1561C4e67d661e40682Bd20E3541b";
/// keccak256 of GnosisSafeProxy's creation code followed by Polygon's master copy.
pub const POLYGON_SAFE_INIT_CODE_HASH: &str = "0x2bce2127ff07fb632d16c8347c4ebf501f4841168bed00d9e6ef715ddb6fcecf";

/// Where the venue's wallets are derived from: each factory and the hash of the init code
/// it deploys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalletFactories {
    pub proxy_factory: Address,
    pub proxy_init_code_hash: B256,
    pub safe_factory: Address,
    pub safe_init_code_hash: B256,
}

impl WalletFactories {
    /// Polygon's factories: what a Polymarket client derives its funder with.
    pub fn polygon() -> WalletFactories {
        let a = |s: &str| s.parse().expect("literal address");
        let h = |s: &str| s.parse().expect("literal hash");
        WalletFactories {
            proxy_factory: a(POLYGON_PROXY_FACTORY),
            proxy_init_code_hash: h(POLYGON_PROXY_INIT_CODE_HASH),
            safe_factory: a(POLYGON_SAFE_FACTORY),
            safe_init_code_hash: h(POLYGON_SAFE_INIT_CODE_HASH),
        }
    }

    /// The proxy wallet of `owner`: salt keccak256(abi.encodePacked(owner)).
    pub fn proxy(&self, owner: Address) -> Address {
        self.proxy_factory.create2(keccak256(owner), self.proxy_init_code_hash)
    }

    /// The Safe of `owner`: salt keccak256(abi.encode(owner)).
    pub fn safe(&self, owner: Address) -> Address {
        let mut word = [0u8; 32];
        word[12..].copy_from_slice(owner.as_slice());
        self.safe_factory.create2(keccak256(word), self.safe_init_code_hash)
    }
}

/// The proxy wallet's init code: the factory's clone template around `implementation`,
/// then `abi.encodeWithSignature("cloneConstructor(bytes)", "")` (167 bytes in all), as
/// `@polymarket/sdk` builds it.
pub fn proxy_init_code(factory: Address, implementation: Address) -> Vec<u8> {
    use alloy_primitives::hex;
    let mut code = hex::decode("3d3d606380380380913d393d73").expect("literal");
    code.extend_from_slice(factory.as_slice());
    code.extend(hex::decode("5af4602a57600080fd5b602d8060366000396000f3363d3d373d3d3d363d73").expect("literal"));
    code.extend_from_slice(implementation.as_slice());
    code.extend(hex::decode("5af43d82803e903d91602b57fd5bf3").expect("literal"));
    code.extend_from_slice(&keccak256("cloneConstructor(bytes)")[..4]);
    // One dynamic `bytes` argument, empty: its offset, then its length.
    let mut offset = [0u8; 32];
    offset[31] = 0x20;
    code.extend_from_slice(&offset);
    code.extend_from_slice(&[0u8; 32]);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polygon's proxy init-code hash is the clone of its implementation built here: the
    /// template and the constructor call are the ones the exchange's factory deploys.
    #[test]
    fn the_proxy_init_code_hashes_to_polygons() {
        let f = WalletFactories::polygon();
        let implementation: Address = "0x44e999d5c2F66Ef0861317f9A4805AC2e90aEB4f".parse().unwrap();
        let code = proxy_init_code(f.proxy_factory, implementation);
        assert_eq!(code.len(), 167);
        assert_eq!(keccak256(&code), f.proxy_init_code_hash);
    }

    /// A Safe an official client derived for a signer on Polygon (a public report of
    /// `@polymarket/builder-relayer-client`'s `deriveSafe`), and the proxy's salt is the
    /// packed 20 bytes, the Safe's the 32-byte word: the two differ for one owner.
    #[test]
    fn derived_wallets_are_the_clients() {
        let f = WalletFactories::polygon();
        let owner: Address = "0xBBc264c10F54A61607A31B53358a5A87d4B045be".parse().unwrap();
        let safe: Address = "0xEFae63145ffb73Ab047e578324bcA9BaABE5E1Ad".parse().unwrap();
        assert_eq!(f.safe(owner), safe);
        let proxy = f.proxy(owner);
        assert_eq!(proxy, f.proxy_factory.create2(keccak256(owner.as_slice()), f.proxy_init_code_hash));
        assert_ne!(proxy, safe);
        // Another owner, other wallets.
        let other: Address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".parse().unwrap();
        assert_ne!(f.safe(other), safe);
        assert_ne!(f.proxy(other), proxy);
    }
}

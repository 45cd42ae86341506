//! What a wallet's owner signs for the relayer (`../shared/REFERENCE.md`, "Polymarket's
//! relayer"): a Safe transaction (`SafeTx`, EIP-712 under the Safe's own domain), the Safe
//! factory's `CreateProxy`, and the Safe's signature forms.

use alloy_primitives::{Address, Signature, B256, U256};
use alloy_sol_types::{sol, Eip712Domain, SolStruct};
use std::borrow::Cow;

sol! {
    struct SafeTx {
        address to;
        uint256 value;
        bytes data;
        uint8 operation;
        uint256 safeTxGas;
        uint256 baseGas;
        uint256 gasPrice;
        address gasToken;
        address refundReceiver;
        uint256 nonce;
    }

    struct CreateProxy {
        address paymentToken;
        uint256 payment;
        address paymentReceiver;
    }
}

/// The name of Polymarket's Safe factory's EIP-712 domain.
pub const SAFE_FACTORY_NAME: &str = "Polymarket Contract Proxy Factory";

/// The hash a Safe's owner signs to run `data` at `to` (a call, or a delegatecall:
/// `operation` 1) with the Safe's `nonce`, the relayer paying the gas (no refund: every gas
/// field zero). Domain: the chain and the Safe, no name or version (Safe 1.3.0).
pub fn safe_tx_hash(chain_id: u64, safe: Address, to: Address, data: &[u8], operation: u8, nonce: U256) -> B256 {
    let domain =
        Eip712Domain { chain_id: Some(U256::from(chain_id)), verifying_contract: Some(safe), ..Default::default() };
    let tx = SafeTx {
        to,
        value: U256::ZERO,
        data: data.to_vec().into(),
        operation,
        safeTxGas: U256::ZERO,
        baseGas: U256::ZERO,
        gasPrice: U256::ZERO,
        gasToken: Address::ZERO,
        refundReceiver: Address::ZERO,
        nonce,
    };
    tx.eip712_signing_hash(&domain)
}

/// The hash an owner signs for the Safe factory to deploy its Safe, paying nothing.
pub fn create_proxy_hash(chain_id: u64, factory: Address) -> B256 {
    let domain = Eip712Domain {
        name: Some(Cow::Borrowed(SAFE_FACTORY_NAME)),
        chain_id: Some(U256::from(chain_id)),
        verifying_contract: Some(factory),
        ..Default::default()
    };
    CreateProxy { paymentToken: Address::ZERO, payment: U256::ZERO, paymentReceiver: Address::ZERO }
        .eip712_signing_hash(&domain)
}

/// The hash a proxy wallet's owner signs for the relay hub (GSN v1's relay request):
/// keccak256("rlx:" ‖ from ‖ to ‖ data ‖ fee ‖ gas price ‖ gas limit ‖ nonce ‖ hub ‖ relay).
#[allow(clippy::too_many_arguments)]
pub fn relay_hash(
    from: Address,
    to: Address,
    data: &[u8],
    fee: U256,
    gas_price: U256,
    gas_limit: U256,
    nonce: U256,
    hub: Address,
    relay: Address,
) -> B256 {
    let words = [fee, gas_price, gas_limit, nonce].map(|w| w.to_be_bytes::<32>());
    alloy_primitives::keccak256(
        [
            b"rlx:".as_slice(),
            from.as_slice(),
            to.as_slice(),
            data,
            &words[0],
            &words[1],
            &words[2],
            &words[3],
            hub.as_slice(),
            relay.as_slice(),
        ]
        .concat(),
    )
}

/// The owner who signed a Safe's `hash`, in the two forms a Safe 1.3.0 takes from an owner's
/// key: v 27/28 over the hash itself, or v 31/32 (eth_sign, as the official relayer client
/// signs) over the hash as a personal message. None for any other form or a bad signature.
pub fn recover_safe_signer(hash: &B256, signature: &str) -> Option<Address> {
    let bytes = alloy_primitives::hex::decode(signature.trim()).ok()?;
    let [.., v] = <[u8; 65]>::try_from(bytes.as_slice()).ok()?;
    let (r, s) = (U256::from_be_slice(&bytes[..32]), U256::from_be_slice(&bytes[32..64]));
    match v {
        27 | 28 => Signature::new(r, s, v == 28).recover_address_from_prehash(hash).ok(),
        31 | 32 => Signature::new(r, s, v == 32).recover_address_from_msg(hash.as_slice()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{address, b256};

    /// The official relayer client's hashes (viem's hashTypedData with its types and
    /// domains), for a Safe, MultiSend call data and the Polygon Safe factory.
    #[test]
    fn hashes_match_the_official_client() {
        let safe = address!("1111111111111111111111111111111111111111");
        let to = address!("A238CBeb142c10Ef7Ad8442C6D1f9E89e07e7761");
        let h = safe_tx_hash(137, safe, to, &[0x8d, 0x80, 0xff, 0x0a], 1, U256::from(7));
        assert_eq!(h, b256!("0289d6734e2056449c691c669d7ebd97de50f43c1d40c41879713967f9ab670b"));
        let c = create_proxy_hash(137, address!("aacFeEa03eb1561C4e67d661e40682Bd20E3541b"));
        assert_eq!(c, b256!("563ac315294c5be01ab1f3b04a5abdfa39e8317a9d90679d4e63caf760b126a4"));
    }

    #[test]
    fn a_safe_signature_recovers_in_both_forms_and_nothing_else() {
        use alloy_signer::SignerSync;
        let key = alloy_signer_local::PrivateKeySigner::random();
        let hash = B256::repeat_byte(9);
        let direct = key.sign_hash_sync(&hash).unwrap().as_bytes();
        assert_eq!(recover_safe_signer(&hash, &alloy_primitives::hex::encode(direct)), Some(key.address()));
        let mut eth_sign = key.sign_message_sync(hash.as_slice()).unwrap().as_bytes();
        eth_sign[64] += 4;
        assert_eq!(recover_safe_signer(&hash, &alloy_primitives::hex::encode(eth_sign)), Some(key.address()));
        let mut wrong = eth_sign;
        wrong[64] = 29;
        assert_eq!(recover_safe_signer(&hash, &alloy_primitives::hex::encode(wrong)), None);
        assert_eq!(recover_safe_signer(&hash, "0x1234"), None);
        assert_ne!(
            recover_safe_signer(&B256::repeat_byte(8), &alloy_primitives::hex::encode(eth_sign)),
            Some(key.address())
        );
    }
}

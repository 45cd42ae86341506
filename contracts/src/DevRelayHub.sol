// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

/// A relay hub written to the part of GSN v1's RelayHub that Polymarket's relayer and its
/// client use for proxy wallets: `relayCall` runs a call the sender signed (personal_sign
/// of keccak256("rlx:" ‖ from ‖ to ‖ data ‖ fee ‖ gas price ‖ gas limit ‖ nonce ‖ hub ‖
/// relay), the relay being whoever sends the transaction) once, with the sender appended
/// to the call data. Unlike GSN's hub it keeps no relay registry, stakes or deposits (the
/// relayer pays the gas: fees must be zero), and a call that fails reverts the whole
/// transaction, the nonce unused.
contract DevRelayHub {
    uint256 private constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    mapping(address => uint256) private nonces;

    event TransactionRelayed(
        address indexed relay, address indexed from, address indexed to, bytes4 selector, uint8 status, uint256 charge
    );

    function getNonce(address from) external view returns (uint256) {
        return nonces[from];
    }

    function relayCall(
        address from,
        address recipient,
        bytes calldata encodedFunction,
        uint256 transactionFee,
        uint256 gasPrice,
        uint256 gasLimit,
        uint256 nonce,
        bytes calldata signature,
        bytes calldata
    ) external {
        require(transactionFee == 0 && gasPrice == 0, "the relay takes no fee");
        require(nonce == nonces[from], "wrong nonce");
        require(_signer(from, recipient, encodedFunction, gasLimit, nonce, signature) == from, "invalid signature");
        nonces[from] = nonce + 1;
        _call(from, recipient, encodedFunction, gasLimit);
        emit TransactionRelayed(msg.sender, from, recipient, bytes4(encodedFunction[:4]), 0, 0);
    }

    /// Who signed the relay request (fee and gas price zero) for this hub and this relay.
    function _signer(
        address from,
        address recipient,
        bytes calldata encodedFunction,
        uint256 gasLimit,
        uint256 nonce,
        bytes calldata signature
    ) private view returns (address) {
        bytes32 h = keccak256(
            abi.encodePacked("rlx:", from, recipient, encodedFunction, uint256(0), uint256(0), gasLimit, nonce, address(this), msg.sender)
        );
        return _recover(keccak256(abi.encodePacked("\x19Ethereum Signed Message:\n32", h)), signature);
    }

    /// Calls `recipient` for `from` (appended, as GSN does); a failure reverts with its reason.
    function _call(address from, address recipient, bytes calldata encodedFunction, uint256 gasLimit) private {
        (bool ok, bytes memory ret) = recipient.call{gas: gasLimit}(abi.encodePacked(encodedFunction, from));
        if (!ok) {
            assembly {
                revert(add(ret, 0x20), mload(ret))
            }
        }
    }

    function _recover(bytes32 h, bytes calldata sig) private pure returns (address) {
        if (sig.length != 65) return address(0);
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        if (v < 27) v += 27;
        if (uint256(s) > HALF_N || (v != 27 && v != 28)) return address(0);
        return ecrecover(h, v, r, s);
    }
}

// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

interface IProxyFactoryLike {
    function getImplementation() external view returns (address);
}

interface ISafeFactoryLike {
    function masterCopy() external view returns (address);
    function proxyCreationCode() external view returns (bytes memory);
}

/// The init code of a proxy wallet: the factory's clone template around the
/// implementation, then `cloneConstructor("")` (167 bytes).
function proxyWalletInitCode(address factory, address implementation) pure returns (bytes memory) {
    return abi.encodePacked(
        hex"3d3d606380380380913d393d73",
        factory,
        hex"5af4602a57600080fd5b602d8060366000396000f3363d3d373d3d3d363d73",
        implementation,
        hex"5af43d82803e903d91602b57fd5bf3",
        abi.encodeWithSignature("cloneConstructor(bytes)", bytes(""))
    );
}

/// Who may sign an order for its maker, as Polymarket's exchange decides it: the maker
/// itself (signature type 0), the signer's proxy wallet (type 1) or the signer's Safe
/// (type 2). A wallet is found by CREATE2 arithmetic over the factories given at
/// construction, never by calling it, so it may sign before it is deployed. A zero
/// factory refuses its type.
abstract contract DevWallets {
    uint256 private constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    address private immutable proxyFactory;
    address private immutable safeFactory;
    bytes32 private immutable proxyInitHash;
    bytes32 private immutable safeInitHash;

    constructor(address _proxyFactory, address _safeFactory) {
        proxyFactory = _proxyFactory;
        safeFactory = _safeFactory;
        proxyInitHash = _proxyFactory == address(0)
            ? bytes32(0)
            : keccak256(proxyWalletInitCode(_proxyFactory, IProxyFactoryLike(_proxyFactory).getImplementation()));
        safeInitHash = _safeFactory == address(0)
            ? bytes32(0)
            : keccak256(
                abi.encodePacked(
                    ISafeFactoryLike(_safeFactory).proxyCreationCode(),
                    uint256(uint160(ISafeFactoryLike(_safeFactory).masterCopy()))
                )
            );
    }

    function getProxyFactory() external view returns (address) {
        return proxyFactory;
    }

    function getSafeFactory() external view returns (address) {
        return safeFactory;
    }

    function getPolyProxyFactoryImplementation() external view returns (address) {
        return IProxyFactoryLike(proxyFactory).getImplementation();
    }

    function getSafeFactoryImplementation() external view returns (address) {
        return ISafeFactoryLike(safeFactory).masterCopy();
    }

    /// The proxy wallet of `signer`: salt keccak256(abi.encodePacked(signer)).
    function getPolyProxyWalletAddress(address signer) public view returns (address) {
        return _create2(proxyFactory, keccak256(abi.encodePacked(signer)), proxyInitHash);
    }

    /// The Safe of `signer`: salt keccak256(abi.encode(signer)).
    function getSafeAddress(address signer) public view returns (address) {
        return _create2(safeFactory, keccak256(abi.encode(signer)), safeInitHash);
    }

    /// Whether `signature` over `h` is `signer`'s and `signer` may sign for `maker` with
    /// `signatureType`.
    function _signedFor(uint8 signatureType, address maker, address signer, bytes32 h, bytes memory signature)
        internal
        view
        returns (bool)
    {
        if (signatureType == 0) {
            if (signer != maker) return false;
        } else if (signatureType == 1) {
            if (proxyFactory == address(0) || maker != getPolyProxyWalletAddress(signer)) return false;
        } else if (signatureType == 2) {
            if (safeFactory == address(0) || maker != getSafeAddress(signer)) return false;
        } else {
            return false;
        }
        if (signature.length != 65) return false;
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (uint256(s) > HALF_N || (v != 27 && v != 28)) return false;
        address who = ecrecover(h, v, r, s);
        return who != address(0) && who == signer;
    }

    function _create2(address factory, bytes32 salt, bytes32 initHash) private pure returns (address) {
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), factory, salt, initHash)))));
    }
}

// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

import {proxyWalletInitCode} from "./DevWallets.sol";

interface IProxyWallet {
    struct ProxyCall {
        uint8 typeCode;
        address to;
        uint256 value;
        bytes data;
    }

    function proxy(ProxyCall[] calldata calls) external payable returns (bytes[] memory);
}

/// A proxy-wallet factory written to the external interface of Polymarket's: `proxy(calls)`
/// runs calls from the caller's own proxy wallet, made at its first call at
/// CREATE2(this, keccak256(abi.encodePacked(owner)), the clone of the implementation). The
/// caller is the relay hub's sender when the hub calls (GSN: the sender appended to the
/// call data), else whoever calls. The implementation is the wallet Polymarket's SDK (npm)
/// publishes, given at construction and deployed at CREATE2(this,
/// keccak256("polymarket-wallet-factory"), its code), as Polymarket's factory has it; the
/// wallet's owner (the only one who may make it call) is this factory.
contract DevProxyFactory {
    bytes32 private constant WALLET_SALT = keccak256("polymarket-wallet-factory");

    address private immutable implementation;
    address private immutable hub;
    address private immutable self;

    constructor(address relayHub, bytes memory walletCode) {
        address impl;
        bytes32 salt = WALLET_SALT;
        assembly {
            impl := create2(0, add(walletCode, 0x20), mload(walletCode), salt)
        }
        require(impl != address(0), "implementation not deployed");
        implementation = impl;
        hub = relayHub;
        self = address(this);
    }

    function getImplementation() external view returns (address) {
        return implementation;
    }

    function getHubAddr() external view returns (address) {
        return hub;
    }

    /// The proxy wallet of `user`, deployed or not.
    function computeProxyAddress(address user) public view returns (address) {
        bytes32 h = keccak256(
            abi.encodePacked(
                bytes1(0xff),
                address(this),
                keccak256(abi.encodePacked(user)),
                keccak256(proxyWalletInitCode(address(this), implementation))
            )
        );
        return address(uint160(uint256(h)));
    }

    /// Runs in a new wallet while this factory creates it (the clone's init code delegates
    /// here): the implementation's `initialize()` makes this factory the wallet's owner.
    function cloneConstructor(bytes calldata) external {
        require(address(this) != self, "only while creating a wallet");
        (bool ok,) = implementation.delegatecall(abi.encodeWithSignature("initialize()"));
        require(ok, "wallet not initialised");
    }

    function proxy(IProxyWallet.ProxyCall[] calldata calls) external payable returns (bytes[] memory) {
        address user = _msgSender();
        address wallet = computeProxyAddress(user);
        if (wallet.code.length == 0) {
            bytes memory init = proxyWalletInitCode(address(this), implementation);
            bytes32 salt = keccak256(abi.encodePacked(user));
            address made;
            assembly {
                made := create2(0, add(init, 0x20), mload(init), salt)
            }
            require(made == wallet, "wallet not created");
        }
        return IProxyWallet(wallet).proxy{value: msg.value}(calls);
    }

    /// The relay hub's sender (the call data's last 20 bytes) when the hub calls.
    function _msgSender() private view returns (address sender) {
        if (msg.sender != hub || msg.data.length < 24) return msg.sender;
        assembly {
            sender := shr(96, calldataload(sub(calldatasize(), 20)))
        }
    }
}

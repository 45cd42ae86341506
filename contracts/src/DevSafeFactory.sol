// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

interface ISafeSetup {
    function setup(
        address[] calldata owners,
        uint256 threshold,
        address to,
        bytes calldata data,
        address fallbackHandler,
        address paymentToken,
        uint256 payment,
        address payable paymentReceiver
    ) external;
}

/// A Safe factory written to the external interface of Polymarket's Safe factory: one Safe
/// per owner, made for whoever signs the EIP-712 `CreateProxy` message (so a relayer may
/// pay for it), at CREATE2(this, keccak256(abi.encode(owner)), keccak256(proxy creation
/// code ‖ master copy)), with the owner as its only owner and the fallback handler set.
/// The Safe proxy's creation code is given at construction (GnosisSafeProxy 1.3.0, built
/// as contracts/NOTICE says), so wallets land where Polymarket's clients derive them.
contract DevSafeFactory {
    struct Sig {
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    string public constant NAME = "Polymarket Contract Proxy Factory";
    bytes32 public constant DOMAIN_TYPEHASH = keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 public constant CREATE_PROXY_TYPEHASH =
        keccak256("CreateProxy(address paymentToken,uint256 payment,address paymentReceiver)");

    address public immutable masterCopy;
    address public immutable fallbackHandler;
    bytes private creationCode;

    event ProxyCreation(address proxy, address owner);

    constructor(address _masterCopy, address _fallbackHandler, bytes memory _proxyCreationCode) {
        masterCopy = _masterCopy;
        fallbackHandler = _fallbackHandler;
        creationCode = _proxyCreationCode;
    }

    function proxyCreationCode() external view returns (bytes memory) {
        return creationCode;
    }

    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, keccak256(bytes(NAME)), block.chainid, address(this)));
    }

    function getSalt(address user) public pure returns (bytes32) {
        return keccak256(abi.encode(user));
    }

    function getContractBytecode() public view returns (bytes memory) {
        return abi.encodePacked(creationCode, uint256(uint160(masterCopy)));
    }

    function computeProxyAddress(address user) external view returns (address) {
        bytes32 h = keccak256(abi.encodePacked(bytes1(0xff), address(this), getSalt(user), keccak256(getContractBytecode())));
        return address(uint160(uint256(h)));
    }

    /// Makes the Safe of whoever signed `createSig`; reverts when it exists.
    function createProxy(address paymentToken, uint256 payment, address payable paymentReceiver, Sig calldata createSig)
        external
    {
        bytes32 digest = keccak256(
            abi.encodePacked(
                "\x19\x01",
                domainSeparator(),
                keccak256(abi.encode(CREATE_PROXY_TYPEHASH, paymentToken, payment, paymentReceiver))
            )
        );
        address owner = ecrecover(digest, createSig.v, createSig.r, createSig.s);
        require(owner != address(0), "invalid signature");
        bytes memory init = getContractBytecode();
        bytes32 salt = getSalt(owner);
        address proxy;
        assembly {
            proxy := create2(0, add(init, 0x20), mload(init), salt)
        }
        require(proxy != address(0), "safe already deployed");
        address[] memory owners = new address[](1);
        owners[0] = owner;
        ISafeSetup(proxy).setup(owners, 1, address(0), "", fallbackHandler, paymentToken, payment, paymentReceiver);
        emit ProxyCreation(proxy, owner);
    }
}

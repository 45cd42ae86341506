// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

import {DevAssets, IERC20Like, IConditionalTokensLike} from "./DevAssets.sol";
import {DevWallets} from "./DevWallets.sol";

/// predex's development exchange: settles the trades of a CLOB operator between a 6-decimal
/// ERC-20 collateral and the outcome tokens of a Gnosis ConditionalTokens contract, with the
/// external interface of Polymarket's CTF Exchange (the same Order struct and EIP-712
/// typehash, function selectors, custom errors and events), so that predex talks to either
/// in the same way. Written for predex's tests and for development chains; it signs off
/// EOA orders only (signature type 0), and has no proxy or Safe wallet support.
///
/// The EIP-712 domain name below is replaced by scripts/contracts.sh when it builds the
/// exchange under another name.

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
    uint8 side; // 0 BUY, 1 SELL
    uint8 signatureType; // 0 EOA
    bytes signature;
}

struct OrderStatus {
    bool isFilledOrCancelled;
    uint256 remaining;
}

contract DevExchange is DevAssets, DevWallets {
    string private constant DOMAIN_NAME = "Service CTF Exchange";
    string private constant DOMAIN_VERSION = "1";
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant ORDER_TYPEHASH = keccak256(
        "Order(uint256 salt,address maker,address signer,address taker,uint256 tokenId,uint256 makerAmount,uint256 takerAmount,uint256 expiration,uint256 nonce,uint256 feeRateBps,uint8 side,uint8 signatureType)"
    );
    uint256 private constant ONE = 1e18;
    uint256 private constant BPS = 10_000;
    uint256 private constant MAX_FEE_RATE_BPS = 1_000;
    /// Half the order of secp256k1: signatures with a larger s are malleable copies.

    error NotAdmin();
    error NotOperator();
    error Paused();
    error NotOwner();
    error NotTaker();
    error OrderFilledOrCancelled();
    error OrderExpired();
    error InvalidNonce();
    error InvalidSignature();
    error FeeTooHigh();
    error MakingGtRemaining();
    error NotCrossing();
    error TooLittleTokensReceived();
    error MismatchedTokenIds();
    error InvalidTokenId();
    error InvalidComplement();
    error AlreadyRegistered();

    event NewAdmin(address indexed newAdminAddress, address indexed admin);
    event NewOperator(address indexed newOperatorAddress, address indexed admin);
    event RemovedAdmin(address indexed removedAdmin, address indexed admin);
    event RemovedOperator(address indexed removedOperator, address indexed admin);
    event TradingPaused(address indexed pauser);
    event TradingUnpaused(address indexed pauser);
    event TokenRegistered(uint256 indexed token0, uint256 indexed token1, bytes32 indexed conditionId);
    event OrderCancelled(bytes32 indexed orderHash);
    event FeeCharged(address indexed receiver, uint256 tokenId, uint256 amount);
    event OrderFilled(
        bytes32 indexed orderHash,
        address indexed maker,
        address indexed taker,
        uint256 makerAssetId,
        uint256 takerAssetId,
        uint256 makerAmountFilled,
        uint256 takerAmountFilled,
        uint256 fee
    );
    event OrdersMatched(
        bytes32 indexed takerOrderHash,
        address indexed takerOrderMaker,
        uint256 makerAssetId,
        uint256 takerAssetId,
        uint256 makerAmountFilled,
        uint256 takerAmountFilled
    );

    struct Token {
        uint256 complement;
        bytes32 conditionId;
    }

    bool public paused;
    mapping(address => uint256) public admins;
    mapping(address => uint256) public operators;
    mapping(address => uint256) public nonces;
    mapping(bytes32 => OrderStatus) public orderStatus;
    mapping(uint256 => Token) public registry;
    bool private entered;

    /// The proxy and Safe factories are where makers' wallets of signature types 1 and 2
    /// come from (zero: that type is refused).
    constructor(address _collateral, address _ctf, address _proxyFactory, address _safeFactory)
        DevAssets(_collateral, _ctf)
        DevWallets(_proxyFactory, _safeFactory)
    {
        admins[msg.sender] = 1;
        operators[msg.sender] = 1;
        IERC20Like(_collateral).approve(_ctf, type(uint256).max);
    }

    modifier onlyAdmin() {
        if (admins[msg.sender] != 1) revert NotAdmin();
        _;
    }

    modifier onlyOperator() {
        if (operators[msg.sender] != 1) revert NotOperator();
        _;
    }

    modifier notPaused() {
        if (paused) revert Paused();
        _;
    }

    modifier nonReentrant() {
        require(!entered, "reentrant");
        entered = true;
        _;
        entered = false;
    }

    // ---- roles and configuration

    function isAdmin(address who) external view returns (bool) {
        return admins[who] == 1;
    }

    function isOperator(address who) external view returns (bool) {
        return operators[who] == 1;
    }

    function addAdmin(address who) external onlyAdmin {
        admins[who] = 1;
        emit NewAdmin(who, msg.sender);
    }

    function addOperator(address who) external onlyAdmin {
        operators[who] = 1;
        emit NewOperator(who, msg.sender);
    }

    function removeAdmin(address who) external onlyAdmin {
        admins[who] = 0;
        emit RemovedAdmin(who, msg.sender);
    }

    function removeOperator(address who) external onlyAdmin {
        operators[who] = 0;
        emit RemovedOperator(who, msg.sender);
    }

    function pauseTrading() external onlyAdmin {
        paused = true;
        emit TradingPaused(msg.sender);
    }

    function unpauseTrading() external onlyAdmin {
        paused = false;
        emit TradingUnpaused(msg.sender);
    }

    function getCollateral() external view returns (address) {
        return collateral;
    }

    function getCtf() external view returns (address) {
        return ctf;
    }

    function getMaxFeeRate() public pure returns (uint256) {
        return MAX_FEE_RATE_BPS;
    }

    function registerToken(uint256 token, uint256 complement, bytes32 conditionId) external onlyAdmin {
        if (token == complement || token == 0 || complement == 0) revert InvalidTokenId();
        if (registry[token].complement != 0 || registry[complement].complement != 0) revert AlreadyRegistered();
        registry[token] = Token(complement, conditionId);
        registry[complement] = Token(token, conditionId);
        emit TokenRegistered(token, complement, conditionId);
        emit TokenRegistered(complement, token, conditionId);
    }

    function getConditionId(uint256 token) public view returns (bytes32) {
        return registry[token].conditionId;
    }

    function getComplement(uint256 token) public view returns (uint256) {
        if (registry[token].complement == 0) revert InvalidTokenId();
        return registry[token].complement;
    }

    // ---- orders

    function domainSeparator() public view returns (bytes32) {
        return keccak256(
            abi.encode(
                DOMAIN_TYPEHASH, keccak256(bytes(DOMAIN_NAME)), keccak256(bytes(DOMAIN_VERSION)), block.chainid, address(this)
            )
        );
    }

    function hashOrder(Order memory o) public view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(
                ORDER_TYPEHASH,
                o.salt,
                o.maker,
                o.signer,
                o.taker,
                o.tokenId,
                o.makerAmount,
                o.takerAmount,
                o.expiration,
                o.nonce,
                o.feeRateBps,
                o.side,
                o.signatureType
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    function getOrderStatus(bytes32 orderHash) external view returns (OrderStatus memory) {
        return orderStatus[orderHash];
    }

    function incrementNonce() external {
        nonces[msg.sender] += 1;
    }

    function isValidNonce(address who, uint256 nonce) public view returns (bool) {
        return nonces[who] == nonce;
    }

    function cancelOrder(Order memory order) public {
        if (order.maker != msg.sender) revert NotOwner();
        bytes32 h = hashOrder(order);
        if (orderStatus[h].isFilledOrCancelled) revert OrderFilledOrCancelled();
        orderStatus[h].isFilledOrCancelled = true;
        emit OrderCancelled(h);
    }

    function cancelOrders(Order[] memory orders) external {
        for (uint256 i = 0; i < orders.length; i++) {
            cancelOrder(orders[i]);
        }
    }

    function validateOrder(Order memory order) external view {
        _check(hashOrder(order), order);
    }

    // ---- settlement

    /// Fills `fillAmount` of an order (in its maker asset) against the operator's own assets.
    function fillOrder(Order memory order, uint256 fillAmount) external nonReentrant onlyOperator notPaused {
        _fill(order, fillAmount);
    }

    function fillOrders(Order[] memory orders, uint256[] memory fillAmounts) external nonReentrant onlyOperator notPaused {
        for (uint256 i = 0; i < orders.length; i++) {
            _fill(orders[i], fillAmounts[i]);
        }
    }

    /// Settles a taker order against maker orders. Each fill amount is in the units of that
    /// order's maker amount. The taker's asset is pooled here; each maker is paid from the
    /// pool, which a BUY against a BUY fills by splitting collateral into both outcomes and
    /// a SELL against a SELL by merging them; the taker receives everything the makers gave
    /// (at least its own limit), less its fee, and any of its asset left over comes back.
    function matchOrders(
        Order memory takerOrder,
        Order[] memory makerOrders,
        uint256 takerFillAmount,
        uint256[] memory makerFillAmounts
    ) external nonReentrant onlyOperator notPaused {
        (uint256 minimum, bytes32 takerHash) = _take(takerOrder, takerFillAmount);
        (uint256 giveId, uint256 getId) = _assets(takerOrder);
        _move(takerOrder.maker, address(this), giveId, takerFillAmount);

        for (uint256 i = 0; i < makerOrders.length; i++) {
            _fillMaker(takerOrder, makerOrders[i], makerFillAmounts[i]);
        }

        uint256 received = _held(getId);
        if (received < minimum) revert TooLittleTokensReceived();
        uint256 fee = _fee(takerOrder.feeRateBps, takerOrder.side == 0 ? received : takerFillAmount, takerFillAmount, received, takerOrder.side);
        _move(address(this), takerOrder.maker, getId, received - fee);
        _chargeFee(getId, fee);
        uint256 left = _held(giveId);
        if (left > 0) _move(address(this), takerOrder.maker, giveId, left);

        emit OrderFilled(takerHash, takerOrder.maker, address(this), giveId, getId, takerFillAmount, received, fee);
        emit OrdersMatched(takerHash, takerOrder.maker, giveId, getId, takerFillAmount, received);
    }

    function _fillMaker(Order memory taker, Order memory maker, uint256 making) private {
        bool sameSide = taker.side == maker.side;
        if (!_crossing(taker, maker)) revert NotCrossing();
        if (!sameSide) {
            if (taker.tokenId != maker.tokenId) revert MismatchedTokenIds();
        } else if (getComplement(taker.tokenId) != maker.tokenId) {
            revert MismatchedTokenIds();
        }
        (uint256 taking, bytes32 h) = _take(maker, making);
        uint256 fee = _fee(maker.feeRateBps, maker.side == 0 ? taking : making, maker.makerAmount, maker.takerAmount, maker.side);
        (uint256 giveId, uint256 getId) = _assets(maker);
        _move(maker.maker, address(this), giveId, making);
        if (sameSide && maker.side == 0) {
            // Two bids: the collateral of both becomes a full set of outcome tokens.
            _partition(ctf, true, getConditionId(getId), taking);
        } else if (sameSide) {
            // Two asks: a full set of outcome tokens becomes collateral.
            _partition(ctf, false, getConditionId(giveId), making);
        }
        if (_held(getId) < taking) revert TooLittleTokensReceived();
        _move(address(this), maker.maker, getId, taking - fee);
        _chargeFee(getId, fee);
        emit OrderFilled(h, maker.maker, taker.maker, giveId, getId, making, taking, fee);
    }

    function _fill(Order memory order, uint256 making) private {
        (uint256 taking, bytes32 h) = _take(order, making);
        uint256 fee = _fee(order.feeRateBps, order.side == 0 ? taking : making, order.makerAmount, order.takerAmount, order.side);
        (uint256 giveId, uint256 getId) = _assets(order);
        _move(msg.sender, order.maker, getId, taking - fee);
        _move(order.maker, msg.sender, giveId, making);
        emit OrderFilled(h, order.maker, msg.sender, giveId, getId, making, taking, fee);
    }

    /// Checks an order and records `making` of it as filled; returns what it is owed for
    /// that at its own price, and its hash.
    function _take(Order memory order, uint256 making) private returns (uint256 taking, bytes32 h) {
        if (order.taker != address(0) && order.taker != msg.sender) revert NotTaker();
        h = hashOrder(order);
        _check(h, order);
        taking = order.makerAmount == 0 ? 0 : making * order.takerAmount / order.makerAmount;
        OrderStatus storage s = orderStatus[h];
        uint256 remaining = s.remaining == 0 ? order.makerAmount : s.remaining;
        if (making > remaining) revert MakingGtRemaining();
        remaining -= making;
        s.remaining = remaining;
        if (remaining == 0) s.isFilledOrCancelled = true;
    }

    function _check(bytes32 h, Order memory order) private view {
        if (order.expiration > 0 && order.expiration < block.timestamp) revert OrderExpired();
        if (!_signedBy(order, h)) revert InvalidSignature();
        if (order.feeRateBps > MAX_FEE_RATE_BPS) revert FeeTooHigh();
        if (registry[order.tokenId].complement == 0) revert InvalidTokenId();
        if (orderStatus[h].isFilledOrCancelled) revert OrderFilledOrCancelled();
        if (!isValidNonce(order.maker, order.nonce)) revert InvalidNonce();
    }

    function _signedBy(Order memory order, bytes32 h) private view returns (bool) {
        return _signedFor(order.signatureType, order.maker, order.signer, h, order.signature);
    }

    /// The price an order names, scaled by 1e18: collateral per outcome token.
    function _price(uint256 makerAmount, uint256 takerAmount, uint8 side) private pure returns (uint256) {
        if (side == 0) return takerAmount == 0 ? 0 : makerAmount * ONE / takerAmount;
        return makerAmount == 0 ? 0 : takerAmount * ONE / makerAmount;
    }

    function _crossing(Order memory a, Order memory b) private pure returns (bool) {
        if (a.takerAmount == 0 || b.takerAmount == 0) return true;
        uint256 pa = _price(a.makerAmount, a.takerAmount, a.side);
        uint256 pb = _price(b.makerAmount, b.takerAmount, b.side);
        if (a.side == 0 && b.side == 0) return pa + pb >= ONE;
        if (a.side == 1 && b.side == 1) return pa + pb <= ONE;
        return a.side == 0 ? pa >= pb : pb >= pa;
    }

    /// The fee on `outcomeTokens` at the order's price: symmetric in the price, charged on
    /// what the order receives (outcome tokens for a BUY, collateral for a SELL).
    function _fee(uint256 bps, uint256 outcomeTokens, uint256 makerAmount, uint256 takerAmount, uint8 side)
        private
        pure
        returns (uint256)
    {
        if (bps == 0) return 0;
        uint256 p = _price(makerAmount, takerAmount, side);
        if (p == 0 || p > ONE) return 0;
        uint256 m = p < ONE - p ? p : ONE - p;
        if (side == 0) return bps * m * outcomeTokens / (p * BPS);
        return bps * m * outcomeTokens / (BPS * ONE);
    }

    function _assets(Order memory order) private pure returns (uint256 giveId, uint256 getId) {
        if (order.side == 0) return (0, order.tokenId);
        return (order.tokenId, 0);
    }

    function _chargeFee(uint256 id, uint256 fee) private {
        if (fee == 0) return;
        _move(address(this), msg.sender, id, fee);
        emit FeeCharged(msg.sender, id, fee);
    }
}

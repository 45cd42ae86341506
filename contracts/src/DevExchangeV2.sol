// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

import {DevAssets, IERC20Like, IConditionalTokensLike} from "./DevAssets.sol";
import {DevWallets} from "./DevWallets.sol";

/// predex's development exchange for version 2 orders: settles the trades of a CLOB
/// operator between a 6-decimal ERC-20 collateral and the outcome tokens of a Gnosis
/// ConditionalTokens contract, with the external interface of Polymarket's CTF Exchange V2
/// (its Order struct and EIP-712 typehash under domain version "2", its constructor
/// parameters, function selectors, custom errors and events), so that predex talks to
/// either in the same way. Written for predex's tests and for development chains from that
/// interface alone; it signs off EOA orders only (signature type 0) and orders the operator
/// preapproved, and has no proxy, Safe or ERC-1271 wallet support.
///
/// One contract serves both kinds of market: a standard exchange mints and merges through
/// ConditionalTokens itself (`outcomeTokenFactory` = ConditionalTokens, `ctfCollateral` =
/// the collateral), a negative-risk one through the adapter (`outcomeTokenFactory` = the
/// adapter, `ctfCollateral` = the adapter's wrapped collateral). Positions always move on
/// ConditionalTokens.
///
/// The operator names the fees (`matchOrders`'s fee arguments); the exchange only bounds
/// them: no more than `maxFeeRateBps` of an order's cash value (what it pays for a BUY,
/// what it is owed at its own price for a SELL). A BUY's fee is paid on top of its fill,
/// a SELL's out of its proceeds. A maker stops its orders with `pauseUser`, effective
/// `userPauseBlockInterval` blocks later; there are no nonces.
///
/// The EIP-712 domain name below is replaced by scripts/contracts.js when it builds the
/// exchanges under another name.

struct Order {
    uint256 salt;
    address maker;
    address signer;
    uint256 tokenId;
    uint256 makerAmount;
    uint256 takerAmount;
    uint8 side; // 0 BUY, 1 SELL
    uint8 signatureType; // 0 EOA
    uint256 timestamp;
    bytes32 metadata;
    bytes32 builder;
    bytes signature;
}

struct OrderStatus {
    bool filled;
    uint248 remaining;
}

struct ExchangeInitParams {
    address admin;
    address collateral;
    address ctf;
    address ctfCollateral;
    address outcomeTokenFactory;
    address proxyFactory;
    address safeFactory;
    address feeReceiver;
}

contract DevExchangeV2 is DevAssets, DevWallets {
    string private constant DOMAIN_NAME = "Service CTF Exchange";
    string private constant DOMAIN_VERSION = "2";
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant ORDER_TYPEHASH = keccak256(
        "Order(uint256 salt,address maker,address signer,uint256 tokenId,uint256 makerAmount,uint256 takerAmount,uint8 side,uint8 signatureType,uint256 timestamp,bytes32 metadata,bytes32 builder)"
    );
    uint256 private constant BPS = 10_000;
    uint256 private constant MAX_PAUSE_BLOCK_INTERVAL = 302_400;
    /// Half the order of secp256k1: signatures with a larger s are malleable copies.

    error NotAdmin();
    error NotOperator();
    error LastAdmin();
    error AlreadyAdmin();
    error AlreadyOperator();
    error Paused();
    error InvalidSignature();
    error UserIsPaused();
    error UserAlreadyPaused();
    error ExceedsMaxPauseInterval();
    error FeeExceedsMaxRate();
    error MaxFeeRateExceedsCeiling();
    error OrderAlreadyFilled();
    error MakingGtRemaining();
    error NotCrossing();
    error TooLittleTokensReceived();
    error ComplementaryFillExceedsTakerFill();
    error MismatchedTokenIds();
    error MismatchedArrayLengths();
    error NoMakerOrders();
    error ZeroMakerAmount();
    error FeeExceedsProceeds();

    event NewAdmin(address indexed newAdminAddress, address indexed admin);
    event NewOperator(address indexed newOperatorAddress, address indexed admin);
    event RemovedAdmin(address indexed removedAdmin, address indexed admin);
    event RemovedOperator(address indexed removedOperator, address indexed admin);
    event TradingPaused(address indexed pauser);
    event TradingUnpaused(address indexed pauser);
    event UserPauseBlockIntervalUpdated(uint256 oldInterval, uint256 newInterval);
    event UserPaused(address indexed user, uint256 effectivePauseBlock);
    event UserUnpaused(address indexed user);
    event FeeCharged(address indexed receiver, uint256 amount);
    event FeeReceiverUpdated(address indexed feeReceiver);
    event MaxFeeRateUpdated(uint256 maxFeeRate);
    event OrderPreapproved(bytes32 indexed orderHash);
    event OrderPreapprovalInvalidated(bytes32 indexed orderHash);
    event OrderFilled(
        bytes32 indexed orderHash,
        address indexed maker,
        address indexed taker,
        uint8 side,
        uint256 tokenId,
        uint256 makerAmountFilled,
        uint256 takerAmountFilled,
        uint256 fee,
        bytes32 builder,
        bytes32 metadata
    );
    event OrdersMatched(
        bytes32 indexed takerOrderHash,
        address indexed takerOrderMaker,
        uint8 side,
        uint256 tokenId,
        uint256 makerAmountFilled,
        uint256 takerAmountFilled
    );

    address private immutable ctfCollateral;
    address private immutable outcomeTokenFactory;

    bool public paused;
    mapping(address => bool) private admins;
    uint256 private adminCount;
    mapping(address => bool) private operators;
    address private feeReceiver;
    uint256 private maxFeeRateBps = 500;
    uint256 public userPauseBlockInterval = 100;
    mapping(address => uint256) public userPausedBlockAt;
    mapping(bytes32 => OrderStatus) public orderStatus;
    mapping(bytes32 => bool) private preapproved;
    /// A condition's two position ids, found once.
    mapping(bytes32 => uint256[2]) private positions;
    bool private entered;

    constructor(ExchangeInitParams memory p) DevAssets(p.collateral, p.ctf) DevWallets(p.proxyFactory, p.safeFactory) {
        ctfCollateral = p.ctfCollateral;
        outcomeTokenFactory = p.outcomeTokenFactory;
        feeReceiver = p.feeReceiver;
        admins[p.admin] = true;
        adminCount = 1;
        operators[p.admin] = true;
        IERC20Like(p.collateral).approve(p.outcomeTokenFactory, type(uint256).max);
        IConditionalTokensLike(p.ctf).setApprovalForAll(p.outcomeTokenFactory, true);
    }

    modifier onlyAdmin() {
        if (!admins[msg.sender]) revert NotAdmin();
        _;
    }

    modifier onlyOperator() {
        if (!operators[msg.sender]) revert NotOperator();
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
        return admins[who];
    }

    function isOperator(address who) external view returns (bool) {
        return operators[who];
    }

    function addAdmin(address who) external onlyAdmin {
        if (admins[who]) revert AlreadyAdmin();
        admins[who] = true;
        adminCount += 1;
        emit NewAdmin(who, msg.sender);
    }

    function addOperator(address who) external onlyAdmin {
        if (operators[who]) revert AlreadyOperator();
        operators[who] = true;
        emit NewOperator(who, msg.sender);
    }

    function removeAdmin(address who) external onlyAdmin {
        if (!admins[who]) return;
        if (adminCount == 1) revert LastAdmin();
        admins[who] = false;
        adminCount -= 1;
        emit RemovedAdmin(who, msg.sender);
    }

    function removeOperator(address who) external onlyAdmin {
        operators[who] = false;
        emit RemovedOperator(who, msg.sender);
    }

    function renounceOperatorRole() external onlyOperator {
        operators[msg.sender] = false;
        emit RemovedOperator(msg.sender, msg.sender);
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

    function getCtfCollateral() external view returns (address) {
        return ctfCollateral;
    }

    function getOutcomeTokenFactory() external view returns (address) {
        return outcomeTokenFactory;
    }

    function getFeeReceiver() external view returns (address) {
        return feeReceiver;
    }

    function getMaxFeeRate() external view returns (uint256) {
        return maxFeeRateBps;
    }

    function setFeeReceiver(address receiver) external onlyAdmin {
        feeReceiver = receiver;
        emit FeeReceiverUpdated(receiver);
    }

    function setMaxFeeRate(uint256 rate) external onlyAdmin {
        if (rate >= BPS) revert MaxFeeRateExceedsCeiling();
        maxFeeRateBps = rate;
        emit MaxFeeRateUpdated(rate);
    }

    /// Reverts unless `fee` is within the maximum rate of `cashValue` (no bound at rate 0).
    function validateFee(uint256 fee, uint256 cashValue) public view {
        if (fee == 0 || maxFeeRateBps == 0) return;
        if (fee > cashValue * maxFeeRateBps / BPS) revert FeeExceedsMaxRate();
    }

    // ---- makers' pauses

    function setUserPauseBlockInterval(uint256 interval) external onlyAdmin {
        if (interval > MAX_PAUSE_BLOCK_INTERVAL) revert ExceedsMaxPauseInterval();
        emit UserPauseBlockIntervalUpdated(userPauseBlockInterval, interval);
        userPauseBlockInterval = interval;
    }

    function isUserPaused(address user) public view returns (bool) {
        uint256 at = userPausedBlockAt[user];
        return at > 0 && block.number >= at;
    }

    /// The caller's orders stop settling `userPauseBlockInterval` blocks from now.
    function pauseUser() external {
        if (userPausedBlockAt[msg.sender] != 0) revert UserAlreadyPaused();
        uint256 at = block.number + userPauseBlockInterval;
        userPausedBlockAt[msg.sender] = at;
        emit UserPaused(msg.sender, at);
    }

    function unpauseUser() external {
        userPausedBlockAt[msg.sender] = 0;
        emit UserUnpaused(msg.sender);
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
                o.tokenId,
                o.makerAmount,
                o.takerAmount,
                o.side,
                o.signatureType,
                o.timestamp,
                o.metadata,
                o.builder
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    function getOrderStatus(bytes32 orderHash) external view returns (OrderStatus memory) {
        return orderStatus[orderHash];
    }

    function validateOrder(Order memory order) external view {
        bytes32 h = hashOrder(order);
        if (orderStatus[h].filled) revert OrderAlreadyFilled();
        _check(h, order);
    }

    function validateOrderSignature(bytes32 orderHash, Order memory order) public view {
        bool ok = order.signature.length == 0 ? preapproved[orderHash] : _signedBy(order, orderHash);
        if (!ok) revert InvalidSignature();
    }

    /// An order that settles without its signature (which is checked now).
    function preapproveOrder(Order memory order) external onlyOperator {
        bytes32 h = hashOrder(order);
        if (!_signedBy(order, h)) revert InvalidSignature();
        preapproved[h] = true;
        emit OrderPreapproved(h);
    }

    function invalidatePreapprovedOrder(bytes32 orderHash) external onlyOperator {
        preapproved[orderHash] = false;
        emit OrderPreapprovalInvalidated(orderHash);
    }

    // ---- settlement

    /// Settles a taker order against maker orders of the market `conditionId`. Fill amounts
    /// are in each order's maker-amount units; fees are in collateral. When every maker is
    /// on the other side of the taker, assets pass between them directly and the taker's
    /// fill is what the makers' prices make of their fills (at most `takerFillAmount`);
    /// otherwise the taker's fill is pooled here, maker bids with the taker's bid are
    /// minted into full sets and maker asks with the taker's ask merged out of them, and
    /// the taker receives everything that comes of it (at least its own limit), any of its
    /// asset left over coming back.
    function matchOrders(
        bytes32 conditionId,
        Order memory takerOrder,
        Order[] memory makerOrders,
        uint256 takerFillAmount,
        uint256[] memory makerFillAmounts,
        uint256 takerFeeAmount,
        uint256[] memory makerFeeAmounts
    ) external nonReentrant onlyOperator notPaused {
        uint256 n = makerOrders.length;
        if (n == 0) revert NoMakerOrders();
        if (n != makerFillAmounts.length || n != makerFeeAmounts.length) revert MismatchedArrayLengths();
        uint256[2] memory ids = _positions(conditionId);
        _inMarket(takerOrder.tokenId, ids);
        bool complementary = true;
        for (uint256 i = 0; i < n; i++) {
            _inMarket(makerOrders[i].tokenId, ids);
            if (makerOrders[i].side == takerOrder.side) complementary = false;
        }
        if (complementary) {
            _direct(takerOrder, makerOrders, takerFillAmount, makerFillAmounts, takerFeeAmount, makerFeeAmounts);
        } else {
            _pooled(conditionId, takerOrder, makerOrders, takerFillAmount, makerFillAmounts, takerFeeAmount, makerFeeAmounts);
        }
    }

    function _direct(
        Order memory taker,
        Order[] memory makers,
        uint256 takerFill,
        uint256[] memory makerFills,
        uint256 takerFee,
        uint256[] memory makerFees
    ) private {
        bytes32 takerHash = hashOrder(taker);
        _check(takerHash, taker);
        bool takerBuys = taker.side == 0;
        // What the taker gives and gets, by the makers' prices.
        uint256 gives = 0;
        uint256 gets = 0;
        uint256 fees = 0;
        for (uint256 i = 0; i < makers.length; i++) {
            uint256 taking = _directMaker(taker, makers[i], makerFills[i], makerFees[i]);
            fees += makerFees[i];
            gives += taking;
            gets += makerFills[i];
        }
        if (gives > takerFill) revert ComplementaryFillExceedsTakerFill();
        if (gets < _taking(taker, gives, takerFee)) revert TooLittleTokensReceived();
        _record(takerHash, taker, gives);
        if (takerBuys) {
            fees += takerFee;
            _move(taker.maker, feeReceiver, 0, fees);
        } else {
            if (takerFee > gets) revert FeeExceedsProceeds();
            _move(address(this), taker.maker, 0, gets - takerFee);
            fees += takerFee;
            _move(address(this), feeReceiver, 0, fees);
        }
        if (takerFee > 0) emit FeeCharged(feeReceiver, takerFee);
        _takerFilled(takerHash, taker, gives, gets, takerFee);
    }

    /// One maker of [`_direct`]: its fill passed straight to or from the taker.
    function _directMaker(Order memory taker, Order memory m, uint256 fill, uint256 fee) private returns (uint256 taking) {
        _crossing(taker, m);
        bytes32 h;
        (taking, h) = _fill(m, fill, fee);
        if (taker.side == 0) {
            // The maker's tokens to the taker; the taker's collateral to the maker.
            if (fee > taking) revert FeeExceedsProceeds();
            _move(m.maker, taker.maker, m.tokenId, fill);
            _move(taker.maker, m.maker, 0, taking - fee);
        } else {
            // The taker's tokens to the maker; the maker's collateral (and fee) through here.
            _move(taker.maker, m.maker, m.tokenId, taking);
            _move(m.maker, address(this), 0, fill + fee);
        }
        if (fee > 0) emit FeeCharged(feeReceiver, fee);
        emit OrderFilled(h, m.maker, taker.maker, m.side, m.tokenId, fill, taking, fee, m.builder, m.metadata);
    }

    function _pooled(
        bytes32 conditionId,
        Order memory taker,
        Order[] memory makers,
        uint256 takerFill,
        uint256[] memory makerFills,
        uint256 takerFee,
        uint256[] memory makerFees
    ) private {
        bytes32 takerHash = hashOrder(taker);
        _check(takerHash, taker);
        _record(takerHash, taker, takerFill);
        uint256 minimum = _taking(taker, takerFill, takerFee);
        (uint256 giveId, uint256 getId) = _assets(taker);
        // A BUY's fee comes with its collateral; a SELL's out of its proceeds.
        _move(taker.maker, address(this), giveId, takerFill + (taker.side == 0 ? takerFee : 0));
        uint256 before = _held(getId);
        uint256 fees = _poolMakers(conditionId, taker, makers, makerFills, makerFees);
        if (taker.side == 0) fees += takerFee;
        if (fees > 0) _move(address(this), feeReceiver, 0, fees);
        uint256 received = _held(getId) - before;
        if (received < minimum) revert TooLittleTokensReceived();
        _payTaker(taker, received, takerFee);
        _takerFilled(takerHash, taker, takerFill, received, takerFee);
    }

    /// The taker of [`_pooled`] paid what came of its fill (a SELL's fee out of it), and
    /// given back what is left of its own asset.
    function _payTaker(Order memory taker, uint256 received, uint256 fee) private {
        (uint256 giveId, uint256 getId) = _assets(taker);
        if (taker.side == 1) {
            if (fee > received) revert FeeExceedsProceeds();
            _move(address(this), taker.maker, 0, received - fee);
            _move(address(this), feeReceiver, 0, fee);
        } else {
            _move(address(this), taker.maker, getId, received);
        }
        if (fee > 0) emit FeeCharged(feeReceiver, fee);
        uint256 left = _held(giveId);
        if (left > 0) _move(address(this), taker.maker, giveId, left);
    }

    /// The makers of [`_pooled`]: each checked, recorded and paid; returns their fees, held here.
    function _poolMakers(
        bytes32 conditionId,
        Order memory taker,
        Order[] memory makers,
        uint256[] memory makerFills,
        uint256[] memory makerFees
    ) private returns (uint256 fees) {
        uint256[] memory takings = _pullMakers(conditionId, taker, makers, makerFills, makerFees);
        for (uint256 i = 0; i < makers.length; i++) {
            fees += _payMaker(taker, makers[i], makerFills[i], takings[i], makerFees[i]);
        }
    }

    /// Checks and records each maker's fill, takes what it gives, and mints or merges
    /// the full sets the same-side makers make with the taker; returns what each is owed.
    function _pullMakers(
        bytes32 conditionId,
        Order memory taker,
        Order[] memory makers,
        uint256[] memory makerFills,
        uint256[] memory makerFees
    ) private returns (uint256[] memory takings) {
        takings = new uint256[](makers.length);
        uint256 mint = 0;
        uint256 merge = 0;
        for (uint256 i = 0; i < makers.length; i++) {
            Order memory m = makers[i];
            _crossing(taker, m);
            (takings[i],) = _fill(m, makerFills[i], makerFees[i]);
            (uint256 give,) = _assets(m);
            _move(m.maker, address(this), give, makerFills[i] + (m.side == 0 ? makerFees[i] : 0));
            if (m.side == taker.side && m.side == 0) mint += takings[i];
            if (m.side == taker.side && m.side == 1) merge += makerFills[i];
        }
        if (mint > 0) _partition(outcomeTokenFactory, true, conditionId, mint);
        if (merge > 0) _partition(outcomeTokenFactory, false, conditionId, merge);
    }

    /// Pays a maker of [`_pooled`] what it is owed (a SELL's fee out of it); returns its fee,
    /// held here.
    function _payMaker(Order memory taker, Order memory m, uint256 fill, uint256 taking, uint256 fee)
        private
        returns (uint256)
    {
        (, uint256 get) = _assets(m);
        if (m.side == 1 && fee > taking) revert FeeExceedsProceeds();
        _move(address(this), m.maker, get, m.side == 1 ? taking - fee : taking);
        if (fee > 0) emit FeeCharged(feeReceiver, fee);
        emit OrderFilled(hashOrder(m), m.maker, taker.maker, m.side, m.tokenId, fill, taking, fee, m.builder, m.metadata);
        return fee;
    }

    function _takerFilled(bytes32 h, Order memory taker, uint256 making, uint256 taking, uint256 fee) private {
        emit OrderFilled(h, taker.maker, address(this), taker.side, taker.tokenId, making, taking, fee, taker.builder, taker.metadata);
        emit OrdersMatched(h, taker.maker, taker.side, taker.tokenId, making, taking);
    }

    /// Checks a maker order, records `making` of it filled; returns what it is owed for that
    /// at its own price, and its hash.
    function _fill(Order memory order, uint256 making, uint256 fee) private returns (uint256 taking, bytes32 h) {
        h = hashOrder(order);
        _check(h, order);
        _record(h, order, making);
        taking = _taking(order, making, fee);
    }

    /// What `making` of an order is owed at its price, with its fee checked against that.
    function _taking(Order memory order, uint256 making, uint256 fee) private view returns (uint256 taking) {
        taking = making * order.takerAmount / order.makerAmount;
        validateFee(fee, order.side == 0 ? making : taking);
    }

    function _record(bytes32 h, Order memory order, uint256 making) private {
        OrderStatus storage s = orderStatus[h];
        if (s.filled) revert OrderAlreadyFilled();
        uint256 remaining = s.remaining == 0 ? order.makerAmount : s.remaining;
        if (making > remaining) revert MakingGtRemaining();
        remaining -= making;
        s.remaining = uint248(remaining);
        s.filled = remaining == 0;
    }

    function _check(bytes32 h, Order memory order) private view {
        if (order.makerAmount == 0) revert ZeroMakerAmount();
        validateOrderSignature(h, order);
        if (isUserPaused(order.maker)) revert UserIsPaused();
    }

    function _signedBy(Order memory order, bytes32 h) private view returns (bool) {
        return _signedFor(order.signatureType, order.maker, order.signer, h, order.signature);
    }

    /// Two orders of the same side on the two outcomes cross when, at their prices, the
    /// bids pay at least a full set (a mint) or the asks ask at most one (a merge).
    function _crossing(Order memory taker, Order memory maker) private pure {
        if (taker.side != maker.side) {
            if (taker.tokenId != maker.tokenId) revert MismatchedTokenIds();
            if (taker.makerAmount * maker.makerAmount < taker.takerAmount * maker.takerAmount) revert NotCrossing();
            return;
        }
        if (taker.tokenId == maker.tokenId) revert MismatchedTokenIds();
        uint256 sum = taker.takerAmount * maker.makerAmount + maker.takerAmount * taker.makerAmount;
        if (taker.side == 0 && sum < taker.takerAmount * maker.takerAmount) revert NotCrossing();
        if (taker.side == 1 && sum > taker.makerAmount * maker.makerAmount) revert NotCrossing();
    }

    function _positions(bytes32 conditionId) private returns (uint256[2] memory ids) {
        ids = positions[conditionId];
        if (ids[0] != 0) return ids;
        IConditionalTokensLike p = IConditionalTokensLike(ctf);
        ids[0] = p.getPositionId(ctfCollateral, p.getCollectionId(bytes32(0), conditionId, 1));
        ids[1] = p.getPositionId(ctfCollateral, p.getCollectionId(bytes32(0), conditionId, 2));
        positions[conditionId] = ids;
    }

    function _inMarket(uint256 tokenId, uint256[2] memory ids) private pure {
        if (tokenId != ids[0] && tokenId != ids[1]) revert MismatchedTokenIds();
    }

    function _assets(Order memory order) private pure returns (uint256 giveId, uint256 getId) {
        if (order.side == 0) return (0, order.tokenId);
        return (order.tokenId, 0);
    }
}

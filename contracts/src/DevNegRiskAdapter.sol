// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

import {DevERC20} from "./DevCollateral.sol";

interface IERC20Min {
    function decimals() external view returns (uint8);
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
    function approve(address spender, uint256 amount) external returns (bool);
}

interface ICTF {
    function prepareCondition(address oracle, bytes32 questionId, uint256 outcomeSlotCount) external;
    function reportPayouts(bytes32 questionId, uint256[] calldata payouts) external;
    function getOutcomeSlotCount(bytes32 conditionId) external view returns (uint256);
    function getConditionId(address oracle, bytes32 questionId, uint256 outcomeSlotCount) external pure returns (bytes32);
    function getCollectionId(bytes32 parent, bytes32 conditionId, uint256 indexSet) external view returns (bytes32);
    function getPositionId(address collateral, bytes32 collectionId) external pure returns (uint256);
    function splitPosition(address collateral, bytes32 parent, bytes32 conditionId, uint256[] calldata partition, uint256 amount) external;
    function mergePositions(address collateral, bytes32 parent, bytes32 conditionId, uint256[] calldata partition, uint256 amount) external;
    function redeemPositions(address collateral, bytes32 parent, bytes32 conditionId, uint256[] calldata indexSets) external;
    function balanceOf(address owner, uint256 id) external view returns (uint256);
    function balanceOfBatch(address[] calldata owners, uint256[] calldata ids) external view returns (uint256[] memory);
    function isApprovedForAll(address owner, address operator) external view returns (bool);
    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata data) external;
    function safeBatchTransferFrom(address from, address to, uint256[] calldata ids, uint256[] calldata values, bytes calldata data) external;
}

/// The collateral the adapter's positions are made of: a 1:1 wrapper around the real
/// collateral that only the adapter wraps and unwraps.
contract DevWrappedCollateral is DevERC20 {
    address public immutable owner;
    address public immutable underlying;
    uint8 public immutable decimals;

    constructor(address _underlying, uint8 _decimals) {
        owner = msg.sender;
        underlying = _underlying;
        decimals = _decimals;
    }

    function wrap(address to, uint256 amount) external {
        require(msg.sender == owner, "not the owner");
        require(IERC20Min(underlying).transferFrom(msg.sender, address(this), amount), "wrap failed");
        _mint(to, amount);
    }

    function unwrap(address to, uint256 amount) external {
        require(msg.sender == owner, "not the owner");
        _burn(msg.sender, amount);
        require(IERC20Min(underlying).transfer(to, amount), "unwrap failed");
    }

    /// Mints `amount` to the owner with nothing wrapped: a conversion splits it into the YES
    /// positions it hands out, whose NO halves it burns.
    function mint(uint256 amount) external {
        require(msg.sender == owner, "not the owner");
        _mint(msg.sender, amount);
    }

    /// Pays `amount` of the underlying to `to` with nothing unwrapped: a conversion's
    /// collateral, which the NO positions it burned held.
    function release(address to, uint256 amount) external {
        require(msg.sender == owner, "not the owner");
        require(IERC20Min(underlying).transfer(to, amount), "release failed");
    }
}

/// predex's development adapter for negative-risk markets, with the interface of
/// Polymarket's NegRiskAdapter that settlement and market creation use: a market groups
/// questions, each question is a binary condition prepared on ConditionalTokens with this
/// adapter as its oracle, and positions are made of wrapped collateral. Exchanges that
/// settle through it pass it as their ConditionalTokens: it splits, merges and moves
/// positions (the last for its admins only, as an operator approved by the owner), and
/// converts a set of NO positions into the other questions' YES positions and collateral.
contract DevNegRiskAdapter {
    bytes32 private constant MASK = bytes32(type(uint256).max) << 8;

    ICTF public immutable ctf;
    IERC20Min public immutable col;
    DevWrappedCollateral public immutable wcol;
    address public immutable vault;
    mapping(address => uint256) public admins;

    struct Market {
        address oracle;
        uint256 feeBips;
        uint256 questionCount;
    }

    mapping(bytes32 => Market) private markets;

    error NotAdmin();
    error NotApprovedForAll();
    error UnexpectedCollateralToken();
    error MarketAlreadyPrepared();
    error MarketNotPrepared();
    error OnlyOracle();
    error InvalidFeeBips();
    error NoConvertiblePositions();
    error InvalidIndexSet();

    event MarketPrepared(bytes32 indexed marketId, address indexed oracle, uint256 feeBips, bytes data);
    event QuestionPrepared(bytes32 indexed marketId, bytes32 indexed questionId, uint256 index, bytes data);
    event OutcomeReported(bytes32 indexed marketId, bytes32 indexed questionId, bool outcome);
    event PositionSplit(address indexed stakeholder, bytes32 indexed conditionId, uint256 amount);
    event PositionsMerge(address indexed stakeholder, bytes32 indexed conditionId, uint256 amount);
    event PositionsConverted(
        address indexed stakeholder, bytes32 indexed marketId, uint256 indexed indexSet, uint256 amount
    );
    event PayoutRedemption(address indexed redeemer, bytes32 indexed conditionId, uint256[] amounts, uint256 payout);

    /// Where converted NO positions go: no one holds its key, so they are never redeemed.
    address public constant NO_TOKEN_BURN_ADDRESS = address(bytes20(keccak256("NO_TOKEN_BURN_ADDRESS")));

    constructor(address _ctf, address _collateral, address _vault) {
        ctf = ICTF(_ctf);
        col = IERC20Min(_collateral);
        vault = _vault;
        admins[msg.sender] = 1;
        wcol = new DevWrappedCollateral(_collateral, IERC20Min(_collateral).decimals());
        wcol.approve(_ctf, type(uint256).max);
        IERC20Min(_collateral).approve(address(wcol), type(uint256).max);
    }

    modifier onlyAdmin() {
        if (admins[msg.sender] != 1) revert NotAdmin();
        _;
    }

    function isAdmin(address who) external view returns (bool) {
        return admins[who] == 1;
    }

    function addAdmin(address who) external onlyAdmin {
        admins[who] = 1;
    }

    function removeAdmin(address who) external onlyAdmin {
        admins[who] = 0;
    }

    // ---- ids

    function getConditionId(bytes32 questionId) public view returns (bytes32) {
        return ctf.getConditionId(address(this), questionId, 2);
    }

    /// The position of a question's YES (`outcome` true, index set 1) or NO (2).
    function getPositionId(bytes32 questionId, bool outcome) public view returns (uint256) {
        return _position(getConditionId(questionId), outcome);
    }

    function _position(bytes32 conditionId, bool outcome) private view returns (uint256) {
        return ctf.getPositionId(address(wcol), ctf.getCollectionId(bytes32(0), conditionId, outcome ? 1 : 2));
    }

    function _pair(bytes32 conditionId) private view returns (uint256[] memory ids) {
        ids = new uint256[](2);
        ids[0] = _position(conditionId, true);
        ids[1] = _position(conditionId, false);
    }

    function _two(uint256 a, uint256 b) private pure returns (uint256[] memory v) {
        v = new uint256[](2);
        v[0] = a;
        v[1] = b;
    }

    // ---- markets and questions

    function prepareMarket(uint256 feeBips, bytes calldata metadata) external returns (bytes32 marketId) {
        if (feeBips > 10_000) revert InvalidFeeBips();
        marketId = keccak256(abi.encode(msg.sender, feeBips, metadata)) & MASK;
        if (markets[marketId].oracle != address(0)) revert MarketAlreadyPrepared();
        markets[marketId] = Market(msg.sender, feeBips, 0);
        emit MarketPrepared(marketId, msg.sender, feeBips, metadata);
    }

    function prepareQuestion(bytes32 marketId, bytes calldata metadata) external returns (bytes32 questionId) {
        Market storage m = markets[marketId];
        if (m.oracle == address(0)) revert MarketNotPrepared();
        if (m.oracle != msg.sender) revert OnlyOracle();
        uint256 index = m.questionCount++;
        require(index < 256, "too many questions");
        questionId = bytes32(uint256(marketId) + index);
        if (ctf.getOutcomeSlotCount(getConditionId(questionId)) == 0) {
            ctf.prepareCondition(address(this), questionId, 2);
        }
        emit QuestionPrepared(marketId, questionId, index, metadata);
    }

    function getOracle(bytes32 marketId) external view returns (address) {
        return markets[marketId].oracle;
    }

    function getQuestionCount(bytes32 marketId) external view returns (uint256) {
        return markets[marketId].questionCount;
    }

    function getFeeBips(bytes32 marketId) external view returns (uint256) {
        return markets[marketId].feeBips;
    }

    function reportOutcome(bytes32 questionId, bool outcome) external {
        bytes32 marketId = questionId & MASK;
        if (markets[marketId].oracle != msg.sender) revert OnlyOracle();
        ctf.reportPayouts(questionId, outcome ? _two(1, 0) : _two(0, 1));
        emit OutcomeReported(marketId, questionId, outcome);
    }

    // ---- positions, as ConditionalTokens moves them

    function splitPosition(address collateral, bytes32, bytes32 conditionId, uint256[] calldata, uint256 amount) external {
        if (collateral != address(col)) revert UnexpectedCollateralToken();
        splitPosition(conditionId, amount);
    }

    function splitPosition(bytes32 conditionId, uint256 amount) public {
        require(col.transferFrom(msg.sender, address(this), amount), "collateral transfer failed");
        wcol.wrap(address(this), amount);
        ctf.splitPosition(address(wcol), bytes32(0), conditionId, _two(1, 2), amount);
        ctf.safeBatchTransferFrom(address(this), msg.sender, _pair(conditionId), _two(amount, amount), "");
        emit PositionSplit(msg.sender, conditionId, amount);
    }

    function mergePositions(address collateral, bytes32, bytes32 conditionId, uint256[] calldata, uint256 amount) external {
        if (collateral != address(col)) revert UnexpectedCollateralToken();
        mergePositions(conditionId, amount);
    }

    function mergePositions(bytes32 conditionId, uint256 amount) public {
        ctf.safeBatchTransferFrom(msg.sender, address(this), _pair(conditionId), _two(amount, amount), "");
        ctf.mergePositions(address(wcol), bytes32(0), conditionId, _two(1, 2), amount);
        wcol.unwrap(msg.sender, amount);
        emit PositionsMerge(msg.sender, conditionId, amount);
    }

    function redeemPositions(bytes32 conditionId, uint256[] calldata amounts) external {
        ctf.safeBatchTransferFrom(msg.sender, address(this), _pair(conditionId), amounts, "");
        ctf.redeemPositions(address(wcol), bytes32(0), conditionId, _two(1, 2));
        uint256 payout = wcol.balanceOf(address(this));
        if (payout > 0) wcol.unwrap(msg.sender, payout);
        emit PayoutRedemption(msg.sender, conditionId, amounts, payout);
    }

    // ---- conversion

    /// Converts `amount` NO of each question in `indexSet` (bit i: question i) into `amount`
    /// YES of each other question of the market and (questions in the set − 1) · `amount`
    /// collateral, less the market's fee (to the vault, in collateral and YES alike). Only
    /// one question resolves YES, so what is given and what is got pay alike whichever it
    /// is. The caller approves this adapter on ConditionalTokens, as for a merge.
    function convertPositions(bytes32 marketId, uint256 indexSet, uint256 amount) external {
        Market storage m = markets[marketId];
        if (m.oracle == address(0)) revert MarketNotPrepared();
        uint256 n = m.questionCount;
        if (n <= 1) revert NoConvertiblePositions();
        if (indexSet == 0 || indexSet >> n != 0) revert InvalidIndexSet();
        if (amount == 0) return;
        (uint256[] memory given, uint256[] memory made) = _convertible(marketId, n, indexSet, amount);
        ctf.safeBatchTransferFrom(msg.sender, NO_TOKEN_BURN_ADDRESS, given, _fill(given.length, amount), "");
        uint256 fee = (amount * m.feeBips) / 10_000;
        if (given.length > 1) {
            if (fee > 0) wcol.release(vault, (given.length - 1) * fee);
            wcol.release(msg.sender, (given.length - 1) * (amount - fee));
        }
        if (made.length > 0) {
            if (fee > 0) ctf.safeBatchTransferFrom(address(this), vault, made, _fill(made.length, fee), "");
            ctf.safeBatchTransferFrom(address(this), msg.sender, made, _fill(made.length, amount - fee), "");
        }
        emit PositionsConverted(msg.sender, marketId, indexSet, amount);
    }

    /// The NO positions a conversion takes (the questions in `indexSet`) and the YES
    /// positions it gives (the others), made here: `amount` split on each other question
    /// from wrapped collateral minted for it, its NO half burned.
    function _convertible(bytes32 marketId, uint256 n, uint256 indexSet, uint256 amount)
        private
        returns (uint256[] memory given, uint256[] memory made)
    {
        uint256 k;
        for (uint256 i; i < n; ++i) {
            if ((indexSet >> i) & 1 == 1) ++k;
        }
        given = new uint256[](k);
        made = new uint256[](n - k);
        uint256[] memory halves = new uint256[](n - k);
        if (n > k) wcol.mint((n - k) * amount);
        (uint256 g, uint256 y) = (0, 0);
        for (uint256 i; i < n; ++i) {
            bytes32 condition = getConditionId(bytes32(uint256(marketId) + i));
            if ((indexSet >> i) & 1 == 1) {
                given[g++] = _position(condition, false);
            } else {
                ctf.splitPosition(address(wcol), bytes32(0), condition, _two(1, 2), amount);
                made[y] = _position(condition, true);
                halves[y++] = _position(condition, false);
            }
        }
        if (n > k) ctf.safeBatchTransferFrom(address(this), NO_TOKEN_BURN_ADDRESS, halves, _fill(n - k, amount), "");
    }

    function _fill(uint256 length, uint256 value) private pure returns (uint256[] memory v) {
        v = new uint256[](length);
        for (uint256 i; i < length; ++i) v[i] = value;
    }

    function balanceOf(address owner, uint256 id) external view returns (uint256) {
        return ctf.balanceOf(owner, id);
    }

    function balanceOfBatch(address[] calldata owners, uint256[] calldata ids) external view returns (uint256[] memory) {
        return ctf.balanceOfBatch(owners, ids);
    }

    /// Moves a position for an admin (the negative-risk exchange) that its owner approved on
    /// ConditionalTokens; the owner must have approved this adapter there too.
    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata data) external onlyAdmin {
        if (!ctf.isApprovedForAll(from, msg.sender)) revert NotApprovedForAll();
        ctf.safeTransferFrom(from, to, id, value, data);
    }

    function onERC1155Received(address, address, uint256, uint256, bytes calldata) external pure returns (bytes4) {
        return this.onERC1155Received.selector;
    }

    function onERC1155BatchReceived(address, address, uint256[] calldata, uint256[] calldata, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        return this.onERC1155BatchReceived.selector;
    }
}

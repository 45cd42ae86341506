//! The contracts' interfaces as predex calls them: the exchanges (Polymarket's CTF Exchange
//! interfaces, V1 and V2, which predex's development exchanges share), ConditionalTokens,
//! the negative-risk adapter and the collateral ERC-20, and the wallets' (Safe, its
//! factory, the proxy-wallet factory and the relay hub).

// The calls' builders take the functions' parameters: a Safe's execTransaction has ten.
#![allow(clippy::too_many_arguments)]

use alloy_sol_types::sol;

sol! {
    /// A CTF exchange: the standard one, or the negative-risk one (same interface).
    #[sol(rpc)]
    #[derive(Debug)]
    interface IExchange {
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
            uint8 side;
            uint8 signatureType;
            bytes signature;
        }

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

        event OrderCancelled(bytes32 indexed orderHash);

        function getCollateral() external view returns (address);
        function getCtf() external view returns (address);
        function isAdmin(address who) external view returns (bool);
        function isOperator(address who) external view returns (bool);
        function addAdmin(address who) external;
        function addOperator(address who) external;
        function hashOrder(Order memory order) external view returns (bytes32);
        function registerToken(uint256 token, uint256 complement, bytes32 conditionId) external;
        function getConditionId(uint256 token) external view returns (bytes32);
        function nonces(address who) external view returns (uint256);
        function getSafeAddress(address signer) external view returns (address);
        function getPolyProxyWalletAddress(address signer) external view returns (address);
        function incrementNonce() external;
        function cancelOrder(Order memory order) external;
        function cancelOrders(Order[] memory orders) external;
        function matchOrders(Order memory takerOrder, Order[] memory makerOrders, uint256 takerFillAmount, uint256[] memory makerFillAmounts) external;
    }

    /// A CTF exchange V2 (Polymarket's, or predex's development one): version 2 orders,
    /// fees named by the operator per call, makers' pauses instead of nonces; the standard
    /// and the negative-risk exchange are one contract built with other parameters.
    #[sol(rpc)]
    #[derive(Debug)]
    #[allow(clippy::too_many_arguments)]
    interface IExchangeV2 {
        struct Order {
            uint256 salt;
            address maker;
            address signer;
            uint256 tokenId;
            uint256 makerAmount;
            uint256 takerAmount;
            uint8 side;
            uint8 signatureType;
            uint256 timestamp;
            bytes32 metadata;
            bytes32 builder;
            bytes signature;
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

        event UserPaused(address indexed user, uint256 effectivePauseBlock);
        event UserUnpaused(address indexed user);

        function getCollateral() external view returns (address);
        function getCtf() external view returns (address);
        function getCtfCollateral() external view returns (address);
        function getOutcomeTokenFactory() external view returns (address);
        function getFeeReceiver() external view returns (address);
        function getSafeAddress(address signer) external view returns (address);
        function getPolyProxyWalletAddress(address signer) external view returns (address);
        function getMaxFeeRate() external view returns (uint256);
        function isAdmin(address who) external view returns (bool);
        function isOperator(address who) external view returns (bool);
        function addAdmin(address who) external;
        function addOperator(address who) external;
        function setFeeReceiver(address receiver) external;
        function hashOrder(Order memory order) external view returns (bytes32);
        function userPausedBlockAt(address user) external view returns (uint256);
        function pauseUser() external;
        function unpauseUser() external;
        function setUserPauseBlockInterval(uint256 interval) external;
        function matchOrders(bytes32 conditionId, Order memory takerOrder, Order[] memory makerOrders, uint256 takerFillAmount, uint256[] memory makerFillAmounts, uint256 takerFeeAmount, uint256[] memory makerFeeAmounts) external;
    }

    /// Gnosis' ConditionalTokens (ERC-1155 positions).
    #[sol(rpc)]
    #[derive(Debug)]
    interface IConditionalTokens {
        event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
        event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values);
        event ApprovalForAll(address indexed owner, address indexed operator, bool approved);
        event PositionSplit(address indexed stakeholder, address collateralToken, bytes32 indexed parentCollectionId, bytes32 indexed conditionId, uint256[] partition, uint256 amount);
        event PositionsMerge(address indexed stakeholder, address collateralToken, bytes32 indexed parentCollectionId, bytes32 indexed conditionId, uint256[] partition, uint256 amount);
        event PayoutRedemption(address indexed redeemer, address indexed collateralToken, bytes32 indexed parentCollectionId, bytes32 conditionId, uint256[] indexSets, uint256 payout);
        event ConditionPreparation(bytes32 indexed conditionId, address indexed oracle, bytes32 indexed questionId, uint256 outcomeSlotCount);

        function prepareCondition(address oracle, bytes32 questionId, uint256 outcomeSlotCount) external;
        function getOutcomeSlotCount(bytes32 conditionId) external view returns (uint256);
        function getConditionId(address oracle, bytes32 questionId, uint256 outcomeSlotCount) external pure returns (bytes32);
        function getCollectionId(bytes32 parentCollectionId, bytes32 conditionId, uint256 indexSet) external view returns (bytes32);
        function getPositionId(address collateralToken, bytes32 collectionId) external pure returns (uint256);
        function splitPosition(address collateralToken, bytes32 parentCollectionId, bytes32 conditionId, uint256[] calldata partition, uint256 amount) external;
        function mergePositions(address collateralToken, bytes32 parentCollectionId, bytes32 conditionId, uint256[] calldata partition, uint256 amount) external;
        function redeemPositions(address collateralToken, bytes32 parentCollectionId, bytes32 conditionId, uint256[] calldata indexSets) external;
        function reportPayouts(bytes32 questionId, uint256[] calldata payouts) external;
        function payoutDenominator(bytes32 conditionId) external view returns (uint256);
        function balanceOf(address owner, uint256 id) external view returns (uint256);
        function isApprovedForAll(address owner, address operator) external view returns (bool);
        function setApprovalForAll(address operator, bool approved) external;
    }

    /// The negative-risk adapter: markets of questions, each a binary condition it is the
    /// oracle of, over wrapped collateral.
    #[sol(rpc)]
    #[derive(Debug)]
    interface INegRiskAdapter {
        event MarketPrepared(bytes32 indexed marketId, address indexed oracle, uint256 feeBips, bytes data);
        event QuestionPrepared(bytes32 indexed marketId, bytes32 indexed questionId, uint256 index, bytes data);
        event PositionSplit(address indexed stakeholder, bytes32 indexed conditionId, uint256 amount);
        event PositionsMerge(address indexed stakeholder, bytes32 indexed conditionId, uint256 amount);
        event PositionsConverted(address indexed stakeholder, bytes32 indexed marketId, uint256 indexed indexSet, uint256 amount);
        event PayoutRedemption(address indexed redeemer, bytes32 indexed conditionId, uint256[] amounts, uint256 payout);

        function addAdmin(address who) external;
        function isAdmin(address who) external view returns (bool);
        function wcol() external view returns (address);
        function prepareMarket(uint256 feeBips, bytes calldata metadata) external returns (bytes32);
        function prepareQuestion(bytes32 marketId, bytes calldata metadata) external returns (bytes32);
        function getConditionId(bytes32 questionId) external view returns (bytes32);
        function getPositionId(bytes32 questionId, bool outcome) external view returns (uint256);
        function getOracle(bytes32 marketId) external view returns (address);
        function getQuestionCount(bytes32 marketId) external view returns (uint256);
        function splitPosition(bytes32 conditionId, uint256 amount) external;
        function mergePositions(bytes32 conditionId, uint256 amount) external;
        function convertPositions(bytes32 marketId, uint256 indexSet, uint256 amount) external;
        function redeemPositions(bytes32 conditionId, uint256[] calldata amounts) external;
        function reportOutcome(bytes32 questionId, bool outcome) external;
    }

    /// The collateral: an ERC-20 (6 decimals); the development one also mints.
    #[sol(rpc)]
    #[derive(Debug)]
    interface ICollateral {
        event Transfer(address indexed from, address indexed to, uint256 value);
        event Approval(address indexed owner, address indexed spender, uint256 value);

        function decimals() external view returns (uint8);
        function balanceOf(address who) external view returns (uint256);
        function allowance(address owner, address spender) external view returns (uint256);
        function approve(address spender, uint256 amount) external returns (bool);
        function transfer(address to, uint256 amount) external returns (bool);
        function mint(address to, uint256 amount) external;
    }

    /// A Safe factory (Polymarket's interface): one Safe per owner, made for whoever signed
    /// the EIP-712 `CreateProxy` message.
    #[sol(rpc)]
    #[derive(Debug)]
    interface ISafeFactory {
        struct Sig {
            uint8 v;
            bytes32 r;
            bytes32 s;
        }
        function masterCopy() external view returns (address);
        function proxyCreationCode() external view returns (bytes memory);
        function computeProxyAddress(address user) external view returns (address);
        function createProxy(address paymentToken, uint256 payment, address paymentReceiver, Sig calldata createSig) external;
    }

    /// A proxy-wallet factory (Polymarket's interface): `proxy(calls)` from the caller's
    /// wallet, the caller being the relay hub's sender when the hub calls.
    #[sol(rpc)]
    #[derive(Debug)]
    interface IProxyFactory {
        struct ProxyCall {
            uint8 typeCode;
            address to;
            uint256 value;
            bytes data;
        }
        function getImplementation() external view returns (address);
        function computeProxyAddress(address user) external view returns (address);
        function proxy(ProxyCall[] calldata calls) external payable returns (bytes[] memory);
    }

    /// GSN v1's relay hub, as far as proxy wallets use it.
    #[sol(rpc)]
    #[derive(Debug)]
    interface IRelayHub {
        function getNonce(address from) external view returns (uint256);
        function relayCall(address from, address recipient, bytes calldata encodedFunction, uint256 transactionFee, uint256 gasPrice, uint256 gasLimit, uint256 nonce, bytes calldata signature, bytes calldata approvalData) external;
    }

    /// A Gnosis Safe 1.3.0.
    #[sol(rpc)]
    #[derive(Debug)]
    interface ISafe {
        function nonce() external view returns (uint256);
        function getOwners() external view returns (address[] memory);
        function execTransaction(address to, uint256 value, bytes calldata data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes memory signatures) external payable returns (bool success);
    }

    /// Safe's MultiSend: packed calls run one after another by a Safe's delegatecall.
    interface IMultiSend {
        function multiSend(bytes memory transactions) external payable;
    }
}

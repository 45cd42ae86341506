// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

interface IERC20Like {
    function balanceOf(address who) external view returns (uint256);
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
    function approve(address spender, uint256 amount) external returns (bool);
}

/// ConditionalTokens, or anything that splits, merges and moves positions the same way.
interface IConditionalTokensLike {
    function balanceOf(address owner, uint256 id) external view returns (uint256);
    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata data) external;
    function setApprovalForAll(address operator, bool approved) external;
    function splitPosition(address collateral, bytes32 parent, bytes32 conditionId, uint256[] calldata partition, uint256 amount) external;
    function mergePositions(address collateral, bytes32 parent, bytes32 conditionId, uint256[] calldata partition, uint256 amount) external;
    function getCollectionId(bytes32 parent, bytes32 conditionId, uint256 indexSet) external view returns (bytes32);
    function getPositionId(address collateral, bytes32 collectionId) external pure returns (uint256);
}

/// What predex's development exchanges share: the collateral and the positions they move
/// (asset 0 is the collateral, any other id a position), and positions pooled here during a
/// match (an ERC-1155 receiver).
abstract contract DevAssets {
    address internal immutable collateral;
    address internal immutable ctf;

    constructor(address _collateral, address _ctf) {
        collateral = _collateral;
        ctf = _ctf;
    }

    function _held(uint256 id) internal view returns (uint256) {
        if (id == 0) return IERC20Like(collateral).balanceOf(address(this));
        return IConditionalTokensLike(ctf).balanceOf(address(this), id);
    }

    function _move(address from, address to, uint256 id, uint256 amount) internal {
        if (amount == 0 || from == to) return;
        if (id == 0) {
            bool ok = from == address(this)
                ? IERC20Like(collateral).transfer(to, amount)
                : IERC20Like(collateral).transferFrom(from, to, amount);
            require(ok, "collateral transfer failed");
        } else {
            IConditionalTokensLike(ctf).safeTransferFrom(from, to, id, amount, "");
        }
    }

    /// `factory` (ConditionalTokens, or the negative-risk adapter) makes `amount` full sets
    /// of the binary condition out of collateral (`split`), or collateral out of them.
    function _partition(address factory, bool split, bytes32 conditionId, uint256 amount) internal {
        uint256[] memory partition = new uint256[](2);
        partition[0] = 1;
        partition[1] = 2;
        if (split) {
            IConditionalTokensLike(factory).splitPosition(collateral, bytes32(0), conditionId, partition, amount);
        } else {
            IConditionalTokensLike(factory).mergePositions(collateral, bytes32(0), conditionId, partition, amount);
        }
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

    function supportsInterface(bytes4 id) external pure returns (bool) {
        return id == 0x01ffc9a7 || id == 0x4e2312e0;
    }
}

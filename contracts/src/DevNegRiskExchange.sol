// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.19;

import {DevExchange} from "./DevExchange.sol";

interface IApprovable {
    function setApprovalForAll(address operator, bool approved) external;
}

/// The exchange for negative-risk markets: the same exchange, whose positions move, split
/// and merge through the negative-risk adapter (constructed as Polymarket's
/// NegRiskCtfExchange is: collateral, ConditionalTokens, adapter, proxy and Safe factories).
contract DevNegRiskExchange is DevExchange {
    constructor(address _collateral, address _ctf, address _adapter, address _proxyFactory, address _safeFactory)
        DevExchange(_collateral, _adapter, _proxyFactory, _safeFactory)
    {
        IApprovable(_ctf).setApprovalForAll(_adapter, true);
        IApprovable(_ctf).setApprovalForAll(address(this), true);
    }
}

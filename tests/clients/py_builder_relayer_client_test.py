"""Polymarket's Python relayer client (py-builder-relayer-client, pinned in
tools/requirements.txt) against a real predex, in ledger mode or in chain mode on the
Polygon layout, unpatched: only its constructor arguments (relayer URL, chain id, key,
builder credentials). It deploys the owner's Safe, and gives the venue its approvals and
splits from it in one transaction (a MultiSend), then does the same from the owner's proxy
wallet.

Run by the integration tests `clients::official_relayer_client` and
`clients::official_clients_with_wallets_on_the_polygon_layout`, which give it a builder key
and a market and then check the wallets' balances; exits non-zero at the first failed
check.
"""

import os

from eth_abi import encode
from eth_utils import function_signature_to_4byte_selector
from py_builder_relayer_client.client import RelayClient
from py_builder_relayer_client.models import RelayerTxType, Transaction
from py_builder_signing_sdk.config import BuilderConfig
from py_builder_signing_sdk.sdk_types import BuilderApiKeyCreds

CLOB = os.environ["PREDEX_CLOB"]
COND = os.environ["PREDEX_COND"]
KEY = os.environ["PREDEX_OWNER_KEY"]
USDC = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174"
CTF = "0x4D97DCd97eC945f40cF65F87097ACe5EA0476045"
EXCHANGE = "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E"
NEG_RISK_EXCHANGE = "0xC5d563A36AE78145C45a50134d48A1215220f80a"
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        raise AssertionError(what)


def call(to, signature, types, values):
    data = function_signature_to_4byte_selector(signature) + encode(types, values)
    return Transaction(to=to, data="0x" + data.hex(), value="0")


# What trading from a wallet needs: collateral for ConditionalTokens (a split pulls it) and
# both exchanges, positions for the exchange.
APPROVALS = [
    call(USDC, "approve(address,uint256)", ["address", "uint256"], [CTF, 2**256 - 1]),
    call(USDC, "approve(address,uint256)", ["address", "uint256"], [EXCHANGE, 2**256 - 1]),
    call(USDC, "approve(address,uint256)", ["address", "uint256"], [NEG_RISK_EXCHANGE, 2**256 - 1]),
    call(CTF, "setApprovalForAll(address,bool)", ["address", "bool"], [EXCHANGE, True]),
]


def split(amount):
    """ConditionalTokens' splitPosition of the market's complete sets."""
    return call(
        CTF,
        "splitPosition(address,bytes32,bytes32,uint256[],uint256)",
        ["address", "bytes32", "bytes32", "uint256[]", "uint256"],
        [USDC, b"\0" * 32, bytes.fromhex(COND[2:]), [1, 2], amount],
    )


builder = BuilderConfig(
    local_builder_creds=BuilderApiKeyCreds(
        key=os.environ["PREDEX_BUILDER_KEY"],
        secret=os.environ["PREDEX_BUILDER_SECRET"],
        passphrase=os.environ["PREDEX_BUILDER_PASSPHRASE"],
    )
)


def done(response, what):
    tx = response.wait()
    # Ledger mode confirms at once; on chain the client stops waiting once it is mined.
    check(tx is not None and tx["state"] in ("STATE_MINED", "STATE_CONFIRMED"), f"{what}: {tx}")
    check(tx["transactionHash"] == response.transaction_hash, f"{what}: the hash")
    return tx


safe_client = RelayClient(CLOB, 137, KEY, builder)
safe = safe_client.get_expected_safe()
check(not safe_client.get_deployed(safe), "no Safe yet")
created = done(safe_client.deploy(), "deploy")
check(created["type"] == "SAFE-CREATE" and created["proxyAddress"].lower() == safe.lower(), created)
check(safe_client.get_deployed(safe), "deployed")
done(safe_client.execute(APPROVALS + [split(3_000_000)], "py split"), "split")
check(safe_client.get_nonce(safe_client.signer.address(), "SAFE")["nonce"] == "1", "the Safe's nonce")

proxy_client = RelayClient(CLOB, 137, KEY, builder, RelayerTxType.PROXY)
done(proxy_client.execute(APPROVALS + [split(2_000_000)]), "proxy split")
check(proxy_client.get_nonce(proxy_client.signer.address(), "PROXY")["nonce"] == "1", "the proxy's nonce")

print(f"py-builder-relayer-client: {checks} checks passed")

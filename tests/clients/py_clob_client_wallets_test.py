"""Polymarket's official Python client (py-clob-client, pinned in tools/requirements.txt),
unpatched, trading for a wallet its owner's key derives: a Safe (signature type 2) or a
proxy wallet (type 1) as the funder, against a chain-mode predex on the Polygon layout. It
makes or derives its owner's key, reads the wallet's balance and places one resting bid for
it; the integration test `clients::official_clients_with_wallets_on_the_polygon_layout`
matches it and checks the settlement on chain. Exits non-zero at the first failed check.
"""

import os

from py_clob_client.client import ClobClient
from py_clob_client.clob_types import ApiCreds, AssetType, BalanceAllowanceParams, OrderArgs
from py_clob_client.order_builder.constants import BUY

CLOB = os.environ["PREDEX_CLOB"]
YES = os.environ["PREDEX_YES"]
KEY = os.environ["PREDEX_OWNER_KEY"]
TYPE = int(os.environ["PREDEX_SIGNATURE_TYPE"])
FUNDER = os.environ["PREDEX_FUNDER"]
FUNDER_USDC = os.environ["PREDEX_FUNDER_USDC"]
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        raise AssertionError(what)


creds = ClobClient(CLOB, chain_id=137, key=KEY).create_or_derive_api_creds()
check(isinstance(creds, ApiCreds) and creds.api_key, f"creds {creds}")
client = ClobClient(CLOB, chain_id=137, key=KEY, creds=creds, signature_type=TYPE, funder=FUNDER)

# The wallet's collateral on chain, as the venue reads it for the owner's key and type.
balance = client.get_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.COLLATERAL))
check(balance["balance"] == FUNDER_USDC, f"the wallet's balance {balance}")

# A bid for 10 YES at 0.40, made by the wallet and signed by its owner.
bid = client.create_and_post_order(OrderArgs(token_id=YES, price=0.4, size=10, side=BUY))
check(bid["success"] and bid["status"] == "LIVE", bid)
order = client.get_order(bid["orderID"])
check(order["maker_address"].lower() == FUNDER.lower() and order["status"] == "LIVE", order)

print(f"py-clob-client, signature type {TYPE}: {checks} checks passed")

"""Polymarket's V2 Python client (py-clob-client-v2, pinned in tools/requirements.txt)
against a real predex, unpatched: only its constructor arguments (host, chain id, key).

The client asks `GET /version` and signs the orders of the version the venue names; the
venue's version is in PREDEX_ORDER_VERSION. Run by the integration test
`clients::official_python_v2_client`; exits non-zero at the first failed check.
"""

import json
import os
import sys
import threading
import time

import httpx
import websocket
from eth_account import Account
from py_clob_client_v2 import (
    ApiCreds,
    AssetType,
    BalanceAllowanceParams,
    BookParams,
    MarketOrderArgs,
    OpenOrderParams,
    OrderArgs,
    OrderMarketCancelParams,
    OrderPayload,
    OrderType,
    PostOrdersV2Args,
    TradeParams,
)
from py_clob_client_v2 import ClobClient

CLOB = os.environ["PREDEX_CLOB"]
INTERNAL = os.environ["PREDEX_INTERNAL"]
OPERATOR = {"Authorization": "Bearer " + os.environ["PREDEX_INTERNAL_TOKEN"]}
COND = os.environ["PREDEX_COND"]
YES = os.environ["PREDEX_YES"]
NO = os.environ["PREDEX_NO"]
VERSION = int(os.environ["PREDEX_ORDER_VERSION"])
CHAIN_ID = 137
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        raise AssertionError(what)


def status(spec):
    """A placement's status as the venue names it: SPEC's on version 1, Polymarket's (lower
    case) on version 2."""
    return spec.lower() if VERSION == 2 else spec


def credit(address, asset, amount):
    r = httpx.post(
        f"{INTERNAL}/internal/ledger/credit",
        json={"address": address, "asset": asset, "amount": str(amount)},
        headers=OPERATOR,
    )
    check(r.status_code == 200, f"credit {r.status_code} {r.text}")


def wallet():
    """A client for a new wallet, with its first key made through the client itself."""
    acct = Account.create()
    c = ClobClient(CLOB, chain_id=CHAIN_ID, key=acct.key.hex())
    creds = c.create_or_derive_api_key()
    check(isinstance(creds, ApiCreds) and creds.api_key, f"creds {creds}")
    again = c.create_or_derive_api_key()
    check(again.api_key == creds.api_key, "create_or_derive gives the same key the second time")
    c.set_api_creds(creds)
    return c, acct.address


def main():
    public = ClobClient(CLOB, chain_id=CHAIN_ID)
    check(public.get_ok() == "OK", "get_ok")
    check(public.get_version() == VERSION, "the venue's order version")
    check(abs(int(public.get_server_time()) - time.time()) < 60, "server time")

    maker, maker_addr = wallet()
    taker, taker_addr = wallet()
    credit(maker_addr, "USDC", 1_000_000_000)
    credit(maker_addr, YES, 100_000_000)
    credit(taker_addr, "USDC", 1_000_000_000)
    check(maker.get_api_keys()["apiKeys"] == [maker.creds.api_key], "get_api_keys")
    check(maker.get_closed_only_mode() == {"closed_only": False}, "closed only")

    # Markets, and the short-keyed market the client reads before it signs.
    markets = public.get_markets()
    check(any(m["condition_id"] == COND for m in markets["data"]), "get_markets")
    check(public.get_market(COND)["tokens"][0]["token_id"] == YES, "get_market")
    info = public.get_clob_market_info(COND)
    check(info["c"] == COND and [t["t"] for t in info["t"]] == [YES, NO], f"clob market {info}")
    check(public.get_tick_size(YES) == "0.01", "tick size")
    check(public.get_neg_risk(YES) is False, "neg risk")
    # The market's fee description: set on a version 2 venue (r 0.25, e 2), none on 1.
    check(public.get_fee_exponent(YES) == (2 if VERSION == 2 else 0), "fee exponent")

    # The user channel, open before the first order.
    user_events = []
    ws_base = CLOB.replace("http://", "ws://")
    uws = websocket.create_connection(f"{ws_base}/ws/user", timeout=10)
    auth = {"apiKey": maker.creds.api_key, "secret": maker.creds.api_secret, "passphrase": maker.creds.api_passphrase}
    uws.send(json.dumps({"auth": auth, "markets": [COND], "type": "user"}))

    def listen():
        try:
            while True:
                msg = uws.recv()
                if msg and msg != "PONG":
                    v = json.loads(msg)
                    user_events.extend(v if isinstance(v, list) else [v])
        except Exception:
            pass

    threading.Thread(target=listen, daemon=True).start()
    mws = websocket.create_connection(f"{ws_base}/ws/market", timeout=10)
    mws.send(json.dumps({"assets_ids": [YES], "type": "market"}))
    first = json.loads(mws.recv())
    first = first if isinstance(first, list) else [first]
    check(any(m["event_type"] == "book" and m["asset_id"] == YES for m in first), f"market channel book {first}")

    # Limit orders: a bid and an ask.
    bid = maker.create_and_post_order(OrderArgs(token_id=YES, price=0.40, size=10, side="BUY"))
    check(bid["success"] and bid["status"] == status("LIVE"), f"bid {bid}")
    ask = maker.create_and_post_order(OrderArgs(token_id=YES, price=0.60, size=10, side="SELL"))
    check(ask["success"] and ask["status"] == status("LIVE"), f"ask {ask}")

    # The book, checked with the client's own hash; prices.
    book = public.get_order_book(YES)
    check(book["bids"][-1]["price"] == "0.4" and book["asks"][-1]["price"] == "0.6", f"book levels {book}")
    check(public.get_order_book_hash(book) == book["hash"], f"book hash {book['hash']}")
    books = public.get_order_books([BookParams(token_id=YES), BookParams(token_id=NO)])
    check([b["asset_id"] for b in books] == [YES, NO], "get_order_books")
    check(public.get_price(YES, "BUY") == {"price": "0.4"}, "price")
    check(public.get_prices([BookParams(token_id=YES, side="SELL")]) == {YES: {"SELL": "0.6"}}, "prices")
    check(public.get_midpoint(YES) == {"mid": "0.5000"}, "midpoint")
    check(public.get_spread(YES) == {"spread": "0.2000"}, "spread")

    open_orders = maker.get_open_orders(OpenOrderParams(market=COND))
    check({o["id"] for o in open_orders} == {bid["orderID"], ask["orderID"]}, "get_open_orders")
    check(maker.get_order(ask["orderID"])["price"] == "0.6", "get_order")

    # A market order (FOK) that takes the ask. Its reply names the settlement's hash at
    # once (so the client returns without polling the trade); the trade shows that hash
    # once settled.
    filled = taker.create_and_post_market_order(MarketOrderArgs(token_id=YES, amount=3, side="BUY"))
    check(filled["success"] and filled["status"] == status("MATCHED"), f"market order {filled}")
    trade_ids = filled["tradeIDs" if VERSION == 2 else "tradeIds"]
    hashes = filled["transactionsHashes"]
    check(len(trade_ids) == 1 and len(hashes) == 1 and hashes[0].startswith("0x"), f"hashes {filled}")
    trades = taker.get_trades(TradeParams(market=COND))
    check(len(trades) == 1 and trades[0]["price"] == "0.6" and trades[0]["size"] == "5", f"trades {trades}")
    check(trades[0]["id"] == trade_ids[0], "the reply's trade id")
    # Version 2 takers pay the market's fee description (r 0.25, e 2): 5 × 0.25 × 0.24².
    fee = "0.072" if VERSION == 2 else "0"
    check(trades[0]["taker_fee"] == fee, f"taker fee {trades[0]}")
    deadline = time.time() + 30
    while time.time() < deadline and taker.get_trades(TradeParams(id=trade_ids[0]))[0]["status"] != "CONFIRMED":
        time.sleep(0.2)
    settled = taker.get_trades(TradeParams(id=trade_ids[0]))[0]
    check(settled["status"] == "CONFIRMED" and settled["transaction_hash"] == hashes[0], f"settled {settled}")
    check(maker.get_trades()[0]["id"] == trades[0]["id"], "maker sees the trade")
    check(public.get_last_trade_price(YES) == {"price": "0.6000", "side": "BUY"}, "last trade price")
    live = public.get_market_trades_events(COND)
    check(live[0]["price"] == "0.6" and live[0]["side"] == "BUY", f"live activity {live}")

    # Balances.
    bal = taker.get_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.COLLATERAL))
    check(int(bal["balance"]) < 1_000_000_000, f"balance {bal}")
    taker.update_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.COLLATERAL))
    check(isinstance(taker.get_notifications(), list), "notifications")

    # Batch orders, cancel one, some, the market's, all.
    batch = maker.post_orders([
        PostOrdersV2Args(order=maker.create_order(OrderArgs(token_id=YES, price=p, size=5, side="BUY")), orderType=OrderType.GTC)
        for p in (0.30, 0.31, 0.32)
    ])
    check(len(batch) == 3 and all(o["success"] for o in batch), f"post_orders {batch}")
    one = maker.cancel_order(OrderPayload(orderID=batch[0]["orderID"]))
    check(one["canceled"] == [batch[0]["orderID"]], f"cancel_order {one}")
    some = maker.cancel_orders([batch[1]["orderID"]])
    check(some["canceled"] == [batch[1]["orderID"]], f"cancel_orders {some}")
    mkt = maker.cancel_market_orders(OrderMarketCancelParams(market=COND, asset_id=YES))
    check(batch[2]["orderID"] in mkt["canceled"], f"cancel_market_orders {mkt}")
    maker.create_and_post_order(OrderArgs(token_id=YES, price=0.35, size=5, side="BUY"))
    every = maker.cancel_all()
    check(len(every["canceled"]) >= 1 and maker.get_open_orders() == [], f"cancel_all {every}")

    # Heartbeats, chained by id.
    hb = maker.post_heartbeat()
    check(hb["status"] == "ok" and hb["heartbeat_id"], f"heartbeat {hb}")
    check(maker.post_heartbeat(hb["heartbeat_id"])["status"] == "ok", "heartbeat 2")

    # What the channels carried.
    deadline = time.time() + 10
    while time.time() < deadline and not any(e.get("event_type") == "trade" for e in user_events):
        time.sleep(0.1)
    check(any(e.get("event_type") == "order" for e in user_events), f"user channel orders {user_events}")
    check(any(e.get("event_type") == "trade" for e in user_events), f"user channel trade {user_events}")
    seen = []
    mws.settimeout(2)
    try:
        while True:
            v = json.loads(mws.recv())
            seen.extend(v if isinstance(v, list) else [v])
    except Exception:
        pass
    check(any(m.get("event_type") == "last_trade_price" for m in seen), f"market channel trade {seen[:5]}")
    uws.close()
    mws.close()

    maker.delete_api_key()
    print(f"py-clob-client-v2 (order version {VERSION}): {checks} checks passed")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print(f"py-clob-client-v2: FAILED after {checks} checks: {e!r}", file=sys.stderr)
        sys.exit(1)

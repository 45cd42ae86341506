"""Polymarket's official Python client (py-clob-client, pinned in tools/requirements.txt)
against a real predex, unpatched: only its constructor arguments (host, chain id, key).

Run by the integration test `clients::official_python_client` with the server's URLs and
its market in the environment; exits non-zero at the first failed check.
"""

import json
import os
import sys
import threading
import time

import httpx
import websocket
from eth_account import Account
from py_clob_client.client import ClobClient
from py_clob_client.clob_types import (
    ApiCreds,
    AssetType,
    BalanceAllowanceParams,
    BookParams,
    MarketOrderArgs,
    OpenOrderParams,
    OrderArgs,
    OrderScoringParams,
    OrdersScoringParams,
    OrderType,
    PostOrdersArgs,
    TradeParams,
)
from py_clob_client.order_builder.constants import BUY, SELL
from py_clob_client.rfq import (
    AcceptQuoteParams,
    ApproveOrderParams,
    CancelRfqQuoteParams,
    CancelRfqRequestParams,
    GetRfqBestQuoteParams,
    GetRfqQuotesParams,
    GetRfqRequestsParams,
    RfqUserQuote,
    RfqUserRequest,
)

CLOB = os.environ["PREDEX_CLOB"]
INTERNAL = os.environ["PREDEX_INTERNAL"]
OPERATOR = {"Authorization": "Bearer " + os.environ["PREDEX_INTERNAL_TOKEN"]}
COND = os.environ["PREDEX_COND"]
YES = os.environ["PREDEX_YES"]
NO = os.environ["PREDEX_NO"]
CHAIN_ID = 137
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        raise AssertionError(what)


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
    creds = c.create_or_derive_api_creds()
    check(isinstance(creds, ApiCreds) and creds.api_key, f"creds {creds}")
    again = c.create_or_derive_api_creds()
    check(again.api_key == creds.api_key, "create_or_derive gives the same key the second time")
    c.set_api_creds(creds)
    return c, acct.address


def main():
    public = ClobClient(CLOB)
    check(public.get_ok() == "OK", "get_ok")
    check(abs(int(public.get_server_time()) - time.time()) < 60, "server time")

    maker, maker_addr = wallet()
    taker, taker_addr = wallet()
    credit(maker_addr, "USDC", 1_000_000_000)
    credit(maker_addr, YES, 100_000_000)
    credit(taker_addr, "USDC", 1_000_000_000)
    check(maker.get_api_keys()["apiKeys"] == [maker.creds.api_key], "get_api_keys")
    check(maker.get_closed_only_mode() == {"closed_only": False}, "closed only")

    # Markets.
    markets = public.get_markets()
    check(markets["next_cursor"] == "LTE=" and any(m["condition_id"] == COND for m in markets["data"]), "get_markets")
    check(public.get_market(COND)["tokens"][0]["token_id"] == YES, "get_market")
    check(public.get_simplified_markets()["data"][0]["condition_id"] == COND, "simplified")
    check(public.get_sampling_markets()["data"] == [], "no reward program yet")
    check(public.get_sampling_simplified_markets()["data"] == [], "no reward program yet")
    check(public.get_tick_size(YES) == "0.01", "tick size")
    check(public.get_neg_risk(YES) is False, "neg risk")
    check(public.get_fee_rate_bps(YES) == 0, "fee rate")

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
    bid = maker.create_and_post_order(OrderArgs(token_id=YES, price=0.40, size=10, side=BUY))
    check(bid["success"] and bid["status"] == "LIVE", f"bid {bid}")
    ask = maker.create_and_post_order(OrderArgs(token_id=YES, price=0.60, size=10, side=SELL))
    check(ask["success"] and ask["status"] == "LIVE", f"ask {ask}")

    # The book, checked with the client's own hash.
    book = public.get_order_book(YES)
    check(book.bids[-1].price == "0.4" and book.asks[-1].price == "0.6", f"book levels {book}")
    served = book.hash
    check(public.get_order_book_hash(book) == served, f"book hash {served}")
    books = public.get_order_books([BookParams(token_id=YES), BookParams(token_id=NO)])
    check([b.asset_id for b in books] == [YES, NO], "get_order_books")
    for b in books:
        h = b.hash
        check(public.get_order_book_hash(b) == h, "batch book hash")
    check(public.get_price(YES, "BUY") == {"price": "0.4"}, "price")
    check(public.get_prices([BookParams(token_id=YES, side="SELL")]) == {YES: {"SELL": "0.6"}}, "prices")
    check(public.get_midpoint(YES) == {"mid": "0.5000"}, "midpoint")
    check(public.get_midpoints([BookParams(token_id=YES)]) == {YES: "0.5000"}, "midpoints")
    check(public.get_spread(YES) == {"spread": "0.2000"}, "spread")
    check(public.get_spreads([BookParams(token_id=YES)]) == {"spreads": {YES: "0.2000"}}, "spreads")

    # Open orders, one order, scoring.
    open_orders = maker.get_orders(OpenOrderParams(market=COND))
    check({o["id"] for o in open_orders} == {bid["orderID"], ask["orderID"]}, "get_orders")
    check(maker.get_order(ask["orderID"])["price"] == "0.6", "get_order")
    check(maker.is_order_scoring(OrderScoringParams(orderId=bid["orderID"])) == {"scoring": False}, "scoring")
    scored = maker.are_orders_scoring(OrdersScoringParams(orderIds=[bid["orderID"], ask["orderID"]]))
    check(scored == {bid["orderID"]: False, ask["orderID"]: False}, f"are_orders_scoring {scored}")

    # A market order (FOK) that takes the ask.
    mo = taker.create_market_order(MarketOrderArgs(token_id=YES, amount=3, side=BUY))
    filled = taker.post_order(mo, OrderType.FOK)
    check(filled["success"] and filled["status"] == "MATCHED", f"market order {filled}")
    trades = taker.get_trades(TradeParams(market=COND))
    check(len(trades) == 1 and trades[0]["price"] == "0.6" and trades[0]["size"] == "5", f"trades {trades}")
    check(maker.get_trades()[0]["id"] == trades[0]["id"], "maker sees the trade")
    check(public.get_last_trade_price(YES) == {"price": "0.6000", "side": "BUY"}, "last trade price")
    check(public.get_last_trades_prices([BookParams(token_id=YES)])[0]["price"] == "0.6000", "last trades prices")
    live = public.get_market_trades_events(COND)
    check(live[0]["price"] == "0.6" and live[0]["side"] == "BUY", f"live activity {live}")

    # Balances and notifications.
    bal = taker.get_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.COLLATERAL))
    check(int(bal["balance"]) < 1_000_000_000, f"balance {bal}")
    taker.update_balance_allowance(BalanceAllowanceParams(asset_type=AssetType.COLLATERAL))
    check(isinstance(taker.get_notifications(), list), "notifications")
    taker.drop_notifications()

    # Batch orders, cancel one, cancel the market's, cancel all.
    batch = maker.post_orders([
        PostOrdersArgs(order=maker.create_order(OrderArgs(token_id=YES, price=p, size=5, side=BUY)), orderType=OrderType.GTC)
        for p in (0.30, 0.31, 0.32)
    ])
    check(len(batch) == 3 and all(o["success"] for o in batch), f"post_orders {batch}")
    one = maker.cancel(batch[0]["orderID"])
    check(one["canceled"] == [batch[0]["orderID"]], f"cancel {one}")
    some = maker.cancel_orders([batch[1]["orderID"]])
    check(some["canceled"] == [batch[1]["orderID"]], f"cancel_orders {some}")
    mkt = maker.cancel_market_orders(market=COND, asset_id=YES)
    check(batch[2]["orderID"] in mkt["canceled"], f"cancel_market_orders {mkt}")
    maker.create_and_post_order(OrderArgs(token_id=YES, price=0.35, size=5, side=BUY))
    every = maker.cancel_all()
    check(len(every["canceled"]) >= 1 and maker.get_orders() == [], f"cancel_all {every}")

    # Heartbeats, chained by id.
    hb = maker.post_heartbeat(None)
    check(hb["status"] == "ok" and hb["heartbeat_id"], f"heartbeat {hb}")
    hb2 = maker.post_heartbeat(hb["heartbeat_id"])
    check(hb2["status"] == "ok", f"heartbeat 2 {hb2}")

    # Read-only keys.
    ro = maker.create_readonly_api_key()
    check(ro is not None and ro.api_key, "readonly key")
    check(maker.get_readonly_api_keys() == [ro.api_key], "readonly keys")
    check(public.validate_readonly_api_key(maker_addr, ro.api_key) == "valid", "validate readonly")
    check(maker.delete_readonly_api_key(ro.api_key) is True, "delete readonly")

    # RFQ, both roles: the taker asks, the maker quotes, the taker accepts, the maker approves.
    check(taker.rfq.rfq_config()["maxTtlSecs"] > 0, "rfq_config")
    req = taker.rfq.create_rfq_request(RfqUserRequest(token_id=YES, price=0.5, side=BUY, size=10))
    rid = req["requestId"]
    seen = maker.rfq.get_rfq_requests(GetRfqRequestsParams(request_ids=[rid], state="active"))
    check(seen["data"][0]["price"] == 0.5 and seen["data"][0]["side"] == "BUY", f"get_rfq_requests {seen}")
    quote = maker.rfq.create_rfq_quote(RfqUserQuote(request_id=rid, token_id=YES, price=0.48, side=SELL, size=10))
    qid = quote["quoteId"]
    best = taker.rfq.get_rfq_best_quote(GetRfqBestQuoteParams(request_id=rid))
    check(best["quoteId"] == qid and best["side"] == "SELL", f"get_rfq_best_quote {best}")
    theirs = taker.rfq.get_rfq_requester_quotes(GetRfqQuotesParams(request_ids=[rid]))
    check([q["quoteId"] for q in theirs["data"]] == [qid], f"get_rfq_requester_quotes {theirs}")
    expiry = int(time.time()) + 3600
    accepted = taker.rfq.accept_rfq_quote(AcceptQuoteParams(request_id=rid, quote_id=qid, expiration=expiry))
    check(accepted == "OK", f"accept_rfq_quote {accepted}")
    mine = maker.rfq.get_rfq_quoter_quotes(GetRfqQuotesParams(quote_ids=[qid]))
    check(mine["data"][0]["state"] == "ACCEPTED", f"get_rfq_quoter_quotes {mine}")
    approved = maker.rfq.approve_rfq_order(ApproveOrderParams(request_id=rid, quote_id=qid, expiration=expiry))
    check(approved == "OK", f"approve_rfq_order {approved}")
    block = [t for t in taker.get_trades(TradeParams(market=COND)) if t["taker_order_id"] == rid]
    check(len(block) == 1 and block[0]["price"] == "0.48" and block[0]["size"] == "10", f"rfq trade {block}")
    # The other way round, withdrawn: the maker asks to sell, the taker bids, both cancel.
    sell = maker.rfq.create_rfq_request(RfqUserRequest(token_id=YES, price=0.4, side=SELL, size=5))
    bid = taker.rfq.create_rfq_quote(
        RfqUserQuote(request_id=sell["requestId"], token_id=YES, price=0.41, side=BUY, size=5)
    )
    check(taker.rfq.cancel_rfq_quote(CancelRfqQuoteParams(quote_id=bid["quoteId"])) == "OK", "cancel_rfq_quote")
    check(maker.rfq.cancel_rfq_request(CancelRfqRequestParams(request_id=sell["requestId"])) == "OK", "cancel_rfq_request")
    gone = maker.rfq.get_rfq_requests(GetRfqRequestsParams(request_ids=[sell["requestId"]]))
    check(gone["data"][0]["state"] == "CANCELLED", f"cancelled request {gone}")

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
    print(f"py-clob-client: {checks} checks passed")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print(f"py-clob-client: FAILED after {checks} checks: {e!r}", file=sys.stderr)
        sys.exit(1)

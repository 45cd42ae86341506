"""Polymarket's unified SDK (polymarket-client, pinned in tools/requirements-sdk.txt) against a
real predex with order version 2, unpatched: its CLOB calls and channels.

The SDK's environments are fixed (Polymarket's production); it offers no constructor
argument for another host. The one way to point it elsewhere without changing a file of the
package is its own environment helper, `polymarket._internal.environment`, which builds an
Environment from its production configuration with other URLs: that is the only thing done
here beyond the public API (docs/reference/order-versions.md). Wallets are the signers' own
(EOA): the SDK's default deposit wallets (signature type 3) are out of predex's scope.

Run by the integration test `clients::official_unified_sdk`; exits non-zero at the first
failed check.
"""

import asyncio
import dataclasses
import os
import time
from decimal import Decimal

import httpx
from eth_account import Account
from polymarket import AsyncSecureClient
from polymarket._internal.environment import PRODUCTION_CONFIG, create_environment
from polymarket.models import AcceptedOrder
from polymarket.streams import MarketSpec, UserSpec

CLOB = os.environ["PREDEX_CLOB"]
INTERNAL = os.environ["PREDEX_INTERNAL"]
OPERATOR = {"Authorization": "Bearer " + os.environ["PREDEX_INTERNAL_TOKEN"]}
COND = os.environ["PREDEX_COND"]
YES = os.environ["PREDEX_YES"]
NO = os.environ["PREDEX_NO"]
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


def environment():
    ws = CLOB.replace("http://", "ws://")
    config = dataclasses.replace(
        PRODUCTION_CONFIG,
        clob_url=CLOB,
        clob_market_ws_url=f"{ws}/ws/market",
        clob_user_ws_url=f"{ws}/ws/user",
    )
    return create_environment(name="predex", config=config)


async def next_event(handle, want, seconds=10):
    """The first event of the handle that `want` accepts."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            event = await asyncio.wait_for(handle.__anext__(), timeout=max(0.1, deadline - time.time()))
        except asyncio.TimeoutError:
            break
        if want(event):
            return event
    raise AssertionError("no such event")


async def main():
    env = environment()
    maker_key, taker_key = Account.create(), Account.create()
    for a in (maker_key, taker_key):
        credit(a.address, "USDC", 100_000_000)
    credit(maker_key.address, YES, 100_000_000)

    # Keys: created at first use (L1), then the same key derived again.
    maker = await AsyncSecureClient.create(private_key=maker_key.key.hex(), wallet=maker_key.address, environment=env)
    taker = await AsyncSecureClient.create(private_key=taker_key.key.hex(), wallet=taker_key.address, environment=env)
    check(maker.wallet_type == "EOA", f"wallet type {maker.wallet_type}")
    again = await AsyncSecureClient.create(private_key=maker_key.key.hex(), wallet=maker_key.address, environment=env)
    check(again.credentials.key == maker.credentials.key, "the same key derived again")
    check(await maker.fetch_api_keys() == (maker.credentials.key,), "fetch_api_keys")
    check(await maker.get_closed_only_mode() is False, "closed-only")
    await again.close()

    market = await maker.subscribe(MarketSpec(token_ids=[YES]))
    user = await taker.subscribe(UserSpec(markets=[COND]))
    first = await next_event(market, lambda e: type(e).__name__ == "MarketBookEvent")
    check(first.payload.asset_id == YES, f"first book {first}")

    # A resting ask, the book and prices.
    ask = await maker.place_limit_order(token_id=YES, price="0.40", size="10", side="SELL")
    check(isinstance(ask, AcceptedOrder) and ask.status == "live", f"ask {ask}")
    book = await maker.get_order_book(token_id=YES)
    check(book.condition_id == COND and book.min_order_size == Decimal("5"), f"book {book}")
    check([(l.price, l.size) for l in book.asks] == [(Decimal("0.4"), Decimal("10"))], f"asks {book.asks}")
    check(await maker.get_price(token_id=YES, side="SELL") == Decimal("0.4"), "price of the best ask")
    books = await maker.get_order_books(token_ids=[YES, NO])
    check(len(books) == 2, f"books {books}")
    await next_event(market, lambda e: type(e).__name__ == "MarketPriceChangeEvent")

    # A market buy of 2 USDC: it meets the ask and pays the fee description's fee.
    bought = await taker.place_market_order(token_id=YES, side="BUY", amount="2")
    check(isinstance(bought, AcceptedOrder) and bought.status == "matched", f"market buy {bought}")
    check(len(bought.trade_ids) == 1, f"trade ids {bought}")
    trade = await next_event(user, lambda e: type(e).__name__ == "UserTradeEvent")
    check(trade.payload.id == bought.trade_ids[0], f"user trade {trade}")
    await next_event(market, lambda e: type(e).__name__ == "MarketLastTradePriceEvent")
    deadline = time.time() + 10
    while time.time() < deadline:
        trades = (await taker.list_account_trades().first_page()).items
        if trades and trades[0].status == "CONFIRMED":
            break
        await asyncio.sleep(0.2)
    check(trades[0].id == bought.trade_ids[0] and trades[0].status == "CONFIRMED", f"trades {trades}")
    check(trades[0].price == Decimal("0.4") and trades[0].trader_side == "TAKER", f"trade {trades[0]}")
    balance = await taker.get_balance_allowance(asset_type="COLLATERAL")
    check(balance.balance < 98_000_000, f"balance {balance}")

    # A batch of two asks, listed, one cancelled, then all.
    batch = [
        await maker.create_limit_order(token_id=YES, price="0.70", size="5", side="SELL"),
        await maker.create_limit_order(token_id=YES, price="0.75", size="5", side="SELL"),
    ]
    placed = await maker.post_orders(batch)
    check(all(isinstance(p, AcceptedOrder) and p.status == "live" for p in placed), f"batch {placed}")
    opened = (await maker.list_open_orders(token_id=YES).first_page()).items
    check({o.id for o in opened} >= {p.order_id for p in placed}, f"open {opened}")
    one = await maker.get_order(order_id=placed[0].order_id)
    check(one.id == placed[0].order_id, f"get_order {one}")
    gone = await maker.cancel_order(order_id=placed[0].order_id)
    check(gone.canceled == (placed[0].order_id,), f"cancel {gone}")
    rest = await maker.cancel_all()
    check(placed[1].order_id in rest.canceled, f"cancel all {rest}")
    check((await maker.list_open_orders().first_page()).items == (), "nothing open")

    for h in (market, user):
        await h.close()
    for c in (maker, taker):
        await c.close()
    print(f"polymarket-client: {checks} checks passed")


asyncio.run(main())

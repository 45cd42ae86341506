// Polymarket's unified TypeScript SDK (@polymarket/client, pinned with its lockfile in this
// directory) against a real predex with order version 2, unpatched: its CLOB calls and
// channels.
//
// The SDK is pointed at predex with its own public helper, `forkEnvironmentConfig`, which
// copies Polymarket's production environment with other URLs (the CLOB's REST and its two
// channels). Wallets are the signers' own (EOA): the SDK's default deposit wallets
// (signature type 3) are out of predex's scope.
//
// Run by the integration test `clients::official_unified_sdk`; exits non-zero at the first
// failed check.

import { OrderSide, createSecureClient, forkEnvironmentConfig } from "@polymarket/client";
import { fetchBalanceAllowance } from "@polymarket/client/actions";
import { privateKey } from "@polymarket/client/viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} not set`);
  return v;
};
const CLOB = env("PREDEX_CLOB");
const INTERNAL = env("PREDEX_INTERNAL");
const OPERATOR = { authorization: `Bearer ${env("PREDEX_INTERNAL_TOKEN")}` };
const COND = env("PREDEX_COND");
const YES = env("PREDEX_YES");
const NO = env("PREDEX_NO");
let checks = 0;

function check(cond, what) {
  checks += 1;
  if (!cond) throw new Error(`check failed: ${typeof what === "string" ? what : JSON.stringify(what, bigints)}`);
}

function bigints(_, v) {
  return typeof v === "bigint" ? v.toString() : v;
}

async function credit(address, asset, amount) {
  const r = await fetch(`${INTERNAL}/internal/ledger/credit`, {
    method: "POST",
    headers: OPERATOR,
    body: JSON.stringify({ address, asset, amount: String(amount) }),
  });
  check(r.status === 200, `credit ${r.status} ${await r.text()}`);
}

const ws = CLOB.replace("http://", "ws://");
const environment = forkEnvironmentConfig({
  name: "predex",
  clob: { rest: CLOB, market: { ws: `${ws}/ws/market` }, user: { ws: `${ws}/ws/user` } },
});

async function client(key) {
  const address = privateKeyToAccount(key).address;
  return createSecureClient({ environment, signer: privateKey(key), wallet: address });
}

/** The first event of `handle` that `want` accepts, within `ms`. */
async function nextEvent(iterator, want, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const timeout = new Promise((resolve) => setTimeout(() => resolve({ timeout: true }), deadline - Date.now()));
    const next = await Promise.race([iterator.next(), timeout]);
    if (next.timeout || next.done) break;
    if (want(next.value)) return next.value;
  }
  throw new Error("no such event");
}

const makerKey = generatePrivateKey();
const takerKey = generatePrivateKey();
const makerAddress = privateKeyToAccount(makerKey).address;
const takerAddress = privateKeyToAccount(takerKey).address;
for (const a of [makerAddress, takerAddress]) await credit(a, "USDC", 100_000_000);
await credit(makerAddress, YES, 100_000_000);

// Keys: created at first use (L1), then the same key derived again.
const maker = await client(makerKey);
const taker = await client(takerKey);
const again = await client(makerKey);
check(again.credentials.key === maker.credentials.key, "the same key derived again");
check((await maker.fetchClosedOnlyMode()) === false, "closed-only");

const market = await maker.subscribe([{ topic: "market", tokenIds: [YES] }]);
const user = await taker.subscribe([{ topic: "user", markets: [COND] }]);
const marketEvents = market[Symbol.asyncIterator]();
const userEvents = user[Symbol.asyncIterator]();
const first = await nextEvent(marketEvents, (e) => e.type === "book");
check(first.tokenId === YES || first.assetId === YES || JSON.stringify(first).includes(YES), first);

// A resting ask, the book and prices.
const ask = await maker.placeLimitOrder({ tokenId: YES, price: "0.40", size: "10", side: OrderSide.SELL });
check(ask.ok === true && ask.status === "live", ask);
const book = await maker.fetchOrderBook({ tokenId: YES });
check(book.asks.length === 1 && Number(book.asks[0].price) === 0.4 && Number(book.asks[0].size) === 10, book);
check(Number(await maker.fetchPrice({ tokenId: YES, side: OrderSide.SELL })) === 0.4, "price of the best ask");
const books = await maker.fetchOrderBooks([{ tokenId: YES }, { tokenId: NO }]);
check(books.length === 2, books);
await nextEvent(marketEvents, (e) => e.type === "price_change");

// A market buy of 2 USDC: it meets the ask and pays the fee description's fee; the SDK
// waits for the fill's settlement (the trade's hash).
const bought = await taker.placeMarketOrder({ tokenId: YES, side: OrderSide.BUY, amount: "2" });
check(bought.ok === true && bought.status === "matched" && bought.tradeIds.length === 1, bought);
const trade = await nextEvent(userEvents, (e) => e.type === "trade");
check(JSON.stringify(trade).includes(bought.tradeIds[0]), trade);
const hashes = await taker.waitForOrderFillSettlement(bought);
check(hashes.length === 1 && /^0x[0-9a-f]{64}$/.test(hashes[0]), hashes);
const trades = (await taker.listAccountTrades().firstPage()).items;
check(trades[0].id === bought.tradeIds[0] && trades[0].status === "TRADE_STATUS_CONFIRMED", trades);
check(Number(trades[0].price) === 0.4 && trades[0].traderSide === "TAKER", trades[0]);
const balance = await fetchBalanceAllowance(taker, { assetType: "COLLATERAL" });
check(BigInt(balance.balance) < 98_000_000n, balance);
check(Object.values(balance.allowances).every((a) => a === BigInt(balance.balance)), balance);
const held = await fetchBalanceAllowance(taker, { assetType: "CONDITIONAL", tokenId: YES });
check(BigInt(held.balance) > 0n && Object.keys(held.allowances).length === 2, held);

// A batch of two asks, listed, one cancelled, then all.
const batch = [
  await maker.createLimitOrder({ tokenId: YES, price: "0.70", size: "5", side: OrderSide.SELL }),
  await maker.createLimitOrder({ tokenId: YES, price: "0.75", size: "5", side: OrderSide.SELL }),
];
const placed = await maker.postOrders(batch);
check(placed.length === 2 && placed.every((p) => p.ok === true && p.status === "live"), placed);
const opened = (await maker.listOpenOrders({ tokenId: YES }).firstPage()).items;
check(placed.every((p) => opened.some((o) => o.id === p.orderId)), opened);
const one = await maker.fetchOrder({ orderId: placed[0].orderId });
check(one.id === placed[0].orderId, one);
const gone = await maker.cancelOrder({ orderId: placed[0].orderId });
check(gone.canceled.length === 1 && gone.canceled[0] === placed[0].orderId, gone);
const rest = await maker.cancelAll();
check(rest.canceled.includes(placed[1].orderId), rest);
check((await maker.listOpenOrders().firstPage()).items.length === 0, "nothing open");

await market.close();
await user.close();
console.log(`@polymarket/client: ${checks} checks passed`);
process.exit(0);

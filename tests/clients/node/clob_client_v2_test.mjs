// Polymarket's V2 TypeScript client (@polymarket/clob-client-v2, pinned with its lockfile in
// this directory) against a real predex, unpatched: only its constructor arguments (host,
// chain id, signer, credentials). It asks `GET /version` and signs the orders of the
// version the venue names (PREDEX_ORDER_VERSION).
//
// Run by the integration test `clients::official_typescript_v2_client`; exits non-zero at
// the first failed check.

import { AssetType, ClobClient, OrderType, Side } from "@polymarket/clob-client-v2";
import { createWalletClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { polygon } from "viem/chains";
import WebSocket from "ws";

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
const VERSION = Number(env("PREDEX_ORDER_VERSION"));
// A placement's status as the venue names it: SPEC's on version 1, Polymarket's (lower
// case) on version 2.
const status = (spec) => (VERSION === 2 ? spec.toLowerCase() : spec);
// A placement's trade ids: under SPEC's key on version 1, Polymarket's on version 2.
const tradeIds = (r) => (VERSION === 2 ? r.tradeIDs : r.tradeIds);
const CHAIN_ID = 137;
let checks = 0;

function check(cond, what) {
  checks += 1;
  if (!cond) throw new Error(`check failed: ${typeof what === "string" ? what : JSON.stringify(what)}`);
}

/** A reply the client passed through: not its `{error}` object. */
function ok(v, what) {
  check(v !== undefined && v !== null && !(typeof v === "object" && "error" in v), `${what}: ${JSON.stringify(v)}`);
  return v;
}

async function credit(address, asset, amount) {
  const r = await fetch(`${INTERNAL}/internal/ledger/credit`, {
    method: "POST",
    headers: OPERATOR,
    body: JSON.stringify({ address, asset, amount: String(amount) }),
  });
  check(r.status === 200, `credit ${r.status} ${await r.text()}`);
}

async function wallet() {
  const account = privateKeyToAccount(generatePrivateKey());
  const signer = createWalletClient({ account, chain: polygon, transport: http(CLOB) });
  const l1 = new ClobClient({ host: CLOB, chain: CHAIN_ID, signer });
  const creds = ok(await l1.createOrDeriveApiKey(), "createOrDeriveApiKey");
  check(creds.key && creds.secret && creds.passphrase, creds);
  const again = ok(await l1.createOrDeriveApiKey(), "createOrDeriveApiKey again");
  check(again.key === creds.key, "the same key the second time");
  return { client: new ClobClient({ host: CLOB, chain: CHAIN_ID, signer, creds }), address: account.address, creds };
}

/** Collects a WebSocket's messages (objects, arrays flattened). */
function listen(path, subscribe) {
  const ws = new WebSocket(CLOB.replace("http://", "ws://") + path);
  const got = [];
  ws.on("message", (data) => {
    const text = data.toString();
    if (text === "PONG") return;
    const v = JSON.parse(text);
    got.push(...(Array.isArray(v) ? v : [v]));
  });
  const open = new Promise((resolve, reject) => {
    ws.on("open", () => {
      ws.send(JSON.stringify(subscribe));
      resolve();
    });
    ws.on("error", reject);
  });
  return { ws, got, open };
}

async function waitFor(what, f, ms = 10_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `timed out waiting for ${what}`);
}

async function main() {
  const pub = new ClobClient({ host: CLOB, chain: CHAIN_ID });
  check((await pub.getOk()) === "OK", "getOk");
  check((await pub.getVersion()) === VERSION, "getVersion");
  check(Math.abs((await pub.getServerTime()) - Date.now() / 1000) < 60, "getServerTime");

  const maker = await wallet();
  const taker = await wallet();
  await credit(maker.address, "USDC", 1_000_000_000);
  await credit(maker.address, YES, 100_000_000);
  await credit(taker.address, "USDC", 1_000_000_000);
  const m = maker.client;
  const t = taker.client;
  check(ok(await m.getApiKeys(), "getApiKeys").apiKeys.includes(maker.creds.key), "getApiKeys");

  // Markets, and the short-keyed market the client reads before it signs.
  const markets = ok(await pub.getMarkets(), "getMarkets");
  check(markets.data.some((x) => x.condition_id === COND), "getMarkets");
  const info = ok(await pub.getClobMarketInfo(COND), "getClobMarketInfo");
  check(info.c === COND && info.t.map((x) => x.t).join() === [YES, NO].join() && info.mts === 0.01, info);
  check((await pub.getTickSize(YES)) === "0.01", "getTickSize");
  check((await pub.getNegRisk(YES)) === false, "getNegRisk");
  // The market's fee description: set on a version 2 venue (r 0.25, e 2), none on 1.
  check((await pub.getFeeExponent(YES)) === (VERSION === 2 ? 2 : 0), "getFeeExponent");

  // Both channels, open before the first order.
  const market = listen("/ws/market", { assets_ids: [YES], type: "market" });
  const user = listen("/ws/user", {
    auth: { apiKey: maker.creds.key, secret: maker.creds.secret, passphrase: maker.creds.passphrase },
    markets: [COND],
    type: "user",
  });
  await Promise.all([market.open, user.open]);
  await waitFor("the market channel's book", () => market.got.some((e) => e.event_type === "book"));

  // Limit orders.
  const bid = ok(await m.createAndPostOrder({ tokenID: YES, price: 0.4, size: 10, side: Side.BUY }), "bid");
  check(bid.success && bid.status === status("LIVE"), bid);
  const ask = ok(await m.createAndPostOrder({ tokenID: YES, price: 0.6, size: 10, side: Side.SELL }), "ask");
  check(ask.success && ask.status === status("LIVE"), ask);

  // The book, checked with the client's own hash; prices.
  const book = ok(await pub.getOrderBook(YES), "getOrderBook");
  check(book.bids.at(-1).price === "0.4" && book.asks.at(-1).price === "0.6", book);
  const served = book.hash;
  check((await pub.getOrderBookHash(book)) === served, `book hash ${served}`);
  const books = ok(await pub.getOrderBooks([{ token_id: YES }, { token_id: NO }]), "getOrderBooks");
  check(books.map((b) => b.asset_id).join() === [YES, NO].join(), "getOrderBooks order");
  check(ok(await pub.getPrice(YES, "BUY"), "getPrice").price === "0.4", "getPrice");
  check(ok(await pub.getMidpoint(YES), "mid").mid === "0.5000", "getMidpoint");
  check(ok(await pub.getSpread(YES), "spread").spread === "0.2000", "getSpread");
  const open = ok(await m.getOpenOrders({ market: COND }), "getOpenOrders");
  check(open.map((o) => o.id).sort().join() === [bid.orderID, ask.orderID].sort().join(), open);
  check(ok(await m.getOrder(ask.orderID), "getOrder").price === "0.6", "getOrder");

  // A market order (FOK) that takes the ask. Its reply names the settlement's hash at once
  // (so the client returns without polling the trade); the trade shows it once settled.
  const filled = ok(
    await t.createAndPostMarketOrder({ tokenID: YES, amount: 3, side: Side.BUY }, undefined, OrderType.FOK),
    "market order",
  );
  check(filled.success && filled.status === status("MATCHED"), filled);
  check(tradeIds(filled).length === 1 && filled.transactionsHashes.length === 1, filled);
  const trades = ok(await t.getTrades({ market: COND }), "getTrades");
  check(trades.length === 1 && trades[0].price === "0.6" && trades[0].size === "5", trades);
  check(trades[0].id === tradeIds(filled)[0], "the reply's trade id");
  // Version 2 takers pay the market's fee description (r 0.25, e 2): 5 × 0.25 × 0.24².
  check(trades[0].taker_fee === (VERSION === 2 ? "0.072" : "0"), trades[0]);
  await waitFor(
    "the trade's settlement",
    async () => ok(await t.getTrades({ id: tradeIds(filled)[0] }), "getTrades by id")[0].status === "CONFIRMED",
    30_000,
  );
  const settled = ok(await t.getTrades({ id: tradeIds(filled)[0] }), "settled")[0];
  check(settled.transaction_hash === filled.transactionsHashes[0], settled);
  const last = ok(await pub.getLastTradePrice(YES), "getLastTradePrice");
  check(last.price === "0.6000" && last.side === "BUY", last);
  const live = ok(await pub.getMarketTradesEvents(COND), "getMarketTradesEvents");
  check(live[0].price === "0.6" && live[0].side === "BUY", live);

  // Balances.
  const bal = ok(await t.getBalanceAllowance({ asset_type: AssetType.COLLATERAL }), "getBalanceAllowance");
  check(typeof bal.balance === "string", bal);
  ok(await t.updateBalanceAllowance({ asset_type: AssetType.COLLATERAL }), "updateBalanceAllowance");

  // Batch orders, cancel one, several, the market's, all.
  const signed = [];
  for (const price of [0.3, 0.31, 0.32]) {
    signed.push({ order: await m.createOrder({ tokenID: YES, price, size: 5, side: Side.BUY }), orderType: OrderType.GTC });
  }
  const batch = ok(await m.postOrders(signed), "postOrders");
  check(batch.length === 3 && batch.every((o) => o.success), batch);
  check(ok(await m.cancelOrder({ orderID: batch[0].orderID }), "cancelOrder").canceled[0] === batch[0].orderID, "cancelOrder");
  check(ok(await m.cancelOrders([batch[1].orderID]), "cancelOrders").canceled[0] === batch[1].orderID, "cancelOrders");
  const mk = ok(await m.cancelMarketOrders({ market: COND, asset_id: YES }), "cancelMarketOrders");
  check(mk.canceled.includes(batch[2].orderID), mk);
  ok(await m.createAndPostOrder({ tokenID: YES, price: 0.35, size: 5, side: Side.BUY }), "one more");
  check(ok(await m.cancelAll(), "cancelAll").canceled.length >= 1, "cancelAll");
  check(ok(await m.getOpenOrders(), "no open orders").length === 0, "all canceled");

  // Heartbeats, chained by id.
  const hb = ok(await m.postHeartbeat(), "postHeartbeat");
  check(hb.status === "ok" && hb.heartbeat_id, hb);
  check(ok(await m.postHeartbeat(hb.heartbeat_id), "postHeartbeat again").status === "ok", "chained heartbeat");

  // What the channels carried.
  await waitFor("the user channel's trade", () => user.got.some((e) => e.event_type === "trade"));
  check(user.got.some((e) => e.event_type === "order"), "user channel orders");
  await waitFor("the market channel's trade", () => market.got.some((e) => e.event_type === "last_trade_price"));
  market.ws.close();
  user.ws.close();

  ok(await m.deleteApiKey(), "deleteApiKey");
  console.log(`@polymarket/clob-client-v2 (order version ${VERSION}): ${checks} checks passed`);
}

main().catch((e) => {
  console.error(`@polymarket/clob-client-v2: FAILED after ${checks} checks: ${e.stack ?? e}`);
  process.exit(1);
});

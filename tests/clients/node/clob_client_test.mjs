// Polymarket's official TypeScript client (@polymarket/clob-client, pinned with its lockfile
// in this directory) against a real predex, unpatched: only its constructor arguments
// (host, chain id, signer, credentials).
//
// Run by the integration test `clients::official_typescript_client` with the server's URLs
// and its market in the environment; exits non-zero at the first failed check.

import { AssetType, ClobClient, OrderType, Side } from "@polymarket/clob-client";
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
  const l1 = new ClobClient(CLOB, CHAIN_ID, signer);
  const creds = ok(await l1.createOrDeriveApiKey(), "createOrDeriveApiKey");
  check(creds.key && creds.secret && creds.passphrase, creds);
  const again = ok(await l1.createOrDeriveApiKey(), "createOrDeriveApiKey again");
  check(again.key === creds.key, "the same key the second time");
  return { client: new ClobClient(CLOB, CHAIN_ID, signer, creds), address: account.address, creds };
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
    if (f()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `timed out waiting for ${what}`);
}

async function main() {
  const pub = new ClobClient(CLOB, CHAIN_ID);
  check((await pub.getOk()) === "OK", "getOk");
  check(Math.abs((await pub.getServerTime()) - Date.now() / 1000) < 60, "getServerTime");

  const maker = await wallet();
  const taker = await wallet();
  await credit(maker.address, "USDC", 1_000_000_000);
  await credit(maker.address, YES, 100_000_000);
  await credit(taker.address, "USDC", 1_000_000_000);
  const m = maker.client;
  const t = taker.client;
  check(ok(await m.getApiKeys(), "getApiKeys").apiKeys.includes(maker.creds.key), "getApiKeys");
  check(ok(await m.getClosedOnlyMode(), "ban").closed_only === false, "getClosedOnlyMode");

  // Markets.
  const markets = ok(await pub.getMarkets(), "getMarkets");
  check(markets.next_cursor === "LTE=" && markets.data.some((x) => x.condition_id === COND), "getMarkets");
  check(ok(await pub.getMarket(COND), "getMarket").tokens[1].token_id === NO, "getMarket");
  check(ok(await pub.getSimplifiedMarkets(), "simplified").data[0].condition_id === COND, "getSimplifiedMarkets");
  check(ok(await pub.getSamplingMarkets(), "sampling").data.length === 0, "no program: no sampling market");
  check(ok(await pub.getSamplingSimplifiedMarkets(), "sampling simplified").data.length === 0, "sampling simplified");
  check((await pub.getTickSize(YES)) === "0.01", "getTickSize");
  check((await pub.getNegRisk(YES)) === false, "getNegRisk");
  check((await pub.getFeeRateBps(YES)) === 0, "getFeeRateBps");

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
  check(bid.success && bid.status === "LIVE", bid);
  const ask = ok(await m.createAndPostOrder({ tokenID: YES, price: 0.6, size: 10, side: Side.SELL }), "ask");
  check(ask.success && ask.status === "LIVE", ask);

  // The book, checked with the client's own hash.
  const book = ok(await pub.getOrderBook(YES), "getOrderBook");
  check(book.bids.at(-1).price === "0.4" && book.asks.at(-1).price === "0.6", book);
  const served = book.hash;
  check((await pub.getOrderBookHash(book)) === served, `book hash ${served}`);
  const books = ok(await pub.getOrderBooks([{ token_id: YES }, { token_id: NO }]), "getOrderBooks");
  check(books.map((b) => b.asset_id).join() === [YES, NO].join(), "getOrderBooks order");
  for (const b of books) {
    const h = b.hash;
    check((await pub.getOrderBookHash(b)) === h, "batch book hash");
  }
  check(ok(await pub.getPrice(YES, "BUY"), "getPrice").price === "0.4", "getPrice");
  const prices = ok(await pub.getPrices([{ token_id: YES, side: Side.SELL }]), "getPrices");
  check(prices[YES].SELL === "0.6", prices);
  check(ok(await pub.getMidpoint(YES), "mid").mid === "0.5000", "getMidpoint");
  check(ok(await pub.getMidpoints([{ token_id: YES }]), "mids")[YES] === "0.5000", "getMidpoints");
  check(ok(await pub.getSpread(YES), "spread").spread === "0.2000", "getSpread");
  check(ok(await pub.getSpreads([{ token_id: YES }]), "spreads").spreads[YES] === "0.2000", "getSpreads");

  // Open orders, one order, scoring.
  const open = ok(await m.getOpenOrders({ market: COND }), "getOpenOrders");
  check(open.map((o) => o.id).sort().join() === [bid.orderID, ask.orderID].sort().join(), open);
  check(ok(await m.getOrder(ask.orderID), "getOrder").price === "0.6", "getOrder");
  check(ok(await m.isOrderScoring({ order_id: bid.orderID }), "isOrderScoring").scoring === false, "isOrderScoring");
  const scoring = ok(await m.areOrdersScoring({ orderIds: [bid.orderID, ask.orderID] }), "areOrdersScoring");
  check(scoring[bid.orderID] === false && scoring[ask.orderID] === false, scoring);

  // A market order (FOK) that takes the ask.
  const filled = ok(
    await t.createAndPostMarketOrder({ tokenID: YES, amount: 3, side: Side.BUY }, undefined, OrderType.FOK),
    "market order",
  );
  check(filled.success && filled.status === "MATCHED", filled);
  const trades = ok(await t.getTrades({ market: COND }), "getTrades");
  check(trades.length === 1 && trades[0].price === "0.6" && trades[0].size === "5", trades);
  const page = ok(await m.getTradesPaginated({}), "getTradesPaginated");
  check(page.trades[0].id === trades[0].id, page);
  const last = ok(await pub.getLastTradePrice(YES), "getLastTradePrice");
  check(last.price === "0.6000" && last.side === "BUY", last);
  check(ok(await pub.getLastTradesPrices([{ token_id: YES }]), "lasts")[0].price === "0.6000", "getLastTradesPrices");
  const live = ok(await pub.getMarketTradesEvents(COND), "getMarketTradesEvents");
  check(live[0].price === "0.6" && live[0].side === "BUY", live);
  const history = ok(await pub.getPricesHistory({ market: YES, interval: "1d" }), "getPricesHistory");
  check(Array.isArray(history.history), history);

  // Balances and notifications.
  const bal = ok(await t.getBalanceAllowance({ asset_type: AssetType.COLLATERAL }), "getBalanceAllowance");
  check(typeof bal.balance === "string", bal);
  ok(await t.updateBalanceAllowance({ asset_type: AssetType.COLLATERAL }), "updateBalanceAllowance");
  check(Array.isArray(ok(await t.getNotifications(), "getNotifications")), "getNotifications");
  ok(await t.dropNotifications(), "dropNotifications");

  // Rewards: no program yet, so nothing earned and nothing scoring.
  check(Array.isArray(ok(await pub.getCurrentRewards(), "getCurrentRewards")), "getCurrentRewards");
  check(ok(await pub.getRawRewardsForMarket(COND), "getRawRewardsForMarket").length === 0, "no program");
  const today = new Date().toISOString().slice(0, 10);
  check(Array.isArray(ok(await m.getEarningsForUserForDay(today), "earnings")), "getEarningsForUserForDay");
  check(Array.isArray(ok(await m.getTotalEarningsForUserForDay(today), "total")), "getTotalEarningsForUserForDay");
  const um = ok(await m.getUserEarningsAndMarketsConfig(today), "getUserEarningsAndMarketsConfig");
  check(Array.isArray(um), um);
  check(Object.keys(ok(await m.getRewardPercentages(), "getRewardPercentages")).length === 0, "getRewardPercentages");

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

  // Read-only keys.
  const ro = ok(await m.createReadonlyApiKey(), "createReadonlyApiKey");
  check(ro.apiKey, ro);
  check(ok(await m.getReadonlyApiKeys(), "getReadonlyApiKeys").includes(ro.apiKey), "getReadonlyApiKeys");
  check((await pub.validateReadonlyApiKey(maker.address, ro.apiKey)) === "valid", "validateReadonlyApiKey");
  check((await m.deleteReadonlyApiKey(ro.apiKey)) === true, "deleteReadonlyApiKey");

  // RFQ, both roles: the taker asks, the maker quotes, the taker accepts, the maker approves.
  check(ok(await t.rfq.rfqConfig(), "rfqConfig").maxTtlSecs > 0, "rfqConfig");
  const req = ok(await t.rfq.createRfqRequest({ tokenID: YES, price: 0.5, side: Side.BUY, size: 10 }), "createRfqRequest");
  const seen = ok(await m.rfq.getRfqRequests({ requestIds: [req.requestId], state: "active" }), "getRfqRequests");
  check(seen.data[0].price === 0.5 && seen.data[0].side === "BUY", seen);
  const quote = ok(
    await m.rfq.createRfqQuote({ requestId: req.requestId, tokenID: YES, price: 0.48, side: Side.SELL, size: 10 }),
    "createRfqQuote",
  );
  const best = ok(await t.rfq.getRfqBestQuote({ requestId: req.requestId }), "getRfqBestQuote");
  check(best.quoteId === quote.quoteId && best.side === "SELL", best);
  const theirs = ok(await t.rfq.getRfqRequesterQuotes({ requestIds: [req.requestId] }), "getRfqRequesterQuotes");
  check(theirs.data.length === 1 && theirs.data[0].quoteId === quote.quoteId, theirs);
  const expiration = Math.floor(Date.now() / 1000) + 3600;
  const ids = { requestId: req.requestId, quoteId: quote.quoteId, expiration };
  check((await t.rfq.acceptRfqQuote(ids)) === "OK", "acceptRfqQuote");
  const mine = ok(await m.rfq.getRfqQuoterQuotes({ quoteIds: [quote.quoteId] }), "getRfqQuoterQuotes");
  check(mine.data[0].state === "ACCEPTED", mine);
  check((await m.rfq.approveRfqOrder(ids)) === "OK", "approveRfqOrder");
  const block = ok(await t.getTrades({ market: COND }), "getTrades").filter((x) => x.taker_order_id === req.requestId);
  check(block.length === 1 && block[0].price === "0.48" && block[0].size === "10", block);
  // The other way round, withdrawn: the maker asks to sell, the taker bids, both cancel.
  const sell = ok(await m.rfq.createRfqRequest({ tokenID: YES, price: 0.4, side: Side.SELL, size: 5 }), "sell request");
  const bidQuote = ok(
    await t.rfq.createRfqQuote({ requestId: sell.requestId, tokenID: YES, price: 0.41, side: Side.BUY, size: 5 }),
    "bid quote",
  );
  check((await t.rfq.cancelRfqQuote({ quoteId: bidQuote.quoteId })) === "OK", "cancelRfqQuote");
  check((await m.rfq.cancelRfqRequest({ requestId: sell.requestId })) === "OK", "cancelRfqRequest");
  const gone = ok(await m.rfq.getRfqRequests({ requestIds: [sell.requestId] }), "cancelled request");
  check(gone.data[0].state === "CANCELLED", gone);

  // What the channels carried.
  await waitFor("the user channel's trade", () => user.got.some((e) => e.event_type === "trade"));
  check(user.got.some((e) => e.event_type === "order"), "user channel orders");
  await waitFor("the market channel's trade", () => market.got.some((e) => e.event_type === "last_trade_price"));
  market.ws.close();
  user.ws.close();

  ok(await m.deleteApiKey(), "deleteApiKey");
  console.log(`@polymarket/clob-client: ${checks} checks passed`);
}

main().catch((e) => {
  console.error(`@polymarket/clob-client: FAILED after ${checks} checks: ${e.stack ?? e}`);
  process.exit(1);
});

// Polymarket's official TypeScript client (@polymarket/clob-client, pinned with its lockfile
// in this directory), unpatched, trading for a wallet its owner's key derives: a Safe
// (signature type 2) or a proxy wallet (type 1) as the funder, against a chain-mode predex on
// the Polygon layout. It makes or derives its owner's key, reads the wallet's balance and
// places one resting bid for it; the integration test
// `clients::official_clients_with_wallets_on_the_polygon_layout` matches it and checks the
// settlement on chain. Exits non-zero at the first failed check.

import { AssetType, ClobClient, Side } from "@polymarket/clob-client";
import { createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { polygon } from "viem/chains";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} not set`);
  return v;
};
const CLOB = env("PREDEX_CLOB");
const YES = env("PREDEX_YES");
const TYPE = Number(env("PREDEX_SIGNATURE_TYPE"));
const FUNDER = env("PREDEX_FUNDER");
const FUNDER_USDC = env("PREDEX_FUNDER_USDC");
let checks = 0;

function check(cond, what) {
  checks += 1;
  if (!cond) throw new Error(`check failed: ${typeof what === "string" ? what : JSON.stringify(what)}`);
}

function ok(v, what) {
  check(v !== undefined && v !== null && !(typeof v === "object" && "error" in v), `${what}: ${JSON.stringify(v)}`);
  return v;
}

const account = privateKeyToAccount(env("PREDEX_OWNER_KEY"));
const signer = createWalletClient({ account, chain: polygon, transport: http(CLOB) });
const creds = ok(await new ClobClient(CLOB, 137, signer).createOrDeriveApiKey(), "createOrDeriveApiKey");
const client = new ClobClient(CLOB, 137, signer, creds, TYPE, FUNDER);

// The wallet's collateral on chain, as the venue reads it for the owner's key and type.
const balance = ok(await client.getBalanceAllowance({ asset_type: AssetType.COLLATERAL }), "getBalanceAllowance");
check(balance.balance === FUNDER_USDC, `the wallet's balance ${JSON.stringify(balance)}`);

// A bid for 10 YES at 0.40, made by the wallet and signed by its owner.
const bid = ok(await client.createAndPostOrder({ tokenID: YES, price: 0.4, size: 10, side: Side.BUY }), "bid");
check(bid.success && bid.status === "LIVE", bid);
const order = ok(await client.getOrder(bid.orderID), "getOrder");
check(order.maker_address.toLowerCase() === FUNDER.toLowerCase() && order.status === "LIVE", order);

console.log(`@polymarket/clob-client, signature type ${TYPE}: ${checks} checks passed`);

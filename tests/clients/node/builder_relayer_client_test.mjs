// Polymarket's relayer client (@polymarket/builder-relayer-client, pinned with its lockfile in
// this directory) against a real predex, in ledger mode or in chain mode on the Polygon
// layout, unpatched: only its constructor arguments (relayer URL, chain id, signer, builder
// credentials, Safe or proxy). It deploys
// the owner's Safe, sets the trading approvals in one MultiSend, splits and merges from the
// Safe, and reads its transactions back; a call outside the venue's contracts is refused.
// Then, as a proxy-wallet user, it sets the approvals and splits from the proxy wallet.
//
// Run by the integration tests `clients::official_relayer_client` and
// `clients::official_clients_with_wallets_on_the_polygon_layout`, which give it a builder key
// and a market, and then check the wallets' balances; exits non-zero at the first failed
// check.

import { RelayClient, RelayerTxType, deriveProxyWallet, deriveSafe } from "@polymarket/builder-relayer-client";
import { BuilderConfig } from "@polymarket/builder-signing-sdk";
import { createWalletClient, encodeFunctionData, http, maxUint256, parseAbi, zeroHash } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { polygon } from "viem/chains";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} not set`);
  return v;
};
const CLOB = env("PREDEX_CLOB");
const COND = env("PREDEX_COND");
// Polygon's contracts, as the client and a Polymarket bot know them.
const USDC = "0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174";
const CTF = "0x4D97DCd97eC945f40cF65F87097ACe5EA0476045";
const EXCHANGE = "0x4bFb41d5B3570DeFd03C39a9A4D8dE6Bd8B8982E";
const NEG_RISK_EXCHANGE = "0xC5d563A36AE78145C45a50134d48A1215220f80a";
const ADAPTER = "0xd91E80cF2E7be2e162c6513ceD06f1dD0dA35296";
const SAFE_FACTORY = "0xaacFeEa03eb1561C4e67d661e40682Bd20E3541b";
const PROXY_FACTORY = "0xaB45c5A4B0c941a2F231C04C3f49182e1A254052";
let checks = 0;

function check(cond, what) {
  checks += 1;
  if (!cond) throw new Error(`check failed: ${typeof what === "string" ? what : JSON.stringify(what)}`);
}

const erc20 = parseAbi(["function approve(address spender, uint256 amount) returns (bool)"]);
const ctf = parseAbi([
  "function setApprovalForAll(address operator, bool approved)",
  "function splitPosition(address collateralToken, bytes32 parentCollectionId, bytes32 conditionId, uint256[] partition, uint256 amount)",
  "function mergePositions(address collateralToken, bytes32 parentCollectionId, bytes32 conditionId, uint256[] partition, uint256 amount)",
]);
const call = (to, abi, functionName, args) => ({ to, data: encodeFunctionData({ abi, functionName, args }), value: "0" });

const account = privateKeyToAccount(env("PREDEX_OWNER_KEY"));
const signer = createWalletClient({ account, chain: polygon, transport: http(CLOB) });
const builder = new BuilderConfig({
  localBuilderCreds: {
    key: env("PREDEX_BUILDER_KEY"),
    secret: env("PREDEX_BUILDER_SECRET"),
    passphrase: env("PREDEX_BUILDER_PASSPHRASE"),
  },
});
const relayer = new RelayClient(CLOB, 137, signer, builder);
const safe = deriveSafe(account.address, SAFE_FACTORY);

/** Runs a relayed transaction to its end; the record it ended with. */
async function done(response, what) {
  check(response.transactionID && /^0x[0-9a-f]{64}$/.test(response.transactionHash), `${what}: ${JSON.stringify(response)}`);
  const tx = await response.wait();
  // Ledger mode confirms at once; on chain the client stops waiting once it is mined.
  check(tx !== undefined && ["STATE_MINED", "STATE_CONFIRMED"].includes(tx.state), `${what}: ${JSON.stringify(tx)}`);
  check(tx.transactionHash === response.transactionHash, `${what}: the hash`);
  return tx;
}

// The Safe: not deployed, deployed by the relayer, then known deployed.
check((await relayer.getDeployed(safe)) === false, "not deployed yet");
const created = await done(await relayer.deploy(), "deploy");
check(created.type === "SAFE-CREATE" && created.proxyAddress.toLowerCase() === safe.toLowerCase(), created);
check((await relayer.getDeployed(safe)) === true, "deployed");
check((await relayer.getNonce(account.address, "SAFE")).nonce === "0", "a new Safe's nonce");

// The trading approvals in one Safe transaction (a MultiSend).
const approvals = [
  call(USDC, erc20, "approve", [CTF, maxUint256]),
  call(USDC, erc20, "approve", [EXCHANGE, maxUint256]),
  call(USDC, erc20, "approve", [NEG_RISK_EXCHANGE, maxUint256]),
  call(CTF, ctf, "setApprovalForAll", [EXCHANGE, true]),
  call(CTF, ctf, "setApprovalForAll", [NEG_RISK_EXCHANGE, true]),
  call(CTF, ctf, "setApprovalForAll", [ADAPTER, true]),
];
const approved = await done(await relayer.execute(approvals, "approvals"), "approvals");
check(approved.type === "SAFE" && approved.nonce === "0" && approved.metadata === "approvals", approved);

// Split 10 and merge 4 from the Safe.
const partition = [1n, 2n];
await done(await relayer.execute([call(CTF, ctf, "splitPosition", [USDC, zeroHash, COND, partition, 10_000_000n])]), "split");
await done(await relayer.execute([call(CTF, ctf, "mergePositions", [USDC, zeroHash, COND, partition, 4_000_000n])]), "merge");
check((await relayer.getNonce(account.address, "SAFE")).nonce === "3", "the nonce after three transactions");

// The builder's transactions, newest first, and one by id.
const mine = await relayer.getTransactions();
check(mine.length === 4 && mine[3].transactionID === created.transactionID, mine);
const [again] = await relayer.getTransaction(approved.transactionID);
check(["STATE_MINED", "STATE_CONFIRMED"].includes(again.state) && again.from.toLowerCase() === account.address.toLowerCase(), again);

// A call outside the venue's contracts is refused, and the nonce stays.
let refused = "";
try {
  await relayer.execute([{ to: "0x000000000000000000000000000000000000dEaD", data: "0x", value: "0" }]);
} catch (e) {
  refused = String(e?.message ?? e) + JSON.stringify(e?.response?.data ?? e?.data ?? "");
}
check(refused.includes("call not allowed"), `refused: ${refused}`);
check((await relayer.getNonce(account.address, "SAFE")).nonce === "3", "nothing spent");

// The proxy wallet: its calls go through the proxy factory, signed for the relay hub with
// the relay and nonce `/relay-payload` gives; the factory makes the wallet at its first call.
const proxyRelayer = new RelayClient(CLOB, 137, signer, builder, RelayerTxType.PROXY);
const proxy = deriveProxyWallet(account.address, PROXY_FACTORY);
check((await relayer.getDeployed(proxy)) === false, "no proxy wallet yet");
const payload = await proxyRelayer.getRelayPayload(account.address, "PROXY");
check(payload.nonce === "0" && /^0x[0-9a-f]{40}$/.test(payload.address), payload);
const viaProxy = await done(await proxyRelayer.execute(approvals.slice(0, 4), "proxy approvals"), "proxy approvals");
check(viaProxy.type === "PROXY" && viaProxy.proxyAddress.toLowerCase() === proxy.toLowerCase(), viaProxy);
check((await relayer.getDeployed(proxy)) === true, "the proxy wallet made");
await done(await proxyRelayer.execute([call(CTF, ctf, "splitPosition", [USDC, zeroHash, COND, partition, 5_000_000n])]), "proxy split");
check((await proxyRelayer.getNonce(account.address, "PROXY")).nonce === "2", "the proxy's nonce");

console.log(`@polymarket/builder-relayer-client: ${checks} checks passed`);

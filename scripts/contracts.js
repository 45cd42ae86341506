#!/usr/bin/env node
// Builds the contract artifacts predex deploys offline, one file per role (contracts/
// collateral.json, conditional-tokens.json, exchange.json, exchange-v2.json,
// neg-risk-adapter.json, neg-risk-exchange.json: {contractName, compiler, abi, bytecode}), from what scripts/setup.sh installed in tools/node_modules:
// - predex's own development contracts, contracts/src/*.sol, with solc-js (the version
//   pinned in tools/package.json, optimizer on, 200 runs);
// - Gnosis' ConditionalTokens as its npm package ships it compiled.
//
//   node scripts/contracts.js                  rebuild contracts/*.json
//   node scripts/contracts.js --check          fail unless a rebuild equals the committed
//                                              artifacts (bytecode compared without the
//                                              trailing metadata hash)
//   node scripts/contracts.js --domain-name "Polymarket CTF Exchange" --out DIR
//                                              build into DIR with the exchange's EIP-712
//                                              domain named otherwise
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const tools = path.join(root, 'tools', 'node_modules');
const DEFAULT_DOMAIN = 'Service CTF Exchange';
// The file each of predex's own contracts is written to: its role in a deployment.
const ROLES = {
  DevCollateral: 'collateral',
  DevExchange: 'exchange',
  DevExchangeV2: 'exchange-v2',
  DevNegRiskAdapter: 'neg-risk-adapter',
  DevNegRiskExchange: 'neg-risk-exchange',
  DevSafeFactory: 'safe-factory',
  DevProxyFactory: 'proxy-factory',
  DevRelayHub: 'relay-hub',
};
// Polygon's Safe master copy and the init-code hash of a Safe proxy over it, and Polygon's
// proxy factory and its wallet implementation: the built Safe proxy and the published
// wallet must give these, or wallets would not land where Polymarket's clients derive them.
const POLYGON_SAFE_MASTER_COPY = 'e51abdf814f8854941b9fe8e3a4f65cab4e7a4a8';
const POLYGON_SAFE_INIT_CODE_HASH = '2bce2127ff07fb632d16c8347c4ebf501f4841168bed00d9e6ef715ddb6fcecf';
const POLYGON_PROXY_FACTORY = 'ab45c5a4b0c941a2f231c04c3f49182e1a254052';
const POLYGON_PROXY_IMPLEMENTATION = '44e999d5c2f66ef0861317f9a4805ac2e90aeb4f';

function parseArgs(argv) {
  const args = { check: false, out: path.join(root, 'contracts'), domainName: DEFAULT_DOMAIN };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') args.check = true;
    else if (a === '--out') args.out = path.resolve(argv[++i]);
    else if (a === '--domain-name') args.domainName = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  if (args.domainName === undefined || args.domainName.includes('"')) throw new Error('--domain-name needs a name without quotes');
  return args;
}

function compileOwn(domainName) {
  const solc = require(path.join(tools, 'solc'));
  const dir = path.join(root, 'contracts', 'src');
  const sources = {};
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.sol')).sort()) {
    let content = fs.readFileSync(path.join(dir, f), 'utf8');
    if (f === 'DevExchange.sol' || f === 'DevExchangeV2.sol') {
      const line = `string private constant DOMAIN_NAME = "${DEFAULT_DOMAIN}";`;
      if (!content.includes(line)) throw new Error(`${f}: the domain name line has moved`);
      content = content.replace(line, `string private constant DOMAIN_NAME = "${domainName}";`);
    }
    sources[f] = { content };
  }
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors || []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const artifacts = {};
  for (const [file, contracts] of Object.entries(output.contracts)) {
    const name = path.basename(file, '.sol');
    const c = contracts[name];
    // An abstract contract (shared code) deploys nowhere.
    if (c && c.evm.bytecode.object === '') continue;
    if (!c || !ROLES[name]) throw new Error(`${file}: no role for it in scripts/contracts.js`);
    artifacts[ROLES[name]] = { contractName: name, compiler: `solc ${solc.version()}`, abi: c.abi, bytecode: '0x' + c.evm.bytecode.object };
  }
  return artifacts;
}

function conditionalTokens() {
  const pkg = path.join(tools, '@gnosis.pm', 'conditional-tokens-contracts');
  const a = JSON.parse(fs.readFileSync(path.join(pkg, 'build', 'contracts', 'ConditionalTokens.json'), 'utf8'));
  const version = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).version;
  return {
    contractName: 'ConditionalTokens',
    compiler: `solc ${a.compiler.version}, as @gnosis.pm/conditional-tokens-contracts ${version} ships it`,
    abi: a.abi,
    bytecode: a.bytecode,
  };
}

function keccak(hex) {
  return require(path.join(tools, 'js-sha3')).keccak256(Buffer.from(hex.replace(/^0x/, ''), 'hex'));
}

// Gnosis Safe 1.3.0 as its npm package ships it compiled: the L2 master copy, MultiSend
// and the compatibility fallback handler.
function safeContracts() {
  const pkg = path.join(tools, '@gnosis.pm', 'safe-contracts');
  const version = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).version;
  const out = {};
  for (const [role, file] of [
    ['safe', 'GnosisSafeL2.sol/GnosisSafeL2.json'],
    ['safe-multisend', 'libraries/MultiSend.sol/MultiSend.json'],
    ['safe-fallback-handler', 'handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler.json'],
  ]) {
    const a = JSON.parse(fs.readFileSync(path.join(pkg, 'build', 'artifacts', 'contracts', file), 'utf8'));
    out[role] = {
      contractName: a.contractName,
      compiler: `as @gnosis.pm/safe-contracts ${version} ships it`,
      abi: a.abi,
      bytecode: a.bytecode,
    };
  }
  return out;
}

// GnosisSafeProxy's creation code, built from @gnosis.pm/safe-contracts 1.3.0 with solc-js
// 0.8.4 as Polymarket's Safe factory has it (optimizer 200 runs, literal content in the
// metadata): checked against Polygon's init-code hash.
function safeProxy() {
  const solc = require(path.join(tools, 'solc-0.8.4'));
  const unit = '@gnosis.pm/safe-contracts/contracts/proxies/GnosisSafeProxy.sol';
  const content = fs.readFileSync(path.join(tools, '@gnosis.pm', 'safe-contracts', 'contracts', 'proxies', 'GnosisSafeProxy.sol'), 'utf8');
  const input = {
    language: 'Solidity',
    sources: { [unit]: { content } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      metadata: { useLiteralContent: true },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors || []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const c = output.contracts[unit].GnosisSafeProxy;
  const code = c.evm.bytecode.object;
  const hash = keccak(code + POLYGON_SAFE_MASTER_COPY.padStart(64, '0'));
  if (hash !== POLYGON_SAFE_INIT_CODE_HASH) throw new Error(`GnosisSafeProxy built to init-code hash ${hash}, not Polygon's`);
  return { contractName: 'GnosisSafeProxy', compiler: `solc ${solc.version()}`, abi: c.abi, bytecode: '0x' + code };
}

// The proxy wallet's implementation as @polymarket/sdk publishes it (lib/proxyWallet.js):
// checked against Polygon's implementation address under Polygon's factory.
function proxyWallet() {
  const pkg = path.join(tools, '@polymarket', 'sdk');
  const version = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).version;
  const text = fs.readFileSync(path.join(pkg, 'lib', 'proxyWallet.js'), 'utf8');
  const m = text.match(/PROXY_WALLET_BYTECODE = "0x([0-9a-f]+)"/);
  if (!m) throw new Error('@polymarket/sdk: no PROXY_WALLET_BYTECODE in lib/proxyWallet.js');
  const salt = keccak(Buffer.from('polymarket-wallet-factory').toString('hex'));
  const at = keccak('ff' + POLYGON_PROXY_FACTORY + salt + keccak(m[1])).slice(24);
  if (at !== POLYGON_PROXY_IMPLEMENTATION) throw new Error(`the proxy wallet would be at 0x${at} under Polygon's factory`);
  return { contractName: 'ProxyWallet', compiler: `solc 0.5.10, as @polymarket/sdk ${version} ships it`, abi: [], bytecode: '0x' + m[1] };
}

// solc appends CBOR metadata (with the source hash) to the bytecode; its length is the
// last two bytes. Two builds of the same code differ only there when a comment changed.
function withoutMetadata(bytecode) {
  const hex = bytecode.replace(/^0x/, '');
  const len = parseInt(hex.slice(-4), 16);
  return hex.slice(0, hex.length - 4 - 2 * len);
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const artifacts = compileOwn(args.domainName);
  artifacts['conditional-tokens'] = conditionalTokens();
  Object.assign(artifacts, safeContracts());
  artifacts['safe-proxy'] = safeProxy();
  artifacts['proxy-wallet'] = proxyWallet();
  if (args.check) {
    let bad = 0;
    for (const [name, a] of Object.entries(artifacts)) {
      const file = path.join(args.out, `${name}.json`);
      if (!fs.existsSync(file)) {
        console.error(`${name}: no committed artifact at ${file}`);
        bad++;
        continue;
      }
      const c = JSON.parse(fs.readFileSync(file, 'utf8'));
      const same = withoutMetadata(c.bytecode) === withoutMetadata(a.bytecode) && JSON.stringify(c.abi) === JSON.stringify(a.abi);
      console.log(`${name}: ${same ? 'equal' : 'DIFFERENT'}`);
      if (!same) bad++;
    }
    process.exit(bad ? 1 : 0);
  }
  fs.mkdirSync(args.out, { recursive: true });
  for (const [name, a] of Object.entries(artifacts)) {
    fs.writeFileSync(path.join(args.out, `${name}.json`), JSON.stringify(a, null, 1) + '\n');
    console.log(`${name}: ${(a.bytecode.length - 2) / 2} bytes`);
  }
}

main();

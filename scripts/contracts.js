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
};

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

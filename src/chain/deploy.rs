//! `predex chain deploy`: the contracts of a chain-mode venue on a development chain or a
//! private testnet, from the artifacts in `contracts/` (read at run time, one JSON file per
//! role: `collateral`, `conditional-tokens`, `exchange`, `exchange-v2`, `neg-risk-adapter`,
//! `neg-risk-exchange`, each with the contract's `bytecode`; and for the wallets, when the
//! directory has them, `safe`, `safe-fallback-handler`, `safe-multisend`, `safe-proxy`,
//! `safe-factory`, `relay-hub`, `proxy-wallet`, `proxy-factory`), wired, and printed as the
//! configuration lines that point predex at them.

use std::path::{Path, PathBuf};

use alloy_network::TransactionBuilder;
use alloy_primitives::{keccak256, Address, Bytes, B256};
use alloy_provider::{DynProvider, PendingTransactionBuilder, Provider};
use alloy_rpc_types_eth::TransactionRequest;
use alloy_sol_types::SolValue;
use anyhow::{anyhow, bail, Context};
use serde::Deserialize;

use super::{read_key, wallet_provider, IExchange, IExchangeV2, INegRiskAdapter, IProxyFactory};

#[derive(Debug, clap::Args)]
pub struct DeployArgs {
    /// The node's JSON-RPC URL (http://).
    #[arg(long, env = "PREDEX_RPC_URL")]
    pub rpc_url: String,
    /// A file holding the deployer's private key (hex); it pays for the deployment and is
    /// the contracts' admin.
    #[arg(long)]
    pub key_file: PathBuf,
    /// The operator predex settles with, made an admin and operator of both exchanges
    /// (default: the deployer).
    #[arg(long)]
    pub operator: Option<Address>,
    /// An existing collateral ERC-20 (6 decimals); without it a development collateral is
    /// deployed, whose deployer may `mint(address,uint256)`.
    #[arg(long)]
    pub collateral_address: Option<Address>,
    /// Where the artifacts are.
    #[arg(long, env = "PREDEX_CONTRACTS_DIR", default_value = "contracts")]
    pub contracts_dir: PathBuf,
    /// The orders the venue will take: 1 deploys version 1's exchanges (`exchange`,
    /// `neg-risk-exchange`), 2 version 2's (`exchange-v2`, twice: standard and negative
    /// risk), and the settings printed say so.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub order_version: u8,
    /// Places every contract at its address on Polygon, where the official clients expect
    /// it, instead of where the node's nonces put it: for an anvil started with
    /// `--chain-id 137` only, and refused on any other node (docs/operating/settlement.md,
    /// "The Polygon layout", says why and what it risks).
    #[arg(long)]
    pub polygon_layout: bool,
}

/// Where a deployment puts the contracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Where the deployer's nonces put them.
    Node,
    /// At Polygon's addresses, on a development chain that can set code anywhere.
    Polygon,
}

/// Polymarket's Safe master copy on Polygon (a Safe 1.3.0 build), the address the Safe
/// init-code hash the official clients use is made of.
pub const POLYGON_SAFE_MASTER_COPY: &str = "0xE51abdf814f8854941b9Fe8e3A4F65CAB4e7A4a8";

impl Layout {
    /// Where the contract placed as `place` (an artifact's role, or
    /// `neg-risk-exchange-v2`) goes; `None`: where the node puts it.
    fn address(self, place: &str) -> Option<Address> {
        use crate::auth::wallets::{POLYGON_PROXY_FACTORY, POLYGON_SAFE_FACTORY};
        use crate::config::{
            DEFAULT_EXCHANGE, DEFAULT_EXCHANGE_V2, DEFAULT_NEG_RISK_EXCHANGE, DEFAULT_NEG_RISK_EXCHANGE_V2,
        };
        use crate::domain::relay::{
            POLYGON_COLLATERAL, POLYGON_CTF, POLYGON_NEG_RISK_ADAPTER, POLYGON_RELAY_HUB, POLYGON_SAFE_MULTISEND,
        };
        if self == Layout::Node {
            return None;
        }
        let at = match place {
            "collateral" => POLYGON_COLLATERAL,
            "conditional-tokens" => POLYGON_CTF,
            "exchange" => DEFAULT_EXCHANGE,
            "neg-risk-exchange" => DEFAULT_NEG_RISK_EXCHANGE,
            "exchange-v2" => DEFAULT_EXCHANGE_V2,
            "neg-risk-exchange-v2" => DEFAULT_NEG_RISK_EXCHANGE_V2,
            "neg-risk-adapter" => POLYGON_NEG_RISK_ADAPTER,
            "safe" => POLYGON_SAFE_MASTER_COPY,
            "safe-multisend" => POLYGON_SAFE_MULTISEND,
            "safe-factory" => POLYGON_SAFE_FACTORY,
            "relay-hub" => POLYGON_RELAY_HUB,
            "proxy-factory" => POLYGON_PROXY_FACTORY,
            // Polymarket's clients never name the Safe's fallback handler.
            _ => return None,
        };
        Some(at.parse().expect("Polygon's addresses parse"))
    }
}

/// What a deployment made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployed {
    pub chain_id: u64,
    pub collateral: Address,
    pub ctf: Address,
    pub exchange: Address,
    pub neg_risk_adapter: Address,
    pub neg_risk_exchange: Address,
    /// The version of orders the exchanges take.
    pub order_version: u8,
    /// The wallets' contracts, when the artifacts had them.
    pub wallets: Option<WalletContracts>,
}

/// What makes and runs the wallets of signature types 1 and 2 (docs/operating/settlement.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalletContracts {
    pub safe_factory: Address,
    pub safe_init_code_hash: B256,
    pub multisend: Address,
    pub proxy_factory: Address,
    pub proxy_init_code_hash: B256,
    pub relay_hub: Address,
}

impl Deployed {
    /// The configuration lines for these contracts (TOML).
    pub fn toml(&self, rpc_url: &str) -> String {
        let exchanges = match self.order_version {
            2 => format!(
                "order-version = 2\nexchange-v2-address = \"{}\"\nneg-risk-exchange-v2-address = \"{}\"\n",
                self.exchange, self.neg_risk_exchange
            ),
            _ => format!(
                "exchange-address = \"{}\"\nneg-risk-exchange-address = \"{}\"\n",
                self.exchange, self.neg_risk_exchange
            ),
        };
        let wallets =
            match &self.wallets {
                Some(w) => {
                    format!(
                "safe-factory-address = \"{}\"\nsafe-init-code-hash = \"{}\"\nsafe-multisend-address = \"{}\"\n\
                 proxy-factory-address = \"{}\"\nproxy-init-code-hash = \"{}\"\nrelay-hub-address = \"{}\"\n",
                w.safe_factory, w.safe_init_code_hash, w.multisend, w.proxy_factory, w.proxy_init_code_hash, w.relay_hub
            )
                }
                None => String::new(),
            };
        format!(
            "settlement = \"chain\"\nchain-id = {}\nrpc-url = {:?}\ncollateral-address = \"{}\"\nctf-address = \"{}\"\n\
             {exchanges}neg-risk-adapter-address = \"{}\"\n{wallets}",
            self.chain_id, rpc_url, self.collateral, self.ctf, self.neg_risk_adapter
        )
    }
}

impl Deployed {
    /// The proxy-wallet factory the exchanges check type 1 makers against (zero: none).
    fn proxy_factory(&self) -> Address {
        self.wallets.map(|w| w.proxy_factory).unwrap_or_default()
    }

    /// The Safe factory the exchanges check type 2 makers against (zero: none).
    fn safe_factory(&self) -> Address {
        self.wallets.map(|w| w.safe_factory).unwrap_or_default()
    }
}

#[derive(Deserialize)]
struct Artifact {
    bytecode: String,
}

/// A contract's creation code from its artifact.
fn creation_code(dir: &Path, role: &str) -> anyhow::Result<Vec<u8>> {
    let path = dir.join(format!("{role}.json"));
    let text = std::fs::read_to_string(&path).with_context(|| format!("read the artifact {}", path.display()))?;
    let a: Artifact = serde_json::from_str(&text).with_context(|| format!("parse the artifact {}", path.display()))?;
    let code = alloy_primitives::hex::decode(a.bytecode.trim())
        .map_err(|_| anyhow!("{}: bytecode is not hex", path.display()))?;
    if code.is_empty() {
        bail!("{}: no bytecode", path.display());
    }
    Ok(code)
}

/// Waits for a transaction's receipt; an error unless it succeeded.
async fn succeeded(what: &str, pending: PendingTransactionBuilder<alloy_network::Ethereum>) -> anyhow::Result<Address> {
    let receipt = pending.get_receipt().await.with_context(|| format!("{what}: no receipt"))?;
    if !receipt.status() {
        bail!("{what}: reverted in transaction {}", receipt.transaction_hash);
    }
    Ok(receipt.contract_address.unwrap_or_default())
}

/// Deploys the wallets' contracts when `dir` has their artifacts: Gnosis Safe 1.3.0 (the
/// master copy, its fallback handler, MultiSend), the Safe factory over the Safe proxy's
/// creation code, the relay hub and the proxy-wallet factory over the published wallet.
async fn deploy_wallets(p: &DynProvider, dir: &Path, layout: Layout) -> anyhow::Result<Option<WalletContracts>> {
    if !dir.join("safe-factory.json").exists() {
        return Ok(None);
    }
    let master_copy = deploy(p, dir, layout, "safe", Vec::new()).await?;
    let handler = deploy(p, dir, layout, "safe-fallback-handler", Vec::new()).await?;
    let multisend = deploy(p, dir, layout, "safe-multisend", Vec::new()).await?;
    let proxy_code = creation_code(dir, "safe-proxy")?;
    let safe_init_code_hash = keccak256([proxy_code.as_slice(), master_copy.into_word().as_slice()].concat());
    let safe_factory =
        deploy(p, dir, layout, "safe-factory", (master_copy, handler, Bytes::from(proxy_code)).abi_encode_params())
            .await?;
    let relay_hub = deploy(p, dir, layout, "relay-hub", Vec::new()).await?;
    let wallet = Bytes::from(creation_code(dir, "proxy-wallet")?);
    let proxy_factory = deploy(p, dir, layout, "proxy-factory", (relay_hub, wallet).abi_encode_params()).await?;
    let implementation = IProxyFactory::new(proxy_factory, p)
        .getImplementation()
        .call()
        .await
        .context("the proxy factory's implementation")?;
    let proxy_init_code_hash = keccak256(crate::auth::wallets::proxy_init_code(proxy_factory, implementation));
    Ok(Some(WalletContracts {
        safe_factory,
        safe_init_code_hash,
        multisend,
        proxy_factory,
        proxy_init_code_hash,
        relay_hub,
    }))
}

/// Deploys the contract of artifact `role` with constructor arguments `args`, where
/// `layout` places it.
async fn deploy(p: &DynProvider, dir: &Path, layout: Layout, role: &str, args: Vec<u8>) -> anyhow::Result<Address> {
    deploy_as(p, dir, layout, role, role, args).await
}

/// [`deploy`], placed as `place` (one artifact may be deployed twice).
async fn deploy_as(
    p: &DynProvider,
    dir: &Path,
    layout: Layout,
    role: &str,
    place: &str,
    args: Vec<u8>,
) -> anyhow::Result<Address> {
    let mut code = creation_code(dir, role)?;
    code.extend_from_slice(&args);
    if let Some(at) = layout.address(place) {
        construct_at(p, at, code).await.with_context(|| format!("deploy {role} at {at}"))?;
        return Ok(at);
    }
    let tx = TransactionRequest::default().with_deploy_code(Bytes::from(code));
    let pending = p.send_transaction(tx).await.with_context(|| format!("deploy {role}"))?;
    let address = succeeded(&format!("deploy {role}"), pending).await?;
    if address == Address::ZERO {
        bail!("deploy {role}: the receipt names no contract");
    }
    Ok(address)
}

/// Where [`construct_at`] keeps a creation code while it runs (cleared after).
const CREATION_SCRATCH: Address = alloy_primitives::address!("00000000000000000000000000000000005ca7c4");

/// Runs creation code `code` as if deployed at `at`, on an anvil node: the code is set at a
/// scratch address, `at` is given a stub that delegate-calls it — so the constructor runs
/// with `at` as `address(this)` and its storage, and the deployer as `msg.sender` — and logs
/// the runtime code the constructor returns, which then becomes `at`'s code. The same
/// contract, storage and immutables a deployment at `at` would have made.
async fn construct_at(p: &DynProvider, at: Address, code: Vec<u8>) -> anyhow::Result<()> {
    if !p.get_code_at(at).await?.is_empty() {
        bail!("it already has code: the layout is deployed on this chain already");
    }
    // PUSH1 0 ×4, PUSH20 scratch, GAS, DELEGATECALL; RETURNDATACOPY(0, 0, size); on failure
    // jump to REVERT(0, size); else LOG0(0, size) and RETURN(0, size).
    let mut stub = alloy_primitives::hex!("6000600060006000").to_vec();
    stub.push(0x73);
    stub.extend_from_slice(CREATION_SCRATCH.as_slice());
    stub.extend_from_slice(&alloy_primitives::hex!("5af43d600060003e156031573d6000a03d6000f35b3d6000fd"));
    let set_code = |a: Address, c: Vec<u8>| async move {
        p.raw_request::<_, serde_json::Value>("anvil_setCode".into(), (a, Bytes::from(c)))
            .await
            .context("anvil_setCode")
    };
    set_code(CREATION_SCRATCH, code).await?;
    set_code(at, stub).await?;
    let sent = p.send_transaction(TransactionRequest::default().with_to(at)).await.context("run the constructor")?;
    let receipt = sent.get_receipt().await.context("the constructor's receipt")?;
    set_code(CREATION_SCRATCH, Vec::new()).await?;
    if !receipt.status() {
        set_code(at, Vec::new()).await?;
        bail!("the constructor reverted in transaction {}", receipt.transaction_hash);
    }
    let runtime = receipt
        .inner
        .logs()
        .iter()
        .rev()
        .find(|l| l.address() == at && l.topics().is_empty())
        .map(|l| l.data().data.to_vec())
        .ok_or_else(|| anyhow!("the constructor's code was not logged"))?;
    set_code(at, runtime).await?;
    Ok(())
}

/// Deploys and wires the contracts; returns the configuration lines.
pub async fn run(args: DeployArgs) -> anyhow::Result<String> {
    let key = read_key(&args.key_file, "operator key file")?;
    let deployer = key.address();
    let operator = args.operator.unwrap_or(deployer);
    let p = wallet_provider(&args.rpc_url, key)?;
    let layout = match args.polygon_layout {
        true => {
            polygon_layout_allowed(&p).await?;
            if args.collateral_address.is_some() {
                bail!("--polygon-layout deploys the development collateral at USDC.e's address: drop --collateral-address");
            }
            Layout::Polygon
        }
        false => Layout::Node,
    };
    let d =
        deploy_all(&p, &args.contracts_dir, deployer, operator, args.collateral_address, args.order_version, layout)
            .await?;
    Ok(d.toml(&args.rpc_url))
}

/// The Polygon layout is for a development chain only: an anvil node (which can set code
/// anywhere) running with Polygon's chain id 137, the only one besides Amoy's that the
/// official clients accept.
async fn polygon_layout_allowed(p: &DynProvider) -> anyhow::Result<()> {
    let client: String = p.raw_request("web3_clientVersion".into(), ()).await.context("the node does not answer")?;
    if !client.to_ascii_lowercase().starts_with("anvil") {
        bail!("--polygon-layout needs an anvil node (this node is {client:?})");
    }
    let chain_id = p.get_chain_id().await.context("the node does not answer")?;
    if chain_id != 137 {
        bail!("--polygon-layout needs Polygon's chain id 137 (start anvil with --chain-id 137); this node's is {chain_id}");
    }
    Ok(())
}

/// The deployment itself: collateral (unless given), ConditionalTokens, the negative-risk
/// adapter and the two exchanges of `order_version` ([`deploy_v1_exchanges`],
/// [`deploy_v2_exchanges`]).
pub async fn deploy_all(
    p: &DynProvider,
    dir: &Path,
    deployer: Address,
    operator: Address,
    collateral: Option<Address>,
    order_version: u8,
    layout: Layout,
) -> anyhow::Result<Deployed> {
    let chain_id = p.get_chain_id().await.with_context(|| "the node does not answer")?;
    let collateral = match collateral {
        Some(c) => c,
        None => deploy(p, dir, layout, "collateral", Vec::new()).await?,
    };
    let ctf = deploy(p, dir, layout, "conditional-tokens", Vec::new()).await?;
    let wallets = deploy_wallets(p, dir, layout).await?;
    let mut d = Deployed {
        chain_id,
        collateral,
        ctf,
        exchange: Address::ZERO,
        neg_risk_adapter: Address::ZERO,
        neg_risk_exchange: Address::ZERO,
        order_version,
        wallets,
    };
    match order_version {
        2 => deploy_v2_exchanges(p, dir, deployer, operator, layout, &mut d).await?,
        _ => deploy_v1_exchanges(p, dir, deployer, layout, &mut d).await?,
    }
    // The operator, when not the deployer, becomes an admin (to register markets' tokens)
    // and an operator (to settle) of both exchanges: the same calls in both versions.
    if operator != deployer {
        for x in [d.exchange, d.neg_risk_exchange] {
            let e = IExchange::new(x, p);
            succeeded("exchange addAdmin", e.addAdmin(operator).send().await?).await?;
            succeeded("exchange addOperator", e.addOperator(operator).send().await?).await?;
        }
    }
    Ok(d)
}

/// Version 2's exchanges: one contract deployed twice, both made by the deployer (their
/// admin and operator) and paying fees to the operator; the standard one makes full sets
/// through ConditionalTokens, the negative-risk one through the adapter, over its wrapped
/// collateral.
async fn deploy_v2_exchanges(
    p: &DynProvider,
    dir: &Path,
    deployer: Address,
    operator: Address,
    layout: Layout,
    d: &mut Deployed,
) -> anyhow::Result<()> {
    let (collateral, ctf) = (d.collateral, d.ctf);
    // The adapter's vault (where its fees go) is the deployer.
    let adapter = deploy(p, dir, layout, "neg-risk-adapter", (ctf, collateral, deployer).abi_encode_params()).await?;
    let wrapped = INegRiskAdapter::new(adapter, p).wcol().call().await.context("the adapter's wrapped collateral")?;
    let params = |ctf_collateral: Address, factory: Address| {
        let init = IExchangeV2::ExchangeInitParams {
            admin: deployer,
            collateral,
            ctf,
            ctfCollateral: ctf_collateral,
            outcomeTokenFactory: factory,
            proxyFactory: d.proxy_factory(),
            safeFactory: d.safe_factory(),
            feeReceiver: operator,
        };
        (init,).abi_encode_params()
    };
    let exchange = deploy(p, dir, layout, "exchange-v2", params(collateral, ctf)).await?;
    let neg_risk_exchange =
        deploy_as(p, dir, layout, "exchange-v2", "neg-risk-exchange-v2", params(wrapped, adapter)).await?;
    d.exchange = exchange;
    d.neg_risk_adapter = adapter;
    d.neg_risk_exchange = neg_risk_exchange;
    Ok(())
}

/// Version 1's exchanges: the exchange, the negative-risk adapter and exchange; the adapter
/// admits the negative-risk exchange.
async fn deploy_v1_exchanges(
    p: &DynProvider,
    dir: &Path,
    deployer: Address,
    layout: Layout,
    d: &mut Deployed,
) -> anyhow::Result<()> {
    let (collateral, ctf) = (d.collateral, d.ctf);
    let (proxies, safes) = (d.proxy_factory(), d.safe_factory());
    let exchange = deploy(p, dir, layout, "exchange", (collateral, ctf, proxies, safes).abi_encode_params()).await?;
    // The adapter's vault (where its fees go) is the deployer.
    let adapter = deploy(p, dir, layout, "neg-risk-adapter", (ctf, collateral, deployer).abi_encode_params()).await?;
    let neg_risk_exchange =
        deploy(p, dir, layout, "neg-risk-exchange", (collateral, ctf, adapter, proxies, safes).abi_encode_params())
            .await?;
    let a = INegRiskAdapter::new(adapter, p);
    succeeded("adapter addAdmin", a.addAdmin(neg_risk_exchange).send().await?).await?;
    d.exchange = exchange;
    d.neg_risk_adapter = adapter;
    d.neg_risk_exchange = neg_risk_exchange;
    Ok(())
}

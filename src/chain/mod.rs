//! Chain mode's link to the chain (docs/operating/settlement.md): the operator's account on an EVM
//! node over JSON-RPC, the contracts settlement goes through, the checks made before the
//! exchange starts, and `predex chain deploy`.

pub mod contracts;
pub mod deploy;
pub mod markets;

use std::path::Path;

use alloy_network::{EthereumWallet, TransactionBuilder};
use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_provider::{DynProvider, Provider, ProviderBuilder};
use alloy_rpc_types_eth::TransactionRequest;
use alloy_signer_local::PrivateKeySigner;
use anyhow::{anyhow, bail, Context};

pub use contracts::{
    ICollateral, IConditionalTokens, IExchange, IExchangeV2, IMultiSend, INegRiskAdapter, IProxyFactory, IRelayHub,
    ISafe, ISafeFactory,
};

use crate::auth::{order_hash, order_hash_v2, OrderDomains, OrderFieldsV2, SignedOrderFields};
use crate::config::{url_host, ChainSettings};

/// Reads a private key kept in a file (hex, `0x` optional, surrounding whitespace ignored).
/// No error quotes the file's content.
pub fn read_key(path: &Path, setting: &str) -> anyhow::Result<PrivateKeySigner> {
    let text = crate::keyfile::read_private(path, setting)?;
    text.parse().map_err(|_| anyhow!("the key file {} does not hold a hex private key", path.display()))
}

/// A provider that signs with `key` and fills each transaction's nonce, gas and chain id
/// from the node: for deployments and the operator's administrative calls, one at a time.
pub fn wallet_provider(rpc_url: &str, key: PrivateKeySigner) -> anyhow::Result<DynProvider> {
    let url = rpc_url.parse().map_err(|_| anyhow!("rpc-url is not a URL: {}", crate::config::url_host(rpc_url)))?;
    Ok(ProviderBuilder::new().wallet(EthereumWallet::from(key)).connect_http(url).erased())
}

/// The exchange's form of an order: the signed fields and the signature as submitted.
pub fn exchange_order(o: &SignedOrderFields, signature: Bytes) -> IExchange::Order {
    IExchange::Order {
        salt: o.salt,
        maker: o.maker,
        signer: o.signer,
        taker: o.taker,
        tokenId: o.token_id,
        makerAmount: o.maker_amount,
        takerAmount: o.taker_amount,
        expiration: o.expiration,
        nonce: o.nonce,
        feeRateBps: o.fee_rate_bps,
        side: o.side,
        signatureType: o.signature_type,
        signature,
    }
}

/// The signed fields of the exchange's form of an order.
pub fn signed_fields(o: &IExchange::Order) -> SignedOrderFields {
    SignedOrderFields {
        salt: o.salt,
        maker: o.maker,
        signer: o.signer,
        taker: o.taker,
        token_id: o.tokenId,
        maker_amount: o.makerAmount,
        taker_amount: o.takerAmount,
        expiration: o.expiration,
        nonce: o.nonce,
        fee_rate_bps: o.feeRateBps,
        side: o.side,
        signature_type: o.signatureType,
    }
}

/// The V2 exchange's form of a version 2 order.
pub fn exchange_order_v2(o: &OrderFieldsV2, signature: Bytes) -> IExchangeV2::Order {
    IExchangeV2::Order {
        salt: o.salt,
        maker: o.maker,
        signer: o.signer,
        tokenId: o.token_id,
        makerAmount: o.maker_amount,
        takerAmount: o.taker_amount,
        side: o.side,
        signatureType: o.signature_type,
        timestamp: o.timestamp,
        metadata: o.metadata,
        builder: o.builder,
        signature,
    }
}

/// A wallet's split, merge or redemption of positions, as ConditionalTokens logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtfOperation {
    /// Split, Merge, Redeem or Conversion.
    pub kind: crate::domain::analytics::CtfKind,
    pub wallet: Address,
    /// The condition; a conversion's negative-risk market.
    pub condition: B256,
    /// The sets split or merged, the collateral a redemption paid, or the NO tokens of each
    /// question a conversion gave.
    pub amount: U256,
    /// A conversion's questions (bit i: question i); zero otherwise.
    pub index_set: U256,
    pub tx: B256,
    pub block: u64,
    pub log_index: u64,
    /// The block's time, when the node gives it with the log.
    pub time: Option<u64>,
}

/// The operator's connection to the chain in chain mode.
pub struct Chain {
    pub settings: ChainSettings,
    pub provider: DynProvider,
    /// Sends settlements and the operator's administrative transactions (markets).
    pub operator: Account,
    /// Sends wallets' relayed transactions when `--relayer-key-file` names another key;
    /// otherwise the operator does ([`Chain::relayer`]).
    pub relayer: Option<Account>,
    /// The last settlement transaction broadcast or decided (the operator's dashboard).
    pub last_tx: parking_lot::Mutex<Option<LastTx>>,
}

/// An account predex signs transactions with and allocates the nonces of.
pub struct Account {
    pub address: Address,
    /// Signs its transactions (which predex records before broadcasting).
    pub wallet: EthereumWallet,
    /// Held from a transaction's nonce until it is broadcast: the account's transactions
    /// go out one at a time, in nonce order, each with a nonce of [`Sender::nonce`].
    pub sending: tokio::sync::Mutex<Sender>,
}

impl Account {
    fn new(key: PrivateKeySigner) -> Account {
        let address = key.address();
        Account { address, wallet: EthereumWallet::from(key), sending: tokio::sync::Mutex::new(Sender::new(address)) }
    }
}

/// A settlement transaction as the dashboard shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastTx {
    pub hash: B256,
    /// UNIX seconds of the step `status` names.
    pub at: u64,
    /// `sent`, `confirmed` or `failed` (reverted).
    pub status: &'static str,
}

/// An account's next nonce, shared by everything it sends (the operator's: settlements,
/// markets and, without a relayer key of its own, relayed transactions): the node's count
/// of its transactions, pending included, or past what predex recorded or sent, whichever
/// is higher. A transaction recorded but not yet at the node keeps its nonce from any
/// other transaction.
///
/// The node is asked once per settlement pass ([`Sender::forget`]), not per transaction:
/// between two passes predex is the account's only sender.
#[derive(Debug)]
pub struct Sender {
    /// Whose nonces.
    account: Address,
    /// The nonce after the last one predex used.
    pub next: u64,
    /// Whether `next` was compared with the node's count since the last `forget`.
    known: bool,
}

impl Sender {
    pub fn new(account: Address) -> Sender {
        Sender { account, next: 0, known: false }
    }

    /// The nonce for the next transaction; [`Sender::used`] once it is recorded or sent.
    pub async fn nonce(&mut self, chain: &Chain) -> anyhow::Result<u64> {
        if !self.known {
            self.next = self.next.max(chain.provider.get_transaction_count(self.account).pending().await?);
            self.known = true;
        }
        Ok(self.next)
    }

    pub fn used(&mut self, nonce: u64) {
        self.next = self.next.max(nonce + 1);
    }

    /// The next [`Sender::nonce`] asks the node again.
    pub fn forget(&mut self) {
        self.known = false;
    }
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("rpc", &crate::config::url_host(&self.settings.rpc_url))
            .field("operator", &self.operator.address)
            .field("relayer", &self.relayer().address)
            .finish()
    }
}

impl Chain {
    /// Reads the operator's key (and the relayer's, when it has its own) and connects
    /// (nothing is sent yet).
    pub fn connect(settings: &ChainSettings) -> anyhow::Result<Chain> {
        let key = read_key(&settings.operator_key_file, "operator key file")?;
        let provider = wallet_provider(&settings.rpc_url, key.clone())?;
        let operator = Account::new(key);
        let relayer = match &settings.relayer_key_file {
            Some(path) => {
                Some(Account::new(read_key(path, "relayer key file")?)).filter(|r| r.address != operator.address)
            }
            None => None,
        };
        Ok(Chain { settings: settings.clone(), provider, operator, relayer, last_tx: Default::default() })
    }

    /// The account that sends wallets' relayed transactions.
    pub fn relayer(&self) -> &Account {
        self.relayer.as_ref().unwrap_or(&self.operator)
    }

    /// Sends one of the operator's administrative transactions and waits until it is mined;
    /// its hash, or an error unless it succeeded.
    pub async fn send(&self, what: &str, tx: TransactionRequest) -> anyhow::Result<B256> {
        let mut sender = self.operator.sending.lock().await;
        self.send_locked(&mut sender, what, tx).await
    }

    /// [`Chain::send`] with the sending lock held by the caller.
    pub async fn send_locked(&self, sender: &mut Sender, what: &str, tx: TransactionRequest) -> anyhow::Result<B256> {
        // The node's count again: the operator may have sent from its key outside predex.
        sender.forget();
        let nonce = sender.nonce(self).await.with_context(|| format!("{what}: no nonce"))?;
        let pending = match self.provider.send_transaction(tx.with_nonce(nonce)).await {
            Ok(p) => p,
            Err(e) => {
                sender.forget();
                return Err(e).with_context(|| format!("{what}: not sent"));
            }
        };
        sender.used(nonce);
        let receipt = pending.get_receipt().await.with_context(|| format!("{what}: no receipt"))?;
        if !receipt.status() {
            bail!("{what}: reverted in transaction {}", receipt.transaction_hash);
        }
        Ok(receipt.transaction_hash)
    }

    /// `owner`'s collateral and what it lets each of the venue's spenders move of it.
    pub async fn collateral_of(&self, owner: Address) -> anyhow::Result<CollateralHeld> {
        let s = &self.settings;
        let c = ICollateral::new(s.collateral, &self.provider);
        let (balance, exchange, neg_risk_exchange, adapter) = tokio::try_join!(
            async { c.balanceOf(owner).call().await },
            async { c.allowance(owner, s.exchange).call().await },
            async { c.allowance(owner, s.neg_risk_exchange).call().await },
            async { c.allowance(owner, s.neg_risk_adapter).call().await },
        )?;
        Ok(CollateralHeld { balance, exchange, neg_risk_exchange, adapter })
    }

    /// What `owner` holds of the position `token` on ConditionalTokens.
    pub async fn token_balance(&self, owner: Address, token: U256) -> anyhow::Result<U256> {
        Ok(IConditionalTokens::new(self.settings.ctf, &self.provider).balanceOf(owner, token).call().await?)
    }

    /// The tokens of `token` that `owner` can sell: its balance, when it has approved the
    /// exchange that trades them (and, for negative risk, the adapter) to move its
    /// positions; none otherwise.
    pub async fn token_spendable(&self, owner: Address, token: U256, neg_risk: bool) -> anyhow::Result<U256> {
        let s = &self.settings;
        let ctf = IConditionalTokens::new(s.ctf, &self.provider);
        let balance = self.token_balance(owner, token).await?;
        // Version 1's negative-risk exchange moves positions through the adapter; version
        // 2's on ConditionalTokens itself.
        let operators: &[Address] = match (neg_risk, s.order_version) {
            (true, 1) => &[s.neg_risk_exchange, s.neg_risk_adapter],
            (true, _) => &[s.neg_risk_exchange],
            (false, _) => &[s.exchange],
        };
        for &o in operators {
            if !ctf.isApprovedForAll(owner, o).call().await? {
                return Ok(U256::ZERO);
            }
        }
        Ok(balance)
    }

    /// The nonce `owner`'s orders must carry to settle: the larger of its nonces on the two
    /// exchanges (predex keeps one nonce per maker, as its ledger mode does).
    pub async fn maker_nonce(&self, owner: Address) -> anyhow::Result<u64> {
        let s = &self.settings;
        let standard = IExchange::new(s.exchange, &self.provider).nonces(owner).call().await?;
        let neg_risk = IExchange::new(s.neg_risk_exchange, &self.provider).nonces(owner).call().await?;
        Ok(u64::try_from(standard.max(neg_risk)).unwrap_or(u64::MAX))
    }

    /// The makers who paused (true) or unpaused (false) themselves on either version 2
    /// exchange (`pauseUser`, `unpauseUser`) in blocks `from..=to`, in the logs' order.
    pub async fn maker_pauses(&self, from: u64, to: u64) -> anyhow::Result<Vec<(Address, bool)>> {
        use alloy_sol_types::SolEvent;
        let s = &self.settings;
        let filter = alloy_rpc_types_eth::Filter::new()
            .address(vec![s.exchange, s.neg_risk_exchange])
            .event_signature(vec![IExchangeV2::UserPaused::SIGNATURE_HASH, IExchangeV2::UserUnpaused::SIGNATURE_HASH])
            .from_block(from)
            .to_block(to);
        let logs = self.provider.get_logs(&filter).await?;
        Ok(logs
            .iter()
            .filter_map(|l| {
                let paused = l.topics().first()? == &IExchangeV2::UserPaused::SIGNATURE_HASH;
                Some((Address::from_word(*l.topics().get(1)?), paused))
            })
            .collect())
    }

    /// Whether `maker` has paused itself on either version 2 exchange (effective now or
    /// within the exchange's pause interval: its orders cannot be counted on to settle).
    pub async fn maker_paused(&self, maker: Address) -> anyhow::Result<bool> {
        let s = &self.settings;
        for x in [s.exchange, s.neg_risk_exchange] {
            if !IExchangeV2::new(x, &self.provider).userPausedBlockAt(maker).call().await?.is_zero() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The hashes of the orders their makers cancelled on either exchange (`cancelOrder`,
    /// its `OrderCancelled` log) in blocks `from..=to`.
    pub async fn cancelled_orders(&self, from: u64, to: u64) -> anyhow::Result<Vec<B256>> {
        use alloy_sol_types::SolEvent;
        let s = &self.settings;
        let filter = alloy_rpc_types_eth::Filter::new()
            .address(vec![s.exchange, s.neg_risk_exchange])
            .event_signature(IExchange::OrderCancelled::SIGNATURE_HASH)
            .from_block(from)
            .to_block(to);
        let logs = self.provider.get_logs(&filter).await?;
        Ok(logs.iter().filter_map(|l| l.topics().get(1).copied()).collect())
    }

    /// What the collateral's and ConditionalTokens' logs of blocks `from..=to` say changed
    /// for whom: a transfer or an allowance of collateral, a transfer of positions, an
    /// operator's approval over all of an owner's positions.
    pub async fn wallet_changes(&self, from: u64, to: u64) -> anyhow::Result<Vec<WalletChange>> {
        use alloy_sol_types::SolEvent;
        let s = &self.settings;
        let filter = alloy_rpc_types_eth::Filter::new()
            .address(vec![s.collateral, s.ctf])
            .event_signature(vec![
                ICollateral::Transfer::SIGNATURE_HASH,
                ICollateral::Approval::SIGNATURE_HASH,
                IConditionalTokens::TransferSingle::SIGNATURE_HASH,
                IConditionalTokens::TransferBatch::SIGNATURE_HASH,
                IConditionalTokens::ApprovalForAll::SIGNATURE_HASH,
            ])
            .from_block(from)
            .to_block(to);
        let mut out = Vec::new();
        for log in self.provider.get_logs(&filter).await? {
            let at = log.address();
            if at == s.collateral {
                if let Ok(e) = log.log_decode::<ICollateral::Transfer>() {
                    out.push(WalletChange::Collateral(e.inner.from));
                    out.push(WalletChange::Collateral(e.inner.to));
                } else if let Ok(e) = log.log_decode::<ICollateral::Approval>() {
                    out.push(WalletChange::Collateral(e.inner.owner));
                }
            } else if at == s.ctf {
                if let Ok(e) = log.log_decode::<IConditionalTokens::TransferSingle>() {
                    out.push(WalletChange::Token(e.inner.from, e.inner.id));
                    out.push(WalletChange::Token(e.inner.to, e.inner.id));
                } else if let Ok(e) = log.log_decode::<IConditionalTokens::TransferBatch>() {
                    for id in &e.inner.ids {
                        out.push(WalletChange::Token(e.inner.from, *id));
                        out.push(WalletChange::Token(e.inner.to, *id));
                    }
                } else if let Ok(e) = log.log_decode::<IConditionalTokens::ApprovalForAll>() {
                    out.push(WalletChange::Tokens(e.inner.owner));
                }
            }
        }
        out.retain(|c| c.address() != Address::ZERO);
        out.dedup();
        Ok(out)
    }

    /// The splits, merges and redemptions of positions over the venue's collateral (no
    /// parent collection) in blocks `from..=to`, by wallets other than the venue's own
    /// contracts (an exchange minting or merging for a match, the adapter); and the
    /// negative-risk adapter's splits, merges, conversions and redemptions, by the wallets
    /// that called it (ConditionalTokens' logs of those name the adapter).
    pub async fn ctf_operations(&self, from: u64, to: u64) -> anyhow::Result<Vec<CtfOperation>> {
        use crate::domain::analytics::CtfKind;
        use alloy_sol_types::SolEvent;
        use IConditionalTokens::{PayoutRedemption, PositionSplit, PositionsMerge};
        use INegRiskAdapter as Adapter;
        let s = &self.settings;
        let filter = alloy_rpc_types_eth::Filter::new()
            .address(vec![s.ctf, s.neg_risk_adapter])
            .event_signature(vec![
                PositionSplit::SIGNATURE_HASH,
                PositionsMerge::SIGNATURE_HASH,
                PayoutRedemption::SIGNATURE_HASH,
                Adapter::PositionSplit::SIGNATURE_HASH,
                Adapter::PositionsMerge::SIGNATURE_HASH,
                Adapter::PositionsConverted::SIGNATURE_HASH,
                Adapter::PayoutRedemption::SIGNATURE_HASH,
            ])
            .from_block(from)
            .to_block(to);
        let venue = [s.exchange, s.neg_risk_exchange, s.neg_risk_adapter];
        let mut out = Vec::new();
        for log in self.provider.get_logs(&filter).await? {
            let (kind, wallet, condition, amount, index_set) = if log.address() == s.neg_risk_adapter {
                if let Ok(e) = log.log_decode::<Adapter::PositionSplit>() {
                    let e = e.inner.data;
                    (CtfKind::Split, e.stakeholder, e.conditionId, e.amount, U256::ZERO)
                } else if let Ok(e) = log.log_decode::<Adapter::PositionsMerge>() {
                    let e = e.inner.data;
                    (CtfKind::Merge, e.stakeholder, e.conditionId, e.amount, U256::ZERO)
                } else if let Ok(e) = log.log_decode::<Adapter::PositionsConverted>() {
                    let e = e.inner.data;
                    (CtfKind::Conversion, e.stakeholder, e.marketId, e.amount, e.indexSet)
                } else if let Ok(e) = log.log_decode::<Adapter::PayoutRedemption>() {
                    let e = e.inner.data;
                    (CtfKind::Redeem, e.redeemer, e.conditionId, e.payout, U256::ZERO)
                } else {
                    continue;
                }
            } else {
                let (kind, wallet, collateral, parent, condition, amount) = if let Ok(e) =
                    log.log_decode::<PositionSplit>()
                {
                    let e = e.inner.data;
                    (CtfKind::Split, e.stakeholder, e.collateralToken, e.parentCollectionId, e.conditionId, e.amount)
                } else if let Ok(e) = log.log_decode::<PositionsMerge>() {
                    let e = e.inner.data;
                    (CtfKind::Merge, e.stakeholder, e.collateralToken, e.parentCollectionId, e.conditionId, e.amount)
                } else if let Ok(e) = log.log_decode::<PayoutRedemption>() {
                    let e = e.inner.data;
                    (CtfKind::Redeem, e.redeemer, e.collateralToken, e.parentCollectionId, e.conditionId, e.payout)
                } else {
                    continue;
                };
                if collateral != s.collateral || parent != B256::ZERO {
                    continue;
                }
                (kind, wallet, condition, amount, U256::ZERO)
            };
            if venue.contains(&wallet) {
                continue;
            }
            out.push(CtfOperation {
                kind,
                wallet,
                condition,
                amount,
                index_set,
                tx: log.transaction_hash.unwrap_or_default(),
                block: log.block_number.unwrap_or_default(),
                log_index: log.log_index.unwrap_or_default(),
                time: log.block_timestamp,
            });
        }
        Ok(out)
    }

    /// What must hold before the exchange starts in chain mode, each failure one line: the
    /// node answers with the configured chain id; every configured contract exists; the
    /// exchanges settle in the configured collateral, the standard one through
    /// ConditionalTokens and the negative-risk one through the adapter; the operator is an
    /// operator of both exchanges; both derive Safe and proxy makers as predex does; and
    /// each exchange hashes a probe order
    /// as predex does under its order domain (name, version, chain id, address), so a
    /// domain mismatch shows here, not as the first settlement's revert.
    pub async fn check(&self, chain_id: u64, domains: &OrderDomains) -> anyhow::Result<()> {
        let s = &self.settings;
        let id = self
            .provider
            .get_chain_id()
            .await
            .with_context(|| format!("the node at {} does not answer", url_host(&s.rpc_url)))?;
        if id != chain_id {
            bail!("the node at {} is chain {id}, not the configured chain-id {chain_id}", url_host(&s.rpc_url));
        }
        for (name, address) in [
            ("collateral-address", s.collateral),
            ("ctf-address", s.ctf),
            ("neg-risk-adapter-address", s.neg_risk_adapter),
            ("exchange-address", s.exchange),
            ("neg-risk-exchange-address", s.neg_risk_exchange),
        ] {
            if self.provider.get_code_at(address).await?.is_empty() {
                bail!("{name} {address} holds no contract on chain {chain_id}");
            }
        }
        match s.order_version {
            2 => self.check_v2(chain_id, domains).await?,
            _ => self.check_v1(chain_id, domains).await?,
        }
        for (name, address) in [("exchange", s.exchange), ("negative-risk exchange", s.neg_risk_exchange)] {
            self.check_wallets(name, address).await?;
        }
        Ok(())
    }

    /// [`Chain::check`]'s checks of the version 1 exchanges: their collateral, positions
    /// (ConditionalTokens, or the adapter for negative risk), the operator an operator, and
    /// the order hash under predex's domain.
    async fn check_v1(&self, chain_id: u64, domains: &OrderDomains) -> anyhow::Result<()> {
        let s = &self.settings;
        let probe = probe_order();
        for (name, address, domain, positions, positions_name) in [
            ("exchange", s.exchange, &domains.standard, s.ctf, "ctf-address"),
            (
                "negative-risk exchange",
                s.neg_risk_exchange,
                &domains.neg_risk,
                s.neg_risk_adapter,
                "neg-risk-adapter-address",
            ),
        ] {
            let exchange = IExchange::new(address, &self.provider);
            let collateral = exchange
                .getCollateral()
                .call()
                .await
                .with_context(|| format!("the {name} at {address} does not answer getCollateral"))?;
            if collateral != s.collateral {
                bail!("the {name} at {address} settles in {collateral}, not collateral-address {}", s.collateral);
            }
            let ctf = exchange
                .getCtf()
                .call()
                .await
                .with_context(|| format!("the {name} at {address} does not answer getCtf"))?;
            if ctf != positions {
                bail!("the {name} at {address} moves positions through {ctf}, not {positions_name} {positions}");
            }
            let is_operator = exchange
                .isOperator(self.operator.address)
                .call()
                .await
                .with_context(|| format!("the {name} at {address} does not answer isOperator"))?;
            if !is_operator {
                bail!(
                    "the operator key's address {} is not an operator of the {name} at {address}",
                    self.operator.address
                );
            }
            let theirs = exchange
                .hashOrder(exchange_order(&probe, Bytes::new()))
                .call()
                .await
                .with_context(|| format!("the {name} at {address} does not answer hashOrder"))?;
            if theirs != order_hash(&probe, domain) {
                bail!(
                    "the {name} at {address} hashes orders under another EIP-712 domain than predex's \
                     (order-domain-name {:?}, version 1, chain-id {chain_id}): set order-domain-name to the \
                     name the contract was built with",
                    domain.domain.name.as_deref().unwrap_or_default()
                );
            }
        }
        Ok(())
    }
}

impl Chain {
    /// Whether the exchange at `address` derives a signer's Safe and proxy wallet as predex
    /// does (the factories and init-code hashes set): else an order of a Safe or proxy maker
    /// predex takes would not settle.
    async fn check_wallets(&self, name: &str, address: Address) -> anyhow::Result<()> {
        let w = &self.settings.wallets;
        let x = IExchange::new(address, &self.provider);
        let probe = Address::repeat_byte(0x11);
        let safe = x.getSafeAddress(probe).call().await.ok();
        if safe != Some(w.safe(probe)) {
            bail!(
                "the {name} at {address} derives Safe makers otherwise than safe-factory-address {} and \
                 safe-init-code-hash {}: set them to its Safe factory's",
                w.safe_factory,
                w.safe_init_code_hash
            );
        }
        let proxy = x.getPolyProxyWalletAddress(probe).call().await.ok();
        if proxy != Some(w.proxy(probe)) {
            bail!(
                "the {name} at {address} derives proxy-wallet makers otherwise than proxy-factory-address {} and \
                 proxy-init-code-hash {}: set them to its proxy factory's",
                w.proxy_factory,
                w.proxy_init_code_hash
            );
        }
        Ok(())
    }

    /// [`Chain::check`]'s checks of the version 2 exchanges: their collateral, positions
    /// on ConditionalTokens, full sets made through ConditionalTokens (standard) or the
    /// adapter (negative risk), the operator an operator and their fee receiver, and the
    /// version 2 order hash under predex's domain.
    async fn check_v2(&self, chain_id: u64, domains: &OrderDomains) -> anyhow::Result<()> {
        let s = &self.settings;
        let probe = probe_order_v2();
        for (name, address, domain, factory, factory_name) in [
            ("exchange", s.exchange, &domains.v2_standard, s.ctf, "ctf-address"),
            (
                "negative-risk exchange",
                s.neg_risk_exchange,
                &domains.v2_neg_risk,
                s.neg_risk_adapter,
                "neg-risk-adapter-address",
            ),
        ] {
            let x = IExchangeV2::new(address, &self.provider);
            let answer = |what: &str| format!("the {name} at {address} does not answer {what}");
            let collateral = x.getCollateral().call().await.with_context(|| answer("getCollateral"))?;
            if collateral != s.collateral {
                bail!("the {name} at {address} settles in {collateral}, not collateral-address {}", s.collateral);
            }
            let ctf = x.getCtf().call().await.with_context(|| answer("getCtf"))?;
            if ctf != s.ctf {
                bail!("the {name} at {address} moves positions through {ctf}, not ctf-address {}", s.ctf);
            }
            let made = x.getOutcomeTokenFactory().call().await.with_context(|| answer("getOutcomeTokenFactory"))?;
            if made != factory {
                bail!("the {name} at {address} makes full sets through {made}, not {factory_name} {factory}");
            }
            if !x.isOperator(self.operator.address).call().await.with_context(|| answer("isOperator"))? {
                bail!(
                    "the operator key's address {} is not an operator of the {name} at {address}",
                    self.operator.address
                );
            }
            let receiver = x.getFeeReceiver().call().await.with_context(|| answer("getFeeReceiver"))?;
            if receiver != self.operator.address {
                bail!(
                    "the {name} at {address} pays fees to {receiver}, not the operator {}: predex records them as the operator's",
                    self.operator.address
                );
            }
            let theirs = x
                .hashOrder(exchange_order_v2(&probe, Bytes::new()))
                .call()
                .await
                .with_context(|| answer("hashOrder"))?;
            if theirs != order_hash_v2(&probe, domain) {
                bail!(
                    "the {name} at {address} hashes orders under another EIP-712 domain than predex's \
                     (order-domain-name {:?}, version 2, chain-id {chain_id}): set order-domain-name to the \
                     name the contract was built with",
                    domain.domain.name.as_deref().unwrap_or_default()
                );
            }
        }
        Ok(())
    }
}

/// The gas limit of an operator's transaction whose estimate is `estimate`. A block is
/// packed by its transactions' gas limits: a margin over the estimate for what the
/// transactions before it in the block change (a balance emptied and filled again), no
/// more (docs/operating/settlement.md, Throughput).
pub fn gas_limit(estimate: u64) -> u64 {
    estimate + estimate / 10 + 30_000
}

/// A wallet's collateral on chain and its allowances to the venue's spenders: the exchange
/// and the negative-risk exchange that settle (version 1's or 2's, as the venue), and the
/// negative-risk adapter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollateralHeld {
    pub balance: U256,
    pub exchange: U256,
    pub neg_risk_exchange: U256,
    pub adapter: U256,
}

impl CollateralHeld {
    /// What the exchange of a market (negative-risk or not) may move.
    pub fn allowance_toward(&self, neg_risk: bool) -> U256 {
        if neg_risk {
            self.neg_risk_exchange
        } else {
            self.exchange
        }
    }
}

/// What a log says changed for an account on chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalletChange {
    /// Its collateral, or an allowance of it.
    Collateral(Address),
    /// Its balance of one position.
    Token(Address, U256),
    /// Whom it lets move all its positions.
    Tokens(Address),
}

impl WalletChange {
    pub fn address(&self) -> Address {
        match self {
            WalletChange::Collateral(a) | WalletChange::Token(a, _) | WalletChange::Tokens(a) => *a,
        }
    }
}

/// `request` signed by `wallet` as its account's transaction `nonce`, with the gas limit
/// of the estimate `gas` and at `fees`: the record to keep before its broadcast. What it
/// carries (trades, a relayed transaction, a report) and a relayer's account are the
/// caller's to fill in.
pub async fn sign_record(
    request: TransactionRequest,
    wallet: &EthereumWallet,
    nonce: u64,
    gas: u64,
    fees: alloy_eips::eip1559::Eip1559Estimation,
) -> anyhow::Result<crate::domain::chain::ChainTx> {
    use alloy_eips::eip2718::Encodable2718;
    let envelope = request
        .with_nonce(nonce)
        .with_gas_limit(gas_limit(gas))
        .with_max_fee_per_gas(fees.max_fee_per_gas)
        .with_max_priority_fee_per_gas(fees.max_priority_fee_per_gas)
        .build(wallet)
        .await
        .map_err(|e| anyhow!("sign: {e}"))?;
    Ok(crate::domain::chain::ChainTx {
        nonce,
        hash: envelope.tx_hash().0,
        raw: envelope.encoded_2718(),
        trades: Vec::new(),
        last_seq: 0,
        sent_at: crate::domain::now_secs(),
        relay: None,
        account: None,
        report: None,
        replaced: Vec::new(),
    })
}

/// Whether a node's error says the sender cannot pay for the transaction's gas (geth's and
/// anvil's `insufficient funds for gas * price + value`): not the call's fault, so nothing
/// is FAILED for it; sending waits until the account is funded.
pub fn short_of_gas(e: &alloy_transport::TransportError) -> bool {
    e.to_string().to_ascii_lowercase().contains("insufficient funds")
}

/// The name of the exchange's custom error in a node's error answer (a reverted call or
/// gas estimate), else the node's message.
pub fn revert_reason(e: &alloy_transport::TransportError) -> String {
    if let Some(p) = e.as_error_resp() {
        let name = |text: String| text.split(['(', ' ', '{']).next().unwrap_or(&text).to_string();
        if let Some(decoded) = p.as_decoded_interface_error::<IExchange::IExchangeErrors>() {
            return name(format!("{decoded:?}"));
        }
        if let Some(decoded) = p.as_decoded_interface_error::<IExchangeV2::IExchangeV2Errors>() {
            return name(format!("{decoded:?}"));
        }
        return p.message.to_string();
    }
    e.to_string()
}

/// An order no one signed, with every field set, for comparing hashes.
fn probe_order() -> SignedOrderFields {
    SignedOrderFields {
        salt: U256::from(0x5eed_u64),
        maker: Address::repeat_byte(0x11),
        signer: Address::repeat_byte(0x11),
        taker: Address::ZERO,
        token_id: U256::from(1_234_567_u64),
        maker_amount: U256::from(50_000_000_u64),
        taker_amount: U256::from(100_000_000_u64),
        expiration: U256::ZERO,
        nonce: U256::from(3),
        fee_rate_bps: U256::from(100),
        side: 1,
        signature_type: 0,
    }
}

/// A version 2 order no one signed, with every field set, for comparing hashes.
fn probe_order_v2() -> OrderFieldsV2 {
    OrderFieldsV2 {
        salt: U256::from(0x5eed_u64),
        maker: Address::repeat_byte(0x11),
        signer: Address::repeat_byte(0x11),
        token_id: U256::from(1_234_567_u64),
        maker_amount: U256::from(50_000_000_u64),
        taker_amount: U256::from(100_000_000_u64),
        side: 1,
        signature_type: 0,
        timestamp: U256::from(1_700_000_000_000_u64),
        metadata: B256::repeat_byte(0x22),
        builder: B256::repeat_byte(0x33),
    }
}

//! Markets on chain: the condition prepared on ConditionalTokens (binary markets, predex's
//! operator the oracle) or a question on the negative-risk adapter (the adapter the
//! oracle), the two position ids from the contracts' own functions, and both registered
//! on the version 1 exchange that will settle them. Every step is skipped when already done, so a
//! retry with the same question id finishes what an interrupted one began.

use alloy_primitives::{Bytes, B256, U256};
use anyhow::{bail, Context};

use super::{Chain, IConditionalTokens, IExchange, INegRiskAdapter};

/// What a market is on chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnChainMarket {
    pub question_id: B256,
    pub condition_id: B256,
    /// The YES and NO position ids (ERC-1155 token ids).
    pub yes: U256,
    pub no: U256,
    /// The adapter's market of a negative-risk question.
    pub neg_risk_market_id: Option<B256>,
}

/// A question id's adapter market: the id with its last byte (the question's index) zero.
pub fn adapter_market_of(question_id: B256) -> B256 {
    let mut m = question_id;
    m.0[31] = 0;
    m
}

impl Chain {
    /// A binary market for `question_id` on ConditionalTokens, registered on the exchange.
    pub async fn prepare_binary(&self, question_id: B256) -> anyhow::Result<OnChainMarket> {
        let s = &self.settings;
        let ctf = IConditionalTokens::new(s.ctf, &self.provider);
        let two = U256::from(2);
        let condition_id = ctf.getConditionId(self.operator.address, question_id, two).call().await?;
        if ctf.getOutcomeSlotCount(condition_id).call().await?.is_zero() {
            self.send(
                "prepareCondition",
                ctf.prepareCondition(self.operator.address, question_id, two).into_transaction_request(),
            )
            .await?;
        }
        let position = |index_set: u64| {
            let ctf = &ctf;
            async move {
                let collection = ctf.getCollectionId(B256::ZERO, condition_id, U256::from(index_set)).call().await?;
                anyhow::Ok(ctf.getPositionId(s.collateral, collection).call().await?)
            }
        };
        let (yes, no) = (position(1).await?, position(2).await?);
        self.register(s.exchange, yes, no, condition_id).await?;
        Ok(OnChainMarket { question_id, condition_id, yes, no, neg_risk_market_id: None })
    }

    /// A negative-risk market: the adapter's question `question_id` when given (it must
    /// exist), else a new question of the adapter market `market_id` (which must be
    /// predex's), else a new question of a new adapter market; registered on the
    /// negative-risk exchange.
    pub async fn prepare_neg_risk(
        &self,
        question_id: Option<B256>,
        market_id: Option<B256>,
        metadata: Bytes,
    ) -> anyhow::Result<OnChainMarket> {
        let s = &self.settings;
        let adapter = INegRiskAdapter::new(s.neg_risk_adapter, &self.provider);
        let question_id = match question_id {
            Some(q) => {
                let m = adapter_market_of(q);
                let count = adapter.getQuestionCount(m).call().await?;
                if U256::from(q.0[31]) >= count {
                    bail!("question_id {q} is no question of the negative-risk adapter");
                }
                q
            }
            None => {
                let m = match market_id {
                    Some(m) => {
                        if adapter.getOracle(m).call().await? != self.operator.address {
                            bail!("neg_risk_market_id {m} is no adapter market of this operator");
                        }
                        m
                    }
                    None => {
                        let call = adapter.prepareMarket(U256::ZERO, metadata.clone());
                        let mut sender = self.operator.sending.lock().await;
                        let m = call.call().await.context("prepareMarket")?;
                        self.send_locked(&mut sender, "prepareMarket", call.into_transaction_request()).await?;
                        m
                    }
                };
                let call = adapter.prepareQuestion(m, metadata);
                let mut sender = self.operator.sending.lock().await;
                let q = call.call().await.context("prepareQuestion")?;
                self.send_locked(&mut sender, "prepareQuestion", call.into_transaction_request()).await?;
                q
            }
        };
        let condition_id = adapter.getConditionId(question_id).call().await?;
        let yes = adapter.getPositionId(question_id, true).call().await?;
        let no = adapter.getPositionId(question_id, false).call().await?;
        self.register(s.neg_risk_exchange, yes, no, condition_id).await?;
        Ok(OnChainMarket {
            question_id,
            condition_id,
            yes,
            no,
            neg_risk_market_id: Some(adapter_market_of(question_id)),
        })
    }

    /// Registers the pair on `exchange` unless it already is. A version 2 exchange has no
    /// registry: it finds a market's two positions from the condition each match names.
    async fn register(
        &self,
        exchange: alloy_primitives::Address,
        yes: U256,
        no: U256,
        condition_id: B256,
    ) -> anyhow::Result<()> {
        if self.settings.order_version == 2 {
            return Ok(());
        }
        let e = IExchange::new(exchange, &self.provider);
        if e.getConditionId(yes).call().await? == condition_id {
            return Ok(());
        }
        self.send("registerToken", e.registerToken(yes, no, condition_id).into_transaction_request()).await?;
        Ok(())
    }
}

impl Chain {
    /// The transaction that reports a resolved condition's payouts — the winning outcome
    /// `winner` (0: YES) paid in full — as its oracle: ConditionalTokens'
    /// `reportPayouts(questionId, [1, 0] | [0, 1])` for a binary market predex's operator
    /// prepared, the negative-risk adapter's `reportOutcome(questionId, yes)` for one of its
    /// questions (the adapter market's oracle is predex's operator). The question and the
    /// oracle are read from the condition's `ConditionPreparation` log. `Err` inside: why
    /// predex cannot report it.
    pub async fn payout_call(
        &self,
        condition_id: B256,
        winner: u8,
    ) -> anyhow::Result<Result<alloy_rpc_types_eth::TransactionRequest, String>> {
        use alloy_network::TransactionBuilder;
        use alloy_provider::Provider;
        use alloy_sol_types::{SolCall, SolEvent};
        let s = &self.settings;
        let filter = alloy_rpc_types_eth::Filter::new()
            .address(s.ctf)
            .event_signature(IConditionalTokens::ConditionPreparation::SIGNATURE_HASH)
            .topic1(condition_id)
            .from_block(0);
        let logs = self.provider.get_logs(&filter).await?;
        let Some(prepared) = logs.iter().find_map(|l| l.log_decode::<IConditionalTokens::ConditionPreparation>().ok())
        else {
            return Ok(Err(format!("condition {condition_id} is not prepared on ConditionalTokens")));
        };
        let (oracle, question) = (prepared.inner.oracle, prepared.inner.questionId);
        let (to, input) = if oracle == self.operator.address {
            let payouts = vec![U256::from(u8::from(winner == 0)), U256::from(u8::from(winner == 1))];
            (s.ctf, IConditionalTokens::reportPayoutsCall { questionId: question, payouts }.abi_encode())
        } else if oracle == s.neg_risk_adapter {
            (
                s.neg_risk_adapter,
                INegRiskAdapter::reportOutcomeCall { questionId: question, outcome: winner == 0 }.abi_encode(),
            )
        } else {
            return Ok(Err(format!("the condition's oracle is {oracle}, not predex's operator or adapter")));
        };
        Ok(Ok(alloy_rpc_types_eth::TransactionRequest::default()
            .with_from(self.operator.address)
            .with_to(to)
            .with_input(Bytes::from(input))))
    }

    /// Whether a condition's payouts are reported on chain.
    pub async fn payouts_reported(&self, condition_id: B256) -> anyhow::Result<bool> {
        let ctf = IConditionalTokens::new(self.settings.ctf, &self.provider);
        Ok(!ctf.payoutDenominator(condition_id).call().await?.is_zero())
    }
}

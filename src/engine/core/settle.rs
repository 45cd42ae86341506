//! Settlement of matched trades: the queue of PENDING trades and what each leg moves.

use super::*;

/// What a matched trade will deliver, noted as expected on the receivers' and the fee
/// accounts: usable at once, credited at settlement.
pub(super) fn expect_receipts(ledger: &mut Ledger, flows: &[Flow; 2]) {
    for f in flows {
        ledger.expect_at(f.accounts.recv, f.net);
        ledger.expect_at(f.accounts.fee, f.fee);
    }
}

/// What the chain made of a trade (chain mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Settled by the transaction with this hash.
    Confirmed(String),
    /// Its transaction reverted (or would have): why, and the hash of the transaction
    /// that was mined and reverted (none when nothing was sent).
    Failed { why: String, hash: Option<String> },
}

/// A matched trade waiting for settlement, with what its legs (taker, maker) move and
/// where: settlement applies these without reading the record, which was matched long
/// before and has left the cache.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) trade: Arc<TradeRecord>,
    /// The trade's sequence, for the nonce check.
    pub(super) seq: u64,
    pub(super) flows: [Flow; 2],
}

/// One leg of a pending trade: its accounts, what it pays (held until settlement), what it
/// receives net of the fee, and the fee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Flow {
    pub(super) accounts: OrderAccounts,
    pub(super) pays: Amount,
    pub(super) net: Amount,
    pub(super) fee: Amount,
}

impl Pending {
    pub(super) fn new(trade: Arc<TradeRecord>, accounts: [OrderAccounts; 2]) -> Pending {
        let legs = trade.legs();
        let flow = |l: &Leg<'_>, accounts: OrderAccounts| {
            let (_, net, fee) = l.receives();
            Flow { accounts, pays: l.pays().1, net, fee }
        };
        let flows = [flow(&legs[0], accounts[0]), flow(&legs[1], accounts[1])];
        Pending { seq: trade.seq, trade, flows }
    }
}

impl Core {
    /// Settles up to `max` PENDING trades, oldest first. A trade's transfers apply to the
    /// ledger together — payments out of the holds, receipts net of fees, fees to the fee
    /// account — and it becomes CONFIRMED. It becomes FAILED, and nothing moves (holds
    /// return to the payers, expected receipts are void), when it cannot apply: an order
    /// signed with a nonce invalidated since the match (the exchange contract would revert),
    /// or a payer whose settled balance no longer covers its payment (it spent a receipt of
    /// an earlier trade that failed). Every party's API key gets a notification.
    pub fn settle(&mut self, now: u64, max: usize, batch: &mut Batch) -> Settled {
        // Room for the chunk's writes up front, so the list is not copied as it grows into
        // memory not touched before: a trade's record, and the balances it changed
        // (written once each at the end, up to six a trade, far fewer when the chunk's
        // trades share wallets).
        let n = self.pending.len().min(max);
        batch.reserve(2 * n + 16);
        let mut out = Settled::default();
        while out.confirmed + out.failed.len() < max {
            let Some(p) = self.pending.pop_front() else { break };
            self.settle_one(p, now, None, &mut out, batch);
        }
        self.flush_ledger(batch);
        out
    }

    /// Chain mode: settles the PENDING trades the chain decided, as it decided — CONFIRMED
    /// by a transaction, or FAILED with the reason it reverted — with the same transfers,
    /// voids and notifications as [`Core::settle`]. Trades no longer PENDING are skipped.
    pub fn settle_decided(&mut self, now: u64, decided: &[(Uuid, Verdict)], batch: &mut Batch) -> Settled {
        let mut out = Settled::default();
        for (id, verdict) in decided {
            // The chain settles in the order trades were sent: nearly always the front.
            let Some(i) = self.pending.iter().position(|p| p.trade.id == *id) else { continue };
            let p = self.pending.remove(i).expect("found");
            self.settle_one(p, now, Some(verdict), &mut out, batch);
        }
        self.flush_ledger(batch);
        out
    }

    /// The chain mined the transaction `hash` that settles `ids` (not yet at its
    /// confirmation depth): PENDING becomes MINED, with the hash. They stay in the queue
    /// until [`Core::settle_decided`].
    pub fn mark_mined(&mut self, now: u64, ids: &[Uuid], hash: &str, batch: &mut Batch) -> usize {
        let mut n = 0;
        for p in self.pending.iter_mut().filter(|p| ids.contains(&p.trade.id)) {
            if p.trade.status != TradeStatus::Pending {
                continue;
            }
            let t = Arc::make_mut(&mut p.trade);
            t.status = TradeStatus::Mined;
            t.transaction_hash = hash.to_string();
            t.last_update = now;
            batch.put_trade(p.trade.clone());
            n += 1;
        }
        n
    }

    /// PENDING trades matched after `seq`, oldest first, at most `max`.
    pub fn pending_after(&self, seq: u64, max: usize) -> Vec<Arc<TradeRecord>> {
        self.pending.iter().filter(|p| p.seq > seq).take(max).map(|p| p.trade.clone()).collect()
    }

    /// Settles one trade: the ledger decides (`verdict` None) or the chain did.
    fn settle_one(&mut self, p: Pending, now: u64, verdict: Option<&Verdict>, out: &mut Settled, batch: &mut Batch) {
        let Pending { trade: mut rec, seq, flows } = p;
        for f in &flows {
            self.ledger.release_at(f.accounts.pay, f.pays);
            self.ledger.unexpect_at(f.accounts.recv, f.net);
            self.ledger.unexpect_at(f.accounts.fee, f.fee);
        }
        // In place, unless a batch not yet written still holds the PENDING record.
        let t = Arc::make_mut(&mut rec);
        t.last_update = now;
        let why = match verdict {
            None => self.cannot_settle(t, seq, &flows),
            Some(Verdict::Failed { why, hash }) => {
                if let Some(h) = hash {
                    t.transaction_hash = h.clone();
                }
                Some(why.clone())
            }
            Some(Verdict::Confirmed(hash)) => {
                t.transaction_hash = hash.clone();
                None
            }
        };
        match why {
            Some(why) => {
                for l in &t.legs() {
                    self.cover(l.address, l.receives().0, &mut out.canceled, batch);
                }
                t.status = TradeStatus::Failed;
                t.error_msg = Some(why);
                // The persister writes each party's notification with the record.
                batch.put_trade(rec.clone());
                out.failed.push(rec);
            }
            None => {
                for f in &flows {
                    self.ledger.debit_at(f.accounts.pay, f.pays);
                    self.ledger.credit_at(f.accounts.recv, f.net);
                    self.ledger.credit_at(f.accounts.fee, f.fee);
                }
                t.status = TradeStatus::Confirmed;
                batch.put_trade(rec);
                out.confirmed += 1;
            }
        }
    }

    /// After a failed trade voided receipts: if the address's open orders now reserve more
    /// of `asset` than it has, they are cancelled (as an exchange cancels orders whose
    /// balance is gone). Holds of its own PENDING trades stay; those fail in turn.
    pub(super) fn cover(&mut self, address: &str, asset: &str, canceled: &mut Vec<(Uuid, u32)>, batch: &mut Batch) {
        let acc = self.ledger.account(address, asset);
        if acc.reserved <= acc.balance.saturating_add(acc.incoming) {
            return;
        }
        for (id, m) in self.open_where(|o| *o.maker == *address && o.spend_key() == asset) {
            self.close(&id, batch);
            canceled.push((id, m));
        }
    }

    /// Why a trade's transfers cannot apply now, if they cannot. Reads the record only
    /// when a nonce changed since the trade matched, or to name the party that fails.
    pub(super) fn cannot_settle(&self, t: &TradeRecord, seq: u64, flows: &[Flow; 2]) -> Option<String> {
        if seq < self.nonces_since {
            let legs = t.legs();
            if let Some(l) = legs.iter().find(|l| self.nonces.get(l.address).is_some_and(|n| n.since_trade > seq)) {
                return Some(format!("order of {} was signed with a nonce invalidated before settlement", l.address));
            }
        }
        // What each paying account owes; both legs may pay from one (a self-trade's mint).
        let [f0, f1] = flows;
        let short = |f: &Flow, owed: Amount| self.ledger.get(f.accounts.pay).balance < owed;
        let failing = if f0.accounts.pay == f1.accounts.pay {
            short(f0, f0.pays + f1.pays).then_some(0)
        } else if short(f0, f0.pays) {
            Some(0)
        } else {
            short(f1, f1.pays).then_some(1)
        };
        failing.map(|i| {
            let l = &t.legs()[i];
            let what = if l.pays().0 == COLLATERAL { "collateral" } else { "tokens" };
            format!("{} no longer holds the {what} it pays", l.address)
        })
    }
}

//! Bonds and a market's life: trade → bond → propose → dispute (or not) → resolve →
//! redeem, with the ledger conserved at each step.

use serde_json::{json, Value};

use crate::support::*;
use predex::config::BondCluster;

fn bond(t: &Trader, s: &Server, cond: &str, amount: &str) -> (u16, Value) {
    t.l2(s, "POST", "/bonds/post", Some(&json!({"conditionId": cond, "amount": amount})))
}

fn status(s: &Server, cond: &str) -> Value {
    s.get(&format!("/bonds/market/{cond}")).1["resolution"]["status"].clone()
}

/// The market's parties: a buyer and a seller who trade, a proposer, a disputer and a
/// third agent.
struct Parties {
    buyer: Trader,
    seller: Trader,
    proposer: Trader,
    disputer: Trader,
    third: Trader,
}

impl Parties {
    fn all(&self) -> [&Trader; 5] {
        [&self.buyer, &self.seller, &self.proposer, &self.disputer, &self.third]
    }
}

/// Collateral in wallets plus collateral locked in complete sets (one per YES/NO pair)
/// plus bonds escrowed: constant until redeem.
fn total(s: &Server, p: &Parties) -> u64 {
    let (_, b) = s.get(&format!("/bonds/market/{COND}"));
    let escrow: u64 = b["totalAmount"].as_str().unwrap().parse().unwrap();
    p.all().iter().map(|t| t.balance(s, "USDC") + t.balance(s, YES)).sum::<u64>() + escrow
}

fn propose(s: &Server, t: &Trader, outcome: &str) -> (u16, Value) {
    t.l2(s, "POST", "/resolution/propose", Some(&json!({"conditionId": COND, "outcome": outcome})))
}

fn dispute(s: &Server, t: &Trader) -> (u16, Value) {
    t.l2(s, "POST", "/resolution/dispute", Some(&json!({"conditionId": COND})))
}

#[test]
fn a_market_life_from_trade_to_redeem_with_bonds_disputes_and_the_worker() {
    let s = Server::start_tuned(|c| {
        c.resolution_cooldown_secs = 2;
        c.resolution_interval_ms = 200;
        c.bond_clusters = vec![BondCluster { id: 1, required: 10 }, BondCluster { id: 2, required: 50 }];
    });
    let p = Parties {
        buyer: s.trader(m("100")),
        seller: s.trader(m("100")),
        proposer: s.trader(m("100")),
        disputer: s.trader(m("100")),
        third: s.trader(m("100")),
    };
    let start = the_seller_splits_and_sells_yes_to_the_buyer(&s, &p);
    clusters_name_their_required_bond(&s);
    bonds_are_checked_and_add_up(&s, &p, start);
    a_proposal_makes_the_market_resolving_once(&s, &p);
    a_dispute_takes_a_bond_and_comes_once(&s, &p, start);
    the_worker_leaves_a_disputed_market_trading(&s, &p);
    the_operator_resolves_and_the_wrong_proposer_forfeits(&s, &p, start);
    the_winners_redeem_every_unit_of_collateral(&s, &p);
    an_undisputed_proposal_resolves_after_the_cooldown(&s, &p.third);
}

fn the_seller_splits_and_sells_yes_to_the_buyer(s: &Server, p: &Parties) -> u64 {
    let Parties { buyer, seller, .. } = p;
    assert_eq!(seller.l2(s, "POST", "/ctf/split", Some(&json!({"conditionId": COND, "amount": "10000000"}))).0, 200);
    seller.place(s, YES, "SELL", "0.60", "10");
    assert_eq!(buyer.place(s, YES, "BUY", "0.60", "10")["status"], "MATCHED");
    s.settle();
    let start = total(s, p);
    assert_eq!(start, m("500"));
    start
}

fn clusters_name_their_required_bond(s: &Server) {
    assert_eq!(
        s.get("/bonds/cluster/1/requirement").1,
        json!({"clusterId": 1, "requiredAmount": "10000000", "asset": "USDC"})
    );
    assert_eq!(err(s.get("/bonds/cluster/9/requirement")), (404, "cluster not found".into()));
    assert_eq!(err(s.get("/bonds/cluster/x/requirement")), (400, "cluster_id must be an integer".into()));
}

/// Bonds: refused, then posted twice (they add up).
fn bonds_are_checked_and_add_up(s: &Server, p: &Parties, start: u64) {
    let proposer = &p.proposer;
    let propose = |t: &Trader, outcome: &str| propose(s, t, outcome);
    assert_eq!(err(propose(proposer, "Yes")), (400, "a bond of at least 10 is required to propose".into()));
    for (amount, code, msg) in [
        ("0", 400, "amount must be a positive integer string (base units)"),
        ("1.5", 400, "amount must be a positive integer string (base units)"),
        ("101000000", 400, "not enough balance / allowance"),
    ] {
        assert_eq!(err(bond(proposer, s, COND, amount)), (code, msg.into()), "{amount}");
    }
    assert_eq!(err(bond(proposer, s, "0xnone", "1")), (404, "market not found".into()));
    assert_eq!(err(s.post("/bonds/post", &json!({"conditionId": COND, "amount": "1"}))).0, 401);
    assert_eq!(bond(proposer, s, COND, "6000000").0, 200);
    let (st, b) = bond(proposer, s, COND, "6000000");
    assert_eq!(
        (st, b["amount"].clone(), b["status"].clone(), b["clusterId"].clone()),
        (200, json!("12000000"), json!("POSTED"), json!(1))
    );
    assert_eq!(proposer.balance(s, "USDC"), m("88"));
    let (_, mine) = s.get(&format!("/bonds/agent/{}", proposer.address));
    assert_eq!(mine["bonds"].as_array().unwrap().len(), 1, "{mine}");
    assert_eq!(total(s, p), start);
}

fn a_proposal_makes_the_market_resolving_once(s: &Server, p: &Parties) {
    let propose = |outcome: &str| propose(s, &p.proposer, outcome);
    assert_eq!(err(propose("Maybe")), (400, "outcome must name one of the market's outcomes".into()));
    let (st, p) = propose("Yes");
    assert_eq!(st, 200, "{p}");
    assert_eq!(
        (p["resolution"]["status"].clone(), p["resolution"]["proposedOutcome"].clone()),
        (json!("RESOLVING"), json!("Yes"))
    );
    assert_eq!(err(propose("No")), (400, "market already has a proposal".into()));
}

/// Not by the proposer, not without a bond, once.
fn a_dispute_takes_a_bond_and_comes_once(s: &Server, p: &Parties, start: u64) {
    let Parties { proposer, disputer, third, .. } = p;
    let dispute = |t: &Trader| dispute(s, t);
    assert_eq!(err(dispute(proposer)), (400, "the proposer cannot dispute its own proposal".into()));
    assert_eq!(err(dispute(disputer)), (400, "a bond of at least 10 is required to dispute".into()));
    assert_eq!(bond(disputer, s, COND, "10000000").0, 200);
    assert_eq!(bond(third, s, COND, "10000000").0, 200);
    let (st, d) = dispute(disputer);
    assert_eq!((st, d["resolution"]["disputed"].clone()), (200, json!(true)), "{d}");
    assert_eq!(err(dispute(third)), (409, "market already disputed".into()));
    assert_eq!(total(s, p), start);
}

/// Past the cooldown the worker leaves a disputed market alone, and trading goes on.
fn the_worker_leaves_a_disputed_market_trading(s: &Server, p: &Parties) {
    std::thread::sleep(std::time::Duration::from_millis(2_600));
    assert_eq!(status(s, COND), json!("RESOLVING"));
    let resting = p.buyer.place(s, YES, "BUY", "0.10", "10");
    assert_eq!(resting["status"], "LIVE");
}

/// The operator resolves NO: the proposer was wrong and forfeits its bond to the
/// disputer; other bonds come back; trading stops and open orders are cancelled.
fn the_operator_resolves_and_the_wrong_proposer_forfeits(s: &Server, p: &Parties, start: u64) {
    let Parties { buyer, proposer, disputer, third, .. } = p;
    let (st, r) =
        s.internal_post("/internal/resolution", &json!({"condition_id": COND, "status": "RESOLVED", "outcome": "No"}));
    assert_eq!(st, 200, "{r}");
    assert_eq!(status(s, COND), json!("RESOLVED"));
    let (_, bonds) = s.get(&format!("/bonds/market/{COND}"));
    assert_eq!(bonds["totalAmount"], "0", "{bonds}");
    assert_eq!(
        [proposer.balance(s, "USDC"), disputer.balance(s, "USDC"), third.balance(s, "USDC")],
        [m("88"), m("112"), m("100")]
    );
    assert_eq!(buyer.available(s, "USDC"), buyer.balance(s, "USDC"), "the resting order was cancelled");
    let refused = buyer.submit(s, buyer.order(s, YES, "BUY", "0.10", "10"), "GTC");
    assert_eq!(err(refused), (400, "market is not accepting orders".into()));
    let (_, mk) = s.get(&format!("/market?condition_id={COND}"));
    assert_eq!((mk["closed"].clone(), mk["accepting_orders"].clone()), (json!(true), json!(false)));
    assert_eq!(total(s, p), start, "slashing moves collateral, creates none");
    assert_eq!(err(dispute(s, third)), (400, "market is not resolving".into()));
    assert_eq!(err(bond(third, s, COND, "1")), (400, "market is already resolved".into()));
}

/// NO won: the seller's NO pays 1 each, the buyer's YES nothing.
fn the_winners_redeem_every_unit_of_collateral(s: &Server, p: &Parties) {
    let Parties { buyer, seller, .. } = p;
    let (st, r) = seller.l2(s, "POST", "/ctf/redeem", Some(&json!({"conditionId": COND})));
    assert_eq!((st, r["usdcSize"].clone()), (200, json!("10000000")), "{r}");
    let (st, r) = buyer.l2(s, "POST", "/ctf/redeem", Some(&json!({"conditionId": COND})));
    assert_eq!((st, r["usdcSize"].clone()), (200, json!("0")), "{r}");
    let usdc: u64 = p.all().iter().map(|t| t.balance(s, "USDC")).sum();
    assert_eq!(usdc, m("500"), "every unit of collateral is back in a wallet");
    s.check();
}

/// The worker resolves an undisputed proposal after the cooldown and returns the bond.
fn an_undisputed_proposal_resolves_after_the_cooldown(s: &Server, third: &Trader) {
    s.create_market("0xc0ffee2", "3001", "3002", "0.01", false);
    assert_eq!(
        s.internal_post("/internal/bonds/cluster", &json!({"condition_id": "0xc0ffee2", "cluster_id": 2})).0,
        200
    );
    assert_eq!(
        err(s.internal_post("/internal/bonds/cluster", &json!({"condition_id": "0xc0ffee2", "cluster_id": 7}))),
        (404, "cluster not found".into())
    );
    assert_eq!(bond(third, s, "0xc0ffee2", "10000000").0, 200);
    let p = third.l2(s, "POST", "/resolution/propose", Some(&json!({"conditionId": "0xc0ffee2", "outcome": "Yes"})));
    assert_eq!(err(p), (400, "a bond of at least 50 is required to propose".into()));
    assert_eq!(bond(third, s, "0xc0ffee2", "40000000").0, 200);
    let (st, _) =
        third.l2(s, "POST", "/resolution/propose", Some(&json!({"conditionId": "0xc0ffee2", "outcome": "Yes"})));
    assert_eq!(st, 200);
    assert_eq!(third.balance(s, "USDC"), m("50"));
    wait_for(10, || (status(s, "0xc0ffee2") == json!("RESOLVED")).then_some(()));
    assert_eq!(third.balance(s, "USDC"), m("100"));
    let (_, mine) = s.get(&format!("/bonds/agent/{}", third.address));
    let st: Vec<_> = mine["bonds"].as_array().unwrap().iter().map(|b| b["status"].clone()).collect();
    assert_eq!(st, vec![json!("RELEASED"), json!("RELEASED")], "{mine}");
    s.check();
}

#[test]
fn a_question_auction_makes_the_highest_bidder_the_bonded_resolver() {
    let s = Server::start_tuned(|c| {
        c.resolution_interval_ms = 100;
        c.bond_clusters = vec![BondCluster { id: 1, required: 10 }];
    });
    let (a, b, c) = (s.trader(m("100")), s.trader(m("100")), s.trader(m("100")));
    let bid = |t: &Trader, amount: &str| {
        t.l2(&s, "POST", "/auctions/bid", Some(&json!({"conditionId": COND, "amount": amount})))
    };
    let none = (400, "no open question auction for this market".to_string());
    assert_eq!(err(bid(&a, "1000000")), none);
    assert_eq!(err(s.get(&format!("/auctions/{COND}"))), (404, "auction not found".into()));
    let open = json!({"condition_id": COND, "duration_secs": 2});
    assert_eq!(
        err(s.internal_post("/internal/auctions", &json!({"condition_id": "0xnope", "duration_secs": 2}))).0,
        404
    );
    let (st, body) = s.internal_post("/internal/auctions", &open);
    assert_eq!((st, body["status"].as_str()), (200, Some("OPEN")), "{body}");
    assert_eq!(
        err(s.internal_post("/internal/auctions", &open)),
        (409, "market already has a question auction".into())
    );
    let propose =
        |t: &Trader| t.l2(&s, "POST", "/resolution/propose", Some(&json!({"conditionId": COND, "outcome": "Yes"})));
    assert_eq!(err(propose(&a)), (400, "the question auction is still open".into()));

    // Bids add up per agent and escrow collateral.
    for (t, amount) in [(&a, "10000000"), (&b, "15000000"), (&a, "6000000"), (&c, "12000000")] {
        assert_eq!(bid(t, amount).0, 200);
    }
    assert_eq!(err(bid(&b, "0")), (400, "amount must be a positive integer string (base units)".into()));
    assert_eq!(err(bid(&b, "99000000")), (400, "not enough balance / allowance".into()));
    assert_eq!([&a, &b, &c].map(|t| t.balance(&s, "USDC")), [m("84"), m("85"), m("88")]);
    let (_, shown) = s.get(&format!("/auctions/{COND}"));
    assert_eq!(shown["highestBid"], "16000000");

    // The worker closes it: the winner's bids become its bond, the others are refunded.
    let closed = wait_for(10, || {
        let (_, v) = s.get(&format!("/auctions/{COND}"));
        (v["status"] == "CLOSED").then_some(v)
    });
    assert_eq!(
        (closed["winner"].as_str(), closed["winningAmount"].as_str()),
        (Some(a.address.as_str()), Some("16000000"))
    );
    // A refund's credit shows in the balance as the matching thread applies it, its bid's
    // deletion once the persister has written it: wait for both.
    wait_for(10, || {
        let refunded = [&b, &c].map(|t| t.balance(&s, "USDC")) == [m("100"), m("100")];
        (refunded && s.get(&format!("/auctions/{COND}")).1["bids"] == json!([])).then_some(())
    });
    assert_eq!(a.balance(&s, "USDC"), m("84"));
    let (_, bonds) = s.get(&format!("/bonds/market/{COND}"));
    assert_eq!(bonds["totalAmount"], "16000000");
    assert_eq!(bonds["bonds"][0]["agent"], a.address.as_str());
    assert_eq!(err(bid(&b, "1000000")), none);

    // Only the winner proposes.
    assert_eq!(bond(&b, &s, COND, "20000000").0, 200);
    assert_eq!(err(propose(&b)), (400, "only the question auction's winner may propose".into()));
    assert_eq!(propose(&a).0, 200);
    s.check();
}

#[test]
fn a_dispute_after_the_cooldown_is_refused() {
    // The worker never runs here, so the proposal stays RESOLVING past its cooldown.
    let s = Server::start_tuned(|c| {
        c.resolution_cooldown_secs = 1;
        c.resolution_interval_ms = 600_000;
        c.bond_clusters = vec![BondCluster { id: 1, required: 10 }];
    });
    let (p, d) = (s.trader(m("100")), s.trader(m("100")));
    assert_eq!(bond(&p, &s, COND, "10000000").0, 200);
    assert_eq!(bond(&d, &s, COND, "10000000").0, 200);
    let propose = json!({"conditionId": COND, "outcome": "Yes"});
    assert_eq!(p.l2(&s, "POST", "/resolution/propose", Some(&propose)).0, 200);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let dispute = json!({"conditionId": COND});
    assert_eq!(err(d.l2(&s, "POST", "/resolution/dispute", Some(&dispute))), (400, "dispute window has closed".into()));
    assert_eq!(status(&s, COND), "RESOLVING");
}

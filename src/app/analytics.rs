//! The analytics read model (SPEC §4.5, §2.15–2.16; Polymarket's Data API where the spec
//! shows no shape): a wallet's or a market's trades, positions with their derived figures,
//! leaderboard sums and a token's trade ticks. The routes are `api::analytics`.
//!
//! Every query is a range scan over the indexes and counters each trade writes with itself
//! (`store::index`): a wallet's trades, a market's trades in time order, positions per
//! wallet and per market, per-day sums for leaderboards. Definitions (docs/reference/catalogue-analytics.md):
//! - average price = collateral paid for the tokens bought ÷ tokens bought (fees included);
//! - current price = 1/0 once resolved, else the midpoint of a two-sided book, else the
//!   last trade, else 0;
//! - unrealized PnL (`cashPnl`) = size × (current − average); realized PnL = proceeds −
//!   tokens sold × average; leaderboard PnL = proceeds − cost + size × current.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use crate::app::catalogue::{current_price, live, Live, MarketMeta};
use crate::app::AppState;
use crate::commit::views::MarketView;
use crate::domain::analytics::{CtfActivity, Position, DAY};
use crate::domain::{mul_div_floor, Amount, Price, Side, TradeRecord, TradeStatus, AMOUNT_ONE};
use crate::store::analytics::TickAt;
use crate::store::StoreError;

/// What a row says about its market: the market, its metadata, its event, its numbers.
pub struct MarketCtx {
    pub view: Arc<MarketView>,
    pub meta: Option<Arc<MarketMeta>>,
    pub event_slug: String,
    pub live: Live,
}

#[derive(Default)]
pub struct Markets(HashMap<u32, Arc<MarketCtx>>);

impl Markets {
    pub fn get(&mut self, s: &AppState, view: &Arc<MarketView>) -> Result<Arc<MarketCtx>, StoreError> {
        if let Some(c) = self.0.get(&view.market.idx) {
            return Ok(c.clone());
        }
        let meta = s.catalogue.meta(&view.market.condition_id);
        let event_slug = meta
            .as_ref()
            .and_then(|m| m.event_id)
            .and_then(|e| s.catalogue.event(e))
            .map(|e| e.page.slug.clone())
            .unwrap_or_default();
        let c = Arc::new(MarketCtx { view: view.clone(), meta, event_slug, live: live(&s.store, view)? });
        self.0.insert(view.market.idx, c.clone());
        Ok(c)
    }
    pub fn by_token(&mut self, s: &AppState, token: &str) -> Result<Option<(Arc<MarketCtx>, u8)>, StoreError> {
        match s.registry.token(token) {
            Some((v, o)) => Ok(Some((self.get(s, &v)?, o))),
            None => Ok(None),
        }
    }
}

impl MarketCtx {
    pub fn icon(&self) -> &str {
        self.meta.as_deref().map(|m| m.icon.as_str()).unwrap_or("")
    }
    pub fn price(&self, outcome: u8) -> Price {
        current_price(self.meta.as_deref(), &self.live, outcome)
    }
}

/// One party's row of a fill: role 0 = taker, 1 = maker.
pub struct Fill<'a> {
    pub wallet: &'a str,
    pub side: Side,
    pub asset: &'a str,
    pub size: Amount,
    pub price: Price,
    pub outcome: &'a str,
}

pub fn fill(t: &TradeRecord, role: u8) -> Fill<'_> {
    if role == 0 {
        Fill {
            wallet: &t.maker_address,
            side: t.side,
            asset: &t.token.token_id,
            size: t.size,
            price: t.price,
            outcome: &t.token.outcome,
        }
    } else {
        let m = &t.maker_orders[0];
        Fill {
            wallet: &m.maker_address,
            side: m.side,
            asset: &m.token.token_id,
            size: m.matched_amount,
            price: m.price,
            outcome: &m.token.outcome,
        }
    }
}

pub fn cash(f: &Fill) -> Amount {
    f.price.cost(f.size)
}

pub struct TradeFilter {
    pub side: Option<Side>,
    pub cash_min: Option<Amount>,
    pub tokens_min: Option<Amount>,
    pub markets: Option<Vec<u32>>,
}

impl TradeFilter {
    pub fn keeps(&self, t: &TradeRecord, f: &Fill) -> bool {
        t.status != TradeStatus::Failed
            && self.side.is_none_or(|s| s == f.side)
            && self.cash_min.is_none_or(|c| cash(f) >= c)
            && self.tokens_min.is_none_or(|c| f.size >= c)
            && self.markets.as_ref().is_none_or(|m| m.contains(&t.token.market_idx))
    }
}

/// Walks trade rows newest first, calling `each` with (trade, role) until it breaks or
/// fails: a wallet's rows from its index, or the given markets' rows merged by time.
pub fn walk_rows<E: From<StoreError>>(
    s: &AppState,
    user: Option<&str>,
    markets: &[Arc<MarketView>],
    taker_only: bool,
    mut each: impl FnMut(&TradeRecord, u8) -> Result<ControlFlow<()>, E>,
) -> Result<(), E> {
    if let Some(u) = user {
        s.store.walk_wallet_trades(u, |id, role| {
            if taker_only && role != 0 {
                return Ok(ControlFlow::Continue(()));
            }
            match s.store.get_trade(&id)? {
                Some(t) => each(&t, role),
                None => Ok(ControlFlow::Continue(())),
            }
        })?;
    } else {
        // Merge the markets' time-ordered indexes: one cursor per market, newest first.
        let mut heads: Vec<Option<TickAt>> = markets.iter().map(|_| None).collect();
        let mut last: Vec<Option<TickAt>> = markets.iter().map(|_| None).collect();
        let mut done = vec![false; markets.len()];
        loop {
            for (i, v) in markets.iter().enumerate() {
                if heads[i].is_some() || done[i] {
                    continue;
                }
                match s.store.tick_before(v.market.idx, last[i].as_ref())? {
                    Some(h) => heads[i] = Some(h),
                    None => done[i] = true,
                }
            }
            // The newest head: by (time, seq).
            let Some(i) = (0..heads.len())
                .filter(|&i| heads[i].is_some())
                .max_by(|&a, &b| heads[a].as_ref().map(TickAt::order).cmp(&heads[b].as_ref().map(TickAt::order)))
            else {
                break;
            };
            let head = heads[i].take().expect("chosen head");
            let tick = head.tick.clone();
            last[i] = Some(head);
            let Some(t) = s.store.get_trade(&tick.id)? else { continue };
            if each(&t, 0)?.is_break() || (!taker_only && each(&t, 1)?.is_break()) {
                break;
            }
        }
    }
    Ok(())
}

/// A position with its derived figures, in integers (micro-units; prices 1e-4).
pub struct PosRow {
    pub wallet: String,
    pub token: String,
    pub outcome: u8,
    pub ctx: Arc<MarketCtx>,
    pub pos: Position,
    /// Average entry price, 1e-6 collateral per token (6 decimals).
    pub avg: u64,
    pub cur: Price,
    pub initial: i64,
    pub current: i64,
    pub cash_pnl: i64,
    pub realized: i64,
}

pub fn pos_row(wallet: &str, token: &str, pos: Position, ctx: Arc<MarketCtx>, outcome: u8) -> PosRow {
    let avg = if pos.bought > 0 { mul_div_floor(pos.cost as u64, AMOUNT_ONE, pos.bought as u64) } else { 0 };
    let cur = ctx.price(outcome);
    let held = pos.size.max(0) as u64;
    let initial = mul_div_floor(held, avg, AMOUNT_ONE) as i64;
    let current = cur.cost(Amount(held)).units() as i64;
    let realized = pos.proceeds - mul_div_floor(pos.sold.max(0) as u64, avg, AMOUNT_ONE) as i64;
    PosRow {
        wallet: wallet.to_string(),
        token: token.to_string(),
        outcome,
        ctx,
        pos,
        avg,
        cur,
        initial,
        current,
        cash_pnl: current - initial,
        realized,
    }
}

/// Every position in a market, by wallet.
pub fn market_positions(s: &AppState, view: &MarketView) -> Result<Vec<PosRow>, StoreError> {
    rows_of(s, s.store.positions_in_market(view.market.idx)?)
}

/// Every position of a wallet, by token.
pub fn wallet_positions(s: &AppState, wallet: &str) -> Result<Vec<PosRow>, StoreError> {
    rows_of(s, s.store.positions_of_wallet(wallet)?)
}

/// Positions with their figures (those of a token no market lists are left out).
fn rows_of(s: &AppState, raw: Vec<(String, String, Position)>) -> Result<Vec<PosRow>, StoreError> {
    let mut ctxs = Markets::default();
    let mut out = Vec::with_capacity(raw.len());
    for (w, t, pos) in raw {
        if let Some((ctx, o)) = ctxs.by_token(s, &t)? {
            out.push(pos_row(&w, &t, pos, ctx, o));
        }
    }
    Ok(out)
}

pub fn sort_positions(rows: &mut [PosRow], key: impl Fn(&PosRow) -> i64, ascending: bool) {
    rows.sort_by(|a, b| {
        let o = key(a).cmp(&key(b));
        let o = if ascending { o } else { o.reverse() };
        o.then_with(|| a.wallet.cmp(&b.wallet)).then_with(|| a.token.cmp(&b.token))
    });
}

/// A token's trades in [from, to] (UNIX seconds), oldest first: (time, price of the token,
/// size).
pub fn token_ticks(
    s: &AppState,
    view: &MarketView,
    token: &str,
    from: u64,
    to: u64,
) -> Result<Vec<(u64, Price, Amount)>, StoreError> {
    Ok(s.store
        .market_ticks(view.market.idx, from, to)?
        .into_iter()
        .map(|(t, tick)| (t, tick.price_of(token), tick.size))
        .collect())
}

/// A wallet's splits, merges and redeems newest first, from `end` back to `start` (UNIX
/// seconds, inclusive), of the kinds `wants` keeps and in `markets` (empty: any): at most
/// `max` of them.
pub fn ctf_activity(
    s: &AppState,
    wallet: &str,
    window: (Option<i64>, Option<i64>),
    markets: &[u32],
    wants: impl Fn(&str) -> bool,
    max: u64,
) -> Result<std::collections::VecDeque<CtfActivity>, StoreError> {
    let (start, end) = window;
    let mut ops = std::collections::VecDeque::new();
    s.store.walk_activity(wallet, |a| {
        let ts = a.time as i64;
        if start.is_some_and(|st| ts < st) || ops.len() as u64 >= max {
            return ControlFlow::Break(());
        }
        let in_window = start.is_none_or(|st| ts >= st) && end.is_none_or(|e| ts <= e);
        if in_window && wants(a.kind.name()) && (markets.is_empty() || markets.contains(&a.market_idx)) {
            ops.push_back(a);
        }
        ControlFlow::Continue(())
    })?;
    Ok(ops)
}

/// Each wallet's (PnL, volume) over the last `days` days (None: all time), in micro-units:
/// PnL = proceeds − cost + size × current price; volume = cost + proceeds.
pub fn leaderboard(s: &AppState, days: Option<u32>) -> Result<HashMap<String, (i64, i64)>, StoreError> {
    // Per wallet and token: the window's sums.
    let mut sums: HashMap<(String, String), Position> = HashMap::new();
    let first = days.map(|days| (crate::domain::now_secs() / DAY) as u32 + 1 - days);
    for (w, t, p) in s.store.positions_since(first)? {
        sums.entry((w, t)).or_default().add(&p);
    }
    let mut ctxs = Markets::default();
    let mut board: HashMap<String, (i64, i64)> = HashMap::new();
    for ((w, t), pos) in sums {
        let Some((ctx, o)) = ctxs.by_token(s, &t)? else { continue };
        let mark = ctx.price(o).cost(Amount(pos.size.unsigned_abs())).units() as i64;
        let pnl = pos.proceeds - pos.cost + if pos.size < 0 { -mark } else { mark };
        let e = board.entry(w).or_default();
        e.0 += pnl;
        e.1 += pos.cost + pos.proceeds;
    }
    Ok(board)
}

//! The matching thread's memos: ledger accounts and nonces found by the
//! address of the maker's shared string instead of by hashing it.

use super::*;

/// Startup's memo of the ledger accounts already resolved for restored orders, keyed by
/// the addresses of the order's maker string and its token (the scan interns both, so a
/// maker's orders in one market share them): a lookup hashes two pointers instead of a
/// 42-character address. Each entry keeps both alive, so an address cannot be reused by
/// another value while the memo lives; equal values at two addresses only make two entries.
#[derive(Default)]
pub struct RestoreMemo(pub(super) HashMap<MemoKey, (OrderAccounts, Arc<str>, Arc<OrderToken>)>);

/// Where the maker's string and the token are, and the order's side.
pub(super) type MemoKey = (usize, usize, Side);

impl RestoreMemo {
    pub(super) fn accounts(&mut self, core: &mut Core, o: &OrderRecord) -> OrderAccounts {
        let maker = Arc::as_ptr(&o.maker) as *const u8 as usize;
        self.0
            .entry((maker, Arc::as_ptr(&o.token) as usize, o.side))
            .or_insert_with(|| (core.accounts_indexed(o), o.maker.clone(), o.token.clone()))
            .0
    }
}

/// The ledger accounts of recent (maker, outcome token) pairs, found by the address of the
/// maker's string: the API hands every order of one API key's wallet the key's own shared
/// address (`ApiKeyRecord::address`), so a placement compares a pointer instead of hashing
/// and comparing a 42-character address in the ledger's index. Direct-mapped and bounded: a slot holds its maker's
/// string, so no other string can take that address while the slot keeps it, and a
/// collision only replaces the slot. An address not shared (a caller that builds the
/// string per order) only misses and falls back to the ledger's index.
pub(super) struct AccountMemo(pub(super) Box<[Option<MemoSlot>]>);

pub(super) struct MemoSlot {
    pub(super) maker: Arc<str>,
    pub(super) token: AssetId,
    /// The maker's (collateral, token) accounts.
    pub(super) accounts: [Acct; 2],
}

/// Slots of [`AccountMemo`] and [`NonceMemo`]: a power of two.
pub(super) const MEMO_BITS: u32 = 10;

/// A makers' memo's slots, all empty.
pub(super) fn empty_slots<T>() -> Box<[Option<T>]> {
    (0..1 << MEMO_BITS).map(|_| None).collect()
}

/// The slot of a makers' memo for the address of the maker's string, mixed with `salt`.
pub(super) fn memo_slot(maker: &Arc<str>, salt: u64) -> usize {
    let key = (Arc::as_ptr(maker) as *const u8 as u64) ^ salt;
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - MEMO_BITS)) as usize
}

impl AccountMemo {
    pub(super) fn new() -> AccountMemo {
        AccountMemo(empty_slots())
    }

    pub(super) fn slot(maker: &Arc<str>, token: AssetId) -> usize {
        memo_slot(maker, (token.number() as u64) << 48)
    }

    /// The maker's (collateral, token) accounts, from the slot or else from `lookup`.
    pub(super) fn get(&mut self, maker: &Arc<str>, token: AssetId, lookup: impl FnOnce() -> [Acct; 2]) -> [Acct; 2] {
        let slot = &mut self.0[Self::slot(maker, token)];
        match slot {
            Some(s) if Arc::ptr_eq(&s.maker, maker) && s.token == token => s.accounts,
            _ => {
                let accounts = lookup();
                *slot = Some(MemoSlot { maker: maker.clone(), token, accounts });
                accounts
            }
        }
    }
}

/// Recent makers' nonces, found by the address of the maker's string as [`AccountMemo`] finds
/// their accounts. Once any maker has raised its nonce the nonce map is not empty, and a
/// placement would hash and compare its maker's 42-character address in it. Every
/// change of a nonce starts a new generation, and a slot of an older one is a miss, so no
/// slot answers with a nonce that has since moved.
pub(super) struct NonceMemo {
    pub(super) slots: Box<[Option<NonceSlot>]>,
    pub(super) generation: u64,
}

pub(super) struct NonceSlot {
    pub(super) maker: Arc<str>,
    pub(super) generation: u64,
    pub(super) nonce: u64,
}

impl NonceMemo {
    pub(super) fn new() -> NonceMemo {
        NonceMemo { slots: empty_slots(), generation: 0 }
    }

    /// The maker's nonce, from its slot or else from `lookup`.
    pub(super) fn get(&mut self, maker: &Arc<str>, lookup: impl FnOnce() -> u64) -> u64 {
        let slot = &mut self.slots[memo_slot(maker, 0)];
        match slot {
            Some(s) if s.generation == self.generation && Arc::ptr_eq(&s.maker, maker) => s.nonce,
            _ => {
                let nonce = lookup();
                *slot = Some(NonceSlot { maker: maker.clone(), generation: self.generation, nonce });
                nonce
            }
        }
    }

    /// Forgets every slot: a nonce changed.
    pub(super) fn invalidate(&mut self) {
        self.generation += 1;
    }
}

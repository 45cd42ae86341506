//! Duplicate detection for orders on their way to the engine ([`Claims`]).

use uuid::Uuid;

/// Seconds a generation of [`Claims`] covers: far beyond any group commit's latency.
pub(super) const CLAIM_SECS: u64 = 60;

/// The ids of the orders sent to the engine in the last one to two minutes: duplicate
/// detection for an order resubmitted before its first acceptance is durable (the handler's
/// store lookup cannot see it yet) or while it is still on its way. An order accepted longer
/// ago is in the store, and an open one in the engine's own map, which the engine checks.
///
/// The request's worker claims the id before sending the order and gives it back if the
/// engine refuses the order, so of two submissions of one signed order only one reaches
/// the engine at a time. The check runs on the workers, in parallel, under a lock the engine never takes, so
/// the matching thread's serial time pays no probe of a table of millions of ids. Two generations, the older dropped every [`CLAIM_SECS`], keep it bounded.
#[derive(Debug, Default)]
pub(super) struct Claims(parking_lot::Mutex<Generations>);

#[derive(Debug, Default)]
struct Generations {
    current: foldhash::HashSet<Uuid>,
    previous: foldhash::HashSet<Uuid>,
    since: u64,
}

impl Claims {
    /// Claims `id` at `now` (seconds); false when it is claimed already.
    pub(super) fn claim(&self, id: Uuid, now: u64) -> bool {
        let mut g = self.0.lock();
        if now >= g.since + CLAIM_SECS {
            // The expired generation's table becomes the new one, emptied but keeping its
            // capacity: at a steady rate a generation never grows (rehashes) again.
            let g = &mut *g;
            std::mem::swap(&mut g.current, &mut g.previous);
            g.current.clear();
            g.since = now;
        }
        if g.previous.contains(&id) {
            return false;
        }
        g.current.insert(id)
    }

    /// Gives back a claim whose order the engine refused.
    pub(super) fn release(&self, id: &Uuid) {
        let mut g = self.0.lock();
        if !g.current.remove(id) {
            g.previous.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_holds_for_one_to_two_windows_unless_given_back() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let claims = Claims::default();
        assert!(claims.claim(a, 1_000));
        assert!(!claims.claim(a, 1_000), "claimed already");
        assert!(claims.claim(b, 1_000 + CLAIM_SECS)); // rotates: a moves to the previous generation
        assert!(!claims.claim(a, 1_000 + CLAIM_SECS + 1));
        assert!(claims.claim(c, 1_000 + 2 * CLAIM_SECS)); // rotates again: a is forgotten
        assert!(claims.claim(a, 1_000 + 2 * CLAIM_SECS));
        // Given back from either generation, an id can be claimed again.
        claims.release(&b);
        claims.release(&a);
        assert!(claims.claim(b, 1_000 + 2 * CLAIM_SECS) && claims.claim(a, 1_000 + 2 * CLAIM_SECS));
        let g = claims.0.lock();
        assert_eq!(g.current.len() + g.previous.len(), 3, "bounded by two windows");
        drop(g);
        // A generation's table is reused, emptied, two windows later: no regrowth.
        let t = 1_000 + 3 * CLAIM_SECS;
        (10..1_010).for_each(|i| assert!(claims.claim(Uuid::from_u128(i), t)));
        let grown = claims.0.lock().current.capacity();
        claims.claim(a, t + CLAIM_SECS);
        claims.claim(b, t + 2 * CLAIM_SECS);
        let g = claims.0.lock();
        assert!(g.current.capacity() >= grown && g.current.len() == 1 && !g.previous.contains(&Uuid::from_u128(10)));
    }
}

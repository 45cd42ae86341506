//! The order-book server's rate limit (SPEC §8): at most `max` requests per client IP in
//! any sliding window, one counter across every path except the health probe.
//!
//! Each IP keeps 60 sub-window buckets, so the window slides at 1/60 of its length (one
//! second for the default 60 s) and an IP costs a few hundred bytes. Counters live in 16
//! mutex-guarded shards; a check is a hash lookup and a few additions (see the
//! `ratelimit/check` bench). IPs idle for a whole window are evicted as each shard is
//! swept, once per window, so memory follows the IPs seen recently, not all time.
//!
//! The client IP is the peer address, unless the peer is a trusted proxy: then the
//! rightmost X-Forwarded-For entry that is not itself a trusted proxy, else X-Real-IP.
//! Headers from any other peer are ignored, so a client cannot dodge its counter.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

const BUCKETS: usize = 60;
const SHARDS: usize = 16;

struct Window {
    counts: [u32; BUCKETS],
    total: u32,
    /// The slot of the newest bucket.
    head: u64,
}

#[derive(Default)]
struct Shard {
    ips: HashMap<IpAddr, Window>,
    last_sweep: u64,
}

pub struct RateLimiter {
    max: AtomicU32,
    window_ms: AtomicU64,
    /// Bumped when the window changes: counters of another window length are dropped.
    generation: AtomicU64,
    shards: Vec<Mutex<(u64, Shard)>>,
    epoch: Instant,
    trusted: Vec<IpAddr>,
}

impl RateLimiter {
    pub fn new(max: u32, window_secs: u64, trusted: Vec<IpAddr>) -> RateLimiter {
        RateLimiter {
            max: AtomicU32::new(max),
            window_ms: AtomicU64::new(window_secs.max(1) * 1000),
            generation: AtomicU64::new(0),
            shards: (0..SHARDS).map(|_| Mutex::new((0, Shard::default()))).collect(),
            epoch: Instant::now(),
            trusted: trusted.into_iter().map(|ip| ip.to_canonical()).collect(),
        }
    }

    /// (max requests, window seconds).
    pub fn settings(&self) -> (u32, u64) {
        (self.max.load(Ordering::Relaxed), self.window_ms.load(Ordering::Relaxed) / 1000)
    }

    /// Changes the limit; a new window length starts every counter afresh.
    pub fn set(&self, max: u32, window_secs: u64) {
        self.max.store(max, Ordering::Relaxed);
        let ms = window_secs.max(1) * 1000;
        if self.window_ms.swap(ms, Ordering::Relaxed) != ms {
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The client a request counts against.
    pub fn client_ip(&self, peer: Option<SocketAddr>, xff: Option<&str>, real_ip: Option<&str>) -> Option<IpAddr> {
        let peer = peer?.ip().to_canonical();
        if !self.trusted.contains(&peer) {
            return Some(peer);
        }
        if let Some(x) = xff {
            for part in x.rsplit(',') {
                match part.trim().parse::<IpAddr>() {
                    Ok(ip) if self.trusted.contains(&ip.to_canonical()) => continue,
                    Ok(ip) => return Some(ip.to_canonical()),
                    Err(_) => break,
                }
            }
        }
        if let Some(ip) = real_ip.and_then(|r| r.trim().parse::<IpAddr>().ok()) {
            return Some(ip.to_canonical());
        }
        Some(peer)
    }

    /// Counts one request from `ip`; false when it is over the limit (not counted then).
    pub fn allow(&self, ip: IpAddr) -> bool {
        self.allow_at(ip, self.epoch.elapsed().as_millis() as u64)
    }

    fn allow_at(&self, ip: IpAddr, now_ms: u64) -> bool {
        let max = self.max.load(Ordering::Relaxed);
        if max == 0 {
            return true;
        }
        let window_ms = self.window_ms.load(Ordering::Relaxed);
        let slot_ms = (window_ms / BUCKETS as u64).max(1);
        let slot = now_ms / slot_ms;
        let generation = self.generation.load(Ordering::Relaxed);
        let mut guard = self.shards[shard_of(&ip)].lock();
        let (gen, shard) = &mut *guard;
        if *gen != generation {
            *gen = generation;
            shard.ips.clear();
        }
        if now_ms.saturating_sub(shard.last_sweep) >= window_ms {
            shard.last_sweep = now_ms;
            shard.ips.retain(|_, w| slot.saturating_sub(w.head) < BUCKETS as u64);
        }
        let w = shard.ips.entry(ip).or_insert(Window { counts: [0; BUCKETS], total: 0, head: slot });
        let stale = slot.saturating_sub(w.head);
        if stale >= BUCKETS as u64 {
            w.counts = [0; BUCKETS];
            w.total = 0;
        } else {
            for s in w.head + 1..=slot {
                let c = &mut w.counts[(s % BUCKETS as u64) as usize];
                w.total -= *c;
                *c = 0;
            }
        }
        w.head = w.head.max(slot);
        if w.total >= max {
            return false;
        }
        w.counts[(slot % BUCKETS as u64) as usize] += 1;
        w.total += 1;
        true
    }

    /// IPs currently tracked (for tests and metrics).
    pub fn tracked(&self) -> usize {
        self.shards.iter().map(|s| s.lock().1.ips.len()).sum()
    }
}

fn shard_of(ip: &IpAddr) -> usize {
    let h = match ip {
        IpAddr::V4(v) => u32::from(*v) as u64,
        IpAddr::V6(v) => {
            let b = u128::from(*v);
            (b as u64) ^ ((b >> 64) as u64)
        }
    };
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn window_slides_and_limits_per_ip() {
        let l = RateLimiter::new(3, 60, vec![]);
        let (a, b) = (ip("10.0.0.1"), ip("10.0.0.2"));
        for t in [0, 1_000, 2_000] {
            assert!(l.allow_at(a, t));
        }
        assert!(!l.allow_at(a, 3_000), "fourth request inside the window");
        assert!(l.allow_at(b, 3_000), "another IP has its own counter");
        // The first request leaves the window 60 s after it was made; refused ones never
        // counted.
        assert!(!l.allow_at(a, 59_999));
        assert!(l.allow_at(a, 60_000));
        assert!(!l.allow_at(a, 60_500));
        assert!(l.allow_at(a, 61_000));
    }

    #[test]
    fn idle_ips_are_evicted_and_settings_change_at_runtime() {
        let l = RateLimiter::new(1, 1, vec![]);
        for i in 0..1000u32 {
            assert!(l.allow_at(IpAddr::from(i.to_be_bytes()), 0));
        }
        assert_eq!(l.tracked(), 1000);
        // After a whole window each shard sweeps its idle IPs on its next use.
        for i in 0..1000u32 {
            l.allow_at(IpAddr::from((5000 + i).to_be_bytes()), 5_000);
        }
        assert_eq!(l.tracked(), 1000, "only the IPs of the current window are kept");
        let x = ip("10.9.9.9");
        assert!(l.allow_at(x, 6_000));
        assert!(!l.allow_at(x, 6_001));
        l.set(2, 1);
        assert!(l.allow_at(x, 6_002));
        l.set(5, 10);
        assert_eq!(l.settings(), (5, 10));
        l.set(0, 10);
        assert!((0..100).all(|i| l.allow_at(x, 6_003 + i)), "0 turns the limit off");
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let l = RateLimiter::new(1, 60, vec![ip("127.0.0.1")]);
        let proxy: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let other: SocketAddr = "192.0.2.7:5000".parse().unwrap();
        assert_eq!(l.client_ip(Some(proxy), Some("203.0.113.9, 198.51.100.1"), None), Some(ip("198.51.100.1")));
        assert_eq!(l.client_ip(Some(proxy), Some("203.0.113.9, 127.0.0.1"), None), Some(ip("203.0.113.9")));
        assert_eq!(l.client_ip(Some(proxy), None, Some("203.0.113.5")), Some(ip("203.0.113.5")));
        assert_eq!(l.client_ip(Some(proxy), None, None), Some(ip("127.0.0.1")));
        assert_eq!(l.client_ip(Some(other), Some("203.0.113.9"), Some("203.0.113.5")), Some(ip("192.0.2.7")));
        let mapped: SocketAddr = "[::ffff:192.0.2.7]:1".parse().unwrap();
        assert_eq!(l.client_ip(Some(mapped), None, None), Some(ip("192.0.2.7")));
    }
}

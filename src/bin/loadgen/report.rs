//! The phases' figures as table rows and as the JSON summary.

use super::*;

pub(crate) fn pct(h: &Histogram<u64>) -> Value {
    let ms = |us: u64| us as f64 / 1000.0;
    if h.is_empty() {
        return Value::Null;
    }
    json!({
        "count": h.len(),
        "p50_ms": ms(h.value_at_quantile(0.5)), "p90_ms": ms(h.value_at_quantile(0.9)),
        "p99_ms": ms(h.value_at_quantile(0.99)), "p999_ms": ms(h.value_at_quantile(0.999)), "max_ms": ms(h.max()),
    })
}

/// One printed row: rate and latency percentiles (ms) of one kind of request.
pub(crate) fn row(label: &str, kind: &str, rate: f64, h: &Histogram<u64>) -> String {
    let q = |x: f64| h.value_at_quantile(x) as f64 / 1000.0;
    format!(
        "{label:<15} {rate:>9.0} {kind:<9} p50 {:>7.3} ms  p90 {:>7.3}  p99 {:>7.3}  p99.9 {:>7.3}  max {:>8.3}",
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        h.max() as f64 / 1000.0
    )
}

pub(crate) fn line(r: &PhaseResult) -> String {
    let t = &r.tally;
    if let (Mode::Fanout { .. }, Some((h, n))) = (r.mode, &r.feed) {
        return row(&r.name, "frames/s", *n as f64 / r.seconds, h);
    }
    if let Mode::Sync { bytes } = r.mode {
        let mut s = row(&r.name, "syncs/s", t.orders_done as f64 / r.seconds, &t.orders);
        if let Some(us) = cpu_us_per_request(r) {
            s += &format!("  cpu {us:.0} µs/sync");
        }
        return s + &format!("  ({bytes} bytes appended, then fdatasync)");
    }
    let mut s = row(&r.name, "orders/s", t.orders_done as f64 / r.seconds, &t.orders);
    if let Some(us) = cpu_us_per_request(r) {
        s += &format!("  cpu {us:.0} µs/req");
        if let Some(c) = client_cpu_us_per_request(r) {
            s += &format!(" ({c:.0} of them the load generator's)");
        }
    }
    if let Some(p) = idle_pct(r) {
        s += &format!("  idle {p:.1}%");
    }
    if let Some(p) = steal_pct(r) {
        s += &format!("  steal {p:.1}%");
    }
    if t.cancels_done > 0 {
        s += "\n";
        s += &row("", "cancels/s", t.cancels_done as f64 / r.seconds, &t.cancels);
    }
    if let Some(p) = &r.persister {
        s += &format!("\n{:<15} persister {:>7.0} groups/s", "", p.groups_per_s());
        if let Some((jobs, us)) = p.jobs_per_group().zip(p.write_us_per_group()) {
            s += &format!(" of {jobs:.2} commands, {us:.0} µs each: writing {:.0}% of the time", p.writing_pct());
        }
        if p.slow_syncs > 0 {
            let n = p.slow_syncs;
            s += &format!(
                "; {n} synced write{} of {} ms or more, {:.0} ms in all",
                if n == 1 { "" } else { "s" },
                SLOW_SYNC_MICROS / 1_000,
                p.slow_sync_s * 1e3
            );
        }
    }
    for (e, n) in &t.errors {
        s += &format!("\n{:<15} error x{n}: {e}", "");
    }
    if t.exhausted {
        s += &format!("\n{:<15} (corpus exhausted: raise --max-rate)", "");
    }
    if let Some((h, n)) = &r.feed {
        s += "\n";
        s += &row("", "frames/s", *n as f64 / r.seconds, h);
    }
    s
}

pub(crate) fn summary(args: &Args, results: &[PhaseResult]) -> Value {
    let rate = |n: &str| {
        results.iter().find(|r| r.name == n).map(|r| r.tally.orders_done as f64 / r.seconds).filter(|&x| x > 0.0)
    };
    let phases: Vec<Value> = results
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "mode": match r.mode { Mode::Closed => json!({"closed_loop": args.concurrency}),
                                       Mode::Open { rate } => json!({"open_loop_rate": rate}),
                                       Mode::Fanout { per_sec } => json!({"fanouts_per_s": per_sec}),
                                       Mode::Sync { bytes } => json!({"synced_append_bytes": bytes}) },
                "seconds": r.seconds,
                "orders_per_s": r.tally.orders_done as f64 / r.seconds,
                "cancels_per_s": r.tally.cancels_done as f64 / r.seconds,
                "order_latency": pct(&r.tally.orders),
                "cancel_latency": pct(&r.tally.cancels),
                "statuses": r.tally.statuses.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "errors": r.tally.errors,
                "corpus_exhausted": r.tally.exhausted,
                "cpu_s": r.cpu_s,
                "cpu_us_per_request": cpu_us_per_request(r),
                "client_cpu_us_per_request": client_cpu_us_per_request(r),
                "steal_s": r.machine.map(|m| m.steal_s),
                "steal_pct": steal_pct(r),
                "idle_pct": idle_pct(r),
                "iowait_pct": machine_pct(r, |m| m.iowait_s),
                "persister": r.persister.map(|p| json!({
                    "groups_per_s": p.groups_per_s(), "commands_per_group": p.jobs_per_group(),
                    "write_us_per_group": p.write_us_per_group(), "writing_pct": p.writing_pct(),
                    "slow_syncs": p.slow_syncs, "slow_sync_s": p.slow_sync_s,
                })),
                "feed": r.feed.as_ref().map(|(h, n)| json!({
                    "subscribers": args.subscribers, "frames": n, "frames_per_s": *n as f64 / r.seconds,
                    "delivery_latency": pct(h),
                })),
            })
        })
        .collect();
    let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| (a / b * 1000.0).round() / 1000.0);
    let cpu = |n: &str| results.iter().find(|r| r.name == n).and_then(cpu_us_per_request);
    // Feed delivery p99 (ms): predex's (its last phase with subscribers) and the bare fan-out's.
    let feed_p99 = |fanout: bool| {
        results
            .iter()
            .rev()
            .filter(|r| matches!(r.mode, Mode::Fanout { .. }) == fanout)
            .find_map(|r| r.feed.as_ref())
            .filter(|(h, _)| !h.is_empty())
            .map(|(h, _)| h.value_at_quantile(0.99) as f64 / 1000.0)
    };
    // Mean µs of a group's synced write in the open loop, and of a bare synced append.
    let open_write_us =
        results.iter().find(|r| r.name == "predex-open").and_then(|r| r.persister?.write_us_per_group());
    let bare_sync_us = results
        .iter()
        .find(|r| matches!(r.mode, Mode::Sync { .. }))
        .filter(|r| !r.tally.orders.is_empty())
        .map(|r| r.tally.orders.mean());
    json!({
        "machine": { "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0) },
        "args": { "keys": args.keys, "markets": args.markets, "concurrency": args.concurrency, "rate": args.rate,
                  "duration_s": args.duration, "warmup_s": args.warmup, "cross_pct": args.cross_pct,
                  "cancel_pct": args.cancel_pct, "subscribers": args.subscribers,
                  "in_process_server": args.clob.is_none() },
        "phases": phases,
        "ratios": {
            "predex_over_crypto_ceiling": ratio(rate("predex-orders"), rate("ceiling-crypto")),
            "predex_over_parse_ceiling": ratio(rate("predex-orders"), rate("ceiling-parse")),
            "crypto_over_parse_ceiling": ratio(rate("ceiling-crypto"), rate("ceiling-parse")),
            // The same comparison by CPU spent per request (the ceiling's over predex's).
            "crypto_ceiling_cpu_over_predex_cpu": ratio(cpu("ceiling-crypto"), cpu("predex-orders")),
            "feed_p99_over_fanout_ceiling_p99": ratio(feed_p99(false), feed_p99(true)),
            // The open loop's groups (one or two commands) against one bare synced append.
            "open_group_write_over_bare_sync": ratio(open_write_us, bare_sync_us),
        },
    })
}

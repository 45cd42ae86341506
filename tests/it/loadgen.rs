//! predex-loadgen end to end, tiny: every phase runs against a real in-process server and
//! the ceilings (the sync and fan-out ones included), every predex request succeeds, and the JSON
//! summary carries the figures.

use std::process::Command;

use serde_json::Value;

#[test]
fn loadgen_runs_every_phase_and_writes_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.json");
    let status = Command::new(env!("CARGO_BIN_EXE_predex-loadgen"))
        // A corpus for 40,000 orders/s: four connections reached 6,800/s on a quiet 2-core
        // VM, and a faster machine must not run the closed loop out of signed orders.
        .args(["--keys", "2", "--markets", "2", "--concurrency", "4", "--rate", "200", "--max-rate", "40000"])
        .args(["--duration", "1", "--warmup", "0.3", "--subscribers", "3", "--out"])
        .arg(&out)
        .env("TMPDIR", dir.path())
        .status()
        .expect("run predex-loadgen");
    assert!(status.success());
    let s: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let phases = s["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["ceiling-parse", "ceiling-crypto", "ceiling-sync", "predex-orders", "predex-open", "ceiling-fanout"]
    );
    for p in phases[..2].iter().chain(&phases[3..5]) {
        assert_eq!(p["corpus_exhausted"], false, "{p}");
        assert!(p["orders_per_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["order_latency"]["p99_ms"].as_f64().unwrap() > 0.0, "{p}");
        // The machine's steal time over the window is read beside the latencies.
        assert!(p["steal_pct"].as_f64().unwrap() >= 0.0, "{p}");
        // The load generator's own share of the CPU is told apart from the server's.
        let (cpu, client) =
            (p["cpu_us_per_request"].as_f64().unwrap(), p["client_cpu_us_per_request"].as_f64().unwrap());
        assert!((0.0..=cpu).contains(&client), "{p}");
        // Only 200s: every order is valid, every cancel names an acknowledged order.
        let statuses = p["statuses"].as_object().unwrap();
        assert_eq!(statuses.keys().collect::<Vec<_>>(), ["200"], "{p}");
    }
    // The predex phases read the persister's group commits over their window: every
    // acknowledged request was in one; the ceilings have no persister.
    for p in &phases[3..5] {
        let w = &p["persister"];
        assert!(w["groups_per_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(w["commands_per_group"].as_f64().unwrap() >= 1.0, "{p}");
        assert!(w["write_us_per_group"].as_f64().unwrap() > 0.0, "{p}");
        assert!(w["writing_pct"].as_f64().unwrap() > 0.0, "{p}");
    }
    for p in [&phases[0], &phases[1], &phases[2], &phases[5]] {
        assert_eq!(p["persister"], Value::Null, "{p}");
    }
    // In the closed loops both sides are busy: each has a share.
    for p in [&phases[0], &phases[1], &phases[3]] {
        let (cpu, client) =
            (p["cpu_us_per_request"].as_f64().unwrap(), p["client_cpu_us_per_request"].as_f64().unwrap());
        assert!(client > 0.0 && client < cpu, "{p}");
    }
    // The disk's own synced appends were timed, with no requests and no feed.
    let sync = &phases[2];
    assert_eq!(sync["mode"]["synced_append_bytes"], 512, "{sync}");
    assert!(sync["orders_per_s"].as_f64().unwrap() > 0.0, "{sync}");
    assert!(sync["order_latency"]["p50_ms"].as_f64().unwrap() > 0.0, "{sync}");
    assert_eq!(sync["feed"], Value::Null, "{sync}");
    assert!(s["ratios"]["open_group_write_over_bare_sync"].as_f64().unwrap() > 0.0, "{s}");
    // The feed subscribers heard the first market's changes during both predex phases.
    for p in &phases[3..] {
        assert_eq!(p["feed"]["subscribers"], 3, "{p}");
        assert!(p["feed"]["frames"].as_u64().unwrap() > 0, "{p}");
        assert!(p["feed"]["delivery_latency"]["p50_ms"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_eq!(phases[0]["feed"], Value::Null);
    let open = &phases[4];
    assert!(open["cancels_per_s"].as_f64().unwrap() > 0.0, "{open}");
    assert!(s["ratios"]["predex_over_crypto_ceiling"].as_f64().unwrap() > 0.0);
    // The bare fan-out sent frames at predex's feed rate to as many subscribers, who
    // measured them, so the feed has a ratio to the machine's floor.
    let fanout = &phases[5];
    assert!(fanout["mode"]["fanouts_per_s"].as_f64().unwrap() > 0.0, "{fanout}");
    assert_eq!(fanout["orders_per_s"], 0.0, "{fanout}");
    assert!(s["ratios"]["feed_p99_over_fanout_ceiling_p99"].as_f64().unwrap() > 0.0, "{s}");
}

use super::*;

/// The open loop's schedule hands out every send time in order, one step apart, each
/// once it has come (never before: latency is counted from it), and ends with the phase.
#[test]
fn the_schedule_hands_out_each_send_time_once_it_has_come() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let start = Instant::now() + Duration::from_millis(5);
        let tickets = schedule(2_000, start, Duration::from_millis(30));
        let mut times = Vec::new();
        while let Some(at) = tickets.lock().await.next().await {
            assert!(Instant::now() >= at, "ticket {} handed out before its time", times.len());
            times.push(at);
        }
        let expected: Vec<Instant> = (0..60).map(|i| start + Duration::from_micros(500) * i).collect();
        assert_eq!(times, expected);
    });
}

#[test]
fn steal_idle_and_iowait_are_values_of_the_machine_line_and_shares_of_all_eight() {
    let stat = "cpu  424155 0 42491 111535 15634 0 3015 3221 7 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
    let ticks = |m: Option<MachineTime>| {
        m.map(|m| [m.total_s, m.steal_s, m.idle_s, m.iowait_s].map(|s| (s * USER_HZ).round() as u64))
    };
    // Guest time (the 9th value) is inside user already: not counted twice.
    assert_eq!(ticks(machine_ticks(stat)), Some([424155 + 42491 + 111535 + 15634 + 3015 + 3221, 3221, 111535, 15634]));
    // A kernel too old to report steal, or not the machine line first: no reading.
    assert!(machine_ticks("cpu  1 2 3 4 5 6 7\n").is_none());
    assert!(machine_ticks("cpu0 1 2 3 4 5 6 7 8 0 0\n").is_none());
    assert!(machine_ticks("cpu  1 2 3 4 x 6 7 8\n").is_none());
    // A window is the difference of two readings.
    let (a, b) = (machine_ticks("cpu  10 0 5 100 20 0 1 2\n"), machine_ticks("cpu  70 0 25 130 30 0 3 4\n"));
    assert_eq!(ticks(b.zip(a).map(|(b, a)| b.since(a))), Some([124, 2, 30, 10]));
    // The percentages are of the machine's time in the window, whatever the CPU count;
    // idle counts the time waiting on I/O too (nothing to run either way).
    let r = |total_s, steal_s, idle_s, iowait_s| PhaseResult {
        name: "p".into(),
        mode: Mode::Closed,
        seconds: 10.0,
        tally: Tally::new(),
        feed: None,
        cpu_s: None,
        client_cpu_s: None,
        machine: Some(MachineTime { total_s, steal_s, idle_s, iowait_s }),
        persister: None,
    };
    assert_eq!(steal_pct(&r(80.0, 4.0, 0.0, 0.0)), Some(5.0));
    assert_eq!(steal_pct(&r(20.0, 0.25, 0.0, 0.0)), Some(1.3));
    assert_eq!(idle_pct(&r(20.0, 0.25, 2.0, 0.5)), Some(12.5));
    assert_eq!(idle_pct(&r(20.0, 0.0, 0.0, 0.0)), Some(0.0));
    assert_eq!(steal_pct(&r(0.0, 0.0, 0.0, 0.0)), None);
    assert_eq!(idle_pct(&r(0.0, 0.0, 0.0, 0.0)), None);
}

#[test]
fn the_persister_reading_is_the_difference_of_two_counter_readings() {
    let m = |commits: u64, jobs: u64, micros: u64| {
        // One group in a thousand slow, 20 ms each.
        json!({"bytes": 0, "commits": commits, "inline_commits": 0, "jobs": jobs, "last_batch_jobs": 1,
               "last_sync_micros": 1, "sync_micros_total": micros,
               "slow_syncs": commits / 1_000, "slow_sync_micros_total": commits / 1_000 * 20_000,
               "process_cpu_s": micros as f64 / 400_000.0})
    };
    let p = PersisterReading::between(&m(1_000, 1_500, 400_000), &m(6_000, 11_500, 1_200_000), 2.0).unwrap();
    let want = PersisterReading {
        groups: 5_000,
        jobs: 10_000,
        writing_s: 0.8,
        slow_syncs: 5,
        slow_sync_s: 0.1,
        server_cpu_s: Some(2.0),
        seconds: 2.0,
    };
    assert_eq!(p, want);
    assert_eq!(p.groups_per_s(), 2_500.0);
    assert_eq!(p.jobs_per_group(), Some(2.0));
    assert_eq!(p.write_us_per_group(), Some(160.0));
    assert_eq!(p.writing_pct(), 40.0);
    // A window without a group: a rate of nothing, no per-group figures.
    let idle = PersisterReading::between(&m(7, 9, 100), &m(7, 9, 100), 1.0).unwrap();
    assert_eq!((idle.groups_per_s(), idle.jobs_per_group(), idle.write_us_per_group()), (0.0, None, None));
    // A server without /proc (or an older one): the reading stands, without its CPU.
    let no_cpu = |v: Value| {
        let mut v = v;
        v.as_object_mut().unwrap().remove("process_cpu_s");
        v
    };
    let p = PersisterReading::between(&no_cpu(m(1_000, 1_500, 400_000)), &m(6_000, 11_500, 1_200_000), 2.0);
    assert_eq!(p.map(|p| (p.groups, p.server_cpu_s)), Some((5_000, None)));
    // Counters that went back (a restarted server), a missing one, or no time: no reading.
    assert_eq!(PersisterReading::between(&m(8, 9, 100), &m(7, 9, 100), 1.0), None);
    assert_eq!(PersisterReading::between(&json!({}), &m(7, 9, 100), 1.0), None);
    assert_eq!(PersisterReading::between(&m(7, 9, 100), &m(8, 10, 200), 0.0), None);
}

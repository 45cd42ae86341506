//! One measured phase: its clients' connections and subscribers, and what the machine and the persister did meanwhile.

use super::*;

pub(crate) struct PhaseResult {
    pub(crate) name: String,
    pub(crate) mode: Mode,
    pub(crate) seconds: f64,
    pub(crate) tally: Tally,
    /// Feed delivery latency (µs) over the measured window, and the frames received.
    pub(crate) feed: Option<(Histogram<u64>, u64)>,
    /// CPU seconds the whole process (server, clients, subscribers) spent in the measured
    /// window, plus the server's own against a server in another process (`--clob`);
    /// `None` where /proc is not readable.
    pub(crate) cpu_s: Option<f64>,
    /// Of `cpu_s`, what the load generator's own threads spent (its clients and
    /// subscribers): the rest is the server's, or the ceiling's.
    pub(crate) client_cpu_s: Option<f64>,
    /// The machine's CPU seconds in the measured window (every CPU, busy or idle), and those
    /// the hypervisor took from its vCPUs (steal time); `None` where /proc/stat is not
    /// readable.
    pub(crate) machine: Option<MachineTime>,
    /// The persister's group commits over the measured window (predex phases only).
    pub(crate) persister: Option<PersisterReading>,
}

/// The persister's group commits between two readings of the internal server's counters
/// (`GET /internal/metrics`). At a fixed rate the open loop's tail follows how much of the
/// time the persister spends writing: near 100%, each request waits for the group being
/// synced before its own, and a slow sync holds every request that arrives meanwhile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PersisterReading {
    /// Groups written (each one synced RocksDB write).
    pub(crate) groups: u64,
    /// Commands those groups carried.
    pub(crate) jobs: u64,
    /// Time spent writing and syncing them.
    pub(crate) writing_s: f64,
    /// Of those groups, the ones whose synced write took [`SLOW_SYNC_MICROS`] or more, and
    /// their time: a disk that stalls now and then sets the open loop's tail alone,
    /// whatever predex does.
    pub(crate) slow_syncs: u64,
    pub(crate) slow_sync_s: f64,
    /// The server process's CPU seconds between the readings (None where it has no /proc):
    /// a phase against a server in another process adds them to its own.
    pub(crate) server_cpu_s: Option<f64>,
    /// Time between the two readings.
    pub(crate) seconds: f64,
}

impl PersisterReading {
    /// The difference of two `/internal/metrics` bodies read `seconds` apart; None when
    /// either lacks a counter or the counters went back (another server answered).
    pub(crate) fn between(before: &Value, after: &Value, seconds: f64) -> Option<PersisterReading> {
        let d = |f: &str| after[f].as_u64()?.checked_sub(before[f].as_u64()?);
        Some(PersisterReading {
            groups: d("commits")?,
            jobs: d("jobs")?,
            writing_s: d("sync_micros_total")? as f64 / 1e6,
            slow_syncs: d("slow_syncs")?,
            slow_sync_s: d("slow_sync_micros_total")? as f64 / 1e6,
            server_cpu_s: after["process_cpu_s"]
                .as_f64()
                .zip(before["process_cpu_s"].as_f64())
                .map(|(b, a)| b - a)
                .filter(|d| *d >= 0.0),
            seconds,
        })
        .filter(|_| seconds > 0.0)
    }

    pub(crate) fn groups_per_s(&self) -> f64 {
        self.groups as f64 / self.seconds
    }

    pub(crate) fn jobs_per_group(&self) -> Option<f64> {
        (self.groups > 0).then(|| self.jobs as f64 / self.groups as f64)
    }

    pub(crate) fn write_us_per_group(&self) -> Option<f64> {
        (self.groups > 0).then(|| self.writing_s * 1e6 / self.groups as f64)
    }

    /// Percent of the window spent writing groups.
    pub(crate) fn writing_pct(&self) -> f64 {
        self.writing_s * 100.0 / self.seconds
    }
}

/// Reads the persister's counters at the start and the end of a phase's measured window.
pub(crate) async fn persister_window(
    internal: predex::client::Operator,
    start: Instant,
    warm: Duration,
    end: Duration,
) -> Option<PersisterReading> {
    let read = || async {
        let (status, body) = internal.call("GET", "/internal/metrics", None).await;
        (status == 200).then_some((Instant::now(), body))
    };
    tokio::time::sleep_until((start + warm).into()).await;
    let before = read().await;
    tokio::time::sleep_until((start + end).into()).await;
    let ((t0, a), (t1, b)) = before.zip(read().await)?;
    PersisterReading::between(&a, &b, (t1 - t0).as_secs_f64())
}

/// CPU time of the whole machine, from /proc/stat's `cpu` line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MachineTime {
    /// Every state's time summed (user through steal): wall time × the CPUs the kernel
    /// counts, whatever this process's affinity mask allows.
    pub(crate) total_s: f64,
    pub(crate) steal_s: f64,
    /// Time with nothing to run: idle, and idle with I/O outstanding (iowait).
    pub(crate) idle_s: f64,
    pub(crate) iowait_s: f64,
}

impl MachineTime {
    /// The time between an earlier reading and this one.
    pub(crate) fn since(self, a: MachineTime) -> MachineTime {
        MachineTime {
            total_s: self.total_s - a.total_s,
            steal_s: self.steal_s - a.steal_s,
            idle_s: self.idle_s - a.idle_s,
            iowait_s: self.iowait_s - a.iowait_s,
        }
    }
}

/// The machine's CPU time so far. Steal is the time its vCPUs were runnable but the
/// hypervisor ran something else (the 8th value of /proc/stat's `cpu` line); on a shared VM
/// it comes in freezes of every vCPU at once, which no thread can schedule around, so a
/// phase's tail is read beside it.
pub(crate) fn machine_time() -> Option<MachineTime> {
    machine_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The machine's time from /proc/stat's machine line: the first eight values (user, nice,
/// system, idle, iowait, irq, softirq, steal), in ticks; guest time is already inside user
/// and nice.
pub(crate) fn machine_ticks(stat: &str) -> Option<MachineTime> {
    let cpu = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = cpu.split_whitespace().take(8).map(|t| t.parse().ok()).collect::<Option<_>>()?;
    let s = |ticks: u64| ticks as f64 / USER_HZ;
    (v.len() == 8).then(|| MachineTime {
        total_s: s(v.iter().sum()),
        steal_s: s(v[7]),
        idle_s: s(v[3]),
        iowait_s: s(v[4]),
    })
}

/// A share of all the machine's CPU time in a phase's window, in percent (one decimal).
pub(crate) fn machine_pct(r: &PhaseResult, part: impl Fn(&MachineTime) -> f64) -> Option<f64> {
    r.machine.filter(|m| m.total_s > 0.0).map(|m| (part(&m) * 1000.0 / m.total_s).round() / 10.0)
}

/// Steal time of a phase as a percentage of all the machine's CPU time in its window.
pub(crate) fn steal_pct(r: &PhaseResult) -> Option<f64> {
    machine_pct(r, |m| m.steal_s)
}

/// The machine's time with nothing to run (idle and iowait) in a phase's window, in
/// percent: what a closed loop leaves unused when its requests wait on something other
/// than the CPU (the persister's syncs, a hand-off), and a ceiling phase's reference.
pub(crate) fn idle_pct(r: &PhaseResult) -> Option<f64> {
    machine_pct(r, |m| m.idle_s + m.iowait_s)
}

/// CPU microseconds per request of a phase.
pub(crate) fn cpu_us_per_request(r: &PhaseResult) -> Option<f64> {
    per_request_us(r, r.cpu_s)
}

/// Of those, the load generator's own.
pub(crate) fn client_cpu_us_per_request(r: &PhaseResult) -> Option<f64> {
    per_request_us(r, r.client_cpu_s)
}

pub(crate) fn per_request_us(r: &PhaseResult, seconds: Option<f64>) -> Option<f64> {
    let n = r.tally.orders_done + r.tally.cancels_done;
    seconds.filter(|_| n > 0).map(|s| (s * 1e6 / n as f64).round())
}

pub(crate) type FeedConn = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A feed subscriber connected and subscribed to `token`, its snapshot received.
pub(crate) async fn subscribe(addr: SocketAddr, token: String) -> Option<FeedConn> {
    use futures_util::{SinkExt, StreamExt};
    // A small read buffer: tungstenite zero-fills all of it before every read.
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(8 * 1024);
    let url = format!("ws://{addr}/ws/market");
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true).await.ok()?;
    let sub = json!({ "assets_ids": [token], "type": "market" }).to_string();
    ws.send(tokio_tungstenite::tungstenite::Message::text(sub)).await.ok()?;
    match ws.next().await {
        Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) if t.contains("\"book\"") => Some(ws),
        _ => None,
    }
}

/// One feed subscriber: delivery latency of each frame received in the measured window.
pub(crate) async fn subscriber(mut ws: FeedConn, start: Instant, warm: Duration, end: Duration) -> Histogram<u64> {
    use futures_util::StreamExt;
    let mut h = Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds");
    let deadline = tokio::time::Instant::from_std(start + end);
    while let Ok(Some(Ok(m))) = tokio::time::timeout_at(deadline, ws.next()).await {
        let tokio_tungstenite::tungstenite::Message::Text(t) = m else { continue };
        let now = predex::domain::now_micros();
        // The first `published_us` of the frame, without parsing the whole JSON.
        let Some(i) = t.find("\"published_us\":") else { continue };
        let digits: String = t[i + 15..].chars().take_while(char::is_ascii_digit).collect();
        if let Ok(at) = digits.parse::<u64>() {
            if Instant::now() >= start + warm {
                h.saturating_record(now.saturating_sub(at).max(1));
            }
        }
    }
    h
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn phase(
    name: &str,
    feed_rt: &tokio::runtime::Handle,
    addr: SocketAddr,
    internal: Option<predex::client::Operator>,
    clients: Vec<Client>,
    mode: Mode,
    cancel_pct: u64,
    args: &Args,
) -> PhaseResult {
    // Subscribers connect and get their snapshots before the clock starts.
    let feeds: Vec<FeedConn> = if name.starts_with("predex") && args.subscribers > 0 {
        let tasks: Vec<_> = (0..args.subscribers).map(|_| feed_rt.spawn(subscribe(addr, token(0, true)))).collect();
        let mut conns = Vec::new();
        for t in tasks {
            conns.extend(t.await.expect("subscribe task"));
        }
        eprintln!("{} of {} subscribers connected", conns.len(), args.subscribers);
        conns
    } else {
        Vec::new()
    };
    let (start, warm, end) = phase_clock(args);
    let tickets = match mode {
        // Cancels are drawn from the same schedule, so it runs faster by their share.
        Mode::Open { rate } => Some(schedule(rate * 100 / (100 - cancel_pct.min(90)), start, end)),
        Mode::Closed | Mode::Fanout { .. } | Mode::Sync { .. } => None,
    };
    let subs: Vec<_> = feeds.into_iter().map(|ws| feed_rt.spawn(subscriber(ws, start, warm, end))).collect();
    let cpu = cpu_window(start, warm, end);
    let persister = internal.map(|a| tokio::spawn(persister_window(a, start, warm, end)));
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, cl)| {
            let seed = 0x5eed_0000 + i as u64 * 7919;
            tokio::spawn(connection(addr, cl, tickets.clone(), cancel_pct, start, warm, end, seed))
        })
        .collect();
    let mut tally = Tally::new();
    for t in tasks {
        tally.merge(t.await.expect("connection task"));
    }
    let feed = if subs.is_empty() {
        None
    } else {
        let mut h = Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds");
        for s in subs {
            h.add(s.await.expect("subscriber task")).expect("same bounds");
        }
        let n = h.len();
        Some((h, n))
    };
    let (cpu_s, client_cpu_s, machine) = cpu.join().expect("cpu window thread");
    let persister = match persister {
        Some(t) => t.await.expect("persister window task"),
        None => None,
    };
    // A server in another process: its CPU counts too, as it does in-process.
    let cpu_s = match (&args.clob, persister) {
        (Some(_), Some(p)) => cpu_s.zip(p.server_cpu_s).map(|(a, b)| a + b),
        _ => cpu_s,
    };
    let r = PhaseResult {
        name: name.to_string(),
        mode,
        seconds: args.duration,
        tally,
        feed,
        cpu_s,
        client_cpu_s,
        machine,
        persister,
    };
    eprintln!("{}", line(&r));
    r
}

/// A phase's clock: its start (a moment from now, once everything is set up) and, from
/// there, the end of the warm-up and of the measured window.
pub(crate) fn phase_clock(args: &Args) -> (Instant, Duration, Duration) {
    let start = Instant::now() + Duration::from_millis(50);
    (start, Duration::from_secs_f64(args.warmup), Duration::from_secs_f64(args.warmup + args.duration))
}

/// The load generator's own threads besides the main one (which drives the requests), by
/// name; every other thread of this process is a server's (predex in-process, or a
/// ceiling).
pub(crate) const CLIENT_THREADS: [&str; 2] = ["feed-client", "cpu-window"];

/// CPU seconds of this process's server threads so far (see [`CLIENT_THREADS`]). The main
/// thread is told by its id, not its name: a copy of the binary renamed to compare builds
/// side by side names it after the copy.
pub(crate) fn server_threads_cpu_s() -> Option<f64> {
    let main = std::process::id();
    threads_cpu_s(|tid, n| tid != main && !CLIENT_THREADS.contains(&n))
}

/// A phase's CPU: the process's seconds, the load generator's own share of them, and the
/// machine's time, over the measured window.
pub(crate) type CpuWindow = (Option<f64>, Option<f64>, Option<MachineTime>);

/// The process's CPU seconds (and the load generator's share) and the machine's CPU and
/// steal time between `start + warm` and `start + end`, read by a thread of its own so the
/// reading is on time whatever the runtimes are doing.
pub(crate) fn cpu_window(start: Instant, warm: Duration, end: Duration) -> std::thread::JoinHandle<CpuWindow> {
    named("cpu-window", move || {
        std::thread::sleep((start + warm).saturating_duration_since(Instant::now()));
        let (cpu, server, machine) = (process_cpu_s(), server_threads_cpu_s(), machine_time());
        std::thread::sleep((start + end).saturating_duration_since(Instant::now()));
        let cpu = cpu.zip(process_cpu_s()).map(|(a, b)| b - a);
        let server = server.zip(server_threads_cpu_s()).map(|(a, b)| b - a);
        let client = cpu.zip(server).map(|(c, s)| (c - s).max(0.0));
        let machine = machine.zip(machine_time()).map(|(a, b)| b.since(a));
        (cpu, client, machine)
    })
}

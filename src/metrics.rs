//! Operator metrics in the Prometheus text format (`GET /metrics` on the internal server).
//!
//! Counters and gauges are atomics, so the engine thread updates them without a lock;
//! histograms (a short lock each) are observed only by HTTP handlers and the persister.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Clock ticks per second of /proc's CPU times: 100 on every Linux ABI this runs on.
pub const USER_HZ: f64 = 100.0;

/// CPU seconds this process has used so far, every thread included (Linux).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessCpu {
    pub user_s: f64,
    pub system_s: f64,
}

impl ProcessCpu {
    /// User + system.
    pub fn total_s(&self) -> f64 {
        self.user_s + self.system_s
    }
}

/// This process's CPU time from `/proc/self/stat`; None where that file is missing or
/// unreadable. The benches and the load generator read it around what they measure.
pub fn process_cpu() -> Option<ProcessCpu> {
    parse_process_cpu(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// This process's CPU time, user + system, every thread: what a change costs or saves per
/// request even where the rate is fixed or the cores were not all busy.
pub fn process_cpu_s() -> Option<f64> {
    process_cpu().map(|c| c.total_s())
}

/// CPU seconds, user + system, of this process's live threads that `keep` accepts by id
/// and name (`/proc/self/task/*/stat`; a name is its thread's first 15 bytes, and the main
/// thread's is the executable's file name, whatever it was renamed to; its id is the
/// process's). A thread that has exited is in no task file any more, though its time
/// stays in [`process_cpu_s`]: take the threads that live throughout, and the rest as the
/// difference.
pub fn threads_cpu_s(keep: impl Fn(u32, &str) -> bool) -> Option<f64> {
    let mut total = 0.0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let task = task.ok()?;
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
        // A thread that exits between the listing and the read is skipped.
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let name = stat.get(stat.find('(')? + 1..stat.rfind(')')?)?;
        if keep(tid, name) {
            total += parse_process_cpu(&stat)?.total_s();
        }
    }
    Some(total)
}

fn parse_process_cpu(stat: &str) -> Option<ProcessCpu> {
    // The fields after the command name (which may hold spaces) start with the state, the
    // 3rd field of proc(5); utime and stime are the 14th and 15th.
    let f: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let secs = |i: usize| f.get(i)?.parse::<u64>().ok().map(|t| t as f64 / USER_HZ);
    Some(ProcessCpu { user_s: secs(11)?, system_s: secs(12)? })
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CommandLabels {
    pub command: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkerLabels {
    pub worker: &'static str,
}

fn latency() -> Histogram {
    // 50 µs to ~3.3 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
}

/// Every metric predex exports; clones share the same values.
pub struct Metrics {
    registry: Registry,
    /// Order-book server requests by route template and status.
    pub requests: Family<RouteLabels, Counter>,
    /// Order commands (place, cancel) from the handler's view: engine plus durable write.
    pub command_seconds: Family<CommandLabels, Histogram, fn() -> Histogram>,
    /// Fills the engine matched.
    pub matches: Counter,
    /// Trades settled, by result (confirmed, failed).
    pub settlements: Family<ResultLabels, Counter>,
    /// Worker runs, by worker.
    pub worker_runs: Family<WorkerLabels, Counter>,
    /// Orders a worker cancelled (GTD expiry, missed heartbeats).
    pub worker_cancels: Family<WorkerLabels, Counter>,
    /// Worker runs that panicked (the worker runs again next interval).
    pub worker_panics: Family<WorkerLabels, Counter>,
    /// Open orders (LIVE and DEFERRED) and markets with a book.
    pub open_orders: Gauge,
    pub books: Gauge,
    /// Trades waiting for settlement, and when the oldest of them matched (UNIX seconds; 0
    /// with none): its age is the settlement backlog's.
    pub pending_trades: Gauge,
    pub pending_oldest: Gauge,
    /// Persister: jobs per group commit, seconds per synced write, bytes written (the
    /// WAL's growth), and the groups its preparing thread wrote itself (no queue behind
    /// them, the writer idle).
    pub batch_jobs: Histogram,
    pub sync_seconds: Histogram,
    pub write_bytes: Counter,
    pub inline_groups: Counter,
    /// Open WebSocket connections, and those cut off because their queue was full.
    pub ws_connections: Gauge,
    pub ws_too_slow: Counter,
    /// The event stream (`app::events`): events its server acknowledged, events durable
    /// and not yet acknowledged, and whether it is connected (1) or not (0).
    pub events_published: Counter,
    pub events_lag: Gauge,
    pub events_connected: Gauge,
    /// Chain mode: whether settlement waits because the operator cannot pay for gas (1).
    pub chain_out_of_gas: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("predex");
        let m = Metrics {
            requests: Family::default(),
            command_seconds: Family::new_with_constructor(latency as fn() -> Histogram),
            matches: Counter::default(),
            settlements: Family::default(),
            worker_runs: Family::default(),
            worker_cancels: Family::default(),
            worker_panics: Family::default(),
            open_orders: Gauge::default(),
            books: Gauge::default(),
            pending_trades: Gauge::default(),
            pending_oldest: Gauge::default(),
            batch_jobs: Histogram::new(exponential_buckets(1.0, 2.0, 13)),
            sync_seconds: latency(),
            write_bytes: Counter::default(),
            inline_groups: Counter::default(),
            ws_connections: Gauge::default(),
            ws_too_slow: Counter::default(),
            events_published: Counter::default(),
            events_lag: Gauge::default(),
            events_connected: Gauge::default(),
            chain_out_of_gas: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register("http_requests", "Order-book server requests by route and status", m.requests.clone());
        registry.register(
            "order_command_seconds",
            "Order commands from request to durable reply",
            m.command_seconds.clone(),
        );
        registry.register("matches", "Fills matched by the engine", m.matches.clone());
        registry.register("settlements", "Trades settled, by result", m.settlements.clone());
        registry.register("worker_runs", "Background worker runs", m.worker_runs.clone());
        registry.register("worker_cancels", "Orders cancelled by a worker", m.worker_cancels.clone());
        registry.register("worker_panics", "Background worker runs that panicked", m.worker_panics.clone());
        registry.register("open_orders", "Open orders (LIVE and DEFERRED)", m.open_orders.clone());
        registry.register("books", "Markets with an order book", m.books.clone());
        registry.register("pending_trades", "Trades matched and not yet settled", m.pending_trades.clone());
        registry.register(
            "pending_oldest_match_timestamp_seconds",
            "When the oldest trade not yet settled matched (UNIX seconds; 0 with none)",
            m.pending_oldest.clone(),
        );
        registry.register("persister_batch_jobs", "Commands per group commit", m.batch_jobs.clone());
        registry.register("persister_sync_seconds", "Synced RocksDB write per group commit", m.sync_seconds.clone());
        registry.register("persister_write_bytes", "Bytes of the synced RocksDB writes", m.write_bytes.clone());
        registry.register(
            "persister_inline_groups",
            "Group commits written by the preparing thread (nothing queued, writer idle)",
            m.inline_groups.clone(),
        );
        registry.register("ws_connections", "Open WebSocket connections", m.ws_connections.clone());
        registry.register(
            "ws_too_slow",
            "WebSocket connections closed because their queue was full",
            m.ws_too_slow.clone(),
        );
        registry.register("events_published", "Events the stream's server acknowledged", m.events_published.clone());
        registry.register("events_lag", "Events durable, not yet in the stream", m.events_lag.clone());
        registry.register("events_connected", "Event stream connected (1) or not (0)", m.events_connected.clone());
        registry.register(
            "chain_out_of_gas",
            "Chain mode: settlement waits because the operator cannot pay for gas (1) or not (0)",
            m.chain_out_of_gas.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).expect("writing to a String");
        out
    }

    pub fn settled(&self, confirmed: usize, failed: usize) {
        self.settlements.get_or_create(&ResultLabels { result: "confirmed" }).inc_by(confirmed as u64);
        self.settlements.get_or_create(&ResultLabels { result: "failed" }).inc_by(failed as u64);
    }

    pub fn worker_ran(&self, worker: &'static str) {
        self.worker_runs.get_or_create(&WorkerLabels { worker }).inc();
    }

    pub fn worker_cancelled(&self, worker: &'static str, n: usize) {
        self.worker_cancels.get_or_create(&WorkerLabels { worker }).inc_by(n as u64);
    }

    pub fn worker_panicked(&self, worker: &'static str) {
        self.worker_panics.get_or_create(&WorkerLabels { worker }).inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::new();
        m.requests.get_or_create(&RouteLabels { route: "/order".into(), status: 200 }).inc();
        m.requests.get_or_create(&RouteLabels { route: "unmatched".into(), status: 404 }).inc();
        m.command_seconds.get_or_create(&CommandLabels { command: "place" }).observe(0.0007);
        m.settled(3, 1);
        m.open_orders.set(7);
        let text = m.render();
        assert!(text.contains(r#"predex_http_requests_total{route="/order",status="200"} 1"#), "{text}");
        assert!(text.contains(r#"predex_http_requests_total{route="unmatched",status="404"} 1"#), "{text}");
        assert!(text.contains(r#"predex_order_command_seconds_count{command="place"} 1"#), "{text}");
        assert!(text.contains(r#"predex_settlements_total{result="failed"} 1"#), "{text}");
        assert!(text.contains("predex_open_orders 7"), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    /// utime and stime are found after the last ')', whatever the command name holds.
    #[test]
    fn process_cpu_reads_utime_and_stime_past_the_command_name() {
        let stat = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 37 0 0 20 0 9 0 100 0 0";
        assert_eq!(parse_process_cpu(stat), Some(ProcessCpu { user_s: 2.5, system_s: 0.37 }));
        assert_eq!(parse_process_cpu("4242 (x) S 1 2"), None);
        assert!(process_cpu().is_some(), "this process's own /proc/self/stat");
    }

    /// A live thread's CPU is found under its name, and under no other; the main thread is
    /// offered under the process's id.
    #[test]
    fn threads_cpu_is_counted_by_thread_name() {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let (burnt, done) = std::sync::mpsc::channel::<()>();
        let t = std::thread::Builder::new()
            .name("cpu-test-burner".into())
            .spawn(move || {
                // 0.3 s of wall time spinning: well over the 0.03 s of CPU asserted, even on
                // two cores shared with the rest of the suite.
                let start = std::time::Instant::now();
                while start.elapsed() < std::time::Duration::from_millis(300) {
                    std::hint::spin_loop();
                }
                burnt.send(()).unwrap();
                let _ = stopped.recv();
            })
            .unwrap();
        done.recv().unwrap();
        let burner = threads_cpu_s(|_, n| n == "cpu-test-burner").unwrap();
        assert!(burner > 0.03, "{burner}");
        assert_eq!(threads_cpu_s(|_, n| n == "no-such-thread"), Some(0.0));
        let pid = std::process::id();
        let ids = std::cell::RefCell::new(Vec::new());
        let all = threads_cpu_s(|tid, _| {
            ids.borrow_mut().push(tid);
            true
        })
        .unwrap();
        let ids = ids.into_inner();
        assert!(ids.contains(&pid) && ids.len() >= 2, "{ids:?}");
        assert!(all >= burner && all <= process_cpu_s().unwrap() + 0.02, "{all}");
        stop.send(()).unwrap();
        t.join().unwrap();
    }
}

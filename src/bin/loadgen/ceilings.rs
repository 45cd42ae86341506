//! The machine's ceilings: a bare parse and crypto endpoint, one durable write, and a bare feed fan-out.

use super::*;

/// A predex server in this process, on its own runtime and a fresh data directory.
pub(crate) struct LocalServer {
    pub(crate) clob: SocketAddr,
    pub(crate) internal: predex::client::Operator,
    pub(crate) stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
    pub(crate) dir: PathBuf,
}

/// A predex of this process: its data in `dir`, every server on a free loopback port, no
/// demo catalogue.
pub(crate) fn local_config(dir: PathBuf) -> anyhow::Result<Config> {
    Ok(Config {
        data_dir: dir,
        clob_addr: "127.0.0.1:0".parse()?,
        catalogue_addr: "127.0.0.1:0".parse()?,
        analytics_addr: "127.0.0.1:0".parse()?,
        bridge_addr: "127.0.0.1:0".parse()?,
        internal_addr: "127.0.0.1:0".parse()?,
        catalogue: PathBuf::from("/nonexistent"),
        // One client IP sends everything: the limiter runs, but never refuses.
        rate_limit_max: u32::MAX,
        ..Config::default()
    })
}

impl LocalServer {
    pub(crate) fn start(args: &Args) -> anyhow::Result<LocalServer> {
        let dir = std::env::temp_dir().join(format!("predex-loadgen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config =
            Config { ws_threads: args.ws_threads, wal_logs_ahead: args.wal_logs_ahead, ..local_config(dir.clone())? };
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = named("server", move || {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                match predex::App::start(config).await {
                    Ok(app) => {
                        let _ = tx.send(Ok(app.bound));
                        let _ = stop_rx.await;
                        app.shutdown().await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            });
        });
        let bound = rx.recv()??;
        let token = predex::keyfile::default_token_path(&dir);
        let internal = predex::client::Operator::from_file(bound.internal, &token)?;
        Ok(LocalServer { clob: bound.clob, internal, stop: Some(stop), thread: Some(thread), dir })
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The two ceiling servers, on their own runtime (as predex's is).
/// Size of the ceiling's frames: about a one-level `price_change` of predex.
pub(crate) const FANOUT_FRAME: usize = 350;

/// The fan-out ceiling: `n` subscribers connect exactly as to predex (WebSocket handshake,
/// subscription, a `book` reply), then one OS thread writes one pre-encoded text frame
/// stamped with `published_us` to every socket in turn, `per_sec` times a second — no
/// tasks, queues or per-connection encoding, one blocking write per subscriber. What the
/// subscribers measure is the floor a feed server has on this machine: the kernel's
/// loopback sends and the subscribers' own reading.
pub(crate) fn fanout_ceiling(
    feed_rt: &tokio::runtime::Handle,
    args: &Args,
    per_sec: f64,
) -> anyhow::Result<PhaseResult> {
    use futures_util::{SinkExt, StreamExt};
    let n = args.subscribers;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let accept = named("ws-accept", move || -> anyhow::Result<Vec<std::net::TcpStream>> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(listener)?;
            let mut socks = Vec::with_capacity(n);
            while socks.len() < n {
                let (tcp, _) = l.accept().await?;
                tcp.set_nodelay(true)?;
                let mut ws = tokio_tungstenite::accept_async(tcp).await?;
                let _subscription = ws.next().await;
                ws.send(tokio_tungstenite::tungstenite::Message::text(r#"{"event_type":"book"}"#)).await?;
                let tcp = ws.into_inner().into_std()?;
                tcp.set_nonblocking(false)?;
                socks.push(tcp);
            }
            Ok(socks)
        })
    });
    let conns: Vec<FeedConn> = feed_rt.block_on(async {
        let tasks: Vec<_> = (0..n).map(|_| tokio::spawn(subscribe(addr, String::new()))).collect();
        let mut conns = Vec::with_capacity(n);
        for t in tasks {
            conns.extend(t.await.expect("subscribe task"));
        }
        conns
    });
    let mut socks = accept.join().expect("accept thread")?;
    eprintln!("{} of {n} subscribers connected to the bare fan-out", conns.len());
    let (start, warm, end) = phase_clock(args);
    let subs: Vec<_> = conns.into_iter().map(|ws| feed_rt.spawn(subscriber(ws, start, warm, end))).collect();
    // One writer per core the machine has, each over its share of the sockets.
    let writers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(socks.len().max(1));
    let share = socks.len().div_ceil(writers).max(1);
    let mut handles = Vec::new();
    while !socks.is_empty() {
        let mut mine: Vec<std::net::TcpStream> = socks.drain(..share.min(socks.len())).collect();
        handles.push(std::thread::Builder::new().name("fanout".into()).spawn(move || {
            write_frames(&mut mine, start, end, per_sec);
            mine
        })?);
    }
    let mut h = Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds");
    for s in subs {
        h.add(feed_rt.block_on(s).expect("subscriber task")).expect("same bounds");
    }
    for w in handles {
        drop(w.join().expect("fan-out writer"));
    }
    let frames = h.len();
    let r = PhaseResult {
        name: "ceiling-fanout".into(),
        mode: Mode::Fanout { per_sec },
        seconds: args.duration,
        tally: Tally::new(),
        feed: Some((h, frames)),
        cpu_s: None,
        client_cpu_s: None,
        machine: None,
        persister: None,
    };
    eprintln!("{}", line(&r));
    Ok(r)
}

/// One fan-out writer: a frame stamped with the time, `per_sec` times a second from `start`
/// to `start + end`, written to each socket in turn; a socket that fails is dropped.
fn write_frames(socks: &mut Vec<std::net::TcpStream>, start: Instant, end: Duration, per_sec: f64) {
    use std::io::Write;
    let every = Duration::from_secs_f64(1.0 / per_sec.max(0.1));
    let mut next = start;
    while next < start + end {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let now = predex::domain::now_micros();
        let head = format!(r#"{{"event_type":"price_change","published_us":{now},"pad":""#);
        let payload = format!("{head}{}\"}}", "x".repeat(FANOUT_FRAME - head.len() - 2));
        // An unmasked server text frame with a 16-bit length.
        let mut frame = vec![0x81, 126];
        frame.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        frame.extend_from_slice(payload.as_bytes());
        socks.retain_mut(|s| s.write_all(&frame).is_ok());
        next += every;
    }
}

/// Bytes of each synced append of the sync ceiling: about one command's share of a group
/// (≈ 430 bytes of WriteBatch a command in the closed loop) — what a group of one or two,
/// the open loop's, writes to RocksDB's log.
pub(crate) const SYNC_BYTES: usize = 512;

/// The sync ceiling: one thread appends [`SYNC_BYTES`] to a new file and `fdatasync`s it,
/// over and over for the phase, timing each write and sync together — what a fresh store's
/// log does once per group commit, with nothing else in it. In the temporary directory,
/// where the in-process server keeps its store (against `--clob`, point `TMPDIR` at the
/// server's disk). A recycled RocksDB log is overwritten in place instead, which skips the
/// file's size and block map; RocksDB recycles only logs retired in the
/// same run, so appending is what a fresh store does, and any store after a start until its
/// first logs retire.
pub(crate) fn sync_ceiling(args: &Args) -> anyhow::Result<PhaseResult> {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("predex-loadgen-sync-{}", std::process::id()));
    let mut file = std::fs::File::create(&path).with_context(|| format!("create {}", path.display()))?;
    let (start, warm, end) = phase_clock(args);
    let cpu = cpu_window(start, warm, end);
    let mut tally = Tally::new();
    let record = [b'x'; SYNC_BYTES];
    std::thread::sleep(start.saturating_duration_since(Instant::now()));
    let written = loop {
        let t = Instant::now();
        if t >= start + end {
            break Ok(());
        }
        if let Err(e) = file.write_all(&record).and_then(|()| file.sync_data()) {
            break Err(e);
        }
        let done = Instant::now();
        if t >= start + warm && done <= start + end {
            tally.orders.saturating_record(done.duration_since(t).as_micros().max(1) as u64);
            tally.orders_done += 1;
        }
    };
    drop(file);
    let _ = std::fs::remove_file(&path);
    written.with_context(|| format!("synced append to {}", path.display()))?;
    let (cpu_s, client_cpu_s, machine) = cpu.join().expect("cpu window thread");
    let r = PhaseResult {
        name: "ceiling-sync".into(),
        mode: Mode::Sync { bytes: SYNC_BYTES },
        seconds: args.duration,
        tally,
        feed: None,
        cpu_s,
        client_cpu_s,
        machine,
        persister: None,
    };
    eprintln!("{}", line(&r));
    Ok(r)
}

pub(crate) fn ceilings(
    keys: &[Arc<Key>],
    domains: &OrderDomains,
) -> anyhow::Result<(SocketAddr, SocketAddr, watch::Sender<bool>)> {
    let secrets: HashMap<String, KeySecret> = keys
        .iter()
        .map(|k| (k.key.clone(), KeySecret { secret: k.secret.clone(), address: k.address.clone() }))
        .collect();
    let domain = domains.standard.clone();
    let (stop, rx) = watch::channel(false);
    let (tx, ready) = std::sync::mpsc::channel();
    named("ceiling", move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .thread_name("ceiling-worker")
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let bind = || async {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                let a = l.local_addr().expect("addr");
                (l, a)
            };
            let (pl, pa) = bind().await;
            let (cl, ca) = bind().await;
            // Bodies read within the budget `predex serve` gives a server by default; one
            // client IP sends everything, as to the local predex (whose loopback is a
            // trusted proxy, so its connections are not counted either).
            let server = || predex::api::connections::Server {
                bodies: predex::api::body::Bodies::new(predex::config::Config::default().body_bytes_in_flight),
                clients: None,
                role: predex::api::connections::Role::Unlimited,
            };
            let parse = ceiling::routes(Ceiling::Parse, secrets.clone(), domain.clone());
            let p = predex::serve(pl, parse, server(), rx.clone());
            let c = predex::serve(cl, ceiling::routes(Ceiling::Crypto, secrets, domain), server(), rx.clone());
            tx.send((pa, ca)).expect("report");
            let _ = tokio::join!(p, c);
        });
    });
    let (pa, ca) = ready.recv()?;
    Ok((pa, ca, stop))
}

//! The HTTP servers' connection loop, and the order-book server's dispatch: the trading routes
//! ([`Trading`]) dispatched on method and path before warp's filter tree.
//!
//! What a client can hold is bounded here, before any route sees a request ([`Server`]):
//! its connections per IP ([`super::clients`]), the time its request head may take
//! ([`HEAD_DEADLINE`], also how long a keep-alive connection may idle), its requests per
//! window (the rate limit, counted before the body is read, so a refused request costs no
//! body), and its body, read whole within the size limit and the server's budget of bodies
//! in flight ([`super::body`]). Each connection's stream gives hyper's own parse-error
//! answers a JSON body ([`super::plain_errors`]).
//!
//! warp routes a request by trying its filters in turn: `POST /order` would go through
//! about 35 routes that reject it, header copies and a chain of nested futures polled again
//! on every wake-up. The dispatch takes the request apart itself (its headers moved, not
//! copied), applies the rate limit and request counter, and calls the handler. Every other
//! request, and a trading path with another method, goes to the filter tree, which still
//! holds the trading routes, so the dispatch changes no reply: the integration tests' trading
//! requests all pass through it.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use warp::http::{Method, Request};
use warp::reply::Response;
use warp::Reply;

use super::body::{self, Bodies};
use super::clients::{self, Client, Clients, Counted};
use super::orders::Trading;
use super::plain_errors::JsonErrors;
use super::{count_request, respond, route_label, too_many, ApiError, Req};
use crate::app::AppState;

/// The connection's remote address, in each request's extensions (what the rate limit
/// counts when no trusted proxy names the client).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// How long a request head may take to arrive, and a connection may sit idle between
/// requests, before the connection is closed.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);

/// One server's limits and role.
#[derive(Clone)]
pub struct Server {
    /// Its budget of request bodies in flight ([`super::body`]), its own.
    pub bodies: Arc<Bodies>,
    /// Its clients counted by IP ([`super::clients`]); None on the operator's loopback
    /// server, which answers the operator only.
    pub clients: Option<Arc<Clients>>,
    pub role: Role,
}

/// Which of a server's requests count against the rate limit, checked before a body is read.
#[derive(Clone)]
pub enum Role {
    /// The order-book server: every request but the health probe and the OpenAPI document
    /// (SPEC §8); its trading routes bypass the filter tree and its requests are counted in
    /// the metrics.
    OrderBook(Arc<AppState>),
    /// A public server whose writes (every method but GET and HEAD) count against the
    /// order-book server's limit: what a stranger can make it store costs them requests.
    WritesLimited(Arc<AppState>),
    /// Nothing counted.
    Unlimited,
}

impl Role {
    /// The state whose limiter counts a request of `method` to `path`, if it is counted.
    fn limiter(&self, method: &Method, path: &str) -> Option<&AppState> {
        match self {
            Role::OrderBook(s) => {
                let probe = *method == Method::GET && matches!(path, "/" | "/ok" | "/openapi.json");
                (!probe).then_some(&**s)
            }
            Role::WritesLimited(s) => (*method != Method::GET && *method != Method::HEAD).then_some(&**s),
            Role::Unlimited => None,
        }
    }

    fn order_book(&self) -> Option<&Arc<AppState>> {
        match self {
            Role::OrderBook(s) => Some(s),
            _ => None,
        }
    }
}

/// Serves `routes` on `listener` until `stop` turns true, then lets open connections
/// finish. A request head must arrive within [`HEAD_DEADLINE`], and a keep-alive connection
/// idle that long is closed; a client IP over its connection cap is answered 429 and closed.
pub fn serve<F>(
    listener: tokio::net::TcpListener,
    routes: F,
    server: Server,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()>
where
    F: warp::Filter + Clone + Send + Sync + 'static,
    F::Extract: warp::Reply,
{
    let tree = TowerToHyperService::new(warp::service(routes));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEAD_DEADLINE);
    builder.http2().timer(TokioTimer::new());
    let builder = Arc::new(builder);
    tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = stop.wait_for(|s| *s) => break,
            };
            let (stream, addr) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            };
            let place = match &server.clients {
                Some(c) => match c.admit(addr.ip()) {
                    Some(p) => p,
                    None => {
                        too_many_connections(stream);
                        continue;
                    }
                },
                None => clients::Place::uncounted(),
            };
            let conn = Conn { server: server.clone(), client: place.client().cloned(), peer: Peer(addr) };
            let dispatch = Dispatch { tree: tree.clone(), conn };
            let watcher = graceful.watcher();
            let builder = builder.clone();
            tokio::spawn(async move {
                let io = TokioIo::new(JsonErrors::new(Counted::new(stream, place)));
                let conn = builder.serve_connection_with_upgrades(io, dispatch);
                if let Err(e) = watcher.watch(conn).await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            });
        }
        drop(listener);
        graceful.shutdown().await;
    })
}

/// Answers a connection over its IP's cap 429 and closes it. What the client sent is read
/// and dropped for a moment first (a socket closed with unread bytes is reset, and a reset
/// can discard the answer before the client reads it); then the connection is gone.
fn too_many_connections(mut stream: tokio::net::TcpStream) {
    const BODY: &str = r#"{"error":"too many connections from this address"}"#;
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let reply = format!(
            "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
            BODY.len()
        );
        let answer = async {
            stream.write_all(reply.as_bytes()).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            let mut left = 64usize << 10;
            while left > 0 {
                let n = stream.read(&mut sink).await?;
                if n == 0 {
                    break;
                }
                left = left.saturating_sub(n);
            }
            std::io::Result::Ok(())
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), answer).await;
    });
}

/// A failed accept: a connection reset before it was taken is nothing; anything else
/// (out of file descriptors) is logged and retried after a pause, as hyper's server did.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset) {
        return;
    }
    tracing::error!(error = %e, "accept failed");
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
}

/// One connection's service.
#[derive(Clone)]
struct Dispatch<T> {
    tree: T,
    conn: Conn,
}

/// One connection: its server, and who is at the other end.
#[derive(Clone)]
struct Conn {
    server: Server,
    /// The connection's client, when its IP is counted.
    client: Option<Arc<Client>>,
    peer: Peer,
}

type Replying = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<T> Service<Request<Incoming>> for Dispatch<T>
where
    T: Service<Request<Full<Bytes>>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    T::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Replying;

    fn call(&self, req: Request<Incoming>) -> Replying {
        if let Some(s) = self.conn.server.role.order_book() {
            if let Some(t) = Trading::of(req.method(), req.uri().path()) {
                return Box::pin(trade(s.clone(), t, self.conn.clone(), req));
            }
        }
        Box::pin(self.clone().through_tree(req))
    }
}

impl<T> Dispatch<T>
where
    T: Service<Request<Full<Bytes>>, Response = Response, Error = Infallible>,
{
    /// Applies the rate limit and reads the body, then hands the request to the filter tree.
    async fn through_tree(self, req: Request<Incoming>) -> Result<Response, Infallible> {
        let (mut parts, body) = req.into_parts();
        let c = &self.conn;
        let admitted = match c.rate_limit(&parts) {
            Ok(()) => body::read(&c.server.bodies, c.client.as_ref(), body).await,
            Err(e) => Err(e),
        };
        let (body, _share) = match admitted {
            Ok(b) => b,
            Err(e) => {
                if let Some(s) = c.server.role.order_book() {
                    // A request over the rate limit is counted under its route, as the
                    // tree counts it; a body refused under one label, not under a path
                    // that may match no route.
                    let route = if e == too_many() { route_label(parts.uri.path()) } else { "(before routing)" };
                    count_request(&s.exported, route, e.status.as_u16());
                }
                return Ok(e.into_response());
            }
        };
        parts.extensions.insert(c.peer);
        self.tree.call(Request::from_parts(parts, Full::new(body))).await
    }
}

impl Conn {
    /// Counts the request against its client's rate limit, if its server counts it: 429
    /// when over. A forwarding header that is not text is 400 `Invalid payload`.
    fn rate_limit(&self, parts: &warp::http::request::Parts) -> Result<(), ApiError> {
        let Some(s) = self.server.role.limiter(&parts.method, parts.uri.path()) else {
            return Ok(());
        };
        let invalid = || ApiError::bad("Invalid payload");
        let text = |name: &str| parts.headers.get(name).map(|v| v.to_str().map_err(|_| invalid())).transpose();
        let (xff, real) = (text("x-forwarded-for")?, text("x-real-ip")?);
        match s.access.limiter.client_ip(Some(self.peer.0), xff, real) {
            Some(ip) if !s.access.limiter.allow(ip) => Err(too_many()),
            _ => Ok(()),
        }
    }
}

async fn trade(s: Arc<AppState>, t: Trading, conn: Conn, req: Request<Incoming>) -> Result<Response, Infallible> {
    let resp = match admit(&conn, req).await {
        Ok((r, _share)) => respond(t.handle(s.clone(), r).await),
        Err(e) => e.into_response(),
    };
    count_request(&s.exported, t.route().1, resp.status().as_u16());
    Ok(resp)
}

/// What the filter tree does before a route's handler, in its order: the rate limit, then
/// the body.
async fn admit(conn: &Conn, req: Request<Incoming>) -> Result<(Req, Option<body::Share>), ApiError> {
    let (parts, body) = req.into_parts();
    conn.rate_limit(&parts)?;
    let (body, share) = body::read(&conn.server.bodies, conn.client.as_ref(), body).await?;
    let r = Req {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().filter(|q| !q.is_empty()).map(str::to_string),
        headers: parts.headers,
        body,
    };
    Ok((r, share))
}

#[cfg(test)]
mod tests {
    use warp::http::Method;

    use super::Trading;

    #[test]
    fn the_trading_table_matches_its_exact_methods_and_paths_only() {
        for t in Trading::ALL {
            let (m, p) = t.route();
            assert_eq!(Trading::of(&m, p), Some(t), "{t:?}");
        }
        assert_eq!(Trading::of(&Method::GET, "/order"), None);
        assert_eq!(Trading::of(&Method::PUT, "/orders"), None);
        assert_eq!(Trading::of(&Method::POST, "/order/"), None, "the tree decides a trailing slash");
        assert_eq!(Trading::of(&Method::DELETE, "/orders/x"), None);
        assert_eq!(Trading::of(&Method::DELETE, "order"), None);
        assert_eq!(Trading::of(&Method::POST, "/cancel-all"), None);
    }
}

//! The HTTP servers' connection loop, and the order-book server's front: the trading routes
//! ([`Trading`]) dispatched on method and path before warp's filter tree.
//!
//! Every request's body is read here, within the size limit and the process's budget of
//! bodies in flight ([`super::body`]), before any route sees it; the routes get it whole.
//! Each connection's stream gives hyper's own parse-error answers a JSON body
//! ([`super::plain_errors`]).
//!
//! warp routes a request by trying its filters in turn: `POST /order` went through the
//! rate-limit filter, about 35 routes that reject it, header copies and a chain of nested
//! futures polled again on every wake-up. The front takes the request apart itself (its
//! headers moved, not copied), applies the same rate limit and request counter, and calls
//! the handler. Every other request, and a trading path with another method, goes to the
//! filter tree, which still holds the trading routes, so the front changes no reply: the
//! integration tests' trading requests all pass through it.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use warp::http::Request;
use warp::reply::Response;
use warp::Reply;

use super::body::{self, Bodies};
use super::orders::Trading;
use super::plain_errors::JsonErrors;
use super::{count_request, respond, too_many, ApiError, Req};
use crate::app::AppState;

/// The connection's remote address, in each request's extensions (what the rate limit
/// counts when no trusted proxy names the client).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// Serves `routes` on `listener` until `stop` turns true, then lets open connections
/// finish. With `clob`, the order-book server's trading routes bypass the filter tree and
/// the requests the front refuses are counted. `bodies` is the process's budget of
/// request bodies in flight, shared by every server.
pub fn serve<F>(
    listener: tokio::net::TcpListener,
    routes: F,
    clob: Option<Arc<AppState>>,
    bodies: Arc<Bodies>,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()>
where
    F: warp::Filter + Clone + Send + Sync + 'static,
    F::Extract: warp::Reply,
{
    let tree = TowerToHyperService::new(warp::service(routes));
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
            let front = Front { tree: tree.clone(), clob: clob.clone(), bodies: bodies.clone(), peer: Peer(addr) };
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let builder = auto::Builder::new(TokioExecutor::new());
                let io = TokioIo::new(JsonErrors::new(stream));
                let conn = builder.serve_connection_with_upgrades(io, front);
                if let Err(e) = watcher.watch(conn).await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            });
        }
        drop(listener);
        graceful.shutdown().await;
    })
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
struct Front<T> {
    tree: T,
    clob: Option<Arc<AppState>>,
    bodies: Arc<Bodies>,
    peer: Peer,
}

type Replying = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<T> Service<Request<Incoming>> for Front<T>
where
    T: Service<Request<Full<Bytes>>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    T::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Replying;

    fn call(&self, req: Request<Incoming>) -> Replying {
        if let Some(s) = &self.clob {
            if let Some(t) = Trading::of(req.method(), req.uri().path()) {
                return Box::pin(trade(s.clone(), t, self.peer, self.bodies.clone(), req));
            }
        }
        Box::pin(self.clone().through_tree(req))
    }
}

impl<T> Front<T>
where
    T: Service<Request<Full<Bytes>>, Response = Response, Error = Infallible>,
{
    /// Reads the body, then hands the request to the filter tree.
    async fn through_tree(self, req: Request<Incoming>) -> Result<Response, Infallible> {
        let (mut parts, body) = req.into_parts();
        let (body, _share) = match body::read(&self.bodies, body).await {
            Ok(b) => b,
            Err(e) => {
                // Refused before routing: counted under one label, not under a path
                // that may match no route.
                if let Some(s) = &self.clob {
                    count_request(&s.exported, "(before routing)", e.status.as_u16());
                }
                return Ok(e.into_response());
            }
        };
        parts.extensions.insert(self.peer);
        self.tree.call(Request::from_parts(parts, Full::new(body))).await
    }
}

async fn trade(
    s: Arc<AppState>,
    t: Trading,
    peer: Peer,
    bodies: Arc<Bodies>,
    req: Request<Incoming>,
) -> Result<Response, Infallible> {
    let resp = match admit(&s, peer, &bodies, req).await {
        Ok((r, _share)) => respond(t.handle(s.clone(), r).await),
        Err(e) => e.into_response(),
    };
    count_request(&s.exported, t.route().1, resp.status().as_u16());
    Ok(resp)
}

/// What the filter tree does before a route's handler, in its order: the rate limit, then
/// the body. A header that is not text is the tree's 400 `Invalid payload`.
async fn admit(
    s: &AppState,
    Peer(peer): Peer,
    bodies: &Arc<Bodies>,
    req: Request<Incoming>,
) -> Result<(Req, Option<body::Share>), ApiError> {
    let (parts, body) = req.into_parts();
    let invalid = || ApiError::bad("Invalid payload");
    let text = |name: &str| parts.headers.get(name).map(|v| v.to_str().map_err(|_| invalid())).transpose();
    let (xff, real) = (text("x-forwarded-for")?, text("x-real-ip")?);
    if let Some(ip) = s.limiter.client_ip(Some(peer), xff, real) {
        if !s.limiter.allow(ip) {
            return Err(too_many());
        }
    }
    let (body, share) = body::read(bodies, body).await?;
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

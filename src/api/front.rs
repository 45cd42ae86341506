//! The HTTP servers' connection loop, and the order-book server's front: the trading routes
//! ([`Trading`]) dispatched on method and path before warp's filter tree.
//!
//! warp routes a request by trying its filters in turn: `POST /order` went through the
//! rate-limit filter, about 35 routes that reject it, header copies and a chain of nested
//! futures polled again on every wake-up. The front takes the request apart itself (its
//! headers moved, not copied), applies the same rate limit, body limit and request
//! counter, and calls the handler. Every other request, and a trading path with another
//! method, goes to the filter tree, which still holds the trading routes, so the front
//! changes no reply: the integration tests' trading requests all pass through it.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use warp::http::header::CONTENT_LENGTH;
use warp::http::Request;
use warp::reply::Response;
use warp::Reply;

use super::orders::Trading;
use super::{count_request, respond, too_large, too_many, ApiError, AppState, Req, MAX_BODY};

/// The connection's remote address, in each request's extensions (what the rate limit
/// counts when no trusted proxy names the client).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// Serves `routes` on `listener` until `stop` turns true, then lets open connections
/// finish. With `trading`, the order-book server's trading routes bypass the filter tree.
pub fn serve<F>(
    listener: tokio::net::TcpListener,
    routes: F,
    trading: Option<Arc<AppState>>,
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
            let front = Front { tree: tree.clone(), trading: trading.clone(), peer: Peer(addr) };
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let builder = auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), front);
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
    trading: Option<Arc<AppState>>,
    peer: Peer,
}

type Replying = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl<T> Service<Request<Incoming>> for Front<T>
where
    T: Service<Request<Incoming>, Response = Response, Error = Infallible>,
    T::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Replying;

    fn call(&self, mut req: Request<Incoming>) -> Replying {
        if let Some(s) = &self.trading {
            if let Some(t) = Trading::of(req.method(), req.uri().path()) {
                return Box::pin(trade(s.clone(), t, self.peer, req));
            }
        }
        req.extensions_mut().insert(self.peer);
        Box::pin(self.tree.call(req))
    }
}

async fn trade(s: Arc<AppState>, t: Trading, peer: Peer, req: Request<Incoming>) -> Result<Response, Infallible> {
    let resp = match admit(&s, peer, req).await {
        Ok(r) => respond(t.handle(s.clone(), r).await),
        Err(e) => e.into_response(),
    };
    count_request(&s.exported, t.route().1, resp.status().as_u16());
    Ok(resp)
}

/// What the filter tree does before a route's handler, in its order: the rate limit, the
/// declared body size, then the body. A header that is not text, or a body that breaks off,
/// is the tree's 400 `Invalid payload`.
async fn admit(s: &AppState, Peer(peer): Peer, req: Request<Incoming>) -> Result<Req, ApiError> {
    let (parts, body) = req.into_parts();
    let invalid = || ApiError::bad("Invalid payload");
    let text = |name: &str| parts.headers.get(name).map(|v| v.to_str().map_err(|_| invalid())).transpose();
    let (xff, real) = (text("x-forwarded-for")?, text("x-real-ip")?);
    if let Some(ip) = s.limiter.client_ip(Some(peer), xff, real) {
        if !s.limiter.allow(ip) {
            return Err(too_many());
        }
    }
    if let Some(len) = text(CONTENT_LENGTH.as_str())? {
        if len.parse::<u64>().map_err(|_| invalid())? > MAX_BODY {
            return Err(too_large());
        }
    }
    let body = body.collect().await.map_err(|_| invalid())?.to_bytes();
    Ok(Req {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().filter(|q| !q.is_empty()).map(str::to_string),
        headers: parts.headers,
        body,
    })
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

//! Request bodies, bounded while they are read: every server's front reads each body here
//! before any route sees it, whatever its framing (`Content-Length` or chunked, HTTP/1 or
//! HTTP/2).
//!
//! Three bounds. A body may hold at most [`MAX_BODY`] bytes: a declared length over it is
//! refused before a byte is read, and a chunked body is cut off at the chunk that crosses
//! it (413). All the bodies being read or handled at once by one server may hold at most
//! that server's budget ([`Bodies`], `--body-bytes-in-flight`; each server has its own, so
//! the operator's is never spent by the public's): a request takes its share when its head
//! arrives — its declared length, or [`MAX_BODY`] when it declares none — and gives it back
//! when its reply is made. And one client IP may hold at most a quarter of its server's
//! budget ([`super::clients`]). A request the budget cannot hold is refused at once with
//! 503 and its body is never read, so many connections each sending just under the limit
//! cost at most the budget, never the sum of what they send, and one address cannot spend
//! it all.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Body;
use warp::http::StatusCode;

use super::clients::Client;
use super::ApiError;

pub use crate::config::MAX_BODY;

/// How long a body may take to arrive once its head has: a connection that trickles one
/// keeps its share of the budget no longer than this.
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);

/// The bytes one server's bodies in flight may hold together, and what they hold now.
#[derive(Debug)]
pub struct Bodies {
    held: AtomicUsize,
    cap: usize,
}

/// Takes `n` from `held` if that leaves it at most `cap`.
fn take_within(held: &AtomicUsize, n: usize, cap: usize) -> bool {
    held.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |h| h.checked_add(n).filter(|&t| t <= cap)).is_ok()
}

impl Bodies {
    pub fn new(cap: usize) -> Arc<Bodies> {
        Arc::new(Bodies { held: AtomicUsize::new(0), cap })
    }

    /// Bytes held by the bodies in flight now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// What one client may hold: a quarter of the budget, and always one whole body.
    fn per_client(&self) -> usize {
        (self.cap / 4).max(MAX_BODY)
    }

    /// Takes `n` bytes of the budget and of `client`'s part of it, if that many are left.
    fn take(self: &Arc<Self>, n: usize, client: Option<&Arc<Client>>) -> Option<Share> {
        if let Some(c) = client {
            if !take_within(&c.body_bytes, n, self.per_client()) {
                return None;
            }
        }
        if !take_within(&self.held, n, self.cap) {
            if let Some(c) = client {
                c.body_bytes.fetch_sub(n, Ordering::AcqRel);
            }
            return None;
        }
        Some(Share { bodies: self.clone(), client: client.cloned(), n })
    }
}

/// A request's share of the budget, given back when dropped (once its reply is made).
#[derive(Debug)]
pub struct Share {
    bodies: Arc<Bodies>,
    client: Option<Arc<Client>>,
    n: usize,
}

impl Share {
    fn give_back(&self, n: usize) {
        self.bodies.held.fetch_sub(n, Ordering::AcqRel);
        if let Some(c) = &self.client {
            c.body_bytes.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Keeps only what the body turned out to hold.
    fn shrink(&mut self, to: usize) {
        if to < self.n {
            self.give_back(self.n - to);
            self.n = to;
        }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.give_back(self.n);
    }
}

/// 413: a body over [`MAX_BODY`].
pub fn too_large() -> ApiError {
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload too large")
}

/// 503: the budget of bodies in flight is spent.
fn busy() -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server busy: too many request bodies in flight, retry shortly")
}

/// Reads a whole body within the bounds, counted against `client` too when it is counted;
/// the share it returns must live until the reply is made. A body that breaks off is 400
/// `Invalid payload`, one that takes longer than [`BODY_DEADLINE`] 408.
pub async fn read<B>(
    bodies: &Arc<Bodies>,
    client: Option<&Arc<Client>>,
    body: B,
) -> Result<(Bytes, Option<Share>), ApiError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if body.is_end_stream() {
        return Ok((Bytes::new(), None));
    }
    let declared = body.size_hint().exact();
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    let mut share = bodies.take(declared.map_or(MAX_BODY, |n| n as usize), client).ok_or_else(busy)?;
    let collected = tokio::time::timeout(BODY_DEADLINE, Limited::new(body, MAX_BODY).collect()).await;
    let bytes = match collected {
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => return Err(too_large()),
        Ok(Err(_)) => return Err(ApiError::bad("Invalid payload")),
        Err(_) => return Err(ApiError::new(StatusCode::REQUEST_TIMEOUT, "request body timeout")),
    };
    share.shrink(bytes.len());
    Ok((bytes, Some(share)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{Full, StreamBody};

    fn chunked(parts: Vec<usize>) -> impl Body<Data = Bytes, Error = std::convert::Infallible> {
        let frames = parts.into_iter().map(|n| Ok(hyper::body::Frame::data(Bytes::from(vec![b' '; n]))));
        StreamBody::new(futures_util::stream::iter(frames))
    }

    #[tokio::test]
    async fn a_body_is_bounded_however_it_is_framed() {
        let bodies = Bodies::new(4 * MAX_BODY);
        let (b, share) = read(&bodies, None, Full::new(Bytes::from_static(b"{}"))).await.unwrap();
        assert_eq!(&b[..], b"{}");
        assert_eq!(bodies.held(), 2, "a declared body holds its length");
        drop(share);
        assert_eq!(bodies.held(), 0);

        let big = Full::new(Bytes::from(vec![b' '; MAX_BODY + 1]));
        assert_eq!(read(&bodies, None, big).await.unwrap_err(), too_large());
        let (b, share) = read(&bodies, None, chunked(vec![MAX_BODY / 2, MAX_BODY / 2])).await.unwrap();
        assert_eq!(b.len(), MAX_BODY);
        assert_eq!(bodies.held(), MAX_BODY);
        drop(share);
        assert_eq!(read(&bodies, None, chunked(vec![MAX_BODY, 1])).await.unwrap_err(), too_large());
        assert_eq!(bodies.held(), 0, "a refused body gives its share back");
    }

    #[tokio::test]
    async fn the_budget_refuses_what_it_cannot_hold_and_gets_it_back() {
        let bodies = Bodies::new(2 * MAX_BODY + 10);
        let (_, a) = read(&bodies, None, chunked(vec![100])).await.unwrap();
        assert_eq!(bodies.held(), 100, "an undeclared body keeps only what it held");
        let (_, b) = read(&bodies, None, Full::new(Bytes::from(vec![b' '; MAX_BODY]))).await.unwrap();
        // 100 + MAX_BODY held: another undeclared body (MAX_BODY) does not fit, a small
        // declared one does.
        assert_eq!(read(&bodies, None, chunked(vec![1])).await.unwrap_err(), busy());
        let (_, c) = read(&bodies, None, Full::new(Bytes::from(vec![b' '; 10]))).await.unwrap();
        drop((a, b, c));
        assert_eq!(bodies.held(), 0);
        assert!(read(&bodies, None, chunked(vec![1])).await.is_ok());
        let (b, share) = read(&bodies, None, http_body_util::Empty::<Bytes>::new()).await.unwrap();
        assert!(b.is_empty() && share.is_none());
    }

    #[tokio::test]
    async fn one_client_holds_at_most_a_quarter_of_the_budget() {
        let bodies = Bodies::new(8 * MAX_BODY);
        let clients = super::super::clients::Clients::new(0, &[]);
        let (a, b) = (clients.admit([10, 0, 0, 1].into()).unwrap(), clients.admit([10, 0, 0, 2].into()).unwrap());
        let (a, b) = (a.client(), b.client());
        let mb = || Full::new(Bytes::from(vec![b' '; MAX_BODY]));
        let (_, a1) = read(&bodies, a, mb()).await.unwrap();
        let (_, a2) = read(&bodies, a, mb()).await.unwrap();
        assert_eq!(read(&bodies, a, mb()).await.unwrap_err(), busy(), "a quarter of 8 MiB is 2 MiB");
        let (_, b1) = read(&bodies, b, mb()).await.unwrap();
        let (_, anyone) = read(&bodies, None, mb()).await.unwrap();
        assert_eq!(bodies.held(), 4 * MAX_BODY, "a refused body holds nothing");
        drop(a1);
        let (_, a3) = read(&bodies, a, Full::new(Bytes::from_static(b"{}"))).await.unwrap();
        assert_eq!(a.unwrap().body_bytes.load(Ordering::Relaxed), MAX_BODY + 2);
        drop((a2, a3, b1, anyone));
        assert_eq!((bodies.held(), a.unwrap().body_bytes.load(Ordering::Relaxed)), (0, 0));
    }
}

//! One server's clients, counted per IP: the connections each holds open (at most
//! `--max-connections-per-ip`, WebSocket connections included) and the request-body bytes
//! each holds in flight (at most a quarter of the server's budget, [`super::body`]), so one
//! address cannot take a server's connections or its budget from everyone else.
//!
//! A connection is counted from its accept until its stream is dropped: the count rides in
//! the stream itself ([`Counted`]), so a connection upgraded to a WebSocket keeps it for as
//! long as the socket lives. A trusted proxy's address is not counted: every client behind
//! it shares that address, and the proxy is where per-client limits belong.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// One server's clients by IP.
#[derive(Debug)]
pub struct Clients {
    by_ip: Mutex<HashMap<IpAddr, Arc<Client>>>,
    /// Connections one IP may hold open; 0: no cap.
    max_connections: usize,
    /// Addresses not counted (trusted proxies).
    exempt: Vec<IpAddr>,
}

/// What one IP holds on one server.
#[derive(Debug, Default)]
pub struct Client {
    connections: AtomicUsize,
    /// Bytes of this client's request bodies in flight ([`super::body::Bodies`]).
    pub(super) body_bytes: AtomicUsize,
}

impl Clients {
    pub fn new(max_connections: usize, exempt: &[IpAddr]) -> Arc<Clients> {
        Arc::new(Clients {
            by_ip: Mutex::new(HashMap::new()),
            max_connections,
            exempt: exempt.iter().map(|ip| ip.to_canonical()).collect(),
        })
    }

    /// Counts a new connection from `ip`: its place, or None when `ip` holds the most it may.
    /// An exempt address gets a place that counts nothing.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Place> {
        let ip = ip.to_canonical();
        if self.exempt.contains(&ip) {
            return Some(Place::uncounted());
        }
        let mut by_ip = self.by_ip.lock();
        let client = by_ip.entry(ip).or_default();
        let n = client.connections.load(Ordering::Relaxed);
        if self.max_connections != 0 && n >= self.max_connections {
            return None;
        }
        client.connections.store(n + 1, Ordering::Relaxed);
        Some(Place { counted: Some((self.clone(), ip, client.clone())) })
    }

    /// Connections `ip` holds open now.
    pub fn connections(&self, ip: IpAddr) -> usize {
        self.by_ip.lock().get(&ip.to_canonical()).map_or(0, |c| c.connections.load(Ordering::Relaxed))
    }
}

/// A connection's place among its server's clients, given back when dropped.
#[derive(Debug)]
pub struct Place {
    counted: Option<(Arc<Clients>, IpAddr, Arc<Client>)>,
}

impl Place {
    /// A place that counts nothing (a server whose clients are not counted).
    pub fn uncounted() -> Place {
        Place { counted: None }
    }

    /// The client whose body bytes this connection's requests count against; None when
    /// its address is not counted.
    pub fn client(&self) -> Option<&Arc<Client>> {
        self.counted.as_ref().map(|(_, _, c)| c)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some((clients, ip, client)) = self.counted.take() {
            let mut by_ip = clients.by_ip.lock();
            // Counted and removed under the map's lock, so `admit` never revives an entry
            // that is being removed.
            if client.connections.fetch_sub(1, Ordering::Relaxed) == 1 {
                by_ip.remove(&ip);
            }
        }
    }
}

/// An accepted stream that holds its connection's place for as long as it lives.
#[derive(Debug)]
pub struct Counted {
    stream: TcpStream,
    _place: Place,
}

impl Counted {
    pub fn new(stream: TcpStream, place: Place) -> Counted {
        Counted { stream, _place: place }
    }
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ip_holds_at_most_its_cap_and_gets_its_places_back() {
        let clients = Clients::new(2, &[IpAddr::from([127, 0, 0, 1])]);
        let a = IpAddr::from([10, 0, 0, 1]);
        let (p1, p2) = (clients.admit(a).unwrap(), clients.admit(a).unwrap());
        assert!(clients.admit(a).is_none(), "a third connection from one address is refused");
        assert!(clients.admit(IpAddr::from([10, 0, 0, 2])).is_some(), "another address is not");
        assert!(Arc::ptr_eq(p1.client().unwrap(), p2.client().unwrap()), "one address, one count");
        drop(p1);
        assert_eq!(clients.connections(a), 1);
        let p3 = clients.admit(a).unwrap();
        drop((p2, p3));
        assert_eq!(clients.connections(a), 0);
        assert!(clients.by_ip.lock().is_empty(), "an address with no connection is forgotten");

        let proxy: Vec<_> = (0..10).map(|_| clients.admit(IpAddr::from([127, 0, 0, 1])).unwrap()).collect();
        assert!(proxy.iter().all(|p| p.client().is_none()), "a trusted proxy is not counted");
        let v4_in_v6: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let (_q1, _q2) = (clients.admit(v4_in_v6).unwrap(), clients.admit(a).unwrap());
        assert!(clients.admit(a).is_none(), "an IPv4 address counts once however it is written");
    }
}

//! A minimal HTTP/1.1 JSON client on hyper (which warp already builds): the load generator
//! and `predex admin` talk to the servers through it.

use std::net::SocketAddr;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::Value;

pub struct Conn {
    tx: SendRequest<Full<Bytes>>,
    /// `Host`: the address connected to, as a server checks it (the internal server
    /// answers its own loopback names only).
    host: hyper::header::HeaderValue,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> anyhow::Result<Conn> {
        let s = tokio::net::TcpStream::connect(addr).await.with_context(|| format!("connect {addr}"))?;
        s.set_nodelay(true)?;
        let (tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let host = hyper::header::HeaderValue::from_str(&addr.to_string()).expect("an address is a header value");
        Ok(Conn { tx, host })
    }

    /// One request; status 0 means the connection failed.
    pub async fn send(&mut self, method: &str, path: &str, headers: &[(&str, String)], body: Bytes) -> (u16, Bytes) {
        let mut b = hyper::Request::builder().method(method).uri(path).header("host", self.host.clone());
        if !body.is_empty() {
            b = b.header("content-type", "application/json");
        }
        for (k, v) in headers {
            b = b.header(*k, v.as_str());
        }
        let req = b.body(Full::new(body)).expect("valid request");
        if self.tx.ready().await.is_err() {
            return (0, Bytes::new());
        }
        match self.tx.send_request(req).await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let body = resp.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
                (status, body)
            }
            Err(_) => (0, Bytes::new()),
        }
    }
}

/// A one-off JSON request (setup only).
pub async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Option<Value>,
) -> (u16, Value) {
    let Ok(mut c) = Conn::open(addr).await else { return (0, Value::Null) };
    let (st, b) = c.send(method, path, headers, body.map(|v| Bytes::from(v.to_string())).unwrap_or_default()).await;
    (st, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// The internal (operator) server and its bearer token: every request to it carries
/// `Authorization: Bearer <token>` (`api::dashboard::gate`).
#[derive(Clone)]
pub struct Operator {
    pub addr: SocketAddr,
    token: String,
}

impl Operator {
    pub fn new(addr: SocketAddr, token: String) -> Operator {
        Operator { addr, token }
    }

    /// The server at `addr`, with the token read from `token_file`.
    pub fn from_file(addr: SocketAddr, token_file: &std::path::Path) -> anyhow::Result<Operator> {
        Ok(Operator::new(addr, crate::keyfile::internal_token(token_file, false)?))
    }

    /// A one-off JSON request to the internal server.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        call(self.addr, method, path, &[("authorization", format!("Bearer {}", self.token))], body).await
    }

    /// The dashboard's address with the token in its fragment: the page keeps it for its
    /// tab and takes it out of the address bar; a browser never sends a fragment.
    pub fn dashboard_url(&self) -> String {
        format!("http://{}/dashboard#token={}", self.addr, self.token)
    }
}

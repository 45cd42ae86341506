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
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> anyhow::Result<Conn> {
        let s = tokio::net::TcpStream::connect(addr).await.with_context(|| format!("connect {addr}"))?;
        s.set_nodelay(true)?;
        let (tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn { tx })
    }

    /// One request; status 0 means the connection failed.
    pub async fn send(&mut self, method: &str, path: &str, headers: &[(&str, String)], body: Bytes) -> (u16, Bytes) {
        let mut b = hyper::Request::builder().method(method).uri(path).header("host", "predex");
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

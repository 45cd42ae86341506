//! WebSocket clients of the feeds.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use super::*;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(crate) struct Client {
    rt: tokio::runtime::Runtime,
    ws: Ws,
}

impl Client {
    pub(crate) fn connect(s: &Server) -> Client {
        Client::connect_to(s, "/ws/market")
    }

    pub(crate) fn connect_to(s: &Server, path: &str) -> Client {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let url = format!("{}{path}", s.clob.replace("http://", "ws://"));
        let (ws, _) = rt.block_on(tokio_tungstenite::connect_async(url)).unwrap();
        Client { rt, ws }
    }

    pub(crate) fn send(&mut self, text: &str) {
        self.rt.block_on(self.ws.send(Message::text(text.to_string()))).unwrap();
    }

    /// Every message until `quiet` passes without one (arrays flattened; PONG as a string).
    pub(crate) fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(Some(Ok(m))) = self.rt.block_on(async { tokio::time::timeout(quiet, self.ws.next()).await }) {
            match m {
                Message::Text(t) => match serde_json::from_str::<Value>(&t) {
                    Ok(Value::Array(a)) => out.extend(a),
                    Ok(v) => out.push(v),
                    Err(_) => out.push(Value::String(t.to_string())),
                },
                Message::Close(c) => {
                    out.push(json!({"closed": c.map(|c| c.reason.to_string())}));
                    break;
                }
                _ => {}
            }
        }
        out
    }
}

/// A `/ws/user` connection authenticated as `t`, following `markets`.
pub(crate) fn user_channel(s: &Server, t: &Trader, markets: Value) -> Client {
    let mut c = Client::connect_to(s, "/ws/user");
    let auth = json!({"apiKey": t.key, "secret": t.secret, "passphrase": t.passphrase});
    c.send(&json!({"auth": auth, "markets": markets, "type": "user"}).to_string());
    c
}

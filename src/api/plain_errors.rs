//! hyper's own answers to requests it cannot parse (a garbage request line, `Content-Length:
//! abc`, a head larger than its buffer), given the JSON error body every other answer has
//! (SPEC §7).
//!
//! hyper writes those answers itself, before any service sees the request: a bare head
//! with `content-length: 0`, and no hook to give it a body. Every answer predex makes
//! carries a JSON body, so a 4xx head of length 0 on the wire is always one of hyper's: the
//! connection's stream ([`JsonErrors`]) writes it with `{"error": "…"}` instead. Only
//! writes that begin with such a head are looked at twice; the rest pass straight through.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection's stream whose bare 4xx answers get a JSON body.
#[derive(Debug)]
pub struct JsonErrors<S> {
    inner: S,
    /// The rewritten answer, written ahead of anything else, and how much of it is out.
    pending: Vec<u8>,
    sent: usize,
}

impl<S> JsonErrors<S> {
    pub fn new(inner: S) -> JsonErrors<S> {
        JsonErrors { inner, pending: Vec::new(), sent: 0 }
    }
}

const BARE: &[u8] = b"\r\ncontent-length: 0\r\n";

/// The message of one of hyper's own answers.
fn message(status: &[u8]) -> &'static str {
    match status {
        b"400" => "malformed request",
        b"414" => "URI too long",
        b"431" => "request header fields too large",
        _ => "bad request",
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `buf` with a bare 4xx head at its start rewritten to carry the JSON error; None when it
/// does not start with one.
fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    if buf.len() < 13 || !buf.starts_with(b"HTTP/1.") || buf[9] != b'4' {
        return None;
    }
    let end = find(buf, b"\r\n\r\n")? + 4;
    let at = find(&buf[..end], BARE)?;
    let body = serde_json::to_vec(&serde_json::json!({ "error": message(&buf[9..12]) })).expect("a string map");
    let mut out = Vec::with_capacity(buf.len() + body.len() + 48);
    out.extend_from_slice(&buf[..at]);
    out.extend_from_slice(
        format!("\r\ncontent-type: application/json\r\ncontent-length: {}\r\n", body.len()).as_bytes(),
    );
    out.extend_from_slice(&buf[at + BARE.len()..end]);
    out.extend_from_slice(&body);
    out.extend_from_slice(&buf[end..]);
    Some(out)
}

impl<S: AsyncWrite + Unpin> JsonErrors<S> {
    /// Writes what is pending of a rewritten answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending = Vec::new();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }

    /// Takes `buf` (all of it, as far as hyper is told) as a rewritten answer, if it is one.
    fn rewritten(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Option<Poll<io::Result<usize>>> {
        self.pending = rewrite(buf)?;
        self.sent = 0;
        // What is not out yet goes with the flush hyper makes after every answer.
        Some(match self.drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(buf.len())),
        })
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonErrors<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonErrors<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        if let Some(done) = this.rewritten(cx, buf) {
            return done;
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if let Some(done) = this.rewritten(cx, first) {
                return done;
            }
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_4xx_head_gets_the_json_error_and_nothing_else_changes() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(rewrite(bare).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert_eq!(body, r#"{"error":"request header fields too large"}"#);
        assert!(head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())), "{head}");
        assert!(head.contains("\r\ncontent-type: application/json") && head.ends_with("\r\ndate: x"), "{head}");
        assert!(!head.contains("content-length: 0"));

        let with_body = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}";
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        for keep in [&with_body[..], &ok[..], b"HTTP/1.1 4", b"{\"a\":1}"] {
            assert!(rewrite(keep).is_none(), "{}", String::from_utf8_lossy(keep));
        }
    }
}

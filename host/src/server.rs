//! The listener: one accept loop for plain HTTP and HTTPS, serving each
//! connection with hyper's HTTP/1.1 server under the limits of
//! docs/operations.md#connections: a cap on open connections and a share
//! of them per client (`admission.rs`: over its share a connection is
//! closed at once; at the cap the oldest one serving no request makes
//! room), and timeouts on the TLS handshake, the request headers, the
//! request body and an idle connection. A client that opens connections
//! and then sends nothing, or sends one byte at a time, holds its places
//! for seconds, not forever, and never all of them.
//!
//! Handlers see the peer as `ConnectInfo<SocketAddr>`, as with
//! `axum::serve`. Shutdown stops accepting and lets open connections finish
//! their requests (idle ones are closed at once).
//!
//! After a failed `accept` the loop pauses (`ACCEPT_PAUSE`) instead of
//! spinning a core.

mod admission;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use ipnet::IpNet;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::time::Sleep;
use tokio_rustls::TlsAcceptor;
use tower::{Service, ServiceExt};

use crate::config::ConnectionLimits;
use admission::{Admission, Busy, Connections, Slot, Ticket};

/// How long a connection closed to make room has to write what hyper still
/// holds for the client (the tail of its last answer) before it is
/// dropped: its request was over, so this is a flush, not a request.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// How long the loop waits after `accept` failed before it tries again.
/// The usual cause is running out of file descriptors; trying again at
/// once fails again at once and spins a core, while a pause lets open
/// connections finish and free theirs.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Serves `service` on `listener` (over TLS when `tls` is given) until
/// `shutdown` completes, then stops accepting and lets open connections
/// finish their requests. Connections from `trusted_proxies` have no
/// share per client.
pub async fn serve<S, B>(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: ConnectionLimits,
    trusted_proxies: &[IpNet],
    service: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()>
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let acceptor = tls.map(TlsAcceptor::from);
    let connections = Connections::new(limits.per_client, limits.max_open, trusted_proxies);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // At the cap with every connection serving a request, stop
        // accepting: further clients wait in the operating system's queue
        // until one closes or its request ends.
        let ticket = tokio::select! {
            ticket = place(&connections, peer.ip()) => ticket,
            () = &mut shutdown => break,
        };
        let Some(ticket) = ticket else {
            tracing::debug!(%peer, "connection closed: its client holds its share of connections");
            drop(tcp);
            continue;
        };
        let service = service.clone();
        let acceptor = acceptor.clone();
        // Taken now, so shutdown also waits for a handshake in progress.
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            match acceptor {
                None => serve_connection(tcp, peer, limits, &ticket, service, watcher).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(limits.tls_handshake, acceptor.accept(tcp));
                    let stream = tokio::select! {
                        done = handshake => match done {
                            Ok(Ok(stream)) => stream,
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "TLS handshake timed out");
                                return;
                            }
                        },
                        () = ticket.closed() => {
                            tracing::debug!(%peer, "connection in its TLS handshake closed to make room for another");
                            return;
                        }
                    };
                    serve_connection(stream, peer, limits, &ticket, service, watcher).await;
                }
            }
        });
    }
    // New clients are refused rather than left waiting in the queue.
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A place for a connection from `peer`, waiting while every place is
/// held by a connection serving a request; None when its client holds its
/// share already.
async fn place(connections: &Arc<Connections>, peer: IpAddr) -> Option<Ticket> {
    loop {
        match connections.admit(peer) {
            Admission::Admitted(ticket) => return Some(ticket),
            Admission::OverQuota => return None,
            Admission::Full => connections.released().await,
        }
    }
}

/// Serves one connection's requests until it closes or a limit ends it.
async fn serve_connection<IO, S, B>(
    io: IO,
    peer: SocketAddr,
    limits: ConnectionLimits,
    ticket: &Ticket,
    service: S,
    watcher: Watcher,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = service.map_request(move |req: Request<Incoming>| {
        let mut req = req.map(|body| {
            if http_body::Body::is_end_stream(&body) {
                Body::new(body)
            } else {
                Body::new(Deadline::new(body, limits.request_body))
            }
        });
        req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
        req
    });
    // From a request's headers until its answer's last byte is written (or
    // given up), the connection is busy: never closed to make room.
    let slot = ticket.slot();
    let busy_slot = slot.clone();
    let service = service.map_future(move |answer| {
        let busy = Busy::new(busy_slot.clone());
        async move {
            let response = answer.await?;
            Ok::<_, Infallible>(response.map(|body| Answering { body, _busy: busy }))
        }
    });
    let mut builder = http1::Builder::new();
    // Without a timer hyper silently ignores the header timeout. hyper
    // starts it when it waits for a request's headers: at the connection's
    // start and again after every answer.
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .keep_alive(true);
    let io = TokioIo::new(Idle::new(io, limits.keep_alive, slot.clone()));
    let connection = builder.serve_connection(io, TowerToHyperService::new(service));
    let mut connection = std::pin::pin!(watcher.watch(connection));
    let ended = tokio::select! {
        ended = &mut connection => ended,
        () = ticket.closed() => {
            // It reads end-of-file from now on (`Idle`): hyper writes what
            // it holds, then closes.
            tracing::debug!(%peer, "idle connection closed to make room for another");
            loop {
                match tokio::time::timeout(CLOSE_GRACE, &mut connection).await {
                    Ok(ended) => break ended,
                    // A request whose bytes were read as it was closed is
                    // served to its end; the request timeouts bound it.
                    Err(_) if slot.serving() => continue,
                    Err(_) => return,
                }
            }
        }
    };
    if let Err(e) = ended {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// An answer's body, holding its connection busy until hyper drops it
/// (written whole, or the connection failed).
struct Answering<B> {
    body: B,
    _busy: Busy,
}

impl<B: http_body::Body + Unpin> http_body::Body for Answering<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The error a request body gives once its deadline has passed; the JSON
/// extractor answers it with 408 (docs/api/errors.md).
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within the request body timeout")]
pub struct BodyTimeout;

/// Whether `error`, or an error it wraps, is a [`BodyTimeout`].
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| e.source()).any(|e| e.is::<BodyTimeout>())
}

/// A request body that must arrive whole within a time of its headers.
/// tower-http's body timeout restarts with every chunk, so a client sending
/// a byte a second would never meet it; this deadline does not move.
struct Deadline {
    body: Incoming,
    deadline: Pin<Box<Sleep>>,
}

impl Deadline {
    fn new(body: Incoming, within: Duration) -> Deadline {
        Deadline {
            body,
            deadline: Box::pin(tokio::time::sleep(within)),
        }
    }
}

impl http_body::Body for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // What already arrived is handed on; only waiting for more is cut off.
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        ready!(self.deadline.as_mut().poll(cx));
        Poll::Ready(Some(Err(Box::new(BodyTimeout))))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection that is closed when it sits idle: from its start, and from
/// each byte written to the client, until the client's next byte arrives.
/// While a handler works the client has sent the last byte, so no timer
/// runs. hyper has no idle timeout of its own for HTTP/1
/// (https://github.com/hyperium/hyper/issues/2355); its header timeout only
/// limits the time to the end of the next request's headers. Once the
/// connection was closed to make room, reading gives end-of-file, so that
/// hyper ends it cleanly, after writing what it still holds.
struct Idle<IO> {
    io: IO,
    after: Duration,
    /// Running while the connection waits for the client.
    timer: Option<Pin<Box<Sleep>>>,
    slot: Arc<Slot>,
}

impl<IO> Idle<IO> {
    fn new(io: IO, after: Duration, slot: Arc<Slot>) -> Idle<IO> {
        Idle {
            io,
            after,
            timer: Some(Box::pin(tokio::time::sleep(after))),
            slot,
        }
    }

    /// Starts the timer again (the service just wrote to the client).
    fn restart(&mut self) {
        let deadline = tokio::time::Instant::now() + self.after;
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(deadline),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Idle<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.slot.is_closed() {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.timer = None;
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                if let Some(timer) = &mut self.timer {
                    ready!(timer.as_mut().poll(cx));
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "connection idle for longer than the keep-alive timeout",
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Idle<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = ready!(Pin::new(&mut self.io).poll_write(cx, buf));
        if written.as_ref().is_ok_and(|n| *n > 0) {
            self.restart();
        }
        Poll::Ready(written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, bufs));
        if written.as_ref().is_ok_and(|n| *n > 0) {
            self.restart();
        }
        Poll::Ready(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

//! `mcscore serve`: the OpenAI completions API with prompt log-probabilities
//! over HTTP (axum on tokio), for lm-evaluation-harness and other clients.
//! This file routes, authenticates, limits, logs and shuts down; what a
//! request means and what it answers is `mcscore_eval::completions`, and the
//! packing of requests into fills `mcscore_eval::queue`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use mcscore_engine::{ContextSize, Engine, SessionLimits};
mod completions;
mod queue;

use completions::{ApiError, CompletionRequest, Completions, Limits, ModelInfo};
use queue::{Outcome, Queue, Refused, Work};
use serde_json::Value;
use subtle::ConstantTimeEq;

use crate::defaults;
use crate::engine_args::ComputeArgs;
use crate::text::printable;

const EXAMPLES: &str = "\
Examples:
  mcscore serve                                   the default model on http://127.0.0.1:8080
  mcscore serve -m model.gguf --port 8000 -c 4096 -t 8
  MCSCORE_API_KEY=secret mcscore serve -m model.gguf --host 0.0.0.0

  lm_eval --model local-completions --tasks arc_easy \\
    --model_args model=gemma-3-270m-q4_k_m,base_url=http://127.0.0.1:8080/v1/completions,tokenizer_backend=remote,num_concurrent=8,batch_size=8
  lm_eval --model gguf --model_args base_url=http://127.0.0.1:8080 --tasks arc_easy

Routes: POST /v1/completions (also /completions), POST /tokenize, POST /detokenize,
GET /tokenizer_info, GET /v1/models, GET /health (no key needed). docs/serve.md has the details.

Hardening: a request is read within --read-timeout (its head and its body; an idle
connection is closed after it too); POST bodies must be `Content-Type: application/json`;
the Host header must be an IP address, localhost, or a name given with --allowed-host
(a web page cannot reach the server through DNS rebinding); one request holds at most
--max-prompts prompts and --max-request-tokens tokens, and the queue --queue requests
and --queue-tokens tokens.

Exit status: 0 after SIGINT, SIGTERM or SIGHUP (in-flight requests finish first, for at most
--shutdown-timeout seconds; a second signal stops at once); 1 when the model does not
load or the address cannot be bound; 2 on a usage error.";

/// Serve prompt log-likelihoods over HTTP (the OpenAI completions API with
/// `echo` and `logprobs`), so lm-evaluation-harness can score GGUF models.
///
/// Every prompt token gets its log-probability and top alternatives; at most
/// one token is generated (greedily). Concurrent requests are packed into the
/// same llama.cpp fills, so a context they share is decoded once.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub(crate) struct Args {
    /// GGUF model; default: gemma-3-270m Q4_K_M from scripts/fetch-model (or $MCSCORE_MODEL).
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    model: Option<PathBuf>,
    /// The model's name in requests and answers (`model`); default: the file name without `.gguf`.
    #[arg(short = 'a', long = "alias", value_name = "NAME")]
    alias: Option<String>,
    /// Address to listen on; loopback by default. Anything else without --api-key gets a warning.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDRESS")]
    host: std::net::IpAddr,
    /// Port to listen on; 0 picks a free one (the address is printed).
    #[arg(long, default_value_t = 8080, value_name = "PORT", value_parser = crate::numbers::whole(0u16, u16::MAX))]
    port: u16,
    /// Longest prompt, in tokens (a BOS the server adds included); the KV
    /// cache holds this many or a fill (-b), whichever is larger.
    #[arg(short = 'c', long = "ctx-size", value_name = "N", default_value_t = 4096, value_parser = crate::numbers::whole(1u32, 1_048_576))]
    ctx_size: u32,
    /// Prompts that branch apart within one fill, at most (llama.cpp sequences, 1–255: one more holds padding).
    #[arg(long = "parallel", value_name = "N", default_value_t = 64, value_parser = crate::numbers::whole(1u32, 255))]
    parallel: u32,
    #[command(flatten)]
    compute: ComputeArgs,
    /// Require `Authorization: Bearer KEY` on every route but /health.
    #[arg(long = "api-key", env = "MCSCORE_API_KEY", hide_env_values = true, value_name = "KEY")]
    api_key: Option<String>,
    /// Requests that may wait for the scorer; beyond it, 503 with Retry-After.
    #[arg(long = "queue", value_name = "N", default_value_t = 256, value_parser = crate::numbers::whole(1u32, 65_536))]
    queue: u32,
    /// Largest request body, in bytes; larger ones get 413.
    #[arg(long = "max-body", value_name = "BYTES", default_value_t = 16 << 20, value_parser = crate::numbers::whole(1024u64, 1 << 30))]
    max_body: u64,
    /// Request log on stderr: one readable line per request, or one JSON object.
    #[arg(long = "log-format", value_name = "text|json", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Prompts one request may hold (lm-eval sends its --batch_size); more get 413.
    #[arg(long = "max-prompts", value_name = "N", default_value_t = 1024, value_parser = crate::numbers::whole(1u32, 65_536))]
    max_prompts: u32,
    /// Prompt tokens one request may hold, in all; more get 413.
    #[arg(long = "max-request-tokens", value_name = "N", default_value_t = 1 << 20, value_parser = crate::numbers::whole(1u32, 1 << 24))]
    max_request_tokens: u32,
    /// Prompt tokens that may wait for the scorer, in all; beyond it, 503 with Retry-After.
    #[arg(long = "queue-tokens", value_name = "N", default_value_t = 1 << 23, value_parser = crate::numbers::whole(1u32, 1 << 28))]
    queue_tokens: u32,
    /// Seconds a client has to send a request's head, and then its body; a
    /// connection idle for as long is closed.
    #[arg(long = "read-timeout", value_name = "SECONDS", default_value_t = 15, value_parser = crate::numbers::whole(1u64, 3600))]
    read_timeout: u64,
    /// Seconds to let in-flight requests finish after SIGINT, SIGTERM or SIGHUP before
    /// closing what is left.
    #[arg(long = "shutdown-timeout", value_name = "SECONDS", default_value_t = 30, value_parser = crate::numbers::whole(0u64, 3600))]
    shutdown_timeout: u64,
    /// A Host name clients may use besides IP addresses and localhost (repeat for
    /// several; `*` accepts any, as behind a proxy that checks it).
    #[arg(long = "allowed-host", value_name = "NAME")]
    allowed_hosts: Vec<String>,
}

struct AppState {
    completions: Completions,
    queue: Queue,
    /// The API key's sha256 (hex): compared in constant time with the given
    /// key's, so neither its bytes nor its length show in the timing.
    api_key: Option<String>,
    next_id: AtomicU64,
    json_log: bool,
    max_body: u64,
    read_timeout: Duration,
    allowed_hosts: Vec<String>,
}

/// What one request did, for the log line.
#[derive(Default)]
struct Entry {
    prompts: usize,
    tokens: usize,
    wait: Option<Duration>,
    compute: Option<Duration>,
    pass_prompts: Option<usize>,
    error: Option<String>,
}

impl AppState {
    fn log(&self, id: u64, route: &str, status: u16, started: Instant, entry: &Entry) {
        let ms = |d: Option<Duration>| d.map(|d| (d.as_secs_f64() * 1e4).round() / 10.0);
        let total = started.elapsed().as_secs_f64() * 1e3;
        if self.json_log {
            let line = serde_json::json!({
                "id": id, "route": route, "status": status, "prompts": entry.prompts, "tokens": entry.tokens,
                "queue_ms": ms(entry.wait), "compute_ms": ms(entry.compute), "pass_prompts": entry.pass_prompts,
                "total_ms": (total * 10.0).round() / 10.0, "error": entry.error,
            });
            eprintln!("{line}");
        } else {
            let mut line = format!("mcscore serve: #{id} {} {status}", printable(route));
            if entry.prompts > 0 {
                line.push_str(&format!(" {} prompts {} tokens", entry.prompts, entry.tokens));
            }
            if let (Some(wait), Some(compute)) = (ms(entry.wait), ms(entry.compute)) {
                line.push_str(&format!(" queue {wait} ms compute {compute} ms"));
                if let Some(n) = entry.pass_prompts {
                    line.push_str(&format!(" (pass of {n} prompts)"));
                }
            }
            line.push_str(&format!(" total {total:.1} ms"));
            if let Some(error) = &entry.error {
                line.push_str(&format!(": {}", printable(error)));
            }
            eprintln!("{line}");
        }
    }
}

fn error_response(error: &ApiError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(error.body())).into_response()
}

fn server_error(status: u16, kind: &'static str, message: String) -> ApiError {
    ApiError { status, message, param: None, kind, code: None }
}

/// The body, or the error a client gets for it: 413 over --max-body, 408
/// when it does not arrive within --read-timeout.
async fn read_body(state: &AppState, body: Body) -> Result<Bytes, ApiError> {
    let limit = usize::try_from(state.max_body).unwrap_or(usize::MAX);
    let too_large = || {
        let message = format!("the body is larger than this server's limit of {limit} bytes (--max-body)");
        ApiError { status: 413, ..ApiError::invalid("body", message) }
    };
    // A Content-Length over the limit is answered at once, not after the
    // client has sent (or stalled in) that much.
    if usize::try_from(axum::body::HttpBody::size_hint(&body).lower()).map_or(true, |declared| declared > limit) {
        return Err(too_large());
    }
    match tokio::time::timeout(state.read_timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => Err(ApiError {
            status: 408,
            ..ApiError::invalid("body", format!("the body did not arrive within {} s (--read-timeout)", state.read_timeout.as_secs()))
        }),
        Ok(Err(e)) => {
            let error = e.into_inner();
            if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Err(too_large())
            } else {
                Err(ApiError::invalid("body", format!("the body could not be read: {error}")))
            }
        }
        Ok(Ok(bytes)) => Ok(bytes),
    }
}

/// Marks a request's work cancelled and logs it if the handler is dropped
/// before it answers (the client went away).
struct CancelOnDrop<'s> {
    cancelled: Arc<AtomicBool>,
    state: &'s AppState,
    id: u64,
    started: Instant,
    prompts: usize,
    tokens: usize,
    route: &'s str,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.cancelled.store(true, Ordering::Relaxed);
            let entry = Entry {
                prompts: self.prompts,
                tokens: self.tokens,
                error: Some("client disconnected; its work is cancelled".into()),
                ..Entry::default()
            };
            self.state.log(self.id, self.route, 499, self.started, &entry);
        }
    }
}

async fn completions_route(State(state): State<Arc<AppState>>, uri: Uri, request: Request) -> Response {
    let route = format!("POST {}", uri.path());
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let mut entry = Entry::default();
    let result = complete(&state, &route, id, started, request.into_body(), &mut entry).await;
    let response = match result {
        Ok(bytes) => ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], bytes).into_response(),
        Err(error) => {
            entry.error = Some(error.message.clone());
            let mut response = error_response(&error);
            if error.status == 503 {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            response
        }
    };
    state.log(id, &route, response.status().as_u16(), started, &entry);
    response
}

async fn complete(state: &AppState, route: &str, id: u64, started: Instant, body: Body, entry: &mut Entry) -> Result<Vec<u8>, ApiError> {
    let body = read_body(state, body).await?;
    let request = CompletionRequest::parse(&body, &state.completions.model, &state.completions.limits)?;
    entry.prompts = request.len();
    let job = state.completions.prepare(request)?;
    entry.tokens = job.prompt_tokens();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let cancelled = Arc::new(AtomicBool::new(false));
    let mut guard =
        CancelOnDrop { cancelled: cancelled.clone(), state, id, started, prompts: entry.prompts, tokens: entry.tokens, route, armed: true };
    let work = Work {
        prompts: job.prompts.iter().map(|p| p.request.clone()).collect(),
        cancelled,
        enqueued: Instant::now(),
        reply: Box::new(move |outcome| {
            let _ = sender.send(outcome);
        }),
    };
    if let Err(refused) = state.queue.submit(work) {
        guard.armed = false;
        return Err(match refused {
            Refused::Full => server_error(
                503,
                "server_overloaded",
                format!(
                    "the queue is full (at most {} requests, {} prompt tokens: --queue, --queue-tokens); retry after a second",
                    state.queue.capacity(),
                    state.queue.token_capacity()
                ),
            ),
            Refused::Closed => server_error(503, "server_shutting_down", "the server is stopping".into()),
        });
    }
    let outcome = receiver.await;
    guard.armed = false;
    match outcome {
        Ok(Outcome::Scored { rows, wait, compute, pass_prompts }) => {
            entry.wait = Some(wait);
            entry.compute = Some(compute);
            entry.pass_prompts = Some(pass_prompts);
            let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let response = state.completions.respond(format!("cmpl-{id}"), created, &job, &rows);
            // Written straight to bytes: no JSON tree of a large answer is built.
            serde_json::to_vec(&response).map_err(|e| server_error(500, "server_error", format!("could not write the answer: {e}")))
        }
        Ok(Outcome::Failed(message)) => Err(server_error(500, "server_error", format!("scoring failed: {message}"))),
        Ok(Outcome::Cancelled) | Err(_) => Err(server_error(500, "server_error", "the scorer dropped the request".into())),
    }
}

async fn simple(
    state: &AppState,
    route: &str,
    body: Body,
    answer: impl FnOnce(&Completions, &[u8]) -> Result<Value, ApiError>,
) -> Response {
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let mut entry = Entry::default();
    let result = read_body(state, body).await.and_then(|b| answer(&state.completions, &b));
    let response = match result {
        Ok(value) => (StatusCode::OK, Json(value)).into_response(),
        Err(error) => {
            entry.error = Some(error.message.clone());
            error_response(&error)
        }
    };
    state.log(id, route, response.status().as_u16(), started, &entry);
    response
}

async fn tokenize(State(state): State<Arc<AppState>>, request: Request) -> Response {
    simple(&state, "POST /tokenize", request.into_body(), |c, b| c.tokenize(b)).await
}

async fn detokenize(State(state): State<Arc<AppState>>, request: Request) -> Response {
    simple(&state, "POST /detokenize", request.into_body(), |c, b| c.detokenize(b)).await
}

async fn tokenizer_info(State(state): State<Arc<AppState>>) -> Response {
    simple(&state, "GET /tokenizer_info", Body::empty(), |c, _| Ok(c.tokenizer_info())).await
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    simple(&state, "GET /v1/models", Body::empty(), |c, _| Ok(c.models())).await
}

/// Liveness, and how many requests were dropped unscored because their
/// clients left while they waited.
async fn health(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(serde_json::json!({"status": "ok", "cancelled_before_scoring": state.queue.skipped()}))
}

async fn method_not_allowed(request: Request) -> Response {
    let error = server_error(
        405,
        "invalid_request_error",
        format!("{} is not allowed on {} (see mcscore serve --help for each route's method)", request.method(), request.uri().path()),
    );
    error_response(&error)
}

async fn not_found(request: Request) -> Response {
    let path = request.uri().path();
    // Clients written for a chat server try these first: say what this one is.
    let message = if ["/v1/chat/completions", "/chat/completions"].contains(&path) {
        format!(
            "no route {} {path}: mcscore serve scores prompts and generates nothing, so it has no chat endpoint; \
             send the rendered prompt to /v1/completions with echo and max_tokens 0 (lm-eval: local-completions \
             with --apply_chat_template, docs/chat.md)",
            request.method()
        )
    } else {
        format!("no route {} {path} (see mcscore serve --help)", request.method())
    };
    error_response(&server_error(404, "invalid_request_error", message))
}

/// Whether a Host header names this server in a way no web page can
/// borrow: an IP address (no DNS was asked), `localhost`, or a name the
/// operator allowed. DNS rebinding points an attacker's name at 127.0.0.1;
/// its requests carry that name, and are refused.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit())).map_or(host, |(name, _)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<std::net::IpAddr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
        || allowed.iter().any(|a| a == "*" || a.eq_ignore_ascii_case(&name))
}

/// Every route: a Host this server answers to, and a JSON body on POST (a
/// web page can send `text/plain` across origins without asking; JSON it
/// cannot).
async fn guard(State(state): State<Arc<AppState>>, headers: HeaderMap, request: Request, next: Next) -> Response {
    let refuse = |status: u16, message: String| refuse(&state, &request, server_error(status, "invalid_request_error", message));
    let mut hosts = headers.get_all(header::HOST).iter();
    let (host, second) = (hosts.next(), hosts.next());
    if second.is_some() {
        return refuse(400, "two Host headers; a request has one".into());
    }
    let host = host.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).unwrap_or_default();
    // An absolute request target (`GET http://name/path`) names the host too.
    let target = request.uri().authority().map(|a| a.as_str().to_owned());
    for name in std::iter::once(&host).chain(target.as_ref()) {
        if !host_allowed(name, &state.allowed_hosts) {
            let message = format!(
                "Host {name:?} is not one this server answers to: use an IP address or localhost, or start it with --allowed-host NAME"
            );
            return refuse(403, message);
        }
    }
    if request.method() == Method::POST {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return refuse(415, "the body must be JSON, sent with `Content-Type: application/json`".into());
        }
    }
    next.run(request).await
}

/// A request refused before its route: logged, and answered with `error`.
fn refuse(state: &AppState, request: &Request, error: ApiError) -> Response {
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let route = format!("{} {}", request.method(), request.uri().path());
    state.log(id, &route, error.status, Instant::now(), &Entry { error: Some(error.message.clone()), ..Entry::default() });
    error_response(&error)
}

/// Every route but /health needs the key, when one is set.
async fn authorize(State(state): State<Arc<AppState>>, headers: HeaderMap, request: Request, next: Next) -> Response {
    if let Some(key) = &state.api_key {
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        let digest = given.map(|g| mcscore_format::sha256_hex(g.as_bytes()));
        let matches = digest.is_some_and(|d| bool::from(d.as_bytes().ct_eq(key.as_bytes())));
        if !matches {
            let error = ApiError {
                status: 401,
                message: "missing or wrong API key: send `Authorization: Bearer KEY` with the server's --api-key".into(),
                param: None,
                kind: "authentication_error",
                code: Some("invalid_api_key"),
            };
            return refuse(&state, &request, error);
        }
    }
    next.run(request).await
}

/// The first of SIGINT, SIGTERM (Slurm, Kubernetes) and SIGHUP (a closed
/// terminal): each drains the server the same way.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    // Each signal on its own: one that cannot be listened for leaves the others.
    #[cfg(unix)]
    let on = |kind: tokio::signal::unix::SignalKind| async move {
        match tokio::signal::unix::signal(kind) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(unix)]
    let (terminate, hangup) = (on(tokio::signal::unix::SignalKind::terminate()), on(tokio::signal::unix::SignalKind::hangup()));
    #[cfg(not(unix))]
    let (terminate, hangup) = (std::future::pending::<()>(), std::future::pending::<()>());
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
        () = hangup => {},
    }
}

/// Accepts connections until SIGINT, SIGTERM or SIGHUP, each served by hyper with a
/// read timeout on request heads (which also closes idle connections); then
/// lets the requests in flight finish, for at most `shutdown_timeout`, or
/// until a second signal.
/// Returns whether every connection finished before the deadline.
async fn serve_connections(listener: tokio::net::TcpListener, app: Router, read_timeout: Duration, shutdown_timeout: Duration) -> bool {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    // Without half_close: a client whose end of input arrives while its
    // request is scored is taken as gone and its work cancelled, as nginx and
    // llama-server take it. TCP cannot tell a client that shut down only its
    // sending side (`nc -N`) from one that left, and a scorer that kept
    // computing for clients that left would starve those still waiting.
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(read_timeout);
    let stop = shutdown_signal();
    tokio::pin!(stop);
    let mut warned = false;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let service = hyper_util::service::TowerToHyperService::new(app.clone());
                    let connection = graceful.watch(http.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
                    tokio::spawn(async move {
                        let _ = connection.await;
                    });
                }
                Err(e) => {
                    // Out of descriptors (EMFILE) or the like: stalled
                    // connections time out and free them; try again soon.
                    if !warned {
                        eprintln!("mcscore serve: warning: cannot accept a connection: {e}; retrying");
                        warned = true;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = &mut stop => break,
        }
    }
    drop(listener);
    eprintln!(
        "mcscore serve: stopping: no new connections; finishing the requests in flight (at most {} s; a second signal stops now)",
        shutdown_timeout.as_secs()
    );
    tokio::select! {
        () = graceful.shutdown() => true,
        () = tokio::time::sleep(shutdown_timeout) => {
            eprintln!("mcscore serve: connections still open after {} s (--shutdown-timeout): closed", shutdown_timeout.as_secs());
            false
        }
        () = shutdown_signal() => {
            eprintln!("mcscore serve: second signal: closing every connection now");
            false
        }
    }
}

pub(crate) fn run(args: Args) -> anyhow::Result<crate::Outcome> {
    // An empty key (an exported but empty MCSCORE_API_KEY) would serve without one.
    if args.api_key.as_deref() == Some("") {
        let message = "--api-key (or MCSCORE_API_KEY) is empty; give a key, or leave both unset to serve without one";
        return Err(crate::UsageError(message.into()).into());
    }
    if args.alias.as_deref() == Some("") {
        return Err(crate::UsageError("--alias is empty; give the name clients send as `model`".into()).into());
    }
    if args.allowed_hosts.iter().any(|h| h.is_empty()) {
        return Err(crate::UsageError("--allowed-host is empty; give a host name (or `*` for any)".into()).into());
    }
    let model_path = match &args.model {
        Some(model) => model.clone(),
        None => defaults::model()?,
    };
    let settings = args.compute.settings(ContextSize::PerSequence(args.ctx_size), None)?;
    let alias = args.alias.clone().unwrap_or_else(|| {
        let name = model_path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        name.strip_suffix(".gguf").map_or(name.clone(), str::to_owned)
    });
    // The port first: a busy one is said before a minute of model loading.
    let address = SocketAddr::new(args.host, args.port);
    let listener =
        std::net::TcpListener::bind(address).with_context(|| format!("cannot listen on {address}; pick another --port or --host"))?;
    listener.set_nonblocking(true).context("setting up the listening socket")?;
    eprintln!("mcscore serve: loading {}", model_path.display());
    let engine = Arc::new(Engine::load(&model_path, &settings)?);
    let created = std::fs::metadata(&model_path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let max_prompt = args.ctx_size as usize;
    let session = SessionLimits { max_prompt, branches: args.parallel };
    let queue = Queue::start(engine.clone(), settings, session, args.queue as usize, args.queue_tokens as usize)?;
    let limits = Limits { prompts: args.max_prompts as usize, tokens: args.max_request_tokens as usize, ..Limits::default() };
    let completions = Completions::new(engine, ModelInfo { id: alias.clone(), created }, max_prompt, limits);
    let api_key = args.api_key.as_deref().map(|key| mcscore_format::sha256_hex(key.as_bytes()));
    let state = Arc::new(AppState {
        completions,
        queue,
        api_key,
        next_id: AtomicU64::new(1),
        json_log: args.log_format == "json",
        max_body: args.max_body,
        read_timeout: Duration::from_secs(args.read_timeout),
        allowed_hosts: args.allowed_hosts.clone(),
    });
    if !args.host.is_loopback() && state.api_key.is_none() {
        eprintln!("mcscore serve: warning: listening on {} without --api-key: anyone who can reach it can use it", args.host);
    }
    let protected = Router::new()
        .route("/v1/completions", post(completions_route))
        .route("/completions", post(completions_route))
        .route("/tokenize", post(tokenize))
        .route("/detokenize", post(detokenize))
        .route("/tokenizer_info", get(tokenizer_info))
        .route("/v1/models", get(models))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize));
    let app = Router::new()
        .route("/health", get(health))
        .merge(protected)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state.clone());

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    let clean = runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener).context("setting up the listening socket")?;
        let bound = listener.local_addr().context("reading the bound address")?;
        eprintln!(
            "mcscore serve: listening on http://{bound} (model `{alias}`, prompts up to {max_prompt} tokens, queue {}{})",
            args.queue,
            if state.api_key.is_some() { ", API key required" } else { "" }
        );
        anyhow::Ok(
            serve_connections(listener, app, Duration::from_secs(args.read_timeout), Duration::from_secs(args.shutdown_timeout)).await,
        )
    })?;
    // Connections still open after the deadline are dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(1));
    // After the deadline the scorer may be inside a long fill: the process
    // ends without waiting for it (its clients are gone).
    match Arc::try_unwrap(state) {
        Ok(state) if clean => state.queue.shutdown(),
        Ok(_) => {}
        Err(_) => eprintln!("mcscore serve: warning: requests still held the scorer at exit"),
    }
    eprintln!("mcscore serve: stopped");
    Ok(crate::Outcome::Ok)
}

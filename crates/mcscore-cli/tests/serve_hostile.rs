//! `mcscore serve` against hostile clients, each attack reproduced first:
//! a small body that asks for a huge answer, requests a web page could send
//! (text/plain, another Host), stalled and half-sent requests (with few file
//! descriptors), a client that leaves in the middle of its pass, a forged log
//! line, and a shutdown that a stalled client must not hold up.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::server::Server;
use serde_json::json;

#[test]
fn a_small_body_cannot_ask_for_a_huge_answer() {
    let server = Server::start(&[]);
    let before = server.peak_rss();
    // 500,000 one-token prompts with echo and 20 top log-probabilities: about
    // 2 MB of JSON, which answered would take gigabytes.
    let prompts: Vec<Vec<u32>> = vec![vec![2]; 500_000];
    let body = json!({"prompt": prompts, "max_tokens": 1, "echo": true, "logprobs": 20}).to_string();
    let reply = server.request("POST", "/v1/completions", body.as_bytes(), &[]);
    assert_eq!(reply.status, 413, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.json()["error"]["param"], "prompt");
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("--max-prompts"));
    // Within the prompt limit, the answer's size is bounded too.
    let prompts: Vec<Vec<u32>> = vec![vec![2; 200]; 1000];
    let body = json!({"prompt": prompts, "max_tokens": 1, "echo": true, "logprobs": 20}).to_string();
    let reply = server.request("POST", "/v1/completions", body.as_bytes(), &[]);
    assert_eq!(reply.status, 413);
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("log-probabilities"), "{}", reply.json());
    let grown = server.peak_rss().saturating_sub(before);
    assert!(grown < 300 << 20, "refusing grew the server by {} MB", grown >> 20);
    // A body declared larger than --max-body is refused before it is sent,
    // not after the read timeout.
    let mut stream = TcpStream::connect(&server.address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let started = Instant::now();
    stream
        .write_all(
            b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n{",
        )
        .unwrap();
    let mut answer = [0; 12];
    stream.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 413");
    assert!(started.elapsed() < Duration::from_secs(2), "answered after {:?}", started.elapsed());
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "The sky is", "max_tokens": 1})).status, 200);
}

#[test]
fn what_a_web_page_could_send_is_refused() {
    let server = Server::start(&["--allowed-host", "scorer.lab"]);
    let body = br#"{"prompt": "The sky is", "max_tokens": 1}"#;
    // A cross-origin form or fetch without a preflight: text/plain, or none.
    for content_type in [Some("text/plain"), Some("application/x-www-form-urlencoded"), None] {
        let headers: Vec<(&str, &str)> = content_type.iter().map(|c| ("Content-Type", *c)).collect();
        let reply = raw(&server.address, "POST", "/v1/completions", body, &server.address, &headers);
        assert_eq!(reply.0, 415, "{content_type:?}: {}", reply.1);
        assert!(reply.1.contains("application/json"), "{}", reply.1);
    }
    // DNS rebinding: the attacker's name in Host. IP literals, localhost and
    // the names given with --allowed-host are answered.
    let json = [("Content-Type", "application/json")];
    for host in ["attacker.example", "attacker.example:8080", "localhost.attacker.example"] {
        let reply = raw(&server.address, "POST", "/v1/completions", body, host, &json);
        assert_eq!(reply.0, 403, "{host}: {}", reply.1);
        assert_eq!(raw(&server.address, "GET", "/v1/models", b"", host, &[]).0, 403, "{host}");
    }
    let port = server.address.rsplit(':').next().unwrap().to_owned();
    for host in [server.address.clone(), format!("localhost:{port}"), "[::1]".into(), "SCORER.lab:80".into(), "127.0.0.1".into()] {
        let reply = raw(&server.address, "POST", "/v1/completions", body, &host, &json);
        assert_eq!(reply.0, 200, "{host}: {}", reply.1);
    }
    // Two Host headers, or an absolute request target naming another host.
    let twice = raw(&server.address, "GET", "/v1/models", b"", &format!("{}\r\nHost: attacker.example", server.address), &[]);
    assert_eq!(twice.0, 400, "{}", twice.1);
    let absolute = raw(&server.address, "GET", "http://attacker.example/v1/models", b"", &server.address, &[]);
    assert_eq!(absolute.0, 403, "{}", absolute.1);
    // A wrong method says so, in OpenAI's error shape.
    let reply = server.get("/v1/completions");
    assert_eq!(reply.status, 405);
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("GET is not allowed"));
}

#[test]
fn stalled_clients_are_cut_off_and_cannot_starve_the_server() {
    // 64 descriptors in all, 70 stalled connections: without read timeouts
    // nothing else gets in.
    let server = Server::start_with_fd_limit(64, &["--read-timeout", "2"]);
    let mut stalled = Vec::new();
    for i in 0..70 {
        match TcpStream::connect(&server.address) {
            Ok(mut s) => {
                // Half a head, or a head and half a body.
                let part: &[u8] = if i % 2 == 0 {
                    b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-"
                } else {
                    b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"pro"
                };
                s.write_all(part).unwrap();
                stalled.push(s);
            }
            Err(_) => break,
        }
    }
    let started = Instant::now();
    let health = loop {
        match std::panic::catch_unwind(|| server.get("/health").status) {
            Ok(status) => break status,
            Err(_) if started.elapsed() < Duration::from_secs(15) => std::thread::sleep(Duration::from_millis(200)),
            Err(_) => panic!("/health did not answer within 15 s of 70 stalled connections:\n{}", server.log()),
        }
    };
    assert_eq!(health, 200);
    // Each stalled connection was closed (408 for a half body), not kept.
    let mut answers = Vec::new();
    for mut s in stalled.drain(..) {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        answers.push(String::from_utf8_lossy(&reply).into_owned());
    }
    assert!(answers.iter().any(|a| a.starts_with("HTTP/1.1 408")), "a half-sent body gets 408: {:?}", &answers[..4]);
}

#[test]
fn a_half_sent_request_does_not_keep_the_server_alive_after_sigterm() {
    let mut server = Server::start(&["--read-timeout", "60", "--shutdown-timeout", "2"]);
    let mut stalled = TcpStream::connect(&server.address).unwrap();
    stalled
        .write_all(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    server.signal("TERM");
    let status = server.wait_for(Duration::from_secs(10)).unwrap_or_else(|| panic!("still running 10 s after SIGTERM:\n{}", server.log()));
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
    assert!(server.log().contains("--shutdown-timeout"), "{}", server.log());
}

#[test]
fn a_long_computation_does_not_hold_the_shutdown() {
    let mut server = Server::start(&["--shutdown-timeout", "1"]);
    let prompt = "The quick brown fox jumps over the lazy dog. ".repeat(350);
    let address = server.address.clone();
    let body = json!({"prompt": prompt, "max_tokens": 0, "echo": true}).to_string();
    let _client = std::thread::spawn(move || common::server::request(&address, "POST", "/v1/completions", body.as_bytes(), &[]));
    std::thread::sleep(Duration::from_millis(500));
    // SIGHUP (a closed terminal) drains the server as SIGTERM does.
    let started = Instant::now();
    server.signal("HUP");
    let status = server.wait_for(Duration::from_secs(20)).unwrap_or_else(|| panic!("still running 20 s after SIGHUP:\n{}", server.log()));
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}:\n{}", started.elapsed(), server.log());
    assert!(server.log().contains("mcscore serve: stopping"), "{}", server.log());
}

#[test]
fn a_client_that_leaves_mid_pass_stops_its_computation() {
    let server = Server::start(&[]);
    let long: Vec<String> = (0..400).map(|i| format!("{} {i}", "The quick brown fox jumps over the lazy dog.".repeat(20))).collect();
    let body = json!({"prompt": long, "max_tokens": 0, "echo": true}).to_string();
    {
        let mut stream = TcpStream::connect(&server.address).unwrap();
        write!(
            stream,
            "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(800));
    }
    // 400 prompts of ~200 tokens take about 20 s to score here; the next
    // request waits for the fill in progress, not for the rest of the pass.
    let started = Instant::now();
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "The sky is", "max_tokens": 1})).status, 200);
    assert!(started.elapsed() < Duration::from_secs(5), "the next request waited {:?}:\n{}", started.elapsed(), server.log());
    assert!(server.log_has("client disconnected"), "{}", server.log());
}

#[test]
fn request_fields_cannot_forge_log_lines() {
    let server = Server::start(&[]);
    for separator in ["\n", "\r", "\u{2028}", "\u{85}"] {
        let model = format!("x{separator}mcscore serve: #999 POST /v1/completions 200 forged");
        let reply = server.post("/v1/completions", &json!({"model": model, "prompt": "a", "max_tokens": 1}));
        assert_eq!(reply.status, 404);
    }
    assert!(server.log_has("\\u{85}mcscore serve: #999"), "{}", server.log());
    let log = server.log();
    let forged = |l: &str| l.trim_start().starts_with("mcscore serve: #999");
    assert!(!log.lines().any(forged) && !log.split(['\r', '\u{2028}', '\u{85}']).any(forged), "{log}");
}

#[test]
fn a_busy_port_is_said_before_the_model_loads() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = common::run(&["serve", "-m", &common::model(), "--port", &port]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = common::stderr(&out);
    assert!(stderr.contains("cannot listen on 127.0.0.1:") && !stderr.contains("loading"), "{stderr}");
}

/// One request with the given Host and headers: status and body text.
fn raw(address: &str, method: &str, path: &str, body: &[u8], host: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let text = String::from_utf8_lossy(&reply).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

//! `mcscore serve` over real HTTP with the real model: the answers' shape,
//! every refusal, the API key, the bounded queue under 32 concurrent clients,
//! client disconnects and SIGTERM. lm-evaluation-harness itself runs against
//! it in `serve_lm_eval.rs`.

mod common;

use std::time::{Duration, Instant};

use common::server::{request, Server};
use serde_json::{json, Value};

const PROMPT: &str = "Question: \"Which technology was developed most recently?\" Answer: television";

#[test]
fn answers_have_the_shape_openai_clients_read() {
    let server = Server::start(&[]);
    assert_eq!(server.get("/health").json()["status"], "ok");
    let models = server.get("/v1/models").json();
    assert_eq!(models["data"][0]["id"], "gemma-3-270m-q4_k_m");
    let info = server.get("/tokenizer_info").json();
    assert_eq!((info["bos_token"].as_str(), info["add_bos_token"].as_bool()), (Some("<bos>"), Some(true)));

    // lm-eval's remote tokenizer: no BOS asked, and `<bos>` read as the special token.
    let tokens: Vec<u64> =
        serde_json::from_value(server.post("/tokenize", &json!({"prompt": PROMPT, "add_special_tokens": false})).json()["tokens"].clone())
            .unwrap();
    let bos = server.post("/tokenize", &json!({"prompt": "<bos>", "add_special_tokens": false})).json()["tokens"][0].as_u64().unwrap();
    assert_eq!(Some(bos), info["bos_token_id"].as_u64());
    assert_eq!(server.post("/tokenize", &json!({"prompt": PROMPT})).json()["tokens"][0].as_u64(), Some(bos), "a BOS by default");
    assert_eq!(server.post("/detokenize", &json!({"tokens": tokens})).json()["prompt"], PROMPT);

    // lm-eval's loglikelihood request: echo, one greedy token, top-1.
    let text = server.post("/v1/completions", &json!({"model": "gemma-3-270m-q4_k_m", "prompt": PROMPT, "max_tokens": 1, "echo": true, "logprobs": 1, "temperature": 0, "seed": 1234})).json();
    let choice = &text["choices"][0];
    let lp = &choice["logprobs"];
    let n = tokens.len();
    assert_eq!(lp["tokens"].as_array().unwrap().len(), n + 1, "each prompt token (the implicit BOS not echoed), then the generated one");
    assert!(choice["text"].as_str().unwrap().starts_with(PROMPT));
    assert_eq!(text["usage"]["prompt_tokens"].as_u64(), Some(n as u64 + 1), "the BOS read counts");
    assert_eq!(text["usage"]["completion_tokens"], 1);
    assert_eq!(choice["finish_reason"], "length");
    let offsets: Vec<usize> = serde_json::from_value(lp["text_offset"].clone()).unwrap();
    let pieces: Vec<String> = serde_json::from_value(lp["tokens"].clone()).unwrap();
    for k in 0..n {
        assert_eq!(&PROMPT[offsets[k]..offsets[k] + pieces[k].len()], pieces[k], "token {k} sits at its text_offset");
    }
    assert_eq!(offsets[n], PROMPT.len());
    let logprobs: Vec<f64> =
        lp["token_logprobs"].as_array().unwrap().iter().map(|v| v.as_f64().expect("after the BOS every token has one")).collect();
    assert!(logprobs.iter().all(|&l| l < 0.0));
    for (k, top) in lp["top_logprobs"].as_array().unwrap().iter().enumerate() {
        let top = top.as_object().unwrap();
        assert_eq!(top.len(), 1);
        assert!(top.values().next().unwrap().as_f64().unwrap() >= logprobs[k] - 1e-9, "the top token is at least as likely");
    }
    // The greedy token is the top one.
    assert_eq!(lp["top_logprobs"][n].as_object().unwrap().keys().next().unwrap(), &pieces[n]);

    // The same prompt as token ids, with and without the BOS: the same numbers.
    let by_ids = server.post("/v1/completions", &json!({"prompt": tokens, "max_tokens": 1, "echo": true, "logprobs": 1})).json();
    let with_bos: Vec<u64> = std::iter::once(bos).chain(tokens.iter().copied()).collect();
    let explicit = server.post("/v1/completions", &json!({"prompt": [with_bos], "max_tokens": 0, "echo": true, "logprobs": 3})).json();
    let explicit_lp = &explicit["choices"][0]["logprobs"];
    assert_eq!(explicit_lp["token_logprobs"][0], Value::Null, "nothing precedes an explicit BOS");
    assert_eq!(explicit_lp["top_logprobs"][0], Value::Null);
    assert_eq!(explicit_lp["tokens"].as_array().unwrap().len(), n + 1, "BOS and the prompt; nothing generated");
    assert_eq!(explicit_lp["top_logprobs"][1].as_object().unwrap().len(), 3);
    for k in 0..n {
        let a = by_ids["choices"][0]["logprobs"]["token_logprobs"][k].as_f64().unwrap();
        let b = explicit_lp["token_logprobs"][k + 1].as_f64().unwrap();
        assert!((a - logprobs[k]).abs() < 1e-9, "token {k}: ids {a} vs text {}", logprobs[k]);
        assert!((a - b).abs() < 1e-9, "token {k}: implicit BOS {a} vs explicit {b}");
    }

    // Without echo: the generated token only; without logprobs: null.
    let plain = server.post("/completions", &json!({"prompt": [PROMPT, "The sky is"], "max_tokens": 1})).json();
    assert_eq!(plain["choices"].as_array().unwrap().len(), 2);
    assert_eq!(plain["choices"][1]["index"], 1);
    assert_eq!(plain["choices"][0]["logprobs"], Value::Null);
    assert_eq!(plain["choices"][0]["text"].as_str(), Some(pieces[n].as_str()));
    assert!(server.log_has("POST /completions 200"), "the log names the route used:\n{}", server.log());
    let one = server.post("/v1/completions", &json!({"prompt": PROMPT, "max_tokens": 1, "logprobs": 2})).json();
    assert_eq!(one["choices"][0]["logprobs"]["text_offset"][0].as_u64(), Some(PROMPT.len() as u64), "offsets count the prompt");
    assert!(
        (one["choices"][0]["logprobs"]["token_logprobs"][0].as_f64().unwrap() - lp["token_logprobs"][n].as_f64().unwrap()).abs() < 1e-9
    );
}

#[test]
fn every_bad_input_gets_a_4xx_and_the_server_keeps_answering() {
    let server = Server::start(&["-c", "64", "--max-body", "4096"]);
    let long: String = "word ".repeat(200);
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("malformed JSON", b"{\"prompt\": \"a\", ".to_vec(), 400, "body"),
        ("not an object", b"[1, 2]".to_vec(), 400, "body"),
        ("unknown field", br#"{"prompt": "a", "max_tokens": 1, "best_guess": true}"#.to_vec(), 400, "best_guess"),
        ("token outside the vocabulary", br#"{"prompt": [2, 262144], "max_tokens": 1}"#.to_vec(), 400, "prompt"),
        ("negative token", br#"{"prompt": [2, -1], "max_tokens": 1}"#.to_vec(), 400, "prompt"),
        ("empty prompt", br#"{"prompt": "", "max_tokens": 1}"#.to_vec(), 400, "prompt"),
        ("empty token list", br#"{"prompt": [[]], "max_tokens": 1}"#.to_vec(), 400, "prompt"),
        ("prompt longer than -c", json!({"prompt": long.trim(), "max_tokens": 0}).to_string().into_bytes(), 400, "prompt"),
        ("max_tokens above 1", br#"{"prompt": "a", "max_tokens": 16}"#.to_vec(), 400, "max_tokens"),
        ("max_tokens absent (OpenAI: 16)", br#"{"prompt": "a"}"#.to_vec(), 400, "max_tokens"),
        ("n above 1", br#"{"prompt": "a", "max_tokens": 1, "n": 2}"#.to_vec(), 400, "n"),
        ("logprobs above the cap", br#"{"prompt": "a", "max_tokens": 1, "logprobs": 50}"#.to_vec(), 400, "logprobs"),
        ("sampling", br#"{"prompt": "a", "max_tokens": 1, "temperature": 0.8}"#.to_vec(), 400, "temperature"),
        ("streaming", br#"{"prompt": "a", "max_tokens": 1, "stream": true}"#.to_vec(), 400, "stream"),
        ("another model", br#"{"prompt": "a", "max_tokens": 1, "model": "gpt-3.5-turbo-instruct"}"#.to_vec(), 404, "model"),
        ("body over --max-body", json!({"prompt": "x".repeat(5000), "max_tokens": 0}).to_string().into_bytes(), 413, "body"),
    ];
    for (what, body, status, param) in &cases {
        let reply = server.request("POST", "/v1/completions", body, &[]);
        assert_eq!(reply.status, *status, "{what}: {}", String::from_utf8_lossy(&reply.body));
        let error = &reply.json()["error"];
        assert_eq!(error["param"], *param, "{what}: {error}");
        assert!(error["message"].as_str().is_some_and(|m| m.len() > 10), "{what}: {error}");
        // Still up, and still right.
        let ok = server.post("/v1/completions", &json!({"prompt": "The sky is", "max_tokens": 1}));
        assert_eq!(ok.status, 200, "after {what}");
    }
    assert!(server.post("/v1/completions", &json!({"prompt": long.trim(), "max_tokens": 0})).json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 64"));
    assert_eq!(server.post("/detokenize", &json!({"tokens": [5, 999999]})).status, 400);
    assert_eq!(server.post("/tokenize", &json!({"text": "a"})).status, 400);
    let missing = server.get("/v1/chat/completions");
    assert_eq!((missing.status, missing.json()["error"]["type"].as_str()), (404, Some("invalid_request_error")));
    let chat = server.post("/v1/chat/completions", &json!({"messages": [{"role": "user", "content": "hi"}]}));
    assert_eq!(chat.status, 404);
    assert!(chat.json()["error"]["message"].as_str().unwrap().contains("no chat endpoint"), "{}", chat.json());
    let other = server.get("/v1/embeddings");
    assert!(other.json()["error"]["message"].as_str().unwrap().starts_with("no route GET /v1/embeddings"), "{}", other.json());
    // Each request left one log line with its status.
    for status in [" 400", " 404", " 413", " 200"] {
        assert!(server.log_has(&format!("POST /v1/completions{status}")), "no{status} line in:\n{}", server.log());
    }
}

#[test]
fn an_empty_api_key_or_alias_is_a_usage_error_not_an_open_server() {
    for (args, env, flag) in
        [(vec!["--api-key", ""], None, "--api-key"), (vec![], Some(""), "MCSCORE_API_KEY"), (vec!["--alias", ""], None, "--alias")]
    {
        let mut command = common::mcscore();
        command.args(["serve", "--port", "0"]).args(&args);
        if let Some(value) = env {
            command.env("MCSCORE_API_KEY", value);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?} {env:?}");
        assert!(common::stderr(&output).contains(flag), "{}", common::stderr(&output));
    }
}

#[test]
fn an_api_key_guards_every_route_but_health() {
    let server = Server::start(&["--api-key", "s3cret"]);
    assert_eq!(server.get("/health").status, 200);
    let routes: [(&str, &str, &[u8]); 5] = [
        ("GET", "/v1/models", b""),
        ("GET", "/tokenizer_info", b""),
        ("POST", "/v1/completions", br#"{"prompt": "a", "max_tokens": 1}"#),
        ("POST", "/tokenize", br#"{"prompt": "a"}"#),
        ("POST", "/detokenize", br#"{"tokens": [2]}"#),
    ];
    for (method, path, body) in routes {
        let refused = server.request(method, path, body, &[]);
        assert_eq!((refused.status, refused.json()["error"]["type"].as_str()), (401, Some("authentication_error")), "{path}");
        assert_eq!(server.request(method, path, body, &[("Authorization", "Bearer wrong")]).status, 401, "{path}");
        assert_eq!(server.request(method, path, body, &[("Authorization", "Bearer s3cret")]).status, 200, "{path}");
    }
}

/// 32 clients at once, each sending a fixed number of requests: every request
/// is answered, 200 or (when the queue is full) 503 with Retry-After.
fn load(server: &Server, clients: usize, each: usize) -> (Vec<u16>, Vec<Duration>, Duration) {
    let started = Instant::now();
    let results: Vec<(u16, Duration, bool)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let address = server.address.clone();
                scope.spawn(move || {
                    (0..each)
                        .map(|r| {
                            let body = json!({"prompt": [format!("{PROMPT} {c}"), format!("Client {c} request {r} says")], "max_tokens": 1, "echo": true, "logprobs": 1});
                            let sent = Instant::now();
                            let reply = request(&address, "POST", "/v1/completions", body.to_string().as_bytes(), &[]);
                            let retry = reply.headers.contains("retry-after: 1");
                            (reply.status, sent.elapsed(), retry)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let wall = started.elapsed();
    for (status, _, retry) in &results {
        assert!(*status == 200 || (*status == 503 && *retry), "status {status} (Retry-After: {retry})");
    }
    let mut latencies: Vec<Duration> = results.iter().filter(|r| r.0 == 200).map(|r| r.1).collect();
    latencies.sort();
    (results.iter().map(|r| r.0).collect(), latencies, wall)
}

#[test]
fn thirty_two_clients_lose_no_request_and_a_full_queue_says_503() {
    let server = Server::start(&[]);
    let (statuses, latencies, wall) = load(&server, 32, 4);
    assert_eq!(statuses.len(), 128);
    assert!(statuses.iter().all(|&s| s == 200), "the default queue holds 32 clients: {statuses:?}");
    let p = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    println!("32 clients × 4 requests: p50 {:.0} ms, p99 {:.0} ms, {:.1} requests/s", p(0.5), p(0.99), 128.0 / wall.as_secs_f64());
    drop(server);

    let small = Server::start(&["--queue", "2"]);
    let (statuses, _, _) = load(&small, 32, 2);
    assert_eq!(statuses.len(), 64);
    let refused = statuses.iter().filter(|&&s| s == 503).count();
    assert!(refused > 0 && refused < 64, "a queue of 2 refuses some of 32 clients, not all: {refused} of 64");
    assert!(small.log_has(" 503 "), "refusals are logged");
    assert_eq!(small.post("/v1/completions", &json!({"prompt": "The sky is", "max_tokens": 1})).status, 200);
}

#[test]
fn a_client_that_disconnects_has_its_work_cancelled() {
    let server = Server::start(&[]);
    // Keep the scorer busy with a large request.
    let long: Vec<String> = (0..48).map(|i| format!("{} {i}", "The quick brown fox jumps over the lazy dog.".repeat(20))).collect();
    let busy = {
        let address = server.address.clone();
        let body = json!({"prompt": long, "max_tokens": 0, "echo": true}).to_string();
        std::thread::spawn(move || request(&address, "POST", "/v1/completions", body.as_bytes(), &[]).status)
    };
    std::thread::sleep(Duration::from_millis(300));
    {
        use std::io::Write;
        let body = json!({"prompt": ["one", "two", "three"], "max_tokens": 1}).to_string();
        let mut stream = std::net::TcpStream::connect(&server.address).unwrap();
        write!(
            stream,
            "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // The client goes away before its answer.
    }
    assert_eq!(busy.join().unwrap(), 200);
    assert!(server.log_has("client disconnected"), "{}", server.log());
    let log = server.log();
    assert!(log.contains(" 499 "), "{log}");
    assert!(!log.lines().any(|l| l.contains(" 200 3 prompts")), "the cancelled request was answered anyway:\n{log}");
    // The worker reaches the cancelled request after answering the busy one.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.get("/health").json()["cancelled_before_scoring"] != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.get("/health").json()["cancelled_before_scoring"], 1, "its prompts were never scored:\n{log}");
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "The sky is", "max_tokens": 1})).status, 200);
}

#[test]
fn sigterm_finishes_the_requests_in_flight_and_exits_0() {
    let server = Server::start(&[]);
    let long: Vec<String> = (0..32).map(|i| format!("{} {i}", "The quick brown fox jumps over the lazy dog.".repeat(20))).collect();
    let address = server.address.clone();
    let body = json!({"prompt": long, "max_tokens": 1, "echo": true, "logprobs": 1}).to_string();
    let in_flight = std::thread::spawn(move || request(&address, "POST", "/v1/completions", body.as_bytes(), &[]));
    std::thread::sleep(Duration::from_millis(400));
    let log_before = server.log();
    let status = server.terminate();
    let reply = in_flight.join().unwrap();
    assert_eq!(reply.status, 200, "{log_before}");
    assert_eq!(reply.json()["choices"].as_array().unwrap().len(), 32);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_json_log_has_one_object_per_request() {
    let server = Server::start(&["--log-format", "json"]);
    assert_eq!(server.post("/v1/completions", &json!({"prompt": ["The sky is", "Grass is"], "max_tokens": 1})).status, 200);
    assert_eq!(server.post("/v1/completions", &json!({"prompt": "a", "max_tokens": 9})).status, 400);
    assert!(server.log_has("\"status\":400"), "{}", server.log());
    let lines: Vec<Value> = server.log().lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{}", server.log());
    assert_eq!((lines[0]["status"].as_u64(), lines[0]["prompts"].as_u64()), (Some(200), Some(2)));
    assert!(
        lines[0]["tokens"].as_u64().unwrap() >= 4 && lines[0]["compute_ms"].as_f64().is_some() && lines[0]["queue_ms"].as_f64().is_some()
    );
    assert_eq!(lines[1]["status"], 400);
    assert!(lines[1]["error"].as_str().unwrap().contains("max_tokens"));
}

//! A real `mcscore serve` on a free loopback port, and a small HTTP/1.1
//! client over a socket, so the tests see exactly what goes over the wire.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Server {
    child: Child,
    pub address: String,
    log: Arc<Mutex<String>>,
}

/// An answer: status, headers (as text, lower-cased names) and body.
pub struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

impl Server {
    /// Starts `mcscore serve` on the default model with `extra` flags and
    /// waits until it listens.
    pub fn start(extra: &[&str]) -> Server {
        Server::spawn(super::mcscore(), &super::model(), extra)
    }

    /// Starts it with at most `files` open file descriptors (`ulimit -n`).
    pub fn start_with_fd_limit(files: u32, extra: &[&str]) -> Server {
        let mut shell = std::process::Command::new("sh");
        shell.args(["-c", &format!("ulimit -n {files} && exec \"$0\" \"$@\""), env!("CARGO_BIN_EXE_mcscore")]);
        Server::spawn(shell, &super::model(), extra)
    }

    /// Starts `command` (mcscore, or another build of it) as `serve` of
    /// `model` with `extra`.
    pub fn spawn(mut command: std::process::Command, model: &str, extra: &[&str]) -> Server {
        let mut child = command
            .args(["serve", "-m", model, "--port", "0", "-t", "2"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcscore serve starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (sender, receiver) = mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let _ = sender.send(rest.split_whitespace().next().unwrap_or_default().to_owned());
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let address =
            receiver.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| panic!("the server did not start: {}", log.lock().unwrap()));
        Server { child, address, log }
    }

    /// Everything the server wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether the log has `needle`, waiting up to 10 s for it: a request's
    /// line is written as its answer goes out, and read here a little later.
    pub fn log_has(&self, needle: &str) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn request(&self, method: &str, path: &str, body: &[u8], headers: &[(&str, &str)]) -> Reply {
        request(&self.address, method, path, body, headers)
    }

    pub fn post(&self, path: &str, body: &serde_json::Value) -> Reply {
        self.request("POST", path, body.to_string().as_bytes(), &[])
    }

    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, b"", &[])
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's peak resident memory so far, in bytes (Linux's VmHWM).
    pub fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    /// Sends `signal` (TERM, INT) without waiting.
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill").args([&format!("-{signal}"), &self.pid().to_string()]).status().unwrap();
        assert!(status.success());
    }

    /// Waits for the exit, at most `limit`; `None` if it is still running.
    pub fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn terminate(mut self) -> ExitStatus {
        let status = std::process::Command::new("sh").args(["-c", &format!("kill -TERM {}", self.child.id())]).status().unwrap();
        assert!(status.success());
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`).
pub fn request(address: &str, method: &str, path: &str, body: &[u8], headers: &[(&str, &str)]) -> Reply {
    let mut stream = TcpStream::connect(address).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before reading a large body, and close.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split =
        raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap();
    Reply { status, headers: head, body: raw[split + 4..].to_vec() }
}

//! A fault-injecting HTTP proxy on 127.0.0.1 in front of an S3 server (moto), for the reliability
//! tests (issue 28): every request is forwarded (one connection per exchange, `Connection: close`),
//! recorded, and, where a rule matches, answered with a fault: a 5xx, a reset connection, a short
//! body whose `Content-Length` matches it, a body cut off before its `Content-Length`, a slow reply,
//! or 412 Precondition Failed (an object replaced since its ETag was recorded).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does to a matching exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answers 503 Service Unavailable without asking the server.
    ServerError,
    /// Closes the connection without an answer.
    Reset,
    /// Forwards, then answers with the first half of the body and a `Content-Length` saying so.
    ShortBody,
    /// Forwards, then sends the server's headers and half the body, and closes the connection.
    Truncated,
    /// Waits this long, then forwards.
    Slow(Duration),
    /// Answers 412 Precondition Failed without asking the server.
    PreconditionFailed,
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
    pub if_match: Option<String>,
    pub if_unmodified_since: Option<String>,
}

struct Rule {
    fault: Fault,
    path_contains: String,
    remaining: usize,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    log: Vec<Request>,
}

/// A running proxy; its threads end with the test process.
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    state: Arc<Mutex<State>>,
}

impl FaultProxy {
    /// Starts a proxy forwarding to `upstream` (`http://127.0.0.1:PORT`).
    pub fn start(upstream: &str) -> Self {
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (state, upstream) = (Arc::clone(&shared), upstream.clone());
                std::thread::spawn(move || {
                    let _ = serve(client, &upstream, &state);
                });
            }
        });
        FaultProxy { endpoint, state }
    }

    /// The next `times` ranged GETs whose path contains `path_contains` get `fault`.
    pub fn inject(&self, fault: Fault, path_contains: &str, times: usize) {
        let rule = Rule { fault, path_contains: path_contains.to_string(), remaining: times };
        self.state.lock().unwrap().rules.push(rule);
    }

    /// Removes every rule (with the faults not yet used up).
    pub fn clear(&self) {
        self.state.lock().unwrap().rules.clear();
    }

    /// The requests seen so far, and forgets them.
    pub fn take_requests(&self) -> Vec<Request> {
        std::mem::take(&mut self.state.lock().unwrap().log)
    }

    /// The environment pointing vzarr at this proxy instead of the server.
    pub fn env(&self, server_env: Vec<(String, String)>) -> Vec<(String, String)> {
        server_env
            .into_iter()
            .map(|(k, v)| if k == "AWS_ENDPOINT" { (k, self.endpoint.clone()) } else { (k, v) })
            .collect()
    }
}

/// A request's head (request line and headers, without the blank line) and body.
fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<(Vec<String>, Vec<u8>)>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            break;
        }
        lines.push(line);
    }
    let length = header(&lines, "content-length").and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some((lines, body)))
}

fn header(lines: &[String], name: &str) -> Option<String> {
    lines.iter().skip(1).find_map(|l| {
        let (key, value) = l.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_string())
    })
}

/// Serves one client connection: one exchange, then the connection is closed.
fn serve(client: TcpStream, upstream: &str, state: &Mutex<State>) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut client = client;
    let Some((lines, body)) = read_request(&mut reader)? else { return Ok(()) };
    let mut parts = lines[0].split_whitespace();
    let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let request = Request {
        method: method.clone(),
        path: path.clone(),
        range: header(&lines, "range"),
        if_match: header(&lines, "if-match"),
        if_unmodified_since: header(&lines, "if-unmodified-since"),
    };
    let fault = {
        let mut state = state.lock().unwrap();
        let ranged_get = method == "GET" && request.range.is_some();
        state.log.push(request);
        let rule = state.rules.iter_mut().find(|r| ranged_get && r.remaining > 0 && path.contains(&r.path_contains));
        rule.map(|r| {
            r.remaining -= 1;
            r.fault
        })
    };
    let refuse = |client: &mut TcpStream, status: &str| {
        let reply = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        client.write_all(reply.as_bytes())
    };
    match fault {
        Some(Fault::Reset) => return client.shutdown(Shutdown::Both),
        Some(Fault::ServerError) => return refuse(&mut client, "503 Service Unavailable"),
        Some(Fault::PreconditionFailed) => return refuse(&mut client, "412 Precondition Failed"),
        Some(Fault::Slow(delay)) => std::thread::sleep(delay),
        _ => {}
    }
    let mut server = TcpStream::connect(upstream)?;
    let mut head = String::new();
    for line in &lines {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            head.push_str(line);
            head.push_str("\r\n");
        }
    }
    head.push_str("Connection: close\r\n\r\n");
    server.write_all(head.as_bytes())?;
    server.write_all(&body)?;
    let mut reply = Vec::new();
    server.read_to_end(&mut reply)?;
    let split = reply.windows(4).position(|w| w == b"\r\n\r\n").map_or(reply.len(), |i| i + 4);
    let (reply_head, reply_body) = reply.split_at(split);
    let reply_head = String::from_utf8_lossy(reply_head).into_owned();
    let has_length = reply_head.to_ascii_lowercase().contains("\r\ncontent-length:");
    match fault {
        Some(Fault::ShortBody) if has_length && reply_body.len() > 1 => {
            let short = &reply_body[..reply_body.len() / 2];
            let head = with_length(&reply_head, short.len());
            client.write_all(head.as_bytes())?;
            client.write_all(short)
        }
        Some(Fault::Truncated) if has_length && reply_body.len() > 1 => {
            client.write_all(reply_head.as_bytes())?;
            client.write_all(&reply_body[..reply_body.len() / 2])?;
            client.shutdown(Shutdown::Both)
        }
        _ => client.write_all(&reply),
    }
}

/// A response head with its `Content-Length` set to `length`.
fn with_length(head: &str, length: usize) -> String {
    let mut out = String::new();
    for line in head.split("\r\n") {
        if line.to_ascii_lowercase().starts_with("content-length:") {
            out.push_str(&format!("Content-Length: {length}"));
        } else if line.to_ascii_lowercase().starts_with("content-range:") {
            // bytes START-END/TOTAL: the end follows the shortened body.
            let value = line.split_once(':').map_or("", |(_, v)| v.trim());
            let start: u64 =
                value.trim_start_matches("bytes ").split('-').next().and_then(|s| s.parse().ok()).unwrap_or(0);
            let total = value.rsplit('/').next().unwrap_or("*");
            out.push_str(&format!("Content-Range: bytes {start}-{}/{total}", start + length as u64 - 1));
        } else {
            out.push_str(line);
        }
        out.push_str("\r\n");
    }
    out.truncate(out.len() - 2);
    out
}

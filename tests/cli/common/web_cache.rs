//! A static web server on loopback that serves a directory as a result
//! cache does, counts the requests it gets, and can be told to answer every
//! request with one status (404: a cache that lacks everything; 503: one
//! that fails) or to ask for credentials.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub struct WebCache {
    pub url: String,
    state: Arc<State>,
}

struct State {
    root: PathBuf,
    /// 0: serve the files; else this status for every request.
    answer: AtomicU16,
    requests: AtomicUsize,
    /// The path of each request, in the order they came.
    paths: Mutex<Vec<String>>,
    /// The `Authorization` header a request must carry, when set.
    authorization: Option<String>,
}

impl WebCache {
    /// Serves `root`; with `authorization`, a request without exactly that
    /// header is answered 401.
    pub fn start(root: PathBuf, authorization: Option<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            root,
            answer: AtomicU16::new(0),
            requests: AtomicUsize::new(0),
            paths: Mutex::new(Vec::new()),
            authorization,
        });
        let serving = Arc::clone(&state);
        // Ends with the test process; each connection is answered and closed.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = serving.answer(stream);
            }
        });
        Self { url, state }
    }

    /// Every request answered `status` from now on (0: serve the files).
    pub fn answer_all(&self, status: u16) {
        self.state.answer.store(status, Ordering::SeqCst);
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The paths asked so far, in the order the requests came (one at a
    /// time: each is answered before the next is read).
    pub fn paths(&self) -> Vec<String> {
        self.state.paths.lock().unwrap().clone()
    }
}

impl State {
    fn answer(&self, stream: TcpStream) -> std::io::Result<()> {
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let mut authorization = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("authorization")
            {
                authorization = Some(value.trim().to_owned());
            }
        }
        self.requests.fetch_add(1, Ordering::SeqCst);
        self.paths.lock().unwrap().push(path.clone());
        let (status, body) = match self.answer.load(Ordering::SeqCst) {
            _ if self.authorization.is_some() && authorization != self.authorization => {
                (401, Vec::new())
            }
            0 => match std::fs::read(self.root.join(path.trim_start_matches('/'))) {
                Ok(bytes) => (200, bytes),
                Err(_) => (404, Vec::new()),
            },
            status => (status, Vec::new()),
        };
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
            body.len(),
            if status == 401 {
                "WWW-Authenticate: Basic realm=\"cache\"\r\n"
            } else {
                ""
            }
        )?;
        stream.write_all(&body)?;
        stream.flush()
    }
}

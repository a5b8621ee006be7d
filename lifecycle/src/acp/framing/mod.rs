//! The line framing of `lifecycle acp` (SPEC A10): bytes from stdin are
//! split on `\n` and each line is judged before the `agent-client-protocol`
//! crate sees it. Only well-formed lines reach the crate; the others are
//! answered here, through the one [`LineOut`] the crate writes through too,
//! so lines never interleave.
//!
//! A line may begin with a UTF-8 byte-order mark, which is dropped (A10).
//!
//! | line | answer |
//! | ---- | ------ |
//! | not UTF-8 | -32700 Parse error, id null |
//! | longer than [`MAX_LINE`] (discarded as it streams) | -32600 Invalid Request, the id if a top-level one is found |
//! | nested deeper than [`MAX_DEPTH`] | -32600 Invalid Request, the id if a top-level one is found |
//! | more than [`MAX_CONTAINERS`] arrays and objects (a prompt of a quarter million empty blocks) | -32600 Invalid Request, the id if a top-level one is found |
//! | not JSON (an empty line too) | -32700 Parse error, with the top-level id if it and a `method` were read before the fault, else null |
//! | a request whose `id` is not a string or an integer (`null`, `{}`, `[1]`, `true`, `1.5`) | -32600 Invalid Request, id null; not served |
//! | an object with a usable `id` and no `method` (not a response) | -32600 Invalid Request, that id |
//! | a request with a usable `id` whose `jsonrpc` is not `"2.0"` or whose `params` is neither an object nor an array | -32600 Invalid Request, that id |
//! | anything else | passed to the crate unchanged |
//!
//! A notification (a `method` and no `id`) or a response (a `result` or
//! `error` and no `method`) that is too long or too deep is dropped, never
//! answered. An error's `data` carries at most [`DATA_PREFIX`] bytes of
//! the line.

use futures::{Sink, SinkExt, Stream, StreamExt};
use serde_json::{json, Value};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The longest line served, in bytes (without its `\n`): 8 MiB. A longer
/// line is discarded as it streams, never buffered whole.
pub const MAX_LINE: usize = 8 << 20;

/// The deepest nesting of arrays and objects served (the top-level object
/// counts 1). `serde_json`, which the crate parses with, stops at 128.
pub const MAX_DEPTH: usize = 64;

/// The most arrays and objects one line may hold (A10). Each becomes a
/// parsed value, here and in the crate, hundreds of bytes apiece, so a line
/// of many tiny ones (`[{"type":"text","text":""}, ...]`) would cost far
/// more memory than its length; past this count it is refused before any
/// parse.
pub const MAX_CONTAINERS: usize = 10_000;

/// How many bytes of a rejected line an error's `data.line` carries.
pub const DATA_PREFIX: usize = 200;

/// JSON-RPC Parse error.
pub const PARSE_ERROR: i64 = -32700;

/// JSON-RPC Invalid Request.
pub const INVALID_REQUEST: i64 = -32600;

/// What to do with one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the crate, unchanged.
    Pass(String),
    /// Do not serve it; write this JSON-RPC error response instead.
    Answer(String),
    /// Do not serve it and do not answer (a notification or a response).
    Drop,
}

/// The top-level members a [`Scan`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Seen {
    id: bool,
    method: bool,
    result: bool,
    error: bool,
}

/// The longest top-level key the scan keeps (the keys it looks for are shorter).
const KEY_CAP: usize = 8;
/// The longest `id` value the scan keeps; a longer one is not usable.
const ID_CAP: usize = 128;

/// A streaming, non-recursive scan of a JSON text: how deep it nests, which
/// top-level members it has, and the text of its top-level `id`. It does
/// not validate; it only tracks strings and brackets, so it can be fed a
/// line of any length or depth in pieces.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    depth: usize,
    max_depth: usize,
    containers: usize,
    started: bool,
    top_object: bool,
    in_str: bool,
    esc: bool,
    expect_key: bool,
    capturing_key: bool,
    key: Vec<u8>,
    key_is_id: bool,
    capturing_id: bool,
    id: Vec<u8>,
    id_overflow: bool,
    seen: Seen,
}

impl Scan {
    /// A scan at the start of a line.
    pub fn new() -> Self {
        Self::default()
    }

    /// The deepest nesting seen so far.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// How many arrays and objects were opened so far.
    pub fn containers(&self) -> usize {
        self.containers
    }

    fn push(&mut self, b: u8) {
        if self.capturing_key {
            if self.key.len() <= KEY_CAP {
                self.key.push(b);
            }
        } else if self.capturing_id {
            if self.id.len() < ID_CAP {
                self.id.push(b);
            } else {
                self.id_overflow = true;
            }
        }
    }

    fn end_value(&mut self) {
        self.capturing_id = false;
        self.key_is_id = false;
    }

    /// Feed the next bytes of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_str {
                if self.esc {
                    self.esc = false;
                    self.push(b);
                } else if b == b'\\' {
                    self.esc = true;
                    self.push(b);
                } else if b == b'"' {
                    self.in_str = false;
                    if self.capturing_key {
                        self.capturing_key = false;
                        self.expect_key = false;
                        let key = std::mem::take(&mut self.key);
                        self.key_is_id = key == b"id";
                        match key.as_slice() {
                            b"id" => self.seen.id = true,
                            b"method" => self.seen.method = true,
                            b"result" => self.seen.result = true,
                            b"error" => self.seen.error = true,
                            _ => {}
                        }
                    } else {
                        self.push(b);
                    }
                } else {
                    self.push(b);
                }
                continue;
            }
            if b.is_ascii_whitespace() {
                continue;
            }
            let top = self.depth == 1 && self.top_object;
            match b {
                b'"' => {
                    self.in_str = true;
                    if top && self.expect_key {
                        self.capturing_key = true;
                        self.key.clear();
                    } else {
                        self.push(b);
                    }
                }
                b'{' | b'[' => {
                    if !self.started {
                        self.top_object = b == b'{';
                        self.expect_key = true;
                    }
                    self.push(b);
                    self.depth += 1;
                    self.containers += 1;
                    self.max_depth = self.max_depth.max(self.depth);
                }
                b'}' | b']' => {
                    if top {
                        self.end_value();
                    } else {
                        self.push(b);
                    }
                    self.depth = self.depth.saturating_sub(1);
                }
                b':' if top => {
                    if self.key_is_id {
                        self.capturing_id = true;
                        self.id.clear();
                        self.id_overflow = false;
                    }
                }
                b',' if top => {
                    self.end_value();
                    self.expect_key = true;
                }
                _ => self.push(b),
            }
            self.started = true;
        }
    }

    /// The top-level `id`, if there is one and it is a string or an integer.
    pub fn id(&self) -> Option<Value> {
        if !self.seen.id || self.id_overflow {
            return None;
        }
        serde_json::from_slice::<Value>(&self.id)
            .ok()
            .filter(usable_id)
    }

    /// The verdict on a line this scan covered and that is not served
    /// (`why` says why): a notification or a response is dropped, anything
    /// else is Invalid Request with its id, if usable.
    fn reject(&self, why: &str, prefix: &[u8]) -> Verdict {
        let s = self.seen;
        if (s.method && !s.id) || (!s.method && (s.result || s.error)) {
            return Verdict::Drop;
        }
        Verdict::Answer(error_line(
            self.id().unwrap_or(Value::Null),
            INVALID_REQUEST,
            why,
            prefix,
        ))
    }
}

/// JSON-RPC ids this server answers to: strings and integers that fit in
/// an `i64` (the crate's id type).
fn usable_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some()
}

/// A JSON-RPC error response, with at most [`DATA_PREFIX`] bytes of `line`.
pub fn error_line(id: Value, code: i64, reason: &str, line: &[u8]) -> String {
    let message = if code == PARSE_ERROR {
        "Parse error"
    } else {
        "Invalid request"
    };
    let prefix = String::from_utf8_lossy(&line[..line.len().min(DATA_PREFIX)]);
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": code,
            "message": message,
            "data": {"reason": reason, "line": prefix},
        },
    })
    .to_string()
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = &[0xEF, 0xBB, 0xBF];

/// Judge one whole line (without its `\n`; a trailing `\r` is dropped,
/// and a leading byte-order mark, A10).
pub fn classify(mut line: Vec<u8>) -> Verdict {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.starts_with(BOM) {
        line.drain(..BOM.len());
    }
    let line = match String::from_utf8(line) {
        Ok(line) => line,
        Err(e) => {
            let bytes = e.into_bytes();
            return Verdict::Answer(error_line(
                Value::Null,
                PARSE_ERROR,
                "the line is not valid UTF-8",
                &bytes,
            ));
        }
    };
    if line.len() > MAX_LINE {
        return Overlong::of(line.as_bytes()).verdict();
    }
    let mut scan = Scan::new();
    scan.feed(line.as_bytes());
    if scan.max_depth() > MAX_DEPTH {
        let why = format!("nested deeper than {MAX_DEPTH}");
        return scan.reject(&why, line.as_bytes());
    }
    if scan.containers() > MAX_CONTAINERS {
        let why = format!(
            "{} arrays and objects, more than the limit of {MAX_CONTAINERS}",
            scan.containers()
        );
        return scan.reject(&why, line.as_bytes());
    }
    let value = match serde_json::from_str::<Value>(&line) {
        Ok(v) => v,
        Err(e) => {
            // A10: a request's id, where the scan read one (and its method)
            // before the text went wrong, is answered to.
            let id = match scan.seen.method {
                true => scan.id(),
                false => None,
            };
            return Verdict::Answer(error_line(
                id.unwrap_or(Value::Null),
                PARSE_ERROR,
                &reason(&e),
                line.as_bytes(),
            ));
        }
    };
    let Value::Object(map) = &value else {
        // Batches and scalars: the crate answers them (-32600, id null).
        return Verdict::Pass(line);
    };
    let invalid = |id: Value, why: &str| {
        Verdict::Answer(error_line(id, INVALID_REQUEST, why, line.as_bytes()))
    };
    match (map.get("method"), map.get("id")) {
        (Some(_), Some(id)) if !usable_id(id) => {
            invalid(Value::Null, "the id must be a string or an integer")
        }
        (Some(m), Some(id)) if !m.is_string() => invalid(id.clone(), "the method must be a string"),
        // A10: a request whose id is readable is answered to that id, even
        // when the rest of its envelope is wrong (the crate would answer
        // these with id null, and the caller's request would never resolve).
        (Some(_), Some(id)) if map.get("jsonrpc") != Some(&json!("2.0")) => {
            invalid(id.clone(), "\"jsonrpc\" must be \"2.0\"")
        }
        (Some(_), Some(id))
            if map
                .get("params")
                .is_some_and(|p| !p.is_object() && !p.is_array()) =>
        {
            invalid(id.clone(), "params must be an object or an array")
        }
        (None, Some(id))
            if usable_id(id) && !map.contains_key("result") && !map.contains_key("error") =>
        {
            invalid(id.clone(), "no method")
        }
        _ => Verdict::Pass(line),
    }
}

/// Why `serde_json` refused a text, without quoting it.
fn reason(e: &serde_json::Error) -> String {
    format!("not JSON: {:?} at column {}", e.classify(), e.column())
}

/// A line past [`MAX_LINE`]: scanned and counted as it streams, only its
/// first [`DATA_PREFIX`] bytes kept.
#[derive(Debug, Default)]
struct Overlong {
    scan: Scan,
    prefix: Vec<u8>,
    len: u64,
}

impl Overlong {
    fn of(bytes: &[u8]) -> Self {
        let mut o = Overlong::default();
        o.feed(bytes);
        o
    }

    fn feed(&mut self, bytes: &[u8]) {
        let room = DATA_PREFIX
            .saturating_sub(self.prefix.len())
            .min(bytes.len());
        self.prefix.extend_from_slice(&bytes[..room]);
        self.scan.feed(bytes);
        self.len += bytes.len() as u64;
    }

    fn verdict(&self) -> Verdict {
        let why = format!(
            "the line has {} bytes, more than the limit of {MAX_LINE}",
            self.len
        );
        self.scan.reject(&why, &self.prefix)
    }
}

/// The one writer of stdout: the crate's lines and the reader's error
/// answers go through it, each line whole and flushed under one lock.
#[derive(Clone)]
pub struct LineOut(Arc<tokio::sync::Mutex<Pin<Box<dyn AsyncWrite + Send>>>>);

impl LineOut {
    /// Write lines to `w`.
    pub fn new(w: impl AsyncWrite + Send + 'static) -> Self {
        LineOut(Arc::new(tokio::sync::Mutex::new(Box::pin(w))))
    }

    /// Write `line` and a `\n`, and flush.
    pub async fn write_line(&self, line: String) -> io::Result<()> {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let mut w = self.0.lock().await;
        w.write_all(&bytes).await?;
        w.flush().await
    }

    /// The sink the crate writes its lines into.
    pub fn sink(&self) -> impl Sink<String, Error = io::Error> + Send + 'static {
        futures::sink::unfold(self.clone(), |out, line: String| async move {
            out.write_line(line).await?;
            Ok::<_, io::Error>(out)
        })
    }
}

/// Chunks of stdin, read on a thread of their own (a read pending at exit
/// then never holds the runtime up), at most a few chunks ahead.
pub fn stdin_chunks() -> impl Stream<Item = io::Result<Vec<u8>>> + Send + Unpin + 'static {
    let (mut tx, rx) = futures::channel::mpsc::channel(2);
    let spawned = std::thread::Builder::new()
        .name("acp-stdin".into())
        .spawn(move || {
            use std::io::Read;
            let mut stdin = std::io::stdin().lock();
            loop {
                let mut buf = vec![0u8; 64 << 10];
                let item = match stdin.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        buf.truncate(n);
                        Ok(buf)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let stop = item.is_err();
                if futures::executor::block_on(tx.send(item)).is_err() || stop {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("agent-lifecycle: cannot read stdin: {e}");
    }
    rx
}

/// The framing pump: chunks in, served lines out; the rest answered on `out`.
struct Pump<S> {
    input: S,
    out: LineOut,
    chunk: Vec<u8>,
    pos: usize,
    line: Vec<u8>,
    over: Option<Overlong>,
    eof: bool,
}

impl<S: Stream<Item = io::Result<Vec<u8>>> + Unpin> Pump<S> {
    async fn next(&mut self) -> Option<io::Result<String>> {
        loop {
            if self.pos == self.chunk.len() {
                if self.eof {
                    return None;
                }
                match self.input.next().await {
                    Some(Ok(chunk)) => {
                        self.chunk = chunk;
                        self.pos = 0;
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => {
                        self.eof = true;
                        // A last line without its `\n`.
                        if !self.line.is_empty() || self.over.is_some() {
                            if let Some(item) = self.finish().await {
                                return Some(item);
                            }
                        }
                    }
                }
                continue;
            }
            let avail = &self.chunk[self.pos..];
            let newline = avail.iter().position(|&b| b == b'\n');
            let seg = &avail[..newline.unwrap_or(avail.len())];
            match &mut self.over {
                Some(o) => o.feed(seg),
                None if self.line.len() + seg.len() > MAX_LINE => {
                    let mut o = Overlong::of(&std::mem::take(&mut self.line));
                    o.feed(seg);
                    self.over = Some(o);
                }
                None => self.line.extend_from_slice(seg),
            }
            self.pos += seg.len() + usize::from(newline.is_some());
            if newline.is_some() {
                if let Some(item) = self.finish().await {
                    return Some(item);
                }
            }
        }
    }

    /// The line is complete: pass it on, or answer it here.
    async fn finish(&mut self) -> Option<io::Result<String>> {
        let verdict = match self.over.take() {
            Some(o) => o.verdict(),
            None => classify(std::mem::take(&mut self.line)),
        };
        match verdict {
            Verdict::Pass(line) => Some(Ok(line)),
            Verdict::Answer(answer) => self.out.write_line(answer).await.err().map(Err),
            Verdict::Drop => None,
        }
    }
}

/// The lines of `input` the crate is to serve; every other line is
/// answered on `out` (or dropped) as the table in the module doc says.
pub fn incoming<S>(
    input: S,
    out: LineOut,
) -> impl Stream<Item = io::Result<String>> + Send + 'static
where
    S: Stream<Item = io::Result<Vec<u8>>> + Unpin + Send + 'static,
{
    let pump = Pump {
        input,
        out,
        chunk: Vec::new(),
        pos: 0,
        line: Vec::new(),
        over: None,
        eof: false,
    };
    futures::stream::unfold(pump, |mut pump| async move {
        pump.next().await.map(|item| (item, pump))
    })
}

#[cfg(test)]
mod tests;

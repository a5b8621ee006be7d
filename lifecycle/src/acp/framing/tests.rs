//! Unit tests of `framing`.

use super::*;

fn answer(v: Verdict) -> Value {
    match v {
        Verdict::Answer(a) => serde_json::from_str(&a).expect("json"),
        other => panic!("expected an answer, got {other:?}"),
    }
}

fn code_id(v: Verdict) -> (i64, Value) {
    let a = answer(v);
    (a["error"]["code"].as_i64().expect("code"), a["id"].clone())
}

fn req(id: &str) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{}}}}"#).into_bytes()
}

#[test]
fn good_lines_pass_unchanged() {
    for line in [
        req("1"),
        req(r#""abc""#),
        br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":3,"result":{}}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#.to_vec(),
        b"[1,2]".to_vec(),
        b"17".to_vec(),
        br#"{"jsonrpc":"2.0","id":4,"method":"no/such"}"#.to_vec(),
    ] {
        let text = String::from_utf8(line.clone()).unwrap();
        assert_eq!(classify(line), Verdict::Pass(text));
    }
    let mut crlf = req("1");
    crlf.extend_from_slice(b"\r");
    assert!(matches!(classify(crlf), Verdict::Pass(l) if !l.ends_with('\r')));
}

#[test]
fn a_leading_byte_order_mark_is_dropped() {
    let text = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let mut line = BOM.to_vec();
    line.extend_from_slice(text.as_bytes());
    assert_eq!(classify(line), Verdict::Pass(text.to_string()));
    // Only at the start: a mark inside the line is the line's.
    let mut inner = text.as_bytes().to_vec();
    inner.splice(1..1, BOM.iter().copied());
    assert!(matches!(classify(inner), Verdict::Answer(_)));
}

#[test]
fn invalid_utf8_and_not_json_are_parse_errors_with_null_id() {
    let mut bad = req("1");
    bad.insert(5, 0xff);
    assert_eq!(code_id(classify(bad)), (PARSE_ERROR, Value::Null));
    assert_eq!(code_id(classify(Vec::new())), (PARSE_ERROR, Value::Null));
    assert_eq!(
        code_id(classify(b"{\"id\":1,".to_vec())),
        (PARSE_ERROR, Value::Null)
    );
    // The reason says what serde_json refused, and where.
    let a = answer(classify(b"{\"id\":1,".to_vec()));
    let reason = a["error"]["data"]["reason"].as_str().unwrap();
    assert_eq!(reason, "not JSON: Eof at column 8");
}

/// A request of exactly `len` bytes: `{"jsonrpc":"2.0","id":1,...}`.
fn request_of(len: usize) -> Vec<u8> {
    let head = br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":""#;
    let tail = br#""}}"#;
    let mut line = head.to_vec();
    line.resize(len - tail.len(), b'x');
    line.extend_from_slice(tail);
    assert_eq!(line.len(), len);
    line
}

#[test]
fn a_string_after_a_nested_value_is_not_a_key() {
    // Malformed: `"id"` follows the value `[1,2]` with no comma, so it
    // sits where a value would go, not a key. The comma inside the
    // array is not a top-level one and must not make the scan expect
    // a key: the line is answered with a null id, not id 5.
    let mut line = br#"{"a":[1,2]"id":5,"s":""#.to_vec();
    line.resize(MAX_LINE + 10, b'x');
    line.extend_from_slice(br#""}"#);
    assert_eq!(code_id(classify(line)), (INVALID_REQUEST, Value::Null));
    // The same after a nested object.
    let mut line = br#"{"a":{"b":1,"c":2}"id":5,"s":""#.to_vec();
    line.resize(MAX_LINE + 10, b'x');
    line.extend_from_slice(br#""}"#);
    assert_eq!(code_id(classify(line)), (INVALID_REQUEST, Value::Null));
}

#[test]
fn only_top_level_keys_count_in_an_overlong_line() {
    // A notification whose params hold an `id`: still a notification,
    // dropped, not answered (a nested key is not the request's id).
    let mut note = br#"{"jsonrpc":"2.0","method":"m","params":{"id":5,"s":""#.to_vec();
    note.resize(MAX_LINE + 10, b'x');
    note.extend_from_slice(br#""}}"#);
    assert_eq!(classify(note), Verdict::Drop);
    // A request's own id is found past a nested one.
    let mut req = br#"{"jsonrpc":"2.0","method":"m","params":{"id":5},"id":7,"s":""#.to_vec();
    req.resize(MAX_LINE + 10, b'x');
    req.extend_from_slice(br#""}"#);
    assert_eq!(code_id(classify(req)), (INVALID_REQUEST, json!(7)));
    // A batch has no keys: its strings are not a method, so it is
    // answered (id null), not dropped as a notification.
    let mut batch = br#"["method","m","s",""#.to_vec();
    batch.resize(MAX_LINE + 10, b'x');
    batch.extend_from_slice(br#""]"#);
    assert_eq!(code_id(classify(batch)), (INVALID_REQUEST, Value::Null));
}

#[test]
fn a_line_of_max_line_bytes_passes_and_one_more_is_overlong() {
    let at = request_of(MAX_LINE);
    let over = request_of(MAX_LINE + 1);
    assert!(matches!(classify(at.clone()), Verdict::Pass(_)));
    assert_eq!(code_id(classify(over.clone())), (INVALID_REQUEST, json!(1)));
    let why = format!(
        "the line has {} bytes, more than the limit of {MAX_LINE}",
        MAX_LINE + 1
    );
    assert_eq!(
        answer(classify(over.clone()))["error"]["data"]["reason"],
        why
    );
    // The same through the pump, each line split across two chunks.
    for (line, passes) in [(at, true), (over, false)] {
        let (head, tail) = line.split_at(line.len() / 2);
        let mut tail = tail.to_vec();
        tail.push(b'\n');
        let (passed, answers) = run(vec![head.to_vec(), tail]);
        assert_eq!(
            (passed.len(), answers.len()),
            if passes { (1, 0) } else { (0, 1) }
        );
        if !passes {
            // Counted across both chunks.
            assert_eq!(answers[0]["error"]["data"]["reason"], why);
        }
    }
}

#[test]
fn unusable_ids_are_invalid_requests_with_null_id() {
    for id in ["null", "{}", "[1]", "true", "1.5", "18446744073709551615"] {
        assert_eq!(
            code_id(classify(req(id))),
            (INVALID_REQUEST, Value::Null),
            "{id}"
        );
    }
}

#[test]
fn a10_a_bad_envelope_keeps_a_readable_id() {
    for line in [
        r#"{"id":11,"method":"session/new","params":{}}"#,
        r#"{"jsonrpc":"1.0","id":11,"method":"session/new","params":{}}"#,
        r#"{"jsonrpc":2,"id":11,"method":"session/new"}"#,
        r#"{"jsonrpc":"2.0","id":11,"method":"session/new","params":"cwd"}"#,
        r#"{"jsonrpc":"2.0","id":11,"method":"session/new","params":7}"#,
    ] {
        let v = classify(line.as_bytes().to_vec());
        assert_eq!(code_id(v), (INVALID_REQUEST, json!(11)), "{line}");
    }
    // Not JSON, but its id came before the fault.
    let v = classify(br#"{"jsonrpc":"2.0","id":"r","method":"m","params":{"#.to_vec());
    assert_eq!(code_id(v), (PARSE_ERROR, json!("r")));
    // Notifications with a bad envelope pass to the crate (never answered).
    let v = classify(br#"{"method":"session/cancel","params":{"sessionId":"x"}}"#.to_vec());
    assert!(matches!(v, Verdict::Pass(_)));
}

#[test]
fn missing_or_bad_method_keeps_the_id() {
    let v = classify(br#"{"jsonrpc":"2.0","id":9}"#.to_vec());
    assert_eq!(code_id(v), (INVALID_REQUEST, json!(9)));
    let v = classify(br#"{"jsonrpc":"2.0","id":"q","method":3}"#.to_vec());
    assert_eq!(code_id(v), (INVALID_REQUEST, json!("q")));
}

fn deep(id: &str, n: usize) -> Vec<u8> {
    let open = "[".repeat(n);
    let close = "]".repeat(n);
    format!(
        r#"{{"jsonrpc":"2.0","method":"m","params":{{"a":{open}{close}, "s":"}}]\""}},"id":{id}}}"#
    )
    .into_bytes()
}

#[test]
fn deep_lines_keep_their_id() {
    assert!(matches!(
        classify(deep("5", MAX_DEPTH - 3)),
        Verdict::Pass(_)
    ));
    assert_eq!(
        code_id(classify(deep("5", 3000))),
        (INVALID_REQUEST, json!(5))
    );
    assert_eq!(
        code_id(classify(deep(r#""a\"}""#, 3000))),
        (INVALID_REQUEST, json!("a\"}"))
    );
    assert_eq!(
        code_id(classify(deep("null", 3000))),
        (INVALID_REQUEST, Value::Null)
    );
    // A deep notification is not answered.
    let note = format!(r#"{{"method":"m","params":{}}}"#, "[".repeat(3000));
    assert_eq!(classify(note.into_bytes()), Verdict::Drop);
}

#[test]
fn error_data_is_a_short_prefix() {
    let mut line = b"{\"id\":1, \"x\":".to_vec();
    line.extend(std::iter::repeat_n(b'x', 10_000));
    let a = answer(classify(line));
    assert_eq!(
        a["error"]["data"]["line"].as_str().unwrap().len(),
        DATA_PREFIX
    );
}

fn run(input: Vec<Vec<u8>>) -> (Vec<String>, Vec<Value>) {
    let (w, mut r) = tokio::io::duplex(1 << 20);
    let out = LineOut::new(w);
    let chunks = futures::stream::iter(input.into_iter().map(Ok));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async move {
        let passed: Vec<String> = incoming(chunks, out)
            .map(|l| l.expect("line"))
            .collect()
            .await;
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut r, &mut text)
            .await
            .unwrap();
        let answers = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (passed, answers)
    })
}

#[test]
fn the_pump_splits_across_chunks_and_discards_long_lines() {
    let mut long = br#"{"jsonrpc":"2.0","id":77,"method":"m","params":""#.to_vec();
    long.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
    long.extend_from_slice(b"\"}\n");
    let mut input = vec![b"{\"a\":".to_vec(), b"1}\n\xff\n".to_vec()];
    input.extend(long.chunks(1 << 20).map(<[u8]>::to_vec));
    input.push(b"[]\n{\"b\":2}".to_vec());
    let (passed, answers) = run(input);
    assert_eq!(passed, vec![r#"{"a":1}"#, "[]", r#"{"b":2}"#]);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["error"]["code"], PARSE_ERROR);
    assert_eq!(answers[1]["error"]["code"], INVALID_REQUEST);
    assert_eq!(answers[1]["id"], 77);
    let data = answers[1]["error"]["data"]["line"].as_str().unwrap();
    assert_eq!(data.len(), DATA_PREFIX);
}

#[test]
fn a10_a_line_of_too_many_arrays_and_objects_is_refused_with_its_id() {
    let prompt = |n: usize| {
        let blocks = vec![r#"{"type":"text","text":""}"#; n].join(",");
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{{"sessionId":"s","prompt":[{blocks}]}}}}"#
        )
    };
    // The request, its params and their prompt array: 3 more.
    assert!(matches!(
        classify(prompt(MAX_CONTAINERS - 3).into_bytes()),
        Verdict::Pass(_)
    ));
    let refused = answer(classify(prompt(MAX_CONTAINERS - 2).into_bytes()));
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], INVALID_REQUEST, "{refused}");
    let data = refused["error"]["data"].to_string();
    assert!(data.contains("more than the limit of 10000"), "{data}");
}

#[test]
fn a_line_nested_max_depth_deep_is_served_and_one_deeper_is_not() {
    // `deep(id, n)` nests the object, its params, then n arrays.
    assert!(matches!(
        classify(deep("5", MAX_DEPTH - 2)),
        Verdict::Pass(_)
    ));
    let over = answer(classify(deep("5", MAX_DEPTH - 1)));
    assert_eq!(over["id"], json!(5));
    assert_eq!(over["error"]["code"], INVALID_REQUEST);
    assert_eq!(over["error"]["message"], "Invalid request");
    assert_eq!(
        over["error"]["data"]["reason"],
        format!("nested deeper than {MAX_DEPTH}")
    );
    let parse = answer(classify(b"{".to_vec()));
    assert_eq!(parse["error"]["code"], PARSE_ERROR);
    assert_eq!(parse["error"]["message"], "Parse error");
}

/// A line too deep to parse is judged by its top-level keys: responses
/// (`result` or `error`, no `method`) and notifications are dropped;
/// anything with a `method` and an `id` is answered.
#[test]
fn deep_responses_are_dropped_and_deep_requests_answered() {
    let nest = "[".repeat(3000);
    for (head, dropped) in [
        (r#""id":1,"result""#, true),
        (r#""id":1,"error""#, true),
        (r#""method":"m","params""#, true),
        (r#""id":1,"method":"m","params""#, false),
        (r#""id":1,"method":"m","result""#, false),
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0",{head}:{nest}"#).into_bytes();
        let verdict = classify(line);
        if dropped {
            assert_eq!(verdict, Verdict::Drop, "{head}");
        } else {
            assert_eq!(code_id(verdict), (INVALID_REQUEST, json!(1)), "{head}");
        }
    }
}

/// The id of a line too deep to parse is kept up to `ID_CAP` bytes of
/// its text; a longer one is not usable. A member inside the id's own
/// value is not taken for the id.
#[test]
fn a_deep_lines_id_is_kept_up_to_its_cap() {
    let string_of = |bytes: usize| format!("\"{}\"", "a".repeat(bytes - 2));
    let at = string_of(ID_CAP);
    assert_eq!(
        code_id(classify(deep(&at, 3000))),
        (INVALID_REQUEST, json!(&at[1..ID_CAP - 1]))
    );
    assert_eq!(
        code_id(classify(deep(&string_of(ID_CAP + 1), 3000))),
        (INVALID_REQUEST, Value::Null)
    );
    let inner = format!(
        r#"{{"jsonrpc":"2.0","method":"m","id":{}{{"x":7"#,
        "[".repeat(100)
    );
    assert_eq!(
        code_id(classify(inner.into_bytes())),
        (INVALID_REQUEST, Value::Null)
    );
}

//! A `session/prompt`'s content blocks as the scripted agent's text (one
//! string, built in place from the request's own: the first text is
//! moved, not copied), refused when a block is of a kind this agent
//! does not take, or when the prompt's log record would not fit a log
//! line (A10: [`MAX_RECORD_BYTES`]).

use crate::store::durable::MAX_RECORD_BYTES;
use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use agent_client_protocol::Error;

/// The prompt's script: its text blocks and the text of its embedded text
/// resources, in order; a resource link becomes a line naming it (ACP: every
/// agent takes links). Images, audio and binary resources are refused with
/// -32602: the capabilities advertise none of them.
pub(super) fn prompt_text(blocks: Vec<ContentBlock>) -> Result<String, Error> {
    let refuse = |i: usize, what: &str| {
        Error::invalid_params().data(serde_json::json!(format!(
            "prompt block {i} is {what}, which this agent does not take (its promptCapabilities say so: no image, no audio; embedded resources as text only); send text or an embedded text resource"
        )))
    };
    // One string, built in place (no copy per block, A10): the first
    // block's own text becomes it.
    let mut text = String::new();
    let add = |text: &mut String, t: String| match text.is_empty() {
        true => *text = t,
        false => text.push_str(&t),
    };
    for (i, block) in blocks.into_iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        match block {
            ContentBlock::Text(t) => add(&mut text, t.text),
            ContentBlock::Resource(r) => match r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => add(&mut text, t.text),
                _ => return Err(refuse(i, "a binary embedded resource")),
            },
            ContentBlock::ResourceLink(l) => {
                let line = format!("resource link: {} {}", l.name, l.uri);
                text.push_str(&line.replace(['\n', '\r'], " "));
            }
            ContentBlock::Image(_) => return Err(refuse(i, "an image")),
            ContentBlock::Audio(_) => return Err(refuse(i, "audio")),
            _ => return Err(refuse(i, "a kind of content block")),
        }
    }
    // The prompt's log record must fit a log line (A10): a longer line is
    // damage to a load, so the prompt is refused before it is stored.
    let stored = json_escaped_len(&text) + RECORD_OVERHEAD_BYTES;
    if stored > MAX_RECORD_BYTES {
        return Err(Error::invalid_params().data(serde_json::json!(format!(
            "the prompt is too large to store: its log record would be {stored} bytes, over the limit of {}",
            MAX_RECORD_BYTES
        ))));
    }
    Ok(text)
}

/// Room a prompt's log record takes beyond its escaped text.
const RECORD_OVERHEAD_BYTES: usize = 4096;

/// The length of `text` as a JSON string body (serde_json's escaping:
/// `\"`, `\\` and the short control escapes take 2 bytes, other control
/// characters 6), without building it.
fn json_escaped_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a10_the_escaped_length_is_serde_jsons() {
        for text in [
            "",
            "plain",
            "quote \" backslash \\ newline \n tab \t cr \r",
            "\u{0}\u{1}\u{8}\u{c}\u{1f} controls",
            "ünïcödé ✓ 😀",
        ] {
            let json = serde_json::to_string(text).expect("a string serializes");
            assert_eq!(super::json_escaped_len(text), json.len() - 2, "{text:?}");
        }
    }
}

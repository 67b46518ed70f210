//! Text for messages: what a user wrote, echoed back in an error, cut to a readable length
//! so that a 10 MB token does not make a 10 MB message.

use std::borrow::Cow;

/// The most characters of a user's token that a message repeats.
pub const CLIP_CHARS: usize = 80;

/// `token` as a message shows it: whole when it has at most [`CLIP_CHARS`] characters, else
/// its first characters and `...`, [`CLIP_CHARS`] in all, then its length in bytes
/// (`aaaa...aaa... (10485760 bytes)`). A cut token is no longer than the limit, so cutting
/// again changes nothing.
pub fn clip(token: &str) -> Cow<'_, str> {
    if token.chars().nth(CLIP_CHARS).is_none() {
        return Cow::Borrowed(token);
    }
    let end = token
        .char_indices()
        .nth(CLIP_CHARS - 3)
        .map_or(token.len(), |(i, _)| i);
    Cow::Owned(format!("{}... ({} bytes)", &token[..end], token.len()))
}

/// A message with every token in it cut by [`clip`]: each run of characters between
/// whitespace and single quotes (which messages put around what the user wrote), less the
/// `:`, `,`, `;` or `)` that follows it.
pub fn clip_words(message: &str) -> Cow<'_, str> {
    let is_gap = |c: char| c.is_whitespace() || c == '\'';
    let long = message
        .split(is_gap)
        .any(|w| w.chars().nth(CLIP_CHARS).is_some());
    if !long {
        return Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(CLIP_CHARS * 4);
    let mut rest = message;
    while !rest.is_empty() {
        let gap_end = rest.find(|c: char| !is_gap(c)).unwrap_or(rest.len());
        out.push_str(&rest[..gap_end]);
        rest = &rest[gap_end..];
        let word_end = rest.find(is_gap).unwrap_or(rest.len());
        // Punctuation a message puts after a token (`PATH: strerror`) stays whole.
        let word = &rest[..word_end];
        let token = word.trim_end_matches([':', ',', ';', ')']);
        out.push_str(&clip(token));
        out.push_str(&word[token.len()..]);
        rest = &rest[word_end..];
    }
    Cow::Owned(out)
}

/// The text of an I/O error as C's strerror() gives it: Rust's ` (os error N)` left out.
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_as_strerror() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(strerror(&e), "No such file or directory");
        assert_eq!(strerror(&std::io::Error::other("plain")), "plain");
    }

    #[test]
    fn short_tokens_are_whole() {
        assert_eq!(clip(""), "");
        assert_eq!(clip("memory.max"), "memory.max");
        let exact = "x".repeat(CLIP_CHARS);
        assert_eq!(clip(&exact), exact);
    }

    #[test]
    fn long_tokens_are_cut_with_their_length() {
        let long = "a".repeat(10 << 20);
        let c = clip(&long);
        assert_eq!(c, format!("{}... (10485760 bytes)", "a".repeat(77)));
        // Cut at a character, never inside one.
        let wide = "é".repeat(100);
        assert_eq!(clip(&wide), format!("{}... (200 bytes)", "é".repeat(77)));
        // Cutting again changes nothing.
        assert_eq!(clip_words(&c), c);
    }

    #[test]
    fn messages_keep_their_words_and_quotes() {
        assert_eq!(
            clip_words("unknown command 'bogus' (try 'help')"),
            "unknown command 'bogus' (try 'help')"
        );
        let long = "z".repeat(1000);
        assert_eq!(
            clip_words(&format!(
                "t.mcg:3: error: unknown command '{long}' (try 'help')\n"
            )),
            format!(
                "t.mcg:3: error: unknown command '{}... (1000 bytes)' (try 'help')\n",
                "z".repeat(77)
            )
        );
        assert_eq!(
            clip_words(&format!("cd: /{long}: No such file or directory")),
            format!(
                "cd: /{}... (1001 bytes): No such file or directory",
                "z".repeat(76)
            )
        );
        assert_eq!(
            clip_words(&format!("  {long}\t{long}")),
            format!("  {0}... (1000 bytes)\t{0}... (1000 bytes)", "z".repeat(77))
        );
    }
}

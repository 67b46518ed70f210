//! The tokenizer: splits one script line into words.
//!
//! Words are separated by whitespace. A `#` outside quotes starts a comment that runs to the
//! end of the line. Double quotes group words (`"1 2"` is one word) and understand the
//! escapes `\"` and `\\`; single quotes group words with no escapes at all. A word remembers
//! whether any part of it was quoted, so that `echo ">"` prints a `>` instead of redirecting.

use std::fmt;

/// One word of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The text with quotes removed and escapes resolved.
    pub text: String,
    /// Whether any part of the word was inside quotes.
    pub quoted: bool,
}

impl Word {
    /// An unquoted word (for tests and for building lines programmatically).
    pub fn plain(text: &str) -> Word {
        Word {
            text: text.to_string(),
            quoted: false,
        }
    }

    /// Whether this is the unquoted word `s`.
    pub fn is_bare(&self, s: &str) -> bool {
        !self.quoted && self.text == s
    }
}

/// A line that cannot be split into words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError(pub String);

impl fmt::Display for LexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Split a line into words, dropping a trailing comment. An empty result means the line is
/// blank or only a comment.
pub fn tokenize(line: &str) -> Result<Vec<Word>, LexError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = line.chars();

    while let Some(c) = chars.next() {
        match c {
            '#' => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(Word {
                        text: std::mem::take(&mut cur),
                        quoted,
                    });
                    in_word = false;
                    quoted = false;
                }
            }
            '"' => {
                in_word = true;
                quoted = true;
                let mut closed = false;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\')) => cur.push(e),
                            Some(other) => {
                                cur.push('\\');
                                cur.push(other);
                            }
                            None => cur.push('\\'),
                        },
                        other => cur.push(other),
                    }
                }
                if !closed {
                    return Err(LexError("unterminated double quote".into()));
                }
            }
            '\'' => {
                in_word = true;
                quoted = true;
                let mut closed = false;
                for q in chars.by_ref() {
                    if q == '\'' {
                        closed = true;
                        break;
                    }
                    cur.push(q);
                }
                if !closed {
                    return Err(LexError("unterminated single quote".into()));
                }
            }
            other => {
                in_word = true;
                cur.push(other);
            }
        }
    }
    if in_word {
        words.push(Word { text: cur, quoted });
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        tokenize(line)
            .unwrap()
            .into_iter()
            .map(|w| w.text)
            .collect()
    }

    #[test]
    fn splits_on_whitespace() {
        assert_eq!(texts("  mkdir\t/A   "), vec!["mkdir", "/A"]);
        assert!(texts("").is_empty());
        assert!(texts("   \t ").is_empty());
    }

    #[test]
    fn comments() {
        assert!(texts("# a comment").is_empty());
        assert!(texts("   # indented comment").is_empty());
        assert_eq!(texts("echo 1 > f # set it"), vec!["echo", "1", ">", "f"]);
        assert_eq!(texts("echo a#b"), vec!["echo", "a"]);
        assert_eq!(texts("echo \"a # b\""), vec!["echo", "a # b"]);
        assert_eq!(texts("echo 'a # b'"), vec!["echo", "a # b"]);
    }

    #[test]
    fn quotes() {
        let w = tokenize("echo \"1 2\" > f").unwrap();
        assert_eq!(w.len(), 4);
        assert_eq!(w[1].text, "1 2");
        assert!(w[1].quoted);
        assert!(!w[2].quoted);
        assert!(w[2].is_bare(">"));
        assert_eq!(texts("echo a\"b c\"d"), vec!["echo", "ab cd"]);
        assert_eq!(
            texts(r#"echo "say \"hi\" \\ \n""#),
            vec!["echo", r#"say "hi" \ \n"#]
        );
        assert_eq!(texts("echo ''"), vec!["echo", ""]);
        assert_eq!(texts("echo \"\""), vec!["echo", ""]);
        assert!(tokenize("echo \">\"").unwrap()[1].quoted);
    }

    #[test]
    fn unterminated_quotes_are_errors() {
        assert!(tokenize("echo \"abc").is_err());
        assert!(tokenize("echo 'abc").is_err());
        assert!(tokenize("echo \"abc\\\"").is_err());
    }

    #[test]
    fn non_ascii_does_not_panic() {
        assert_eq!(texts("echo héllo wörld"), vec!["echo", "héllo", "wörld"]);
        assert_eq!(texts("echo \u{3000}x"), vec!["echo", "x"]);
    }
}

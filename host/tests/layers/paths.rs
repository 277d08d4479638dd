//! What a source file names: every path in its `use` trees (grouped and
//! nested groups expanded, `self` in a group, `as` renames) and every path
//! in its code, with `crate::`, `super::` (any number), `self::`, a child
//! module's name and a name a `use` brought in resolved against the
//! module the path is written in (inline `mod x { ... }` blocks
//! included). It reads text with a small lexer of its own (comments,
//! strings and character literals dropped), not the compiler's view, so
//! a macro's expansion is not seen.

use std::collections::{HashMap, HashSet};

/// One token of Rust source, as far as paths need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    /// `::`
    Colons,
    Open,
    Close,
    Semi,
    Comma,
    Star,
    /// Anything else (punctuation, literals' remains).
    Other,
}

/// `text` as tokens, each with its line (from 1). Comments, strings,
/// character literals, lifetimes and numbers leave nothing or `Other`.
pub fn lex(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let ident_start = |c: char| c.is_alphabetic() || c == '_';
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    // Skips a string body from the opening quote at `i`; `hashes` for raw
    // strings (no escapes).
    let string = |i: &mut usize, line: &mut usize, hashes: Option<usize>| {
        *i += 1;
        while *i < chars.len() {
            let c = chars[*i];
            if c == '\n' {
                *line += 1;
            }
            match hashes {
                None if c == '\\' => {
                    if chars.get(*i + 1) == Some(&'\n') {
                        *line += 1;
                    }
                    *i += 2;
                    continue;
                }
                None if c == '"' => {
                    *i += 1;
                    return;
                }
                Some(n) if c == '"' && (1..=n).all(|k| chars.get(*i + k) == Some(&'#')) => {
                    *i += 1 + n;
                    return;
                }
                _ => {}
            }
            *i += 1;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if chars[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => string(&mut i, &mut line, None),
            '\'' => {
                if next == Some('\\') {
                    // An escaped character literal: up to its closing quote.
                    i += 3;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    // A lifetime or a label.
                    i += 1;
                    while i < chars.len() && ident_char(chars[i]) {
                        i += 1;
                    }
                }
                out.push((Token::Other, line));
            }
            c if ident_start(c) => {
                let start = i;
                while i < chars.len() && ident_char(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let raw = word == "r" || word == "br" || word == "cr";
                if raw && matches!(chars.get(i), Some('"') | Some('#')) {
                    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
                    if chars.get(i + hashes) == Some(&'"') {
                        i += hashes;
                        string(&mut i, &mut line, Some(hashes));
                        out.push((Token::Other, line));
                        continue;
                    }
                    if hashes == 1 && chars.get(i + 1).is_some_and(|&c| ident_start(c)) {
                        // A raw identifier, r#name.
                        i += 1;
                        let start = i;
                        while i < chars.len() && ident_char(chars[i]) {
                            i += 1;
                        }
                        out.push((Token::Ident(chars[start..i].iter().collect()), line));
                        continue;
                    }
                }
                if (word == "b" || word == "c") && chars.get(i) == Some(&'"') {
                    string(&mut i, &mut line, None);
                    out.push((Token::Other, line));
                    continue;
                }
                out.push((Token::Ident(word), line));
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && ident_char(chars[i]) {
                    i += 1;
                }
                if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                {
                    i += 1;
                    while i < chars.len() && ident_char(chars[i]) {
                        i += 1;
                    }
                }
                out.push((Token::Other, line));
            }
            ':' if next == Some(':') => {
                out.push((Token::Colons, line));
                i += 2;
            }
            '{' | '}' | ';' | ',' | '*' => {
                out.push((
                    match c {
                        '{' => Token::Open,
                        '}' => Token::Close,
                        ';' => Token::Semi,
                        ',' => Token::Comma,
                        _ => Token::Star,
                    },
                    line,
                ));
                i += 1;
            }
            _ => {
                out.push((Token::Other, line));
                i += 1;
            }
        }
    }
    out
}

/// The source text without comments, strings and character literals:
/// the identifiers and `::` of each line, for the rules that look for a
/// name anywhere in code (an attribute, a macro).
pub fn code_lines(text: &str) -> Vec<String> {
    let mut lines = vec![String::new(); text.lines().count() + 1];
    for (token, line) in lex(text) {
        let Some(out) = lines.get_mut(line - 1) else {
            continue;
        };
        match token {
            Token::Ident(word) => {
                if !out.ends_with("::") {
                    out.push(' ');
                }
                out.push_str(&word);
            }
            Token::Colons => out.push_str("::"),
            _ => out.push(' '),
        }
    }
    lines
}

/// A use tree's leaves, each the full path as written (`self` at the end
/// of a path dropped) with the name it is known by in the file (`as`
/// renames; None for a glob).
pub fn use_tree(tokens: &[(Token, usize)], i: &mut usize) -> Vec<(Vec<String>, Option<String>)> {
    let mut out = Vec::new();
    tree(tokens, i, Vec::new(), &mut out);
    out
}

fn tree(
    tokens: &[(Token, usize)],
    i: &mut usize,
    mut path: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let at = |i: usize| tokens.get(i).map(|(t, _)| t);
    loop {
        match at(*i) {
            Some(Token::Colons) => *i += 1,
            Some(Token::Ident(word)) => {
                path.push(word.clone());
                *i += 1;
                if at(*i) == Some(&Token::Colons) {
                    *i += 1;
                    continue;
                }
                let mut name = path.last().cloned();
                if at(*i) == Some(&Token::Ident("as".into())) {
                    if let Some(Token::Ident(alias)) = at(*i + 1) {
                        name = Some(alias.clone());
                    }
                    *i += 2;
                }
                if path.last().is_some_and(|s| s == "self") && path.len() > 1 {
                    path.pop();
                    if name.as_deref() == Some("self") {
                        name = path.last().cloned();
                    }
                }
                out.push((path, name));
                return;
            }
            Some(Token::Open) => {
                *i += 1;
                loop {
                    match at(*i) {
                        Some(Token::Close) => {
                            *i += 1;
                            return;
                        }
                        Some(Token::Comma) => *i += 1,
                        None | Some(Token::Semi) => return,
                        Some(_) => {
                            let before = *i;
                            tree(tokens, i, path.clone(), out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            Some(Token::Star) => {
                *i += 1;
                out.push((path, None));
                return;
            }
            _ => return,
        }
    }
}

/// The module path of a source file below `src/` (`scheduler/steps.rs` is
/// `["scheduler", "steps"]`, `lib.rs` the crate root, `[]`).
pub fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").unwrap_or(file);
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["lib"] {
        parts.pop();
    }
    parts
}

/// A path of ours that a file names, resolved from the crate root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub line: usize,
    /// Segments after `crate`.
    pub path: Vec<String>,
}

/// What one file names: paths of ours (resolved), paths of other crates
/// (as written), and the names its `pub use`s give items of ours.
#[derive(Debug, Default)]
pub struct Names {
    pub ours: Vec<Named>,
    pub theirs: Vec<(usize, Vec<String>)>,
    /// `pub use` re-exports: the name and the path it stands for.
    pub exports: HashMap<String, Vec<String>>,
}

/// Resolves `path`, written in module `module`, to a path from the crate
/// root: None when it is another crate's. `modules` holds every module
/// path of the crate (children resolve as in Rust 2018 paths); `aliases`
/// the names `use` statements of this file brought in.
pub fn resolve(
    path: &[String],
    module: &[String],
    modules: &HashSet<Vec<String>>,
    aliases: &HashMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let mut base = module.to_vec();
            base.truncate(module.len().checked_sub(ups)?);
            base.extend_from_slice(&path[ups..]);
            Some(base)
        }
        "self" => {
            let mut base = module.to_vec();
            base.extend_from_slice(&path[1..]);
            Some(base)
        }
        _ => {
            let mut child = module.to_vec();
            child.push(first.clone());
            if modules.contains(&child) {
                child.extend_from_slice(&path[1..]);
                return Some(child);
            }
            let mut alias = aliases.get(first)?.clone();
            alias.extend_from_slice(&path[1..]);
            Some(alias)
        }
    }
}

/// Everything `text`, the file of module `module`, names.
pub fn names(text: &str, module: &[String], modules: &HashSet<Vec<String>>) -> Names {
    let tokens = lex(text);
    let at = |i: usize| tokens.get(i).map(|(t, _)| t);
    let ident = |i: usize| match at(i) {
        Some(Token::Ident(w)) => Some(w.as_str()),
        _ => None,
    };
    let mut names = Names::default();
    let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
    // Inline modules: their name and the depth of their braces.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(m, _)| m.clone()))
            .collect();
        let line = tokens[i].1;
        match &tokens[i].0 {
            Token::Open => {
                depth += 1;
                i += 1;
            }
            Token::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Token::Ident(w) if w == "mod" => {
                if let (Some(name), Some(Token::Open)) = (ident(i + 1), at(i + 2)) {
                    inline.push((name.to_owned(), depth + 1));
                    depth += 1;
                    i += 3;
                } else {
                    i += 1;
                }
            }
            Token::Ident(w) if w == "use" && !matches!(at(i + 1), Some(Token::Other)) => {
                let public = i > 0 && ident(i - 1) == Some("pub")
                    || (i > 3 && ident(i - 4) == Some("pub") && at(i - 1) == Some(&Token::Other));
                i += 1;
                for (path, name) in use_tree(&tokens, &mut i) {
                    match resolve(&path, &here, modules, &aliases) {
                        Some(resolved) => {
                            if let Some(name) = name {
                                if public && inline.is_empty() {
                                    names.exports.insert(name.clone(), resolved.clone());
                                }
                                aliases.insert(name, resolved.clone());
                            }
                            names.ours.push(Named {
                                line,
                                path: resolved,
                            });
                        }
                        None => names.theirs.push((line, path)),
                    }
                }
            }
            Token::Ident(w) if at(i + 1) == Some(&Token::Colons) => {
                // A path in code: its segments up to the first that is
                // not followed by `::`. Not one that continues another
                // (`<T as x::Y>` starts afresh, `a::b` was read at `a`).
                let mut path = vec![w.clone()];
                let mut j = i + 1;
                while at(j) == Some(&Token::Colons) {
                    match ident(j + 1) {
                        Some(next) => {
                            path.push(next.to_owned());
                            j += 2;
                        }
                        None => break,
                    }
                }
                match resolve(&path, &here, modules, &aliases) {
                    Some(resolved) => names.ours.push(Named {
                        line,
                        path: resolved,
                    }),
                    None => names.theirs.push((line, path)),
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    names
}

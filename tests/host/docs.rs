//! The manual's examples, run: README.md and every page of docs/ hold
//! examples of what bench prints, and those that are deterministic are
//! checked here against the binary, so that the pages cannot drift from it.
//!
//! The rule, for a page's author:
//! - A fenced block whose info string is `console` is checked; any other
//!   block (```` ``` ````, ```` ```text ````) is not. Measured numbers go in
//!   the unchecked ones; usage errors, refusals and `--list` in `console`.
//! - In a `console` block, a line `$ ./bench ARGS` (or `$ sudo ./bench ARGS`)
//!   is a command, run from the repository root with the built binary in
//!   place of `./bench` (the tests run as root, so `sudo` is dropped). ARGS
//!   are split on blanks; '...' and "..." quote a word. Nothing else may
//!   stand there: no other program, no pipe or redirection.
//! - The lines after a command, up to the next `$ ` line or the block's end,
//!   are what it prints: its standard output, then its standard error (as a
//!   terminal shows these short cases), each line compared with its trailing
//!   blanks trimmed, trailing empty lines ignored.
//! - A last line `[exit N]` is the exit status; without one it must be 0.
//! - `...` alone on a line matches any number of lines (none included);
//!   `[..]` inside a line matches any text within that line.
//!
//! Also checked: every relative link of those pages leads to a file that
//! exists (and to a heading of it, for `page.md#anchor`), and the README
//! stays a front page (at most [`README_MAX_LINES`] lines).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// The checked examples there must be at least: a parser that found none
/// would otherwise pass.
const MIN_EXAMPLES: usize = 10;

/// The README is the front page; the manual is in docs/.
const README_MAX_LINES: usize = 200;

const ANY_LINES: &str = "...";
const ANY_TEXT: &str = "[..]";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and docs/*.md, in a fixed order.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("docs/ is listed").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root().join("README.md"));
    pages
}

/// `path` relative to the repository root, as a message names it.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// One checked example: a command and what it prints.
#[derive(Debug)]
struct Example {
    /// `page:line` of the command.
    place: String,
    /// The command line as the page writes it.
    line: String,
    /// The arguments after `./bench`.
    args: Vec<String>,
    expected: Vec<String>,
    code: i32,
}

/// A fenced block of a page: its info string, and its lines with the
/// fence's indentation removed, each with its line number (1-based).
struct Block {
    info: String,
    lines: Vec<(usize, String)>,
}

/// The fenced blocks of `text` (```` ``` ```` fences, indented or not, as
/// in list items).
fn blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Block)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let info = info.trim().to_string();
                    open = Some((
                        indent,
                        Block {
                            info,
                            lines: Vec::new(),
                        },
                    ));
                }
            }
            Some((fence_indent, mut block)) => {
                if trimmed.trim_end() == "```" {
                    blocks.push(block);
                } else {
                    // Remove as much of the fence's indentation as the line has.
                    let strip = indent.min(fence_indent);
                    block.lines.push((index + 1, line[strip..].to_string()));
                    open = Some((fence_indent, block));
                }
            }
        }
    }
    blocks
}

/// The lines of `text` outside fenced blocks, with their line numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The words of a command line: split on blanks, '...' and "..." quote.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None if "|<>;&`$".contains(c) => {
                return Err(format!(
                    "'{c}' outside quotes: a checked example is bench alone, \
                     no pipe, redirection or shell expansion"
                ))
            }
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("an unterminated quote".to_string());
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The arguments of a `$ ` line's command, or why it is not one.
fn command_args(command: &str) -> Result<Vec<String>, String> {
    let mut words = split_words(command)?;
    if words.first().map(String::as_str) == Some("sudo") {
        words.remove(0);
    }
    if words.first().map(String::as_str) != Some("./bench") {
        return Err(
            "a checked command is `./bench ARGS` or `sudo ./bench ARGS`; \
             put others in a ```text block"
                .to_string(),
        );
    }
    words.remove(0);
    Ok(words)
}

/// The checked examples of one page, or what is wrong with its blocks.
fn examples(page: &str, text: &str) -> Result<Vec<Example>, Vec<String>> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for block in blocks(text).into_iter().filter(|b| b.info == "console") {
        let mut current: Option<Example> = None;
        for (number, line) in block.lines {
            let place = format!("{page}:{number}");
            if let Some(command) = line.strip_prefix("$ ") {
                found.extend(current.take());
                match command_args(command) {
                    Ok(args) => {
                        current = Some(Example {
                            place,
                            line: line.clone(),
                            args,
                            expected: Vec::new(),
                            code: 0,
                        })
                    }
                    Err(why) => {
                        errors.push(format!("{place}: `{line}`: {why}"));
                        break;
                    }
                }
            } else if let Some(example) = current.as_mut() {
                example.expected.push(line.trim_end().to_string());
            } else {
                errors.push(format!(
                    "{place}: a console block starts with output, not a `$ ./bench` line"
                ));
                break;
            }
        }
        found.extend(current);
    }
    for example in &mut found {
        while example.expected.last().is_some_and(|l| l.is_empty()) {
            example.expected.pop();
        }
        let status = example
            .expected
            .last()
            .and_then(|l| l.strip_prefix("[exit ")?.strip_suffix(']'))
            .map(|n| n.parse::<i32>());
        match status {
            Some(Ok(code)) => {
                example.code = code;
                example.expected.pop();
            }
            Some(Err(_)) => errors.push(format!("{}: `[exit N]` needs a number", example.place)),
            None => {}
        }
        if example.expected.iter().any(|l| l.starts_with("[exit ")) {
            errors.push(format!(
                "{}: `[exit N]` must be the example's last line",
                example.place
            ));
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// Whether one expected line (with `[..]` wildcards) matches `line`.
fn line_matches(pattern: &str, line: &str) -> bool {
    let pieces: Vec<&str> = pattern.split(ANY_TEXT).collect();
    let (first, rest) = pieces.split_first().expect("split yields one piece");
    let Some(mut tail) = line.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return tail.is_empty();
    };
    for piece in middle {
        match tail.find(piece) {
            Some(at) => tail = &tail[at + piece.len()..],
            None => return false,
        }
    }
    tail.ends_with(last)
}

/// Whether the expected lines (with `...` lines) match the printed ones.
fn lines_match(expected: &[String], actual: &[&str]) -> bool {
    // can[i][j]: expected[i..] matches actual[j..].
    let mut can = vec![vec![false; actual.len() + 1]; expected.len() + 1];
    can[expected.len()][actual.len()] = true;
    for i in (0..expected.len()).rev() {
        for j in (0..=actual.len()).rev() {
            can[i][j] = if expected[i] == ANY_LINES {
                can[i + 1][j] || (j < actual.len() && can[i][j + 1])
            } else {
                j < actual.len() && line_matches(&expected[i], actual[j]) && can[i + 1][j + 1]
            };
        }
    }
    can[0][0]
}

/// What a command printed, as the rule compares it: stdout's lines, then
/// stderr's, trailing blanks trimmed, trailing empty lines dropped.
fn printed(out: &Output) -> Vec<&str> {
    let mut lines: Vec<&str> = out
        .stdout
        .lines()
        .chain(out.stderr.lines())
        .map(str::trim_end)
        .collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

fn run_example(example: &Example) -> Output {
    let mut cmd = Command::new(bench_bin());
    cmd.args(&example.args).current_dir(root());
    run_cmd(cmd)
}

/// Why an example's run does not match the page, if it does not.
fn mismatch(example: &Example, out: &Output) -> Option<String> {
    let actual = printed(out);
    let same_lines = lines_match(&example.expected, &actual);
    if same_lines && out.code == example.code {
        return None;
    }
    Some(format!(
        "{}: `{}` no longer prints what the page says\n\
         --- the page (exit {}):\n{}\n\
         --- the binary (exit {}{}):\n{}",
        example.place,
        example.line,
        example.code,
        example.expected.join("\n"),
        out.code,
        out.signal
            .map(|s| format!(", killed by signal {s}"))
            .unwrap_or_default(),
        actual.join("\n"),
    ))
}

#[test]
fn every_console_example_prints_what_its_page_says() {
    // An example may one day load BPF: run them as the probe tests run.
    let _lock = probe_lock();
    let mut errors = Vec::new();
    let mut checked = 0;
    let mut in_readme = 0;
    for page in pages() {
        let name = shown(&page);
        let text = fs::read_to_string(&page).unwrap_or_else(|e| panic!("{name}: {e}"));
        let examples = match examples(&name, &text) {
            Ok(examples) => examples,
            Err(why) => {
                errors.extend(why);
                continue;
            }
        };
        for example in &examples {
            checked += 1;
            if name == "README.md" {
                in_readme += 1;
            }
            errors.extend(mismatch(example, &run_example(example)));
        }
    }
    assert!(errors.is_empty(), "\n{}", errors.join("\n\n"));
    assert!(
        checked >= MIN_EXAMPLES,
        "only {checked} checked examples in README.md and docs/ (at least {MIN_EXAMPLES})"
    );
    assert!(in_readme >= 2, "README.md has {in_readme} checked examples");
}

#[test]
fn the_rule_catches_drift() {
    let page = "\
```console
$ sudo ./bench --nosuch 'a b' \"c\"
first line
...
error: [..] was [..]
[exit 2]
$ ./bench
```
";
    let found = examples("page.md", page).expect("the block parses");
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].args, ["--nosuch", "a b", "c"]);
    assert_eq!(found[0].place, "page.md:2");
    assert_eq!(found[0].code, 2);
    assert_eq!(found[1].code, 0);
    assert!(found[1].expected.is_empty());
    let expected = &found[0].expected;
    assert!(lines_match(expected, &["first line", "error: x was y"]));
    assert!(lines_match(
        expected,
        &["first line", "a", "b", "error: it was it"]
    ));
    // A changed line, a missing line, a line too many after the last: drift.
    assert!(!lines_match(expected, &["first line", "error: x is y"]));
    assert!(!lines_match(expected, &["error: x was y"]));
    assert!(!lines_match(
        expected,
        &["first line", "error: x was y", "extra"]
    ));
    assert!(line_matches("a[..]", "a"));
    assert!(!line_matches("ab[..]ba", "aba"));
    assert!(line_matches("[..]", "anything"));
    assert!(!line_matches("exact", "exact but longer"));
    // What a checked block may not hold.
    for bad in [
        "```console\noutput first\n```\n",
        "```console\n$ bench --list\n```\n",
        "```console\n$ ./bench --list | head\n```\n",
        "```console\n$ ./bench 'open\n```\n",
        "```console\n$ ./bench x\n[exit 2]\nmore\n```\n",
    ] {
        assert!(examples("page.md", bad).is_err(), "{bad:?} was accepted");
    }
    // Other blocks are not checked.
    let unchecked = examples("page.md", "```\n$ bench whatever\n```\n```text\n$ x\n```\n");
    assert!(unchecked.expect("plain blocks parse").is_empty());
}

/// The anchor GitHub gives a heading: lower case, letters, digits, `-` and
/// `_` kept, blanks made `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (`-1`, `-2` after repeats).
fn anchors(text: &str) -> Vec<String> {
    let mut anchors: Vec<String> = Vec::new();
    for (_, line) in prose(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while anchors.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        anchors.push(anchor);
    }
    anchors
}

/// The targets of a line's Markdown links (`[text](target)`, images too),
/// code spans left out.
fn link_targets(line: &str) -> Vec<String> {
    let outside_code: String = line
        .split('`')
        .enumerate()
        .map(|(i, part)| if i % 2 == 0 { part } else { " " })
        .collect();
    let mut targets = Vec::new();
    let mut rest = outside_code.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            targets.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    targets
}

#[test]
fn every_link_between_the_pages_resolves() {
    let mut errors = Vec::new();
    for page in pages() {
        let name = shown(&page);
        let text = fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for (number, line) in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    dir.join(path)
                };
                if !file.exists() {
                    errors.push(format!("{name}:{number}: {target}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_some_and(|e| e == "md") {
                    let target_text = fs::read_to_string(&file).unwrap();
                    if !anchors(&target_text).iter().any(|a| a == anchor) {
                        errors.push(format!(
                            "{name}:{number}: {target}: no heading of {} has that anchor",
                            shown(&file)
                        ));
                    }
                }
            }
        }
    }
    assert!(errors.is_empty(), "\n{}", errors.join("\n"));
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines: keep it a front page (at most {README_MAX_LINES}) \
         and put the manual in docs/"
    );
}

#[test]
fn the_man_pages_point_to_pages_that_exist() {
    for page in [None, Some("compare"), Some("completions"), Some("man")] {
        let args: Vec<&str> = std::iter::once("man").chain(page).collect();
        let out = run(&args);
        assert_eq!(out.code, 0, "bench {args:?}: {}", out.stderr);
        let see_also: Vec<String> = out
            .stdout
            .lines()
            .skip_while(|l| *l != ".SH \"SEE ALSO\"")
            .skip(1)
            .take_while(|l| !l.starts_with(".SH "))
            .map(|l| l.replace("\\-", "-"))
            .filter(|l| l.ends_with(".md"))
            .collect();
        assert!(
            !see_also.is_empty(),
            "bench {args:?} has no SEE ALSO pages:\n{}",
            out.stdout
        );
        for path in see_also {
            assert!(
                root().join(&path).is_file(),
                "bench {args:?} points to {path}, which does not exist"
            );
        }
    }
}

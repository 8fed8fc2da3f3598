//! The user's documentation stays true and current: every `ddshark …` command line in
//! README.md, docs/ and deploy/README.md goes through the real command-line parser (so every
//! flag it names exists and takes the value shown), its relative links point at files that
//! exist, the README stays short, and no work-log markers (issue numbers, numbered sessions
//! or rounds) are left in it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::repo_root;

const README_MAX_LINES: usize = 260;
const SUBCOMMANDS: [&str; 4] = ["dissect", "latency", "stats", "join"];

/// README.md, every docs/*.md and deploy/README.md.
fn doc_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = vec![root.join("README.md"), root.join("deploy/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn rel(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Code of a Markdown text with its line number: each line of a fenced block (lines ending
/// in `\` joined with the next; ```` ```text ```` blocks are diagrams, left out) and each inline
/// code span of the other lines.
fn code_snippets(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut diagram = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in md.lines().enumerate() {
        let n = i + 1;
        if let Some(info) = line.trim_start().strip_prefix("```") {
            in_fence = !in_fence;
            diagram = in_fence && info.trim() == "text";
            continue;
        }
        if diagram {
            continue;
        }
        if in_fence {
            let (start, mut text) = pending.take().unwrap_or((n, String::new()));
            match line.trim_end().strip_suffix('\\') {
                Some(head) => {
                    text.push_str(head);
                    text.push(' ');
                    pending = Some((start, text));
                }
                None => {
                    text.push_str(line);
                    out.push((start, text));
                }
            }
        } else {
            for (k, piece) in line.split('`').enumerate() {
                if k % 2 == 1 {
                    out.push((n, piece.to_string()));
                }
            }
        }
    }
    out
}

/// Shell words of one snippet, split into simple commands at `|`, `||`, `&&`, `;`, `$(` and
/// `)`; a `#` comment ends the snippet and a redirection ends its command's words. `\|`
/// (a pipe escaped in a Markdown table) stays in the word.
fn commands(snippet: &str) -> Vec<Vec<String>> {
    let mut cmds = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut redirected = false;
    let mut chars = snippet.chars().peekable();
    let end_word =
        |word: &mut String, in_word: &mut bool, cmds: &mut Vec<Vec<String>>, redirected: bool| {
            if *in_word && !redirected {
                cmds.last_mut().unwrap().push(std::mem::take(word));
            }
            word.clear();
            *in_word = false;
        };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            '#' if !in_word => break,
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut cmds, redirected),
            '>' | '<' => {
                end_word(&mut word, &mut in_word, &mut cmds, redirected);
                redirected = true;
            }
            '|' | '&' | ';' | ')' => {
                end_word(&mut word, &mut in_word, &mut cmds, redirected);
                while chars.peek().is_some_and(|&n| n == c) {
                    chars.next();
                }
                redirected = false;
                cmds.push(Vec::new());
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                end_word(&mut word, &mut in_word, &mut cmds, redirected);
                redirected = false;
                cmds.push(Vec::new());
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut cmds, redirected);
    cmds.retain(|c| !c.is_empty());
    cmds
}

/// The arguments of a `ddshark` command (after `sudo`, `VAR=value` assignments and a path).
fn ddshark_args(words: &[String]) -> Option<Vec<String>> {
    let mut rest = words;
    while let Some((first, tail)) = rest.split_first() {
        let assignment = first.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c == '_' || c.is_ascii_uppercase())
        });
        if first == "sudo" || first == "exec" || assignment {
            rest = tail;
        } else {
            break;
        }
    }
    let (program, args) = rest.split_first()?;
    (program.rsplit('/').next() == Some("ddshark")).then(|| args.to_vec())
}

/// A usage synopsis (`[OPTIONS]`, `FILE…`, `a|b`, a placeholder such as `RING_MB`) rather
/// than a command to run: its flags are checked against `--help` instead of parsed.
fn is_synopsis(args: &[String]) -> bool {
    let placeholder = |a: &str| {
        a.starts_with(|c: char| c.is_ascii_uppercase())
            && a.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    };
    args.iter().any(|a| {
        a.contains('[') || a.contains('…') || a.contains("...") || a.contains('|') || placeholder(a)
    })
}

fn ddshark(args: &[String], parse_only: bool) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ddshark"));
    cmd.args(args);
    if parse_only {
        cmd.env("DDSHARK_PARSE_ONLY", "1");
    }
    cmd.output().unwrap()
}

/// Does `help` list `flag` as an option (followed by a space, `,`, `=` or `<`)?
fn help_names(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + flag.len()..].chars().next();
        before.is_none_or(|b| b == ' ' || b == '\n' || b == '[')
            && after.is_none_or(|a| matches!(a, ' ' | ',' | '=' | '<' | '\n' | ']'))
    })
}

/// The `ddshark …` command lines in a file's `#` comments (a continuation `\` joins the next
/// comment line), as in deploy/docker-compose.yml's header.
fn comment_commands(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut continued = false;
    for (i, line) in text.lines().enumerate() {
        let Some(comment) = line.trim_start().strip_prefix('#') else {
            continued = false;
            continue;
        };
        let comment = comment.trim();
        let starts = comment.starts_with("ddshark -")
            || SUBCOMMANDS
                .iter()
                .any(|c| comment.starts_with(&format!("ddshark {c} ")));
        if continued {
            if let Some((_, cmd)) = out.last_mut() {
                cmd.push(' ');
                cmd.push_str(comment.trim_end_matches('\\'));
            }
        } else if starts {
            out.push((i + 1, comment.trim_end_matches('\\').to_string()));
        } else {
            continue;
        }
        continued = comment.ends_with('\\');
    }
    out
}

#[test]
fn every_documented_command_line_parses() {
    let mut help: HashMap<String, String> = HashMap::new();
    let mut checked = 0;
    let mut failures = Vec::new();
    let compose = repo_root().join("deploy/docker-compose.yml");
    for file in doc_files().into_iter().chain([compose]) {
        let text = std::fs::read_to_string(&file).unwrap();
        let snippets = if file.extension().is_some_and(|x| x == "md") {
            code_snippets(&text)
        } else {
            comment_commands(&text)
        };
        for (line, snippet) in snippets {
            for words in commands(&snippet) {
                let Some(args) = ddshark_args(&words) else {
                    continue;
                };
                let at = format!("{}:{line}: `ddshark {}`", rel(&file), args.join(" "));
                checked += 1;
                let sub = args
                    .first()
                    .filter(|a| SUBCOMMANDS.contains(&a.as_str()))
                    .cloned();
                // `ddshark stats` named in prose: the command must exist.
                if args.len() <= 1 && (args.is_empty() || sub.is_some()) {
                    continue;
                }
                if is_synopsis(&args) {
                    let key = sub.clone().unwrap_or_default();
                    let text = help.entry(key).or_insert_with(|| {
                        let mut a: Vec<String> = sub.iter().cloned().collect();
                        a.push("--help".into());
                        String::from_utf8_lossy(&ddshark(&a, false).stdout).into_owned()
                    });
                    for flag in args.iter().filter(|a| a.starts_with('-') && a.len() > 1) {
                        let name = flag.split('=').next().unwrap_or(flag);
                        if !help_names(text, name) {
                            failures.push(format!("{at}: {name} is not an option of this command"));
                        }
                    }
                } else {
                    let out = ddshark(&args, true);
                    if !out.status.success() {
                        failures.push(format!(
                            "{at}: {}",
                            String::from_utf8_lossy(&out.stderr).trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} ddshark command lines found");
    assert!(
        failures.is_empty(),
        "documented command lines the parser refuses:\n{}",
        failures.join("\n")
    );
}

/// `issue 11`, `#11`, `session 4`, `round 2`: what a work log says, not a user's guide.
fn work_log_markers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        let bytes = lower.as_bytes();
        for (pos, _) in lower.char_indices() {
            let boundary = pos == 0 || !bytes[pos - 1].is_ascii_alphanumeric();
            if !boundary {
                continue;
            }
            let rest = &lower[pos..];
            let marker = [
                "issue ",
                "issues ",
                "session ",
                "sessions ",
                "round ",
                "issue #",
            ]
            .iter()
            .find_map(|w| rest.strip_prefix(w))
            .or_else(|| {
                (pos == 0 || bytes[pos - 1] != b'&')
                    .then(|| rest.strip_prefix('#'))
                    .flatten()
            });
            if marker.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit())) {
                found.push(format!("line {}: {}", i + 1, line.trim()));
                break;
            }
        }
    }
    found
}

#[test]
fn no_work_log_markers_in_the_docs() {
    let mut bad = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for m in work_log_markers(&text) {
            bad.push(format!("{}: {m}", rel(&file)));
        }
    }
    assert!(
        bad.is_empty(),
        "issue numbers or work-log markers (say what is meant instead):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_marker_check_catches_issue_numbers() {
    assert_eq!(work_log_markers("fixed in issue 11").len(), 1);
    assert_eq!(work_log_markers("see #11 for more").len(), 1);
    assert_eq!(work_log_markers("measured in Session 7").len(), 1);
    assert_eq!(work_log_markers("round 2 of the bench").len(), 1);
    assert!(work_log_markers("15 rounds; [link](#the-stack); &#8212; tissue 3").is_empty());
}

#[test]
fn relative_links_point_at_files() {
    let mut bad = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for (start, _) in text.match_indices("](") {
            let target = &text[start + 2..];
            let Some(end) = target.find(')') else {
                continue;
            };
            let target = target[..end].split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !dir.join(target).exists() {
                bad.push(format!("{}: {target}", rel(&file)));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "links to missing files:\n{}",
        bad.join("\n")
    );
}

/// Every repository script the docs name (`scripts/…`, `tests/…` ending in .sh or .py) exists.
#[test]
fn named_scripts_exist() {
    let mut bad = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for prefix in ["scripts/", "tests/"] {
            for (start, _) in text.match_indices(prefix) {
                if start > 0 && text.as_bytes()[start - 1].is_ascii_alphanumeric() {
                    continue;
                }
                let path: String = text[start..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'))
                    .collect();
                let path = path.trim_end_matches('.');
                if (path.ends_with(".sh") || path.ends_with(".py"))
                    && !repo_root().join(path).exists()
                {
                    bad.push(format!("{}: {path}", rel(&file)));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "scripts named but missing:\n{}",
        bad.join("\n")
    );
}

#[test]
fn readme_stays_short() {
    let lines = std::fs::read_to_string(repo_root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines (at most {README_MAX_LINES}): move details into docs/"
    );
}

#[test]
fn command_extraction() {
    let c = comment_commands(
        "# a\n#   ddshark -i eth0 --otlp x \\\n#     --host-name h\n#   ddshark (diagram)\n",
    );
    assert_eq!(
        c,
        [(2, "ddshark -i eth0 --otlp x  --host-name h".to_string())]
    );
    let c = commands("eval \"$(scripts/stack/start.sh)\" && ddshark -i eth0 --otlp \"$X\" # note");
    assert_eq!(
        c.last().unwrap(),
        &["ddshark", "-i", "eth0", "--otlp", "$X"]
    );
    let c = commands("sudo ddshark stats a.pcap | jq '.topics[] | .name' > out.json");
    assert_eq!(ddshark_args(&c[0]).unwrap(), ["stats", "a.pcap"]);
    let c = commands("setcap cap_net_raw=eip $(which ddshark)");
    assert!(c.iter().all(|w| ddshark_args(w).is_none()));
    assert!(is_synopsis(
        &ddshark_args(&commands("ddshark -i IFACE -C RING_MB")[0]).unwrap()
    ));
    assert!(!is_synopsis(
        &ddshark_args(&commands("ddshark -i eth0 -C 100")[0]).unwrap()
    ));
    assert!(is_synopsis(
        &ddshark_args(&commands("ddshark latency A B --format text\\|tsv")[0]).unwrap()
    ));
}

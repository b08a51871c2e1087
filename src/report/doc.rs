//! A rendered document as typed blocks, written out as Markdown (decision.md) or as HTML
//! (report.html) from the same blocks: the page shows what the file says without reading the
//! file back. Text in a block may carry the inline marks the tuner's sentences use (`code`,
//! **bold**); the HTML writer turns those into tags on escaped text. The lowest of `report`'s
//! modules: the plain-text table (`render_plain`) and HTML escaping live here so that the
//! table, the decision and the page all build on it.

use std::fmt::Write as _;

/// One block of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading of this level (1 = the title).
    Heading(usize, String),
    /// A paragraph (it may span lines).
    Para(String),
    /// Lines that follow each other without a blank line, each its own paragraph on a page.
    Lines(Vec<String>),
    /// A fenced code block in this language.
    Code { lang: String, text: String },
    /// A pipe table.
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// A bullet list under an optional line that introduces it (no blank line between them);
    /// an item may go on over further lines, indented in Markdown.
    List {
        intro: Option<String>,
        items: Vec<String>,
    },
    /// A numbered list (1., 2., ...).
    Numbered(Vec<String>),
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

impl Block {
    /// The block as Markdown, ending in a newline (an empty list: nothing).
    pub fn markdown(&self) -> String {
        match self {
            Block::Heading(level, t) => format!("{} {t}\n", "#".repeat((*level).max(1))),
            Block::Para(t) => format!("{t}\n"),
            Block::Lines(ls) => ls.iter().map(|l| format!("{l}\n")).collect(),
            Block::Code { lang, text } => format!("```{lang}\n{text}\n```\n"),
            Block::Table { header, rows } => {
                let rows: Vec<Vec<String>> = rows
                    .iter()
                    .map(|r| r.iter().map(|c| md_cell(c)).collect())
                    .collect();
                render_plain(header, &rows)
            }
            Block::List { intro, items } => {
                let mut s = intro.as_ref().map(|i| format!("{i}\n")).unwrap_or_default();
                for i in items {
                    let _ = writeln!(s, "- {i}");
                }
                s
            }
            Block::Numbered(items) => {
                let mut s = String::new();
                for (n, i) in items.iter().enumerate() {
                    let _ = writeln!(s, "{}. {i}", n + 1);
                }
                s
            }
        }
    }

    /// The block as HTML, headings `shift` levels down (a page's own headings come first).
    pub fn html(&self, shift: usize) -> String {
        match self {
            Block::Heading(level, t) => {
                let h = (level + shift).clamp(1, 6);
                format!("<h{h}>{}</h{h}>", inline(t))
            }
            Block::Para(t) => format!("<p>{}</p>", inline(t)),
            Block::Lines(ls) => ls.iter().map(|l| format!("<p>{}</p>", inline(l))).collect(),
            Block::Code { text, .. } => format!("<pre>{}\n</pre>", esc(text)),
            Block::Table { header, rows } => {
                let mut o = String::from("<div class=\"scroll\"><table><tr>");
                for c in header {
                    let _ = write!(o, "<th>{}</th>", inline(c));
                }
                o.push_str("</tr>");
                for r in rows {
                    o.push_str("<tr>");
                    for c in r {
                        let _ = write!(o, "<td{}>{}</td>", cell_class(c), inline(c));
                    }
                    o.push_str("</tr>");
                }
                o.push_str("</table></div>");
                o
            }
            Block::List { intro, items } => {
                let mut o = intro
                    .as_ref()
                    .map(|i| format!("<p>{}</p>", inline(i)))
                    .unwrap_or_default();
                if !items.is_empty() {
                    o.push_str("<ul>");
                    for i in items {
                        // An item's further lines (`  → hint`) are lines of the same item.
                        let lines: Vec<String> = i.lines().map(|l| inline(l.trim())).collect();
                        let _ = write!(o, "<li>{}</li>", lines.join("<br>"));
                    }
                    o.push_str("</ul>");
                }
                o
            }
            Block::Numbered(items) if items.is_empty() => String::new(),
            Block::Numbered(items) => {
                let mut o = String::from("<ol>");
                for i in items {
                    let _ = write!(o, "<li>{}</li>", inline(i));
                }
                o.push_str("</ol>");
                o
            }
        }
    }
}

/// A table cell's colour: the starred pick green, a failure red.
fn cell_class(c: &str) -> &'static str {
    if c.contains("(best)") || c.contains('★') {
        " class=\"better\""
    } else if c.starts_with("failed") {
        " class=\"fail\""
    } else {
        ""
    }
}

/// Backticks to `<code>`, `**x**` to bold, on escaped text.
pub fn inline(s: &str) -> String {
    let e = esc(s);
    let mut o = String::new();
    for (i, part) in e.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(o, "<code>{part}</code>");
        } else {
            for (j, p) in part.split("**").enumerate() {
                if j % 2 == 1 {
                    let _ = write!(o, "<strong>{p}</strong>");
                } else {
                    o.push_str(p);
                }
            }
        }
    }
    o
}

/// Escape text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// A padded Markdown table.
pub fn render_plain(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(header);
    let sep: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&format!("|-{}-|\n", sep.join("-|-")));
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// A document as Markdown: the blocks separated by blank lines.
pub fn markdown(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(Block::markdown)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A section appended to a document as Markdown: each block after a blank line.
pub fn markdown_section(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| format!("\n{}", b.markdown()))
        .collect()
}

/// A document as HTML.
pub fn html(blocks: &[Block], shift: usize) -> String {
    blocks.iter().map(|b| b.html(shift)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same blocks as Markdown and as HTML: headings, tables (the pick green, a failure
    /// red), lists with their intro, code, numbered steps.
    #[test]
    fn blocks_render_as_markdown_and_as_html() {
        let d = vec![
            Block::Heading(1, "T".into()),
            Block::Table {
                header: vec!["a".into(), "b".into()],
                rows: vec![vec!["★ x (best)".into(), "`y`".into()]],
            },
            Block::List {
                intro: Some("Failures:".into()),
                items: vec!["one\n  → hint".into(), "two".into()],
            },
            Block::Code {
                lang: "sh".into(),
                text: "cmd <x>".into(),
            },
            Block::Numbered(vec!["**a**".into()]),
            Block::Lines(vec!["Objective: o".into(), "Note: n".into()]),
        ];
        assert_eq!(
            markdown(&d),
            "# T\n\n| a          | b   |\n|------------|-----|\n| ★ x (best) | `y` |\n\nFailures:\n- one\n  → hint\n- two\n\n```sh\ncmd <x>\n```\n\n1. **a**\n\nObjective: o\nNote: n\n"
        );
        let h = html(&d, 1);
        assert!(h.contains("<h2>T</h2>"), "{h}");
        assert!(h.contains("<th>a</th>"));
        assert!(h.contains("<td class=\"better\">★ x (best)</td><td><code>y</code></td>"));
        assert!(
            h.contains("<p>Failures:</p><ul><li>one<br>→ hint</li><li>two</li></ul>"),
            "{h}"
        );
        assert!(h.contains("<pre>cmd &lt;x&gt;\n</pre>"));
        assert!(
            h.contains("<ol><li><strong>a</strong></li></ol><p>Objective: o</p><p>Note: n</p>")
        );
        assert_eq!(markdown_section(&d[..1]), "\n# T\n");
    }
}

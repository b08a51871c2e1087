//! What the table and decision.md say about effective arguments, from results.csv rows: the
//! settings that did not take effect and the configurations that ran the same server in
//! effect (both found by `tune::effective`).

use crate::record::rows::Row;
use crate::report::doc::Block;
use crate::tune::effective::{duplicates, no_effect_clause, not_in_effect};

/// The lists under the comparison table: settings not in effect, and configurations that ran
/// the same server. Empty when there is nothing to say.
pub fn notes(rows: &[Row]) -> Vec<Block> {
    let mut out = Vec::new();
    let missed = not_in_effect(rows);
    if !missed.is_empty() {
        out.push(Block::List {
            intro: Some(
                "Not in effect (asked for, but the server ran otherwise; runs/<run>/effective_args.json):"
                    .into(),
            ),
            items: missed.iter().map(|(name, f)| format!("{name}: {f}")).collect(),
        });
    }
    let dups = duplicates(rows);
    if !dups.is_empty() {
        out.push(Block::List {
            intro: Some(
                "Same server in effect (equal effective arguments, `effective_args_id`):".into(),
            ),
            items: dups
                .iter()
                .map(|(id, names)| {
                    format!(
                        "{} ({id}): {}",
                        names.join(", "),
                        no_effect_clause(rows, names)
                    )
                })
                .collect(),
        });
    }
    out
}

/// decision.md's section on effective arguments (none when there is nothing to say).
pub fn decision_blocks(rows: &[Row]) -> Vec<Block> {
    let notes = notes(rows);
    if notes.is_empty() {
        return notes;
    }
    let mut out = vec![
        Block::Heading(2, "Effective arguments".into()),
        Block::Para(
            "Each server's `/server_info` and start-up log were compared with what its configuration asked for."
                .into(),
        ),
    ];
    out.extend(notes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::doc;
    use crate::tune::effective::tests::rows;

    /// The lines under the comparison table, as Markdown.
    fn table_notes(rows: &[Row]) -> String {
        doc::markdown_section(&notes(rows))
    }

    /// decision.md's section on effective arguments, as Markdown.
    fn decision_section(rows: &[Row]) -> String {
        doc::markdown_section(&decision_blocks(rows))
    }

    #[test]
    fn the_table_lists_what_was_not_in_effect_and_the_same_servers() {
        let t = table_notes(&rows());
        assert!(
            t.contains("- cgbd8: `cuda_graph_max_bs_decode` asked 8, in effect no CUDA graph"),
            "{t}"
        );
        assert!(
            t.contains("- cgbd8, cgbd16 (aaa): what they differ in (cuda_graph_max_bs_decode) did not change the server"),
            "{t}"
        );
        assert!(!t.contains("mtt8192"), "{t}");
        assert_eq!(table_notes(&rows()[2..]), "");
    }

    #[test]
    fn decision_md_gets_a_section_only_with_something_to_say() {
        let md = decision_section(&rows());
        assert!(md.starts_with("\n## Effective arguments"), "{md}");
        assert_eq!(decision_section(&rows()[2..]), "");
    }
}

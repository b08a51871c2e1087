//! Reading results.csv back: for resume, the table, compare and reproduce. The CSV is the
//! record of a sweep; these readers take it as it is on disk, including a last line cut short
//! by a crash (which is reported and ignored).

use super::ReadError;

use super::run_record::{Phase, ProbeResult, QualityStatus, RunStatus};
use crate::observe::diagnose::VerdictKind;
use crate::plan::engine::Engine;
use crate::plan::spec::LoadPoint;
use crate::server::failure::FailureKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One results.csv row, typed: the identity and classification columns parsed once when the
/// row is read (`run_name`, the load point, `status`, `phase`, the verdicts, ...), the measured
/// columns read through a [`Col`] (so the spec's own SLO and objective columns work), and the
/// swept values by key. Outside `record/` no column is read by its name: the names live in the
/// column list (`run_record`) and here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    run_name: String,
    run_id: String,
    engine: Option<Engine>,
    status: Option<RunStatus>,
    failure_kind: Option<FailureKind>,
    concurrency: Option<u64>,
    repeat: Option<u64>,
    phase: Phase,
    probe: Option<ProbeResult>,
    verdict: Option<VerdictKind>,
    quality: Option<QualityStatus>,
    /// Every cell as on disk, by column name: the measured columns are read from here, and a
    /// rewrite of results.csv writes these back unchanged.
    cells: BTreeMap<String, String>,
}

/// A column a row is read by (the list's names are `plan::columns`', below the spec, which
/// resolves its objective's columns as it is read).
pub use crate::plan::columns::Col;
use crate::plan::columns::Column;

/// The text columns the code reads, by their names in the one list.
const FAILURE_MESSAGE: &str = Column::FailureMessage.name();
const VERDICT_EVIDENCE: &str = Column::VerdictEvidence.name();
const VERDICT_ALSO: &str = Column::VerdictAlso.name();
const NOT_IN_EFFECT: &str = Column::NotInEffect.name();
const EFFECTIVE_ARGS_ID: &str = Column::EffectiveArgsId.name();
const QUALITY_VERDICT: &str = Column::QualityVerdict.name();
const QUALITY_EVIDENCE: &str = Column::QualityEvidence.name();
const REQUEST_RATE: &str = Column::RequestRate.name();
const DECODE_STEPS: &str = Column::DecodeSteps.name();
const TURN_LATENCY: &str = Column::TurnLatency.name();

/// The quality guard's cells of a configuration's rows (`tune::quality` fills them in).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QualityCells {
    pub verdict: Option<QualityStatus>,
    pub decisive_share: Option<f64>,
    pub diverged_share: Option<f64>,
    pub prefix_agreement: Option<f64>,
    pub floor_decisive_share: Option<f64>,
    pub p_value: Option<f64>,
    pub accuracy: Option<f64>,
    pub evidence: String,
}

impl QualityCells {
    fn cells(&self) -> [(&'static str, String); 8] {
        let f = |x: Option<f64>| x.map(|v| format!("{v:.4}")).unwrap_or_default();
        [
            (
                QUALITY_VERDICT,
                self.verdict.map_or("", QualityStatus::as_str).to_string(),
            ),
            (Column::QualityDecisiveShare.name(), f(self.decisive_share)),
            (Column::QualityDivergedShare.name(), f(self.diverged_share)),
            (
                Column::QualityPrefixAgreement.name(),
                f(self.prefix_agreement),
            ),
            (
                Column::QualityFloorDecisiveShare.name(),
                f(self.floor_decisive_share),
            ),
            (Column::QualityPValue.name(), f(self.p_value)),
            (Column::QualityAccuracy.name(), f(self.accuracy)),
            (QUALITY_EVIDENCE, self.evidence.clone()),
        ]
    }
}

impl Row {
    /// A row from its cells, by column name, as a results.csv holds them: the typed fields are
    /// parsed here, once. (The reader's constructor; tests build rows the same way.)
    pub fn from_cells<K: Into<String>, V: Into<String>>(
        cells: impl IntoIterator<Item = (K, V)>,
    ) -> Row {
        let mut r = Row {
            cells: cells
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            ..Default::default()
        };
        r.parse();
        r
    }

    fn parse(&mut self) {
        let c = |n: &str| self.cells.get(n).map(String::as_str).unwrap_or("");
        self.run_name = c(Column::RunName.name()).to_string();
        self.run_id = c(Column::RunId.name()).to_string();
        self.engine = Engine::ALL
            .into_iter()
            .find(|e| e.as_str() == c(Column::Engine.name()));
        self.status = RunStatus::parse(c(Column::Status.name()));
        self.failure_kind = FailureKind::parse(c(Column::FailureKind.name()));
        self.concurrency = c(Column::Concurrency.name()).parse().ok();
        self.repeat = c(Column::Repeat.name()).parse().ok();
        // A file from before the `phase` column (or with an empty cell) holds only fixed load
        // points: `measure`.
        self.phase = Phase::parse(c(Column::Phase.name())).unwrap_or_default();
        self.probe = ProbeResult::parse(c(Column::Probe.name()));
        self.verdict = VerdictKind::ALL
            .into_iter()
            .find(|k| k.as_str() == c(Column::Verdict.name()));
        self.quality = QualityStatus::parse(c(QUALITY_VERDICT));
    }

    /// This row with one cell set, as a file would hold it (tests build rows so).
    #[cfg(test)]
    pub fn with(mut self, column: &str, value: impl Into<String>) -> Row {
        self.set_cell(column, value);
        self
    }

    /// Set one cell by its results.csv name, the typed fields with it: tests build rows as a
    /// file would hold them (sgtune's own cells are set through their types, `set_quality`).
    #[cfg(test)]
    pub fn set_cell(&mut self, column: &str, value: impl Into<String>) {
        self.cells.insert(column.to_string(), value.into());
        self.parse();
    }

    /// Remove one cell (as a file from before that column): tests' rows.
    #[cfg(test)]
    pub fn remove_cell(&mut self, column: &str) {
        self.cells.remove(column);
        self.parse();
    }

    /// A cell by its name, for record's own readers (outside record/, columns are typed).
    pub(in crate::record) fn text(&self, col: &str) -> &str {
        self.cells.get(col).map(String::as_str).unwrap_or("")
    }

    /// A cell as written, by its column: empty when the row has none.
    pub fn cell(&self, col: &Col) -> &str {
        match col {
            Col::Listed(c) => self.text(c.name()),
            Col::Param(k) => self.param(k),
        }
    }

    /// Whether the row has this column (a file from before a column has none).
    pub fn has(&self, col: &Col) -> bool {
        match col {
            Col::Listed(c) => self.cells.contains_key(c.name()),
            Col::Param(k) => self.cells.contains_key(&format!("param_{k}")),
        }
    }

    /// A column's number; None when empty or not a finite number.
    pub fn metric(&self, col: &Col) -> Option<f64> {
        self.cell(col).parse::<f64>().ok().filter(|x| x.is_finite())
    }

    /// A column's whole number; None when empty or not one.
    pub fn count(&self, col: &Col) -> Option<u64> {
        self.cell(col).parse::<u64>().ok()
    }

    /// The server's decode steps by running batch (`decode_steps`), as far as the cell reads:
    /// none in a row without server stats or a file from before the column.
    pub fn decode_steps(&self) -> Vec<crate::observe::steps::DecodeSteps> {
        super::decode_steps::parse(self.text(DECODE_STEPS))
    }

    /// Latency by turn (`turn_latency`, `sessions:`), as far as the cell reads: none in a row
    /// without sessions or a file from before the column.
    pub fn turn_latency(&self) -> Vec<super::turn_latency::TurnLatency> {
        super::turn_latency::parse(self.text(TURN_LATENCY))
    }

    /// A swept key's value as written (`param_<key>`); empty when the row has none.
    pub fn param(&self, key: &str) -> &str {
        self.cells
            .get(&format!("param_{key}"))
            .map(String::as_str)
            .unwrap_or("")
    }

    /// The swept keys of this row with their values, in column order.
    pub fn params(&self) -> impl Iterator<Item = (&str, &str)> {
        self.cells
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("param_").map(|k| (k, v.as_str())))
    }

    pub fn run_name(&self) -> &str {
        &self.run_name
    }
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
    /// The engine the row's server was; None in a file from before the column.
    pub fn engine(&self) -> Option<Engine> {
        self.engine
    }
    /// The offered concurrency; None when the cell is empty.
    pub fn concurrency(&self) -> Option<u64> {
        self.concurrency
    }
    /// An open loop's arrival rate (requests/s); None in a closed loop.
    pub fn request_rate(&self) -> Option<f64> {
        self.text(REQUEST_RATE).parse().ok()
    }
    /// The repeat index, 1-based; None when the cell is empty.
    pub fn repeat(&self) -> Option<u64> {
        self.repeat
    }
    /// An open loop's rate as written in results.csv (`2.5`); None in a closed loop.
    pub fn rate_text(&self) -> Option<&str> {
        Some(self.text(REQUEST_RATE)).filter(|t| !t.is_empty())
    }
    /// The load point the row measured; None when its concurrency cell is empty.
    pub fn point(&self) -> Option<LoadPoint> {
        Some(LoadPoint {
            concurrency: self.concurrency?,
            request_rate: self.request_rate(),
        })
    }
    /// The load point as tables show it: the concurrency, or `<rate>/s` in an open loop.
    pub fn load_point(&self) -> String {
        crate::plan::spec::point_label(self.text(Column::Concurrency.name()), self.rate_text())
    }
    pub fn is_ok(&self) -> bool {
        self.status == Some(RunStatus::Ok)
    }
    /// The row's phase (`measure` in a file from before the column).
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// The row's status; `None` for a cell sgtune does not write (an edited file).
    pub fn status(&self) -> Option<RunStatus> {
        self.status
    }
    /// A probe's standing, or a pre-flight attempt's; `None` on other rows.
    pub fn probe(&self) -> Option<ProbeResult> {
        self.probe
    }
    /// Why a failed row failed; `None` when the row did not fail (or an unknown kind).
    pub fn failure_kind(&self) -> Option<FailureKind> {
        self.failure_kind
    }
    /// The decisive log line or what happened (failed rows; a pruned row's evidence).
    pub fn failure_message(&self) -> &str {
        self.text(FAILURE_MESSAGE)
    }
    /// What limited the run, from the server's log; None when the row has no verdict.
    pub fn verdict(&self) -> Option<VerdictKind> {
        self.verdict
    }
    /// The numbers the verdict rests on.
    pub fn verdict_evidence(&self) -> &str {
        self.text(VERDICT_EVIDENCE)
    }
    /// The other limits the launch showed beside the verdict's (empty in a file from before
    /// the column); an unknown name is skipped.
    pub fn verdict_also(&self) -> Vec<VerdictKind> {
        self.text(VERDICT_ALSO)
            .split('+')
            .filter_map(|n| VerdictKind::ALL.into_iter().find(|k| k.as_str() == n))
            .collect()
    }
    /// The asked keys the server did not put in effect, as a sentence per key (`; `-joined).
    pub fn not_in_effect(&self) -> impl Iterator<Item = &str> {
        self.text(NOT_IN_EFFECT)
            .split("; ")
            .filter(|f| !f.is_empty())
    }
    /// The id of the arguments the server put in effect (equal ids: the same server).
    pub fn effective_args_id(&self) -> &str {
        self.text(EFFECTIVE_ARGS_ID)
    }
    /// The quality guard's verdict; None without `quality:` (or before it judged).
    pub fn quality(&self) -> Option<QualityStatus> {
        self.quality
    }
    /// Whether the quality guard lets the decision consider this row (no verdict: no guard).
    pub fn quality_eligible(&self) -> bool {
        self.quality.is_none_or(QualityStatus::eligible)
    }
    /// The quality guard's sentence.
    pub fn quality_evidence(&self) -> &str {
        self.text(QUALITY_EVIDENCE)
    }
    /// Write the quality guard's cells.
    pub fn set_quality(&mut self, q: &QualityCells) {
        for (col, v) in q.cells() {
            self.cells.insert(col.to_string(), v);
        }
        self.parse();
    }

    /// Run name, load point, repeat: one row per key in a finished sweep. (Not the run id:
    /// two named configurations may resolve to the same server command.)
    pub fn key(&self) -> crate::record::RowKey {
        (
            self.run_name.clone(),
            self.concurrency.unwrap_or(0),
            self.text(REQUEST_RATE).to_string(),
            self.repeat.unwrap_or(1),
        )
    }

    /// The cells under `header`, in its order (a rewrite of results.csv).
    pub fn cells_under(&self, header: &[String]) -> Vec<String> {
        header.iter().map(|h| self.text(h).to_string()).collect()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Row>,
    /// The raw fields of each row, as on disk (kept byte-exact when a resume rewrites the file).
    pub raw: Vec<Vec<String>>,
    /// The file ended in a partial line (a crash in the middle of an append); it was ignored.
    pub partial_tail: bool,
}

impl Table {
    /// Whether the file has this column (one from before a column has not).
    pub fn has_column(&self, col: &Col) -> bool {
        self.header.contains(&col.name())
    }

    /// The listed columns of `header` this file lacks, when its rows can be written under
    /// `header` without losing a cell or a swept value: every column of the file is one of
    /// `header`'s, and `header`'s swept keys are the file's. Some(empty): the same columns.
    /// None: another sweep's or another sgtune's file, not to be written under `header`.
    pub fn columns_added_by(&self, header: &[String]) -> Option<Vec<String>> {
        if !self.header.iter().all(|h| header.contains(h)) {
            return None;
        }
        let added: Vec<String> = header
            .iter()
            .filter(|h| !self.header.contains(h))
            .cloned()
            .collect();
        (!added.iter().any(|h| h.starts_with("param_"))).then_some(added)
    }

    /// The rows' fields under `header`: as read when the file has that header, else each cell
    /// by its column's name, a column the file lacks empty (a file written before a column was
    /// added, written again under today's header).
    pub fn fields_under(&self, header: &[String]) -> Vec<Vec<String>> {
        if self.header == header {
            return self.raw.clone();
        }
        self.rows.iter().map(|r| r.cells_under(header)).collect()
    }
}

/// `DIR` (a results folder) or `DIR/results.csv` → the CSV path.
pub fn csv_path(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join(super::layout::RESULTS_CSV)
    } else {
        p.to_path_buf()
    }
}

pub fn read(path: &Path) -> Result<Table, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    // Rows are appended whole and fsynced; a file that does not end in a newline was cut in
    // the middle of an append. Drop that partial line.
    let (body, partial_tail) = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) if i + 1 < bytes.len() => (&bytes[..=i], true),
        Some(_) => (&bytes[..], false),
        None => (&bytes[..0], !bytes.is_empty()),
    };
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(body);
    let header: Vec<String> = r
        .headers()
        .map_err(|e| ReadError::bad(path, e))?
        .iter()
        .map(String::from)
        .collect();
    let mut t = Table {
        header: header.clone(),
        partial_tail,
        ..Default::default()
    };
    for rec in r.records() {
        let rec = rec.map_err(|e| ReadError::bad(path, e))?;
        let fields: Vec<String> = rec.iter().map(String::from).collect();
        if fields.len() != header.len() {
            // sgtune writes every row through one encoder with the header's columns, so a row
            // of another shape means the file was edited or mixed with another sweep: say so
            // rather than judge a sweep on part of its rows.
            let line = rec.position().map_or(0, |p| p.line());
            return Err(ReadError::bad(
                path,
                format!(
                    "line {line} has {} fields but the header has {} (was the file edited, or two sweeps' files joined?)",
                    fields.len(),
                    header.len()
                ),
            ));
        }
        t.rows.push(Row::from_cells(
            header.iter().cloned().zip(fields.iter().cloned()),
        ));
        t.raw.push(fields);
    }
    Ok(t)
}

/// The swept keys of a results table (`param_<key>` columns, in order).
pub fn param_keys(header: &[String]) -> Vec<String> {
    header
        .iter()
        .filter_map(|h| h.strip_prefix("param_").map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[(&str, &str)]) -> Row {
        Row::from_cells(cells.iter().copied())
    }

    #[test]
    fn typed_cells_read_what_the_writer_spells_and_nothing_else() {
        for p in Phase::ALL {
            assert_eq!(row(&[("phase", p.as_str())]).phase(), p);
        }
        // A results.csv from before the phase column: every row a fixed load point.
        assert_eq!(row(&[]).phase(), Phase::Measure);
        for s in RunStatus::ALL {
            assert_eq!(row(&[("status", s.as_str())]).status(), Some(s));
        }
        assert_eq!(row(&[("status", "OK")]).status(), None);
        assert!(!row(&[("status", "OK")]).is_ok());
        assert!(row(&[("status", "ok")]).is_ok());
        for p in ProbeResult::ALL {
            assert_eq!(row(&[("probe", p.as_str())]).probe(), Some(p));
        }
        assert_eq!(row(&[("probe", "")]).probe(), None);
        for k in FailureKind::ALL {
            assert_eq!(row(&[("failure_kind", k.as_str())]).failure_kind(), Some(k));
        }
        assert_eq!(row(&[]).failure_kind(), None);
    }

    /// `turn_latency` reads through the row, the name the list's; none without sessions.
    #[test]
    fn turn_latency_reads_through_the_row() {
        assert!(Col::named(TURN_LATENCY).is_some());
        assert!(row(&[]).turn_latency().is_empty());
        let got = row(&[(TURN_LATENCY, "1:120.5:11.20:40 24+:95.0::3")]).turn_latency();
        assert_eq!(
            got.iter()
                .map(|t| (t.turn, t.and_later, t.ttft_p50_ms, t.requests))
                .collect::<Vec<_>>(),
            vec![(1, false, Some(120.5), 40), (24, true, Some(95.0), 3)]
        );
    }

    /// `decode_steps` reads what the writer wrote, skips what it cannot read, and is empty in a
    /// file from before the column; the name is the list's.
    #[test]
    fn decode_steps_read_as_far_as_the_cell_goes() {
        assert!(Col::named(DECODE_STEPS).is_some());
        assert!(row(&[]).decode_steps().is_empty());
        assert!(row(&[(DECODE_STEPS, "")]).decode_steps().is_empty());
        let got = row(&[(DECODE_STEPS, "2:9.50:3:g bad 6.5:14.25:8:e")]).decode_steps();
        let got: Vec<(f64, f64, u32, Option<bool>)> = got
            .iter()
            .map(|s| (s.running, s.step_ms, s.lines, s.graph))
            .collect();
        assert_eq!(
            got,
            vec![(2.0, 9.5, 3, Some(true)), (6.5, 14.25, 8, Some(false))]
        );
    }

    /// Every column the code reads by a constant is one of the list's; a name the list does
    /// not have is no column; `param_<key>` is any key's.
    #[test]
    fn columns_are_the_lists_and_unknown_names_are_none() {
        for c in [
            Col::DURATION_S,
            Col::REQUEST_THROUGHPUT,
            Col::OUTPUT_TOK_S,
            Col::GOODPUT_REQ_S,
            Col::RUNNING_REQ_MEAN,
            Col::RETRACTIONS,
            Col::MAX_TOTAL_NUM_TOKENS,
            Col::TIME_TO_READY_S,
            Col::TOKEN_USAGE_MAX,
            Col::RUNNING_REQ_MAX,
            Col::QUEUE_REQ_MEAN,
            Col::CONCURRENCY,
            Col::TTFT_MS_P50,
            Col::TTFT_MS_P99,
            Col::TPOT_MS_P50,
            Col::TPOT_MS_P99,
            Col::E2E_MS_P50,
            Col::SERVER_STATS_LINES,
            Col::SERVER_GEN_TPUT_MEAN,
            Col::QUEUE_REQ_MAX,
            Col::TTFT_FIRST_TURN_MS_P50,
            Col::TTFT_LAST_TURN_MS_P50,
            Col::CACHE_HIT_RATE,
            Col::PREFIX_REUSABLE_SHARE,
        ] {
            assert_eq!(Col::named(&c.name()), Some(c.clone()), "{c:?}");
        }
        assert_eq!(Col::named("ttft_ms_p99x"), None);
        assert_eq!(Col::named("param_"), None);
        assert_eq!(Col::named("param_dtype"), Some(Col::param("dtype")));
        let r = row(&[
            ("param_dtype", "bf16"),
            ("ttft_ms_p99", "12.5"),
            ("retractions", "3"),
        ]);
        assert_eq!(r.cell(&Col::param("dtype")), "bf16");
        assert_eq!(r.metric(&Col::TTFT_MS_P99), Some(12.5));
        assert_eq!(r.count(&Col::RETRACTIONS), Some(3));
        assert_eq!(r.metric(&Col::param("dtype")), None);
        assert!(r.has(&Col::TTFT_MS_P99) && !r.has(&Col::TPOT_MS_P99));
        assert_eq!(r.params().collect::<Vec<_>>(), vec![("dtype", "bf16")]);
    }

    /// The row's load point and the plan's label are one spelling; the quality cells written
    /// are read back typed.
    #[test]
    fn the_load_point_label_and_the_quality_cells_round_trip() {
        let closed = row(&[("concurrency", "8"), ("request_rate", "")]);
        let open = row(&[("concurrency", "16"), ("request_rate", "2.5")]);
        for r in [&closed, &open] {
            let p = r.point().expect("a point");
            assert_eq!(p.table_label(), r.load_point());
        }
        assert_eq!(
            (closed.load_point(), open.load_point()),
            ("8".into(), "2.5/s".into())
        );
        assert_eq!(open.request_rate(), Some(2.5));
        let mut r = row(&[("run_name", "a")]);
        assert!(r.quality_eligible() && r.quality().is_none());
        r.set_quality(&QualityCells {
            verdict: Some(QualityStatus::Fail),
            decisive_share: Some(0.25),
            evidence: "derails".into(),
            ..Default::default()
        });
        assert_eq!(r.quality(), Some(QualityStatus::Fail));
        assert!(!r.quality_eligible());
        assert_eq!(r.quality_evidence(), "derails");
        assert_eq!(r.text("quality_decisive_share"), "0.2500");
        let header = vec!["run_name".to_string(), "quality_verdict".to_string()];
        assert_eq!(
            r.cells_under(&header),
            vec!["a".to_string(), "fail".to_string()]
        );
    }

    #[test]
    fn a_row_of_another_shape_is_an_error_naming_its_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("results.csv");
        std::fs::write(&p, "run_name,status\na,ok\nb,ok,extra\n").expect("write");
        let e = read(&p).expect_err("short row refused").to_string();
        assert!(e.contains("line 3") && e.contains("3 fields"), "{e}");
    }

    #[test]
    fn partial_last_line_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("results.csv");
        std::fs::write(
            &p,
            "run_name,run_id,status,concurrency,repeat\na,1,ok,8,1\nb,2,fai",
        )
        .expect("write");
        let t = read(&p).expect("reads");
        assert!(t.partial_tail);
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].key(), ("a".to_string(), 8, String::new(), 1));
        std::fs::write(
            &p,
            "run_name,run_id,status,concurrency,repeat\na,1,ok,8,1\n",
        )
        .expect("write");
        let t = read(&p).expect("reads");
        assert!(!t.partial_tail);
        assert!(t.rows[0].is_ok());
    }
}

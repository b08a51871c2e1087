//! `runs/<launch>/metrics<suffix>.csv`: the /metrics scrapes of one measured window, one row
//! per series per scrape (`t_s` seconds after the window opened, to the millisecond; the
//! series' name, labels as scraped, value). Written once the load point ends, from the scrapes
//! `observe::prom` kept; read back as the same scrapes.

use super::ReadError;
use super::store::{CsvFile, StoreError};
use crate::observe::prom::{Sample, Scrape};
use std::path::Path;

pub const HEADER: [&str; 4] = ["t_s", "metric", "labels", "value"];

/// Write the window's scrapes (a scrape with no series leaves no row).
pub fn write(path: &Path, scrapes: &[Scrape]) -> Result<(), StoreError> {
    let mut f = CsvFile::create(path, HEADER)?;
    for s in scrapes {
        for x in &s.samples {
            f.row([
                format!("{:.3}", s.t_s),
                x.name.clone(),
                x.labels.clone(),
                x.value.to_string(),
            ]);
        }
    }
    f.finish()
}

/// A metrics.csv read back: consecutive rows of one `t_s` are one scrape. Ok(None) when there
/// is none (no scrape answered); a row that is not four cells with numbers (a cut last line) is
/// left out; a file that is not CSV at all is an error naming it.
pub fn read(path: &Path) -> Result<Option<Vec<Scrape>>, ReadError> {
    let Some(mut rd) = super::store::open_csv(path)? else {
        return Ok(None);
    };
    let header = rd
        .headers()
        .map_err(|e| ReadError::bad(path, format!("not a metrics.csv ({e})")))?;
    if header.iter().ne(HEADER) {
        return Err(ReadError::bad(
            path,
            format!("not a metrics.csv (its header is not {})", HEADER.join(",")),
        ));
    }
    let mut out: Vec<(String, Scrape)> = Vec::new();
    for rec in rd.records() {
        let Ok(rec) = rec else { continue };
        let (Some(t), Some(name), Some(labels), Some(value)) =
            (rec.get(0), rec.get(1), rec.get(2), rec.get(3))
        else {
            continue;
        };
        let (Ok(t_s), Ok(value)) = (t.parse::<f64>(), value.parse::<f64>()) else {
            continue;
        };
        let sample = Sample {
            name: name.to_string(),
            labels: labels.to_string(),
            value,
        };
        match out.last_mut() {
            Some((at, s)) if at == t => s.samples.push(sample),
            _ => out.push((
                t.to_string(),
                Scrape {
                    t_s,
                    samples: vec![sample],
                },
            )),
        }
    }
    Ok(Some(out.into_iter().map(|(_, s)| s).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str, labels: &str, value: f64) -> Sample {
        Sample {
            name: name.into(),
            labels: labels.into(),
            value,
        }
    }

    #[test]
    fn scrapes_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("metrics.csv");
        assert_eq!(read(&path).ok(), Some(None), "none yet");
        let scrapes = vec![
            Scrape {
                t_s: 0.25,
                samples: vec![
                    sample("sglang:num_running_reqs", "model_name=\"tiny\"", 6.0),
                    sample(
                        "sglang:generation_tokens_total",
                        "model_name=\"tiny\",engine_type=\"unified\"",
                        1234.0,
                    ),
                ],
            },
            Scrape {
                t_s: 1.251,
                samples: vec![sample("vllm:kv_cache_usage_perc", "", 0.930_117_187_5)],
            },
        ];
        write(&path, &scrapes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(&path).ok().flatten(), Some(scrapes));
    }

    #[test]
    fn a_cut_last_row_is_left_out_and_another_file_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("metrics.csv");
        std::fs::write(
            &path,
            "t_s,metric,labels,value\n0.500,a,,1\n0.500,b,,2\n1.500,a,",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let got = read(&path).ok().flatten().unwrap_or_default();
        assert_eq!(
            got,
            vec![Scrape {
                t_s: 0.5,
                samples: vec![sample("a", "", 1.0), sample("b", "", 2.0)],
            }]
        );
        std::fs::write(&path, "phase,index\nwarmup,0\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(read(&path).is_err(), "a requests.csv is not a metrics.csv");
    }
}

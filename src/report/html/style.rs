//! The frame every page shares: the stylesheet (inline, so the page fetches nothing), the head
//! that carries it and the foot.

use super::esc;

const CSS: &str = r#"
:root{--fg:#1b1b1b;--muted:#5a5a5a;--line:#d8d8d8;--bg:#fff;--card:#fafafa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;padding:16px 24px;max-width:1800px}
h1{font-size:1.5rem;margin:.2em 0}h2{font-size:1.2rem;margin:1.4em 0 .4em;border-bottom:1px solid var(--line)}h3{font-size:1.05rem;margin:.8em 0 .3em}
p.sub,.note,.nodata{color:var(--muted)}
table{border-collapse:collapse;margin:.5em 0;font-variant-numeric:tabular-nums}
td,th{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
.scroll{overflow-x:auto}
code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:6px 8px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:14px}
.launches{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:18px}
.launch{border:1px solid var(--line);background:var(--card);padding:8px 12px;border-radius:4px}
.two{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:18px}
figure.chart{margin:0 0 10px;background:#fff;border:1px solid #eee;padding:6px}
figure.chart svg{width:100%;height:auto;display:block}
figcaption{font-weight:600}
ul.legend{list-style:none;margin:2px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px}
.sw{display:inline-block;width:18px;height:0;margin-right:5px;vertical-align:middle}
.sw.win{height:10px;background:rgba(86,180,233,.25);border:0}
.sw.mark{height:10px;width:0;border-left:2px solid #D55E00}
.sw.ev{height:10px;width:0;border-left:2px solid #aaa}
.better{background:#d9f0e3}.worse{background:#fbe0d2}.verdict{font-weight:600}
.fail{color:#a33d00}
@media print{body{max-width:none;padding:0;font-size:11px}.scroll{overflow:visible}table{font-size:8.5px;width:100%}td,th{padding:1px 3px;overflow-wrap:anywhere}.launches,.grid{grid-template-columns:1fr 1fr}.launch,figure.chart{break-inside:avoid}h2{break-after:avoid}}
@media (max-width:1100px){.two{grid-template-columns:1fr}}
"#;

pub(super) fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>{}</title><style>{CSS}</style></head><body>\n",
        esc(title)
    )
}

pub(super) const FOOT: &str = "</body></html>\n";

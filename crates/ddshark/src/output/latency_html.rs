//! `--html FILE`: one self-contained page (inline SVG, CSS and a little JS; no network)
//! with a box plot per topic, latency over time and a histogram.

use std::fmt::Write as _;

use crate::latency::stats::{human_ns, negative_bin, pct, Group, GroupKey};
use crate::latency::{label, Level, RunSummary};

const PALETTE: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
/// Most points drawn per topic in the time plot.
const MAX_POINTS: usize = 4_000;
/// Most outliers drawn per box.
const MAX_OUTLIERS: usize = 200;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn color(i: usize) -> &'static str {
    PALETTE.get(i % PALETTE.len()).copied().unwrap_or("#333")
}

/// Value axis (ns → px), logarithmic when the data span more than a decade.
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    px0: f64,
    px1: f64,
}

impl Axis {
    fn new(min: i64, max: i64, px0: f64, px1: f64) -> Self {
        let lo = (min.max(1)) as f64;
        let hi = (max.max(2)) as f64;
        let log = hi / lo > 10.0;
        let (lo, hi) = if log {
            (
                10f64.powf(lo.log10().floor()),
                10f64.powf(hi.log10().ceil()),
            )
        } else {
            let pad = ((hi - lo) * 0.05).max(1.0);
            ((lo - pad).max(0.0), hi + pad)
        };
        Self {
            lo,
            hi: if hi > lo { hi } else { lo + 1.0 },
            log,
            px0,
            px1,
        }
    }

    fn pos(&self, v: i64) -> f64 {
        let v = v as f64;
        let f = if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.px0 + f.clamp(0.0, 1.0) * (self.px1 - self.px0)
    }

    fn ticks(&self) -> Vec<i64> {
        let mut t = Vec::new();
        if self.log {
            let mut v = self.lo;
            while v <= self.hi * 1.0001 && t.len() < 20 {
                t.push(v as i64);
                v *= 10.0;
            }
        } else {
            let span = self.hi - self.lo;
            let raw = span / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw)
                .unwrap_or(raw);
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi && t.len() < 20 {
                t.push(v as i64);
                v += step;
            }
        }
        t
    }
}

struct Row<'a> {
    key: &'a GroupKey,
    group: &'a Group,
    sorted: Vec<i64>,
    name: String,
}

/// The x axis' caption (`caption` is HTML already), centred at `x` under a plot `h` high,
/// and the end of the plot's SVG.
fn end_plot(out: &mut String, x: f64, h: f64, caption: &str) {
    let _ = write!(
        out,
        r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" class="axis">{caption}</text></svg>"#,
        h - 4.0
    );
}

fn box_plot(rows: &[Row<'_>], out: &mut String) {
    let with_data: Vec<&Row<'_>> = rows.iter().filter(|r| !r.sorted.is_empty()).collect();
    if with_data.is_empty() {
        out.push_str("<p>No complete samples.</p>");
        return;
    }
    let min = with_data
        .iter()
        .filter_map(|r| r.sorted.first())
        .min()
        .copied()
        .unwrap_or(1);
    let max = with_data
        .iter()
        .filter_map(|r| r.sorted.last())
        .max()
        .copied()
        .unwrap_or(2);
    let left = 320.0;
    let width = 1100.0;
    let row_h = 34.0;
    let top = 20.0;
    let h = top + row_h * with_data.len() as f64 + 40.0;
    let ax = Axis::new(min, max, left, width - 30.0);
    let _ = write!(
        out,
        r#"<svg class="plot" id="boxplot" viewBox="0 0 {width} {h}" width="{width}" height="{h}" role="img" aria-label="latency box plot per topic">"#
    );
    for t in ax.ticks() {
        let x = ax.pos(t);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"##,
            h - 35.0,
            h - 20.0,
            esc(&human_ns(t))
        );
    }
    for (i, r) in with_data.iter().enumerate() {
        let s = &r.sorted;
        let y = top + row_h * i as f64 + row_h / 2.0;
        let q1 = pct(s, 25.0).unwrap_or(0);
        let q2 = pct(s, 50.0).unwrap_or(0);
        let q3 = pct(s, 75.0).unwrap_or(0);
        let iqr = q3.saturating_sub(q1);
        let lo_fence = q1.saturating_sub(iqr.saturating_mul(3) / 2);
        let hi_fence = q3.saturating_add(iqr.saturating_mul(3) / 2);
        let wl = s.iter().copied().find(|&v| v >= lo_fence).unwrap_or(q1);
        let wh = s
            .iter()
            .rev()
            .copied()
            .find(|&v| v <= hi_fence)
            .unwrap_or(q3);
        let c = color(i);
        let tip = format!(
            "{}: n={} min={} p25={} p50={} p75={} p99={} max={}",
            r.name,
            r.group.totals.latency.samples,
            human_ns(s.first().copied().unwrap_or(0)),
            human_ns(q1),
            human_ns(q2),
            human_ns(q3),
            human_ns(pct(s, 99.0).unwrap_or(0)),
            human_ns(s.last().copied().unwrap_or(0))
        );
        let _ = write!(
            out,
            r##"<g class="box" data-tip="{}"><text x="{:.1}" y="{:.1}" text-anchor="end" class="lbl">{}</text><line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#444"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#444"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#444"/><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}" fill-opacity="0.35" stroke="{c}"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#000" stroke-width="2"/>"##,
            esc(&tip),
            left - 8.0,
            y + 4.0,
            esc(&r.name),
            ax.pos(wl),
            ax.pos(wh),
            ax.pos(wl),
            y - 7.0,
            ax.pos(wl),
            y + 7.0,
            ax.pos(wh),
            y - 7.0,
            ax.pos(wh),
            y + 7.0,
            ax.pos(q1),
            y - 11.0,
            (ax.pos(q3) - ax.pos(q1)).max(1.0),
            22.0,
            ax.pos(q2),
            y - 11.0,
            ax.pos(q2),
            y + 11.0,
        );
        let outliers: Vec<i64> = s.iter().copied().filter(|&v| v < wl || v > wh).collect();
        let step = outliers.len().div_ceil(MAX_OUTLIERS).max(1);
        for v in outliers.iter().step_by(step) {
            let _ = write!(
                out,
                r#"<circle cx="{:.1}" cy="{y:.1}" r="2.5" fill="none" stroke="{c}"/>"#,
                ax.pos(*v)
            );
        }
        out.push_str("</g>");
    }
    let scale = if ax.log { "log scale" } else { "linear" };
    end_plot(out, (left + width) / 2.0, h, &format!("latency ({scale})"));
}

fn time_plot(rows: &[Row<'_>], out: &mut String) {
    let pts: Vec<(usize, &Row<'_>)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.group.points.is_empty())
        .collect();
    if pts.is_empty() {
        out.push_str("<p>No complete samples.</p>");
        return;
    }
    let t0 = pts
        .iter()
        .filter_map(|(_, r)| r.group.points.iter().map(|p| p.0).min())
        .min()
        .unwrap_or(0);
    let t1 = pts
        .iter()
        .filter_map(|(_, r)| r.group.points.iter().map(|p| p.0).max())
        .max()
        .unwrap_or(1)
        .max(t0.saturating_add(1));
    let lmin = pts
        .iter()
        .filter_map(|(_, r)| r.sorted.first())
        .min()
        .copied()
        .unwrap_or(1);
    let lmax = pts
        .iter()
        .filter_map(|(_, r)| r.sorted.last())
        .max()
        .copied()
        .unwrap_or(2);
    let (w, h, l, b) = (1100.0, 420.0, 90.0, 40.0);
    let ya = Axis::new(lmin, lmax, h - b, 15.0);
    let span = (t1 - t0) as f64;
    let xpos = |t: i64| l + ((t - t0) as f64 / span) * (w - l - 20.0);
    let _ = write!(
        out,
        r#"<svg class="plot" id="timeplot" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="latency over time">"#
    );
    for t in ya.ticks() {
        let y = ya.pos(t);
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"##,
            w - 20.0,
            l - 6.0,
            y + 4.0,
            esc(&human_ns(t))
        );
    }
    for k in 0..=5 {
        let t = t0 + ((t1 - t0) / 5) * k;
        let x = xpos(t);
        let _ = write!(
            out,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tick">+{:.2} s</text>"##,
            h - b + 18.0,
            (t - t0) as f64 / 1e9
        );
    }
    for (i, r) in &pts {
        let mut p = r.group.points.clone();
        p.sort_unstable();
        let step = p.len().div_ceil(MAX_POINTS).max(1);
        let c = color(*i);
        let _ = write!(
            out,
            r#"<g class="series" data-series="{i}" fill="{c}"><title>{}</title>"#,
            esc(&r.name)
        );
        for (t, v) in p.iter().step_by(step) {
            let _ = write!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="1.8"/>"#,
                xpos(*t),
                ya.pos(*v)
            );
        }
        out.push_str("</g>");
    }
    let scale = if ya.log { "log scale" } else { "linear" };
    let since = esc(&crate::units::timestamp(t0));
    let caption = format!("sender capture time (s since {since}) — latency {scale}");
    end_plot(out, (l + w) / 2.0, h, &caption);
    out.push_str(r#"<div class="legend">"#);
    for (i, r) in &pts {
        let _ = write!(
            out,
            r#"<label><input type="checkbox" checked data-series="{i}"> <span class="sw" style="background:{}"></span>{}</label> "#,
            color(*i),
            esc(&r.name)
        );
    }
    out.push_str("</div>");
}

/// Bins for the report's histogram: every negative value in one bin first, as the text
/// histogram has it (`negative_bin`), then 20 linear bins when the rest span less than
/// a decade, else 10 logarithmic bins per decade.
fn fine_bins(sorted: &[i64]) -> Vec<(i64, i64, u64)> {
    let (negative, sorted) = negative_bin(sorted);
    let mut bins: Vec<(i64, i64, u64)> = negative.into_iter().collect();
    bins.extend(non_negative_bins(sorted));
    bins
}

fn non_negative_bins(sorted: &[i64]) -> Vec<(i64, i64, u64)> {
    let (Some(&lo), Some(&hi)) = (sorted.first(), sorted.last()) else {
        return Vec::new();
    };
    let mut edges: Vec<i64> = Vec::new();
    if lo > 0 && hi / lo.max(1) >= 10 {
        let mut k = ((lo as f64).log10() * 10.0).floor() as i32;
        loop {
            let e = 10f64.powf(f64::from(k) / 10.0).round() as i64;
            if edges.last().is_none_or(|&l| e > l) {
                edges.push(e);
            }
            if e > hi || edges.len() > 400 {
                break;
            }
            k += 1;
        }
    } else {
        let step = ((hi - lo) / 20).max(1);
        let mut e = lo;
        while e <= hi && edges.len() < 22 {
            edges.push(e);
            e = e.saturating_add(step);
        }
        edges.push(e);
    }
    edges
        .windows(2)
        .filter_map(|w| match w {
            [a, b] => {
                let from = sorted.partition_point(|&v| v < *a);
                let to = sorted.partition_point(|&v| v < *b);
                Some((*a, *b, (to - from) as u64))
            }
            _ => None,
        })
        .collect()
}

fn histograms(rows: &[Row<'_>], out: &mut String) {
    let shown = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.sorted.is_empty())
        .max_by_key(|(i, r)| (r.sorted.len(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    out.push_str(r#"<select id="histsel" aria-label="topic">"#);
    for (i, r) in rows
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.sorted.is_empty())
    {
        let sel = if Some(i) == shown { " selected" } else { "" };
        let _ = write!(out, r#"<option value="{i}"{sel}>{}</option>"#, esc(&r.name));
    }
    out.push_str("</select>");
    for (i, r) in rows
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.sorted.is_empty())
    {
        let bins = fine_bins(&r.sorted);
        let (w, h, l, b) = (1100.0, 300.0, 70.0, 70.0);
        let peak = bins.iter().map(|x| x.2).max().unwrap_or(1).max(1) as f64;
        let bw = (w - l - 20.0) / bins.len().max(1) as f64;
        let label_every = bins.len().div_ceil(12).max(1);
        let _ = write!(
            out,
            r#"<svg class="plot hist" data-hist="{i}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="latency histogram"{}>"#,
            if Some(i) == shown {
                ""
            } else {
                r#" style="display:none""#
            }
        );
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#888"/><text x="{:.1}" y="16" text-anchor="end" class="tick">{} samples, peak {}</text>"##,
            h - b,
            w - 20.0,
            h - b,
            w - 20.0,
            r.sorted.len(),
            peak as u64
        );
        for (j, (lo, hi, n)) in bins.iter().enumerate() {
            let x = l + bw * j as f64;
            let bh = (*n as f64 / peak) * (h - b - 30.0);
            let _ = write!(
                out,
                r#"<g class="bar" data-tip="{} .. {}: {n}"><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/></g>"#,
                esc(&human_ns(*lo)),
                esc(&human_ns(*hi)),
                x + 0.5,
                h - b - bh,
                (bw - 1.0).max(0.5),
                bh,
                color(i),
            );
            if j % label_every == 0 {
                let _ = write!(
                    out,
                    r#"<text x="{x:.1}" y="{:.1}" text-anchor="end" class="tick" transform="rotate(-35 {x:.1} {:.1})">{}</text>"#,
                    h - b + 14.0,
                    h - b + 14.0,
                    esc(&human_ns(*lo))
                );
            }
        }
        end_plot(out, (l + w) / 2.0, h, "latency (bin start)");
    }
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
td:nth-child(1),td:nth-child(2),th{text-align:left}.plot{display:block;max-width:100%;height:auto;margin:8px 0}\
.tick{font-size:11px;fill:#555}.lbl{font-size:12px}.axis{font-size:12px;fill:#333}\
.legend label{margin-right:12px;font-size:12px}.sw{display:inline-block;width:10px;height:10px;margin-right:4px}\
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 6px;font-size:12px;border-radius:3px;display:none}\
.note{color:#666;font-size:12px}";

const JS: &str = r#"(function(){
  var tip=document.getElementById('tip');
  document.querySelectorAll('[data-tip]').forEach(function(el){
    el.addEventListener('mousemove',function(e){tip.textContent=el.getAttribute('data-tip');tip.style.display='block';tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});
    el.addEventListener('mouseleave',function(){tip.style.display='none';});
  });
  document.querySelectorAll('.legend input').forEach(function(cb){
    cb.addEventListener('change',function(){
      var g=document.querySelector('#timeplot g[data-series="'+cb.getAttribute('data-series')+'"]');
      if(g){g.style.display=cb.checked?'':'none';}
    });
  });
  var sel=document.getElementById('histsel');
  if(sel){sel.addEventListener('change',function(){
    document.querySelectorAll('svg.hist').forEach(function(s){s.style.display=(s.getAttribute('data-hist')===sel.value)?'':'none';});
  });}
  document.body.setAttribute('data-ready','1');
})();"#;

/// The whole report page.
pub fn report(run: &RunSummary) -> String {
    let rows: Vec<Row<'_>> = run
        .summary
        .groups
        .iter()
        .map(|(k, g)| Row {
            key: k,
            group: g,
            sorted: g.sorted(),
            name: format!("{} {}", run.direction(k.sender, k.receiver), k.topic),
        })
        .collect();
    let level = match run.level {
        Some(Level::Submessage) => "DDS submessage (per DATA_FRAG)",
        _ => "DDS layer (per sample)",
    };
    let mut out = String::with_capacity(1 << 20);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<title>ddshark latency report</title><style>");
    out.push_str(CSS);
    out.push_str("</style></head><body><h1>ddshark latency report</h1>");
    let _ = write!(
        out,
        "<p>{} latency: first IP fragment at the sender &rarr; last IP fragment at the receiver (capture times).</p><ul>",
        esc(level)
    );
    for (i, c) in run.captures.iter().enumerate() {
        let _ = write!(
            out,
            "<li>capture {} = <code>{}</code></li>",
            label(i),
            esc(c)
        );
    }
    out.push_str("</ul><h2>Clock offset</h2><pre>");
    let mut offsets = String::new();
    super::latency::offsets_text(run, &mut offsets);
    if offsets.is_empty() {
        offsets.push_str("no pair of captures saw samples in common\n");
    }
    out.push_str(&esc(&offsets));
    out.push_str("</pre><h2>Per topic</h2><table><tr><th>direction</th><th>topic</th><th>count</th><th>lost</th><th>incomplete</th><th>repaired</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>max</th>");
    // Latencies an estimate corrected carry its bound.
    let corrected = run
        .corrections
        .iter()
        .any(|c| matches!(c, crate::latency::Correction::Estimated(_)));
    if corrected {
        out.push_str("<th>± (clock offset)</th>");
    }
    out.push_str("</tr>");
    for r in &rows {
        let t = run.topic_stats(r.key, r.group);
        let f = |v: Option<i64>| v.map(human_ns).unwrap_or_else(|| "-".into());
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>",
            esc(&t.direction),
            esc(&t.topic),
            t.count,
            t.lost,
            t.incomplete,
            t.repaired,
            esc(&f(t.min_ns)),
            esc(&f(t.p50_ns)),
            esc(&f(t.p90_ns)),
            esc(&f(t.p99_ns)),
            esc(&f(t.max_ns)),
            if corrected {
                format!(
                    "<td>{}</td>",
                    esc(&t
                        .latency_uncertainty_ns
                        .map_or_else(|| "-".to_string(), |u| format!("±{}", human_ns(u))))
                )
            } else {
                String::new()
            },
        );
    }
    out.push_str("</table><p class=\"note\">Whiskers at 1.5 IQR; circles are outliers. Percentiles over at most 1,000,000 samples per topic.</p>");
    out.push_str("<h2>Latency per topic (box plot)</h2>");
    box_plot(&rows, &mut out);
    out.push_str("<h2>Latency over time</h2>");
    time_plot(&rows, &mut out);
    out.push_str("<h2>Histogram</h2>");
    histograms(&rows, &mut out);
    let j = &run.join;
    let _ = write!(
        out,
        "<p class=\"note\">{} observations, {} keys; join peak {} samples; evicted early {}; receiver-only {}.</p>",
        j.observations, j.keys, j.pending_peak, j.evicted_capacity, j.receiver_only
    );
    out.push_str("<div id=\"tip\"></div><script>");
    out.push_str(JS);
    out.push_str("</script></body></html>\n");
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn negative_latencies_have_one_bin_as_in_the_text_histogram() {
        let v = [-10_285_000, -20_000, 1_500_000, 1_600_000, 3_000_000];
        let bins = fine_bins(&v);
        assert_eq!(bins[0], (-10_285_000, 0, 2));
        // The rest as before: linear bins from the smallest non-negative value.
        assert_eq!(bins[1].0, 1_500_000);
        assert!(bins[1..].iter().all(|b| b.0 >= 0));
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 5);
    }
}

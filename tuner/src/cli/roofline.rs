//! Roofline plots as SVG, for `tilekit bench --svg`.
//!
//! Drawn with plotters' SVG backend, built without default features (`svg_backend`,
//! `line_series`, `point_series` only). That is enough for labelled axes: without the
//! `ttf` / `ab_glyph` features plotters lays text out with a built-in estimate of glyph
//! widths (no font files, no system libraries), and the SVG backend writes every label as
//! an SVG `<text>` element (escaped), which the viewer renders with its own fonts. So no
//! hand-written SVG is needed; the only cost is that label extents are estimates.
//!
//! The plot: arithmetic intensity (FLOP per byte, log scale) against achieved TFLOP/s (log
//! scale); the memory roof is the measured copy bandwidth (`GB/s x FLOP/byte`); one point
//! per configuration and peer, each in its own colour with a legend entry. No compute roof
//! is drawn: the bench measures no FLOP ceiling, and the plot says so.

use plotters::prelude::*;

/// One measured point of a roofline plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Legend text (a configuration or a peer's name, with its source).
    pub label: String,
    /// FLOP per byte moved.
    pub intensity: f64,
    /// Achieved TFLOP/s.
    pub tflops: f64,
}

/// A roofline plot: the memory roof from a measured copy bandwidth, and points.
#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    /// Caption (the problem and the GPU).
    pub title: String,
    /// Measured copy bandwidth in GB/s (bytes read + written per second, / 1e9).
    pub copy_gbps: f64,
    /// The points; those with a non-positive or non-finite coordinate are left out (a log
    /// axis cannot show them).
    pub points: Vec<Point>,
}

/// Plot size in pixels.
const SIZE: (u32, u32) = (900, 600);

/// Distinct, readable colours for the points (the roof is black).
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The memory roof at `intensity` FLOP/byte for `gbps`, in TFLOP/s.
pub fn memory_roof_tflops(gbps: f64, intensity: f64) -> f64 {
    gbps * intensity / 1e3
}

/// Powers of ten enclosing `[lo, hi]` with a decade of margin on each side.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    (
        10f64.powf(lo.log10().floor() - 1.0),
        10f64.powf(hi.log10().ceil() + 1.0),
    )
}

impl Roofline {
    /// The points a log-log plot can show.
    fn plottable(&self) -> impl Iterator<Item = &Point> {
        self.points.iter().filter(|p| {
            p.intensity.is_finite() && p.intensity > 0.0 && p.tflops.is_finite() && p.tflops > 0.0
        })
    }

    /// The plot as an SVG document.
    pub fn to_svg(&self) -> anyhow::Result<String> {
        if !(self.copy_gbps.is_finite() && self.copy_gbps > 0.0) {
            anyhow::bail!(
                "roofline: the copy bandwidth {} GB/s is not positive",
                self.copy_gbps
            );
        }
        let pts: Vec<&Point> = self.plottable().collect();
        let (mut xlo, mut xhi) = (f64::INFINITY, 0f64);
        for p in &pts {
            xlo = xlo.min(p.intensity);
            xhi = xhi.max(p.intensity);
        }
        if pts.is_empty() {
            (xlo, xhi) = (1.0, 1.0);
        }
        let (xlo, xhi) = decades(xlo, xhi);
        let (mut ylo, mut yhi) = (
            memory_roof_tflops(self.copy_gbps, xlo),
            memory_roof_tflops(self.copy_gbps, xhi),
        );
        for p in &pts {
            ylo = ylo.min(p.tflops);
            yhi = yhi.max(p.tflops);
        }
        let (ylo, yhi) = (
            10f64.powf(ylo.log10().floor()),
            10f64.powf(yhi.log10().ceil()),
        );

        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(&self.title, ("sans-serif", 18))
                .margin(16)
                .x_label_area_size(48)
                .y_label_area_size(72)
                .build_cartesian_2d((xlo..xhi).log_scale(), (ylo..yhi).log_scale())
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("arithmetic intensity (FLOP/byte)")
                .y_desc("achieved TFLOP/s")
                .x_label_formatter(&|v| format_tick(*v))
                .y_label_formatter(&|v| format_tick(*v))
                .draw()
                .map_err(plot_err)?;
            // The roof is a straight line on log-log axes: two points suffice, a few more
            // keep it visible at every zoom.
            let roof: Vec<(f64, f64)> = (0..=8)
                .map(|i| {
                    let x = xlo * (xhi / xlo).powf(f64::from(i) / 8.0);
                    (x, memory_roof_tflops(self.copy_gbps, x))
                })
                .collect();
            chart
                .draw_series(LineSeries::new(roof, BLACK.stroke_width(2)))
                .map_err(plot_err)?
                .label(format!(
                    "memory roof: measured copy {:.0} GB/s (no compute roof: FLOP ceiling not measured)",
                    self.copy_gbps
                ))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
            for (i, p) in pts.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (p.intensity, p.tflops),
                        5,
                        colour.filled(),
                    )))
                    .map_err(plot_err)?
                    .label(format!("{} ({:.3} TFLOP/s)", p.label, p.tflops))
                    .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(plot_err)?;
            root.present().map_err(plot_err)?;
        }
        Ok(svg)
    }
}

/// A tick label: plain for moderate magnitudes, scientific otherwise.
fn format_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || (1e-3..1e4).contains(&a) {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

fn plot_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> anyhow::Error {
    anyhow::anyhow!("roofline plot: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that `svg` is well-formed XML as far as tags go: every element opened is
    /// closed in order, attributes' quotes balance, and there is one root `<svg>`.
    fn well_formed(svg: &str) -> Result<(), String> {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = svg;
        let mut roots = 0;
        while let Some(start) = rest.find('<') {
            let text = &rest[..start];
            if stack.is_empty() && !text.trim().is_empty() {
                return Err(format!("text outside the root: {text:?}"));
            }
            if text.contains('<') || text.contains('>') {
                return Err(format!("unescaped text: {text:?}"));
            }
            let end = rest[start..].find('>').ok_or("unterminated tag")? + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if tag.starts_with('?') || tag.starts_with('!') {
                continue;
            }
            if !tag.matches('"').count().is_multiple_of(2) {
                return Err(format!("unbalanced quotes in <{tag}>"));
            }
            if let Some(name) = tag.strip_prefix('/') {
                match stack.pop() {
                    Some(open) if open == name.trim() => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
                continue;
            }
            let name: String = tag
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '/')
                .collect();
            if stack.is_empty() {
                roots += 1;
                if name != "svg" {
                    return Err(format!("root element <{name}>"));
                }
            }
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        if !stack.is_empty() {
            return Err(format!("unclosed: {stack:?}"));
        }
        if !rest.trim().is_empty() {
            return Err(format!("trailing text: {rest:?}"));
        }
        if roots != 1 {
            return Err(format!("{roots} root elements"));
        }
        Ok(())
    }

    fn plot() -> Roofline {
        Roofline {
            title: "softmax M=32768 N=4096 T=bf16 on NVIDIA H100".into(),
            copy_gbps: 3000.0,
            points: vec![
                Point {
                    label: "BLOCK=4096,WARPS=8 tuned (local)".into(),
                    intensity: 1.25,
                    tflops: 3.4,
                },
                Point {
                    label: "BLOCK=4096,WARPS=4 default".into(),
                    intensity: 1.25,
                    tflops: 2.9,
                },
                Point {
                    label: "torch.compile <peer> & co".into(),
                    intensity: 1.25,
                    tflops: 3.1,
                },
            ],
        }
    }

    #[test]
    fn svg_is_well_formed_with_points_roof_and_labels() {
        let svg = plot().to_svg().unwrap();
        well_formed(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        assert!(svg.contains("<svg"), "{svg}");
        // One filled circle per point (and one per legend marker).
        assert!(svg.matches("<circle").count() >= 3 * 2, "{svg}");
        // The roof, a polyline, and its legend.
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(
            svg.contains("memory roof: measured copy 3000 GB/s"),
            "{svg}"
        );
        // Axis titles and point labels are text, escaped.
        assert!(svg.contains("arithmetic intensity (FLOP/byte)"), "{svg}");
        assert!(svg.contains("achieved TFLOP/s"), "{svg}");
        assert!(svg.contains("BLOCK=4096,WARPS=8 tuned (local)"), "{svg}");
        assert!(svg.contains("torch.compile &lt;peer&gt; &amp; co"), "{svg}");
        assert!(!svg.contains("<peer>"), "{svg}");
    }

    #[test]
    fn points_that_a_log_axis_cannot_show_are_left_out() {
        let mut r = plot();
        r.points.push(Point {
            label: "zero".into(),
            intensity: 0.0,
            tflops: 1.0,
        });
        r.points.push(Point {
            label: "nan".into(),
            intensity: 1.0,
            tflops: f64::NAN,
        });
        let svg = r.to_svg().unwrap();
        well_formed(&svg).unwrap();
        assert!(!svg.contains(">zero"), "{svg}");
        // Without any point, the roof alone.
        r.points.clear();
        let svg = r.to_svg().unwrap();
        well_formed(&svg).unwrap();
        assert!(svg.contains("<polyline"), "{svg}");
        // No bandwidth: no roof to draw.
        r.copy_gbps = 0.0;
        assert!(r.to_svg().is_err());
    }

    #[test]
    fn the_checker_rejects_broken_svg() {
        assert!(well_formed("<svg><g></svg>").is_err());
        assert!(well_formed("<svg><text>a<b</text></svg>").is_err());
        assert!(well_formed("<svg/><svg/>").is_err());
        assert!(well_formed("<svg><circle r=\"1\"/></svg>").is_ok());
    }

    #[test]
    fn roof_and_ticks() {
        assert_eq!(memory_roof_tflops(3000.0, 2.0), 6.0);
        assert_eq!(format_tick(0.5), "0.5");
        assert_eq!(format_tick(100.0), "100");
        assert_eq!(format_tick(1e-5), "1e-5");
    }
}

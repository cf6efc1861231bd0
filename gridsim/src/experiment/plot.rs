//! SVG line charts of a summary metric against the inter-arrival time, one line per algorithm
//! (plotters' SVG backend: text is written as SVG text, no font files are needed).

use super::{Figure, Series, Summary};
use anyhow::{Result, anyhow};
use plotters::prelude::*;

const COLOURS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
];

/// The chart of `fig` as an SVG document.
pub fn line_chart(summary: &Summary, fig: &Figure) -> Result<String> {
    let tas = summary.tas();
    let x_min = tas.first().copied().unwrap_or(0.0);
    let x_max = tas.iter().copied().fold(1.0f64, f64::max);
    let lines: Vec<(String, String, String)> = match &fig.series {
        Series::Algorithms(v) => summary
            .algorithms()
            .into_iter()
            .map(|a| (a.clone(), a, v.clone()))
            .collect(),
        Series::Variants(a, vs) => vs
            .iter()
            .map(|v| (v.clone(), a.clone(), v.clone()))
            .collect(),
    };
    let series: Vec<(String, Vec<(f64, f64)>)> = lines
        .into_iter()
        .map(|(name, a, v)| {
            let mut pts: Vec<(f64, f64)> = tas
                .iter()
                .filter_map(|&t| summary.get(&a, &v, t, fig.metric).map(|y| (t, y)))
                .collect();
            if pts.len() == 1 && tas.len() > 1 {
                pts = vec![(x_min, pts[0].1), (x_max, pts[0].1)];
            }
            (name, pts)
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.1;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (720, 450)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow!("plot {}: {e}", fig.file);
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(fig.title.as_str(), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_max * 1.05, 0f64..y_max)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(fig.x_label)
            .y_desc(fig.y_label)
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour));
            chart
                .draw_series(
                    pts.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, colour.filled())),
                )
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(out)
}

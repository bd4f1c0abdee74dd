//! What every chart shares: its frame and its legend.

use plotters::prelude::*;

/// The series' legend, in the corner the curves leave free.
pub fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    corner: SeriesLabelPosition,
) -> std::result::Result<(), plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(corner)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

/// Every chart's frame: its caption, margins and room for the axis labels,
/// on a drawing area already filled white.
pub fn chart_on<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(80);
    builder
}

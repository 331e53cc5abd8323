#include "dumps/schedule_plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dumps/svg_text.h"

namespace irc {
namespace {

constexpr double kWidth = 1200, kLeft = 170, kRight = 30, kTop = 50, kRow = 30, kGap = 16, kBottom = 90;

// A micro-batch's hue: consecutive micro-batches far apart on the colour wheel (the golden angle).
double hue(int64_t microBatch) { return std::fmod(static_cast<double>(microBatch) * 137.508, 360.0); }

// The axis' step: 1, 2 or 5 times a power of ten, about five ticks over the span.
double tickStep(double span) {
  const double raw = span / 5, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

std::string secondsText(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return fmt::format("{:.4g} us", s * 1e6);
  if (s < 1) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} s", s);
}

}  // namespace

std::string schedulePlotSvg(const StepTimeline& t, const std::string& title) {
  const double rows = static_cast<double>(t.stages);
  const double height = kTop + rows * (kRow + kGap) + kBottom;
  const double plotW = kWidth - kLeft - kRight, span = t.span > 0 ? t.span : 1;
  auto x = [&](double seconds) { return kLeft + plotW * seconds / span; };
  auto rowTop = [&](int32_t stage) { return kTop + static_cast<double>(stage) * (kRow + kGap); };
  std::string svg = svgDocumentStart(kWidth, height, kLeft, 24, title);
  for (int32_t s = 0; s < t.stages; ++s)
    svg +=
        fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">stage {}</text>\n", kLeft - 8, rowTop(s) + kRow / 2 + 4, s);
  // Time: ticks below the rows.
  const double axisY = kTop + rows * (kRow + kGap) + 4, step = tickStep(span);
  svg +=
      fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"black\"/>\n", kLeft, axisY, kLeft + plotW);
  for (double tick = 0; tick <= span * (1 + 1e-9); tick += step)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        x(tick), axisY, axisY + 5, axisY + 18, secondsText(tick));
  for (const TimelineSlice& s : t.slices) {
    const bool sync = s.stream == TimelineStream::GradientSync;
    if (s.stream != TimelineStream::Compute && !sync) continue;
    if (s.stream == TimelineStream::Compute && !s.slot && s.microBatch >= 0) continue;  // the ops inside a pass
    const double x0 = x(s.start), w = std::max(0.5, x(s.start + s.seconds) - x0);
    if (s.slot) {
      const bool forward = s.phase == TimelinePhase::Forward, weight = s.name.starts_with("weight gradient");
      svg += fmt::format(
          "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"hsl({:.0f},70%,{}%)\" "
          "stroke=\"white\" stroke-width=\"0.5\"><title>{}</title></rect>\n",
          forward  ? "forward"
          : weight ? "weight"
                   : "backward",
          x0, rowTop(s.stage), w, kRow, hue(s.microBatch),
          forward  ? 72
          : weight ? 55
                   : 38,
          svgEscaped(fmt::format("stage {}: {}, {}", s.stage, s.name, secondsText(s.seconds))));
      if (w >= 14)
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{}\">{}</text>\n",
                           x0 + w / 2, rowTop(s.stage) + kRow / 2 + 4, forward ? "black" : "white", s.microBatch);
      continue;
    }
    // Once-a-step work: the update and the casts in the row, grey; the reduction under it.
    const double y = sync ? rowTop(s.stage) + kRow + 2 : rowTop(s.stage);
    svg += fmt::format(
        "<rect class=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>\n",
        sync ? "sync" : "step", x0, y, w, sync ? 6 : kRow, sync ? "#8c564b" : "#7f7f7f",
        svgEscaped(fmt::format("stage {}: {}, {}", s.stage, s.name, secondsText(s.seconds))));
  }
  const double legendY = axisY + 40;
  svg += fmt::format(
      "<rect x=\"{0}\" y=\"{1:.1f}\" width=\"14\" height=\"12\" fill=\"hsl(0,70%,72%)\"/>"
      "<text x=\"{2}\" y=\"{3:.1f}\">forward (numbered by micro-batch)</text>\n"
      "<rect x=\"{4}\" y=\"{1:.1f}\" width=\"14\" height=\"12\" fill=\"hsl(0,70%,38%)\"/>"
      "<text x=\"{5}\" y=\"{3:.1f}\">backward</text>\n"
      "<rect x=\"{6}\" y=\"{1:.1f}\" width=\"14\" height=\"12\" fill=\"#7f7f7f\"/>"
      "<text x=\"{7}\" y=\"{3:.1f}\">update, weight casts</text>\n"
      "<rect x=\"{8}\" y=\"{9:.1f}\" width=\"14\" height=\"6\" fill=\"#8c564b\"/>"
      "<text x=\"{10}\" y=\"{3:.1f}\">gradient reduction (under the row)</text>\n"
      "<text x=\"{0}\" y=\"{11:.1f}\">blank: the pipeline's bubble, and a faster stage waiting on the slowest; zero-bubble's "
      "weight gradients mid-tone after their input gradients</text>\n",
      kLeft, legendY, kLeft + 20, legendY + 11, kLeft + 250, kLeft + 270, kLeft + 350, kLeft + 370, kLeft + 520, legendY + 3,
      kLeft + 540, legendY + 31);
  svg += "</svg>\n";
  return svg;
}

}  // namespace irc

#include "dumps/memory_plot.h"

#include <algorithm>

#include <fmt/format.h>

#include "dumps/svg_text.h"
#include "ir/byte_size.h"

namespace irc {
namespace {

constexpr double kWidth = 960, kHeight = 400, kLeft = 90, kRight = 170, kTop = 40, kBottom = 50;

struct Series {
  std::vector<double> live;
  std::string label, color, peakText;
  double labelShift = 0;  // px down, where two lines end at one point
};

// Forward, the loss, the backward (the ops in reverse), the update.
std::vector<double> stepSeries(const std::vector<double>& forward, double loss, const std::vector<double>& backward,
                               double update) {
  std::vector<double> step = forward;
  step.push_back(loss);
  step.insert(step.end(), backward.rbegin(), backward.rend());
  step.push_back(update);
  return step;
}

}  // namespace

std::string memoryPlotSvg(const MemoryEstimate& m, const std::string& title) {
  std::vector<Series> series;
  series.push_back({m.inference.liveAtOp, "inference", "#1f77b4",
                    fmt::format("peak {} at {}", formatBytes(m.inference.peakBytes), m.inference.peakAt)});
  if (m.training) {
    const TrainingMemory& t = *m.training;
    auto at = [](const std::string& op) { return op.empty() ? std::string() : " at " + op; };
    series.push_back(
        {stepSeries(t.forwardLiveAtOp, t.lossLiveBytes, t.backwardLiveAtOp, t.stepLiveBytes),
         fmt::format("training step ({})", optimizerName(t.optimizer)), "#d62728",
         fmt::format("peak {} in the {}{} (from the second step on)", formatBytes(t.peakBytes), t.peakPhase, at(t.peakAt))});
    series.push_back({stepSeries(t.firstForwardLiveAtOp, t.firstLossLiveBytes, t.firstBackwardLiveAtOp, t.stepLiveBytes),
                      "first step", "#ff9896",
                      fmt::format("first step: {} in the {}{}", formatBytes(t.firstStepPeakBytes), t.firstStepPeakPhase,
                                  at(t.firstStepPeakAt)),
                      16});
  }
  size_t steps = 1;
  double top = 1;
  for (const Series& s : series) {
    steps = std::max(steps, s.live.size());
    for (double v : s.live) top = std::max(top, v);
  }
  const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kTop - kBottom;
  auto x = [&](size_t i) { return kLeft + (steps > 1 ? plotW * static_cast<double>(i) / static_cast<double>(steps - 1) : 0); };
  auto y = [&](double bytes) { return kTop + plotH * (1 - bytes / top); };

  std::string svg = svgDocumentStart(kWidth, kHeight, kLeft, 22, title);
  // Axes: bytes on the left (0, half, the top), the op sequence below.
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", kLeft, kTop, kTop + plotH);
  svg +=
      fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", kLeft, kTop + plotH, kLeft + plotW);
  for (double f : {0.0, 0.5, 1.0})
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, y(top * f) + 4,
                       svgEscaped(formatBytes(top * f)));
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">op sequence (execution order; a training step: forward, loss, "
      "backward in reverse, update)</text>\n",
      kLeft + plotW / 2, kHeight - 14);
  if (m.training) {
    // What a steady step starts with: parameters, optimizer states, resident gradients.
    double r = y(m.training->residentBytes);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#7f7f7f\" stroke-dasharray=\"4 3\"/>\n"
        "<text x=\"{3}\" y=\"{4:.1f}\" fill=\"#7f7f7f\">resident {5}</text>\n",
        kLeft, r, kLeft + plotW, kLeft + 6, r - 4, svgEscaped(formatBytes(m.training->residentBytes)));
  }
  for (const Series& s : series) {
    if (s.live.empty()) continue;
    std::string points;
    size_t peakAt = 0;
    for (size_t i = 0; i < s.live.size(); ++i) {
      points += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", x(i), y(s.live[i]));
      if (s.live[i] > s.live[peakAt]) peakAt = i;
    }
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", s.color, points);
    // The line's name at its end, its peak marked where it is.
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n", x(s.live.size() - 1) + 6,
                       y(s.live.back()) + 4 + s.labelShift, s.color, svgEscaped(s.label));
    svg += fmt::format("<circle class=\"peak\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", x(peakAt), y(s.live[peakAt]),
                       s.color);
    double labelX = std::min(x(peakAt) + 8, kLeft + plotW - 200);
    svg += fmt::format("<text class=\"peak\" x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n", labelX,
                       std::max(kTop + 12, y(s.live[peakAt]) - 8) + s.labelShift, s.color, svgEscaped(s.peakText));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace irc

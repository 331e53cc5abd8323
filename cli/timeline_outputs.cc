#include "cli/timeline_outputs.h"

#include <fmt/format.h>

#include "dumps/schedule_plot.h"
#include "dumps/trace_json.h"
#include "cost/step_timeline.h"

namespace irc::cli {

std::optional<std::string> timelineNeeds(const ParallelSettings& settings, const std::string& flag) {
  if (flag.empty() || settings.cluster) return std::nullopt;
  return fmt::format(
      "{} lays out the step the cluster model estimates: the model has no cluster; add `cluster: {{preset: "
      "dgx-h100}}` or pass --cluster PRESET",
      flag);
}

TimelineOutputs::TimelineOutputs(const Graph& graph, const ParallelSettings& settings, const std::string& trace,
                                 const std::string& plot, bool allRanks)
    : plotPath_(plot) {
  std::optional<StepTimeline> timeline = stepTimeline(graph, settings);
  if (!timeline) return;
  if (!trace.empty())
    trace_.emplace(trace, [&](std::ostream& out) { writeChromeTrace(out, *timeline, graph, settings, allRanks); });
  if (!plot.empty()) {
    std::string title =
        fmt::format("{}: the estimated step's {} schedule ({} stages, {} micro-batches{}), {:.4g} s", graph.name,
                    pipelineScheduleName(timeline->estimate.schedule), timeline->stages, timeline->microBatches,
                    timeline->chunks > 1 ? fmt::format(", {} chunks a stage", timeline->chunks) : "", timeline->span);
    plot_ = schedulePlotSvg(*timeline, title);
  }
}

std::optional<std::string> TimelineOutputs::write() {
  if (trace_)
    if (auto err = trace_->commit()) return err;
  if (!plotPath_.empty()) return writeFileAtomically(plotPath_, plot_);
  return std::nullopt;
}

}  // namespace irc::cli

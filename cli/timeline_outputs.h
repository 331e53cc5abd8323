#pragma once
// `--trace FILE` and `--schedule-plot FILE.svg` (irc and irc memory): the estimated step as a
// Chrome trace and as the pipeline's picture, made from the compiled global graph and put in
// place only when the whole command succeeds.
#include <optional>
#include <string>

#include "dumps/dump_writer.h"
#include "ir/graph.h"

namespace irc::cli {

// Why the flag cannot be honoured (no cluster to time the step on); nullopt when it can or when
// `flag` is empty.
std::optional<std::string> timelineNeeds(const ParallelSettings& settings, const std::string& flag);

class TimelineOutputs {
 public:
  // Staged: the trace in a file beside `trace`, the picture in memory.
  TimelineOutputs(const Graph& graph, const ParallelSettings& settings, const std::string& trace, const std::string& plot,
                  bool allRanks);
  TimelineOutputs(const TimelineOutputs&) = delete;
  TimelineOutputs& operator=(const TimelineOutputs&) = delete;
  // Puts them in place; the error, if one could not be written.
  std::optional<std::string> write();

 private:
  std::optional<StagedFile> trace_;
  std::string plotPath_, plot_;
};

}  // namespace irc::cli

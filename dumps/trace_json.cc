#include "dumps/trace_json.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dumps/json_stream.h"

namespace irc {
namespace {

constexpr TimelineStream kStreams[] = {TimelineStream::Compute, TimelineStream::Collectives, TimelineStream::PipelineTransfers,
                                       TimelineStream::GradientSync};

// Seconds as the format's microseconds, to the nanosecond: an event's end is rounded as its
// start is, so that an op ends inside its pass.
double micros(double seconds) { return std::round(seconds * 1e9) / 1e3; }

// A metadata event ("ph": "M") of a process (tid < 0) or a thread, its one argument `key`.
template <typename Value>
void metaEvent(JsonStream& j, const std::string& what, int64_t pid, int64_t tid, PlainKey key, const Value& value) {
  j.beginObject();
  j.member("name"_key, what);
  j.member("ph"_key, std::string("M"));
  j.member("pid"_key, pid);
  if (tid >= 0) j.member("tid"_key, tid);
  j.key("args"_key);
  j.beginObject();
  j.member(key, value);
  j.endObject();
  j.endObject();
}

// A process's or a thread's name and its place in the viewer's list.
void metadata(JsonStream& j, const char* what, int64_t pid, int64_t tid, const std::string& name, int64_t sortIndex) {
  metaEvent(j, what, pid, tid, "name"_key, name);
  metaEvent(j, tid >= 0 ? "thread_sort_index" : "process_sort_index", pid, tid, "sort_index"_key, sortIndex);
}

void event(JsonStream& j, const TimelineSlice& s, int64_t pid, const Graph& graph) {
  const double start = micros(s.start), end = micros(s.start + s.seconds);
  j.beginObject();
  j.member("name"_key, s.name);
  j.member("cat"_key, std::string(timelinePhaseName(s.phase)));
  j.member("ph"_key, std::string("X"));
  j.member("pid"_key, pid);
  j.member("tid"_key, static_cast<int64_t>(s.stream));
  j.member("ts"_key, start);
  j.member("dur"_key, end - start);
  j.key("args"_key);
  j.beginObject();
  if (s.op != kNoId) {
    const Op& op = graph.op(s.op);
    j.member("op"_key, op.name);
    j.member("type"_key, op.type);
    if (!graph.moduleOf(op).empty()) j.member("module"_key, graph.moduleOf(op));
  }
  if (s.microBatch >= 0) j.member("micro_batch"_key, s.microBatch);
  if (s.microBatch >= 0) j.member("chunk"_key, static_cast<int64_t>(s.chunk));
  j.member("phase"_key, std::string(timelinePhaseName(s.phase)));
  if (s.flops > 0) j.member("flops"_key, s.flops);
  j.member("seconds"_key, s.seconds);
  j.endObject();
  j.endObject();
}

void counter(JsonStream& j, const MemorySample& m, int64_t pid) {
  j.beginObject();
  j.member("name"_key, std::string("allocated bytes"));
  j.member("ph"_key, std::string("C"));
  j.member("pid"_key, pid);
  j.member("ts"_key, micros(m.time));
  j.key("args"_key);
  j.beginObject();
  j.member("bytes"_key, m.bytes);
  j.endObject();
  j.endObject();
}

struct ByStage {
  template <typename T>
  bool operator()(const T& a, int64_t stage) const {
    return a.stage < stage;
  }
  template <typename T>
  bool operator()(int64_t stage, const T& a) const {
    return stage < a.stage;
  }
};

}  // namespace

void writeChromeTrace(std::ostream& out, const StepTimeline& t, const Graph& graph, const ParallelSettings& settings,
                      bool allRanks) {
  const int64_t stageDevices = graph.stageDevices > 0 ? graph.stageDevices : settings.rankCount();
  JsonStream j(out, -1);
  j.beginObject();
  j.member("displayTimeUnit"_key, std::string("ms"));
  j.key("otherData"_key);
  j.beginObject();
  j.member("model"_key, graph.name);
  j.member("producer"_key, std::string("irc: the estimated step (docs/cluster.md)"));
  j.member("estimated_step_seconds"_key, t.estimate.total);
  j.member("span_seconds"_key, t.span);
  j.member("pipeline_stages"_key, t.stages);
  j.member("micro_batches"_key, t.microBatches);
  j.member("virtual_stages"_key, t.chunks);
  j.member("stage_peak_bytes"_key, nlohmann::ordered_json(t.stagePeakBytes));
  j.endObject();
  j.key("traceEvents"_key);
  j.beginArray();
  for (int64_t s = 0; s < t.stages; ++s) {
    const int64_t firstRank = s * stageDevices, ranks = allRanks ? stageDevices : 1;
    for (int64_t r = firstRank; r < firstRank + ranks; ++r) {
      const int64_t pid = allRanks ? r : s;
      std::string name =
          allRanks ? fmt::format("rank {} (stage {})", r, s)
                   : fmt::format("stage {} (rank {} of ranks {}-{})", s, firstRank, firstRank, firstRank + stageDevices - 1);
      metadata(j, "process_name", pid, -1, name, pid);
      for (TimelineStream stream : kStreams)
        metadata(j, "thread_name", pid, static_cast<int64_t>(stream), timelineStreamName(stream), static_cast<int64_t>(stream));
      // (Both lists are by stage.)
      auto slices = std::equal_range(t.slices.begin(), t.slices.end(), s, ByStage{});
      for (auto it = slices.first; it != slices.second; ++it) event(j, *it, pid, graph);
      auto samples = std::equal_range(t.memory.begin(), t.memory.end(), s, ByStage{});
      for (auto it = samples.first; it != samples.second; ++it) counter(j, *it, pid);
    }
  }
  j.endArray();
  j.endObject();
  out << "\n";
}

}  // namespace irc

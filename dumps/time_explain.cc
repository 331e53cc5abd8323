#include "dumps/time_explain.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "ir/cluster.h"
#include "cost/step_cost.h"
#include "cost/step_schedule.h"

namespace irc {
namespace {

// A module path with its layer indices as `*` (`model.layers.3.mlp` -> `model.layers.*.mlp`):
// the layers repeat, so their ops are one row.
std::string moduleKey(const std::string& module) {
  std::string out;
  for (size_t i = 0; i < module.size();) {
    bool segmentStart = i == 0 || module[i - 1] == '.';
    size_t j = i;
    while (j < module.size() && std::isdigit(static_cast<unsigned char>(module[j]))) ++j;
    if (segmentStart && j > i && (j == module.size() || module[j] == '.')) {
      out += '*';
      i = j;
      continue;
    }
    out += module[i++];
  }
  return out;
}

struct Row {
  std::string name, type, module;
  int count = 0;
  double kernels = 0, comm = 0, flops = 0;  // per step: seconds, and FLOPs a device
  std::string bound = "-";                  // an op's kernel: "compute" or "memory" ("-": none)
};

std::string percent(double part, double whole) { return whole > 0 ? fmt::format("{:.1f}%", 100 * part / whole) : "-"; }
std::string rate(const Row& r) { return r.kernels > 0 ? fmt::format("{:.1f}", r.flops / r.kernels / 1e12) : "-"; }

}  // namespace

std::string explainTimeText(const Graph& graph, const ParallelSettings& settings, size_t top) {
  auto step = estimateClusterStep(graph, settings);
  if (!step) return "";
  const double micro = static_cast<double>(std::max<int64_t>(1, settings.microBatches));
  const bool training = settings.training;
  const double stageDevices = static_cast<double>(graph.stageDevices > 0 ? graph.stageDevices : settings.rankCount());
  std::string out = fmt::format("irc explain: where {}'s step goes on {} ({}, {}): {:.4g} s estimated\n", graph.name,
                                settings.cluster->preset.empty() ? "its cluster" : settings.cluster->preset,
                                fmt::format("{} devices", settings.rankCount()), precisionName(settings.precision), step->total);
  out += fmt::format("  {:<30} {:>12} {:>7}\n", "by category", "seconds", "share");
  for (const auto& [category, seconds] : step->timeByCategory)
    out += fmt::format("  {:<30} {:>12.6g} {:>7}\n", category, seconds, percent(seconds, step->total));
  // The slowest stage's ops over the step's micro-batches: their kernels (forward, backward and
  // recomputed forward) and their collectives on the critical path (each forward one's dual too).
  std::vector<Row> ops;
  std::map<std::string, Row> modules;
  double stageKernels = 0;
  forEachOpTime(graph, settings, [&](const Op& op, const StepTime& t) {
    if (settings.pipelineStages > 1 && op.stage != step->slowestStage) return;
    const bool again = training && std::as_const(op).annotation->recompute;
    Row r{op.name, op.type, graph.moduleOf(op), 1, 0, 0, 0};
    r.kernels = micro * (t.compute + (training ? t.backwardCompute : 0) + (again ? t.compute : 0));
    r.comm = micro * (t.forwardComm + t.redistribution) * ((training ? 2 : 1) + (again ? 1 : 0));
    r.flops = micro * t.globalFlops * ((training ? 3 : 1) + (again ? 1 : 0)) / stageDevices;
    if (t.compute > 0) r.bound = t.memoryBound ? "memory" : "compute";
    stageKernels += r.kernels;
    Row& m = modules[moduleKey(r.module.empty() ? "(no module)" : r.module)];
    m.count += 1, m.kernels += r.kernels, m.comm += r.comm, m.flops += r.flops;
    ops.push_back(std::move(r));
  });
  auto byTime = [](const Row& a, const Row& b) {
    return a.kernels + a.comm != b.kernels + b.comm ? a.kernels + a.comm > b.kernels + b.comm : a.name < b.name;
  };
  std::vector<Row> moduleRows;
  for (auto& [key, row] : modules) {
    row.name = key;
    moduleRows.push_back(row);
  }
  std::sort(moduleRows.begin(), moduleRows.end(), byTime);
  std::sort(ops.begin(), ops.end(), byTime);
  const std::string where =
      settings.pipelineStages > 1 ? fmt::format("stage {} (the slowest)", step->slowestStage) : std::string("the step");
  out +=
      fmt::format("  modules of {}, over {} micro-batches ({:.4g} s of kernels; share: of them)\n", where, micro, stageKernels);
  out += fmt::format("  {:<40} {:>5} {:>12} {:>12} {:>7} {:>10}\n", "module", "ops", "kernels s", "comm s", "share", "TFLOP/s");
  for (size_t i = 0; i < moduleRows.size() && i < top; ++i) {
    const Row& m = moduleRows[i];
    out += fmt::format("  {:<40} {:>5} {:>12.6g} {:>12.6g} {:>7} {:>10}\n", m.name, m.count, m.kernels, m.comm,
                       percent(m.kernels, stageKernels), rate(m));
  }
  out += fmt::format("  {:<40} {:<14} {:>12} {:>12} {:>7} {:>10} {:>8}\n", "op", "type", "kernels s", "comm s", "share",
                     "TFLOP/s", "bound");
  for (size_t i = 0; i < ops.size() && i < top; ++i) {
    const Row& o = ops[i];
    out += fmt::format("  {:<40} {:<14} {:>12.6g} {:>12.6g} {:>7} {:>10} {:>8}\n", o.name, o.type, o.kernels, o.comm,
                       percent(o.kernels, stageKernels), rate(o), o.bound);
  }
  return out;
}

}  // namespace irc

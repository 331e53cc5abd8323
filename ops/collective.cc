#include "ops/collective.h"

#include <algorithm>

namespace irc {

std::string_view collectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "AllReduce";
    case CollectiveKind::AllGather: return "AllGather";
    case CollectiveKind::ReduceScatter: return "ReduceScatter";
    case CollectiveKind::AlltoAll: return "AlltoAll";
    case CollectiveKind::PointToPoint: return "Send";
  }
  return "";
}

std::optional<CollectiveKind> collectiveOfType(std::string_view type) {
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AlltoAll, CollectiveKind::PointToPoint})
    if (collectiveName(kind) == type) return kind;
  return std::nullopt;
}

std::optional<CollectiveKind> collectiveOfFamily(OpFamily family) {
  switch (family) {
    case OpFamily::AllReduce: return CollectiveKind::AllReduce;
    case OpFamily::AllGather: return CollectiveKind::AllGather;
    case OpFamily::ReduceScatter: return CollectiveKind::ReduceScatter;
    case OpFamily::AlltoAll: return CollectiveKind::AlltoAll;
    case OpFamily::Send: return CollectiveKind::PointToPoint;
    default: return std::nullopt;
  }
}

std::optional<CollectiveKind> collectiveOf(const RedistStep& step) {
  switch (step.kind) {
    case RedistStep::Kind::Gather: return CollectiveKind::AllGather;
    case RedistStep::Kind::AllReduce: return CollectiveKind::AllReduce;
    case RedistStep::Kind::ReduceScatter: return CollectiveKind::ReduceScatter;
    case RedistStep::Kind::AlltoAll: return CollectiveKind::AlltoAll;
    case RedistStep::Kind::Send: return CollectiveKind::PointToPoint;
    default: return std::nullopt;
  }
}

double ringTraffic(CollectiveKind kind, double n) {
  switch (kind) {
    case CollectiveKind::AllReduce: return 2 * (n - 1) / n;
    case CollectiveKind::AllGather: return n - 1;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AlltoAll: return (n - 1) / n;
    case CollectiveKind::PointToPoint: return 1;
  }
  return 0;
}

double ringSteps(CollectiveKind kind, double n) {
  switch (kind) {
    case CollectiveKind::AllReduce: return 2 * (n - 1);
    case CollectiveKind::PointToPoint: return 1;
    default: return n - 1;
  }
}

double ringPasses(CollectiveKind kind) { return kind == CollectiveKind::AllReduce ? 2 : 1; }

double alphaBetaSeconds(CollectiveKind kind, double n, double bytes, const CostModel& m) {
  double seconds = ringSteps(kind, n) * m.alpha + ringTraffic(kind, n) * bytes * m.beta;
  if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter) seconds += bytes * m.gamma;
  return seconds;
}

RedistCost stepCost(const RedistStep& step, int dtypeBytes) {
  double p = static_cast<double>(numElements(step.localBefore)) * dtypeBytes;
  double n = static_cast<double>(step.groupSize());
  switch (step.kind) {
    case RedistStep::Kind::Split: return {0, p};
    case RedistStep::Kind::Gather: return {0.5 * (n + 1) * p, step.dim == 0 ? p : p + 2 * n * p};
    case RedistStep::Kind::AlltoAll: return {4 * p, p};
    case RedistStep::Kind::Reshape: return {0, 2 * p};
    case RedistStep::Kind::AllReduce: return {ringTraffic(CollectiveKind::AllReduce, n) * p, p};
    case RedistStep::Kind::ReduceScatter: return {ringTraffic(CollectiveKind::ReduceScatter, n) * p, step.dim > 0 ? 3 * p : p};
    case RedistStep::Kind::RealDiv:
    case RedistStep::Kind::VocabOffset: return {0, p};
    case RedistStep::Kind::Mirror: return {0, 0};
    case RedistStep::Kind::Send: return {p, 0};
    case RedistStep::Kind::Receive: return {0, 0};
  }
  return {};
}

std::optional<double> localStepCopyBytes(const RedistStep& step, double bytes) {
  switch (step.kind) {
    case RedistStep::Kind::Split: return bytes / static_cast<double>(step.groupSize());
    case RedistStep::Kind::Reshape:
    case RedistStep::Kind::RealDiv:
    case RedistStep::Kind::VocabOffset: return bytes;
    default: return std::nullopt;
  }
}

std::optional<double> offDim0CopyBytes(const RedistStep& step, double bytes) {
  // An AllGather's whole result is split and concatenated; a ReduceScatter's input is stacked.
  if (step.kind == RedistStep::Kind::Gather && step.dim != 0) return static_cast<double>(step.groupSize()) * bytes;
  if (step.kind == RedistStep::Kind::ReduceScatter && step.dim > 0) return bytes;
  return std::nullopt;
}

void applyStepToMap(RedistStep::Kind kind, int dim, int concatDim, uint32_t axes, std::vector<int>& map, uint32_t& partial) {
  int first = axes ? __builtin_ctz(axes) : -1;
  switch (kind) {
    case RedistStep::Kind::AllReduce: partial = 0; break;
    case RedistStep::Kind::ReduceScatter:
      partial &= ~axes;
      map[dim] = first;
      break;
    case RedistStep::Kind::Gather: map[dim] = -1; break;
    case RedistStep::Kind::AlltoAll:
      map[concatDim] = -1;
      map[dim] = first;
      break;
    case RedistStep::Kind::Split: map[dim] = first; break;
    default: break;
  }
}

double stepSendBytes(const RedistStep& step, int dtypeBytes) {
  std::optional<CollectiveKind> kind = collectiveOf(step);
  if (!kind) return 0;
  double in = static_cast<double>(numElements(step.localBefore)) * dtypeBytes;
  return ringTraffic(*kind, static_cast<double>(step.groupSize())) * in;
}

CollectiveKind mirrorGradientCollective(const RedistStep& step) {
  return step.shardedGradient ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
}

double mirrorGradientBytes(const RedistStep& step, int dtypeBytes) {
  if (step.kind != RedistStep::Kind::Mirror) return 0;
  return ringTraffic(mirrorGradientCollective(step), static_cast<double>(step.groupSize())) *
         static_cast<double>(numElements(step.localBefore)) * dtypeBytes;
}

bool isMirror(const RedistStep& step) { return step.kind == RedistStep::Kind::Mirror; }
bool isMeanDivision(const RedistStep& step) { return step.kind == RedistStep::Kind::RealDiv; }
bool completesPartial(const RedistStep& step) { return step.kind == RedistStep::Kind::AllReduce; }
bool isLocalReshape(const RedistStep& step) { return step.kind == RedistStep::Kind::Reshape; }
std::string stepShapeProblem(const RedistStep& step) {
  const Shape& in = step.localBefore;
  const Shape& out = step.localAfter;
  const int64_t group = step.groupSize();
  if (step.kind == RedistStep::Kind::Reshape)
    return numElements(in) == numElements(out) ? "" : "a Reshape changes the element count";
  // The dims the step scales: (dim, divided by the group) or (dim, multiplied by it).
  std::vector<std::pair<int, bool>> scaled;
  switch (step.kind) {
    case RedistStep::Kind::Split: scaled = {{step.dim, true}}; break;
    case RedistStep::Kind::Gather: scaled = {{step.dim, false}}; break;
    case RedistStep::Kind::AlltoAll: scaled = {{step.dim, true}, {step.concatDim, false}}; break;
    case RedistStep::Kind::ReduceScatter: scaled = {{std::max(step.dim, 0), true}}; break;
    default: break;
  }
  if (in.size() != out.size()) return "the step changes the tensor's rank";
  for (size_t d = 0; d < in.size(); ++d) {
    auto it = std::find_if(scaled.begin(), scaled.end(), [&](const auto& s) { return s.first == static_cast<int>(d); });
    bool fits = it == scaled.end() ? in[d] == out[d] : it->second ? in[d] == out[d] * group : out[d] == in[d] * group;
    if (!fits) return "dim " + std::to_string(d) + " does not match the step's group of " + std::to_string(group);
  }
  for (const auto& s : scaled)
    if (s.first < 0 || static_cast<size_t>(s.first) >= in.size()) return "the step's dim is outside the tensor";
  return "";
}

bool isSend(const RedistStep& step) { return step.kind == RedistStep::Kind::Send; }
bool isReceive(const RedistStep& step) { return step.kind == RedistStep::Kind::Receive; }

TransferSteps transferSteps(int64_t stages, int64_t deviceNum, int64_t from, int64_t to, const Shape& local, const Shape& global,
                            int64_t tag) {
  RedistStep step;
  step.mesh = DeviceMatrix::unnamed({stages, deviceNum});
  step.axes = {0};
  step.localBefore = step.localAfter = local;
  step.globalAfter = global;
  step.srTag = tag;
  TransferSteps t{step, step};
  t.send.kind = RedistStep::Kind::Send;
  t.send.peerStage = to;
  t.receive.kind = RedistStep::Kind::Receive;
  t.receive.peerStage = from;
  return t;
}

RedistStep mirrorStep(const TensorLayout& as) {
  RedistStep mirror;
  mirror.kind = RedistStep::Kind::Mirror;
  mirror.mesh = as.mesh;
  for (int a = 0; a < as.mesh.rank(); ++a) {
    bool used = std::any_of(as.dims.begin(), as.dims.end(),
                            [&](const std::vector<int>& axes) { return std::find(axes.begin(), axes.end(), a) != axes.end(); });
    if (!used && as.mesh.dims[a] > 1) mirror.axes.push_back(a);
  }
  mirror.localBefore = mirror.localAfter = as.sliceShape();
  mirror.globalAfter = as.shape;
  return mirror;
}

RedistStep completionStep(const DeviceMatrix& mesh, std::vector<int> axes, Shape localBefore) {
  RedistStep step;
  step.kind = RedistStep::Kind::AllReduce;
  step.mesh = mesh;
  step.axes = std::move(axes);
  step.localBefore = std::move(localBefore);
  return step;
}

std::optional<RedistStep> fuseReduceThenSlice(const RedistStep& reduce, const RedistStep& slice, const Shape& localBefore) {
  if (!completesPartial(reduce) || slice.kind != RedistStep::Kind::Split) return std::nullopt;
  for (int64_t rank = 0; rank < reduce.mesh.deviceCount(); ++rank)
    if (stepGroup(reduce, rank) != stepGroup(slice, rank)) return std::nullopt;
  RedistStep step = slice;
  step.kind = RedistStep::Kind::ReduceScatter;
  step.reduceOp = reduce.reduceOp;
  step.localBefore = localBefore;
  return step;
}

Shape forwardStepLocalAfter(const RedistStep& step, Shape localBefore) {
  if (step.kind == RedistStep::Kind::ReduceScatter && !localBefore.empty()) localBefore[0] /= step.groupSize();
  return localBefore;
}

}  // namespace irc

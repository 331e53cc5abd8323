#include "ops/collective.h"

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

double alphaBetaSeconds(CollectiveKind kind, double n, double bytes, const CostModel& m) {
  double seconds = ringSteps(kind, n) * m.alpha + ringTraffic(kind, n) * bytes * m.beta;
  if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter) seconds += bytes * m.gamma;
  return seconds;
}

double stepSendBytes(const RedistStep& step, int dtypeBytes) {
  std::optional<CollectiveKind> kind = collectiveOf(step);
  if (!kind) return 0;
  double in = static_cast<double>(numElements(step.localBefore)) * dtypeBytes;
  return ringTraffic(*kind, static_cast<double>(step.groupSize())) * in;
}

double mirrorGradientBytes(const RedistStep& step, int dtypeBytes) {
  if (step.kind != RedistStep::Kind::Mirror) return 0;
  CollectiveKind kind = step.shardedGradient ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
  return ringTraffic(kind, static_cast<double>(step.groupSize())) * static_cast<double>(numElements(step.localBefore)) *
         dtypeBytes;
}

}  // namespace irc

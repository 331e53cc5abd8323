#include "cost/step_cost.h"

#include <algorithm>
#include <unordered_map>

#include "ops/inserted_ops.h"
#include "ops/collective.h"
#include "ops/op_family.h"
#include "cost/attention_fusion.h"
#include "cost/collective_time.h"
#include "cost/kernel_time.h"
#include "cost/linear_layers.h"
#include "plan/plan_queries.h"
#include "plan/optimal_planner.h"
#include "ops/int_key.h"
#include "plan/redistribution_planner.h"
#include "plan/device_precision.h"

namespace irc {
namespace {

// The tensors (operands) a factor appears in.
int operandsHolding(const OpRule& rule, int factor) {
  int n = 0;
  for (const DimFactors& dims : rule.operands)
    if (std::any_of(dims.begin(), dims.end(),
                    [&](const std::vector<int>& fs) { return std::count(fs.begin(), fs.end(), factor) > 0; }))
      ++n;
  return n;
}

}  // namespace

bool isProduct(const OpRule& rule) {
  for (int f = 0; f < rule.factorCount(); ++f)
    if (rule.isReduction(f) && operandsHolding(rule, f) >= 2) return true;
  return false;
}

namespace {

int64_t splitOf(const OpSharding& s, int factor) {
  int64_t n = 1;
  for (int axis : s.factorAxes[factor]) n *= s.mesh.dims[axis];
  return n;
}

bool operandHolds(const OpRule& rule, size_t operand, int factor) {
  for (const std::vector<int>& fs : rule.operands[operand])
    if (std::count(fs.begin(), fs.end(), factor) > 0) return true;
  return false;
}

bool resultHolds(const OpRule& rule, int factor) {
  for (const DimFactors& result : rule.results)
    for (const std::vector<int>& fs : result)
      if (std::count(fs.begin(), fs.end(), factor) > 0) return true;
  return false;
}

// Whether a factor counts toward the op's iteration space: every factor but one reduced within
// a single operand (a lookup's vocabulary), read by index (a permutation's tokens), or an
// operand's whole dim that the result has a window or a part of under a factor of its own (a
// Slice's input dim, a Concat's inputs': the op visits the result's points, not the product of
// both sides' sizes, which for GPT-OSS's sink column was heads x S x S x (S + 1)).
bool spansPoints(const OpRule& rule, int f) {
  if (std::find(rule.readByIndex.begin(), rule.readByIndex.end(), f) != rule.readByIndex.end()) return false;
  if (rule.factorKinds[f] == FactorKind::Replicated && !resultHolds(rule, f)) return false;
  return !rule.isReduction(f) || operandsHolding(rule, f) >= 2;
}

// One op's kernel on its slice: its FLOPs (2 a point where a factor is contracted between two
// operands, else 1), the bytes of its operands and results not kept on chip, and a product's
// output rows, columns and independent products.
// `visited`: of the points, those the kernel computes (rule.pointsVisited, or all of them).
KernelWork kernelWork(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype, const OnChip& onChip,
                      double visited) {
  KernelWork w;
  double points = 1;
  for (int f = 0; f < rule.factorCount(); ++f) {
    if (!spansPoints(rule, f)) continue;
    double local = static_cast<double>(rule.factorSizes[f]) / static_cast<double>(splitOf(s, f));
    points *= local;
    // A product's output: the rows its first operand alone has, the columns its second alone
    // has, the rest (heads, batch) independent products.
    if (rule.isReduction(f) || rule.operands.size() < 2) continue;
    bool inFirst = operandHolds(rule, 0, f), inSecond = operandHolds(rule, 1, f);
    (inFirst && !inSecond ? w.rows : inSecond && !inFirst ? w.columns : w.batch) *= local;
  }
  w.matmul = isProduct(rule);
  w.flops = (w.matmul ? 2 : 1) * points * visited;
  for (size_t i = 0; i < view.operandShapes.size() && i < rule.operands.size(); ++i)
    if (!onChip.operand(i)) w.bytes += sliceBytes(operandLayout(rule, s, static_cast<int>(i), view.operandShapes[i]), dtype);
  for (size_t r = 0; r < view.resultShapes.size() && r < rule.results.size(); ++r)
    if (!onChip.result(r)) w.bytes += sliceBytes(resultLayout(rule, s, static_cast<int>(r), view.resultShapes[r]), dtype);
  return w;
}

// The op's FLOPs on its whole shapes: every rank's share together (its points unsplit); of an
// attention product, the points its queries read, or (`everyPoint`) all of them.
double globalFlops(const OpRule& rule, bool everyPoint = false) {
  double points = 1;
  for (int f = 0; f < rule.factorCount(); ++f)
    if (spansPoints(rule, f)) points *= static_cast<double>(rule.factorSizes[f]);
  return (isProduct(rule) ? 2 : 1) * points * (everyPoint ? 1.0 : rule.pointsVisited);
}

}  // namespace

double computeTime(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype, const CostModel& model) {
  KernelWork w = kernelWork(rule, s, view, dtype, {}, rule.pointsVisited);
  return std::max(w.flops / model.peakFlops, w.bytes / model.memoryBandwidth);
}

namespace {

// A linear layer's product under a low-precision recipe (docs/cluster.md, "Precision recipes").
// Its GEMMs — the forward, the input gradient and the weight gradient, the same FLOPs each — run
// at the recipe's FP8 or FP4 peak on quantized operands, writing 16-bit results. Before them, each
// 16-bit operand is cast by a kernel bound by its bytes: read at 16 bits (once more for the amax
// current scaling needs), written as the two quantized copies the GEMMs read (row-wise for the
// forward or input gradient, column-wise for the weight gradient: Hopper's FP8 GEMMs take only
// the TN layout, Blackwell's block scales run along one dim), NVFP4's column-wise copy through a
// random Hadamard transform first. The activation is cast in the forward, its result's gradient
// in the backward, the weight once a step (and only the row-wise copy in inference).
void lowPrecisionProductTime(OpTime& t, const KernelWork& wide, const OpRule& rule, const OpSharding& s, const OpView& view,
                             const KernelContext& context, DType held, const ParallelSettings& settings) {
  const int weight = context.linearWeight;
  const ClusterDescription& c = *settings.cluster;
  const PrecisionRecipe& recipe = recipeOf(settings.precision);
  const int activation = 1 - weight;
  auto elements = [&](int operand) {
    return static_cast<double>(numElements(operandLayout(rule, s, operand, view.operandShapes[operand]).sliceShape()));
  };
  const double x = elements(activation), w = elements(weight);
  const double y = static_cast<double>(numElements(resultLayout(rule, s, 0, view.resultShapes[0]).sliceShape()));
  const double wideBytes = byteSize(held);
  const double copies = settings.training ? 2 : 1;
  KernelWork gemm = wide;
  gemm.bytes = recipe.activationCopyBytes(x) + recipe.weightCopyBytes(w) + y * wideBytes;
  const double gemmSeconds = kernelSecondsAtPeak(gemm, c, productPeak(c, recipe.linear, settings.precision));
  auto stream = [&](double bytes) { return kernelSeconds({.bytes = bytes}, c, settings.precision); };
  auto cast = [&](double n, double copyBytes) {
    double seconds = stream(n * wideBytes + copies * copyBytes);
    if (recipe.amaxPass) seconds += stream(n * wideBytes);
    if (recipe.hadamardPass && settings.training) seconds += stream(2 * n * wideBytes);
    return seconds;
  };
  t.compute = gemmSeconds + (context.castActivation ? cast(x, recipe.activationCopyBytes(x)) : 0);
  t.backwardCompute = 2 * gemmSeconds + cast(y, recipe.activationCopyBytes(y));
  t.perStepCompute = cast(w, recipe.weightCopyBytes(w));
}

// The terms of an op on a cluster (docs/cluster.md): its kernel at the achievable rates, its
// forward collectives and its gradient's AllReduce over the links their groups cross.
OpTime clusterOpTime(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype,
                     const std::vector<bool>& firstReader, const ParallelSettings& settings, const KernelContext& context) {
  const ClusterDescription& c = *settings.cluster;
  DType held = computeDType(dtype, settings.precision);
  OpTime t;
  // An attention product skips the points outside a query's window or past its position
  // (BatchMatMul's `window`, `causal`) inside a fused kernel, which visits only the blocks that
  // hold some; unfused (the scores in HBM, eager attention), it computes every point and the mask
  // comes after it (Megatron-LM's 2021 runs, transformers' eager attention).
  const bool inFusedAttention = context.onChip.result(0) || context.onChip.operand(0);
  KernelWork w = kernelWork(rule, s, view, held, context.onChip, inFusedAttention ? rule.pointsVisited : 1);
  // A view launches nothing; nor does an op a fused attention kernel runs on chip (its results
  // never leave it, and it is no product).
  bool fused = !context.onChip.results.empty() &&
               std::all_of(context.onChip.results.begin(), context.onChip.results.end(), [](bool b) { return b; }) && !w.matmul;
  w.view = context.isView || fused;
  t.compute = kernelSeconds(w, c, settings.precision);
  t.memoryBound = memoryBound(w, c, settings.precision);
  // A fused kernel's backward recomputes the scores from q and k (FlashAttention keeps only the
  // softmax's row statistics; Dao et al. 2022, §3.1 and appendix B): the scores' product runs
  // three times in the backward (recomputed, then the gradients of q and of k), the context's
  // twice (of the probabilities and of v), 2.5 times the forward's products in all.
  const bool fusedScores = w.matmul && context.onChip.result(0);
  t.backwardCompute = (fusedScores ? 3 : 2) * t.compute;
  if (context.lowPrecision) lowPrecisionProductTime(t, w, rule, s, view, context, held, settings);
  t.globalFlops = globalFlops(rule);
  t.everyPointFlops = globalFlops(rule, true);
  if (!view.resultShapes.empty() && !rule.results.empty()) {
    double bytes = sliceBytes(resultLayout(rule, s, 0, view.resultShapes[0]), held);
    for (const ForwardOp& f : forwardOps(rule, s, view)) {
      GroupSpan span = groupSpan(s.mesh, f.step.axes, c.domainDevices());
      if (std::optional<CollectiveKind> kind = collectiveOf(f.step)) t.forwardComm += collectiveSeconds(*kind, bytes, span, c);
      else  // the RealDiv after a mean's AllReduce
        t.forwardComm += kernelSeconds({.bytes = 2 * bytes / static_cast<double>(span.ranks)}, c, settings.precision);
    }
  }
  if (settings.training)
    for (size_t i = 0; i < firstReader.size() && i < view.operandShapes.size(); ++i) {
      if (!firstReader[i]) continue;
      TensorLayout layout = operandLayout(rule, s, static_cast<int>(i), view.operandShapes[i]);
      // The ranks holding the same slice: the mesh's axes the slice does not use.
      std::vector<int> used = layout.usedAxes(), replicaAxes;
      for (int a = 0; a < s.mesh.rank(); ++a)
        if (std::find(used.begin(), used.end(), a) == used.end()) replicaAxes.push_back(a);
      GroupSpan span = groupSpan(s.mesh, replicaAxes, c.domainDevices());
      // ZeRO's ReduceScatter and AllGather move what the AllReduce does; each rank updates its share.
      t.gradientSync += collectiveSeconds(CollectiveKind::AllReduce, sliceBytes(layout, held), span, c);
      t.gradients.push_back({span, sliceBytes(layout, held), static_cast<double>(byteSize(held))});
      t.trainedElements += static_cast<double>(numElements(layout.sliceShape())) /
                           (settings.zeroStage > 0 ? static_cast<double>(span.ranks) : 1.0);
    }
  return t;
}

}  // namespace

OpTime opTime(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype, const std::vector<bool>& firstReader,
              const ParallelSettings& settings, const KernelContext& context) {
  if (settings.cluster) return clusterOpTime(rule, s, view, dtype, firstReader, settings, context);
  const CostModel& m = settings.costModel;
  OpTime t;
  t.compute = computeTime(rule, s, view, dtype, m);
  t.backwardCompute = 2 * t.compute;
  t.globalFlops = globalFlops(rule);
  t.everyPointFlops = globalFlops(rule, true);
  if (!view.resultShapes.empty() && !rule.results.empty()) {
    double bytes = sliceBytes(resultLayout(rule, s, 0, view.resultShapes[0]), dtype);
    for (const ForwardOp& f : forwardOps(rule, s, view)) {
      double n = static_cast<double>(f.step.groupSize());
      if (std::optional<CollectiveKind> kind = collectiveOf(f.step))
        t.forwardComm += n <= 1 ? 0 : alphaBetaSeconds(*kind, n, bytes, m);
      else t.forwardComm += bytes / n * m.gamma;  // the RealDiv after a mean's AllReduce
    }
  }
  if (settings.training)
    for (size_t i = 0; i < firstReader.size() && i < view.operandShapes.size(); ++i) {
      if (!firstReader[i]) continue;
      TensorLayout held = operandLayout(rule, s, static_cast<int>(i), view.operandShapes[i]);
      // Ranks holding the same slice: all of them over the number of distinct slices.
      double replicas = static_cast<double>(settings.deviceNum) * static_cast<double>(numElements(held.sliceShape())) /
                        static_cast<double>(std::max<int64_t>(1, numElements(view.operandShapes[i])));
      t.gradientSync += allReduceTime(sliceBytes(held, dtype), replicas, m);
      t.trainedElements += static_cast<double>(numElements(held.sliceShape())) / (settings.zeroStage > 0 ? replicas : 1.0);
    }
  return t;
}

namespace {

// A redistribution step on a cluster: collectives over the links their group crosses, local
// steps (slices, reshapes, the Split + Concat around a collective off dim 0) as copies at HBM
// bandwidth.
double clusterStepTime(const RedistStep& step, double dtypeBytes, const ParallelSettings& settings) {
  const ClusterDescription& c = *settings.cluster;
  double b = static_cast<double>(numElements(step.localBefore)) * dtypeBytes;
  GroupSpan span = step.mesh.dims.empty() ? GroupSpan{step.groupSize(), 1} : groupSpan(step.mesh, step.axes, c.domainDevices());
  auto copy = [&](double bytes) { return kernelSeconds({.bytes = 2 * bytes}, c, settings.precision); };
  if (std::optional<CollectiveKind> kind = collectiveOf(step)) {
    std::optional<double> offDim0 = offDim0CopyBytes(step, b);
    return collectiveSeconds(*kind, b, span, c) + (offDim0 ? copy(*offDim0) : 0);
  }
  std::optional<double> copied = localStepCopyBytes(step, b);
  return copied ? copy(*copied) : 0;
}

}  // namespace

std::optional<StepOnCluster> stepOnCluster(const RedistStep& step, DType dtype, const ParallelSettings& settings) {
  if (!settings.cluster) return std::nullopt;
  const ClusterDescription& c = *settings.cluster;
  StepOnCluster out;
  out.seconds = clusterStepTime(step, byteSize(computeDType(dtype, settings.precision)), settings);
  GroupSpan span = step.mesh.dims.empty() ? GroupSpan{step.groupSize(), 1} : groupSpan(step.mesh, step.axes, c.domainDevices());
  out.link = linkOf(span, c).description;
  return out;
}

StepTimer stepTimerFor(const ParallelSettings& settings) {
  if (!settings.cluster) {
    CostModel model = settings.costModel;
    return [model](const RedistStep& step, int dtypeBytes) { return stepTime(step, dtypeBytes, model); };
  }
  return [settings](const RedistStep& step, int dtypeBytes) { return clusterStepTime(step, dtypeBytes, settings); };
}

RedistPlan planWithSettings(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options,
                            const ParallelSettings& settings) {
  if (settings.redistribution != RedistributionMode::Optimal) return planRedistribution(from, to, options);
  if (!settings.cluster) return planOptimal(from, to, options, settings.costModel);
  return planOptimal(from, to, options, stepTimerFor(settings));
}

double redistributionTime(const TensorLayout& from, const TensorLayout& to, DType dtype, const ParallelSettings& settings,
                          double movedBytes) {
  PlannerOptions options{settings.enableAlltoall, byteSize(dtype)};
  RedistPlan plan = planWithSettings(from, to, options, settings);
  if (!settings.cluster) return planTime(plan, byteSize(dtype), settings.costModel);
  double held = movedBytes > 0 ? movedBytes : byteSize(computeDType(dtype, settings.precision)), t = 0;
  for (const RedistStep& step : plan.steps) t += clusterStepTime(step, held, settings);
  return t;
}

void addOpTime(StepTime& t, const OpTime& op, bool training) {
  t.compute += op.compute;
  t.memoryBound = op.memoryBound;
  t.backwardCompute += op.backwardCompute;
  t.perStepCompute += op.perStepCompute;
  t.globalFlops += op.globalFlops;
  t.everyPointFlops += op.everyPointFlops;
  t.trainedElements += op.trainedElements;
  t.forwardComm += op.forwardComm;
  if (!training) return;
  t.backward += op.backwardCompute + op.forwardComm;
  t.gradientSync += op.gradientSync;
  t.gradients.insert(t.gradients.end(), op.gradients.begin(), op.gradients.end());
}

void addRedistributionTime(StepTime& t, double seconds, bool training) {
  t.redistribution += seconds;
  if (training) t.backward += seconds;
}

namespace {

// Calls `take(op, its terms)` for every model op with its own time and its input edges'.
template <typename Take>
void walkOpTimes(const Graph& graph, const ParallelSettings& settings, Take take) {
  // Layers repeat: an edge's plan is planned once per pair of layouts.
  std::unordered_map<IntKey, double, IntKeyHash> planned;
  auto redistribution = [&](const TensorLayout& from, const TensorLayout& to, DType dtype, bool quantized = false) {
    if (from == to) return 0.0;
    IntKey key{static_cast<int64_t>(dtype), quantized ? 1 : 0};
    appendLayoutKey(key, from);
    appendLayoutKey(key, to);
    auto it = planned.find(key);
    double moved = quantized ? recipeOf(settings.precision).activationCopyBytes(1) : 0;
    if (it == planned.end()) it = planned.emplace(std::move(key), redistributionTime(from, to, dtype, settings, moved)).first;
    return it->second;
  };
  std::vector<bool> read(graph.values.size(), false);
  // On a cluster whose stack fuses attention, the values its kernels keep on chip.
  FusedAttention fusedAttention;
  if (settings.cluster && settings.cluster->fusedAttention) fusedAttention = fusedAttentionOf(graph);
  const std::vector<bool>& onChip = fusedAttention.onChip;
  const std::vector<bool>& repeatedKeyValues = fusedAttention.repeatedKeysAndValues;
  // On a cluster under a low-precision recipe, the linear layers it runs in FP8 or FP4 (a recipe
  // with a quantized dispatch moves their activations cast: DeepSeek-V3's FP8 dispatch).
  const PrecisionRecipe& recipe = recipeOf(settings.precision);
  const bool lowPrecision = settings.cluster && recipe.lowPrecision();
  std::vector<int> linearWeight;
  if (lowPrecision) linearWeight = linearLayerWeightOperands(graph);
  std::vector<bool> cast(lowPrecision ? graph.values.size() : 0, false);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || !op.parallel->layoutsInferred || !op.parallel->hasSharding || !op.parallel->rule) continue;
    KernelContext context;
    // (A grouped-query attention's repeated keys and values the fused kernel reads unrepeated.)
    context.isView = rulesOf(op).resultIsView(graph, op) ||
                     (!repeatedKeyValues.empty() && !op.results.empty() && repeatedKeyValues[op.results[0]]);
    if (!linearWeight.empty() && linearWeight[id] >= 0) {
      context.linearWeight = linearWeight[id];
      context.lowPrecision = true;
      const Operand& a = op.operands[1 - context.linearWeight];
      if (a.isValue()) {
        ValueId activation = modelValueBehind(graph, a.value);  // behind its conversions
        context.castActivation = !cast[activation];
        cast[activation] = true;
      }
    }
    if (!onChip.empty()) {
      for (const Operand& o : op.operands)
        if (o.isValue()) context.onChip.operands.push_back(onChip[o.value]);
      for (ValueId r : op.results) context.onChip.results.push_back(onChip[r]);
    }
    StepTime t;
    std::vector<bool> firstReader;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].isValue()) continue;
      ValueId v = modelValueBehind(graph, op.operands[i].value);
      const Value& value = graph.value(v);
      firstReader.push_back(value.kind == ValueKind::Parameter && isFloat(value.type.dtype) && !read[v]);
      read[v] = true;
      const bool quantized = recipe.quantizedDispatch && context.lowPrecision && static_cast<int>(i) == 1 - context.linearWeight;
      addRedistributionTime(
          t, redistribution(layoutOfValue(graph, v), layoutNeeded(op, static_cast<int>(i)), value.type.dtype, quantized),
          settings.training);
    }
    DType dtype = graph.value(op.results[0]).type.dtype;
    addOpTime(t, opTime(*op.parallel->rule, op.parallel->sharding, viewOf(graph, op), dtype, firstReader, settings, context),
              settings.training);
    // A result converted after the op (an output constraint, a Reshape handing its consumer the
    // layout it needs) pays that conversion too.
    for (size_t r = 0; r < op.results.size() && r < op.parallel->beforeConversion.size(); ++r) {
      const Value& result = graph.value(op.results[r]);
      if (op.parallel->beforeConversion[r] && result.layout)
        addRedistributionTime(t, redistribution(*op.parallel->beforeConversion[r], *result.layout, result.type.dtype),
                              settings.training);
    }
    take(op, t);
  }
}

void add(StepTime& sum, const StepTime& t) {
  sum.compute += t.compute;
  sum.backwardCompute += t.backwardCompute;
  sum.perStepCompute += t.perStepCompute;
  sum.forwardComm += t.forwardComm;
  sum.redistribution += t.redistribution;
  sum.backward += t.backward;
  sum.gradientSync += t.gradientSync;
}

}  // namespace

StepTime estimateStepTime(const Graph& graph, const ParallelSettings& settings) {
  StepTime sum;
  walkOpTimes(graph, settings, [&](const Op&, const StepTime& t) { add(sum, t); });
  return sum;
}

void forEachOpTime(const Graph& graph, const ParallelSettings& settings,
                   const std::function<void(const Op&, const StepTime&)>& take) {
  walkOpTimes(graph, settings, take);
}

double weightGradientSeconds(const Graph& graph, const Op& op, const StepTime& t) {
  if (op.inserted() || !op.parallel->rule || !isProduct(*op.parallel->rule)) return 0;
  for (const Operand& o : op.operands) {
    if (!o.isValue()) continue;
    const Value& v = graph.value(modelValueBehind(graph, o.value));
    if (v.kind == ValueKind::Parameter && isFloat(v.type.dtype)) return t.backwardCompute / 2;
  }
  return 0;
}

std::vector<double> opStepSeconds(const Graph& graph, const ParallelSettings& settings) {
  std::vector<double> seconds(graph.ops.size(), 0);
  walkOpTimes(graph, settings, [&](const Op& op, const StepTime& t) { seconds[&op - graph.ops.data()] = t.total(); });
  return seconds;
}

}  // namespace irc

#include "passes/manager/pass_manager.h"
#include "search/configuration_search.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/cluster.h"
#include "ir/dtype.h"
#include "ir/tensor_layout.h"
#include "ops/batch_split.h"
#include "ops/op_traits.h"
#include "cost/collective_time.h"
#include "search/layer_model.h"
#include "cost/memory_estimate.h"
#include "cost/stage_estimate.h"
#include "cost/step_cost.h"
#include "plan/pipeline_order.h"
#include "cost/step_schedule.h"
#include "search/tensor_parallel_seeds.h"
#include "plan/device_precision.h"

namespace irc {

namespace {

using Clock = std::chrono::steady_clock;

// The largest micro-batch a replica runs at once: Megatron-LM's and torchtitan's runs use 1-8.
constexpr int64_t kMaxMicroBatchSize = 8;
// Configurations compiled whole (the layer model's fastest that fit).
constexpr int kCompiled = 8;
// The layer model's peak may miss the compile's by a few percent: a configuration within this
// factor of the budget by the layer model may fit, and the compile decides (dropping those
// within 3 % under the budget lost a plan 2.4 % faster that the compile fits: the oracle test).
constexpr double kModelMargin = 0.97;

struct Config {
  // dp, tp, pp, cp, ep, v and sp (etp: tp with experts, the seeds' split, tensor_parallel_seeds.h)
  ParallelDims dims;
  int64_t mbs = 1, micro = 1;
  // With pipeline stages and one chunk a stage in training: 1F1B or zero-bubble (ZB-H1).
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  bool sp = false;
  bool weightedSplit = false;       // first and last stages lightened by the embedding and head
  std::vector<int64_t> layerStage;  // each layer's virtual stage (its stage: mod pp)
  Recompute recompute = Recompute::None;
  // Recompute only on the stages that would not fit without it (estimate() decides which).
  bool recomputeWhereNeeded = false;
  std::vector<bool> stageRecompute;  // per stage: its layers recomputed
  int zeroStage = 0;                 // ZeRO-1/2: optimizer states (and gradients) sharded, no extra traffic
  int optimizerLevel = 0;            // MindSpore's optimizer parallel: weights sharded, gathered each micro-batch
  const LayerModel* model = nullptr;
  double seconds = 0, tflops = 0, peak = 0;
  double modelSeconds = 0;   // the layer model's step, kept when a compile replaces `seconds`
  double firstStepPeak = 0;  // compiled: the first step's (peak is from the second step on)
  bool compiled = false;
};

// The tokens of a sequence and the hidden size: the token ids [B, S] a 2-D table [V, H] is looked
// up by; {0, 0} when the graph has no such lookup.
std::pair<int64_t, int64_t> sequenceAndHiddenOf(const Graph& graph) {
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (!isLookup(op) || op.operands.size() < 2 || !op.operands[0].isValue() || !op.operands[1].isValue()) continue;
    const Shape& table = graph.value(op.operands[0].value).type.shape;
    const Shape& ids = graph.value(op.operands[1].value).type.shape;
    if (table.size() == 2 && ids.size() == 2) return {ids[1], table[1]};
  }
  return {0, 0};
}

std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      out.push_back(d);
      if (d * d != n) out.push_back(n / d);
    }
  std::sort(out.begin(), out.end());
  return out;
}

// The stage of each layer: evenly (layer l of L on stage l * pp / L, as Megatron-LM splits
// them), or with the first and last stages holding fewer layers by what the embedding before
// and the head after weigh in parameters (`pre`, `post`: in layers' worth), as Llama 3's
// 405B run gave its first and last stages fewer layers.
std::vector<int64_t> splitLayers(int64_t count, int64_t pp, double pre, double post) {
  std::vector<int64_t> stage(count);
  if (pp == 1 || (pre < 0.5 && post < 0.5)) {
    for (int64_t l = 0; l < count; ++l) stage[l] = l * pp / count;
    return stage;
  }
  double share = (static_cast<double>(count) + pre + post) / static_cast<double>(pp);
  int64_t first = std::clamp<int64_t>(std::llround(share - pre), 1, count - (pp - 1));
  int64_t last = std::clamp<int64_t>(std::llround(share - post), 1, count - first - (pp - 2));
  int64_t middle = count - first - last;
  for (int64_t l = 0; l < count; ++l) {
    if (l < first) stage[l] = 0;
    else if (l >= count - last) stage[l] = pp - 1;
    else stage[l] = pp > 2 ? 1 + (l - first) * (pp - 2) / std::max<int64_t>(1, middle) : pp - 1;
  }
  return stage;
}

class Search {
 public:
  Search(Graph& graph, CompileOptions& options, DiagnosticEngine& diags, const TrialCompile& compile)
      : graph_(graph),
        options_(options),
        diags_(diags),
        compile_(compile),
        cluster_(*options.cluster),
        bound_(memoryBound(options)),
        start_(Clock::now()) {}

  ConfigurationSearchOutcome run() {
    layers_ = findLayers(graph_);
    batch_ = inputBatchOf(graph_);
    if (layers_.count < 2 || batch_ < 1) return ConfigurationSearchOutcome::NotApplicable;
    // Given micro-batches: the step is that many of the inputs' batch (unless the inputs hold
    // the whole step), and every plan runs that many.
    if (options_.given.microBatches && !options_.inputsHoldStep) batch_ *= options_.microBatches;
    readModel();
    enumerate();
    if (configs_.empty()) {
      diags_.error(options_.settingsLoc,
                   fmt::format("search: no configuration of {} devices keeps the parameters of a rank within "
                               "{} ({} considered; the least needs pipeline or optimizer "
                               "sharding beyond what {} devices allow)",
                               options_.deviceNum, boundText(), considered_, options_.deviceNum));
      return ConfigurationSearchOutcome::Failed;
    }
    if (!estimateByLayerModels()) return ConfigurationSearchOutcome::Failed;
    std::stable_sort(configs_.begin(), configs_.end(), [](const Config& a, const Config& b) { return a.seconds < b.seconds; });
    int compiled = 0;
    std::optional<Prepared> best = compileFastest(compiled);
    if (!best) {
      diags_.error(options_.settingsLoc, fmt::format("search: no configuration of {} devices fits {} ({} "
                                                     "considered, {} dropped by the memory lower bound, {} compiled)",
                                                     options_.deviceNum, boundText(), considered_, pruned_, compiled));
      return ConfigurationSearchOutcome::Failed;
    }
    apply(std::move(*best), compiled);
    return ConfigurationSearchOutcome::Applied;
  }

 private:
  // What the search reads of the model once: the user's recompute, the experts, the sequence and
  // hidden size, whether attention has products of its own, the trained elements.
  void readModel() {
    readGivenRecompute();
    std::tie(experts_, expertElements_) = expertsOf(graph_);
    std::tie(sequence_, hidden_) = sequenceAndHiddenOf(graph_);
    attentionProducts_ = std::any_of(graph_.ops.begin(), graph_.ops.end(),
                                     [&](const Op& op) { return !op.inserted() && isAttentionProduct(graph_, op); });
    totalTrained_ = 0;
    for (ValueId v : graph_.parameters)
      if (graph_.value(v).trainable && isFloat(graph_.value(v).type.dtype))
        totalTrained_ += static_cast<double>(numElements(graph_.value(v).type.shape));
  }

  // Each configuration's step and peak by its layer model; those without one dropped (false,
  // with the error, when no degree splits the model at all).
  bool estimateByLayerModels() {
    for (Config& c : configs_) {
      c.model = modelFor(c.dims.tp, c.mbs, c.dims.sp, c.dims.ep, c.dims.cp);
      if (!c.model) continue;
      double perLayer = 0;
      for (int64_t l = 0; l < layers_.count; ++l) perLayer += c.model->trained[l] / static_cast<double>(layers_.count);
      c.layerStage = c.weightedSplit && perLayer > 0
                         ? splitLayers(layers_.count, c.dims.pp * c.dims.v, c.model->trained[layers_.pre()] / perLayer,
                                       c.model->trained[layers_.post()] / perLayer)
                         : splitLayers(layers_.count, c.dims.pp * c.dims.v, 0, 0);
      estimate(c);
    }
    for (const Config& c : configs_) {
      if (c.model) continue;
      // Without a layer model: the time limit came first (none was built for its key), or TP does not split the layers.
      if (!models_.count(std::make_tuple(c.dims.tp, c.mbs, c.dims.sp, c.dims.ep, c.dims.cp))) ++unestimated_;
      else
        unsplittable_.push_back(fmt::format("TP {}: the layers' products and heads do not split {} ways", c.dims.tp, c.dims.tp));
    }
    std::erase_if(configs_, [](const Config& c) { return c.model == nullptr; });
    if (configs_.empty() && !unsplittable_.empty()) {
      // Nothing was over the budget: no degree splits what it must (a prime device count).
      std::sort(unsplittable_.begin(), unsplittable_.end());
      unsplittable_.erase(std::unique(unsplittable_.begin(), unsplittable_.end()), unsplittable_.end());
      diags_.error(options_.settingsLoc,
                   fmt::format("search: no configuration of {} devices splits this model: {} (a device count whose "
                               "divisors split the batch, the heads and the layers does)",
                               options_.deviceNum, fmt::join(unsplittable_, "; ")));
      return false;
    }
    return true;
  }

  static constexpr double kGiB = 1024.0 * 1024 * 1024;

  // What a rank's peak must stay within: the budget, and on a cluster whose device's memory is
  // known, that memory too (a plan over it would not run, budget or not); 0: unbounded.
  static double memoryBound(const CompileOptions& o) {
    const double device = o.cluster->device.hbmBytes;
    if (o.memoryBudget > 0) return device > 0 ? std::min(o.memoryBudget, device) : o.memoryBudget;
    return device;
  }
  std::string boundText() const {
    if (options_.memoryBudget > 0 && bound_ == options_.memoryBudget)
      return fmt::format("memory_budget {:.1f} GiB", bound_ / kGiB);
    return fmt::format("the {:.1f} GiB a {} device holds", bound_ / kGiB,
                       cluster_.preset.empty() ? "cluster's" : cluster_.preset);
  }
  bool fits(double peak) const { return bound_ <= 0 || peak <= bound_; }
  bool mayFit(double layerModelPeak) const { return fits(layerModelPeak * kModelMargin); }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // Whether another piece of work as long as `typical` (the mean of those done) would end past
  // the time limit: the search stops before starting it rather than after it overruns.
  bool timeUp(double typical = 0) const { return elapsed() + typical > options_.searchTimeLimit; }

  // Bytes a parameter element costs a rank for the step (docs/memory.md): the weight, its
  // gradient, float32 master copy (mixed precision) and optimizer states; ZeRO-1 shards the
  // master and states over the data-parallel replicas, ZeRO-2 the gradient too; MindSpore's
  // optimizer parallel (level 1) the weight, master and states.
  double bytesPerElement(const Config& c) const {
    const double weight = weightBytes(), gradient = weight;
    // The replicas of a weight: data and context ranks (Megatron's distributed optimizer shards
    // over both).
    double dp = static_cast<double>(c.dims.dp * c.dims.cp);
    if (c.optimizerLevel > 0) return (weight + masterAndStateBytes()) / dp + gradient;
    return weight + gradient / (c.zeroStage >= 2 ? dp : 1.0) + masterAndStateBytes() / (c.zeroStage >= 1 ? dp : 1.0);
  }
  // A trained element's weight (its gradient the same), and its float32 master copy (mixed
  // precision) with the optimizer's states.
  double weightBytes() const { return options_.precision != Precision::Fp32 ? 2 : 4; }
  double masterAndStateBytes() const {
    return (options_.precision != Precision::Fp32 ? 4 : 0) +
           optimizerStateBytesPerElement(options_.optimizer, options_.precision);
  }

  // A stage's parameters with their step state: `trained` elements at bytesPerElement, but under
  // optimizer parallel only the `sharded` elements (of which a rank holds `shardHeld`) have their
  // weight, master copy and states split.
  double residentBytes(const Config& c, double trained, double sharded, double shardHeld) const {
    if (c.optimizerLevel == 0) return trained * bytesPerElement(c);
    return (weightBytes() + masterAndStateBytes()) * (trained - sharded + shardHeld) + weightBytes() * trained;
  }

  // The model's own checkpoints (`recompute:`, an op's `recompute: true`) are kept as they are:
  // every plan recomputes them. Every op of every layer marked is full recompute; other marks
  // are estimated as selective (some of each layer's forward again, its other activations
  // kept), and the plans compiled whole time them exactly.
  void readGivenRecompute() {
    int64_t marked = 0, layerOps = 0, layerMarked = 0;
    for (OpId id : graph_.order) {
      const Op& op = graph_.op(id);
      if (op.inserted()) continue;
      const bool inLayer = layers_.slot[id] >= 0 && layers_.slot[id] < layers_.count;
      const bool recomputed = std::as_const(op).annotation->recompute;
      layerOps += inLayer, marked += recomputed, layerMarked += inLayer && recomputed;
    }
    if (marked == 0) return;
    givenRecompute_ = layerMarked == layerOps ? Recompute::Full : Recompute::Selective;
    givenRecomputeOps_ = marked;
  }

  // What the model gave that the search keeps, in the model's words (explain --search, the report).
  std::vector<std::string> givenSettings() const {
    std::vector<std::string> out;
    if (options_.given.zeroStage) out.push_back(fmt::format("zero_stage {}", options_.zeroStage));
    if (options_.given.optimizerLevel)
      out.push_back(options_.parallelOptimizerLevel > 0
                        ? fmt::format("enable_parallel_optimizer (level {})", options_.parallelOptimizerLevel)
                        : "enable_parallel_optimizer false");
    if (options_.given.microBatches) out.push_back(fmt::format("micro_batches {}", options_.microBatches));
    if (givenRecompute_) out.push_back(fmt::format("recompute ({} ops checkpointed)", givenRecomputeOps_));
    if (options_.pipelineScheduleGiven)
      out.push_back(fmt::format("pipeline_schedule {}", pipelineScheduleName(options_.pipelineSchedule)));
    return out;
  }

  void enumerate() {
    const int64_t n = options_.deviceNum;
    for (int64_t tp : divisorsOf(n)) {
      if (tp > cluster_.domainDevices()) {
        unsplittable_.push_back(fmt::format("TP {} spans more than an NVLink domain's {} devices", tp, cluster_.domainDevices()));
        break;
      }
      for (int64_t pp : divisorsOf(n / tp)) {
        if (pp > layers_.count) {
          unsplittable_.push_back(fmt::format("PP {} is more stages than the {} layers", pp, layers_.count));
          break;
        }
        for (int64_t cp : contextParallelChoices(n / tp / pp)) enumerateMesh(tp, pp, cp);
      }
    }
  }

  // Context parallelism splits what no other dimension can, one sequence's attention, whose
  // work and memory grow as S^2 against the rest of the layer's S x H: it is considered for
  // long sequences, S >= H (attention's quadratic FLOPs at least a sixth of the layer's:
  // Megatron's 1 + S/6H), where attention is there to split, each sequence's 2 x CP chunks (the
  // causal balance Llama 3 and Megatron use) divide it, and there are no experts (their dispatch
  // groups are the data-parallel ranks'). Shorter sequences leave the ranks to data parallelism,
  // which splits the same tokens without gathering keys and values each layer.
  std::vector<int64_t> contextParallelChoices(int64_t ranks) const {
    const bool longSequences = attentionProducts_ && experts_ == 0 && sequence_ > 0 && sequence_ >= hidden_;
    std::vector<int64_t> out;
    for (int64_t cp : divisorsOf(ranks))
      if (cp == 1 || (longSequences && sequence_ % (2 * cp) == 0)) out.push_back(cp);
    return out;
  }

  // One mesh: the data-parallel degree the others leave, its optimizer sharding, expert
  // parallelism and micro-batching.
  void enumerateMesh(int64_t tp, int64_t pp, int64_t cp) {
    int64_t dp = options_.deviceNum / tp / pp / cp;
    if (batch_ % dp != 0) {
      unsplittable_.push_back(fmt::format("DP {} (with TP {}, PP {}{}) does not divide the step's batch of {}", dp, tp, pp,
                                          cp > 1 ? fmt::format(", CP {}", cp) : "", batch_));
      return;
    }
    for (auto [zeroStage, level] : {std::pair{0, 0}, {1, 0}, {2, 0}, {0, 1}}) {
      // A ZeRO stage or optimizer parallel the model gives is kept (its level as given).
      if (options_.given.zeroStage && zeroStage != options_.zeroStage) continue;
      if (options_.given.optimizerLevel && (level > 0) != (options_.parallelOptimizerLevel > 0)) continue;
      if (level > 0 && options_.given.optimizerLevel) level = options_.parallelOptimizerLevel;
      if ((zeroStage > 0 || level > 0) && dp * cp == 1) continue;
      for (int64_t ep : expertParallelChoices(dp, tp)) {
        Config base;
        base.dims.tp = tp, base.dims.pp = pp, base.dims.dp = dp, base.dims.ep = ep, base.dims.cp = cp, base.zeroStage = zeroStage,
        base.optimizerLevel = level;
        // The lower bound: every parameter once over the tensor and pipeline ranks (the
        // experts' once over the expert ranks too).
        double trained = totalTrained_ - expertElements_ * (1 - 1.0 / static_cast<double>(ep));
        double floor = trained / static_cast<double>(tp * pp) * bytesPerElement(base);
        for (int64_t mbs : divisorsOf(batch_ / dp)) {
          // With context parallelism a micro-batch is one sequence (its chunks are what the
          // ranks share; Megatron's and Llama 3's long-context runs use micro-batch 1).
          if (mbs > kMaxMicroBatchSize || (cp > 1 && mbs > 1)) break;
          base.mbs = mbs, base.micro = batch_ / dp / mbs;
          if (options_.given.microBatches && base.micro != options_.microBatches) continue;
          addVariants(base, floor);
        }
      }
    }
  }

  // Expert parallelism for a model with grouped experts: none, or the experts over the most
  // data-parallel ranks that divide them and keep the group (with its TP ranks) within a node,
  // where the AlltoAll runs over NVLink (Megatron-Core's and DeepSeek's intra-node EP groups);
  // a model without experts, none.
  std::vector<int64_t> expertParallelChoices(int64_t dp, int64_t tp) const {
    int64_t most = 1;
    for (int64_t ep : divisorsOf(dp))
      if (experts_ > 0 && experts_ % ep == 0 && ep * tp <= cluster_.domainDevices()) most = ep;
    return most > 1 ? std::vector<int64_t>{1, most} : std::vector<int64_t>{1};
  }

  // One mesh, optimizer sharding and micro-batching with each stage split, sequence parallelism
  // and recompute; those whose parameters alone exceed the budget (`floor`) are only counted.
  // With pipeline stages, the interleaved schedule's virtual stages too: v of 2, 4, 8 where the
  // micro-batches are a multiple of the stages (Megatron's condition) and every virtual stage
  // gets a layer.
  void addVariants(const Config& base, double floor) {
    for (int64_t v : {1, 2, 4, 8}) {
      if (v > 1 && (base.dims.pp == 1 || base.micro % base.dims.pp != 0 || base.dims.pp * v > layers_.count)) continue;
      // A schedule the model names is kept: the interleaved one needs virtual stages, the others
      // run one chunk a stage.
      if (options_.pipelineScheduleGiven && base.dims.pp > 1 &&
          (options_.pipelineSchedule == PipelineSchedule::Interleaved) != (v > 1))
        continue;
      // The schedule: the model's if it names one; else with one chunk a stage 1F1B or
      // zero-bubble (ZB-H1: the same peak on the first stage, less bubble), interleaved with more.
      std::vector<PipelineSchedule> schedules = {options_.pipelineSchedule};
      if (!options_.pipelineScheduleGiven && base.dims.pp > 1 && v == 1 && options_.training)
        schedules = {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubble};
      for (PipelineSchedule schedule : schedules)
        for (bool weighted : {false, true})
          for (bool sp : {false, true})
            for (Recompute r : kRecomputes) {
              // (Sequence parallelism with context parallelism is not planned: their token splits
              // would have to nest.)
              if ((sp && (base.dims.tp == 1 || base.dims.cp > 1)) || (weighted && base.dims.pp == 1)) continue;
              if (givenRecompute_ && r != *givenRecompute_) continue;
              ++considered_;
              if (!fits(floor)) {
                ++pruned_;
                continue;
              }
              Config c = base;
              c.dims.v = v, c.weightedSplit = weighted, c.dims.sp = sp, c.recompute = r, c.schedule = schedule;
              // Recompute per stage (MindFormers' per-stage layer counts, SAPP's and hyper-parallel's
              // per-stage search): under a budget, with stages, the stages that fit without it run
              // none — faster each, and 1F1B's later stages hold fewer micro-batches. Not where the
              // model gives its checkpoints; zero-bubble holds P micro-batches on every stage.
              c.recomputeWhereNeeded = r != Recompute::None && base.dims.pp > 1 && !givenRecompute_ && bound_ > 0 &&
                                       schedule != PipelineSchedule::ZeroBubble;
              configs_.push_back(c);
            }
    }
  }

  // --- the layer model ---

  const LayerModel* modelFor(int64_t tp, int64_t mbs, bool sp, int64_t ep, int64_t cp) {
    auto key = std::make_tuple(tp, mbs, sp, ep, cp);
    auto it = models_.find(key);
    // Past the time limit no new layer model is made (the configurations needing one drop out).
    if (it == models_.end() && probes_ > 0 && timeUp(modelSeconds_ / static_cast<double>(probes_))) return nullptr;
    if (it == models_.end()) {
      const double before = elapsed();
      it = models_
               .emplace(key, buildLayerModel(graph_, options_, layers_, {.dp = ep, .tp = tp, .cp = cp, .ep = ep, .sp = sp}, mbs,
                                             attention_, compile_))
               .first;
      if (it->second) ++probes_, modelSeconds_ += elapsed() - before;
    }
    return it->second ? &*it->second : nullptr;
  }

  // --- a configuration from its layer model ---

  // Each stage's micro-batch as the zero-bubble schedule's passes: forward, input gradient, weight gradient.
  struct StagePasses {
    double forward = 0, backward = 0, weight = 0;
  };
  // A stage's figures: one micro-batch's time and passes, the step's exposed sync, update and casts, its peaks.
  struct StageFigures {
    double seconds = 0, exposedSync = 0, update = 0, casts = 0, peak = 0;
    double peakWithoutRecompute = 0;  // the same stage's peak with none
    StagePasses passes;
  };

  // Stage `s`'s micro-batch and peak under recompute mode `r` (its layers'), its transfers of
  // `p2p` seconds each.
  StageFigures stageFigures(const Config& c, int64_t s, Recompute r, double p2p) const {
    const LayerModel& m = *c.model;
    const double gradientBytes = weightBytes();
    const bool selective = r == Recompute::Selective, full = r == Recompute::Full;
    StageFigures f;
    double compute = 0, comm = 0, forward = 0, backward = 0, trained = 0, layersHere = 0, stageCasts = 0, weight = 0;
    std::map<int64_t, double> gradients;  // trained elements by their reduction group in the trial
    // Optimizer parallel: the elements it shards, and their share a rank holds and updates.
    double sharded = 0, shardHeld = 0;
    auto add = [&](int32_t slot, bool layer) {
      double again = layer ? (full ? m.compute[slot] : selective ? m.recomputeSelective[slot] : 0) : 0;
      double againComm = layer ? (full ? m.comm[slot] : selective ? m.commSelective[slot] : 0) : 0;
      compute += m.compute[slot] + m.backward[slot] + again;
      forward += m.compute[slot];
      comm += 2 * m.comm[slot] + againComm;
      backward += m.backward[slot] + again;
      weight += m.weightGradient[slot];
      trained += m.trained[slot];
      stageCasts += m.weightCasts[slot];
      for (const auto& [ranks, elements] : m.gradientElements[slot]) gradients[ranks] += elements;
      if (c.optimizerLevel == 0) return;
      // Each shardable weight gathered for each micro-batch's forward (again for a layer's
      // full recompute) and its gradient reduce-scattered after the backward, one collective
      // each (the compile's redistribution).
      const double passes = layer && full ? 3 : 2;
      for (const LayerModel::OptimizerShard& w : m.optimizerShards[slot]) {
        const int64_t ways = w.replicas * c.dims.dp / c.dims.ep;
        if (ways <= 1 || w.dim0 % ways != 0) continue;
        const double part = w.elements / static_cast<double>(ways);
        comm += passes * optimizerGatherSeconds(c, ways, part * gradientBytes);
        if (!w.firstReader) continue;
        gradients[w.replicas] -= w.elements;
        sharded += w.elements, shardHeld += part;
      }
    };
    for (int64_t l = 0; l < layers_.count; ++l)
      if (c.layerStage[l] % c.dims.pp == s) {
        add(static_cast<int32_t>(l), true);
        layersHere += 1;
      }
    if (s == 0) add(layers_.pre(), false);
    if (s == c.dims.pp - 1) add(layers_.post(), false);
    // A micro-batch crosses each virtual-stage boundary once: stage s receives at the start of
    // each of its v chunks (but the first stage's first) and sends at each end (but the last's).
    // Interleaved, each hides behind the next chunk's forward (activations) or backward
    // (gradients) as far as it can (exposedTransferSeconds).
    const double chunks = static_cast<double>(c.dims.v);
    comm += static_cast<double>(s > 0 ? c.dims.v : c.dims.v - 1) * exposedTransferSeconds(p2p, backward / chunks, c.dims.v);
    comm += static_cast<double>(s < c.dims.pp - 1 ? c.dims.v : c.dims.v - 1) *
            exposedTransferSeconds(p2p, forward / chunks, c.dims.v);
    f.seconds = compute + comm;
    f.passes = {forward + comm / 2, compute - forward - weight + comm / 2, weight};
    // (What optimizer parallel shards is reduced with each micro-batch above.)
    double sync = gradientSyncSeconds(c, gradients, gradientBytes);
    // ZeRO's ReduceScatter hides behind the last backward, its AllGather behind the next
    // forward (cost/step_schedule.cc, the compile's estimate).
    const bool zero = c.zeroStage > 0 && c.optimizerLevel == 0;
    f.exposedSync =
        zero ? std::max(0.0, sync / 2 - backward) + std::max(0.0, sync / 2 - forward) : std::max(0.0, sync - backward);
    // The elements a rank updates: ZeRO's shard of all of them over DP x CP; optimizer
    // parallel's shards and the weights it leaves whole.
    double updated = c.optimizerLevel > 0 ? trained - sharded + shardHeld
                     : c.zeroStage > 0    ? trained / static_cast<double>(c.dims.dp * c.dims.cp)
                                          : trained;
    f.update = updated * optimizerBytes() / (cluster_.device.hbmBandwidth * cluster_.memoryEfficiency);
    f.casts = stageCasts;
    // Memory: the stage's parameters with their step state, the saved activations of the
    // micro-batches 1F1B keeps in flight, and what is live on top at the peak.
    ParallelSettings schedule;
    schedule.pipelineStages = c.dims.pp, schedule.microBatches = c.micro, schedule.virtualStages = c.dims.v;
    schedule.pipelineSchedule = c.schedule;  // GPipe holds every micro-batch, zero-bubble min(P, M) on every stage
    double inFlight = inFlightMicroBatches(s, schedule);
    const double held = residentBytes(c, trained, sharded, shardHeld) + trained * m.quantizedWeightsPerTrained;
    f.peak = held + inFlight * layersHere * m.savedPerLayer[static_cast<int>(r)] + m.transient[static_cast<int>(r)];
    f.peakWithoutRecompute = held + inFlight * layersHere * m.savedPerLayer[0] + m.transient[0];
    return f;
  }

  // The pipeline's bubble over the slowest stage's back-to-back micro-batches.
  double pipelineBubble(const Config& c, double slowest, double stagesTogether,
                        const std::vector<StagePasses>& stagePasses) const {
    const double micro = static_cast<double>(c.micro);
    // The slowest stage runs its micro-batches back to back; the first micro-batch's forward
    // reaches it through the stages before it and the last's backward leaves through them, and
    // it waits on the round trip through those after it: one micro-batch of every other stage,
    // a chunk's (a v-th) interleaved. Even stages: 1F1B's P - 1 idle slots, interleaved
    // (P - 1) / v (Narayanan et al. 2021); the compile runs the schedule itself
    // (cost/step_schedule.cc).
    // Zero-bubble (ZB-H1): how much of the weight gradients' time fills the bubble depends on the
    // micro-batches and how uneven the stages are ((P - 1)(F + B - W) against 1F1B's
    // (P - 1)(F + B + W) only with even stages and many micro-batches): its order is run through
    // with each stage's passes (plan/pipeline_order.h, as the compile runs it), the
    // communication split evenly between the forward and the backward.
    double bubble = (stagesTogether - slowest) / static_cast<double>(c.dims.v);
    if (traitsOf(c.schedule).splitsWeightGradient) {
      // (Configurations that differ only where the stages' passes do not, ZeRO's stage or the
      // weighted split giving the same layers, run the same order: run once.)
      std::vector<double> key = {static_cast<double>(c.dims.pp), static_cast<double>(c.micro)};
      for (const StagePasses& st : stagePasses) key.insert(key.end(), {st.forward, st.backward, st.weight});
      auto [it, fresh] = zeroBubbleSpans_.try_emplace(std::move(key), 0.0);
      if (fresh) {
        PassSeconds passes;
        for (const StagePasses& st : stagePasses) {
          passes.forward.push_back({st.forward});
          passes.backward.push_back({st.backward});
          passes.weight.push_back({st.weight});
        }
        it->second = runPipeline(c.schedule, c.dims.pp, c.micro, 1, true, passes).span;
      }
      bubble = std::max(0.0, it->second - micro * slowest);
    }
    return bubble;
  }

  void estimate(Config& c) const {
    const LayerModel& m = *c.model;
    const double micro = static_cast<double>(c.micro);
    const int64_t stageDevices = c.dims.dp * c.dims.cp * c.dims.tp;
    double p2p = 0;
    if (c.dims.pp > 1)
      for (double bytes : m.boundaryMessages)
        p2p += collectiveSeconds(CollectiveKind::PointToPoint, bytes, pairSpan(stageDevices, cluster_.domainDevices()), cluster_);
    double slowest = 0, stagesTogether = 0, exposedSync = 0, update = 0, casts = 0, peak = 0;
    std::vector<StagePasses> stagePasses;
    // Recompute where needed: a stage that fits without it (the later stages of 1F1B, which hold
    // fewer micro-batches) runs none, with the layer model's margin below the budget.
    c.stageRecompute.assign(static_cast<size_t>(c.dims.pp), c.recompute != Recompute::None);
    for (int64_t s = 0; s < c.dims.pp; ++s) {
      StageFigures f = stageFigures(c, s, c.recompute, p2p);
      if (c.recomputeWhereNeeded && f.peakWithoutRecompute <= bound_ * kModelMargin)
        f = stageFigures(c, s, Recompute::None, p2p), c.stageRecompute[s] = false;
      slowest = std::max(slowest, f.seconds);
      stagesTogether += f.seconds;
      if (traitsOf(c.schedule).splitsWeightGradient) stagePasses.push_back(f.passes);
      exposedSync = std::max(exposedSync, f.exposedSync);
      update = std::max(update, f.update);
      casts = std::max(casts, f.casts);
      peak = std::max(peak, f.peak);
    }
    const double bubble = pipelineBubble(c, slowest, stagesTogether, stagePasses);
    c.seconds = micro * slowest + bubble + exposedSync + update + casts;
    c.modelSeconds = c.seconds;
    c.peak = peak;
    // Full recompute runs the forward once more on the layers it recomputes.
    double recomputed = 0;
    if (c.recompute == Recompute::Full)
      for (int64_t l = 0; l < layers_.count; ++l) recomputed += c.stageRecompute[c.layerStage[l] % c.dims.pp] ? 1 : 0;
    const double hardware =
        micro * static_cast<double>(c.dims.dp) * m.flops * (3 + recomputed / static_cast<double>(layers_.count));
    c.tflops = c.seconds > 0 ? hardware / c.seconds / static_cast<double>(options_.deviceNum * 1) / 1e12 : 0;
  }

  double optimizerBytes() const { return optimizerUpdateBytesPerElement(options_.optimizer, options_.precision); }

  // A stage's gradient reduction, one bucketed AllReduce per reduction group as the compile
  // makes them. The layer model's trial ran the TP x EP x CP ranks with EP as its data ranks:
  // each group of r trial ranks spans r x DP / EP here, the data ranks outermost (a group wider
  // than DP x CP takes in TP's ranks, innermost).
  double gradientSyncSeconds(const Config& c, const std::map<int64_t, double>& gradients, double elementBytes) const {
    double seconds = 0;
    for (const auto& [trialRanks, elements] : gradients) {
      if (trialRanks * c.dims.dp / c.dims.ep <= 1 || elements <= 0) continue;
      seconds += gradientReductionSeconds(elements * elementBytes, elementBytes, replicaSpan(c, trialRanks), cluster_);
    }
    return seconds;
  }
  // Optimizer parallel's gather of a weight split `ways` ways over its replicas, `partBytes` a rank:
  // one AllGather per mesh axis of the replicas ([DP, CP, TP], the inner first), as the compile's
  // redistribution gathers them (a norm's over TP too; an expert's over DP / EP).
  double optimizerGatherSeconds(const Config& c, int64_t ways, double partBytes) const {
    const int64_t replicas = c.dims.dp * c.dims.cp;
    const int64_t tpPart = ways > replicas && ways % c.dims.tp == 0 ? c.dims.tp : 1;
    const int64_t cpPart = (ways / tpPart) % c.dims.cp == 0 ? c.dims.cp : 1, dpPart = ways / tpPart / cpPart;
    const DeviceMatrix mesh = DeviceMatrix::unnamed({c.dims.dp, c.dims.cp, c.dims.tp});
    double seconds = 0, bytes = partBytes;
    for (auto [axis, part] : {std::pair{2, tpPart}, {1, cpPart}, {0, dpPart}}) {
      if (part <= 1) continue;
      seconds += collectiveSeconds(CollectiveKind::AllGather, bytes, groupSpan(mesh, {axis}, cluster_.domainDevices()), cluster_);
      bytes *= static_cast<double>(part);
    }
    return seconds;
  }
  // The devices of a weight's replicas, `trialRanks` of them in the layer model's trial: r x DP / EP
  // here, the data ranks outermost.
  GroupSpan replicaSpan(const Config& c, int64_t trialRanks) const {
    const int64_t ranks = trialRanks * c.dims.dp / c.dims.ep;
    const int64_t replicas = c.dims.dp * c.dims.cp, stageDevices = replicas * c.dims.tp;
    return ranks > replicas && ranks % replicas == 0 && stageDevices % ranks == 0
               ? groupSpan(DeviceMatrix::unnamed({replicas, stageDevices / ranks, ranks / replicas}), {0, 2},
                           cluster_.domainDevices())
               : groupSpan(DeviceMatrix::unnamed({ranks, std::max<int64_t>(1, stageDevices / ranks)}), {0},
                           cluster_.domainDevices());
  }

  // --- a configuration compiled whole ---

  struct Prepared {
    Graph graph;
    CompileOptions options;
    Config* config = nullptr;
  };

  // The fastest configurations by the layer model, compiled whole in that order until enough
  // fit or the time limit falls: the fastest that fits by its compile.
  std::optional<Prepared> compileFastest(int& compiled) {
    std::optional<Prepared> best;
    for (size_t i = 0; i < configs_.size(); ++i) {
      Config& c = configs_[i];
      if (!mayFit(c.peak) && !options_.searchCompilesEverything) continue;
      // Past the time limit the search stops at the first plan that fits: it says what it left.
      if (best && compiled >= kCompiled && !options_.searchCompilesEverything) break;
      if (best && timeUp(compileSeconds_ / static_cast<double>(std::max(1, compiled)))) {
        for (size_t j = i; j < configs_.size() && compiled + uncompiled_ < kCompiled; ++j)
          uncompiled_ += mayFit(configs_[j].peak) ? 1 : 0;
        break;
      }
      ++compiled;
      const double before = elapsed();
      auto prepared = prepare(c);
      const bool ok = prepared && compileWhole(*prepared, c);
      compileSeconds_ += elapsed() - before;
      if (!ok) continue;
      if (fits(c.peak) && (!best || c.seconds < best->config->seconds)) best = std::move(prepared);
    }
    return best;
  }

  std::optional<Prepared> prepare(Config& c) const {
    Prepared p{graph_, options_, &c};
    if (splitBatch(p.graph, c.dims.dp * c.mbs) || seedTensorParallel(p.graph, c.dims)) return std::nullopt;
    if (!givenRecompute_) {
      clearRecompute(p.graph);
      std::vector<bool> recomputed(static_cast<size_t>(layers_.count), true);
      for (int64_t l = 0; l < layers_.count && !c.stageRecompute.empty(); ++l)
        recomputed[l] = c.stageRecompute[c.layerStage[l] % c.dims.pp];
      markRecompute(p.graph, layers_, c.recompute, attention_, &recomputed);
    }
    for (OpId id : p.graph.order) {
      Op& op = p.graph.op(id);
      int32_t slot = layers_.slot[id];
      int64_t virtualStage = slot == layers_.pre() ? 0 : slot == layers_.post() ? c.dims.pp * c.dims.v - 1 : c.layerStage[slot];
      op.stage = static_cast<int32_t>(virtualStage % c.dims.pp);
      op.chunk = static_cast<int32_t>(virtualStage / c.dims.pp);
    }
    CompileOptions& o = p.options;
    o = searchCompileOptions(options_, c.dims.dp * c.dims.cp * c.dims.tp);
    o.pipelineStages = c.dims.pp;
    o.virtualStages = c.dims.v;
    o.pipelineSchedule = c.dims.v > 1 ? PipelineSchedule::Interleaved : c.schedule;
    o.microBatches = c.micro;
    o.parallelOptimizerLevel = c.optimizerLevel;
    o.zeroStage = c.zeroStage;
    o.memoryBudget = options_.memoryBudget;
    o.enableAlltoall = o.enableAlltoall || c.dims.ep > 1;  // the tokens to their experts and back
    return p;
  }

  bool compileWhole(const Prepared& p, Config& c) {
    Graph g = p.graph;
    DiagnosticEngine quiet("search", "");
    PassContext context{quiet};
    if (compile_(g, p.options, context) != RunOutcome::Ok) return false;
    auto step = estimateClusterStep(g, p.options);
    if (!step) return false;
    RankPeaks peaks = fullestRankPeaks(g, p.options);
    c.seconds = step->total;
    c.tflops = step->tflopsPerDevice;
    c.peak = peaks.steady;
    c.firstStepPeak = peaks.firstStep;
    c.compiled = true;
    return true;
  }

  // Why `c` lost to `chosen`, by one estimate on both sides: the compiled step where both were
  // compiled, else the layer model's (a layer-model figure against a compiled one read as
  // "-0.2 s slower" when the two estimates disagree).
  static std::string slowerVerdict(const Config& c, const Config& chosen, int compiled) {
    if (c.compiled)
      return fmt::format("{:.3g} s slower than the chosen plan, both compiled ({:+.1f}%)", c.seconds - chosen.seconds,
                         100 * (c.seconds / chosen.seconds - 1));
    double delta = c.modelSeconds - chosen.modelSeconds;
    if (delta >= 0)
      return fmt::format("{:.3g} s slower by the layer model, both sides ({:+.1f}%)", delta,
                         100 * (c.modelSeconds / chosen.modelSeconds - 1));
    return fmt::format(
        "{:.3g} s faster by the layer model, not compiled: the search compiled the {} plans its layer model "
        "ranked first that fit, and chose the fastest of those by their compiled estimates",
        -delta, compiled);
  }

  SearchConfiguration described(const Config& c) const {
    SearchConfiguration s;
    s.dims = c.dims;
    s.dims.etp = experts_ > 0 ? c.dims.tp : 1;  // the seeds split the experts over TP (tensor_parallel_seeds.h)
    s.microBatchSize = c.mbs, s.microBatches = c.micro;
    if (c.dims.pp > 1) s.pipelineSchedule = pipelineScheduleName(c.dims.v > 1 ? PipelineSchedule::Interleaved : c.schedule);
    s.recompute = givenRecompute_ && *givenRecompute_ != Recompute::Full ? "given" : recomputeName(c.recompute);
    if (c.recomputeWhereNeeded && std::count(c.stageRecompute.begin(), c.stageRecompute.end(), false) > 0) {
      std::vector<int64_t> on;
      for (int64_t st = 0; st < c.dims.pp; ++st)
        if (c.stageRecompute[st]) on.push_back(st);
      s.recompute = on.empty() ? "none" : fmt::format("{} on stages {}", s.recompute, fmt::join(on, ","));
    }
    s.optimizerLevel = c.optimizerLevel;
    s.zeroStage = c.zeroStage;
    for (int64_t st = 0; st < c.dims.pp; ++st) {
      int64_t n = 0;
      for (int64_t l = 0; l < layers_.count; ++l) n += c.layerStage[l] % c.dims.pp == st;
      s.stageLayers.push_back(n);
    }
    s.stepSeconds = c.seconds, s.tflopsPerDevice = c.tflops, s.peakBytes = c.peak, s.compiled = c.compiled;
    s.layerModelSeconds = c.modelSeconds;
    return s;
  }

  void apply(Prepared best, int compiled) {
    const Config& chosen = *best.config;
    auto summary = std::make_shared<SearchSummary>();
    summary->status = unestimated_ > 0 || uncompiled_ > 0 ? "time_limit" : "structural";
    summary->objective = chosen.seconds;
    summary->timeLimit = options_.searchTimeLimit;
    summary->memoryBudget = bound_;
    summary->estimatedPeak = chosen.peak;
    ConfigurationSearch account;
    account.chosen = described(chosen);
    account.chosen.verdict =
        fmt::format("chosen: the fastest that fits by its compiled estimate, of the {} plans compiled", compiled);
    // The runners-up: those that fit first (by step), then the faster ones that do not.
    std::vector<const Config*> others;
    for (const Config& c : configs_)
      if (&c != &chosen) others.push_back(&c);
    std::stable_sort(others.begin(), others.end(), [&](const Config* a, const Config* b) {
      return std::make_pair(!fits(a->peak), a->seconds) < std::make_pair(!fits(b->peak), b->seconds);
    });
    // A configuration that differs from one listed only where it changes nothing (a weighted
    // split giving the same layers per stage) is the same plan: listed once.
    auto planKey = [](const SearchConfiguration& d) {
      return std::make_tuple(d.dims.dp, d.dims.tp, d.dims.pp, d.dims.cp, d.dims.ep, d.dims.v, d.pipelineSchedule,
                             d.microBatchSize, d.microBatches, d.dims.sp, d.recompute, d.optimizerLevel, d.zeroStage,
                             d.stageLayers);
    };
    std::set<decltype(planKey(account.chosen))> listed{planKey(account.chosen)};
    for (const Config* other : others) {
      const Config& c = *other;
      // (The tests' oracle lists every plan it compiled, to hold each to its layer model.)
      if (account.alternatives.size() >= 5 && !options_.searchCompilesEverything) break;
      SearchConfiguration s = described(c);
      if (!listed.insert(planKey(s)).second) continue;
      if (!fits(c.peak))
        s.verdict = fmt::format("needs {:.1f} GiB{}, over {}", c.peak / kGiB,
                                c.compiled && c.firstStepPeak < c.peak
                                    ? fmt::format(" from the second step on (the first step {:.1f} GiB)", c.firstStepPeak / kGiB)
                                    : "",
                                boundText());
      else s.verdict = slowerVerdict(c, chosen, compiled);
      account.alternatives.push_back(std::move(s));
    }
    account.considered = considered_;
    account.prunedByMemory = pruned_;
    account.probes = probes_;
    account.compiledPlans = compiled;
    account.unestimated = unestimated_;
    account.uncompiled = uncompiled_;
    account.layers = layers_.count;
    account.given = givenSettings();
    summary->configuration = std::move(account);
    CompileOptions o = best.options;
    // The caller's wishes that are not the search's stay theirs.
    o.stopAfter = options_.stopAfter;
    o.passes = options_.passes;
    o.ranks = options_.ranks;
    o.globalRank = options_.globalRank;
    o.searchTimeLimit = options_.searchTimeLimit;
    graph_ = std::move(best.graph);
    graph_.search = std::move(summary);
    options_ = std::move(o);
  }

  Graph& graph_;
  CompileOptions& options_;
  DiagnosticEngine& diags_;
  TrialCompile compile_;  // a copy: the caller may hand a temporary
  const ClusterDescription& cluster_;
  const double bound_;  // memoryBound(options_)
  Clock::time_point start_;
  LayerMap layers_;
  int64_t batch_ = 0;
  std::vector<bool> attention_;
  double totalTrained_ = 0;
  int64_t experts_ = 0;        // the grouped experts' count (0: no experts)
  double expertElements_ = 0;  // their weights' elements
  std::vector<Config> configs_;
  std::optional<Recompute> givenRecompute_;  // the model's checkpoints, kept (readGivenRecompute)
  int64_t givenRecomputeOps_ = 0;
  int64_t sequence_ = 0;            // the tokens a sequence holds (0: no lookup of token ids found)
  int64_t hidden_ = 0;              // the lookup's hidden size
  bool attentionProducts_ = false;  // context parallelism splits their queries
  std::map<std::tuple<int64_t, int64_t, bool, int64_t, int64_t>, std::optional<LayerModel>> models_;
  int64_t considered_ = 0, pruned_ = 0, probes_ = 0;
  mutable std::map<std::vector<double>, double> zeroBubbleSpans_;  // zero-bubble's span by (P, M, each stage's passes)
  double modelSeconds_ = 0, compileSeconds_ = 0;                   // spent building layer models, compiling plans whole
  std::vector<std::string> unsplittable_;                          // why each mesh that could not split the model was left out
  // What search_time_limit left unexplored: configurations without a layer model (so without an
  // estimate), and candidates among the kCompiled best that were not compiled.
  int64_t unestimated_ = 0, uncompiled_ = 0;
};

}  // namespace

namespace {

ConfigurationSearchOutcome searchOnce(Graph& graph, CompileOptions& options, DiagnosticEngine& diags,
                                      const TrialCompile& compile) {
  if (options.searchMode != SearchMode::Auto || !options.cluster || !options.training || options.pipelineStages > 1 ||
      (options.microBatches > 1 && !options.given.microBatches))
    return ConfigurationSearchOutcome::NotApplicable;
  for (const Op& op : graph.ops)
    if (!op.inserted() && std::as_const(op).annotation->configured()) return ConfigurationSearchOutcome::NotApplicable;
  return Search(graph, options, diags, compile).run();
}

// precision: auto. A recipe changes every layer's time and bytes (its GEMMs' peak, its casts, what
// is saved and held), so each candidate gets a whole search of its own; the fastest plan that
// fits is kept, and the account lists each recipe's step.
ConfigurationSearchOutcome searchPrecisions(Graph& graph, CompileOptions& options, DiagnosticEngine& diags,
                                            const TrialCompile& compile) {
  const std::vector<Precision> candidates =
      options.cluster ? autoPrecisionCandidates(*options.cluster) : std::vector<Precision>{};
  struct Tried {
    Graph graph;
    CompileOptions options;
    DiagnosticEngine diags;
    ConfigurationSearchOutcome outcome;
  };
  std::optional<Tried> best, first;
  std::vector<std::pair<std::string, double>> steps;
  for (Precision p : candidates) {
    Tried t{graph, options, DiagnosticEngine(diags.fileName(), ""), ConfigurationSearchOutcome::NotApplicable};
    t.options.precision = p;
    t.outcome = searchOnce(t.graph, t.options, t.diags, compile);
    if (t.outcome == ConfigurationSearchOutcome::NotApplicable) break;
    const bool applied = t.outcome == ConfigurationSearchOutcome::Applied;
    const double seconds = applied ? t.graph.search->configuration->chosen.stepSeconds : 0;
    steps.emplace_back(precisionName(p), seconds);
    if (applied && (!best || seconds < best->graph.search->configuration->chosen.stepSeconds)) best = std::move(t);
    else if (!first) first = std::move(t);
  }
  if (steps.empty()) {
    diags.error(options.settingsLoc,
                "precision: auto is the structural search's choice (search_mode: auto with a cluster, in training, "
                "without pipeline settings or configured ops, over a model of repeated layers); this compile runs "
                "none: give a precision (valid: " +
                    fmt::format("{}", fmt::join(precisionNames(), ", ")) + ")");
    return ConfigurationSearchOutcome::Failed;
  }
  Tried& kept = best ? *best : *first;
  for (const Diagnostic& d : kept.diags.diagnostics()) diags.report(d);
  if (kept.outcome == ConfigurationSearchOutcome::Applied) {
    // (The account is shared by the graph's copies: this one gets its own.)
    auto summary = std::make_shared<SearchSummary>(*kept.graph.search);
    summary->configuration->precisions = steps;
    summary->configuration->precision = precisionName(kept.options.precision);
    kept.graph.search = std::move(summary);
  }
  graph = std::move(kept.graph);
  options = std::move(kept.options);
  return kept.outcome;
}

}  // namespace

ConfigurationSearchOutcome runConfigurationSearch(Graph& graph, CompileOptions& options, DiagnosticEngine& diags,
                                                  const TrialCompile& compile) {
  return options.precisionAuto ? searchPrecisions(graph, options, diags, compile) : searchOnce(graph, options, diags, compile);
}

}  // namespace irc

#pragma once
// The model's `parallel` section, typed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/cluster.h"
#include "plan/precision.h"
#include "ir/cost_model.h"
#include "ir/device_matrix.h"
#include "ir/diagnostics.h"
#include "plan/parallel_dims.h"
#include "plan/pipeline_schedule.h"

namespace irc {

enum class SearchMode { ShardingPropagation, FactorPropagation, DataParallel, SemiAuto, Auto };
enum class FactorStrategy { Aggressive, Basic, BasicThenAggressive };
enum class RedistributionMode { MindSpore, Optimal };
// A training step's optimizer: what state it keeps per parameter element.
enum class Optimizer { AdamW, Adam, Sgd, Momentum };
// What becomes of the parameters' gradients between training steps (`gradient_buffer`,
// docs/memory.md): PyTorch frees them (`zero_grad(set_to_none=True)`, its default), Megatron-LM,
// DeepSpeed and MindSpore accumulate into a buffer that lives for the whole run.
enum class GradientBuffer { Freed, Persistent };
// How the optimizer's update runs (`optimizer_kernels`): torch's per-parameter loop
// (`foreach=False`: a parameter's update makes two temporaries of its size), torch's foreach
// kernels (one temporary copy of every parameter for Adam's denominator), or one fused kernel
// (apex/Transformer Engine FusedAdam, MindSpore's graph-mode AdamWeightDecay: no temporaries).
enum class OptimizerKernels { ForLoop, Foreach, Fused };

std::string_view searchModeName(SearchMode m);
std::optional<SearchMode> parseSearchMode(std::string_view s);
const std::vector<std::string>& searchModeNames();
std::string_view factorStrategyName(FactorStrategy s);
std::optional<FactorStrategy> parseFactorStrategy(std::string_view s);
const std::vector<std::string>& factorStrategyNames();
std::string_view redistributionModeName(RedistributionMode m);
std::optional<RedistributionMode> parseRedistributionMode(std::string_view s);
const std::vector<std::string>& redistributionModeNames();
std::string_view optimizerName(Optimizer o);
std::optional<Optimizer> parseOptimizer(std::string_view s);
const std::vector<std::string>& optimizerNames();
// The float32 states an optimizer keeps per parameter element: AdamW/Adam two moments, momentum one.
int optimizerStatesPerElement(Optimizer o);
// Bytes of those states an element holds: float32 moments, or the recipe's (DeepSeek-V3's BF16).
double optimizerStateBytesPerElement(Optimizer o, Precision p);
// Bytes the update reads and writes per trained element (docs/cluster.md): the gradient read,
// the weight and every state read and written; mixed precision and the low-precision recipes
// add the float32 master weight and write the 16-bit copy.
double optimizerUpdateBytesPerElement(Optimizer o, Precision p);
std::string_view gradientBufferName(GradientBuffer b);
std::optional<GradientBuffer> parseGradientBuffer(std::string_view s);
const std::vector<std::string>& gradientBufferNames();
std::string_view optimizerKernelsName(OptimizerKernels k);
std::optional<OptimizerKernels> parseOptimizerKernels(std::string_view s);
const std::vector<std::string>& optimizerKernelsNames();

// The settings a compile runs with that a model's `parallel` block gives (the command line may
// override some of them in passes/manager/compile_options.h's CompileOptions, which extends this).
struct ParallelSettings {
  // The devices an op's strategy spreads over: all of them, or with pipeline stages one stage's
  // (the model's device_num / pipeline_stages). rankCount() is every rank.
  int64_t deviceNum = 1;
  // Pipeline parallelism (docs/pipeline.md): stages of deviceNum ranks each (stage s holds ranks
  // s * deviceNum .. (s + 1) * deviceNum - 1), micro-batches per step, and `stages: auto`.
  int64_t pipelineStages = 1;
  int64_t microBatches = 1;
  // The interleaved pipeline (`virtual_stages` v; Megatron's virtual pipeline, MindSpore's
  // pipeline_interleave): the model is cut into P * v virtual stages, virtual stage k running on
  // pipeline stage k mod P as its model chunk k / P (Op::stage, Op::chunk).
  int64_t virtualStages = 1;
  // 1F1B, or the interleaved one with virtual stages, unless the model names another.
  PipelineSchedule pipelineSchedule = PipelineSchedule::OneFOneB;
  bool pipelineScheduleGiven = false;  // the model names it: the structural search keeps it
  // What else the model gives that the structural search would otherwise choose: each is kept
  // (docs/search.md, "What the model fixes").
  struct GivenToSearch {
    bool zeroStage = false;       // zero_stage
    bool optimizerLevel = false;  // enable_parallel_optimizer (with optimizer_level)
    bool microBatches = false;    // micro_batches
  } given;
  // `recompute_layers` (MindFormers' per-stage list; one value: Megatron's uniform
  // --recompute-num-layers): how many layers of each stage, its first, run their forward again
  // before their backward. Empty: what `recompute:` says alone.
  std::vector<int64_t> recomputeLayers;
  bool autoStages = false;
  // What the inputs' leading dimension holds (`input_batch`): one micro-batch (irc's default; the
  // step is micro_batches of it), or the whole step's batch, which the compile splits into
  // micro_batches as MindSpore's PipelineCell does (`input_batch: step`; ops/batch_split.h).
  bool inputsHoldStep = false;
  int64_t rankCount() const { return deviceNum * pipelineStages; }
  // The schedule that runs: the interleaved one exactly when there are virtual stages (the
  // search and config.json set them without naming it).
  PipelineSchedule schedule() const {
    if (virtualStages > 1) return PipelineSchedule::Interleaved;
    return pipelineSchedule == PipelineSchedule::Interleaved ? PipelineSchedule::OneFOneB : pipelineSchedule;
  }
  int64_t globalRank = 0;
  SearchMode searchMode = SearchMode::ShardingPropagation;
  bool fullyUseDevices = true;
  FactorStrategy factorStrategy = FactorStrategy::Aggressive;
  bool enableAlltoall = false;
  RedistributionMode redistribution = RedistributionMode::MindSpore;
  // A training graph: replicated parameters get MindSpore's _MirrorOperator (gradient AllReduce).
  bool training = false;
  Optimizer optimizer = Optimizer::AdamW;  // a training step's (memory estimate)
  // A YAML model trains as MindSpore does (a persistent gradient buffer, a fused update); an
  // ONNX export, or a plan over one, as PyTorch does (onnxDefaultSettings, PlanReader).
  GradientBuffer gradientBuffer = GradientBuffer::Persistent;
  OptimizerKernels optimizerKernels = OptimizerKernels::Fused;
  // MindSpore's optimizer parallel (`enable_parallel_optimizer`, `optimizer_level`): 0 off, else
  // the level (docs/memory.md); parameters under `parallel_optimizer_threshold` KiB stay whole.
  int parallelOptimizerLevel = 0;
  double parallelOptimizerThresholdKiB = 64;
  // ZeRO's stages as DeepSpeed and Megatron-LM's distributed optimizer run them (`zero_stage`;
  // docs/memory.md): 1 shards each parameter's float32 master weight and optimizer states over
  // the ranks holding the same slice of it (its data-parallel replicas), 2 also its gradient;
  // the gradient is reduce-scattered and the updated weight all-gathered once a step (the ring
  // volume of the AllReduce they replace). 0: off. (Sharding the weights themselves, gathered
  // before each use, is MindSpore's optimizer parallel above.)
  int zeroStage = 0;
  // Bytes a rank may hold at its peak (`memory_budget`, `--memory-budget`); 0: no budget.
  double memoryBudget = 0;
  CostModel costModel;
  // The machine (`cluster:`, `--cluster`; docs/cluster.md): with one, plans are timed by its
  // topology and achievable rates instead of the flat cost model.
  std::optional<ClusterDescription> cluster;
  Precision precision = Precision::Fp32;  // `precision`
  // `precision: auto`: the structural search chooses among the device's recipes
  // (autoPrecisionCandidates, plan/device_precision.h); `precision` holds the choice once it is made.
  bool precisionAuto = false;
  // search_mode auto: the solver's time limit in seconds (`--search-time-limit`).
  double searchTimeLimit = 60;
  // A plan's `modules:` as DTensor runs them (the default; `unlisted: propagate` turns it off):
  // an op no style configures takes its layout from what it reads, as DTensor computes on plain
  // or local tensors, never from its consumers; what reads only replicated values is replicated.
  bool modulesAsDTensor = false;
  // The named mesh of layout-style annotations (`device_matrix` + `alias_name`), if given.
  std::optional<DeviceMatrix> mesh;
};

// The model's `parallel` block as written.
// Where a config.json plan's `parallel:` block gave each of its degrees, in MindFormers' words
// (`data_parallel`, `model_parallel`, `expert_parallel`, `context_parallel`, `sequence_parallel`,
// and Megatron's `expert_tensor_parallel`; docs/config-json.md): the graph's builder writes the
// strategies Megatron and MindFormers run for them. An invalid location: not given (the degree
// then ParallelDims' 1, data parallel what fills the devices).
struct DegreeLocations {
  SourceLoc dp, tp, ep, cp, etp, sp;
  bool any() const { return dp.valid() || tp.valid() || ep.valid() || cp.valid() || etp.valid() || sp.valid(); }
};

struct ParallelConfig : ParallelSettings {
  // `strategy_ckpt_load`: a MindSpore strategy checkpoint configuring ops (relative to the model).
  std::string strategyCkptLoad;
  SourceLoc loc;         // the `parallel` mapping
  ParallelDims degrees;  // as given (pipeline stages and virtual stages: ParallelSettings')
  DegreeLocations degreesAt;
};

}  // namespace irc

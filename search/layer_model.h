#pragma once
// The structural search's view of a model of repeated layers (search/configuration_search.h):
// which layer each op belongs to, and one data-parallel replica's micro-batch compiled on the
// tensor-parallel ranks, timed and sized per layer by the cluster's step model — the layer
// model every configuration with that tensor-parallel size and micro-batch is estimated from.
#include <array>
#include <map>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"
#include "search/operator_search.h"

namespace irc {

// The layer a model op belongs to: the index in its module path or name (the first digit run
// followed by '.', '/' or '_': `l3_qkv`, `layers.3.mlp`; or ending a module path: `model.layers.3`),
// or nullopt.
std::optional<int64_t> layerIndexOf(const Graph& graph, const Op& op);

// Where each model op sits: layer ordinal k (0 .. count - 1), or before the first layer (slot
// count), or after the last (slot count + 1).
struct LayerMap {
  std::vector<int32_t> slot;  // per OpId, -1 for inserted ops
  int64_t count = 0;
  int32_t pre() const { return static_cast<int32_t>(count); }
  int32_t post() const { return static_cast<int32_t>(count + 1); }
};
LayerMap findLayers(const Graph& graph);

// Recompute per layer: none, selective (the attention's scores and probabilities, what a fused
// kernel keeps on chip), full (each layer one checkpoint).
enum class Recompute { None, Selective, Full };
inline constexpr std::array<Recompute, 3> kRecomputes = {Recompute::None, Recompute::Selective, Recompute::Full};
const char* recomputeName(Recompute r);
// Marks each layer's ops (`attention`: per value, the selective part's results) as checkpoints;
// clearRecompute takes every mark off.
// `layerMask`: only the layers it marks true (recompute on some stages).
void markRecompute(Graph& graph, const LayerMap& layers, Recompute r, const std::vector<bool>& attention,
                   const std::vector<bool>* layerMask = nullptr);
void clearRecompute(Graph& graph);

// One data-parallel replica's micro-batch on `tp` devices, per slot (layers, before, after).
struct LayerModel {
  std::vector<double> compute, comm, recomputeSelective, commSelective, trained;
  // The backward's kernels, and a low-precision recipe's weight casts once a step
  // (cost/step_cost.h OpTime).
  std::vector<double> backward, weightCasts;
  // The backward's weight gradients (zero-bubble's W: cost/step_cost.h
  // weightGradientSeconds), part of `backward`.
  std::vector<double> weightGradient;
  // Per slot, the trained elements by the size of their gradient's reduction group in the trial
  // (a norm's weight, replicated over TP too, reduces over more ranks than a TP-split projection's
  // and in its own AllReduce, as the compile does).
  std::vector<std::map<int64_t, double>> gradientElements;
  // Per slot, the trained parameters optimizer parallel may shard: those whose whole size reaches
  // parallel_optimizer_threshold (passes/layout_inference.cc, as MindSpore's), each with its
  // replicas in the trial (the ranks it is then split over), its trial slice's elements and the
  // slice's dim 0 (which the shard must divide). Each reader gathers it in its own AllGathers
  // (a tied embedding twice, the later reader from the first one's shard); the first holds its state.
  struct OptimizerShard {
    int64_t replicas = 1;
    double elements = 0;
    int64_t dim0 = 1;
    bool firstReader = true;
  };
  std::vector<std::vector<OptimizerShard>> optimizerShards;
  double quantizedWeightsPerTrained = 0;  // a low-precision recipe's weight copies, bytes a trained element
  double flops = 0;                       // the micro-batch's forward FLOPs on whole shapes
  // What a stage boundary sends per rank, one message a value: what layer 0 hands layer 1, and
  // what layer 1 reads from before the layers (rotary tables), as the compile's transfers are.
  std::vector<double> boundaryMessages;
  // Per recompute mode: activations kept per layer and micro-batch, and what is live on top at the peak.
  std::array<double, 3> savedPerLayer{}, transient{};
};

// The options of a search's compile on `devices` ranks: one stage, one micro-batch, sharding
// propagation from the seeds, through redistribution, no budget.
CompileOptions searchCompileOptions(const CompileOptions& base, int64_t devices);

// The layer model of a replica group's degrees (`group`: its tp, sp, ep, cp, with dp = ep) and
// micro-batch size `mbs`, or nullopt when the shapes do not divide or the compile rejects it. With ep > 1 the
// model is of ep replicas on ep * tp devices (the experts' AlltoAll runs between them); its
// figures stay one rank's, its FLOPs one replica's. With cp > 1 each replica's sequences are split
// over cp context ranks (ep * tp * cp devices). `attention` is filled on the first call (per
// value of `graph`: the selective recompute's part). Its compile runs `compile`.
std::optional<LayerModel> buildLayerModel(const Graph& graph, const CompileOptions& base, const LayerMap& layers,
                                          const ParallelDims& group, int64_t mbs, std::vector<bool>& attention,
                                          const TrialCompile& compile);

}  // namespace irc

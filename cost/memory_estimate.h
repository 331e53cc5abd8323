#pragma once
// Will it fit: a rank's peak memory for inference and for one training step, from its program
// as the dumps print it (the global graph after redistribution, each value at its local slice
// shape; in irc's SPMD every rank holds the same shapes). docs/memory.md says what it counts,
// what it assumes and what it ignores.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/parallel_config.h"

namespace irc {

// One forward pass in execution order: parameters resident, inputs live from the start, every
// other value from its producer to its last consumer (a graph output to the end); a view
// (Reshape, ExpandDims, Squeeze) shares its operand's memory.
struct InferenceMemory {
  double peakBytes = 0;
  std::string peakAt;             // the op during which the peak happens
  double parameterBytes = 0;      // resident: what trains
  double constantBytes = 0;       // resident: what the model holds but does not train (masks, buffers)
  double activationBytes = 0;     // live at the peak: inputs and model ops' results
  double communicationBytes = 0;  // live at the peak: inserted ops' results (collectives, slices)
  std::vector<double> liveAtOp;   // live bytes during each op, in execution order (irc memory --plot)
};

// One step: forward keeping what each op's backward reads (its family's savedForBackward), a
// cross-entropy loss over every floating graph output (its log-softmax kept), the backward sweep
// in reverse order (an activation's gradient from its last consumer's backward to its
// producer's, parameter gradients accumulating), and the optimizer's update with its states and
// temporaries. Two peaks: the steady state's (every step from the second on: the optimizer's
// states resident from the start) and the first step's (torch and MindSpore create the states
// lazily, inside the first update, after backward has freed the activations).
struct TrainingMemory {
  // The steady state's peak: what "fits" means (the budget, the searches).
  double peakBytes = 0;
  std::string peakPhase;  // "forward", "loss", "backward" or "optimizer step"
  std::string peakAt;     // the op of forward or backward at the peak ("" in the other phases)
  double firstStepPeakBytes = 0;
  std::string firstStepPeakPhase, firstStepPeakAt;
  Optimizer optimizer = Optimizer::AdamW;
  GradientBuffer gradientBuffer = GradientBuffer::Persistent;
  OptimizerKernels optimizerKernels = OptimizerKernels::Fused;
  // What a steady step starts with, before its first op: parameters, constants, optimizer
  // states, master weights, and the gradients where they outlive a step (a persistent buffer)
  // or a micro-batch (accumulation).
  double residentBytes = 0;
  bool gradientsResident = false;
  double parameterBytes = 0;       // what trains
  double constantBytes = 0;        // what the model holds but does not train (masks, buffers)
  double gradientBytes = 0;        // parameter gradients
  double optimizerStateBytes = 0;  // AdamW/Adam: two float32 moments per element; momentum one
  double masterWeightBytes = 0;    // mixed precision: a float32 copy of each trained element
  // A low-precision recipe: the linear layers' weights cast to its format, row- and column-wise
  // (Transformer Engine keeps both copies through the step).
  double quantizedWeightBytes = 0;
  double optimizerTemporaryBytes = 0;  // live during the update only (optimizer_kernels)
  double savedActivationBytes = 0;     // what the forward keeps for backward (the loss's included)
  double outputBytes = 0;              // the graph outputs, live through the step
  // Recompute: what the recomputed ops would have kept (now not kept), and how many ops run
  // their forward twice.
  double recomputedActivationBytes = 0;
  int recomputedOps = 0;
  // Live bytes during each op's forward and, in the same execution order, its backward, and at
  // the loss and during the update: the steady state's, and the first step's (which lacks the
  // optimizer states until the update).
  std::vector<double> forwardLiveAtOp, backwardLiveAtOp;
  double lossLiveBytes = 0, stepLiveBytes = 0;
  std::vector<double> firstForwardLiveAtOp, firstBackwardLiveAtOp;
  double firstLossLiveBytes = 0;
  // A pipeline stage under 1F1B: the micro-batches whose saved activations its peak holds (the
  // peak counts the others' on top of the one walked).
  double inFlightMicroBatches = 1;
  // The saved activations of `chunks` chunk passes of a stage cut into `of` chunks (virtual
  // stages), in whole bytes: a chunk holds its part of the stage's, rounded up.
  double savedOfChunks(double chunks, double of) const { return std::ceil(chunks * savedActivationBytes / of); }
  // The other in-flight micro-batches' saved activations, under the walked one's.
  double otherMicroBatchesBytes() const { return savedOfChunks(inFlightMicroBatches - 1, 1); }
};

// The steady state's peak as terms that add up to it (irc memory, the budget warning): each
// resident part, the saved activations of the other micro-batches a pipeline stage holds in
// flight, and what the walked micro-batch holds live at the peak (its saved activations so far,
// its activations' gradients, the loss's and the update's temporaries, gradients made where they
// are not resident). Zero terms left out; in that order.
struct PeakTerm {
  std::string name;
  double bytes = 0;
  std::string note;  // what it is, where the name does not say
};
std::vector<PeakTerm> peakTerms(const TrainingMemory& training);

struct MemoryEstimate {
  InferenceMemory inference;
  std::optional<TrainingMemory> training;  // with parallel.training
};

// What a parameter's slice of `bytes` holds for a whole step: itself, and in training its
// gradient and the optimizer's float32 states (the search and the pipeline split count so).
double parameterStepBytes(double bytes, DType dtype, const ParallelSettings& settings);

// Where in a step the walked program sits: a pipeline stage before the last has no loss (its
// outputs, what it sends on, get their gradients from the next stage), and under 1F1B a stage
// holds the saved activations of several micro-batches at once.
struct StepPlace {
  bool lossOnOutputs = true;
  double inFlightMicroBatches = 1;  // fractional with virtual stages (a chunk holds a part of the stage)
};

// Needs redistribution (layouts inferred, inserted ops in `order`). Reads the settings'
// training, optimizer, its kernels, the gradient buffer, micro-batches, precision and the
// optimizer-parallel level and ZeRO stage.
MemoryEstimate estimateMemory(const Graph& graph, const ParallelSettings& settings, StepPlace place = {});

}  // namespace irc

#include "frontends/hf_config/parallel_degrees.h"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/tensor_layout.h"

namespace irc {

std::optional<DegreePlan> checkDegrees(const ParallelConfig& p, const DecoderConfig& c, const DecoderShape& shape,
                                       DiagnosticEngine& diags) {
  const ParallelDegrees& g = p.degrees;
  const size_t before = diags.errorCount();
  DegreePlan d;
  d.pipelineStages = p.pipelineStages;
  d.virtualStages = p.virtualStages;
  d.microBatches = p.microBatches;
  d.model = g.model > 0 ? g.model : 1;
  d.expert = g.expert > 0 ? g.expert : 1;
  d.context = g.context > 0 ? g.context : 1;
  const int64_t stageDevices = p.deviceNum;  // one pipeline stage's devices (device_num / pipeline_stages)
  const int64_t others = d.model * d.context;
  d.data = g.data > 0 ? g.data : stageDevices / others;
  SourceLoc at = g.dataLoc.valid() ? g.dataLoc : p.loc;
  // Context parallelism as Llama 3 and Megatron run it: each sequence in 2 x CP chunks, so that
  // every rank gets equal causal work.
  if (d.context > 1 && shape.sequence % (2 * d.context) != 0) {
    std::vector<int64_t> valid;
    for (int64_t cp = 1; cp <= shape.sequence / 2; ++cp)
      if (shape.sequence % (2 * cp) == 0 && valid.size() < 12) valid.push_back(cp);
    diags.error(g.contextLoc, fmt::format("context_parallel {} does not split each sequence's {} tokens into {} equal chunks "
                                          "(2 per context rank, for causal balance); valid: {}",
                                          d.context, shape.sequence, 2 * d.context, fmt::join(valid, ", ")));
  }
  // The tokens [batch * sequence] are split over DP x CP in that order: the context ranks split
  // the sequence only when each data-parallel rank holds one sequence of the micro-batch (as
  // Megatron's and Llama 3's context-parallel runs do); more would put CP on the batch.
  if (d.context > 1 && d.data > 0 && shape.batch != d.data)
    diags.error(g.contextLoc, fmt::format("context_parallel {} splits each sequence, which needs one sequence per data-parallel "
                                          "rank in a micro-batch: dims.batch {} with data_parallel {} (valid: dims.batch {})",
                                          d.context, shape.batch, d.data, d.data));
  d.sequence = g.sequence && d.model > 1;  // with one model-parallel rank there is nothing to split
  if (d.sequence && shape.sequence % (d.model * d.context) != 0) {
    std::string over = d.context > 1 ? fmt::format("context_parallel {} x model_parallel {}", d.context, d.model)
                                     : fmt::format("model_parallel {}", d.model);
    diags.error(g.sequenceLoc,
                fmt::format("sequence_parallel splits each sequence's {} tokens over {}, which does not divide them",
                            shape.sequence, over));
  }
  if (d.data * others != stageDevices) {
    std::string context = d.context > 1 ? fmt::format(" x context_parallel {}", d.context) : "";
    diags.error(at, fmt::format("data_parallel {}{} x model_parallel {} x pipeline_stages {} is {} devices; device_num is {} "
                                "(data_parallel {} would fill them)",
                                d.data, context, d.model, d.pipelineStages, d.data * others * d.pipelineStages, p.rankCount(),
                                stageDevices % others == 0 ? stageDevices / others : 0));
  }
  if (d.data > 0 && shape.batch % d.data != 0)
    diags.error(at, fmt::format("data_parallel {} does not divide the micro-batch's {} sequences (dims.batch); valid: {}", d.data,
                                shape.batch, divisorsText(shape.batch)));
  auto divides = [&](int64_t size, const char* what) {
    if (size % d.model != 0)
      diags.error(g.modelLoc, fmt::format("model_parallel {} does not divide the model's {} {}; valid: {}", d.model, size, what,
                                          divisorsText(size)));
  };
  divides(c.heads, "attention heads");
  divides(c.kvHeads, "key-value heads");
  divides(c.vocab, "vocabulary entries");
  divides(c.intermediate, "MLP columns");
  if (c.sharedExpertFfn > 0) divides(c.sharedExpertFfn, "shared-expert columns");
  if (d.expert > 1 && c.experts == 0)
    diags.error(g.expertLoc, fmt::format("expert_parallel {}: {} has no experts (valid: 1)", d.expert, c.modelType));
  if (c.experts > 0 && c.experts % d.expert != 0)
    diags.error(g.expertLoc, fmt::format("expert_parallel {} does not divide the {} experts; valid: {}", d.expert, c.experts,
                                         divisorsText(c.experts)));
  // Expert tensor parallelism: the experts' FFN over the model-parallel ranks (Megatron-Core's
  // default, MindFormers' experts' model_parallel) or not split at all.
  d.expertTensor = g.expertTensor > 0 ? g.expertTensor : (c.experts > 0 ? d.model : 1);
  if (g.expertTensor > 1 && c.experts == 0)
    diags.error(g.expertTensorLoc,
                fmt::format("expert_tensor_parallel {}: {} has no experts (valid: 1)", g.expertTensor, c.modelType));
  else if (d.expertTensor != 1 && d.expertTensor != d.model)
    diags.error(g.expertTensorLoc,
                fmt::format("expert_tensor_parallel {}: irc splits the experts' FFN over all the model-parallel ranks "
                            "(model_parallel {}) or none; valid: 1{}",
                            d.expertTensor, d.model, d.model > 1 ? fmt::format(", {}", d.model) : ""));
  else if (c.experts > 0 && c.expertFfn % d.expertTensor != 0)
    diags.error(g.expertTensorLoc.valid() ? g.expertTensorLoc : g.modelLoc,
                fmt::format("expert_tensor_parallel {} (model_parallel unless given) does not divide the experts' {} FFN "
                            "columns; valid: 1",
                            d.expertTensor, c.expertFfn));
  // The experts' group is folded inside the DP x CP x TP grid (Megatron-Core's parallel folding):
  // with expert tensor parallelism inside DP x CP, the TP ranks splitting each expert's FFN.
  const int64_t foldedOver = d.data * d.context * d.model / d.expertTensor;
  if (c.experts > 0 && d.data > 0 && foldedOver % d.expert != 0) {
    std::string grid = fmt::format("data_parallel {}", d.data);
    if (d.context > 1) grid += fmt::format(" x context_parallel {}", d.context);
    if (d.expertTensor == 1 && d.model > 1) grid += fmt::format(" x model_parallel {}", d.model);
    // Folded over TP too, without expert tensor parallelism (Megatron-Core's ETP 1), it may fit.
    const bool overTensor = d.expertTensor > 1 && (d.data * d.context * d.model) % d.expert == 0;
    diags.error(g.expertLoc,
                fmt::format("expert_parallel {} does not divide {}{}; valid: {}{}", d.expert, grid,
                            d.expertTensor > 1 ? " (the experts' FFN split over model_parallel)" : "", divisorsText(foldedOver),
                            overTensor ? ", or expert_tensor_parallel: 1 to fold it over model_parallel too" : ""));
  }
  // Each sequence is dispatched in one chunk per context and model-parallel rank.
  if (c.experts > 0 && shape.sequence % (d.context * d.model) != 0)
    diags.error(d.context > 1 ? g.contextLoc : g.modelLoc,
                fmt::format("{} does not divide the {} tokens of a sequence, which a mixture of experts dispatches in one "
                            "chunk per {} rank",
                            d.context > 1 ? fmt::format("context_parallel {} x model_parallel {}", d.context, d.model)
                                          : fmt::format("model_parallel {}", d.model),
                            shape.sequence, d.context > 1 ? "context and model-parallel" : "model-parallel"));
  if (p.pipelineStages > 1 && c.layers < p.pipelineStages)
    diags.error(p.loc, fmt::format("pipeline_stages {} is more than the model's {} layers", p.pipelineStages, c.layers));
  if (diags.errorCount() > before) return std::nullopt;
  return d;
}

}  // namespace irc

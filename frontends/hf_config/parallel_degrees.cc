#include "frontends/hf_config/parallel_degrees.h"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/tensor_layout.h"

namespace irc {

namespace {

// How each sequence splits: context parallelism's chunks, sequence parallelism's shards.
void checkSequenceSplit(const ParallelConfig& p, const DecoderShape& shape, ParallelDims& d, DiagnosticEngine& diags) {
  const ParallelDims& g = p.degrees;
  const DegreeLocations& given = p.degreesAt;
  // Context parallelism as Llama 3 and Megatron run it: each sequence in 2 x CP chunks, so that
  // every rank gets equal causal work.
  if (d.cp > 1 && shape.sequence % (2 * d.cp) != 0) {
    std::vector<int64_t> valid;
    for (int64_t cp = 1; cp <= shape.sequence / 2; ++cp)
      if (shape.sequence % (2 * cp) == 0 && valid.size() < 12) valid.push_back(cp);
    diags.error(given.cp, fmt::format("context_parallel {} does not split each sequence's {} tokens into {} equal chunks "
                                      "(2 per context rank, for causal balance); valid: {}",
                                      d.cp, shape.sequence, 2 * d.cp, fmt::join(valid, ", ")));
  }
  // The tokens [batch * sequence] are split over DP x CP in that order: the context ranks split
  // the sequence only when each data-parallel rank holds one sequence of the micro-batch (as
  // Megatron's and Llama 3's context-parallel runs do); more would put CP on the batch.
  if (d.cp > 1 && d.dp > 0 && shape.batch != d.dp)
    diags.error(given.cp, fmt::format("context_parallel {} splits each sequence, which needs one sequence per data-parallel "
                                      "rank in a micro-batch: dims.batch {} with data_parallel {} (valid: dims.batch {})",
                                      d.cp, shape.batch, d.dp, d.dp));
  d.sp = g.sp && d.tp > 1;  // with one model-parallel rank there is nothing to split
  if (d.sp && shape.sequence % (d.tp * d.cp) != 0) {
    std::string over =
        d.cp > 1 ? fmt::format("context_parallel {} x model_parallel {}", d.cp, d.tp) : fmt::format("model_parallel {}", d.tp);
    diags.error(given.sp, fmt::format("sequence_parallel splits each sequence's {} tokens over {}, which does not divide them",
                                      shape.sequence, over));
  }
}

// The grid fills a pipeline stage's devices, and data parallelism splits the micro-batch.
void checkDeviceGrid(const ParallelConfig& p, const DecoderShape& shape, const ParallelDims& d, DiagnosticEngine& diags) {
  const DegreeLocations& given = p.degreesAt;
  const int64_t stageDevices = p.deviceNum, others = d.tp * d.cp;
  SourceLoc at = given.dp.valid() ? given.dp : p.loc;
  if (d.dp * others != stageDevices) {
    std::string context = d.cp > 1 ? fmt::format(" x context_parallel {}", d.cp) : "";
    diags.error(at, fmt::format("data_parallel {}{} x model_parallel {} x pipeline_stages {} is {} devices; device_num is {} "
                                "(data_parallel {} would fill them)",
                                d.dp, context, d.tp, d.pp, d.dp * others * d.pp, p.rankCount(),
                                stageDevices % others == 0 ? stageDevices / others : 0));
  }
  if (d.dp > 0 && shape.batch % d.dp != 0)
    diags.error(at, fmt::format("data_parallel {} does not divide the micro-batch's {} sequences (dims.batch); valid: {}", d.dp,
                                shape.batch, divisorsText(shape.batch)));
}

// Model parallelism divides every dimension it splits.
void checkTensorSplit(const ParallelConfig& p, const DecoderConfig& c, const ParallelDims& d, DiagnosticEngine& diags) {
  const DegreeLocations& given = p.degreesAt;
  auto divides = [&](int64_t size, const char* what) {
    if (size % d.tp != 0)
      diags.error(given.tp, fmt::format("model_parallel {} does not divide the model's {} {}; valid: {}", d.tp, size, what,
                                        divisorsText(size)));
  };
  divides(c.heads, "attention heads");
  divides(c.kvHeads, "key-value heads");
  divides(c.vocab, "vocabulary entries");
  divides(c.intermediate, "MLP columns");
  if (c.sharedExpertFfn > 0) divides(c.sharedExpertFfn, "shared-expert columns");
}

// The experts' degrees: expert parallelism, expert tensor parallelism, their folding.
void checkExperts(const ParallelConfig& p, const DecoderConfig& c, const DecoderShape& shape, ParallelDims& d,
                  DiagnosticEngine& diags) {
  const ParallelDims& g = p.degrees;
  const DegreeLocations& given = p.degreesAt;
  if (d.ep > 1 && c.experts == 0)
    diags.error(given.ep, fmt::format("expert_parallel {}: {} has no experts (valid: 1)", d.ep, c.modelType));
  if (c.experts > 0 && c.experts % d.ep != 0)
    diags.error(given.ep, fmt::format("expert_parallel {} does not divide the {} experts; valid: {}", d.ep, c.experts,
                                      divisorsText(c.experts)));
  // Expert tensor parallelism: the experts' FFN over the model-parallel ranks (Megatron-Core's
  // default, MindFormers' experts' model_parallel) or not split at all.
  d.etp = given.etp.valid() ? g.etp : (c.experts > 0 ? d.tp : 1);
  if (g.etp > 1 && c.experts == 0)
    diags.error(given.etp, fmt::format("expert_tensor_parallel {}: {} has no experts (valid: 1)", g.etp, c.modelType));
  else if (d.etp != 1 && d.etp != d.tp)
    diags.error(given.etp, fmt::format("expert_tensor_parallel {}: irc splits the experts' FFN over all the model-parallel ranks "
                                       "(model_parallel {}) or none; valid: 1{}",
                                       d.etp, d.tp, d.tp > 1 ? fmt::format(", {}", d.tp) : ""));
  else if (c.experts > 0 && c.expertFfn % d.etp != 0)
    diags.error(given.etp.valid() ? given.etp : given.tp,
                fmt::format("expert_tensor_parallel {} (model_parallel unless given) does not divide the experts' {} FFN "
                            "columns; valid: 1",
                            d.etp, c.expertFfn));
  // The experts' group is folded inside the DP x CP x TP grid (Megatron-Core's parallel folding):
  // with expert tensor parallelism inside DP x CP, the TP ranks splitting each expert's FFN.
  const int64_t foldedOver = d.dp * d.cp * d.tp / d.etp;
  if (c.experts > 0 && d.dp > 0 && foldedOver % d.ep != 0) {
    std::string grid = fmt::format("data_parallel {}", d.dp);
    if (d.cp > 1) grid += fmt::format(" x context_parallel {}", d.cp);
    if (d.etp == 1 && d.tp > 1) grid += fmt::format(" x model_parallel {}", d.tp);
    // Folded over TP too, without expert tensor parallelism (Megatron-Core's ETP 1), it may fit.
    const bool overTensor = d.etp > 1 && (d.dp * d.cp * d.tp) % d.ep == 0;
    diags.error(given.ep, fmt::format("expert_parallel {} does not divide {}{}; valid: {}{}", d.ep, grid,
                                      d.etp > 1 ? " (the experts' FFN split over model_parallel)" : "", divisorsText(foldedOver),
                                      overTensor ? ", or expert_tensor_parallel: 1 to fold it over model_parallel too" : ""));
  }
  // Each sequence is dispatched in one chunk per context and model-parallel rank.
  if (c.experts > 0 && shape.sequence % (d.cp * d.tp) != 0)
    diags.error(d.cp > 1 ? given.cp : given.tp,
                fmt::format("{} does not divide the {} tokens of a sequence, which a mixture of experts dispatches in one "
                            "chunk per {} rank",
                            d.cp > 1 ? fmt::format("context_parallel {} x model_parallel {}", d.cp, d.tp)
                                     : fmt::format("model_parallel {}", d.tp),
                            shape.sequence, d.cp > 1 ? "context and model-parallel" : "model-parallel"));
}

}  // namespace

std::optional<ParallelDims> checkDegrees(const ParallelConfig& p, const DecoderConfig& c, const DecoderShape& shape,
                                         DiagnosticEngine& diags) {
  const ParallelDims& g = p.degrees;
  const DegreeLocations& given = p.degreesAt;
  const size_t before = diags.errorCount();
  ParallelDims d;
  d.pp = p.pipelineStages;
  d.v = p.virtualStages;
  d.tp = g.tp;
  d.ep = g.ep;
  d.cp = g.cp;
  const int64_t stageDevices = p.deviceNum;  // one pipeline stage's devices (device_num / pipeline_stages)
  d.dp = given.dp.valid() ? g.dp : stageDevices / (d.tp * d.cp);
  checkSequenceSplit(p, shape, d, diags);
  checkDeviceGrid(p, shape, d, diags);
  checkTensorSplit(p, c, d, diags);
  checkExperts(p, c, shape, d, diags);
  if (p.pipelineStages > 1 && c.layers < p.pipelineStages)
    diags.error(p.loc, fmt::format("pipeline_stages {} is more than the model's {} layers", p.pipelineStages, c.layers));
  if (diags.errorCount() > before) return std::nullopt;
  return d;
}

}  // namespace irc

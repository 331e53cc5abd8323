// `stages:` (docs/pipeline.md): which pipeline stage runs each op. Globs name ops (or, in a plan,
// torch modules); an op no glob names runs in the latest stage of the ops it reads (a chain's
// unnamed ops follow the op before them). Values flow from earlier stages to later ones only.
// With virtual_stages v the numbers are virtual stages 0 .. P * v - 1 in model order, virtual
// stage k running on pipeline stage k mod P as its chunk k / P.
#include <fmt/format.h>

#include "frontends/yaml/model_loader.h"

namespace irc::model_loading {

// `stages: auto`: each stage runs at least one op, so more stages than ops cannot be split (and
// would only cost time and memory for every stage pair).
void ModelLoader::readAutoStages() {
  ParallelConfig& p = parallel_;
  int64_t ops = 0;
  for (const Op& op : graph_.ops) ops += op.inserted() ? 0 : 1;
  if (p.pipelineStages * p.virtualStages > ops) {
    reader_.diags().error(p.loc, p.virtualStages > 1
                                     ? fmt::format("pipeline_stages {} x virtual_stages {} is more than the graph's {} ops: "
                                                   "stages: auto gives each virtual stage at least one",
                                                   p.pipelineStages, p.virtualStages, ops)
                                     : fmt::format("pipeline_stages {} is more than the graph's {} ops: stages: auto gives "
                                                   "each stage at least one (valid: 1 .. {})",
                                                   p.pipelineStages, ops, ops));
    return;
  }
  p.autoStages = true;
}

// Each op a glob of `stages:` names, at that glob's (virtual) stage; -1 for the others.
std::vector<int32_t> ModelLoader::readNamedStages(const YamlNode& node) {
  const ParallelConfig& p = parallel_;
  const int64_t virtualStages = p.pipelineStages * p.virtualStages;
  const char* kind = p.virtualStages > 1 ? "virtual stage" : "stage";
  std::vector<int32_t> stageOf(graph_.ops.size(), -1);
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string glob = it->first.Scalar();
    auto stage = reader_.integer(it->second, fmt::format("stages.{}", glob));
    if (!stage) continue;
    if (*stage < 0 || *stage >= virtualStages) {
      reader_.error(it->second, fmt::format("{} {} of '{}' is not a {} of {} (valid: 0 .. {})", kind, *stage, glob, kind,
                                            virtualStages, virtualStages - 1));
      continue;
    }
    // The first key naming an op wins.
    std::vector<bool> hit = opsMatching(glob);
    int count = 0;
    for (size_t id = 0; id < hit.size(); ++id)
      if (hit[id] && !graph_.ops[id].inserted()) {
        ++count;
        if (stageOf[id] < 0) stageOf[id] = static_cast<int32_t>(*stage);
      }
    if (count == 0) {
      std::vector<std::string> names(graph_.modulePaths.begin(), graph_.modulePaths.end());
      for (const Op& op : graph_.ops) names.push_back(op.name);
      reader_.error(it->first, fmt::format("stages key '{}' matches no op{} of the graph; {}", glob,
                                           graph_.modulePaths.empty() ? "" : " or module", closestNames(glob, names)));
    }
  }
  return stageOf;
}

// The ops no glob names, in the latest stage of the ops they read; each op's stage and chunk,
// and the checks that values flow forward and that every stage runs an op.
void ModelLoader::placeStages(const YamlNode& node, std::vector<int32_t>& stageOf) {
  const ParallelConfig& p = parallel_;
  const int64_t virtualStages = p.pipelineStages * p.virtualStages;
  const char* kind = p.virtualStages > 1 ? "virtual stage" : "stage";
  std::vector<int> opsIn(virtualStages, 0);
  for (OpId id : graph_.order) {
    Op& op = graph_.op(id);
    int32_t latest = 0;
    const Op* lateProducer = nullptr;
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      OpId producer = graph_.value(o.value).producer;
      if (producer == kNoId || stageOf[producer] <= latest) continue;
      latest = stageOf[producer];
      lateProducer = &graph_.op(producer);
    }
    if (stageOf[id] < 0) stageOf[id] = latest;
    if (stageOf[id] < latest) {
      reader_.diags().error(op.loc, fmt::format("op '{}' is in pipeline {} {} but reads '{}' of {} {}: a stage reads only "
                                                "what earlier stages (or its own) computed",
                                                op.name, kind, stageOf[id], lateProducer->name, kind, latest));
      continue;
    }
    op.stage = static_cast<int32_t>(stageOf[id] % p.pipelineStages);
    op.chunk = static_cast<int32_t>(stageOf[id] / p.pipelineStages);
    ++opsIn[stageOf[id]];
  }
  // Every stage needs an op; a virtual stage may be empty (126 layers over 128 virtual stages:
  // its stage's other chunks run, and the activation goes on to the next virtual stage's stage).
  for (int s = 0; s < p.pipelineStages; ++s) {
    int ops = 0;
    for (int64_t k = s; k < virtualStages; k += p.pipelineStages) ops += opsIn[k];
    if (ops == 0)
      reader_.error(node,
                    fmt::format("pipeline stage {} has no op: each of the {} stages needs at least one", s, p.pipelineStages));
  }
}

void ModelLoader::readStages(const std::optional<YamlNode>& node) {
  ParallelConfig& p = parallel_;
  if (!node) {
    if (p.pipelineStages > 1)
      reader_.diags().error(p.loc, fmt::format("pipeline_stages {} needs `stages:`: op-name globs to stage numbers "
                                               "(stages: {{\"l0.*\": 0, \"l1.*\": 1}}), or stages: auto",
                                               p.pipelineStages));
    return;
  }
  if (p.pipelineStages == 1) {
    reader_.error(*node, "stages: needs parallel.pipeline_stages (more than one stage)");
    return;
  }
  if (node->IsScalar() && node->Scalar() == "auto") {
    readAutoStages();
    return;
  }
  if (!node->IsMap()) {
    reader_.error(*node, fmt::format("stages must map op-name (or module-path) globs to stage numbers, or be auto; got {}",
                                     describeNode(*node)));
    return;
  }
  std::vector<int32_t> stageOf = readNamedStages(*node);
  if (reader_.diags().hasErrors()) return;
  placeStages(*node, stageOf);
}

}  // namespace irc::model_loading

// What model files and plans share of an op: its strategies, layouts, priority and output
// sharding as the op's annotation; and the reader's two results.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "frontends/yaml/model_loader.h"
#include "frontends/yaml/sharding_reader.h"
#include "frontends/document/yaml_reader.h"

namespace irc::model_loading {

std::optional<LoadedGraph> ModelLoader::finish() {
  if (reader_.diags().hasErrors()) return std::nullopt;
  return LoadedGraph{std::move(graph_), std::move(parallel_), std::move(parameterData_), facts_};
}

namespace {

// An op's `sharding:` constraints on its outputs: one sharding, or a list with one entry (or
// null) per output of a multi-output op.
std::vector<std::optional<TensorSharding>> readOutputShardings(YamlReader& reader, const YamlNode& n, const std::string& opName,
                                                               const std::vector<AnnotatedTensor>& outputs,
                                                               const ParallelConfig& parallel) {
  std::vector<std::optional<TensorSharding>> shardings(outputs.size(), std::nullopt);
  if (outputs.size() == 1 && !n.IsSequence()) {
    shardings[0] = readTensorSharding(reader, n, outputs[0], parallel, true);
  } else if (reader.sequence(n, fmt::format("the sharding of multi-output op '{}' (one entry per output)", opName))) {
    if (n.size() != outputs.size()) {
      reader.error(
          n, fmt::format("the sharding of op '{}' has {} entries; the op has {} outputs", opName, n.size(), outputs.size()));
    } else {
      for (size_t i = 0; i < outputs.size(); ++i)
        if (!n[i].IsNull()) shardings[i] = readTensorSharding(reader, n[i], outputs[i], parallel, true);
    }
  }
  return shardings;
}

}  // namespace

void ModelLoader::readAnnotations(OpSource& src) {
  Op& op = graph_.op(src.id);
  const YamlNode& node = src.node;
  // Most ops configure nothing: they get no annotation (and no copies of their operand names).
  static constexpr std::string_view kAnnotationKeys[] = {"in_strategy", "in_layout", "out_strategy", "out_layout",
                                                         "priority",    "sharding",  "recompute"};
  if (std::none_of(std::begin(kAnnotationKeys), std::end(kAnnotationKeys),
                   [&](std::string_view key) { return node.find(key).IsDefined(); }))
    return;
  std::vector<AnnotatedTensor> inputs, outputs;
  for (const Operand& o : op.operands)
    if (o.isValue()) inputs.push_back({graph_.value(o.value).name, graph_.value(o.value).type.shape});
  for (ValueId r : op.results) outputs.push_back({graph_.value(r).name, graph_.value(r).type.shape});
  OpAnnotation& ann = *op.annotation;
  int64_t deviceNum = parallel_.deviceNum;
  if (auto n = reader_.optional(node, "recompute"))
    if (auto b = reader_.boolean(*n, "recompute")) ann.recompute = *b;
  auto inStrategy = reader_.optional(node, "in_strategy");
  auto inLayout = reader_.optional(node, "in_layout");
  if (inStrategy && inLayout) {
    reader_.error(*inLayout, fmt::format("op '{}' has both in_strategy and in_layout; give one", op.name));
    return;
  }
  StrategyForm form = strategyFormOf(defOf(op));
  if ((inStrategy || inLayout) && form == StrategyForm::FromNeighbours) {
    reader_.error(inStrategy ? *inStrategy : *inLayout,
                  fmt::format("Reshape '{}' takes no strategy: its layouts come from its producer and consumer", op.name));
    return;
  }
  if (inStrategy) {
    ann.inStrategyLoc = locOf(*inStrategy);
    std::vector<AnnotatedTensor> described = inputs;
    if (form == StrategyForm::OnOutput) {
      // MindSpore writes such a strategy on the output, then () for each scalar operand.
      described = {{fmt::format("the output of '{}'", op.name), graph_.value(op.results[0]).type.shape}};
      size_t given = inStrategy->IsSequence() ? inStrategy->size() : 1;
      for (size_t i = 1; i < std::min<size_t>(given, 4); ++i) described.push_back({"a scalar operand", {}});
    }
    ann.inStrategy = readStrategy(reader_, *inStrategy, fmt::format("in_strategy of op '{}'", op.name), described, deviceNum);
    // It always reads ((out), (), ()), however many () the model wrote, so that
    // primitive_attrs and the type line print the same tuple.
    if (form == StrategyForm::OnOutput && ann.inStrategy) ann.inStrategy->resize(3);
  }
  if (auto n = reader_.optional(node, "out_strategy")) {
    ann.outStrategyLoc = locOf(*n);
    if (!inStrategy) reader_.error(*n, fmt::format("out_strategy of op '{}' needs an in_strategy beside it", op.name));
    else ann.outStrategy = readStrategy(reader_, *n, fmt::format("out_strategy of op '{}'", op.name), outputs, deviceNum);
  }
  if (inLayout) {
    ann.inLayoutLoc = locOf(*inLayout);
    ann.inLayout =
        readLayouts(reader_, *inLayout, fmt::format("in_layout of op '{}'", op.name), inputs, parallel_, ann.inLayoutLoc);
  }
  if (auto n = reader_.optional(node, "out_layout")) {
    ann.outLayoutLoc = locOf(*n);
    ann.outLayout = readLayouts(reader_, *n, fmt::format("out_layout of op '{}'", op.name), outputs, parallel_, ann.outLayoutLoc);
  }
  if (auto n = reader_.optional(node, "priority")) {
    ann.priorityLoc = locOf(*n);
    if (auto v = reader_.integer(*n, "priority")) {
      if (*v < 0) reader_.error(*n, fmt::format("priority must be >= 0 (0 is highest); got {}", *v));
      else ann.priority = *v;
    }
  }
  if (auto n = reader_.optional(node, "sharding"))
    ann.outputSharding = readOutputShardings(reader_, *n, op.name, outputs, parallel_);
}

}  // namespace irc::model_loading

// `modules:` in a plan (docs/onnx.md, "Plans in PyTorch's words"): torch module paths, or globs
// over them, mapped to DTensor's parallel styles. Each style becomes the in_layout of the
// module's Linear (its MatMul and bias Add) or Embedding (its Gather) over the plan's mesh, and
// an output `sharding` constraint where the style's output_layouts differ from its default, so
// that propagation, redistribution and every dump treat it as a configured op.
#include <fnmatch.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "frontends/yaml/model_loader.h"
#include "ir/layout_notation.h"
#include "ir/suggest.h"
#include "ops/op_defs.h"
#include "ops/op_family.h"

namespace irc::model_loading {

enum class Style { Colwise, Rowwise, SequenceParallel, Replicate };

// What a style needs, read from the plan.
struct StyleSpec {
  Style style = Style::Colwise;
  int axis = 0;                     // the mesh axis it shards over
  std::optional<Placement> output;  // output_layouts, when given
  std::optional<Placement> input;   // input_layouts, when given (checked against the module's input)
};

namespace {

const std::vector<std::string> kStyleNames = {"colwise", "rowwise", "sequence_parallel", "replicate"};
const std::vector<std::string> kStyleKeys = {"style", "axis", "input_layouts", "output_layouts"};

std::optional<Style> parseStyle(const std::string& name) {
  // DTensor's class names are accepted too.
  if (name == "colwise" || name == "ColwiseParallel") return Style::Colwise;
  if (name == "rowwise" || name == "RowwiseParallel") return Style::Rowwise;
  if (name == "sequence_parallel" || name == "SequenceParallel") return Style::SequenceParallel;
  if (name == "replicate" || name == "Replicate") return Style::Replicate;
  return std::nullopt;
}

// A style's placement on its mesh axis: only a sum is a partial product (a Linear's).
std::optional<Placement> parseStylePlacement(const std::string& text) {
  std::optional<Placement> p = parsePlacement(text);
  if (p && p->kind == Placement::Kind::Partial && p->op != ReduceOp::Sum) return std::nullopt;
  return p;
}

// The ops a style configures in one module.
struct ModuleOps {
  enum class Kind { Linear, Embedding, Other } kind = Kind::Other;
  OpId main = kNoId;              // the product / lookup
  int input = -1;                 // its activation operand (the lookup's indices)
  OpId bias = kNoId;              // the Linear's bias Add
  bool weightTransposed = false;  // a Linear's weight as torch holds it, [out, in] (Gemm's transB)
};

bool isParameter(const Graph& g, const Operand& o, size_t rank) {
  return o.isValue() && g.value(o.value).kind == ValueKind::Parameter && g.value(o.value).type.shape.size() == rank;
}

// A Linear is one product of an activation by a rank-2 weight, and perhaps the addition of a
// rank-1 bias to it (through Gemm's alpha scaling); an Embedding is a lookup in a rank-2 table.
// The ops' families say which part each can play (OpFamilyRules::modulePart).
ModuleOps classify(const Graph& g, const std::vector<OpId>& ops, const std::vector<std::vector<Use>>& uses) {
  using Part = ModulePart::Kind;
  ModuleOps m;
  int products = 0, lookups = 0;
  for (OpId id : ops) {
    const Op& op = g.op(id);
    ModulePart part = rulesOf(op).modulePart(op);
    if (part.kind == Part::Product && isParameter(g, op.operands[part.weight], 2) &&
        !isParameter(g, op.operands[part.input], 2)) {
      ++products;
      m.main = id;
      m.input = part.input;
      m.weightTransposed = part.weightTransposed;
    } else if (part.kind == Part::Lookup && isParameter(g, op.operands[part.weight], 2)) {
      ++lookups;
      m.main = id;
      m.input = part.input;
    }
  }
  if (products + lookups != 1) return ModuleOps{};
  if (lookups == 1) {
    m.kind = ModuleOps::Kind::Embedding;
    return m;
  }
  m.kind = ModuleOps::Kind::Linear;
  ValueId product = g.op(m.main).results[0];
  for (int step = 0; step < 2 && uses[product].size() == 1; ++step) {
    const Op& next = g.op(uses[product][0].op);
    if (std::find(ops.begin(), ops.end(), uses[product][0].op) == ops.end()) break;
    ModulePart part = rulesOf(next).modulePart(next);
    if (part.kind == Part::Bias && next.operands[part.input].value == product && isParameter(g, next.operands[part.weight], 1)) {
      m.bias = uses[product][0].op;
      break;
    }
    if (part.kind != Part::Scale) break;
    product = next.results[0];
  }
  return m;
}

}  // namespace

namespace {

// transformers 4.x named Mixtral's MoE block `block_sparse_moe`, 5.x names it `mlp` (the same
// structure, docs/config-json.md): a key's segment in one spelling, rewritten in the other.
std::string otherMoeSpelling(const std::string& key) {
  std::string out;
  size_t start = 0;
  while (start <= key.size()) {
    size_t dot = key.find('.', start);
    std::string segment = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    out += segment == "block_sparse_moe" ? "mlp" : segment == "mlp" ? "block_sparse_moe" : segment;
    if (dot == std::string::npos) break;
    out += '.';
    start = dot + 1;
  }
  return out;
}

bool globMatches(const std::string& key, const std::string& path) {
  return fnmatch(key.c_str(), path.c_str(), 0) == 0 || fnmatch(("*." + key).c_str(), path.c_str(), 0) == 0;
}

}  // namespace

// Does a key name the module at `path`? Whole, or relative to any module above it (a plan
// written for the inner model matches the export's `m.model.` prefix); `*` crosses dots. A MoE
// block's key matches in either transformers spelling.
bool modulePathMatches(const std::string& key, const std::string& path) {
  if (globMatches(key, path)) return true;
  std::string other = otherMoeSpelling(key);
  return other != key && globMatches(other, path);
}

namespace {

// A `modules:` value read into a style spec: a style name, or a map with `style`, `axis`,
// `input_layouts` and `output_layouts` (the placements also as written, for --torch-out).
// Nullopt after an error.
std::optional<StyleSpec> readStyleSpec(YamlReader& reader, const std::string& key, const YamlNode& value,
                                       const DeviceMatrix& mesh, std::string (&placementText)[2]) {
  StyleSpec spec;
  spec.axis = mesh.rank() - 1;
  YamlNode styleNode = value;
  if (value.IsMap()) {
    if (!reader.checkMap(value, fmt::format("the style of '{}'", key), kStyleKeys)) return std::nullopt;
    auto s = reader.required(value, "style", fmt::format("the style of '{}'", key));
    if (!s) return std::nullopt;
    styleNode = *s;
    if (auto a = reader.optional(value, "axis")) {
      auto name = reader.string(*a, "axis");
      if (!name) return std::nullopt;
      auto index = mesh.axisIndex(*name);
      if (!index) {
        reader.error(*a, fmt::format("axis '{}' is not an axis of the mesh ({}){}", *name, fmt::join(mesh.names, ", "),
                                     didYouMean(*name, mesh.names)));
        return std::nullopt;
      }
      spec.axis = *index;
    }
    bool placementsOk = true;
    for (const char* which : {"input_layouts", "output_layouts"}) {
      auto n = reader.optional(value, which);
      if (!n) continue;
      std::optional<YamlNode> entry = *n;
      if (n->IsSequence()) entry = n->size() == 1 ? std::optional<YamlNode>((*n)[0]) : std::nullopt;
      std::optional<Placement> placement = entry && entry->IsScalar() ? parseStylePlacement(entry->Scalar()) : std::nullopt;
      if (!placement) {
        reader.error(*n, fmt::format("{} of '{}' must be one DTensor placement on the style's axis: Shard(d), "
                                     "Replicate() or Partial(); got {}",
                                     which, key, describeNode(*n)));
        placementsOk = false;
      } else if (std::string_view(which) == "output_layouts") {
        spec.output = placement;
      } else {
        spec.input = placement;
      }
      if (placement) placementText[std::string_view(which) == "output_layouts"] = entry->Scalar();
      // input_layouts say how DTensor should read a plain tensor; irc knows the producer's
      // layout and redistributes from it, so they are checked and need nothing more.
    }
    if (!placementsOk) return std::nullopt;
  }
  auto styleName = reader.string(styleNode, fmt::format("the style of '{}'", key));
  if (!styleName) return std::nullopt;
  auto style = parseStyle(*styleName);
  if (!style) {
    reader.error(styleNode, fmt::format("'{}' is not a parallel style; valid: {}{}", *styleName, fmt::join(kStyleNames, ", "),
                                        didYouMean(*styleName, kStyleNames)));
    return std::nullopt;
  }
  spec.style = *style;
  return spec;
}

}  // namespace

void PlanReader::applyPlanModules(const YamlNode& node, std::vector<std::string>& claimedBy) {
  if (!node.IsMap()) {
    reader_.error(node,
                  fmt::format("modules must map torch module paths (or globs) to parallel styles; got {}", describeNode(node)));
    return;
  }
  ParallelConfig& parallel = parallel_;
  // Without a mesh, the styles shard over one axis of every device.
  if (!parallel.mesh) parallel.mesh = DeviceMatrix{{parallel.deviceNum}, {"tp"}};
  const DeviceMatrix& mesh = *parallel.mesh;
  std::vector<std::vector<OpId>> opsOfModule(graph_.modulePaths.size());
  for (OpId id : graph_.order)
    if (graph_.op(id).modulePath >= 0) opsOfModule[graph_.op(id).modulePath].push_back(id);
  auto uses = computeUses(graph_);
  std::map<int, std::pair<std::string, StyleSpec>> styledBy;  // module -> the key that styled it

  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const YamlNode& value = it->second;
    std::string placementText[2];  // input_layouts, output_layouts as written
    std::optional<StyleSpec> read = readStyleSpec(reader_, key, value, mesh, placementText);
    if (!read) continue;
    const StyleSpec& spec = *read;

    std::vector<int> matched;
    for (int m = 0; m < static_cast<int>(graph_.modulePaths.size()); ++m)
      if (!opsOfModule[m].empty() && modulePathMatches(key, graph_.modulePaths[m])) matched.push_back(m);
    if (matched.empty()) {
      std::vector<std::string> paths;
      for (int m = 0; m < static_cast<int>(graph_.modulePaths.size()); ++m)
        if (!opsOfModule[m].empty()) paths.push_back(graph_.modulePaths[m]);
      reader_.error(it->first,
                    fmt::format("modules key '{}' matches no module of the graph; {}", key,
                                paths.empty() ? "the graph has no module paths (docs/onnx.md)" : closestNames(key, paths)));
      continue;
    }
    for (int m : matched) {
      // DTensor applies a plan key by key; two keys giving one module the same style are one
      // (`*.output.dense` also matches BERT's `attention.output.dense`), different ones a mistake.
      if (auto [prior, first] = styledBy.emplace(m, std::make_pair(key, spec)); !first) {
        const StyleSpec& had = prior->second.second;
        bool same = had.style == spec.style && had.axis == spec.axis && had.output.has_value() == spec.output.has_value() &&
                    (!had.output || (had.output->kind == spec.output->kind && had.output->dim == spec.output->dim));
        if (!same)
          reader_.error(it->first, fmt::format("module '{}' is matched by '{}' and '{}' with different styles; give it one",
                                               graph_.modulePaths[m], prior->second.first, key));
        continue;
      }
      size_t errorsBefore = reader_.diags().errorCount();
      applyStyle(it->first, key, spec, opsOfModule[m], uses, claimedBy);
      if (reader_.diags().errorCount() > errorsBefore) break;  // said once for the key, not per module it matches
      for (OpId id : opsOfModule[m]) graph_.op(id).annotation->inStyledModule = true;
      graph_.moduleStyles.push_back({graph_.modulePaths[m], kStyleNames[static_cast<size_t>(spec.style)], mesh.names[spec.axis],
                                     placementText[0], placementText[1]});
    }
  }
}

namespace {

// One `modules:` key applied to one module: the layouts its style gives the module's ops (as
// `in_layout` over the mesh) and the output constraints its `output_layouts` ask for.
class StyleApplication {
 public:
  StyleApplication(Graph& graph, const DeviceMatrix& mesh, YamlReader& reader, const YamlNode& keyNode, const std::string& key,
                   const StyleSpec& spec, const std::string& path, std::vector<std::string>& claimedBy)
      : graph_(graph),
        reader_(reader),
        keyNode_(keyNode),
        key_(key),
        spec_(spec),
        path_(path),
        claimedBy_(claimedBy),
        mesh_(mesh),
        t_(spec.axis) {
    // The mesh's other axes split the batch (dim 0) of the module's activations, as data
    // parallelism beside tensor parallelism does.
    for (int a = 0; a < mesh_.rank(); ++a)
      if (a != t_ && mesh_.dims[a] > 1) {
        batchAxes_.push_back(a);
        batchWays_ *= mesh_.dims[a];
      }
  }

  void sequenceParallel(const std::vector<OpId>& ops, const std::vector<std::vector<Use>>& uses);
  void embedding(const ModuleOps& m);
  void linear(const ModuleOps& m);

 private:
  std::string styleName() const { return kStyleNames[static_cast<int>(spec_.style)]; }
  // The module's activation (or indices) and its product's (or lookup's) result.
  const Shape& inputShape(const ModuleOps& m) const { return graph_.value(graph_.op(m.main).operands[m.input].value).type.shape; }
  const Shape& outputShape(const ModuleOps& m) const { return graph_.value(graph_.op(m.main).results[0]).type.shape; }
  DimAxes activation(const Shape& shape, std::optional<int64_t> splitDim) const;
  void check(const Op& op, const std::vector<DimAxes>& layouts);
  bool claim(OpId id);
  void configure(OpId id, std::vector<DimAxes> layouts, std::optional<TensorSharding> output = std::nullopt);
  TensorSharding outputSharding(const Shape& shape, const Placement& p);

  Graph& graph_;
  YamlReader& reader_;
  const YamlNode& keyNode_;
  const std::string& key_;
  const StyleSpec& spec_;
  const std::string& path_;
  std::vector<std::string>& claimedBy_;
  const DeviceMatrix& mesh_;
  const int t_;  // the style's mesh axis
  std::vector<int> batchAxes_;
  int64_t batchWays_ = 1;

 public:
  bool ok = true;
};

DimAxes StyleApplication::activation(const Shape& shape, std::optional<int64_t> splitDim) const {
  DimAxes dims(shape.size());
  if (!batchAxes_.empty() && shape.size() >= 2 && shape[0] % batchWays_ == 0) dims[0] = batchAxes_;
  if (splitDim) dims[*splitDim].push_back(t_);
  return dims;
}

void StyleApplication::check(const Op& op, const std::vector<DimAxes>& layouts) {
  int k = 0;
  for (const Operand& o : op.operands) {
    if (!o.isValue()) continue;
    const Value& v = graph_.value(o.value);
    for (size_t d = 0; d < layouts[k].size(); ++d) {
      int64_t split = 1;
      for (int a : layouts[k][d]) split *= mesh_.dims[a];
      if (v.type.shape[d] % split != 0) {
        reader_.error(keyNode_, fmt::format("'{}' ({}): {} splits dim {} of '{}' (size {}) {} ways, which does not divide it",
                                            key_, path_, styleName(), d, v.name, v.type.shape[d], split));
        ok = false;
      }
    }
    ++k;
  }
}

bool StyleApplication::claim(OpId id) {
  if (!claimedBy_[id].empty()) {
    reader_.error(keyNode_, fmt::format("node '{}' is configured by both '{}' and '{}'; give each node one strategy",
                                        graph_.op(id).name, claimedBy_[id], key_));
    ok = false;
    return false;
  }
  claimedBy_[id] = key_;
  return true;
}

void StyleApplication::configure(OpId id, std::vector<DimAxes> layouts, std::optional<TensorSharding> output) {
  if (!claim(id)) return;
  Op& op = graph_.op(id);
  check(op, layouts);
  if (!ok) return;
  OpAnnotation& ann = *op.annotation;
  ann.inLayout = std::move(layouts);
  ann.inLayoutLoc = locOf(keyNode_);
  if (output) ann.outputSharding = {output};
}

// The output constraint for output_layouts other than the style's default.
TensorSharding StyleApplication::outputSharding(const Shape& shape, const Placement& p) {
  TensorSharding s;
  std::optional<int64_t> dim;
  if (p.kind == Placement::Kind::Shard) dim = p.dim < 0 ? p.dim + static_cast<int64_t>(shape.size()) : p.dim;
  s.dims = activation(shape, dim);
  if (p.kind == Placement::Kind::Partial) s.partialAxes = {t_};
  s.notation = ShardingNotation::Placements;
  s.loc = locOf(keyNode_);
  for (size_t d = 0; d < s.dims.size(); ++d) {
    int64_t split = 1;
    for (int a : s.dims[d]) split *= mesh_.dims[a];
    if (shape[d] % split != 0) {
      reader_.error(keyNode_,
                    fmt::format("'{}' ({}): output_layouts split dim {} of the output {} {} ways, which does not divide it", key_,
                                path_, d, formatShape(shape), split));
      ok = false;
    }
  }
  return s;
}

// A norm on sequence shards: every result leaving the module is split on dim 1.
void StyleApplication::sequenceParallel(const std::vector<OpId>& ops, const std::vector<std::vector<Use>>& uses) {
  const int64_t ways = mesh_.dims[t_];
  for (OpId id : ops) {
    const Op& op = graph_.op(id);
    if (op.results.size() != 1) continue;
    ValueId r = op.results[0];
    bool leaves = std::find(graph_.outputs.begin(), graph_.outputs.end(), r) != graph_.outputs.end();
    for (const Use& u : uses[r]) leaves = leaves || graph_.op(u.op).modulePath != op.modulePath;
    if (!leaves) continue;
    const Shape& shape = graph_.value(r).type.shape;
    if (shape.size() < 2 || shape[1] % ways != 0) {
      reader_.error(keyNode_, fmt::format("'{}' ({}): sequence_parallel splits dim 1 of '{}' {} ways; its shape is {}", key_,
                                          path_, graph_.value(r).name, ways, formatShape(shape)));
      return;
    }
    if (!claim(id)) return;
    graph_.op(id).annotation->outputSharding = {outputSharding(shape, Placement{Placement::Kind::Shard, 1})};
  }
}

// Rowwise: MindSpore's split-vocabulary Gather (masked lookup, AllReduce); colwise: the
// embedding dim split.
void StyleApplication::embedding(const ModuleOps& m) {
  const Shape& x = inputShape(m);
  const Shape& y = outputShape(m);
  const int64_t last = static_cast<int64_t>(y.size()) - 1;
  const bool colwise = spec_.style == Style::Colwise, rowwise = spec_.style == Style::Rowwise;
  DimAxes table(2);
  if (rowwise) table[0] = {t_};
  if (colwise) table[1] = {t_};
  std::optional<TensorSharding> out;
  bool defaultOut =
      !spec_.output || (rowwise && spec_.output->kind == Placement::Kind::Replicate) ||
      (colwise && spec_.output->kind == Placement::Kind::Shard && (spec_.output->dim == -1 || spec_.output->dim == last)) ||
      (!rowwise && !colwise && spec_.output->kind == Placement::Kind::Replicate);
  if (!defaultOut) out = outputSharding(y, *spec_.output);
  configure(m.main, {table, activation(x, std::nullopt)}, out);
}

// A Linear: the weight as the exporter laid it out, [in, out] or (transB) [out, in].
void StyleApplication::linear(const ModuleOps& m) {
  const Shape& x = inputShape(m);
  const Shape& y = outputShape(m);
  const int64_t last = static_cast<int64_t>(y.size()) - 1;
  const bool colwise = spec_.style == Style::Colwise, rowwise = spec_.style == Style::Rowwise;
  DimAxes weight(2);
  if (colwise) weight[m.weightTransposed ? 0 : 1] = {t_};
  if (rowwise) weight[m.weightTransposed ? 1 : 0] = {t_};
  const int64_t xLast = static_cast<int64_t>(x.size()) - 1;
  std::optional<TensorSharding> productOut, biasOut;
  std::optional<int64_t> productSplit = colwise ? std::optional<int64_t>(last) : std::nullopt;
  if (spec_.output) {
    bool isDefault = colwise
                         ? spec_.output->kind == Placement::Kind::Shard && (spec_.output->dim == -1 || spec_.output->dim == last)
                         : spec_.output->kind == Placement::Kind::Replicate;
    if (!isDefault) {
      // Rowwise to Shard(d): the partial product itself is constrained (one ReduceScatter);
      // colwise to another layout: the module's last result is converted.
      if (rowwise) productOut = outputSharding(y, *spec_.output);
      else if (m.bias == kNoId) productOut = outputSharding(y, *spec_.output);
      else biasOut = outputSharding(y, *spec_.output);
      if (rowwise && spec_.output->kind == Placement::Kind::Shard)
        productSplit = spec_.output->dim < 0 ? spec_.output->dim + static_cast<int64_t>(y.size()) : spec_.output->dim;
    }
  }
  configure(m.main, {activation(x, rowwise ? std::optional<int64_t>(xLast) : std::nullopt), weight}, productOut);
  if (m.bias != kNoId && ok) {
    DimAxes bias(1);
    if (productSplit == last) bias[0] = {t_};
    configure(m.bias, {activation(y, productSplit), bias}, biasOut);
  }
}

}  // namespace

void PlanReader::applyStyle(const YamlNode& keyNode, const std::string& key, const StyleSpec& spec, const std::vector<OpId>& ops,
                            const std::vector<std::vector<Use>>& uses, std::vector<std::string>& claimedBy) {
  const std::string& path = graph_.modulePaths[graph_.op(ops[0]).modulePath];
  const std::string& style = kStyleNames[static_cast<int>(spec.style)];
  ModuleOps m = classify(graph_, ops, uses);
  if (m.kind == ModuleOps::Kind::Other && spec.style != Style::SequenceParallel) {
    reader_.error(keyNode, fmt::format("'{}' matches module '{}', which is not a Linear (a MatMul by a weight) or an Embedding "
                                       "(a Gather from a table): {} applies to those",
                                       key, path, style));
    return;
  }
  // Partial(): only a rowwise Linear's product is a sum of partial products (a rowwise
  // Embedding's masked lookup needs its reduction right after).
  if (spec.output && spec.output->kind == Placement::Kind::Partial &&
      !(spec.style == Style::Rowwise && m.kind == ModuleOps::Kind::Linear)) {
    reader_.error(keyNode, fmt::format("'{}': output_layouts Partial() keeps a rowwise Linear's product unreduced; {} {} "
                                       "computes no partial sums to keep",
                                       key, style, m.kind == ModuleOps::Kind::Embedding ? "Embedding" : "module"));
    return;
  }
  StyleApplication apply(graph_, *parallel_.mesh, reader_, keyNode, key, spec, path, claimedBy);
  if (spec.style == Style::SequenceParallel) return apply.sequenceParallel(ops, uses);
  const Shape& y = graph_.value(graph_.op(m.main).results[0]).type.shape;
  if (spec.output && spec.output->kind == Placement::Kind::Shard &&
      (spec.output->dim < -static_cast<int64_t>(y.size()) || spec.output->dim >= static_cast<int64_t>(y.size()))) {
    reader_.error(keyNode, fmt::format("'{}': output_layouts Shard({}) is not a dim of the module's output {}", key,
                                       spec.output->dim, formatShape(y)));
    return;
  }
  // input_layouts: Shard(d) must name a dim of what the module reads (it was copied into
  // --torch-out's code unchecked: Shard(9) of a 3-D input).
  const Op& main = graph_.op(m.main);
  if (spec.input && spec.input->kind == Placement::Kind::Shard && m.input >= 0 &&
      static_cast<size_t>(m.input) < main.operands.size() && main.operands[m.input].isValue()) {
    const Shape& x = graph_.value(main.operands[m.input].value).type.shape;
    if (spec.input->dim < -static_cast<int64_t>(x.size()) || spec.input->dim >= static_cast<int64_t>(x.size())) {
      reader_.error(keyNode, fmt::format("'{}': input_layouts Shard({}) is not a dim of the module's input {} (valid: {} .. {})",
                                         key, spec.input->dim, formatShape(x), -static_cast<int64_t>(x.size()),
                                         static_cast<int64_t>(x.size()) - 1));
      return;
    }
  }
  if (m.kind == ModuleOps::Kind::Embedding) apply.embedding(m);
  else apply.linear(m);
}

}  // namespace irc::model_loading

#include "dumps/ir_printer.h"

#include <iterator>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/parallel_config.h"
#include "dumps/origin_text.h"
#include "dumps/text_append.h"
#include "ops/inserted_ops.h"
#include "ops/op_family.h"
#include "ops/op_defs.h"
#include "ops/op_sharding.h"

namespace irc {

using namespace std::string_view_literals;  // "..."sv appends: no strlen (see text_append.h)

std::string formatTensorType(const TensorType& type) {
  std::string out;
  text::appendTensorType(out, type);
  return out;
}

std::string formatTupleType(const std::vector<TensorType>& types) {
  std::string out;
  text::appendTupleType(out, types);
  return out;
}

std::string formatStrategy(const ShardStrategy& strategy) {
  std::string out;
  text::appendStrategy(out, strategy);
  return out;
}

namespace {

// A bare graph printed without a compile's settings (tests): the defaults.
const ParallelSettings kNoSettings{};

std::string formatAliasMaps(const std::vector<DimAxes>& maps, const DeviceMatrix& mesh) {
  std::vector<std::string> tensors;
  for (const DimAxes& dims : maps) {
    std::vector<std::string> entries;
    for (const auto& axes : dims) {
      if (axes.empty()) entries.push_back("None");
      else if (axes.size() == 1) entries.push_back(mesh.names.at(axes[0]));
      else {
        std::vector<std::string> names;
        for (int a : axes) names.push_back(mesh.names.at(a));
        entries.push_back(fmt::format("({})", fmt::join(names, ", ")));
      }
    }
    tensors.push_back(fmt::format("({})", fmt::join(entries, ", ")));
  }
  return fmt::format("({})", fmt::join(tensors, ", "));
}

class Printer {
 public:
  // Without a sink the whole text is returned; with one it is written there in blocks of about
  // kBlockBytes as it is produced (a 100k-op dump is over 100 MB) and nothing is returned.
  Printer(const Graph& g, const PrintOptions& o, std::ostream* sink)
      : graph_(g),
        options_(o),
        settings_(o.settings ? *o.settings : kNoSettings),
        sink_(sink),
        refs_(g.values.size()),
        typeSpans_(g.values.size()) {}

  std::string print() {
    // A dump is a few hundred bytes a node: reserving a generous bound up front spares the
    // copies of growing a string of tens of megabytes (pages never written cost no memory).
    out_.reserve(sink_ ? kBlockBytes + kBlockBytes / 4 : 1024 * (graph_.order.size() + graph_.values.size() / 4 + 16));
    printHeader();
    out_ += "subgraph attr:\n"sv;
    fmt::format_to(std::back_inserter(out_), "subgraph instance: {}\n", graph_.name);
    fmt::format_to(std::back_inserter(out_), "subgraph @{}() {{\n", graph_.name);
    computeUsedResults();
    for (OpId id : graph_.order) {
      printOp(graph_.op(id));
      if (sink_ && out_.size() >= kBlockBytes) flushToSink();
    }
    printReturn();
    out_ += "}\n"sv;
    if (!sink_) return std::move(out_);
    flushToSink();
    return {};
  }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;

  void flushToSink() {
    sink_->write(out_.data(), static_cast<std::streamsize>(out_.size()));
    out_.clear();
  }

  void printHeader() {
    fmt::format_to(std::back_inserter(out_), "# IR entry: @{}\n# Total subgraphs: 1\n\n# Attrs:\n", graph_.name);
    std::map<std::string, std::string> attrs;
    attrs["device_num"] = std::to_string(settings_.rankCount());
    attrs["global_rank"] = std::to_string(options_.rank);
    attrs["search_mode"] = std::string(searchModeName(settings_.searchMode));
    if (settings_.mesh) {
      attrs["device_matrix"] = formatIntTuple(settings_.mesh->dims);
      attrs["alias_name"] = fmt::format("({})", fmt::join(settings_.mesh->names, ", "));
    }
    for (const auto& [k, v] : attrs) fmt::format_to(std::back_inserter(out_), "{}: {}\n", k, v);
    size_t total = graph_.inputs.size() + graph_.parameters.size();
    fmt::format_to(std::back_inserter(out_), "\n# Total params: {}\n# Params:\n", total);
    int number = 1;
    for (const auto* list : {&graph_.inputs, &graph_.parameters}) {
      for (ValueId id : *list) {
        const Value& v = graph_.value(id);
        std::string& ref = refs_[id];  // %para1_x
        ref = "%para";
        text::appendInt(ref, number++);
        ref += '_';
        ref += v.name;
        out_ += ref;
        out_ += ": "sv;
        appendValueType(id);
        if (v.kind == ValueKind::Parameter) out_ += " : has_default"sv;
        appendSliceComment({id});
        out_ += '\n';
      }
    }
    out_ += "\n"sv;
  }

  void computeUsedResults() {
    used_.assign(graph_.values.size(), false);
    for (const Op& op : graph_.ops)
      for (const Operand& o : op.operands)
        if (o.isValue()) used_[o.value] = true;
    for (ValueId v : graph_.outputs) used_[v] = true;
  }

  // `  # slice [0:64, 0:16] of (64, 64)` in a rank's local graph; "; "-joined for several values.
  // `  # slice [0:4, 2:4] of (8, 4); slice ...` on local graphs.
  void appendSliceComment(const std::vector<ValueId>& values) {
    if (!graph_.localShapes) return;
    out_ += "  # "sv;
    for (size_t i = 0; i < values.size(); ++i) {
      const Value& v = graph_.value(values[i]);
      if (i) out_ += "; "sv;
      out_ += "slice ["sv;
      const RankSlice& slice = *v.rankSlice;
      for (size_t d = 0; d < slice.ranges.size(); ++d) {
        if (d) out_ += ", "sv;
        text::appendInt(out_, slice.ranges[d].first);
        out_ += ':';
        text::appendInt(out_, slice.ranges[d].second);
      }
      out_ += "] of "sv;
      text::appendTuple(out_, slice.globalShape);
    }
  }

  std::string nextNode() {
    std::string node = "%";
    text::appendInt(node, counter_++);
    return node;
  }

  std::vector<TensorType> resultTypes(const Op& op) const {
    std::vector<TensorType> types;
    for (ValueId r : op.results) types.push_back(graph_.value(r).type);
    return types;
  }

  void printComments(const Op& op) {
    if (op.modelIndex >= 0 && op.parallel->hasSharding) {
      out_ += "      # strategy: "sv;
      appendOriginText(op);
      out_ += '\n';
    }
    if (!op.reason.empty()) {
      out_ += "      # reason: "sv;
      out_ += op.reason;
      out_ += '\n';
    }
    if (options_.locations && op.loc.valid())
      fmt::format_to(std::back_inserter(out_), "      # In file {}:{}\n", options_.modelFileName, formatLoc(op.loc));
    if (options_.scopes) {
      // An inserted op belongs to the module of the op it was inserted for, as in MindSpore.
      const Op& model = op.inserted() && op.owner != kNoId ? graph_.op(op.owner) : op;
      if (const std::string& module = graph_.moduleOf(model); !module.empty()) {
        out_ += "      # scope: "sv;
        out_ += module;
        out_ += '\n';
      }
    }
  }

  // ` primitive_attrs: {k: v, ...}` in key order, or nothing: the op's attrs (already in key
  // order) merged with the configured strategies and layouts, which win over an attr of the
  // same name.
  void appendPrimitiveAttrs(const Op& op, const AttrMap& attrs) {
    const OpAnnotation& a = *op.annotation;
    if (attrs.empty() && !a.inStrategy && !a.outStrategy && !a.inLayout && !a.outLayout) return;
    std::vector<std::pair<std::string_view, std::string>> configured;  // in key order
    if (settings_.mesh && a.inLayout) configured.emplace_back("in_layout", formatAliasMaps(*a.inLayout, *settings_.mesh));
    if (a.inStrategy) configured.emplace_back("in_strategy", formatStrategy(*a.inStrategy));
    if (settings_.mesh && a.outLayout) configured.emplace_back("out_layout", formatAliasMaps(*a.outLayout, *settings_.mesh));
    if (a.outStrategy) configured.emplace_back("out_strategy", formatStrategy(*a.outStrategy));
    if (attrs.empty() && configured.empty()) return;
    out_ += " primitive_attrs: {"sv;
    bool first = true;
    auto entry = [&](std::string_view key) {
      if (!first) out_ += ", "sv;
      first = false;
      out_ += key;
      out_ += ": "sv;
    };
    // irc's own attributes at their defaults are not MindSpore's primitive's: not printed.
    const OpDef* def = findOpDef(op.type);
    auto unset = [&](const std::string& key, const Attribute& value) {
      if (!def) return false;
      for (const AttrSpec& spec : def->attrs)
        if (spec.name == key) return spec.ircOnly && spec.defaultValue && *spec.defaultValue == value;
      return false;
    };
    auto next = configured.begin();
    for (const auto& [key, value] : attrs) {
      if (unset(key, value)) continue;
      for (; next != configured.end() && next->first <= key; ++next) {
        entry(next->first);
        out_ += next->second;
      }
      if (next != configured.begin() && std::prev(next)->first == key) continue;  // configured wins
      entry(key);
      appendAttribute(out_, value);
    }
    for (; next != configured.end(); ++next) {
      entry(next->first);
      out_ += next->second;
    }
    out_ += '}';
  }

  void printOp(const Op& op) {
    // Inserted ops of the global graph print with the dumped rank's groups and bounds.
    const OpForRank view(graph_, op, options_.rank);
    const std::vector<Operand>& operands = view.operands();
    const AttrMap& attrs = view.attrs();
    const OpDef& def = *findOpDef(op.type);
    // Concat takes its tensors through one MakeTuple node, as MindSpore prints it (a Receive, whose
    // only operand is its Send's in the global graph, takes it directly).
    const bool throughTuple = !def.operands.empty() && def.operands.back().kind == OperandKind::TensorList &&
                              rulesOf(def).runsAs(def) != RunsAs::Receive;
    std::string tupleNode, tupleType;
    if (throughTuple) {
      std::vector<TensorType> types;
      for (const Operand& o : operands) types.push_back(graph_.value(o.value).type);
      tupleType = formatTupleType(types);
      tupleNode = nextNode();
      fmt::format_to(std::back_inserter(out_), "  {}({}.make_tuple) = MakeTuple(", tupleNode, op.name);
      appendOperands(operands);
      out_ += ")\n      : ("sv;
      appendOperandTypes(operands);
      fmt::format_to(std::back_inserter(out_), ") -> ({})\n", tupleType);
    }
    std::string node = nextNode();
    out_ += "  "sv;
    out_ += node;
    out_ += '(';
    out_ += op.printedName.empty() ? op.name : op.printedName;
    out_ += ") = "sv;
    out_ += op.type;
    out_ += '(';
    if (throughTuple) out_ += tupleNode;
    else appendOperands(operands);
    out_ += ") {instance name: "sv;
    out_ += op.instanceName;
    out_ += '}';
    appendPrimitiveAttrs(op, attrs);
    out_ += '\n';
    appendParallelPrefix(op);
    out_ += "      : ("sv;
    if (throughTuple) out_ += tupleType;
    else appendOperandTypes(operands);
    out_ += ") -> ("sv;
    std::string resultText;
    if (def.tupleResult()) {
      resultText = formatTupleType(resultTypes(op));
      out_ += resultText;
    } else {
      appendValueType(op.results.at(0));
    }
    out_ += ")\n"sv;
    printComments(op);
    if (!def.tupleResult()) {
      refs_[op.results[0]] = std::move(node);
      return;
    }
    for (size_t j = 0; j < op.results.size(); ++j) {
      if (!used_[op.results[j]]) continue;
      std::string item = nextNode();
      out_ += "  "sv;
      out_ += item;
      out_ += '(';
      out_ += op.name;
      out_ += ".getitem."sv;
      text::appendInt(out_, static_cast<int64_t>(j));
      out_ += ") = TupleGetItem("sv;
      out_ += node;
      out_ += ", "sv;
      text::appendInt(out_, static_cast<int64_t>(j));
      out_ += ")\n      : ("sv;
      out_ += resultText;
      out_ += ", <Int64>) -> ("sv;
      text::appendTensorType(out_, graph_.value(op.results[j]).type);
      out_ += ")\n"sv;
      refs_[op.results[j]] = std::move(item);
    }
  }

  void appendOperands(const std::vector<Operand>& operands) {
    for (size_t i = 0; i < operands.size(); ++i) {
      if (i) out_ += ", "sv;
      const Operand& o = operands[i];
      if (o.isValue()) out_ += refs_[o.value];
      else appendAttribute(out_, *o.constant);
    }
  }

  void appendOperandTypes(const std::vector<Operand>& operands) {
    for (size_t i = 0; i < operands.size(); ++i) {
      if (i) out_ += ", "sv;
      const Operand& o = operands[i];
      if (o.isValue()) appendValueType(o.value);
      else appendConstantType(out_, *o.constant);
    }
  }

  // `<Tensor[Float32], (64, 64)>`: a value's type is printed for its producer and again for
  // each consumer, so its text is made once per dump and copied from then on.
  void appendValueType(ValueId v) {
    TypeSpan& span = typeSpans_[v];
    if (span.length == 0) {
      span.offset = typeTexts_.size();
      text::appendTensorType(typeTexts_, graph_.value(v).type);
      span.length = typeTexts_.size() - span.offset;
    }
    out_.append(typeTexts_.data() + span.offset, span.length);
  }

  void printReturn() {
    std::vector<std::string> refs;
    std::vector<TensorType> types;
    for (ValueId v : graph_.outputs) {
      refs.push_back(refs_[v]);
      types.push_back(graph_.value(v).type);
    }
    if (refs.size() == 1) {
      appendReturn(refs[0], formatTensorType(types[0]));
      return;
    }
    std::vector<std::string> elemTypes;
    for (const auto& t : types) elemTypes.push_back(formatTensorType(t));
    std::string node = nextNode();
    fmt::format_to(std::back_inserter(out_), "  {}(return.make_tuple) = MakeTuple({})\n      : ({}) -> ({})\n", node,
                   fmt::join(refs, ", "), fmt::join(elemTypes, ", "), formatTupleType(types));
    appendReturn(node, formatTupleType(types));
  }

  // `  Return(%7)  # slice ...\n      : (<type>)`
  void appendReturn(const std::string& node, const std::string& type) {
    out_ += "  Return("sv;
    out_ += node;
    out_ += ')';
    appendSliceComment(graph_.outputs);
    out_ += "\n      : ("sv;
    out_ += type;
    out_ += ")\n"sv;
  }

  // ` {in_strategy: ...}` from step_parallel_begin on; after layout inference also MindSpore's
  // parallel details: device_matrix, inputs_tensor_map, outputs_tensor_map (and partial axes).
  void appendParallelPrefix(const Op& op) {
    const OpParallelState& p = *op.parallel;
    if (!p.hasSharding) return;
    const size_t start = out_.size();
    // Each part is preceded by ", " except the first, which opens the braces.
    auto part = [&](std::string_view key) {
      out_ += out_.size() == start ? " {"sv : ", "sv;
      out_ += key;
      out_ += ": "sv;
    };
    if (!takesLayoutsFromNeighbours(op)) {
      if (p.sharding.layoutForm && settings_.mesh) {
        part("in_layout");
        out_ += formatAliasMaps(layoutMapsOf(op), *settings_.mesh);
      } else {
        part("in_strategy");
        text::appendStrategy(out_, strategyOf(op));
      }
      if (const ShardStrategy* outStrategy = outStrategyOf(op)) {
        part("out_strategy");
        text::appendStrategy(out_, *outStrategy);
      }
    }
    if (p.layoutsInferred) {
      part("device_matrix");
      text::appendTuple(out_, p.sharding.mesh.dims);
      part("inputs_tensor_map");
      appendTensorMaps(p.inputLayouts);
      part("outputs_tensor_map");
      appendTensorMaps(p.outputLayouts);
      bool partial = false;
      for (const auto& l : p.outputLayouts) partial |= l.isPartial();
      if (partial) {
        part("outputs_partial");
        out_ += '(';
        for (size_t i = 0; i < p.outputLayouts.size(); ++i) {
          if (i) out_ += ", "sv;
          const TensorLayout& l = p.outputLayouts[i];
          if (!l.isPartial()) {
            out_ += "()"sv;
            continue;
          }
          out_ += reduceOpName(l.partialOp);
          text::appendTuple(out_, l.partialFromRight());
        }
        out_ += ')';
      }
    }
    if (out_.size() != start) out_ += '}';
  }

  void appendTensorMaps(const std::vector<TensorLayout>& layouts) {
    out_ += '(';
    for (size_t i = 0; i < layouts.size(); ++i) {
      if (i) out_ += ", "sv;
      text::appendTensorMap(out_, layouts[i]);
    }
    out_ += ')';
  }

  // Where the op's strategy came from: user, tensor (the sharding of ...), default, or
  // propagated from ... with the edge, its cost and the next best strategy.
  void appendOriginText(const Op& op) {
    const StrategyOrigin& o = op.parallel->origin;
    auto nextBest = [&] {
      if (!o.hasNextBest) return;
      out_ += "; next best "sv;
      text::appendStrategy(out_, o.nextBest);
      out_ += " cost "sv;
      out_ += formatNumber(o.nextBestCost);
    };
    auto edgeAndCost = [&](const std::string& edge) {
      out_ += "edge "sv;
      out_ += edge;
      out_ += ", cost "sv;
      out_ += formatNumber(o.cost);
    };
    switch (o.kind) {
      case OriginKind::User: out_ += "user"sv; return;
      case OriginKind::Searched:
        out_ += "searched (own time "sv;
        out_ += formatNumber(o.cost);
        out_ += " s"sv;
        if (o.hasNextBest) {
          out_ += "; next best "sv;
          text::appendStrategy(out_, o.nextBest);
          out_ += " +"sv;
          out_ += formatNumber(o.nextBestCost);
          out_ += " s"sv;
        }
        out_ += ')';
        return;
      case OriginKind::Tensor: {
        std::string from = originSourceName(graph_, o);
        if (from.empty()) {
          out_ += "tensor"sv;
        } else {
          out_ += "tensor (the sharding of '"sv;
          out_ += from;
          out_ += '\'';
          std::string edge = originEdgeText(graph_, op, o);
          if (!edge.empty()) {
            out_ += ", "sv;
            edgeAndCost(edge);
          }
          out_ += ')';
        }
        nextBest();
        return;
      }
      case OriginKind::Default: {
        std::string from = originSourceName(graph_, o);
        out_ += "default"sv;
        if (!from.empty()) {
          out_ += " ("sv;
          out_ += from;
          out_ += ')';
        }
        return;
      }
      case OriginKind::Propagated: {
        out_ += "propagated from "sv;
        out_ += originSourceName(graph_, o);
        std::string edge = originEdgeText(graph_, op, o);
        if (!edge.empty()) {
          out_ += " ("sv;
          edgeAndCost(edge);
          out_ += ')';
        }
        nextBest();
        return;
      }
    }
    out_ += "default"sv;
  }

  const Graph& graph_;
  const PrintOptions& options_;
  // The compile's settings, which every line printed reads (a test printing a bare graph: the
  // model's own).
  const ParallelSettings& settings_;
  std::ostream* sink_;
  std::vector<std::string> refs_;
  std::vector<bool> used_;
  struct TypeSpan {
    size_t offset = 0;
    size_t length = 0;  // 0: not made yet (no type text is empty)
  };
  std::string typeTexts_;            // every value type text made so far, one after another
  std::vector<TypeSpan> typeSpans_;  // per value: where its text is in typeTexts_
  int counter_ = 0;
  std::string out_;
};

}  // namespace

std::string printGraph(const Graph& graph, const PrintOptions& options) { return Printer(graph, options, nullptr).print(); }

void printGraph(const Graph& graph, const PrintOptions& options, std::ostream& out) { Printer(graph, options, &out).print(); }

}  // namespace irc

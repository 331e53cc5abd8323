// Needs: every op with a rule has a sharding (strategy propagation). Guarantees: every such op
// knows the layout of each tensor operand as it needs it, of each result as it computes it
// (partial included), its forward ops and each result's layout after them; every input and
// parameter knows the layout it is held in (its annotation, else what its first consumer needs).
#include "passes/layout_inference.h"

#include <algorithm>

#include <fmt/format.h>

#include "passes/op_rule.h"
#include "passes/op_sharding.h"
#include "passes/propagation_common.h"

namespace irc {

int tensorOperandIndex(const Op& op, int operandIndex) {
  int k = 0;
  for (int i = 0; i < operandIndex; ++i) k += op.operands[i].isValue() ? 1 : 0;
  return k;
}

const TensorLayout& layoutOfValue(const Graph& graph, ValueId v) {
  while (true) {
    const Value& value = graph.value(v);
    if (value.producer == kNoId) {
      if (!value.layout) throw InternalError(fmt::format("'{}' has no layout: layout inference has not run", value.name));
      return *value.layout;
    }
    const Op& op = graph.op(value.producer);
    if (!op.inserted()) return op.parallel.finalLayouts.at(value.resultIndex);
    auto first = std::find_if(op.operands.begin(), op.operands.end(), [](const Operand& o) { return o.isValue(); });
    if (first == op.operands.end()) throw InternalError(fmt::format("inserted op '{}' has no input", op.name));
    v = first->value;
  }
}

const TensorLayout& layoutNeeded(const Op& op, int operandIndex) {
  return op.parallel.inputLayouts.at(tensorOperandIndex(op, operandIndex));
}

namespace {

class LayoutInferencePass : public Pass {
 public:
  explicit LayoutInferencePass(const CompileOptions& options) : options_(options) {}
  std::string_view name() const override { return "layout_inference"; }
  std::string_view dumpName() const override { return "tensor_layout"; }

  PassStatus run(Graph& graph, PassContext& context) override {
    for (OpId id : graph.order) {
      Op& op = graph.op(id);
      if (op.inserted()) continue;
      OpParallelState& p = op.parallel;
      const std::optional<OpRule>& rule = p.rule;
      if (!p.hasSharding || !rule) {
        context.diags.error(op.loc, fmt::format("op '{}' has no strategy: layout inference needs strategy propagation first "
                                                "(run the pipeline from the start, or include sharding_propagation in --passes)",
                                                op.name));
        return PassStatus::Failed;
      }
      OpView view = viewOf(graph, op);
      p.inputLayouts.clear();
      p.outputLayouts.clear();
      p.finalLayouts.clear();
      p.beforeConstraint.clear();
      for (size_t k = 0; k < rule->operands.size(); ++k)
        p.inputLayouts.push_back(operandLayout(*rule, p.sharding, static_cast<int>(k), view.operandShapes[k]));
      for (size_t r = 0; r < rule->results.size(); ++r) {
        TensorLayout computed = resultLayout(*rule, p.sharding, static_cast<int>(r), view.resultShapes[r]);
        p.outputLayouts.push_back(computed);
        const auto& requested = p.sharding.requestedOutputs;
        if (r < requested.size() && requested[r]) {
          p.finalLayouts.push_back(*requested[r]);
        } else {
          computed.partialAxes.clear();
          computed.partialOp = ReduceOp::Sum;
          p.finalLayouts.push_back(computed);
        }
        p.beforeConstraint.push_back(std::nullopt);
        // The result is held in another layout than the op computes (factor propagation's fixed
        // point, a Reshape's consumer): consumers see that; the op converts right after itself.
        const auto& converted = p.sharding.convertedOutputs;
        if (r < converted.size() && converted[r] && !converted[r]->sameAs(p.finalLayouts.back())) {
          p.beforeConstraint.back() = p.finalLayouts.back();
          p.finalLayouts.back() = *converted[r];
        }
        // An output `sharding` constraint: consumers see it; the op converts right after.
        const auto& constraints = op.annotation.outputSharding;
        if (r < constraints.size() && constraints[r] && options_.mesh) {
          TensorLayout wanted = layoutOfSharding(*constraints[r], *options_.mesh, view.resultShapes[r]);
          if (!wanted.sameAs(p.finalLayouts.back())) {
            if (!p.beforeConstraint.back()) p.beforeConstraint.back() = p.finalLayouts.back();
            p.finalLayouts.back() = wanted;
          }
        }
      }
      p.forwardOps = forwardOps(*rule, p.sharding, view);
      p.layoutsInferred = true;
    }
    inferGraphInputLayouts(graph);
    return PassStatus::Changed;
  }

 private:
  void inferGraphInputLayouts(Graph& graph) const {
    auto uses = computeUses(graph);
    for (const auto* list : {&graph.inputs, &graph.parameters})
      for (ValueId id : *list) {
        Value& v = graph.value(id);
        if (v.sharding && options_.mesh) {
          v.layout = layoutOfSharding(*v.sharding, *options_.mesh, v.type.shape);
          continue;
        }
        v.layout = TensorLayout::replicated(DeviceMatrix::unnamed({options_.deviceNum}), v.type.shape);
        for (const Use& use : uses[id]) {
          const Op& consumer = graph.op(use.op);
          if (!consumer.parallel.layoutsInferred) continue;
          v.layout = layoutNeeded(consumer, use.operandIndex);
          break;
        }
      }
  }

  CompileOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createLayoutInferencePass(const CompileOptions& options) {
  return std::make_unique<LayoutInferencePass>(options);
}

}  // namespace irc

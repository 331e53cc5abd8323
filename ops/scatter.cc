// ScatterElements and ScatterNd (ONNX's ScatterElements and ScatterND with reduction none; the
// writes of index_put and masked updates): a copy of data with the updates written where the
// indices say. The dims the indices address are needed whole in data and output; every other
// dim passes through data, indices, updates and the output alike.
#include <algorithm>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

// (irc) ONNX's `reduction`: how an update meets what is there (and a repeated index's earlier
// updates): none writes it, add/mul/max/min combine.
const std::vector<std::string> kReductions = {"none", "add", "mul", "max", "min"};

double combine(const std::string& reduction, double there, double update) {
  if (reduction == "add") return there + update;
  if (reduction == "mul") return there * update;
  if (reduction == "max") return std::max(there, update);
  if (reduction == "min") return std::min(there, update);
  return update;
}

std::optional<InferError> checkReduction(const AttrMap& attrs) {
  auto it = attrs.find("reduction");
  if (it == attrs.end()) return std::nullopt;
  const std::string& r = std::get<std::string>(it->second);
  if (std::find(kReductions.begin(), kReductions.end(), r) == kReductions.end())
    return fail(fmt::format("reduction '{}' is none of none, add, mul, max, min", r), -1, "reduction");
  return std::nullopt;
}

// data, indices (integer), updates: the checks both ops share.
std::optional<InferError> checkOperands(const std::vector<InferOperand>& in) {
  const TensorType& data = *in[0].tensor;
  const TensorType& indices = *in[1].tensor;
  const TensorType& updates = *in[2].tensor;
  if (!isInteger(indices.dtype))
    return fail(fmt::format("indices must have an integer dtype; got {}", modelName(indices.dtype)), 1);
  if (updates.dtype != data.dtype)
    return fail(fmt::format("updates are {}; data is {}", modelName(updates.dtype), modelName(data.dtype)), 2);
  return std::nullopt;
}

class ScatterElements : public OpFamilyRules {
 public:
  // The indices route the gradient back.
  SavedForBackward savedForBackward(const Op&) const override { return {{1}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"ScatterElements",
                    OpFamily::Scatter,
                    {tensor("data"), tensor("indices"), tensor("updates")},
                    {attr("axis", AttrKind::Int, int64_t{0}), attr("reduction", AttrKind::String, std::string("none"))}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    if (auto e = checkOperands(in)) return *e;
    if (auto e = checkReduction(attrs)) return *e;
    const Shape& data = in[0].tensor->shape;
    const Shape& indices = in[1].tensor->shape;
    if (indices != in[2].tensor->shape)
      return fail(
          fmt::format("updates {} must have the indices' shape {}", formatShape(in[2].tensor->shape), formatShape(indices)), 2);
    if (indices.size() != data.size())
      return fail(fmt::format("indices {} must have the rank of data {}", formatShape(indices), formatShape(data)), 1);
    auto axis = normalizeAxis(intAttr(attrs, "axis"), data.size());
    if (!axis) return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), data.size()), -1, "axis");
    for (size_t d = 0; d < data.size(); ++d)
      if (indices[d] > data[d])
        return fail(fmt::format("dim {} of indices ({}) is larger than data's ({})", d, indices[d], data[d]), 1);
    return std::vector<TensorType>{*in[0].tensor};
  }
  // out = data; out[i... with i[axis] = indices[i...]] = updates[i...], in row-major order.
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    const TensorValue& data = *in[0];
    const TensorValue& indices = *in[1];
    const int64_t axis = *normalizeAxis(intAttr(op, "axis"), data.shape.size());
    const std::string& reduction = std::get<std::string>(op.attrs.at("reduction"));
    TensorValue out = data;
    const auto so = stridesOf(data.shape);
    int64_t i = 0;
    forEach(indices.shape, [&](const Index& idx) {
      Index at = idx;
      at[axis] = indexWithin(op, indices.data[i], data.shape[axis]);
      double& there = out.data[offsetOf(at, so)];
      there = combine(reduction, there, in[2]->data[i]);
      ++i;
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {s.operands[0], {DType::Int64, {8, 2}}, {DType::Float32, {8, 2}}};
    s.attrs["axis"] = int64_t{1};
    s.note = "data (8, 8), indices and updates (8, 2), axis 1";
  }
  // The output is data's; a dim other than the axis is shared with indices and updates where
  // they cover it whole (else those dims are replicated).
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& data = in.operands[0].shape;
    const Shape& indices = in.operands[1].shape;
    const int64_t axis = *normalizeAxis(std::get<int64_t>(in.attrs.at("axis")), data.size());
    RuleBuilder b;
    DimFactors dataDims, indexDims;
    for (size_t d = 0; d < data.size(); ++d) {
      bool shared = static_cast<int64_t>(d) != axis && data[d] == indices[d];
      int f = b.factor(data[d], shared ? FactorKind::PassThrough : FactorKind::Replicated);
      dataDims.push_back({f});
      indexDims.push_back({shared ? f : b.factor(indices[d], FactorKind::Replicated)});
    }
    b.rule.operands = {dataDims, indexDims, indexDims};
    b.rule.results = {dataDims};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim the indices address"; }
  int64_t indexBound(const Graph& g, const Op& op, size_t operand) const override {
    if (operand != 1) return -1;
    const Shape& data = g.value(op.operands[0].value).type.shape;
    return data[*normalizeAxis(std::get<int64_t>(op.attrs.at("axis")), data.size())];
  }
};

class ScatterND : public OpFamilyRules {
 public:
  // The indices route the gradient back.
  SavedForBackward savedForBackward(const Op&) const override { return {{1}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"ScatterNd",
                    OpFamily::Scatter,
                    {tensor("data"), tensor("indices"), tensor("updates")},
                    {attr("reduction", AttrKind::String, std::string("none"))}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    if (auto e = checkOperands(in)) return *e;
    if (auto e = checkReduction(attrs)) return *e;
    const Shape& data = in[0].tensor->shape;
    const Shape& indices = in[1].tensor->shape;
    if (indices.empty() || indices.back() < 1 || indices.back() > static_cast<int64_t>(data.size()))
      return fail(fmt::format("the indices' last dim must address 1 to {} dims of data {}; indices are {}", data.size(),
                              formatShape(data), formatShape(indices)),
                  1);
    Shape expected(indices.begin(), indices.end() - 1);
    expected.insert(expected.end(), data.begin() + indices.back(), data.end());
    if (in[2].tensor->shape != expected)
      return fail(fmt::format("updates {} must have shape {} (the indices' leading dims, then data's unaddressed ones)",
                              formatShape(in[2].tensor->shape), formatShape(expected)),
                  2);
    return std::vector<TensorType>{*in[0].tensor};
  }
  // out = data; out[indices[i..., :], rest...] = updates[i..., rest...].
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    const TensorValue& data = *in[0];
    const TensorValue& indices = *in[1];
    const TensorValue& updates = *in[2];
    const size_t k = static_cast<size_t>(indices.shape.back()), lookups = indices.shape.size() - 1;
    const std::string& reduction = std::get<std::string>(op.attrs.at("reduction"));
    TensorValue out = data;
    const auto so = stridesOf(data.shape), si = stridesOf(indices.shape);
    int64_t u = 0;
    forEach(updates.shape, [&](const Index& idx) {
      Index where(idx.begin(), idx.begin() + lookups);
      where.push_back(0);
      Index at(data.shape.size());
      for (size_t j = 0; j < k; ++j) {
        where.back() = static_cast<int64_t>(j);
        at[j] = indexWithin(op, indices.data[offsetOf(where, si)], data.shape[j]);
      }
      for (size_t d = k; d < data.shape.size(); ++d) at[d] = idx[lookups + d - k];
      double& there = out.data[offsetOf(at, so)];
      there = combine(reduction, there, updates.data[u++]);
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {s.operands[0], {DType::Int64, {2, 1}}, {DType::Float32, {2, 8}}};
    s.note = "data (8, 8), indices (2, 1), updates (2, 8)";
  }
  // data's addressed dims are replicated; its other dims pass through with the updates' trailing
  // dims; the indices' leading dims with the updates' leading dims (each rank writes all of them).
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& data = in.operands[0].shape;
    const Shape& indices = in.operands[1].shape;
    const size_t k = static_cast<size_t>(indices.back());
    RuleBuilder b;
    DimFactors dataDims, indexDims, updateDims;
    for (size_t d = 0; d < k; ++d) dataDims.push_back({b.factor(data[d], FactorKind::Replicated)});
    for (size_t d = 0; d + 1 < indices.size(); ++d) {
      int f = b.factor(indices[d], FactorKind::Replicated);
      indexDims.push_back({f}), updateDims.push_back({f});
    }
    indexDims.push_back({b.factor(indices.back(), FactorKind::Replicated)});
    for (size_t d = k; d < data.size(); ++d) {
      int f = b.factor(data[d]);
      dataDims.push_back({f}), updateDims.push_back({f});
    }
    b.rule.operands = {dataDims, indexDims, updateDims};
    b.rule.results = {dataDims};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim the indices address, or one they write along"; }
  int64_t indexBound(const Graph& g, const Op& op, size_t operand) const override {
    if (operand != 1) return -1;
    const Shape& data = g.value(op.operands[0].value).type.shape;
    const Shape& indices = g.value(op.operands[1].value).type.shape;
    return *std::min_element(data.begin(), data.begin() + indices.back());
  }
};

}  // namespace

const OpFamilyRules& scatterElements() {
  static const ScatterElements rules;
  return rules;
}

const OpFamilyRules& scatterND() {
  static const ScatterND rules;
  return rules;
}

}  // namespace irc::families

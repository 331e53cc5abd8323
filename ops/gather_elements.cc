// GatherElements and GatherND (ONNX's index gathers; MindSpore's GatherD and GatherNd). The
// dims the indices address are needed whole; every other dim passes through from the indices
// (or the data) to the output.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferGatherElements(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& data = *in[0].tensor;
  const TensorType& indices = *in[1].tensor;
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  if (!isInteger(indices.dtype))
    return fail(fmt::format("indices must have an integer dtype; got {}", modelName(indices.dtype)), 1);
  if (static_cast<int64_t>(indices.shape.size()) != rank || rank < 1)
    return fail(
        fmt::format("indices {} must have the rank of data {} (>= 1)", formatShape(indices.shape), formatShape(data.shape)), 1);
  auto axis = normalizeAxis(intAttr(attrs, "axis"), rank);
  if (!axis) return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), rank), -1, "axis");
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && indices.shape[d] > data.shape[d])
      return fail(fmt::format("dim {} of indices ({}) is larger than data's ({})", d, indices.shape[d], data.shape[d]), 1);
  return std::vector<TensorType>{{data.dtype, indices.shape}};
}

// out[i...] = data[i... with i[axis] = indices[i...]]
TensorValue gatherElements(const Op& op, const TensorValue& data, const TensorValue& indices) {
  const int64_t axis = *normalizeAxis(std::get<int64_t>(op.attrs.at("axis")), data.shape.size());
  const auto sd = stridesOf(data.shape);
  TensorValue out = TensorValue::zeros(indices.shape);
  int64_t i = 0;
  forEach(indices.shape, [&](const Index& idx) {
    Index at = idx;
    at[axis] = indexWithin(op, indices.data[i], data.shape[axis]);
    out.data[i++] = data.data[offsetOf(at, sd)];
  });
  return out;
}

class GatherElements : public OpFamilyRules {
 public:
  // The indices route the gradient back.
  SavedForBackward savedForBackward(const Op&) const override { return {{1}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"GatherElements",
                    OpFamily::IndexGather,
                    {tensor("data"), tensor("indices")},
                    {attr("axis", AttrKind::Int, int64_t{0})}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferGatherElements(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    return {gatherElements(op, *in[0], *in[1])};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands.push_back({DType::Int64, {8, 4}});
    s.attrs["axis"] = int64_t{1};
    s.note = "data (8, 8), indices (8, 4), axis 1";
  }
  // Each output dim is the indices' dim; data shares it where it has the same size, except on
  // the axis, whose every row a lookup may read.
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& data = in.operands[0].shape;
    const Shape& indices = in.operands[1].shape;
    const int64_t axis = *normalizeAxis(std::get<int64_t>(in.attrs.at("axis")), data.size());
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(indices);
    DimFactors dataDims;
    for (size_t d = 0; d < data.size(); ++d) {
      bool shared = static_cast<int64_t>(d) != axis && data[d] == indices[d];
      dataDims.push_back({shared ? f[d] : b.factor(data[d], FactorKind::Replicated)});
    }
    b.rule.operands = {dataDims, single(f)};
    b.rule.results = {single(f)};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a data dim the indices address"; }
  int64_t indexBound(const Graph& g, const Op& op, size_t operand) const override {
    if (operand != 1) return -1;
    const Shape& data = g.value(op.operands[0].value).type.shape;
    return data[*normalizeAxis(std::get<int64_t>(op.attrs.at("axis")), data.size())];
  }
};

InferResult inferGatherND(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& data = *in[0].tensor;
  const TensorType& indices = *in[1].tensor;
  const int64_t b = intAttr(attrs, "batch_dims");
  if (!isInteger(indices.dtype))
    return fail(fmt::format("indices must have an integer dtype; got {}", modelName(indices.dtype)), 1);
  const int64_t ri = static_cast<int64_t>(indices.shape.size()), rd = static_cast<int64_t>(data.shape.size());
  if (b < 0 || ri < b + 1 || rd < b + 1)
    return fail(fmt::format("batch_dims {} needs data and indices of rank > {}; got {} and {}", b, b, formatShape(data.shape),
                            formatShape(indices.shape)),
                -1, "batch_dims");
  const int64_t k = indices.shape.back();
  if (k < 1 || b + k > rd)
    return fail(fmt::format("the indices' last dim ({}) addresses more dims than data {} has after its {} batch dims", k,
                            formatShape(data.shape), b),
                1);
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[d] != indices.shape[d])
      return fail(fmt::format("batch dim {} differs: data {} and indices {}", d, data.shape[d], indices.shape[d]), 1);
  Shape out(indices.shape.begin(), indices.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + b + k, data.shape.end());
  return std::vector<TensorType>{{data.dtype, out}};
}

// out[batch..., i..., rest...] = data[batch..., indices[batch..., i..., :], rest...]
TensorValue gatherND(const Op& op, const TensorValue& data, const TensorValue& indices, const Shape& outShape) {
  const size_t b = static_cast<size_t>(std::get<int64_t>(op.attrs.at("batch_dims")));
  const size_t k = static_cast<size_t>(indices.shape.back());
  const size_t lookups = indices.shape.size() - 1;  // out dims that come from the indices
  const auto sd = stridesOf(data.shape), si = stridesOf(indices.shape);
  TensorValue out = TensorValue::zeros(outShape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    Index at(data.shape.size());
    Index where(idx.begin(), idx.begin() + lookups);
    where.push_back(0);
    for (size_t d = 0; d < b; ++d) at[d] = idx[d];
    for (size_t j = 0; j < k; ++j) {
      where.back() = static_cast<int64_t>(j);
      at[b + j] = indexWithin(op, indices.data[offsetOf(where, si)], data.shape[b + j]);
    }
    for (size_t d = b + k; d < data.shape.size(); ++d) at[d] = idx[lookups + d - b - k];
    out.data[i++] = data.data[offsetOf(at, sd)];
  });
  return out;
}

class GatherND : public OpFamilyRules {
 public:
  // The indices route the gradient back.
  SavedForBackward savedForBackward(const Op&) const override { return {{1}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"GatherNd",
                    OpFamily::IndexGather,
                    {tensor("data"), tensor("indices")},
                    {attr("batch_dims", AttrKind::Int, int64_t{0})}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferGatherND(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {gatherND(op, *in[0], *in[1], results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands.push_back({DType::Int64, {4, 1}});
    s.note = "data (8, 8), indices (4, 1)";
  }
  // Batch dims are shared by all three; the indices' other leading dims and data's dims past the
  // addressed ones pass to the output; the addressed dims and the index tuple are replicated.
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& data = in.operands[0].shape;
    const Shape& indices = in.operands[1].shape;
    const size_t b = static_cast<size_t>(std::get<int64_t>(in.attrs.at("batch_dims")));
    const size_t k = static_cast<size_t>(indices.back());
    RuleBuilder rb;
    DimFactors dataDims, indexDims, outDims;
    for (size_t d = 0; d < b; ++d) {
      int f = rb.factor(data[d]);
      dataDims.push_back({f}), indexDims.push_back({f}), outDims.push_back({f});
    }
    for (size_t d = b; d + 1 < indices.size(); ++d) {
      int f = rb.factor(indices[d]);
      indexDims.push_back({f}), outDims.push_back({f});
    }
    indexDims.push_back({rb.factor(indices.back(), FactorKind::Replicated)});
    for (size_t d = b; d < b + k; ++d) dataDims.push_back({rb.factor(data[d], FactorKind::Replicated)});
    for (size_t d = b + k; d < data.size(); ++d) {
      int f = rb.factor(data[d]);
      dataDims.push_back({f}), outDims.push_back({f});
    }
    rb.rule.operands = {dataDims, indexDims};
    rb.rule.results = {outDims};
    return rb.done();
  }
  std::string_view replicatedWhy() const override { return "a data dim the indices address, or the index tuple"; }
  // Any index below the smallest addressed dim is in range for every component.
  int64_t indexBound(const Graph& g, const Op& op, size_t operand) const override {
    if (operand != 1) return -1;
    const Shape& data = g.value(op.operands[0].value).type.shape;
    const Shape& indices = g.value(op.operands[1].value).type.shape;
    const size_t b = static_cast<size_t>(std::get<int64_t>(op.attrs.at("batch_dims")));
    return *std::min_element(data.begin() + b, data.begin() + b + indices.back());
  }
};

}  // namespace

const OpFamilyRules& gatherElements() {
  static const GatherElements rules;
  return rules;
}

const OpFamilyRules& gatherND() {
  static const GatherND rules;
  return rules;
}

}  // namespace irc::families

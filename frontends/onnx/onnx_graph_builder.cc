#include "frontends/onnx/onnx_graph_builder.h"

#include <cmath>

#include <fmt/format.h>

#include "frontends/onnx/onnx_tensors.h"
#include "ir/limits.h"
#include "ir/graph_edit.h"
#include "ops/reference_ops.h"
#include "ops/shape_inference.h"

namespace irc::onnx_import {
namespace {

int64_t elementCount(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

OperandKind kindOf(const OpDef& def, size_t i) {
  if (i < def.operands.size()) return def.operands[i].kind;
  return def.operands.back().kind;  // Concat's list
}

}  // namespace

std::string GraphBuilder::uniqueName(const std::string& wanted) {
  std::pmr::string name(wanted, &pool_);
  for (int k = 1; names_.count(name); ++k) name = std::pmr::string(fmt::format("{}_{}", wanted, k), &pool_);
  names_.insert(name);
  return std::string(name);
}

const TensorValue* GraphBuilder::dataOf(Constant& c, int nodeIndex) {
  if (!c.data) {
    std::string problem;
    ExternalDataSource external{options_.externalDataDir};
    auto value = valueOfTensor(*c.proto, problem, &external);
    if (!value) {
      diags_.error(nodeLoc(nodeIndex), problem);
      return nullptr;
    }
    c.data = std::make_shared<TensorValue>(std::move(*value));
  }
  return c.data.get();
}

bool GraphBuilder::numbersKnown(Constant& c, int nodeIndex, const std::string& nodeName) {
  if (c.data || !c.proto || externalLocation(*c.proto).empty()) return true;
  if (c.externalMissing) return false;
  std::string problem;
  TensorDataProblem kind = TensorDataProblem::None;
  ExternalDataSource external{options_.externalDataDir};
  auto value = valueOfTensor(*c.proto, problem, &external, &kind);
  if (value) {
    c.data = std::make_shared<TensorValue>(std::move(*value));
    return true;
  }
  if (kind != TensorDataProblem::ExternalFileMissing) return true;  // dataOf reports it where it is read
  c.externalMissing = true;
  diags_.warning(nodeLoc(nodeIndex),
                 fmt::format("{}; '{}' stays a computed op instead of being folded (shapes only)", problem, nodeName));
  return false;
}

ValueId GraphBuilder::parameterOf(Constant& c) {
  if (c.parameter == kNoId) {
    c.parameter = graph.addGraphInput(uniqueName(c.name), c.type, ValueKind::Parameter, {});
    if (options_.keepParameterData && (c.data || c.proto) && !c.externalMissing) {
      if (const TensorValue* data = dataOf(c, -1)) parameterData[c.parameter] = *data;
    }
  }
  return c.parameter;
}

void GraphBuilder::eraseOps(const std::vector<bool>& erase) {
  std::vector<ValueId> renumbered = irc::eraseOps(graph, erase);
  std::map<ValueId, TensorValue> data;
  for (auto& [v, tensor] : parameterData) data.emplace(renumbered[v], std::move(tensor));
  parameterData = std::move(data);
}

ValueId GraphBuilder::addInput(const std::string& name, TensorType type) {
  ValueId id = graph.addGraphInput(uniqueName(name), std::move(type), ValueKind::Input, {});
  terms[std::string_view(name)] = Term{id, nullptr};
  return id;
}

int NodeMapping::opset() const { return builder_.opset(); }

size_t NodeMapping::inputCount() const {
  size_t n = node_.input_size();
  while (n > 0 && node_.input(n - 1).empty()) --n;
  return n;
}

std::optional<Term> NodeMapping::input(size_t i) const {
  if (i >= static_cast<size_t>(node_.input_size()) || node_.input(i).empty()) return std::nullopt;
  return builder_.terms.at(node_.input(i));  // the loader checked that every input is defined
}

const TensorType& NodeMapping::typeOf(const Term& t) const {
  return t.isConstant() ? t.constant->type : builder_.graph.value(t.value).type;
}

std::optional<TensorValue> NodeMapping::constantInput(size_t i, std::string_view what) {
  auto t = input(i);
  if (!t) {
    error(fmt::format("needs its input {} ({})", i, what));
    return std::nullopt;
  }
  if (!t->isConstant()) {
    error(fmt::format("input {} ('{}', {}) must be known at import time; it is computed from the graph's inputs", i,
                      node_.input(i), what));
    return std::nullopt;
  }
  const TensorValue* data = builder_.dataOf(*t->constant, index_);
  if (!data) {
    failed_ = true;
    return std::nullopt;
  }
  return *data;
}

bool NodeMapping::numbersKnown(const Term& t) { return !t.isConstant() || builder_.numbersKnown(*t.constant, index_, name_); }

const TensorValue* NodeMapping::dataOf(const Term& constant) {
  const TensorValue* data = builder_.dataOf(*constant.constant, index_);
  if (!data) failed_ = true;
  return data;
}

const onnx::AttributeProto* NodeMapping::attr(std::string_view attrName) const {
  for (const auto& a : node_.attribute())
    if (a.name() == attrName) return &a;
  return nullptr;
}

int64_t NodeMapping::intAttr(std::string_view attrName, int64_t fallback) const {
  const auto* a = attr(attrName);
  return a ? a->i() : fallback;
}

double NodeMapping::floatAttr(std::string_view attrName, double fallback) const {
  const auto* a = attr(attrName);
  return a ? a->f() : fallback;
}

std::string NodeMapping::stringAttr(std::string_view attrName, std::string fallback) const {
  const auto* a = attr(attrName);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> NodeMapping::intsAttr(std::string_view attrName) const {
  const auto* a = attr(attrName);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void NodeMapping::error(std::string message) {
  failed_ = true;
  builder_.diags().error(builder_.nodeLoc(index_), fmt::format("node '{}' ({}): {}", node_.name().empty() ? name_ : node_.name(),
                                                               node_.op_type(), message));
}

Term NodeMapping::constant(TensorType type, TensorValue data, const std::string& role) {
  auto c = std::make_shared<Constant>();
  c->name = role.empty() ? name_ : fmt::format("{}/{}", name_, role);
  c->type = std::move(type);
  c->data = std::make_shared<TensorValue>(std::move(data));
  return Term{kNoId, std::move(c)};
}

std::optional<Term> NodeMapping::emit1(const std::string& type, std::vector<Arg> args, AttrMap attrs, const std::string& role) {
  auto terms = emit(type, std::move(args), std::move(attrs), role);
  if (!terms) return std::nullopt;
  return terms->front();
}

std::optional<std::vector<Term>> NodeMapping::emit(const std::string& type, std::vector<Arg> args, AttrMap attrs,
                                                   const std::string& role) {
  const OpDef& def = *findOpDef(type);
  for (const AttrSpec& spec : def.attrs)
    if (!attrs.count(spec.name) && spec.defaultValue) attrs[spec.name] = *spec.defaultValue;
  bool fold = true, anyTensor = false;
  size_t highestRank = 0;
  for (const Arg& a : args)
    if (const Term* t = std::get_if<Term>(&a)) {
      anyTensor = true;
      fold = fold && t->isConstant();
      highestRank = std::max(highestRank, typeOf(*t).shape.size());
    }
  fold = fold && anyTensor && def.family != OpFamily::Opaque;  // an opaque op has no numbers to fold
  // Without an external data file its tensors' numbers are unknown: the op stays computed.
  for (const Arg& a : args)
    if (const Term* t = std::get_if<Term>(&a); fold && t) fold = numbersKnown(*t);
  // A one-element constant where the op takes a scalar (Add's y, Where's x and y) is written as
  // a scalar constant, as MindSpore writes `Mul(x, 0.5)`, rather than becoming a parameter.
  if (!fold)
    for (size_t i = 0; i < args.size(); ++i) {
      const Term* t = std::get_if<Term>(&args[i]);
      if (!t || !t->isConstant() || kindOf(def, i) != OperandKind::TensorOrScalar) continue;
      const TensorType& ct = t->constant->type;
      if (elementCount(ct.shape) != 1 || ct.shape.size() > highestRank) continue;
      bool othersCover = false;  // the result keeps its rank only if a value operand has the highest rank
      for (const Arg& b : args)
        if (const Term* u = std::get_if<Term>(&b); u && !u->isConstant() && typeOf(*u).shape.size() >= ct.shape.size())
          othersCover = true;
      if (!othersCover) continue;
      const TensorValue* data = builder_.dataOf(*t->constant, index_);
      if (!data) return std::nullopt;
      args[i] = Attribute(ScalarTensor{ct.dtype, data->data[0]});
    }
  std::vector<InferOperand> infer;
  for (const Arg& a : args) {
    if (const Term* t = std::get_if<Term>(&a)) infer.push_back({&typeOf(*t), nullptr});
    else infer.push_back({nullptr, &std::get<Attribute>(a)});
  }
  InferResult inferred = inferResultTypes(def, infer, attrs);
  if (auto* e = std::get_if<InferError>(&inferred)) {
    error(fmt::format("as irc's {}: {}", type, e->message));
    return std::nullopt;
  }
  auto types = std::get<std::vector<TensorType>>(std::move(inferred));
  for (const TensorType& t : types) fold = fold && elementCount(t.shape) <= kMaxFoldedElements;
  std::vector<Term> out;
  if (fold) {
    Op op;
    op.name = name_;
    op.type = type;
    op.attrs = attrs;
    std::vector<const TensorValue*> in;
    for (const Arg& a : args) {
      if (const Term* t = std::get_if<Term>(&a)) {
        const TensorValue* data = builder_.dataOf(*t->constant, index_);
        if (!data) return std::nullopt;
        op.operands.push_back(Operand::ofValue(0));
        in.push_back(data);
      } else {
        op.operands.push_back(Operand::ofConstant(std::get<Attribute>(a)));
        in.push_back(nullptr);
      }
    }
    std::vector<TensorValue> values;
    try {
      values = evaluateOp(op, in, types);
    } catch (const ReferenceError& e) {
      error(fmt::format("folding its constant inputs as irc's {}: {}", type, e.what()));
      return std::nullopt;
    }
    for (size_t r = 0; r < values.size(); ++r)
      out.push_back(constant(types[r], std::move(values[r]), values.size() > 1 ? fmt::format("{}:{}", role, r) : role));
    return out;
  }
  Op op;
  op.name = builder_.uniqueName(role.empty() ? name_ : fmt::format("{}/{}", name_, role));
  op.instanceName = op.name;
  op.type = type;
  op.attrs = std::move(attrs);
  op.loc = builder_.nodeLoc(index_);
  op.modelIndex = static_cast<int>(builder_.graph.ops.size());
  for (const Arg& a : args) {
    if (const Term* t = std::get_if<Term>(&a))
      op.operands.push_back(Operand::ofValue(t->isConstant() ? builder_.parameterOf(*t->constant) : t->value, op.loc));
    else op.operands.push_back(Operand::ofConstant(std::get<Attribute>(a), op.loc));
  }
  OpId id = builder_.graph.addOp(std::move(op), types);
  builder_.graph.order.push_back(id);
  for (ValueId r : builder_.graph.op(id).results) out.push_back(Term{r, nullptr});
  return out;
}

}  // namespace irc::onnx_import

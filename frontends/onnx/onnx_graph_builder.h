#pragma once
// The ONNX frontend's working state (private to frontends/onnx_*.cc): what each ONNX tensor
// name stands for while the nodes are walked — a value of the graph being built, or a constant
// (an initializer, a Constant node, a folded subgraph) — and the emission of irc ops, which folds
// an op whose tensor operands are all constants with the reference interpreter instead of adding
// it to the graph.
#include <map>
#include <memory>
#include <memory_resource>
#include <string_view>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/onnx_frontend.h"
#include "ir/attribute.h"
#include "ir/graph.h"
#include "ir/tensor_value.h"

namespace irc::onnx_import {

// A tensor known at import time. An initializer's data is read only when something folds over
// it, so a model's weights are never converted unless a computed op needs their numbers.
struct Constant {
  std::string name;
  TensorType type;
  const onnx::TensorProto* proto = nullptr;  // an initializer or a Constant node's value
  std::shared_ptr<TensorValue> data;         // read from `proto` on first use, or computed
  ValueId parameter = kNoId;                 // the parameter it became, once a computed op read it
  bool externalMissing = false;              // its external data file is not there (shapes only)
};

// What an ONNX tensor name stands for.
struct Term {
  ValueId value = kNoId;
  std::shared_ptr<Constant> constant;
  bool isConstant() const { return constant != nullptr; }
};

// An operand of an op to emit: a term (for a tensor operand) or a constant attribute.
using Arg = std::variant<Term, Attribute>;

class GraphBuilder;

// One node being mapped: its inputs, attributes and the emission of its irc ops.
class NodeMapping {
 public:
  NodeMapping(GraphBuilder& builder, const onnx::NodeProto& node, int index, std::string name)
      : builder_(builder), node_(node), index_(index), name_(std::move(name)) {}

  const onnx::NodeProto& node() const { return node_; }
  const std::string& name() const { return name_; }
  int opset() const;

  size_t inputCount() const;                  // up to the last given input
  std::optional<Term> input(size_t i) const;  // nullopt for an omitted optional input
  const TensorType& typeOf(const Term& t) const;
  // The input's data when it is a constant; otherwise an error saying what it had to be.
  std::optional<TensorValue> constantInput(size_t i, std::string_view what);
  const TensorValue* dataOf(const Term& constant);  // null after reporting an unreadable tensor
  // False for a constant whose external data file is not there (warned once): a mapper that
  // would read its numbers keeps the op computed instead.
  bool numbersKnown(const Term& t);

  const onnx::AttributeProto* attr(std::string_view attrName) const;
  int64_t intAttr(std::string_view attrName, int64_t fallback) const;
  double floatAttr(std::string_view attrName, double fallback) const;
  std::string stringAttr(std::string_view attrName, std::string fallback) const;
  std::optional<std::vector<int64_t>> intsAttr(std::string_view attrName) const;

  // Emits an irc op (or folds it); `role` names a helper op (`<node>/<role>`), "" is the node's
  // own op, which carries the node's name (strategies find it by that name).
  std::optional<std::vector<Term>> emit(const std::string& type, std::vector<Arg> args, AttrMap attrs = {},
                                        const std::string& role = "");
  std::optional<Term> emit1(const std::string& type, std::vector<Arg> args, AttrMap attrs = {}, const std::string& role = "");
  Term constant(TensorType type, TensorValue data, const std::string& role);

  void error(std::string message);
  bool failed() const { return failed_; }

 private:
  GraphBuilder& builder_;
  const onnx::NodeProto& node_;
  int index_;
  std::string name_;
  bool failed_ = false;
};

// Maps one node: the terms of its outputs (in order), or nullopt after reporting an error.
using NodeMapper = std::optional<std::vector<Term>> (*)(NodeMapping& m);
const NodeMapper* findMapper(const std::string& opType);
// ONNX ops irc has no op for but evaluates where every input is a constant (onnx_constant_folding.cc).
const NodeMapper* findConstantFolder(const std::string& opType);
const std::vector<std::string>& constantOnlyOnnxOps();

class GraphBuilder {
 public:
  GraphBuilder(DiagnosticEngine& diags, const OnnxOptions& options, int opset)
      : diags_(diags), options_(options), opset_(opset) {}

 private:
  // The name tables of a 100k-node model are hundreds of thousands of small allocations that die
  // together with the builder: they come from one monotonic pool, freed at once.
  std::pmr::monotonic_buffer_resource pool_;

 public:
  Graph graph;
  // Every ONNX tensor name seen so far; the names are views of the model's own strings, which
  // outlive the builder.
  std::pmr::unordered_map<std::string_view, Term> terms{&pool_};

  int opset() const { return opset_; }
  DiagnosticEngine& diags() { return diags_; }
  SourceLoc nodeLoc(int index) const { return {index + 1, 0}; }

  std::string uniqueName(const std::string& wanted);
  const TensorValue* dataOf(Constant& c, int nodeIndex);
  // False when the constant's data is in an external file that is not there: the op that would
  // fold over it stays computed (warned once per tensor).
  bool numbersKnown(Constant& c, int nodeIndex, const std::string& nodeName);
  ValueId parameterOf(Constant& c);
  // Removes the ops an import rewrite marked (ir/graph_edit.h), keeping each parameter's data
  // under its new id.
  void eraseOps(const std::vector<bool>& erase);
  ValueId addInput(const std::string& name, TensorType type);
  std::map<ValueId, TensorValue> parameterData;

 private:
  DiagnosticEngine& diags_;
  const OnnxOptions& options_;
  int opset_;
  std::pmr::unordered_set<std::pmr::string> names_{&pool_};
  friend class NodeMapping;
};

}  // namespace irc::onnx_import

#include "ops/step_emission.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/inserted_ops.h"

namespace irc {

namespace {

AttrMap sliceMasks() {
  return {{"begin_mask", int64_t{0}},
          {"ellipsis_mask", int64_t{0}},
          {"end_mask", int64_t{0}},
          {"new_axis_mask", int64_t{0}},
          {"shrink_axis_mask", int64_t{0}}};
}

}  // namespace

std::string axisText(const RedistStep& s) {
  std::vector<int> fromRight;
  for (int a : s.axes) fromRight.push_back(s.mesh.rank() - 1 - a);
  std::sort(fromRight.begin(), fromRight.end());
  return fmt::format("device axis {}", fmt::join(fromRight, ", "));
}

ValueId emitStep(OpInserter& ins, const std::shared_ptr<const RedistStep>& shared, ValueId input, DType dtype,
                 const std::string& reason, const std::function<std::pair<std::string, std::string>(const std::string&)>& names) {
  const RedistStep& step = *shared;
  TensorType carried{dtype, step.globalAfter};
  std::string type(opTypeOfStep(step));
  // A ReduceScatter on a dim other than 0 starts with the Split that stacks its blocks on dim 0.
  bool stackFirst = step.kind == RedistStep::Kind::ReduceScatter && step.dim > 0;
  auto [name, instance] = names(stackFirst ? "Split" : type);
  switch (step.kind) {
    case RedistStep::Kind::Reshape:
      return ins.add(name, instance, "Reshape", {Operand::ofValue(input), Operand::ofConstant(IntTuple(step.localAfter))}, {},
                     {carried}, shared, reason);
    case RedistStep::Kind::Split:
      return ins.add(name, instance, "StridedSlice",
                     {Operand::ofValue(input), Operand::ofConstant(IntTuple{}), Operand::ofConstant(IntTuple{}),
                      Operand::ofConstant(IntTuple{})},
                     sliceMasks(), {carried}, shared, reason);
    case RedistStep::Kind::RealDiv:
      return ins.add(name, instance, "RealDiv",
                     {Operand::ofValue(input), Operand::ofConstant(ScalarTensor{dtype, static_cast<double>(step.divisor)})}, {},
                     {carried}, shared, reason);
    case RedistStep::Kind::Gather: {
      ValueId gathered = ins.add(name, instance, type, {Operand::ofValue(input)}, {}, {carried}, shared, reason);
      if (step.dim == 0) return gathered;
      // AllGather concatenates on dim 0: Split it back into the members' blocks and concatenate
      // them on the dim the axis left.
      int64_t n = step.groupSize();
      auto [splitName, splitInstance] = names("Split");
      ValueId first = ins.add(splitName, splitInstance, "Split", {Operand::ofValue(gathered)},
                              {{"axis", int64_t{0}}, {"output_num", n}}, std::vector<TensorType>(n, carried), shared,
                              fmt::format("AllGather concatenated on dim 0; split it into the {} members' blocks", n));
      std::vector<Operand> parts;
      for (int64_t j = 0; j < n; ++j) parts.push_back(Operand::ofValue(first + static_cast<ValueId>(j)));
      auto [concatName, concatInstance] = names("Concat");
      return ins.add(concatName, concatInstance, "Concat", parts, {{"axis", int64_t{step.dim}}}, {carried}, shared,
                     fmt::format("and concatenate the blocks on dim {}", step.dim));
    }
    case RedistStep::Kind::ReduceScatter: {
      if (!stackFirst) return ins.add(name, instance, type, {Operand::ofValue(input)}, {}, {carried}, shared, reason);
      // ReduceScatter scatters dim 0: split the local tensor into the members' blocks along the
      // dim and stack them on dim 0 first, so that member i keeps block i of that dim.
      int64_t n = step.groupSize();
      ValueId first = ins.add(name, instance, "Split", {Operand::ofValue(input)},
                              {{"axis", int64_t{step.dim}}, {"output_num", n}}, std::vector<TensorType>(n, carried), shared,
                              fmt::format("ReduceScatter scatters dim 0: split dim {} into the {} members' blocks", step.dim, n));
      std::vector<Operand> parts;
      for (int64_t j = 0; j < n; ++j) parts.push_back(Operand::ofValue(first + static_cast<ValueId>(j)));
      auto [concatName, concatInstance] = names("Concat");
      ValueId stacked = ins.add(concatName, concatInstance, "Concat", parts, {{"axis", int64_t{0}}}, {carried}, shared,
                                "and stack the blocks on dim 0");
      auto [rsName, rsInstance] = names(type);
      return ins.add(rsName, rsInstance, type, {Operand::ofValue(stacked)}, {}, {carried}, shared, reason);
    }
    default: return ins.add(name, instance, type, {Operand::ofValue(input)}, {}, {carried}, shared, reason);
  }
}

std::string stepReason(const RedistStep& s, const std::string& consumer, int input, const std::string& producer) {
  int d = s.tensorDim >= 0 ? s.tensorDim : s.dim;
  switch (s.kind) {
    case RedistStep::Kind::Split:
      return fmt::format("{} needs input {} split {} ways on dim {} ({}); it arrives whole on dim {}", consumer, input,
                         s.groupSize(), d, axisText(s), d);
    case RedistStep::Kind::Gather:
      return fmt::format("{} needs input {} whole on dim {} over {}; {} gives it split {} ways", consumer, input, d, axisText(s),
                         producer, s.groupSize());
    case RedistStep::Kind::AlltoAll:
      return fmt::format("{} needs input {} split on dim {} over {}; it arrives split on dim {}: one all-to-all moves it",
                         consumer, input, d, axisText(s), s.concatDim);
    case RedistStep::Kind::Reshape:
      return fmt::format("reshape the local tensor to {} so that each dim holds at most one device axis",
                         formatShape(s.localAfter));
    case RedistStep::Kind::AllReduce:
      return fmt::format("{}'s value is partial over {}: reduce it before redistributing", producer, axisText(s));
    case RedistStep::Kind::ReduceScatter:
      return fmt::format(
          "{}'s value is partial over {} and {} needs input {} split {} ways on dim {}: one reduce-scatter does "
          "both",
          producer, axisText(s), consumer, input, s.groupSize(), d);
    default: return "";
  }
}

}  // namespace irc

#include "ir/attribute.h"

#include <cmath>

#include <fmt/format.h>

#include "ir/shape.h"

namespace irc {

std::string formatNumber(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15)
    return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{}", value);
}

namespace {

struct AttributePrinter {
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(int64_t v) const { return fmt::format("{}", v); }
  std::string operator()(double v) const { return fmt::format("{}", v); }
  std::string operator()(const std::string& v) const { return v; }
  std::string operator()(const IntTuple& v) const { return formatIntTuple(v); }
  std::string operator()(DType v) const { return std::string(dumpName(v)); }
  std::string operator()(const ScalarTensor& v) const {
    return fmt::format("Tensor(shape=[], dtype={}, value={})", dumpName(v.dtype), formatNumber(v.value));
  }
};

struct ConstantTypePrinter {
  std::string operator()(bool) const { return "<Bool>"; }
  std::string operator()(int64_t) const { return "<Int64>"; }
  std::string operator()(double) const { return "<Float32>"; }
  std::string operator()(const std::string&) const { return "<String>"; }
  std::string operator()(const IntTuple& v) const {
    if (v.empty()) return "<Tuple[]>";
    if (v.size() == 1) return "<Tuple[Int64]>";
    return fmt::format("<Tuple[Int64*{}]>", v.size());
  }
  std::string operator()(DType) const { return "<TypeType>"; }
  std::string operator()(const ScalarTensor& v) const { return fmt::format("<Tensor[{}], ()>", dumpName(v.dtype)); }
};

}  // namespace

std::string formatAttribute(const Attribute& attr) { return std::visit(AttributePrinter{}, attr); }
std::string formatConstantType(const Attribute& attr) { return std::visit(ConstantTypePrinter{}, attr); }

}  // namespace irc

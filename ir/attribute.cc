#include "ir/attribute.h"

#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "ir/int_text.h"
#include "ir/shape.h"

namespace irc {

using namespace std::string_view_literals;  // "..."sv appends: no strlen per literal

std::string formatNumber(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    fmt::format_int digits(static_cast<int64_t>(value));  // fmt's integer text without a format string
    return std::string(digits.data(), digits.size());
  }
  return fmt::format("{}", value);
}

namespace {

// Each alternative appended as MindSpore prints it.
struct AttributeAppender {
  std::string& out;
  void operator()(bool v) const { out += v ? "true"sv : "false"sv; }
  void operator()(int64_t v) const { text::appendInt(out, v); }
  void operator()(double v) const { fmt::format_to(std::back_inserter(out), "{}", v); }
  void operator()(const std::string& v) const { out += v; }
  void operator()(const IntTuple& v) const { text::appendTuple(out, v); }
  void operator()(DType v) const { out += dumpName(v); }
  void operator()(const ScalarTensor& v) const {
    out += "Tensor(shape=[], dtype="sv;
    out += dumpName(v.dtype);
    out += ", value="sv;
    out += formatNumber(v.value);
    out += ')';
  }
};

struct ConstantTypeAppender {
  std::string& out;
  void operator()(bool) const { out += "<Bool>"sv; }
  void operator()(int64_t) const { out += "<Int64>"sv; }
  void operator()(double) const { out += "<Float32>"sv; }
  void operator()(const std::string&) const { out += "<String>"sv; }
  void operator()(const IntTuple& v) const {
    if (v.empty()) out += "<Tuple[]>"sv;
    else if (v.size() == 1) out += "<Tuple[Int64]>"sv;
    else {
      out += "<Tuple[Int64*"sv;
      text::appendInt(out, static_cast<int64_t>(v.size()));
      out += "]>"sv;
    }
  }
  void operator()(DType) const { out += "<TypeType>"sv; }
  void operator()(const ScalarTensor& v) const {
    out += "<Tensor["sv;
    out += dumpName(v.dtype);
    out += "], ()>"sv;
  }
};

}  // namespace

void appendAttribute(std::string& out, const Attribute& attr) { std::visit(AttributeAppender{out}, attr); }
void appendConstantType(std::string& out, const Attribute& attr) { std::visit(ConstantTypeAppender{out}, attr); }

std::string formatAttribute(const Attribute& attr) {
  std::string out;
  appendAttribute(out, attr);
  return out;
}

std::string formatConstantType(const Attribute& attr) {
  std::string out;
  appendConstantType(out, attr);
  return out;
}

}  // namespace irc

// The values a dump prints, read into irc's types (frontends/mindspore/dump_values.h).
#include "frontends/mindspore/dump_values.h"

#include <charconv>
#include <map>

#include "frontends/mindspore/parallel_facts.h"
#include "ir/limits.h"
#include "ir/trim.h"

namespace irc {
namespace {

// The whole of `s` as a number, nothing before or after it.
template <typename T>
std::optional<T> parsed(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

// `I64(3)` / `I32(3)` / `3`.
std::optional<int64_t> dumpInt(std::string_view s) {
  s = trimmed(s);
  if ((s.rfind("I64(", 0) == 0 || s.rfind("I32(", 0) == 0) && s.back() == ')') s = s.substr(4, s.size() - 5);
  return parsed<int64_t>(s);
}

// `(1, 2)`, `[1, 2]`, `()`.
std::optional<IntTuple> dumpIntTuple(std::string_view s) {
  s = trimmed(s);
  if (s.size() < 2 || !((s.front() == '(' && s.back() == ')') || (s.front() == '[' && s.back() == ']'))) return std::nullopt;
  IntTuple out;
  std::string_view items = trimmed(s.substr(1, s.size() - 2));
  while (!items.empty()) {
    size_t comma = items.find(',');
    auto v = dumpInt(items.substr(0, comma));
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    items = trimmed(items.substr(comma + 1));
  }
  return out;
}

// `((2, 1), (1, 4))`: a strategy, one tuple per operand.
std::optional<ShardStrategy> dumpStrategy(const std::string& s) {
  std::string_view t = trimmed(s);
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') return std::nullopt;
  ShardStrategy out;
  for (const std::string& item : splitArgs(std::string(t)))
    if (auto tuple = dumpIntTuple(item)) out.push_back(*tuple);
    else return std::nullopt;
  return out;
}

std::optional<double> dumpNumber(std::string_view s) {
  s = trimmed(s);
  if (s.rfind("F32(", 0) == 0 || s.rfind("F64(", 0) == 0) s = s.substr(4, s.size() - 5);
  return parsed<double>(s);
}

std::optional<bool> dumpBool(std::string_view s) {
  s = trimmed(s);
  if (s == "true" || s == "True" || s == "Bool(1)") return true;
  if (s == "false" || s == "False" || s == "Bool(0)") return false;
  return std::nullopt;
}

// A dtype as dumps print it: `Float32` (irc, MindSpore 1.x), `F32` (2.x).
std::optional<DType> dumpDType(std::string_view s) {
  static const std::map<std::string_view, std::string_view> shortNames = {
      {"F32", "float32"}, {"F16", "float16"}, {"BF16", "bfloat16"}, {"F64", "float64"},
      {"I32", "int32"},   {"I64", "int64"},   {"I8", "int8"},       {"U8", "uint8"}};
  s = trimmed(s);
  if (auto it = shortNames.find(s); it != shortNames.end()) return parseDType(it->second);
  return parseDumpDType(s);
}

// `<Tensor[Float32], (64, 64)>` / `<Ref[Tensor(F32)], (64)>` / `<Tensor[Float32], ()>`.
std::optional<TensorType> dumpTensorType(const std::string& type) {
  // A tuple or list of tensors is not one.
  if (std::string_view t = trimmed(type); t.starts_with("<Tuple") || t.starts_with("<List")) return std::nullopt;
  size_t open = type.find_first_of("[(", type.find("Tensor"));
  if (type.find("Tensor") == std::string::npos || open == std::string::npos) return std::nullopt;
  size_t close = type.find_first_of("])", open + 1);
  if (close == std::string::npos) return std::nullopt;
  std::string_view name(type.data() + open + 1, close - open - 1);
  if (name.rfind("Tensor(", 0) == 0) name.remove_prefix(7);
  auto dtype = dumpDType(name);
  if (!dtype) return std::nullopt;
  size_t dims = type.find(", (", close);
  if (dims == std::string::npos) return TensorType{*dtype, {}};
  size_t end = type.find(')', dims);
  auto shape =
      dumpIntTuple(std::string_view(type).substr(dims + 2, end == std::string::npos ? std::string::npos : end - dims - 1));
  if (!shape || !withinElementLimit(*shape)) return std::nullopt;
  for (int64_t d : *shape)
    if (d < 1) return std::nullopt;
  return TensorType{*dtype, *shape};
}

// `Tensor(shape=[], dtype=Float32, value=0.25)` or a plain number.
std::optional<ScalarTensor> dumpScalarTensor(std::string_view s) {
  s = trimmed(s);
  if (s.rfind("Tensor(shape=[]", 0) != 0) {
    if (auto v = dumpNumber(s)) return ScalarTensor{DType::Float32, *v};
    return std::nullopt;
  }
  size_t d = s.find("dtype="), v = s.find("value=");
  if (d == std::string_view::npos || v == std::string_view::npos) return std::nullopt;
  auto dtype = dumpDType(s.substr(d + 6, s.find(',', d) - d - 6));
  auto value = dumpNumber(s.substr(v + 6, s.find(')', v) - v - 6));
  if (!dtype || !value) return std::nullopt;
  return ScalarTensor{*dtype, *value};
}

// A parameter reference: `%paraK_NAME` or 2.x's `$(@graph:paraK_NAME)`.
std::optional<std::string> dumpParamName(const std::string& ref) {
  size_t p = ref.find("para");
  if (p == std::string::npos || (ref[0] != '%' && ref[0] != '$')) return std::nullopt;
  size_t underscore = ref.find('_', p);
  if (underscore == std::string::npos) return std::nullopt;
  std::string name = ref.substr(underscore + 1);
  if (!name.empty() && name.back() == ')') name.pop_back();
  return name;
}

}  // namespace irc

// Einsum (ONNX's and MindSpore's) over explicit letters: "bhqd,bhkd->bhqk". Each letter is a
// factor: a letter of the output passes through, a letter only of the operands is summed (a
// reduction: splitting it leaves the output partial), exactly Shardy's einsum-like rule. Letters
// repeated within one operand (diagonals) and "..." are not taken.
#include <map>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

struct Equation {
  std::vector<std::string> operands;
  std::string output;
};

// Parses the equation for `count` operands; the implicit form (no "->") outputs the letters that
// appear once, in alphabetical order (numpy's rule).
std::optional<Equation> parseEquation(const std::string& text, size_t count, std::string& error) {
  Equation eq;
  std::string spaceless;
  for (char c : text)
    if (c != ' ') spaceless += c;
  size_t arrow = spaceless.find("->");
  std::string lhs = spaceless.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    eq.operands.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::map<char, int> uses;
  for (const std::string& o : eq.operands)
    for (char c : o) {
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        error = fmt::format("equation '{}' has '{}'; irc takes letters only (no '...')", text, c);
        return std::nullopt;
      }
      if (std::count(o.begin(), o.end(), c) > 1) {
        error = fmt::format("equation '{}' repeats '{}' within one operand (a diagonal); irc does not take diagonals", text, c);
        return std::nullopt;
      }
      ++uses[c];
    }
  if (arrow == std::string::npos) {
    for (auto [c, n] : uses)
      if (n == 1) eq.output += c;
  } else {
    eq.output = spaceless.substr(arrow + 2);
    for (char c : eq.output)
      if (!uses.count(c) || std::count(eq.output.begin(), eq.output.end(), c) > 1) {
        error = fmt::format("equation '{}' outputs '{}', which no operand has or which it outputs twice", text, c);
        return std::nullopt;
      }
  }
  if (eq.operands.size() != count) {
    error = fmt::format("equation '{}' has {} operands; the op has {}", text, eq.operands.size(), count);
    return std::nullopt;
  }
  return eq;
}

// Every letter's size, checked for agreement across operands.
std::optional<std::map<char, int64_t>> letterSizes(const Equation& eq, const std::vector<const Shape*>& shapes,
                                                   std::string& error) {
  std::map<char, int64_t> sizes;
  for (size_t k = 0; k < eq.operands.size(); ++k) {
    const std::string& letters = eq.operands[k];
    if (letters.size() != shapes[k]->size()) {
      error = fmt::format("operand {} ('{}') has shape {}; the equation gives it {} dims", k, letters, formatShape(*shapes[k]),
                          letters.size());
      return std::nullopt;
    }
    for (size_t d = 0; d < letters.size(); ++d) {
      auto [it, added] = sizes.emplace(letters[d], (*shapes[k])[d]);
      if (!added && it->second != (*shapes[k])[d]) {
        error = fmt::format("'{}' is {} in one operand and {} in operand {}", letters[d], it->second, (*shapes[k])[d], k);
        return std::nullopt;
      }
    }
  }
  return sizes;
}

class Einsum : public OpFamilyRules {
 public:
  SavedForBackward savedForBackward(const Op& op) const override { return factorsSaved(op); }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Einsum",
                    OpFamily::Einsum,
                    {{"operands", OperandKind::TensorList, std::nullopt}},
                    {attr("equation", AttrKind::String, std::nullopt)}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    std::string error;
    auto eq = parseEquation(std::get<std::string>(attrs.at("equation")), in.size(), error);
    if (!eq) return fail(error, -1, "equation");
    std::vector<const Shape*> shapes;
    for (const InferOperand& o : in) shapes.push_back(&o.tensor->shape);
    auto sizes = letterSizes(*eq, shapes, error);
    if (!sizes) return fail(error, 0);
    for (size_t k = 1; k < in.size(); ++k)
      if (in[k].tensor->dtype != in[0].tensor->dtype)
        return fail(
            fmt::format("operand dtypes differ: {} and {}", modelName(in[0].tensor->dtype), modelName(in[k].tensor->dtype)),
            static_cast<int>(k));
    Shape out;
    for (char c : eq->output) out.push_back(sizes->at(c));
    return std::vector<TensorType>{{in[0].tensor->dtype, out}};
  }
  // Sums the product of the operands' elements over every assignment of the letters.
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    std::string error;
    Equation eq = *parseEquation(std::get<std::string>(op.attrs.at("equation")), in.size(), error);
    std::vector<const Shape*> shapes;
    for (const TensorValue* t : in) shapes.push_back(&t->shape);
    std::map<char, int64_t> sizes = *letterSizes(eq, shapes, error);
    std::vector<char> letters;
    Shape all;
    for (auto [c, n] : sizes) letters.push_back(c), all.push_back(n);
    auto position = [&](char c) { return std::find(letters.begin(), letters.end(), c) - letters.begin(); };
    std::vector<std::vector<int64_t>> operandStrides(in.size());
    for (size_t k = 0; k < in.size(); ++k) {
      auto st = stridesOf(in[k]->shape);
      operandStrides[k].assign(letters.size(), 0);
      for (size_t d = 0; d < eq.operands[k].size(); ++d) operandStrides[k][position(eq.operands[k][d])] = st[d];
    }
    std::vector<int64_t> outStrides(letters.size(), 0);
    auto so = stridesOf(results[0].shape);
    for (size_t d = 0; d < eq.output.size(); ++d) outStrides[position(eq.output[d])] = so[d];
    TensorValue out = TensorValue::zeros(results[0].shape);
    forEach(all, [&](const Index& idx) {
      double product = 1;
      for (size_t k = 0; k < in.size(); ++k) product *= in[k]->data[offsetOf(idx, operandStrides[k])];
      out.data[offsetOf(idx, outStrides)] += product;
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {2, 8, 4}}, {DType::Float32, {2, 4, 8}}};
    s.attrs["equation"] = std::string("bij,bjk->bik");
    s.note = "bij,bjk->bik";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    std::string error;
    Equation eq = *parseEquation(std::get<std::string>(in.attrs.at("equation")), in.operands.size(), error);
    std::map<char, int> factorOf;
    RuleBuilder b;
    // Output letters first (their order is the output's), then the summed ones.
    for (char c : eq.output) factorOf[c] = -1;
    auto factor = [&](char c, int64_t size) {
      auto it = factorOf.find(c);
      if (it == factorOf.end() || it->second < 0) {
        bool summed = eq.output.find(c) == std::string::npos;
        int f = b.factor(size, summed ? FactorKind::Reduction : FactorKind::PassThrough);
        factorOf[c] = f;
        return f;
      }
      return it->second;
    };
    DimFactors outDims;
    for (size_t d = 0; d < eq.output.size(); ++d) outDims.push_back({factor(eq.output[d], in.results[0].shape[d])});
    for (size_t k = 0; k < eq.operands.size(); ++k) {
      DimFactors dims;
      for (size_t d = 0; d < eq.operands[k].size(); ++d) dims.push_back({factor(eq.operands[k][d], in.operands[k].shape[d])});
      b.rule.operands.push_back(dims);
    }
    b.rule.results = {outDims};
    return b.done();
  }
  std::string_view partialWhy() const override { return "splits a letter it sums over"; }
};

}  // namespace

const OpFamilyRules& einsum() {
  static const Einsum rules;
  return rules;
}

}  // namespace irc::families

#include "frontends/onnx/onnx_merged_batch_regions.h"

#include <set>

#include "ops/op_defs.h"
#include "ops/op_family.h"

namespace irc::onnx_import {
namespace {

// How many leading dims of `in` the Reshape to `out` merges into out's dim 0, with every other
// dim unchanged; 0 when it does something else.
size_t mergedLeadingDims(const Shape& in, const Shape& out) {
  if (out.empty() || in.size() < out.size() + 1) return 0;
  size_t merged = in.size() - out.size() + 1;
  int64_t product = 1;
  for (size_t d = 0; d < merged; ++d) product *= in[d];
  if (product != out[0]) return 0;
  for (size_t d = 1; d < out.size(); ++d)
    if (in[merged + d - 1] != out[d]) return 0;
  return merged;
}

// One region: the values in merged form, the ops computing on them, where it is entered and left.
struct Region {
  Shape factors;                 // the merged leading dims, e.g. (b, h)
  std::set<ValueId> values;      // dim 0 is the merge of `factors`
  std::set<OpId> ops;            // compute on them and stay in the region
  std::set<OpId> merges, exits;  // exits: Reshapes reading the region
};

class RegionFinder {
 public:
  RegionFinder(const Graph& g, const std::vector<std::vector<Use>>& uses, const std::vector<bool>& isOutput)
      : g_(g), uses_(uses), isOutput_(isOutput) {}

  // Grows `r` from a merging Reshape; false when an op it reaches does not keep dim 0 a batch
  // (the merges found by then are in `r.merges`: the same region, rejected from any of them).
  bool grow(OpId merge, Region& r) {
    const Op& m = g_.op(merge);
    const Shape& source = g_.value(m.operands[0].value).type.shape;
    r.factors.assign(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(mergedOf(m)));
    r.merges.insert(merge);
    std::vector<ValueId> work{m.results[0]};
    r.values.insert(m.results[0]);
    while (!work.empty()) {
      ValueId v = work.back();
      work.pop_back();
      if (isOutput_[v]) return false;
      for (const Use& use : uses_[v]) {
        const Op& op = g_.op(use.op);
        if (isExit(op)) {
          r.exits.insert(use.op);
          continue;
        }
        if (r.ops.count(use.op)) continue;
        if (!rulesOf(op).passesBatchDim0(g_, op)) return false;
        r.ops.insert(use.op);
        // Its other operands of the region's rank join: a merge of the same dims, or computed in
        // the region. One of lower rank broadcasts below dim 0 (passesBatchDim0 says it may).
        size_t rank = g_.value(v).type.shape.size();
        for (const Operand& operand : op.operands) {
          if (!operand.isValue() || r.values.count(operand.value)) continue;
          const Value& u = g_.value(operand.value);
          if (u.type.shape.size() < rank) continue;
          if (u.producer == kNoId || !isMerge(g_.op(u.producer), r.factors)) return false;
          r.merges.insert(u.producer);
          r.values.insert(operand.value);
          work.push_back(operand.value);
        }
        for (ValueId result : op.results) {
          if (g_.value(result).type.shape.size() != rank) return false;
          if (r.values.insert(result).second) work.push_back(result);
        }
      }
    }
    return true;
  }

  size_t mergedOf(const Op& op) const {
    if (familyOf(op) != OpFamily::Reshape || !op.operands[0].isValue()) return 0;
    return mergedLeadingDims(g_.value(op.operands[0].value).type.shape, g_.value(op.results[0]).type.shape);
  }

 private:
  bool isMerge(const Op& op, const Shape& factors) const {
    size_t k = mergedOf(op);
    if (k != factors.size()) return false;
    const Shape& source = g_.value(op.operands[0].value).type.shape;
    return std::equal(factors.begin(), factors.end(), source.begin());
  }

  // Any Reshape leaves the region: the merged and unmerged dims order the elements alike.
  bool isExit(const Op& op) const { return familyOf(op) == OpFamily::Reshape; }

  const Graph& g_;
  const std::vector<std::vector<Use>>& uses_;
  const std::vector<bool>& isOutput_;
};

// The region's values take the unmerged dims; its ops' dim arguments move past the new dims.
void unmerge(Graph& g, const Region& r, const std::vector<std::vector<Use>>& uses, const std::vector<bool>& isOutput,
             std::vector<bool>& erase) {
  int64_t extra = static_cast<int64_t>(r.factors.size()) - 1;
  for (ValueId v : r.values) {
    Shape& shape = g.value(v).type.shape;
    Shape unmerged(r.factors);
    unmerged.insert(unmerged.end(), shape.begin() + 1, shape.end());
    shape = std::move(unmerged);
  }
  for (OpId id : r.ops) rulesOf(g.op(id)).prependBatchDims(g.op(id), extra);
  // The merges' readers read what was merged.
  auto redirect = [&](ValueId from, ValueId to) {
    for (const Use& use : uses[from]) g.op(use.op).operands[use.operandIndex].value = to;
  };
  for (OpId id : r.merges) {
    redirect(g.op(id).results[0], g.op(id).operands[0].value);
    erase[id] = true;
  }
  for (OpId id : r.exits) {
    const Op& exit = g.op(id);
    const Shape& target = g.value(exit.results[0]).type.shape;
    // A Reshape back to the unmerged dims is gone (unless the graph returns it by name); one to
    // other dims stays, reading the unmerged tensor.
    if (target != g.value(exit.operands[0].value).type.shape || isOutput[exit.results[0]]) continue;
    redirect(exit.results[0], exit.operands[0].value);
    erase[id] = true;
  }
}

}  // namespace

int unmergeBatchRegions(Graph& g, std::vector<bool>& erase) {
  auto uses = computeUses(g);
  std::vector<bool> isOutput(g.values.size(), false);
  for (ValueId v : g.outputs) isOutput[v] = true;
  RegionFinder finder(g, uses, isOutput);
  std::vector<bool> tried(g.ops.size(), false);
  int rewritten = 0;
  for (OpId id : g.order) {
    if (tried[id] || finder.mergedOf(g.op(id)) < 2) continue;
    // Each region is grown once, accepted or not: nothing is explored again from its other merges.
    Region region;
    bool accepted = finder.grow(id, region);
    for (OpId merge : region.merges) tried[merge] = true;
    if (!accepted) continue;
    unmerge(g, region, uses, isOutput, erase);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace irc::onnx_import

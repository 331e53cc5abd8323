#include "search/auto_search.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/byte_size.h"
#include "ops/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/op_family.h"
#include "plan/plan_queries.h"
#include "search/ilp_solver.h"
#include "cost/memory_estimate.h"
#include "cost/stage_estimate.h"
#include "cost/step_cost.h"
#include "passes/propagation/strategy_candidates.h"
#include "ops/op_sharding.h"
#include "passes/pipeline/compile.h"

namespace irc {

std::string layerPattern(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) {
      out += name[i++];
      continue;
    }
    size_t j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    bool inPath = j < name.size() && (name[j] == '.' || name[j] == '/' || name[j] == '_');
    out += inPath ? std::string("#") : name.substr(i, j - i);
    i = j;
  }
  return out;
}

namespace {

// The ops sharing one set of variables, with their candidates and what each costs one of them.
struct Class {
  std::vector<OpId> members;
  bool fixed = false;  // configured: its one candidate is the user's
  std::vector<OpSharding> candidates;
  std::vector<double> seconds;    // own time of one member per candidate
  std::vector<double> resident;   // bytes one member keeps for the whole step
  std::vector<double> transient;  // bytes live while one member runs
  // Per tensor operand: saved for backward although its producer keeps it too, so a copy is kept
  // exactly when a redistribution sits between them (counted on the edge).
  std::vector<bool> keepsCopy;
  std::vector<int> columns;  // the one-hot choice
  int chosen = 0;
};

// One end of an edge: a class's result (the layout its consumers see) or, for an input or
// parameter read by several ops, the first reader's operand (the layout the value is held in).
struct End {
  int cls = -1;
  bool operand = false;
  int index = 0;  // result index, or tensor operand index
  bool operator==(const End&) const = default;
};

struct EdgeClass {
  End from, to;  // `to` is always an operand
  DType dtype = DType::Float32;
  int count = 0;
  std::vector<int> fromLayout, toLayout;     // per candidate of each end's class: its distinct layout
  std::vector<std::vector<double>> seconds;  // [distinct from][distinct to]
  std::vector<double> toBytes;               // per distinct `to` layout: its slice's bytes
  std::vector<int> columns;                  // the transport variables (row-major), if any
};

class AutoSearch {
 public:
  AutoSearch(Graph& graph, const PropagationInput& in, PassContext& context)
      : graph_(graph),
        in_(in),
        context_(context),
        settings_(in.options),
        uses_(computeUses(graph)),
        start_(std::chrono::steady_clock::now()) {}

  bool run() {
    buildClasses();
    buildEdges();
    buildProblem();
    auto summary = std::make_shared<SearchSummary>();
    summary->timeLimit = settings_.searchTimeLimit;
    summary->memoryBudget = settings_.memoryBudget;
    std::optional<Plan> best = settings_.memoryBudget > 0 ? searchWithinBudget(*summary) : searchUnbounded(*summary);
    if (!best) return false;
    for (size_t c = 0; c < classes_.size(); ++c) classes_[c].chosen = best->chosen[c];
    summary->status = std::string(statusName(best->solution.status));
    summary->objective = best->solution.objective;
    summary->bound = best->solution.bound;
    summary->gap = best->solution.gap();
    summary->estimatedPeak = best->peak;
    summary->columns = problem_.columns();
    summary->rows = problem_.rows();
    assign(*summary);
    graph_.search = std::move(summary);
    return true;
  }

 private:
  // search_time_limit bounds the whole search: each solve gets what the earlier ones left (a
  // solve given none still returns the solver's first plan, if it finds one at once).
  // The wall clock since the search began, building the problem included.
  // (Tests: searchLimitAtSolution puts the limit at a count of the solver's solutions instead.)
  double timeLeft(const SearchSummary&) const {
    if (settings_.searchLimitAtSolution) return solutionsSeen_ < *settings_.searchLimitAtSolution ? settings_.searchTimeLimit : 0;
    return settings_.searchTimeLimit - std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  IlpSolution solve(const IlpProblem& problem, SearchSummary& summary) {
    if (settings_.searchLimitAtSolution) {
      int left = *settings_.searchLimitAtSolution - solutionsSeen_;
      if (left <= 0) {  // the limit fell before this solve
        IlpSolution none;
        none.status = IlpSolution::Status::TimeLimit;
        return none;
      }
      IlpSolution s = solveIlp(problem, settings_.searchTimeLimit, left);
      summary.solverSeconds += s.seconds;
      // A solve stopped by the limit spends it; one that finished used a solution.
      solutionsSeen_ =
          s.status == IlpSolution::Status::TimeLimit ? *settings_.searchLimitAtSolution : solutionsSeen_ + (s.x.empty() ? 0 : 1);
      return s;
    }
    IlpSolution s = solveIlp(problem, std::max(timeLeft(summary), 1e-3));
    summary.solverSeconds += s.seconds;
    return s;
  }

  // A solved plan: each class's choice, the solver's account and irc's memory estimate of it.
  struct Plan {
    std::vector<int> chosen;
    IlpSolution solution;
    double peak = 0;  // from the second step on
    double firstStepPeak = 0;
  };

  Plan planOf(IlpSolution solution, RankPeaks peaks) const {
    Plan p{{}, std::move(solution), peaks.steady, peaks.firstStep};
    for (const Class& c : classes_) p.chosen.push_back(c.chosen);
    return p;
  }

  std::optional<Plan> searchUnbounded(SearchSummary& summary) {
    IlpSolution solution = solve(problem_, summary);
    summary.memoryRounds = 1;
    if (solution.x.empty()) {
      reportNoPlan(solution);
      return std::nullopt;
    }
    decode(solution);
    return planOf(std::move(solution), {});
  }

  // The ILP's memory is a linear model of the peak (resident bytes plus the largest op's live
  // bytes); irc's memory estimate of each solved plan decides. The model's bound moves by how far
  // the estimate missed the budget, for a few rounds, and the fastest plan that fits is kept.
  std::optional<Plan> searchWithinBudget(SearchSummary& summary) {
    const double budget = settings_.memoryBudget;
    double bound = budget;
    std::optional<Plan> best;
    {
      // The fastest plan regardless of memory: once a plan that fits is as fast, no round helps.
      IlpProblem free = problem_;
      free.setRowUpper(memoryRow_, 1e30);
      IlpSolution s = solve(free, summary);
      unboundedObjective_ = s.x.empty() ? 0 : s.objective;
      if (s.x.empty() && s.status != IlpSolution::Status::Infeasible && timeLeft(summary) <= 0) {
        reportNoPlan(s);  // the time limit is spent: no round could solve
        return std::nullopt;
      }
      // It may fit as it is: then it is the plan to beat (and, proven optimal, the plan), and a
      // time limit spent on it still returns it (the rounds' first solve ran out of time and
      // the search said it found no plan).
      if (!s.x.empty()) {
        decode(s);
        RankPeaks peaks = estimatedPeak();
        if (peaks.steady <= budget) {
          summary.memoryRounds = 1;  // the first solve met the budget
          if (s.status == IlpSolution::Status::Optimal) return planOf(std::move(s), peaks);
          best = planOf(std::move(s), peaks);
        }
      }
    }
    RankPeaks lastPeak;
    for (int round = 1; round <= kMaxRounds; ++round) {
      summary.memoryRounds = round;
      problem_.setRowUpper(memoryRow_, bound);
      if (best && timeLeft(summary) <= 0) break;  // the time limit covers every round
      IlpSolution solution = solve(problem_, summary);
      if (solution.x.empty()) {
        if (best) break;
        if (solution.status != IlpSolution::Status::Infeasible) {
          reportNoPlan(solution);
          return std::nullopt;
        }
        // Below what the linear model allows: start from the plan of least memory, if it fits.
        auto least = leastMemoryPlan(summary);
        if (!least) return std::nullopt;
        if (least->peak > budget) {
          reportInfeasible(*least);
          return std::nullopt;
        }
        bound = linearMemory(least->solution) + (budget - least->peak);
        continue;
      }
      decode(solution);
      RankPeaks peaks = estimatedPeak();
      double peak = peaks.steady;
      lastPeak = peaks;
      if (peak <= budget && (!best || solution.objective < best->solution.objective)) best = planOf(solution, peaks);
      // The fastest plan of all fits, or one close enough to the budget.
      if (peak <= budget && (solution.objective <= unboundedObjective_ * (1 + 1e-9) || budget - peak < budget * kCloseEnough))
        break;
      bound += (budget - peak) * (peak > budget ? 1.02 : 1.0);
      if (bound <= 0) break;
    }
    if (!best) reportOverBudget(lastPeak);
    return best;
  }

  // The model's memory of a solution (the memory row's value).
  double linearMemory(const IlpSolution& s) const {
    double m = 0;
    for (size_t k = 0; k < memoryColumns_.size(); ++k) m += s.x[memoryColumns_[k]] * memoryCoefs_[k];
    return m;
  }

  // The plan with the least memory by the linear model, and irc's estimate of its peak.
  std::optional<Plan> leastMemoryPlan(SearchSummary& summary) {
    IlpProblem least = problem_;
    for (int c = 0; c < least.columns(); ++c) least.setCost(c, 0);
    least.setRowUpper(memoryRow_, 1e30);
    for (size_t k = 0; k < memoryColumns_.size(); ++k) least.setCost(memoryColumns_[k], memoryCoefs_[k]);
    IlpSolution s = solve(least, summary);
    if (s.x.empty()) {
      reportNoPlan(s);
      return std::nullopt;
    }
    decode(s);
    return planOf(std::move(s), estimatedPeak());
  }

  static constexpr int kMaxRounds = 6;
  static constexpr double kCloseEnough = 0.01;  // of the budget: a binding plan this close is kept

  const OpRule& ruleOf(OpId id) const { return *in_.rules[id]; }
  const OpView& viewOf(OpId id) const { return in_.views[id]; }
  DType resultDtype(OpId id) const { return graph_.value(graph_.op(id).results[0]).type.dtype; }

  // --- classes ---

  void buildClasses() {
    classOf_.assign(graph_.ops.size(), -1);
    std::unordered_map<std::string, int> classByKey;
    std::unordered_map<std::string, int> ordinal;  // per module and op type: ops seen so far
    for (OpId id : graph_.order) {
      const Op& op = graph_.op(id);
      if (op.inserted() || !in_.rules[id]) continue;
      const std::string& module = graph_.moduleOf(op);
      std::string pattern = layerPattern(op.name);
      if (!module.empty()) {
        int& n = ordinal[module + '\0' + op.type];
        pattern = fmt::format("{}\x01{}\x01{}", layerPattern(module), op.type, n++);
      }
      IntKey key = candidateKeyOf(ruleOf(id), viewOf(id));
      key.push_back(static_cast<int64_t>(resultDtype(id)));
      // Members must cost the same: a layer reading a weight shared with an earlier one (RoPE's
      // tables) is not its first reader.
      for (bool first : firstReaders(id)) key.push_back(first);
      bool fixed = op.parallel->hasSharding;
      key.push_back(fixed);
      if (fixed)
        for (const auto& t : strategyOf(op)) appendList(key, t);
      int producerClass = -1;
      if (!fixed && takesLayoutsFromNeighbours(op)) {
        ValueId input = op.operands[0].value;
        if (graph_.value(input).producer != kNoId) producerClass = classOf_[graph_.value(input).producer];
        key.push_back(producerClass);
      }
      std::string text = pattern + '\0';
      text.append(reinterpret_cast<const char*>(key.data()), key.size() * sizeof(int64_t));
      auto [it, added] = classByKey.emplace(std::move(text), static_cast<int>(classes_.size()));
      if (added) {
        classes_.emplace_back();
        makeCandidates(classes_.back(), id, fixed, producerClass);
      }
      classes_[it->second].members.push_back(id);
      classOf_[id] = it->second;
    }
    for (Class& c : classes_) costCandidates(c);
  }

  void makeCandidates(Class& c, OpId id, bool fixed, int producerClass) {
    const Op& op = graph_.op(id);
    const OpRule& rule = ruleOf(id);
    c.fixed = fixed;
    std::vector<OpSharding> raw;
    if (fixed) {
      raw.push_back(op.parallel->sharding);
    } else if (takesLayoutsFromNeighbours(op)) {
      // A Reshape takes what its input's layouts imply through its factors (or is replicated).
      if (producerClass >= 0) {
        const Class& p = classes_[producerClass];
        ValueId input = op.operands[0].value;
        OpId producer = graph_.value(input).producer;
        for (const OpSharding& s : p.candidates)
          raw.push_back(shardingFromNeighbour(
              rule, 0, false,
              finalResultLayout(ruleOf(producer), s, graph_.value(input).resultIndex, graph_.value(input).type.shape)));
      }
      raw.push_back(replicatedSharding(rule, settings_.deviceNum));
    } else {
      raw = candidateShardings(rule, viewOf(id), settings_.deviceNum, settings_.fullyUseDevices);
      if (raw.empty()) raw.push_back(replicatedSharding(rule, settings_.deviceNum));
    }
    // Candidates with the same layouts everywhere cost the same: keep the first.
    std::unordered_map<IntKey, bool, IntKeyHash> seen;
    const OpView& view = viewOf(id);
    for (OpSharding& s : raw) {
      IntKey key;
      for (size_t i = 0; i < view.operandShapes.size(); ++i)
        appendLayoutKey(key, operandLayout(rule, s, static_cast<int>(i), view.operandShapes[i]));
      for (size_t r = 0; r < view.resultShapes.size(); ++r)
        appendLayoutKey(key, resultLayout(rule, s, static_cast<int>(r), view.resultShapes[r]));
      if (seen.emplace(std::move(key), true).second) c.candidates.push_back(std::move(s));
    }
  }

  // Per tensor operand of op `id`: whether it is a floating parameter the op reads first.
  std::vector<bool> firstReaders(OpId id) const {
    const Op& op = graph_.op(id);
    std::vector<bool> first;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].isValue()) continue;
      ValueId v = op.operands[i].value;
      const Value& value = graph_.value(v);
      first.push_back(value.kind == ValueKind::Parameter && isFloat(value.type.dtype) && uses_[v].front().op == id &&
                      uses_[v].front().operandIndex == static_cast<int>(i));
    }
    return first;
  }

  bool producerKeeps(ValueId v) const {
    const Value& value = graph_.value(v);
    if (value.producer == kNoId) return false;
    const Op& producer = graph_.op(value.producer);
    if (rulesOf(producer).resultIsView(graph_, producer))
      return !producer.operands.empty() && producer.operands[0].isValue() && producerKeeps(producer.operands[0].value);
    SavedForBackward s = rulesOf(producer).savedForBackward(producer);
    return std::count(s.results.begin(), s.results.end(), value.resultIndex) > 0;
  }

  void costCandidates(Class& c) {
    OpId id = c.members.front();
    const Op& op = graph_.op(id);
    const OpRule& rule = ruleOf(id);
    const OpView& view = viewOf(id);
    DType dtype = resultDtype(id);
    std::vector<bool> first = firstReaders(id);
    std::vector<bool> isParameter, trains, saved(op.operands.size(), false), savedResult(op.results.size(), false);
    for (const Operand& o : op.operands)
      if (o.isValue()) {
        isParameter.push_back(graph_.value(o.value).kind == ValueKind::Parameter);
        trains.push_back(graph_.value(o.value).trainable);
      }
    c.keepsCopy.assign(isParameter.size(), false);
    bool floating =
        std::any_of(op.results.begin(), op.results.end(), [&](ValueId r) { return isFloat(graph_.value(r).type.dtype); });
    if (settings_.training && floating) {
      SavedForBackward s = rulesOf(op).savedForBackward(op);
      // A value its producer keeps already is counted there (one buffer when no redistribution
      // sits between them; the memory rounds correct the rest).
      for (int i : s.operandsKeptWhenAllTrain())
        if (i < static_cast<int>(op.operands.size()) && op.operands[i].isValue()) {
          bool copy = producerKeeps(op.operands[i].value);
          saved[i] = !copy;
          if (copy) c.keepsCopy[tensorOperandIndex(op, i)] = true;
        }
      for (int r : s.results)
        if (r < static_cast<int>(op.results.size())) savedResult[r] = true;
    }
    for (const OpSharding& s : c.candidates) {
      StepTime t;
      addOpTime(t, opTime(rule, s, view, dtype, first, settings_), settings_.training);
      c.seconds.push_back(t.total());
      double resident = 0, transient = 0;
      for (size_t i = 0, k = 0; i < op.operands.size(); ++i) {
        if (!op.operands[i].isValue()) continue;
        DType d = graph_.value(op.operands[i].value).type.dtype;
        double b = sliceBytes(operandLayout(rule, s, static_cast<int>(k), view.operandShapes[k]), d);
        if (first[k]) resident += trains[k] ? parameterStepBytes(b, d, settings_) : b;
        if (!isParameter[k]) transient += b;
        if (!isParameter[k] && saved[i]) resident += b;
        ++k;
      }
      for (size_t r = 0; r < view.resultShapes.size(); ++r) {
        double b =
            sliceBytes(resultLayout(rule, s, static_cast<int>(r), view.resultShapes[r]), graph_.value(op.results[r]).type.dtype);
        transient += b;
        if (savedResult[r]) resident += b;
      }
      c.resident.push_back(resident);
      c.transient.push_back(transient);
    }
  }

  // --- edges ---

  TensorLayout layoutAt(const End& e, int candidate) const {
    OpId id = classes_[e.cls].members.front();
    const OpSharding& s = classes_[e.cls].candidates[candidate];
    if (e.operand) return operandLayout(ruleOf(id), s, e.index, viewOf(id).operandShapes[e.index]);
    return finalResultLayout(ruleOf(id), s, e.index, viewOf(id).resultShapes[e.index]);
  }

  void buildEdges() {
    std::unordered_map<IntKey, int, IntKeyHash> edgeByKey;
    for (OpId id : graph_.order) {
      const Op& op = graph_.op(id);
      if (classOf_[id] < 0) continue;
      for (size_t i = 0, k = 0; i < op.operands.size(); ++i) {
        if (!op.operands[i].isValue()) continue;
        int operand = static_cast<int>(k++);
        ValueId v = op.operands[i].value;
        const Value& value = graph_.value(v);
        End from;
        if (value.producer != kNoId) {
          if (classOf_[value.producer] < 0) continue;
          from = {classOf_[value.producer], false, value.resultIndex};
        } else if (auto fixed = producedLayout(graph_, in_, v)) {
          fixedSources_.push_back({classOf_[id], operand, *fixed, value.type.dtype});
          continue;
        } else {
          const Use& firstUse = uses_[v].front();
          if (firstUse.op == id && firstUse.operandIndex == static_cast<int>(i)) continue;
          if (classOf_[firstUse.op] < 0) continue;
          from = {classOf_[firstUse.op], true, tensorOperandIndex(graph_.op(firstUse.op), firstUse.operandIndex)};
        }
        End to{classOf_[id], true, operand};
        IntKey key{from.cls, from.operand, from.index, to.cls, to.index};
        auto [it, added] = edgeByKey.emplace(key, static_cast<int>(edges_.size()));
        if (added) edges_.push_back({from, to, value.type.dtype, 0, {}, {}, {}, {}, {}});
        ++edges_[it->second].count;
      }
    }
    for (EdgeClass& e : edges_) costEdge(e);
  }

  // Distinct layouts of an end over its class's candidates; returns them, fills `index`.
  std::vector<TensorLayout> distinctLayouts(const End& e, std::vector<int>& index) const {
    std::vector<TensorLayout> layouts;
    std::unordered_map<IntKey, int, IntKeyHash> seen;
    for (size_t k = 0; k < classes_[e.cls].candidates.size(); ++k) {
      TensorLayout l = layoutAt(e, static_cast<int>(k));
      IntKey key;
      appendLayoutKey(key, l);
      auto [it, added] = seen.emplace(std::move(key), static_cast<int>(layouts.size()));
      if (added) layouts.push_back(std::move(l));
      index.push_back(it->second);
    }
    return layouts;
  }

  double redistribution(const TensorLayout& from, const TensorLayout& to, DType dtype) const {
    IntKey key{static_cast<int64_t>(dtype)};
    appendLayoutKey(key, from);
    appendLayoutKey(key, to);
    auto it = redistributionCache_.find(key);
    if (it != redistributionCache_.end()) return it->second;
    double t = redistributionTime(from, to, dtype, settings_) * (settings_.training ? 2 : 1);
    redistributionCache_.emplace(std::move(key), t);
    return t;
  }

  void costEdge(EdgeClass& e) {
    std::vector<TensorLayout> from = distinctLayouts(e.from, e.fromLayout), to = distinctLayouts(e.to, e.toLayout);
    e.seconds.assign(from.size(), std::vector<double>(to.size(), 0));
    for (const TensorLayout& l : to) e.toBytes.push_back(sliceBytes(l, e.dtype));
    for (size_t p = 0; p < from.size(); ++p)
      for (size_t q = 0; q < to.size(); ++q) e.seconds[p][q] = redistribution(from[p], to[q], e.dtype);
  }

  double edgeSeconds(const EdgeClass& e, int fromCandidate, int toCandidate) const {
    return e.seconds[e.fromLayout[fromCandidate]][e.toLayout[toCandidate]];
  }

  // --- the ILP ---

  void buildProblem() {
    for (Class& c : classes_) {
      double n = static_cast<double>(c.members.size());
      std::vector<int> cols;
      for (double s : c.seconds) cols.push_back(problem_.addBinary(n * s));
      problem_.addRow(cols, std::vector<double>(cols.size(), 1.0), 1, 1);
      c.columns = cols;
    }
    for (const FixedSource& f : fixedSources_) {
      Class& c = classes_[f.cls];
      for (size_t k = 0; k < c.candidates.size(); ++k) {
        double t = redistribution(f.layout, layoutAt({f.cls, true, f.operand}, static_cast<int>(k)), f.dtype);
        problem_.setCost(c.columns[k], problem_.cost(c.columns[k]) + t);
      }
    }
    for (EdgeClass& e : edges_) addEdge(e);
    if (settings_.memoryBudget > 0) addMemory();
  }

  void addEdge(EdgeClass& e) {
    size_t nf = e.seconds.size(), nt = e.seconds.empty() ? 0 : e.seconds[0].size();
    double n = static_cast<double>(e.count);
    Class &a = classes_[e.from.cls], &b = classes_[e.to.cls];
    // One side with one layout: the edge's time is the other side's alone.
    if (nf == 1 || nt == 1) {
      for (size_t k = 0; k < b.candidates.size() && nf == 1; ++k)
        problem_.setCost(b.columns[k], problem_.cost(b.columns[k]) + n * e.seconds[0][e.toLayout[k]]);
      for (size_t k = 0; k < a.candidates.size() && nf != 1; ++k)
        problem_.setCost(a.columns[k], problem_.cost(a.columns[k]) + n * e.seconds[e.fromLayout[k]][0]);
      return;
    }
    // Transport variables y[p][q] >= 0 whose marginals are the two ends' choices (one-hot, so y
    // is too).
    for (size_t p = 0; p < nf; ++p)
      for (size_t q = 0; q < nt; ++q) e.columns.push_back(problem_.addColumn(n * e.seconds[p][q], 0, 1, false));
    for (size_t p = 0; p < nf; ++p) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (size_t q = 0; q < nt; ++q) cols.push_back(e.columns[p * nt + q]), coefs.push_back(1);
      for (size_t k = 0; k < a.candidates.size(); ++k)
        if (e.fromLayout[k] == static_cast<int>(p)) cols.push_back(a.columns[k]), coefs.push_back(-1);
      problem_.addRow(cols, coefs, 0, 0);
    }
    for (size_t q = 0; q < nt; ++q) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (size_t p = 0; p < nf; ++p) cols.push_back(e.columns[p * nt + q]), coefs.push_back(1);
      for (size_t k = 0; k < b.candidates.size(); ++k)
        if (e.toLayout[k] == static_cast<int>(q)) cols.push_back(b.columns[k]), coefs.push_back(-1);
      problem_.addRow(cols, coefs, 0, 0);
    }
  }

  // sum over classes of members x resident + the copies saved behind redistributions + the
  // largest transient <= budget.
  void addMemory() {
    int transient = transientColumn_ = problem_.addColumn(0, 0, 1e30, false);
    std::map<int, double> coef{{transient, 1.0}};
    for (const Class& c : classes_) {
      std::vector<int> tc{transient};
      std::vector<double> tk{1};
      for (size_t k = 0; k < c.candidates.size(); ++k) {
        coef[c.columns[k]] += static_cast<double>(c.members.size()) * c.resident[k];
        tc.push_back(c.columns[k]);
        tk.push_back(-c.transient[k]);
      }
      problem_.addRow(tc, tk, 0, 1e30);
    }
    if (settings_.training)
      for (const EdgeClass& e : edges_) {
        if (!classes_[e.to.cls].keepsCopy[e.to.index]) continue;
        size_t nf = e.seconds.size(), nt = e.toBytes.size();
        double n = static_cast<double>(e.count);
        for (size_t p = 0; p < nf; ++p)
          for (size_t q = 0; q < nt; ++q) {
            if (e.seconds[p][q] <= 0) continue;
            double bytes = n * e.toBytes[q];
            if (!e.columns.empty()) {
              coef[e.columns[p * nt + q]] += bytes;
              continue;
            }
            // One end with one layout: the copy follows the other end's choice.
            const Class& other = classes_[nf == 1 ? e.to.cls : e.from.cls];
            const std::vector<int>& layoutOf = nf == 1 ? e.toLayout : e.fromLayout;
            for (size_t k = 0; k < other.candidates.size(); ++k)
              if (static_cast<size_t>(layoutOf[k]) == (nf == 1 ? q : p))
                coef[other.columns[k]] += nf == 1 ? bytes : n * e.toBytes[q];
          }
      }
    std::vector<int> cols;
    std::vector<double> coefs;
    for (auto [col, c] : coef) cols.push_back(col), coefs.push_back(c);
    memoryRow_ = problem_.rows();
    memoryColumns_ = cols;
    memoryCoefs_ = coefs;
    problem_.addRow(cols, coefs, 0, settings_.memoryBudget);
  }

  void decode(const IlpSolution& s) {
    for (Class& c : classes_) {
      c.chosen = 0;
      for (size_t k = 0; k < c.columns.size(); ++k)
        if (s.x[c.columns[k]] > s.x[c.columns[c.chosen]]) c.chosen = static_cast<int>(k);
    }
  }

  // --- the plan ---

  void giveShardings(Graph& g, const SearchSummary* summary) const {
    for (size_t ci = 0; ci < classes_.size(); ++ci) {
      const Class& c = classes_[ci];
      if (c.fixed) continue;
      for (OpId id : c.members) {
        StrategyOrigin origin;
        origin.kind = OriginKind::Searched;
        origin.cost = c.seconds[c.chosen];
        if (summary && !summary->classes[ci].runnersUp.empty()) {
          origin.hasNextBest = true;
          origin.nextBest = summary->classes[ci].runnersUp[0].strategy;
          origin.nextBestCost = summary->classes[ci].runnersUp[0].deltaSeconds;
        }
        assignSharding(g.op(id), c.candidates[c.chosen], origin);
      }
    }
  }

  // The plan's peaks by irc's memory estimate: layouts and redistribution on a copy.
  RankPeaks estimatedPeak() {
    Graph copy = graph_;
    giveShardings(copy, nullptr);
    DiagnosticEngine scratch("", "");
    PassContext context{scratch};
    CompileOptions options = in_.options;
    // The pipeline's later stages, as a compile runs them (with stages: auto's assignment and
    // the pipeline's Send/Receive), through the pass manager.
    options.passes = {"layout_inference", "redistribution"};
    options.stopAfter.clear();
    if (compile(copy, options, context) != RunOutcome::Ok) return {};
    return fullestRankPeaks(copy, options);
  }

  // The step's time with class `ci` on candidate `k`, less its time on the chosen one.
  double delta(int ci, int k) const {
    const Class& c = classes_[ci];
    double d = static_cast<double>(c.members.size()) * (c.seconds[k] - c.seconds[c.chosen]);
    for (const FixedSource& f : fixedSources_)
      if (f.cls == ci)
        d += redistribution(f.layout, layoutAt({ci, true, f.operand}, k), f.dtype) -
             redistribution(f.layout, layoutAt({ci, true, f.operand}, c.chosen), f.dtype);
    for (int ei : incident_[ci]) {
      const EdgeClass& e = edges_[ei];
      int fa = classes_[e.from.cls].chosen, tb = classes_[e.to.cls].chosen;
      int fa2 = e.from.cls == ci ? k : fa, tb2 = e.to.cls == ci ? k : tb;
      d += e.count * (edgeSeconds(e, fa2, tb2) - edgeSeconds(e, fa, tb));
    }
    return d;
  }

  void assign(SearchSummary& summary) {
    incident_.assign(classes_.size(), {});
    for (size_t ei = 0; ei < edges_.size(); ++ei) {
      incident_[edges_[ei].from.cls].push_back(static_cast<int>(ei));
      if (edges_[ei].to.cls != edges_[ei].from.cls) incident_[edges_[ei].to.cls].push_back(static_cast<int>(ei));
    }
    summary.classOf = classOf_;
    for (size_t ci = 0; ci < classes_.size(); ++ci) {
      const Class& c = classes_[ci];
      SearchClass out;
      out.ops.assign(c.members.begin(), c.members.end());
      out.candidates = static_cast<int>(c.candidates.size());
      out.secondsEach = c.seconds[c.chosen];
      (c.fixed ? summary.fixedOps : summary.searchedOps) += static_cast<int>(c.members.size());
      if (!c.fixed) {
        OpId id = c.members.front();
        std::vector<SearchAlternative> all;
        for (size_t k = 0; k < c.candidates.size(); ++k)
          if (static_cast<int>(k) != c.chosen)
            all.push_back(
                {strategyOf(ruleOf(id), c.candidates[k], viewOf(id)), delta(static_cast<int>(ci), static_cast<int>(k))});
        std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.deltaSeconds < y.deltaSeconds; });
        if (all.size() > 3) all.resize(3);
        out.runnersUp = std::move(all);
      }
      summary.classes.push_back(std::move(out));
    }
    giveShardings(graph_, &summary);
  }

  // --- when there is no plan ---

  SourceLoc modelLoc() const { return settings_.settingsLoc; }

  bool reportNoPlan(const IlpSolution& s) {
    context_.diags.error(modelLoc(),
                         fmt::format("search_mode auto found no plan within search_time_limit {} s (the solver's status: "
                                     "{}); raise --search-time-limit, or give the model a `cluster:` to search it by "
                                     "its repeated layers (docs/search.md)",
                                     settings_.searchTimeLimit, statusName(s.status)));
    return false;
  }

  // The plan of least memory does not fit either: its peak, and what dominates it.
  void reportInfeasible(const Plan& least) {
    struct Share {
      double bytes;
      std::string name;
    };
    std::vector<Share> shares;
    for (size_t ci = 0; ci < classes_.size(); ++ci) {
      const Class& c = classes_[ci];
      double b = static_cast<double>(c.members.size()) * c.resident[least.chosen[ci]];
      std::string name = graph_.op(c.members.front()).name;
      if (c.members.size() > 1) name += fmt::format(" and {} more like it", c.members.size() - 1);
      shares.push_back({b, name});
    }
    std::stable_sort(shares.begin(), shares.end(), [](const Share& a, const Share& b) { return a.bytes > b.bytes; });
    std::vector<std::string> top;
    for (size_t i = 0; i < shares.size() && i < 3 && shares[i].bytes > 0; ++i)
      top.push_back(fmt::format("{} ({})", shares[i].name, formatBytes(shares[i].bytes)));
    context_.diags.error(
        modelLoc(),
        fmt::format("search_mode auto: no plan keeps every rank within memory_budget {}: the plan of least memory "
                    "peaks at {}{} by irc's estimate{}{}",
                    formatBytes(settings_.memoryBudget), formatBytes(least.peak), firstStepNote(least.peak, least.firstStepPeak),
                    settings_.training ? " (parameters, gradients, optimizer states and saved activations)" : "",
                    top.empty() ? "" : fmt::format(", mostly what these ops keep: {}", fmt::join(top, ", "))));
  }

  bool reportOverBudget(RankPeaks peak) {
    context_.diags.error(modelLoc(), fmt::format("search_mode auto: no plan found within memory_budget {}: the closest plan's "
                                                 "estimated peak is {}{} (irc memory MODEL says where it is)",
                                                 formatBytes(settings_.memoryBudget), formatBytes(peak.steady),
                                                 firstStepNote(peak.steady, peak.firstStep)));
    return false;
  }

  // A training plan fits from its second step on or not at all: where the first step peaks
  // lower, the user sees both (a run that passes its first step and then runs out of memory).
  std::string firstStepNote(double steady, double firstStep) const {
    if (!settings_.training || firstStep >= steady) return "";
    return fmt::format(" from its second step on (its first step, before the optimizer's states exist, {})",
                       formatBytes(firstStep));
  }

  struct FixedSource {
    int cls;
    int operand;
    TensorLayout layout;
    DType dtype;
  };

  Graph& graph_;
  const PropagationInput& in_;
  PassContext& context_;
  const CompileOptions& settings_;
  int solutionsSeen_ = 0;  // with searchLimitAtSolution
  std::vector<std::vector<Use>> uses_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Class> classes_;
  std::vector<int32_t> classOf_;
  std::vector<EdgeClass> edges_;
  std::vector<FixedSource> fixedSources_;
  std::vector<std::vector<int>> incident_;
  mutable std::unordered_map<IntKey, double, IntKeyHash> redistributionCache_;  // a memo
  IlpProblem problem_;
  double unboundedObjective_ = 0;
  int memoryRow_ = -1;
  std::vector<int> memoryColumns_;  // the memory row, for its value and the least-memory plan
  std::vector<double> memoryCoefs_;
  int transientColumn_ = 0;
};

}  // namespace

bool runAutoSearch(Graph& graph, const PropagationInput& in, PassContext& context) {
  return AutoSearch(graph, in, context).run();
}

}  // namespace irc

#include "search/ilp_solver.h"

#include <chrono>
#include <cmath>
#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <Cbc_C_Interface.h>

namespace irc {

int IlpProblem::addColumn(double cost, double lower, double upper, bool integer) {
  cost_.push_back(cost);
  lower_.push_back(lower);
  upper_.push_back(upper);
  integer_.push_back(integer);
  return static_cast<int>(cost_.size()) - 1;
}

void IlpProblem::addRow(std::vector<int> cols, std::vector<double> coefs, double lower, double upper) {
  rows_.push_back({std::move(cols), std::move(coefs), lower, upper});
}

double IlpSolution::gap() const {
  if (status == Status::Optimal || x.empty()) return 0;
  return std::abs(objective) > 0 ? std::max(0.0, (objective - bound) / std::abs(objective)) : 0;
}

std::string_view statusName(IlpSolution::Status s) {
  switch (s) {
    case IlpSolution::Status::Optimal: return "optimal";
    case IlpSolution::Status::TimeLimit: return "time_limit";
    case IlpSolution::Status::Infeasible: return "infeasible";
    case IlpSolution::Status::NoSolution: return "no_solution";
  }
  return "no_solution";
}

struct IlpSolver {
  static constexpr double kObjectiveScale = 1e4;
  static constexpr double kInfinity = 1e30;
  static double scaled(double bound, double scale) {
    if (bound >= kInfinity) return std::numeric_limits<double>::max();
    if (bound <= -kInfinity) return -std::numeric_limits<double>::max();
    return bound * scale;
  }

  static IlpSolution solve(const IlpProblem& p, double timeLimitSeconds, int maxSolutions) {
    auto start = std::chrono::steady_clock::now();
    std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
    Cbc_Model* m = model.get();
    Cbc_setLogLevel(m, 0);
    // Columns as a CSC matrix built from the rows.
    int n = p.columns();
    std::vector<std::vector<std::pair<int, double>>> byColumn(n);
    for (size_t r = 0; r < p.rows_.size(); ++r)
      for (size_t k = 0; k < p.rows_[r].cols.size(); ++k)
        byColumn[p.rows_[r].cols[k]].emplace_back(static_cast<int>(r), p.rows_[r].coefs[k]);
    std::vector<CoinBigIndex> start_;
    std::vector<int> index;
    std::vector<double> value;
    for (int c = 0; c < n; ++c) {
      start_.push_back(static_cast<CoinBigIndex>(index.size()));
      for (auto [r, v] : byColumn[c]) {
        index.push_back(r);
        value.push_back(v);
      }
    }
    start_.push_back(static_cast<CoinBigIndex>(index.size()));
    // Seconds of a step and bytes of a rank are far from CBC's tolerances (1e-7 and up): each row
    // is scaled to a largest coefficient of 1, the objective to one of kObjectiveScale.
    std::vector<double> rowLower, rowUpper, rowScale;
    for (const auto& row : p.rows_) {
      double largest = 0;
      for (double c : row.coefs) largest = std::max(largest, std::abs(c));
      double scale = largest > 0 ? 1 / largest : 1;
      rowScale.push_back(scale);
      rowLower.push_back(scaled(row.lower, scale));
      rowUpper.push_back(scaled(row.upper, scale));
    }
    for (size_t k = 0; k < index.size(); ++k) value[k] *= rowScale[index[k]];
    double largestCost = 0;
    for (double c : p.cost_) largestCost = std::max(largestCost, std::abs(c));
    double objectiveScale = largestCost > 0 ? kObjectiveScale / largestCost : 1;
    std::vector<double> cost = p.cost_;
    for (double& c : cost) c *= objectiveScale;
    Cbc_loadProblem(m, n, p.rows(), start_.data(), index.data(), value.data(), p.lower_.data(), p.upper_.data(), cost.data(),
                    rowLower.data(), rowUpper.data());
    for (int c = 0; c < n; ++c)
      if (p.integer_[c]) Cbc_setInteger(m, c);
    Cbc_setMaximumSeconds(m, timeLimitSeconds);
    if (maxSolutions > 0) Cbc_setMaximumSolutions(m, maxSolutions);
    Cbc_setAllowableFractionGap(m, 1e-9);
    Cbc_solve(m);
    IlpSolution s;
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (Cbc_isProvenInfeasible(m)) {
      s.status = IlpSolution::Status::Infeasible;
      return s;
    }
    if (Cbc_numberSavedSolutions(m) == 0 && !Cbc_isProvenOptimal(m)) return s;
    const double* x = Cbc_getColSolution(m);
    s.x.assign(x, x + n);
    // The objective of the solution as given (integral columns rounded), unscaled.
    s.objective = 0;
    for (int c = 0; c < n; ++c) {
      if (p.integer_[c]) s.x[c] = std::round(s.x[c]);
      s.objective += p.cost_[c] * s.x[c];
    }
    s.bound = std::min(s.objective, Cbc_getBestPossibleObjValue(m) / objectiveScale);
    s.status = Cbc_isProvenOptimal(m) ? IlpSolution::Status::Optimal : IlpSolution::Status::TimeLimit;
    return s;
  }
};

namespace {

// The solve runs in a child process that is stopped at the time limit: CBC does not honour its
// limit in every phase (CLP's "idiot" crash before the first LP ran for minutes on a
// 1,024-device model with a 20 s limit). The child writes its solution to a pipe; a child still
// running past the limit (and a moment for its own stop) is killed and the solve has no solution. Single-threaded CBC
// on the same problem: the same answer as in-process.
bool writeAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n <= 0) return false;
    p += n, size -= static_cast<size_t>(n);
  }
  return true;
}

struct SolutionHeader {
  int status = 0;
  double objective = 0, bound = 0, seconds = 0;
  int64_t columns = 0;
};

IlpSolution solveInChild(const IlpProblem& problem, double timeLimitSeconds, int maxSolutions) {
  int fds[2];
  if (pipe(fds) != 0) return IlpSolver::solve(problem, timeLimitSeconds, maxSolutions);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    return IlpSolver::solve(problem, timeLimitSeconds, maxSolutions);
  }
  if (pid == 0) {
    close(fds[0]);
    IlpSolution s = IlpSolver::solve(problem, timeLimitSeconds, maxSolutions);
    SolutionHeader h{static_cast<int>(s.status), s.objective, s.bound, s.seconds, static_cast<int64_t>(s.x.size())};
    bool ok = writeAll(fds[1], &h, sizeof h) && writeAll(fds[1], s.x.data(), s.x.size() * sizeof(double));
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  std::string bytes;
  const double deadline = timeLimitSeconds * 1.02 + 0.25;  // CBC's own stop, and the pipe
  char buffer[1 << 16];
  for (;;) {
    double left = deadline - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = left > 0 ? poll(&pfd, 1, static_cast<int>(std::ceil(left * 1000))) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      kill(pid, SIGKILL);
      bytes.clear();
      break;
    }
    ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  IlpSolution s;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SolutionHeader h;
  if (bytes.size() < sizeof h) {
    s.status = IlpSolution::Status::TimeLimit;  // stopped before it had a plan
    return s;
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  if (bytes.size() != sizeof h + static_cast<size_t>(h.columns) * sizeof(double)) return s;
  s.status = static_cast<IlpSolution::Status>(h.status);
  s.objective = h.objective, s.bound = h.bound;
  s.x.resize(static_cast<size_t>(h.columns));
  if (!s.x.empty()) std::memcpy(s.x.data(), bytes.data() + sizeof h, s.x.size() * sizeof(double));  // none when infeasible
  return s;
}

}  // namespace

// A problem this small solves (or stops) within moments in-process; a fork costs more than it,
// most of all under the sanitizers, whose shadow memory the child's page tables copy.
constexpr int kChildProcessColumns = 20000;

IlpSolution solveIlp(const IlpProblem& problem, double timeLimitSeconds, int maxSolutions) {
  if (problem.columns() < kChildProcessColumns) return IlpSolver::solve(problem, timeLimitSeconds, maxSolutions);
  return solveInChild(problem, timeLimitSeconds, maxSolutions);
}

}  // namespace irc

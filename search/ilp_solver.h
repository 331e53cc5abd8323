#pragma once
// A mixed-integer linear programme and its solution by COIN-OR CBC (Debian's coinor-libcbc-dev,
// the solver meta-pytorch's autoparallel reaches through PuLP). Minimises; single-threaded, so
// the same problem gives the same answer on every run.
#include <string>
#include <vector>

namespace irc {

class IlpProblem {
 public:
  // A column with its objective coefficient and bounds; returns its index.
  int addColumn(double cost, double lower, double upper, bool integer);
  int addBinary(double cost) { return addColumn(cost, 0, 1, true); }
  // lower <= sum(coefs[k] * x[cols[k]]) <= upper.
  void addRow(std::vector<int> cols, std::vector<double> coefs, double lower, double upper);
  void setCost(int col, double cost) { cost_[col] = cost; }
  void setRowUpper(int row, double upper) { rows_[row].upper = upper; }
  double cost(int col) const { return cost_[col]; }

  int columns() const { return static_cast<int>(cost_.size()); }
  int rows() const { return static_cast<int>(rows_.size()); }

 private:
  friend struct IlpSolver;
  struct Row {
    std::vector<int> cols;
    std::vector<double> coefs;
    double lower, upper;
  };
  std::vector<double> cost_, lower_, upper_;
  std::vector<bool> integer_;
  std::vector<Row> rows_;
};

struct IlpSolution {
  enum class Status { Optimal, TimeLimit, Infeasible, NoSolution };
  Status status = Status::NoSolution;
  std::vector<double> x;  // per column (empty without a solution)
  double objective = 0;
  double bound = 0;  // the best proven lower bound
  double seconds = 0;
  // (objective - bound) / |objective|, 0 when proven optimal.
  double gap() const;
};

std::string_view statusName(IlpSolution::Status s);

// Stops at `timeLimitSeconds` of wall clock, or (`maxSolutions` > 0) at CBC's n-th solution: a
// limit that falls at the same point on every run, for tests.
IlpSolution solveIlp(const IlpProblem& problem, double timeLimitSeconds, int maxSolutions = 0);

}  // namespace irc

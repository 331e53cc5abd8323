#include "ir/sharding.h"

namespace irc {

std::string_view reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Prod: return "prod";
  }
  return "sum";
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  if (name == "sum") return ReduceOp::Sum;
  if (name == "max") return ReduceOp::Max;
  if (name == "min") return ReduceOp::Min;
  if (name == "prod") return ReduceOp::Prod;
  return std::nullopt;
}

}  // namespace irc

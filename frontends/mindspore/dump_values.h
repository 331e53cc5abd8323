#pragma once
// The values a `.ir` dump prints, read into irc's types: the one place that cuts their text, for
// every reader of dumps (mindspore_import, the dump reader's typed fields, `irc diff`). Both
// spellings are read: irc's and MindSpore 1.x's (`Float32`, `3`, `<Tensor[Float32], (2, 3)>`) and
// MindSpore 2.x's (`F32`, `I64(3)`, `<Ref[Tensor(F32)], (2, 3)>`).
#include <optional>
#include <string>
#include <string_view>

#include "ir/attribute.h"
#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/sharding.h"

namespace irc {

// `I64(3)` / `I32(3)` / `3`.
std::optional<int64_t> dumpInt(std::string_view s);
// `(1, 2)`, `[1, 2]`, `()`.
std::optional<IntTuple> dumpIntTuple(std::string_view s);
// `((2, 1), (1, 4))`: a strategy, one tuple per operand.
std::optional<ShardStrategy> dumpStrategy(const std::string& s);
// `0.25`, `F32(0.25)`.
std::optional<double> dumpNumber(std::string_view s);
// `true`, `False`, `Bool(1)`.
std::optional<bool> dumpBool(std::string_view s);
// `Float32` (irc, MindSpore 1.x), `F32` (2.x).
std::optional<DType> dumpDType(std::string_view s);
// `<Tensor[Float32], (64, 64)>` / `<Ref[Tensor(F32)], (64)>` / `<Tensor[Float32], ()>`; nullopt
// for another type (a tuple, an int) or a shape irc cannot hold.
std::optional<TensorType> dumpTensorType(const std::string& type);
// `Tensor(shape=[], dtype=Float32, value=0.25)` or a plain number.
std::optional<ScalarTensor> dumpScalarTensor(std::string_view s);
// A parameter reference: `%paraK_NAME` or 2.x's `$(@graph:paraK_NAME)` -> NAME.
std::optional<std::string> dumpParamName(const std::string& ref);

}  // namespace irc

#include "frontends/onnx/onnx_frontend.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory_resource>
#include <queue>
#include <set>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/shape_inference/implementation.h>

#include "frontends/onnx/onnx_graph_builder.h"
#include "frontends/onnx/onnx_merged_batch_regions.h"
#include "frontends/onnx/onnx_trainable.h"
#include "ops/activation_patterns.h"
#include "frontends/onnx/onnx_module_path.h"
#include "frontends/onnx/onnx_tensors.h"
#include "ir/shape.h"
#include "ir/suggest.h"

namespace irc {
namespace {

using onnx_import::GraphBuilder;
using onnx_import::NodeMapping;

// Runs ONNX's shape inference on `model` in a child process and takes the types it infers back
// (the graph's value_info and outputs); returns the diagnostic when it could not. Debian's
// libonnx (1.12) reads out of bounds on some malformed models instead of throwing (a
// normalization axis past the rank, found by the fuzzer): irc must answer such a model with
// a diagnostic, not die with it.
std::optional<std::string> inferShapesIsolated(onnx::ModelProto& model) {
  int fds[2];
  if (::pipe(fds) != 0) return fmt::format("ONNX's shape inference could not be run: {}", std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return fmt::format("ONNX's shape inference could not be run: {}", std::strerror(errno));
  }
  if (pid == 0) {
    // The child: a crash must end it quietly, not run the parent's (sanitizer, fuzzer) handlers.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
    ::close(fds[0]);
    std::string out;
    try {
      onnx::shape_inference::InferShapes(model);
      // Only what inference adds comes back (not the weights): the inner tensors' and the
      // outputs' types.
      onnx::GraphProto shapes;
      *shapes.mutable_value_info() = model.graph().value_info();
      *shapes.mutable_output() = model.graph().output();
      out = "M";
      shapes.AppendToString(&out);
    } catch (const std::exception& e) {
      out = "E";
      out += e.what();
    }
    for (size_t done = 0; done < out.size();) {
      ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(3);
      done += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string in;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    in.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status))
    return fmt::format(
        "ONNX's shape inference (libonnx) crashed on the model (signal {}: {}); irc's own checks run without "
        "--onnx-shape-check",
        WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || in.empty()) return "ONNX's shape inference stopped without an answer";
  if (in[0] == 'E') return fmt::format("ONNX's shape inference rejects the model: {}", in.substr(1));
  onnx::GraphProto shapes;
  if (!shapes.ParseFromArray(in.data() + 1, static_cast<int>(in.size() - 1)))
    return "ONNX's shape inference gave an answer that cannot be read";
  *model.mutable_graph()->mutable_value_info() = std::move(*shapes.mutable_value_info());
  *model.mutable_graph()->mutable_output() = std::move(*shapes.mutable_output());
  return std::nullopt;
}
using onnx_import::Term;

bool isDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

class OnnxLoader {
 public:
  OnnxLoader(DiagnosticEngine& diags, const OnnxOptions& options) : diags_(diags), options_(options) {}

  std::optional<LoadedGraph> load(const std::string& bytes);

 private:
  bool parse(const std::string& bytes);
  bool bindInputDims();
  void runOnnxShapeInference();
  std::optional<std::vector<int>> nodeOrder();
  void mapNode(GraphBuilder& b, int index, const std::string& name);
  void readOutputs(GraphBuilder& b);
  void mapOpaque(GraphBuilder& b, int index, const std::string& name);
  // Gives the ops made for node `index` (from op `firstOp` on) the node's torch module path.
  void setModulePath(GraphBuilder& b, int index, size_t firstOp);

  void error(std::string message, int nodeIndex = -1) {
    diags_.error(nodeIndex >= 0 ? SourceLoc{nodeIndex + 1, 0} : SourceLoc{}, std::move(message));
  }

  DiagnosticEngine& diags_;
  const OnnxOptions& options_;
  // The model lives in an arena: parsing allocates from it in blocks, and dropping it frees them
  // at once (a 100k-node model is a million small protobuf objects).
  google::protobuf::Arena arena_;
  onnx::ModelProto& model_ = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena_);
  int opset_ = 0;
  std::pmr::monotonic_buffer_resource pool_;  // the loader's name tables, freed at once
  // What ONNX's shape inference found, per tensor (views of the model's strings).
  std::pmr::unordered_map<std::string_view, Shape> onnxShapes_{&pool_};
  std::unordered_map<std::string, int> moduleIndex_;  // a module path's index in Graph::modulePaths
  std::pmr::unordered_map<std::string_view, int32_t> onnxElemTypes_{&pool_};
  bool inferred_ = false;
  std::unordered_set<std::string> failed_;  // outputs of nodes that could not be mapped
};

bool OnnxLoader::parse(const std::string& bytes) {
  if (!model_.ParseFromString(bytes) || !model_.has_graph() || model_.ir_version() <= 0) {
    error(bytes.empty() ? "the file is empty; an ONNX model is a serialized onnx.ModelProto"
                        : "the file is not an ONNX model (it does not parse as an onnx.ModelProto with an ir_version "
                          "and a graph: not ONNX, or truncated)");
    return false;
  }
  for (const auto& o : model_.opset_import())
    if (isDefaultDomain(o.domain())) opset_ = static_cast<int>(o.version());
  if (opset_ == 0) {
    error("the model imports no version of the default ONNX domain (opset_import)");
    return false;
  }
  return true;
}

// Every dim of every graph input must be a number: a symbolic one (`batch`) takes its value from
// `--dim NAME=VALUE`. The bound values are written into the model, so that ONNX's own shape
// inference sees them too.
bool OnnxLoader::bindInputDims() {
  std::unordered_set<std::string> initializers;
  for (const auto& t : model_.graph().initializer()) initializers.insert(t.name());
  std::set<std::string> symbolic;  // every named dim of the inputs, for the warning below
  bool ok = true;
  for (auto& input : *model_.mutable_graph()->mutable_input()) {
    if (initializers.count(input.name())) continue;
    if (!input.type().has_tensor_type()) {
      error(fmt::format("graph input '{}' is not a tensor (sequences, maps and optionals are not held)", input.name()));
      ok = false;
      continue;
    }
    auto* tensorType = input.mutable_type()->mutable_tensor_type();
    if (!tensorType->has_shape()) {
      error(fmt::format("graph input '{}' has no shape; irc needs every input's shape", input.name()));
      ok = false;
      continue;
    }
    for (int d = 0; d < tensorType->shape().dim_size(); ++d) {
      auto* dim = tensorType->mutable_shape()->mutable_dim(d);
      if (dim->has_dim_value()) continue;
      if (dim->has_dim_param()) {
        symbolic.insert(dim->dim_param());
        auto it = options_.dims.find(dim->dim_param());
        if (it != options_.dims.end()) {
          dim->set_dim_value(it->second);
          continue;
        }
        error(
            fmt::format("dim {} of graph input '{}' is dynamic ('{}'); give it a size with --dim {}=VALUE (or `dims:` "
                        "in a plan)",
                        d, input.name(), dim->dim_param(), dim->dim_param()));
      } else {
        error(fmt::format("dim {} of graph input '{}' has no size and no name; irc compiles static shapes", d, input.name()));
      }
      ok = false;
    }
  }
  // A size given for a dim the graph does not have is a typo or the wrong file: said, not
  // silently ignored (a warning: one command line may give sizes for several exports' dims).
  for (const auto& [name, size] : options_.dims)
    if (!symbolic.count(name))
      diags_.warning(
          {},
          fmt::format(
              "the size given for dim '{}' ({}) names no dynamic dim of the graph's inputs ({}); it is ignored", name, size,
              symbolic.empty() ? std::string("they have none") : "they have " + fmt::format("{}", fmt::join(symbolic, ", "))));
  return ok;
}

void OnnxLoader::runOnnxShapeInference() {
  if (inferred_) return;
  inferred_ = true;
  // ONNX's inference is a cross-check of the mapping (a shape irc computes differently is
  // reported), not a source of shapes: irc infers every op's shapes itself. It is a third of a
  // load's time, so it runs on request (the tests and --onnx-shape-check).
  if (auto problem = inferShapesIsolated(model_)) {
    error(*problem);
    return;
  }
  auto record = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    onnxElemTypes_[v.name()] = v.type().tensor_type().elem_type();
    Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    onnxShapes_[v.name()] = s;
  };
  for (const auto& v : model_.graph().value_info()) record(v);
  for (const auto& v : model_.graph().output()) record(v);
}

// The nodes in an order where each comes after what it reads (ONNX requires the file's order to
// be one; exporters sometimes break that). A name no node, input or initializer defines is
// reported at the first node reading it.
std::optional<std::vector<int>> OnnxLoader::nodeOrder() {
  const auto& g = model_.graph();
  {
    // The common case first: the file's order is one (one pass over the names, no graph built).
    std::pmr::unordered_set<std::string_view> defined(&pool_);
    defined.reserve(g.initializer_size() + g.input_size() + 2 * g.node_size());
    for (const auto& t : g.initializer()) defined.insert(t.name());
    for (const auto& in : g.input()) defined.insert(in.name());
    bool inOrder = true;
    for (int i = 0; i < g.node_size() && inOrder; ++i) {
      for (const auto& in : g.node(i).input())
        if (!in.empty() && !defined.count(in)) inOrder = false;
      for (const auto& out : g.node(i).output()) defined.insert(out);
    }
    if (inOrder) {
      std::vector<int> order(g.node_size());
      for (int i = 0; i < g.node_size(); ++i) order[i] = i;
      return order;
    }
  }
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& out : g.node(i).output())
      if (!out.empty()) producer[out] = i;
  std::unordered_set<std::string> available;
  for (const auto& t : g.initializer()) available.insert(t.name());
  for (const auto& in : g.input()) available.insert(in.name());
  std::vector<std::vector<int>> readers(g.node_size());
  std::vector<int> waiting(g.node_size(), 0);
  bool ok = true;
  for (int i = 0; i < g.node_size(); ++i) {
    std::unordered_set<int> seen;
    for (const auto& in : g.node(i).input()) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        std::vector<std::string> known(available.begin(), available.end());
        for (const auto& [n, _] : producer) known.push_back(n);
        std::sort(known.begin(), known.end());
        error(fmt::format("node '{}' ({}) reads '{}', which no node, graph input or initializer defines{}", g.node(i).name(),
                          g.node(i).op_type(), in, didYouMean(in, known)),
              i);
        ok = false;
      } else if (seen.insert(it->second).second) {
        readers[it->second].push_back(i);
        ++waiting[i];
      }
    }
  }
  if (!ok) return std::nullopt;
  // Kahn's algorithm, lowest file position first among the ready nodes.
  std::vector<int> order, ready;
  for (int i = g.node_size() - 1; i >= 0; --i)
    if (waiting[i] == 0) ready.push_back(i);
  std::priority_queue<int, std::vector<int>, std::greater<int>> queue(ready.begin(), ready.end());
  while (!queue.empty()) {
    int i = queue.top();
    queue.pop();
    order.push_back(i);
    for (int r : readers[i])
      if (--waiting[r] == 0) queue.push(r);
  }
  if (order.size() != static_cast<size_t>(g.node_size())) {
    for (int i = 0; i < g.node_size(); ++i)
      if (waiting[i] > 0) {
        error(fmt::format("node '{}' ({}) is on a cycle: it reads, through other nodes, its own output", g.node(i).name(),
                          g.node(i).op_type()),
              i);
        break;
      }
    return std::nullopt;
  }
  return order;
}

void OnnxLoader::mapNode(GraphBuilder& b, int index, const std::string& name) {
  const onnx::NodeProto& node = model_.graph().node(index);
  for (const auto& in : node.input())
    if (failed_.count(in)) {  // its producer was reported: no cascade
      for (const auto& out : node.output()) failed_.insert(out);
      return;
    }
  const onnx_import::NodeMapper* mapper = isDefaultDomain(node.domain()) ? onnx_import::findMapper(node.op_type()) : nullptr;
  const onnx_import::NodeMapper* folder =
      !mapper && isDefaultDomain(node.domain()) ? onnx_import::findConstantFolder(node.op_type()) : nullptr;
  if (folder) {
    // No irc op, but an evaluator: fine on constants (folded here), an error on a computed tensor.
    std::string computed;
    for (const auto& in : node.input())
      if (!in.empty() && computed.empty() && !b.terms.at(in).isConstant()) computed = in;
    if (computed.empty()) mapper = folder;
    else if (!options_.opaqueUnsupported) {
      error(fmt::format("node '{}' ({}) reads the computed tensor '{}'; irc has no {} op and evaluates it only where its "
                        "inputs are constants (folded at import): {}",
                        name, node.op_type(), computed, node.op_type(), joinNames(onnx_import::constantOnlyOnnxOps())),
            index);
      for (const auto& out : node.output()) failed_.insert(out);
      return;
    }
  }
  if (!mapper && options_.opaqueUnsupported) {
    mapOpaque(b, index, name);
    return;
  }
  if (!mapper) {
    error(fmt::format("node '{}' has the op type {}{}, which irc does not map{}; irc maps {}", name,
                      node.domain().empty() ? "" : node.domain() + ".", node.op_type(),
                      didYouMean(node.op_type(), supportedOnnxOps()), joinNames(supportedOnnxOps())),
          index);
    for (const auto& out : node.output()) failed_.insert(out);
    return;
  }
  size_t opsBefore = b.graph.ops.size();
  NodeMapping m(b, node, index, name);
  auto outs = (*mapper)(m);
  if (!outs || m.failed()) {
    for (const auto& out : node.output()) failed_.insert(out);
    return;
  }
  setModulePath(b, index, opsBefore);
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& out = node.output(i);
    if (out.empty()) continue;
    if (static_cast<size_t>(i) >= outs->size()) {
      error(
          fmt::format("node '{}' ({}) has output {} ('{}'); irc's mapping gives {}", name, node.op_type(), i, out, outs->size()),
          index);
      failed_.insert(out);
      continue;
    }
    Term t = (*outs)[i];
    // A result made for this node takes the ONNX tensor's name; an alias (Identity) keeps its own.
    if (t.isConstant()) {
      if (!t.constant->proto && t.constant->parameter == kNoId) t.constant->name = out;
    } else if (b.graph.value(t.value).producer >= static_cast<OpId>(opsBefore)) {
      b.graph.value(t.value).name = out;
    }
    const Shape& got = t.isConstant() ? t.constant->type.shape : b.graph.value(t.value).type.shape;
    if (auto it = onnxShapes_.find(out); it != onnxShapes_.end() && it->second != got)
      error(fmt::format("node '{}' ({}): irc's mapping gives '{}' the shape {}; ONNX's shape inference gives {}", name,
                        node.op_type(), out, formatShape(got), formatShape(it->second)),
            index);
    b.terms[out] = t;
  }
}

void OnnxLoader::setModulePath(GraphBuilder& b, int index, size_t firstOp) {
  if (firstOp == b.graph.ops.size()) return;  // folded: no op to label
  std::string problem;
  std::string module = modulePathOf(model_.graph().node(index), problem);
  if (!problem.empty()) error(problem, index);
  if (module.empty()) return;
  auto [it, added] = moduleIndex_.emplace(module, static_cast<int>(b.graph.modulePaths.size()));
  if (added) b.graph.modulePaths.push_back(module);
  for (size_t op = firstOp; op < b.graph.ops.size(); ++op) b.graph.ops[op].modulePath = it->second;
}

// --opaque-unsupported: a node irc does not map becomes an Opaque op whose result type comes from
// ONNX's shape inference; its operands and result are whole on every rank (docs/onnx.md).
void OnnxLoader::mapOpaque(GraphBuilder& b, int index, const std::string& name) {
  const onnx::NodeProto& node = model_.graph().node(index);
  auto fail = [&](std::string why) {
    error(fmt::format("node '{}' ({}) is not mapped and cannot be kept opaque: {}", name, node.op_type(), why), index);
    for (const auto& out : node.output()) failed_.insert(out);
  };
  int outputs = 0;
  for (const auto& out : node.output()) outputs += !out.empty();
  if (outputs != 1 || node.output(0).empty()) return fail(fmt::format("it has {} outputs; an opaque op has one", outputs));
  NodeMapping m(b, node, index, name);
  std::vector<onnx_import::Arg> args;
  bool computedInput = false;
  for (size_t i = 0; i < m.inputCount(); ++i)
    if (auto t = m.input(i)) {
      computedInput |= !t->isConstant();
      args.push_back(*t);
    }
  // Folding an opaque op would turn its placeholder into numbers the rest of the model computes
  // with as if they were real: an opaque op reads at least one computed tensor.
  if (!computedInput) return fail("it reads no computed tensor (no inputs, or only constants)");
  runOnnxShapeInference();
  const std::string& out = node.output(0);
  auto shape = onnxShapes_.find(out);
  auto elem = onnxElemTypes_.find(out);
  if (shape == onnxShapes_.end() || elem == onnxElemTypes_.end())
    return fail(fmt::format("ONNX's shape inference does not give the shape of its output '{}'", out));
  auto dtype = dtypeOfOnnx(elem->second);
  if (!dtype) return fail(fmt::format("its output has element type {}, which irc does not hold", onnxTypeName(elem->second)));
  IntTuple dims(shape->second.begin(), shape->second.end());
  size_t opsBefore = b.graph.ops.size();
  auto result = m.emit1("Opaque", std::move(args),
                        {{"op_type", node.op_type()}, {"dtype", std::string(modelName(*dtype))}, {"shape", dims}});
  if (!result) {
    failed_.insert(out);
    return;
  }
  setModulePath(b, index, opsBefore);
  b.graph.value(result->value).name = out;
  b.terms[out] = *result;
}

void OnnxLoader::readOutputs(GraphBuilder& b) {
  for (const auto& out : model_.graph().output()) {
    if (failed_.count(out.name())) continue;
    auto it = b.terms.find(out.name());
    if (it == b.terms.end()) {
      error(fmt::format("graph output '{}' is not defined by any node, input or initializer", out.name()));
      continue;
    }
    if (it->second.isConstant() && options_.constantOutputs) {
      if (const TensorValue* data = b.dataOf(*it->second.constant, -1)) (*options_.constantOutputs)[out.name()] = *data;
      continue;
    }
    if (it->second.isConstant()) {
      error(fmt::format("graph output '{}' is a constant (it depends on no graph input); irc compiles computed outputs",
                        out.name()));
      continue;
    }
    b.graph.outputs.push_back(it->second.value);
  }
  if (model_.graph().output_size() == 0) error("the graph has no outputs");
}

std::optional<LoadedGraph> OnnxLoader::load(const std::string& bytes) {
  if (!parse(bytes)) return std::nullopt;
  if (!bindInputDims()) return std::nullopt;
  if (options_.checkShapesWithOnnx) runOnnxShapeInference();
  if (diags_.hasErrors()) return std::nullopt;
  auto order = nodeOrder();
  if (!order) return std::nullopt;

  GraphBuilder b(diags_, options_, opset_);
  const auto& g = model_.graph();
  // Named after the file: exporters name every graph alike (torch's "main_graph", "torch_jit"),
  // which says nothing in a dump's `# IR entry` or a report.
  b.graph.name = !options_.defaultName.empty() ? options_.defaultName : g.name().empty() ? "graph" : g.name();
  for (const auto& t : g.initializer()) {
    std::string problem;
    auto type = typeOfTensor(t, problem);
    if (!type) {
      error(fmt::format("initializer: {}", problem));
      continue;
    }
    auto c = std::make_shared<onnx_import::Constant>();
    c->name = t.name();
    c->type = *type;
    c->proto = &t;
    b.terms[t.name()] = Term{kNoId, c};
  }
  for (const auto& in : g.input()) {
    if (b.terms.count(in.name())) continue;  // an initializer listed as an input (IR < 4): its default
    if (auto bound = options_.constantInputs.find(in.name()); bound != options_.constantInputs.end()) {
      auto dtype = dtypeOfOnnx(in.type().tensor_type().elem_type());
      auto c = std::make_shared<onnx_import::Constant>();
      c->name = in.name();
      c->type = {dtype.value_or(DType::Int64), bound->second.shape};
      c->data = std::make_shared<TensorValue>(bound->second);
      b.terms[in.name()] = Term{kNoId, c};
      continue;
    }
    const auto& tt = in.type().tensor_type();
    auto dtype = dtypeOfOnnx(tt.elem_type());
    if (!dtype) {
      error(
          fmt::format("graph input '{}' has element type {}, which irc does not hold", in.name(), onnxTypeName(tt.elem_type())));
      continue;
    }
    TensorType type{*dtype, {}};
    for (const auto& d : tt.shape().dim()) type.shape.push_back(d.dim_value());
    b.addInput(in.name(), type);
  }
  if (diags_.hasErrors()) return std::nullopt;
  // Op names are node names, made unique; a node without one is named `<OpType>_<index>`.
  for (int index : *order) {
    const onnx::NodeProto& node = g.node(index);
    std::string name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
    mapNode(b, index, name);
    if (diags_.capReached()) break;
  }
  readOutputs(b);
  if (diags_.hasErrors()) return std::nullopt;
  // Import rewrites: the same numbers in the ops torch ran (fused activations, unmerged heads).
  auto rewrite = [&](auto pass) {
    std::vector<bool> erase(b.graph.ops.size(), false);
    if (pass(b.graph, erase) > 0) b.eraseOps(erase);
  };
  rewrite(fuseWrittenOutActivations);
  rewrite(onnx_import::unmergeBatchRegions);
  onnx_import::markUntrainedConstants(b.graph);
  return LoadedGraph{std::move(b.graph), {}, std::move(b.parameterData), {}};
}

}  // namespace

ParallelSettings onnxDefaultSettings(int64_t deviceNum) {
  ParallelSettings s;
  s.deviceNum = deviceNum;
  s.searchMode = SearchMode::DataParallel;
  // A torch model trains as torch does (docs/memory.md): gradients freed between steps, the
  // optimizer's update a loop over the parameters (as ../shared's measurements ran it).
  s.gradientBuffer = GradientBuffer::Freed;
  s.optimizerKernels = OptimizerKernels::ForLoop;
  return s;
}

bool looksLikeOnnx(const std::string& bytes) {
  // Serializers write ModelProto's fields in field order: ir_version (field 1, varint) first.
  return !bytes.empty() && bytes[0] == '\x08';
}

std::optional<LoadedGraph> loadOnnxModel(const std::string& bytes, DiagnosticEngine& diags, const OnnxOptions& options) {
  OnnxLoader loader(diags, options);
  return loader.load(bytes);
}

}  // namespace irc

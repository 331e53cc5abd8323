// `irc explain` and the JSON report (spec/report.md): field presence and types, the seed FFN's
// facts, and determinism.
#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "dumps/report.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {
std::string ffn() { return sourceDir() + "/examples/ffn.yaml"; }
using json = nlohmann::json;

// A small schema check: every key present with the JSON type expected.
void requireFields(const json& j, const std::vector<std::pair<std::string, json::value_t>>& fields) {
  for (const auto& [key, type] : fields) {
    CAPTURE(key);
    REQUIRE(j.contains(key));
    bool numeric = type == json::value_t::number_float &&
                   (j[key].is_number_float() || j[key].is_number_integer() || j[key].is_number_unsigned());
    bool integral = type == json::value_t::number_integer && (j[key].is_number_integer() || j[key].is_number_unsigned());
    CHECK((j[key].type() == type || numeric || integral));
  }
}
}  // namespace

TEST_CASE("explain says on which of MindSpore's criteria the losing alternative lost (partitions, forward communication)") {
  // Why sharding propagation splits an unconfigured Linear after a replicated op (more
  // partitions at equal cost) but keeps the one before a replicated op whole (its rowwise split
  // would need an AllReduce): the costs that made it choose, as the deviation (an MLP-only plan
  // splitting attention on its own) needs them shown.
  TempDir tmp;
  writeFile(tmp.path() + "/m.yaml",
            "parallel: {device_num: 4, search_mode: sharding_propagation}\n"
            "inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
            "parameters:\n  - {name: w1, shape: [16, 16], dtype: float32}\n"
            "  - {name: w2, shape: [16, 16], dtype: float32}\n"
            "ops:\n  - {name: relu, type: ReLU, inputs: [x], in_strategy: [[1, 1]]}\n"
            "  - {name: q, type: MatMul, inputs: [relu, w1]}\n"
            "  - {name: o, type: MatMul, inputs: [q, w2]}\n"
            "  - {name: out, type: ReLU, inputs: [o], in_strategy: [[1, 1]]}\noutputs: [out]\n");
  RunResult q = runIrc({"explain", tmp.path() + "/m.yaml", "q"});
  REQUIRE_MESSAGE(q.exitCode == 0, q.err);
  CHECK(q.out.find("  best losing alternative: ((1, 1), (1, 1)) at cost 0; the costs tie, and MindSpore prefers more partitions "
                   "(1 against 4)\n") != std::string::npos);
  RunResult o = runIrc({"explain", tmp.path() + "/m.yaml", "o"});
  // Rowwise: an AllReduce of a [8, 16] float32 partial (512 bytes), MindSpore's corrected cost for
  // small messages (at most 2048 bytes cost 3072; plan/redistribution_planner.cc correctComm).
  CHECK(o.out.find("  best losing alternative: ((1, 4), (4, 1)) at cost 0; the edge costs tie, it lost on its own forward "
                   "communication (3072 bytes against 0 bytes)\n") != std::string::npos);
}

TEST_CASE("explain an op: strategy, origin with the losing alternative, layouts, its redistribution") {
  RunResult r = runIrc({"explain", ffn(), "add2"});
  REQUIRE(r.exitCode == 0);
  CHECK(r.out.find("  strategy: ((2, 4), (4))\n") != std::string::npos);
  CHECK(r.out.find("  origin: propagated from matmul2 over edge matmul2 -> add2, redistribution cost 0\n") != std::string::npos);
  // matmul2's result reaches add2 rows split 2, a (32, 64) float32 slice of 8192 bytes. The chosen
  // ((2, 4), (4)) cuts its columns: one Split of those 8192 bytes. ((8, 1), (1)) on its own device
  // matrix takes MindSpore's expanded form: a Reshape of the slice (2 x 8192), a StridedSlice
  // (8192) and a Reshape back of the (8, 64) result (2 x 2048): 28672 (stepCost's model).
  CHECK(r.out.find("  best losing alternative: ((8, 1), (1)) at cost 0; it lost on the edge's computation cost (28672 against "
                   "8192)\n") != std::string::npos);
  CHECK(r.out.find("  input 0 (matmul2, redistributed): tensor map [1, 0] on device matrix (2, 4), slice (32, 16), "
                   "placements [Shard(0), Shard(1)]\n") != std::string::npos);
}

TEST_CASE("explain an inserted op: why, the edge, both layouts, the rank's bounds and group") {
  RunResult slice = runIrc({"explain", ffn(), "add2.in0.redistribution_op.0", "--rank", "5"});
  REQUIRE(slice.exitCode == 0);
  CHECK(slice.out.find("  edge: matmul2 -> add2 (input 0), step 1 of 1\n") != std::string::npos);
  CHECK(slice.out.find("  the producer gives: tensor map [2, 0] on device matrix (2, 4, 1), slice (32, 64), "
                       "placements [Shard(0), Replicate()]\n") != std::string::npos);
  CHECK(slice.out.find("  rank 5 keeps (0, 16) .. (32, 32)\n") != std::string::npos);
  RunResult reduce = runIrc({"explain", ffn(), "forward_op_matmul2_0", "--rank", "6"});
  REQUIRE(reduce.exitCode == 0);
  CHECK(reduce.out.find("  rank 6's group: 4-5-6-7 (4-15700679239691767905)\n") != std::string::npos);
  CHECK(reduce.out.find("  bytes sent per rank: 12288\n") != std::string::npos);  // 2 (n-1)/n of 32x64 floats
  RunResult unknown = runIrc({"explain", ffn(), "relo"});
  CHECK(unknown.exitCode == 2);
  CHECK(unknown.err == "irc: error: 'relo' names no op of ffn; did you mean 'relu'?\n");
}

TEST_CASE("the report has every field of spec/report.md with its type") {
  RunResult r = runIrc({ffn(), "--report", "-", "-q"});
  REQUIRE(r.exitCode == 0);
  json rep = json::parse(r.out);
  using T = json::value_t;
  requireFields(rep, {{"schema_version", T::number_integer},
                      {"model", T::string},
                      {"device_num", T::number_integer},
                      {"global_rank", T::number_integer},
                      {"search_mode", T::string},
                      {"ops", T::array},
                      {"values", T::array},
                      {"redistributions", T::array},
                      {"totals", T::object}});
  REQUIRE(rep["ops"].size() == 5);
  for (const auto& op : rep["ops"]) {
    requireFields(op, {{"name", T::string},
                       {"type", T::string},
                       {"in_strategy", T::array},
                       {"origin", T::object},
                       {"dev_matrix", T::array},
                       {"inputs", T::array},
                       {"outputs", T::array},
                       {"forward_ops", T::array}});
    for (const auto& in : op["inputs"])
      requireFields(in, {{"value", T::string},
                         {"shape", T::array},
                         {"tensor_map", T::array},
                         {"partial", T::array},
                         {"slice_shape", T::array}});
    requireFields(op["origin"], {{"kind", T::string}});
  }
  for (const auto& v : rep["values"])
    requireFields(v, {{"name", T::string},
                      {"shape", T::array},
                      {"dtype", T::string},
                      {"dev_matrix", T::array},
                      {"tensor_map", T::array},
                      {"partial", T::array},
                      {"origin", T::object}});
  for (const auto& e : rep["redistributions"])
    requireFields(e, {{"value", T::string},
                      {"consumer", T::string},
                      {"input_index", T::number_integer},
                      {"from", T::object},
                      {"to", T::object},
                      {"reason", T::string},
                      {"ops", T::array},
                      {"comm_bytes_per_rank", T::number_float}});
  requireFields(
      rep["totals"],
      {{"comm_bytes_per_rank", T::number_float}, {"param_bytes_per_rank", T::number_float}, {"inserted_ops", T::number_integer}});
  // The FFN's facts, derived by hand: one AllReduce of 32x64 floats over 4 ranks, 2*3/4*8192
  // bytes; the parameters' slices: 64x16 + 16 + 16x64 + 16 floats.
  CHECK(rep["totals"]["comm_bytes_per_rank"] == 12288.0);
  CHECK(rep["totals"]["param_bytes_per_rank"] == 8320.0);
  CHECK(rep["totals"]["inserted_ops"] == 2);
  CHECK(rep["ops"][3]["outputs"][0]["partial"] == json({1}));
  CHECK(rep["ops"][3]["outputs"][0]["partial_op"] == "sum");
  CHECK(rep["ops"][0]["origin"]["kind"] == "user");
  CHECK(rep["ops"][1]["origin"]["from"] == "matmul");
  // DTensor's placements beside each layout, over the mesh's axes of more than one device:
  // matmul's (2, 1, 4) device matrix is the (2, 4) mesh.
  CHECK(rep["ops"][0]["inputs"][1]["placements"] == json({"Replicate()", "Shard(1)"}));
  CHECK(rep["ops"][3]["outputs"][0]["placements"] == json({"Shard(0)", "Partial(sum)"}));
  for (const auto& v : rep["values"]) CHECK(v["placements"].is_array());
}

// The totals are the rank's, as the summary line and the memory section say: its stage's
// parameters, Send and gradient reduction, at the precision it computes in. They were every
// stage's at the declared float32 (GPT 145.6B on PP 8 x DP 24 under ZeRO-2: 144.6 GB of gradient
// AllReduce a rank printed, 11.2 GB moved).
TEST_CASE("the report's per-rank bytes are the rank's: its stage's, in the precision it holds them") {
  TempDir tmp;
  writeFile(tmp.path() + "/m.yaml",
            R"(parallel: {device_num: 4, pipeline_stages: 2, micro_batches: 2, training: true, precision: bf16_mixed}
inputs: [{name: x, shape: [8, 64], dtype: float32}]
parameters:
  - {name: w0, shape: [64, 64], dtype: float32}
  - {name: w1, shape: [64, 32], dtype: float32}
ops:
  - {name: mm0, type: MatMul, inputs: [x, w0], in_strategy: [[2, 1], [1, 1]]}
  - {name: mm1, type: MatMul, inputs: [mm0, w1], in_strategy: [[2, 1], [1, 1]]}
outputs: [mm1]
stages: {mm0: 0, mm1: 1}
)");
  // Stage 0 (ranks 0, 1): w0 in bf16, its gradient all-reduced over the 2 data ranks (a ring
  // sends 2 (n - 1) / n = 1 of it), mm0's [4, 64] rows sent on; stage 1: w1, nothing sent.
  struct Row {
    std::string rank;
    double params, grads, sent;
  };
  for (const Row& k : {Row{"0", 64.0 * 64 * 2, 64.0 * 64 * 2, 4.0 * 64 * 2}, Row{"2", 64.0 * 32 * 2, 64.0 * 32 * 2, 0}}) {
    CAPTURE(k.rank);
    RunResult r = runIrc({tmp.path() + "/m.yaml", "--report", tmp.path() + "/r.json", "--rank", k.rank, "-q"});
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    json rep = json::parse(readFile(tmp.path() + "/r.json"));
    CHECK(rep["totals"]["param_bytes_per_rank"] == k.params);
    CHECK(rep["totals"]["param_bytes_per_rank"] == rep["memory"]["training"]["parameters_bytes"]);
    CHECK(rep["totals"]["grad_comm_bytes_per_rank"] == k.grads);
    CHECK(rep["totals"]["comm_bytes_per_rank"] == k.sent);
  }
}

// `irc explain --time`: the step by category (adding up to the estimate the compile prints),
// then the modules (layers folded into one row) and ops by time, each with its TFLOP/s.
TEST_CASE("explain --time: the step by category, the modules with their layers folded, the ops by time") {
  TempDir tmp;
  writeFile(tmp.path() + "/m.yaml", R"(parallel: {device_num: 2, training: true, precision: bf16_mixed}
cluster: {preset: dgx-h100}
inputs: [{name: x, shape: [256, 512], dtype: float32}]
parameters:
  - {name: w0, shape: [512, 512], dtype: float32}
  - {name: w1, shape: [512, 512], dtype: float32}
ops:
  - {name: l0_mm, type: MatMul, inputs: [x, w0], in_strategy: [[2, 1], [1, 1]], module: model.layers.0.mlp}
  - {name: l0_act, type: ReLU, inputs: [l0_mm], module: model.layers.0.mlp}
  - {name: l1_mm, type: MatMul, inputs: [l0_act, w1], module: model.layers.1.mlp}
outputs: [l1_mm]
)");
  RunResult r = runIrc({"explain", tmp.path() + "/m.yaml", "--time"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.out.find("irc explain: where m's step goes on dgx-h100 (2 devices, bf16_mixed)") != std::string::npos);
  CHECK(r.out.find("  gemm ") != std::string::npos);
  CHECK(r.out.find("  elementwise_norms_and_copies ") != std::string::npos);
  // Both layers' ops in one row: 3 ops.
  CHECK(r.out.find("  model.layers.*.mlp                           3 ") != std::string::npos);
  CHECK(r.out.find("  l0_mm                                    MatMul") != std::string::npos);
  // Each op's kernel bound by its FLOPs or its bytes: the product of 128 x 512 by 512 x 512 fills
  // 4 of the H100's 132 SMs with 128 x 128 tiles (wave quantization: 67 MFLOP at ~3 % of the
  // peak, ~2.8 us) against 0.66 MB at 3.35 TB/s (~0.2 us): compute; the ReLU does one FLOP an
  // element it reads and writes: memory.
  auto lineOf = [&](const std::string& op) {
    size_t at = r.out.find("\n  " + op + " ");
    REQUIRE(at != std::string::npos);
    return r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  CHECK(lineOf("l0_mm").ends_with(" compute"));
  CHECK(lineOf("l0_act").ends_with(" memory"));
  // Without a cluster there is no step to take apart: said, exit 1.
  writeFile(tmp.path() + "/flat.yaml",
            "parallel: {device_num: 1}\ninputs: [{name: x, shape: [4], dtype: float32}]\n"
            "ops:\n  - {name: r, type: ReLU, inputs: [x]}\noutputs: [r]\n");
  RunResult flat = runIrc({"explain", tmp.path() + "/flat.yaml", "--time"});
  CHECK(flat.exitCode == 1);
  CHECK(flat.err.find("--time needs a cluster") != std::string::npos);
}

TEST_CASE("the report is deterministic and follows --rank") {
  RunResult a = runIrc({ffn(), "--report", "-", "-q"});
  RunResult b = runIrc({ffn(), "--report", "-", "-q"});
  CHECK(a.out == b.out);
  RunResult r6 = runIrc({ffn(), "--report", "-", "-q", "--rank", "6"});
  json rep = json::parse(r6.out);
  CHECK(rep["global_rank"] == 6);
  CHECK(rep["ops"][3]["forward_ops"][0]["attrs"]["group_ranks"] == json({4, 5, 6, 7}));
  // Rank 6 is coordinate (1, 2) on the (2, 4) mesh: it keeps columns 32:48 of its local block.
  CHECK(rep["redistributions"][0]["ops"][0]["attrs"]["begin"] == json({0, 32}));
  CHECK(rep["redistributions"][0]["ops"][0]["attrs"]["end"] == json({32, 48}));
}

TEST_CASE("the report writes a dim split over several axes as a list in its tensor map") {
  TempDir tmp;
  writeFile(tmp.path() + "/m.yaml",
            "parallel: {device_num: 8, device_matrix: [2, 4], alias_name: [dp, mp]}\n"
            "inputs:\n  - {name: x, shape: [16, 8], dtype: float32}\n"
            "ops:\n  - {name: r, type: ReLU, inputs: [x], in_layout: [[[dp, mp], None]]}\n");
  RunResult r = runIrc({"m.yaml", "--report", "-", "-q"}, tmp.path());
  REQUIRE(r.exitCode == 0);
  json rep = json::parse(r.out);
  CHECK(rep["ops"][0]["inputs"][0]["tensor_map"] == json::parse("[[1, 0], -1]"));
  CHECK(rep["ops"][0]["outputs"][0]["tensor_map"] == json::parse("[[1, 0], -1]"));
  CHECK(rep["ops"][0]["inputs"][0]["placements"] == json({"Shard(0)", "Shard(0)"}));
  // Against mesh order DTensor has no placements for it (its _StridedShard aside): null.
  writeFile(tmp.path() + "/n.yaml",
            "parallel: {device_num: 8, device_matrix: [2, 4], alias_name: [dp, mp]}\n"
            "inputs:\n  - {name: x, shape: [16, 8], dtype: float32}\n"
            "ops:\n  - {name: r, type: ReLU, inputs: [x], in_layout: [[[mp, dp], None]]}\n");
  json nested = json::parse(runIrc({"n.yaml", "--report", "-", "-q"}, tmp.path()).out);
  CHECK(nested["ops"][0]["inputs"][0]["placements"].is_null());
}

}  // namespace irc::test

namespace irc::test {

// The report is streamed member by member (dumps/json_stream.h); its text must be exactly what
// nlohmann::json would print for the same content, compact or indented.
TEST_CASE("the streamed report is laid out exactly as nlohmann::json dumps it, at every indent") {
  for (const char* model : {"/examples/ffn.yaml", "/examples/embedding_layernorm.yaml", "/examples/attention.yaml",
                            "/examples/reshape_transpose.yaml"}) {
    std::string yaml = readFile(sourceDir() + model);
    Compiled c = compileAllRanks(yaml);
    REQUIRE(c.errors.empty());
    for (int indent : {-1, 0, 2, 4}) {
      CAPTURE(model);
      CAPTURE(indent);
      std::ostringstream out;
      writeReport(out, c.global, c.options, 1, indent);
      std::string text = out.str();
      CHECK(text == nlohmann::ordered_json::parse(text).dump(indent) + "\n");
    }
  }
}

}  // namespace irc::test

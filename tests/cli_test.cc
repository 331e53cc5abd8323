// The command line: exit codes, help, listings, "did you mean", dump files and determinism.
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>

#include "tests/test_util.h"

namespace irc::test {
namespace {
std::string ffn() { return sourceDir() + "/examples/ffn.yaml"; }
}  // namespace

TEST_CASE("--help starts with examples; --version prints the version") {
  RunResult help = runIrc({"--help"});
  CHECK(help.exitCode == 0);
  CHECK(help.out.find("Examples:") < help.out.find("Usage:"));
  RunResult v = runIrc({"--version"});
  CHECK(v.exitCode == 0);
  CHECK(v.out.rfind("irc ", 0) == 0);
}

TEST_CASE("usage errors exit 2 with a did-you-mean") {
  RunResult r = runIrc({ffn(), "--dump-al"});
  CHECK(r.exitCode == 2);
  CHECK(r.err == "irc: error: unknown option '--dump-al'; did you mean '--dump-all'?\n");
  RunResult p = runIrc({ffn(), "--dump-after", "prase"});
  CHECK(p.exitCode == 2);
  CHECK(p.err == "irc: error: --dump-after: unknown pass 'prase'; did you mean 'parse'?\n");
  CHECK(runIrc({}).exitCode == 2);
  CHECK(runIrc({ffn(), "--rank", "8"}).exitCode == 2);
}

TEST_CASE("--alpha, --beta and --gamma hold the bounds their cost_model keys do") {
  // inf aborted CBC's simplex under the search; 1e300 printed a step of 6e300 s.
  for (const char* value : {"inf", "1e300", "5"}) {
    RunResult r = runIrc({ffn(), "--alpha", value, "--search-mode", "auto", "-q"});
    CHECK(r.exitCode == 2);
    CHECK(r.err == fmt::format("irc: error: --alpha {} is outside what a machine does; valid: 1e-09 .. 1 (as "
                               "parallel.cost_model.alpha)\n",
                               value));
  }
  CHECK(runIrc({ffn(), "--beta", "inf", "--search-mode", "auto", "-q"}).err.find("--beta inf is outside") != std::string::npos);
  CHECK(runIrc({ffn(), "--gamma", "nan", "-q"}).exitCode == 2);
  CHECK(runIrc({ffn(), "--alpha", "2e-5", "--beta", "1e-10", "--gamma", "1e-11", "-q"}).exitCode == 0);
}

TEST_CASE("no output is written over the model or over another output") {
  TempDir dir;
  const std::string model = readFile(ffn());
  writeFile(dir.path() + "/m.yaml", model);
  RunResult over = runIrc({"m.yaml", "--report", "./m.yaml", "-q"}, dir.path());
  CHECK(over.exitCode == 2);
  CHECK(over.err ==
        "irc: error: --report './m.yaml' is the model 'm.yaml': irc does not write over its input; name another file\n");
  CHECK(readFile(dir.path() + "/m.yaml") == model);
  CHECK(runIrc({"m.yaml", "--plan-out", "m.yaml", "-q"}, dir.path()).exitCode == 2);
  CHECK(readFile(dir.path() + "/m.yaml") == model);
  RunResult both = runIrc({"m.yaml", "--report", "out.py", "--torch-out", "out.py", "-q"}, dir.path());
  CHECK(both.exitCode == 2);
  CHECK(both.err == "irc: error: --report and --torch-out both name 'out.py': each output needs a file of its own\n");
  // --mindspore-out's checkpoint, written beside it, counts as an output too.
  CHECK(runIrc({"m.yaml", "--mindspore-out", "s.py", "--plan-out", "s_strategy.json", "-q"}, dir.path())
            .err.find("--mindspore-out's strategy checkpoint and --plan-out both name 's_strategy.json'") != std::string::npos);
  CHECK(listFiles(dir.path()) == std::vector<std::string>{"m.yaml"});
}

TEST_CASE("a missing model file is rejected with status 1") {
  RunResult r = runIrc({"no-such-model.yaml"});
  CHECK(r.exitCode == 1);
  CHECK(r.err == "irc: error: cannot read 'no-such-model.yaml': No such file or directory\n");
}

TEST_CASE("--list-passes and --list-ops") {
  RunResult passes = runIrc({"--list-passes"});
  CHECK(passes.exitCode == 0);
  CHECK(passes.out.rfind("00 parse", 0) == 0);
  RunResult ops = runIrc({"--list-ops"});
  CHECK(ops.exitCode == 0);
  CHECK(ops.out.find(
            "MatMul ([i, k], [k, j])->([i, j]) reduction={k}\n    MatMul(x, w) attrs: transpose_a=false, transpose_b=false\n") !=
        std::string::npos);
  CHECK(ops.out.find("Reshape ([i, j, k])->([(ij), k])   [(2, 4, 8) -> (8, 8)]") != std::string::npos);
  CHECK(ops.out.find("AllReduce") == std::string::npos);
}

TEST_CASE("dumps go to DIR/rank_<r>/NN_<pass>_XXXX.ir; two runs give the same bytes") {
  TempDir tmp;
  RunResult a = runIrc({ffn(), "--dump-all", "--dump-dir", tmp.path() + "/a", "-q"});
  RunResult b = runIrc({ffn(), "--dump-all", "--dump-dir", tmp.path() + "/b", "-q"});
  REQUIRE(a.exitCode == 0);
  REQUIRE(b.exitCode == 0);
  CHECK(a.err.empty());
  std::vector<std::string> files = listFiles(tmp.path() + "/a");
  CHECK(files == listFiles(tmp.path() + "/b"));
  REQUIRE(!files.empty());
  CHECK(files[0] == "rank_0/parse_0000.ir");
  for (const auto& f : files) CHECK(readFile(tmp.path() + "/a/" + f) == readFile(tmp.path() + "/b/" + f));
}

TEST_CASE("--all-ranks writes one complete folder per rank with its global_rank") {
  TempDir tmp;
  RunResult r = runIrc({ffn(), "--all-ranks", "--dump-after", "parse", "--dump-dir", tmp.path(), "-q"});
  REQUIRE(r.exitCode == 0);
  std::vector<std::string> files = listFiles(tmp.path());
  CHECK(files.size() == 8);
  CHECK(readFile(tmp.path() + "/rank_5/parse_0000.ir").find("global_rank: 5\n") != std::string::npos);
}

TEST_CASE("the default dump dir is <stem>_ir in the current directory; stdin works as '-'") {
  TempDir tmp;
  RunResult r = runIrc({ffn(), "--dump-all", "-q"}, tmp.path());
  REQUIRE(r.exitCode == 0);
  // MindSpore's names: `<pass>_XXXX.ir`, XXXX the pass's position in the pipeline (ir-dump.md).
  CHECK(listFiles(tmp.path() + "/ffn_ir") ==
        std::vector<std::string>{"rank_0/parse_0000.ir", "rank_0/step_parallel_begin_0001.ir", "rank_0/step_parallel_end_0003.ir",
                                 "rank_0/tensor_layout_0002.ir", "rank_0/validate_0004.ir"});
  RunResult piped = runIrc({"-", "--dump-after", "parse", "-q"}, tmp.path());  // stdin is /dev/null: no model
  CHECK(piped.exitCode == 1);
  CHECK(piped.err.find("<stdin>:1:1: error: the file holds no model") == 0);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc verify prints agreement and exits 0; --dump-locations and --time-passes") {
  RunResult v = runIrc({"verify", sourceDir() + "/examples/ffn.yaml", "--seed", "3", "--redistribution", "optimal"});
  CHECK(v.exitCode == 0);
  CHECK(v.out.rfind("irc verify: ffn: all 8 ranks agree with the single-device program on 5 values", 0) == 0);
  CHECK(runIrc({"verify", sourceDir() + "/examples/ffn.yaml", "--rtol", "x"}).exitCode == 2);
  TempDir tmp;
  RunResult d = runIrc({sourceDir() + "/examples/ffn.yaml", "--dump-after", "parse", "--dump-locations", "--dump-dir", tmp.path(),
                        "--time-passes", "-q"});
  REQUIRE(d.exitCode == 0);
  std::string dump = readFile(tmp.path() + "/rank_0/parse_0000.ir");
  CHECK(dump.find("      # In file ffn.yaml:15:5\n") != std::string::npos);  // the model is given by an absolute path
  CHECK(dump.find(sourceDir()) == std::string::npos);
  CHECK(d.err.find("stage ") == 0);
  CHECK(d.err.find("\nsharding_propagation ") != std::string::npos);
  CHECK(d.err.find("\ntotal ") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("writing the report to a device or a symlink writes through it (no rename over it)") {
  REQUIRE(std::filesystem::is_character_file("/dev/null"));
  REQUIRE(std::filesystem::is_symlink("/dev/stdout"));
  RunResult r = runIrc({sourceDir() + "/examples/ffn.yaml", "--report", "/dev/null", "-q"});
  CHECK(r.exitCode == 0);
  CHECK(std::filesystem::is_character_file("/dev/null"));
  RunResult out = runIrc({sourceDir() + "/examples/ffn.yaml", "--report", "/dev/stdout", "-q"});
  CHECK(out.exitCode == 0);
  CHECK(out.out.rfind("{\"schema_version\":1,", 0) == 0);
  CHECK(std::filesystem::is_symlink("/dev/stdout"));
  TempDir tmp;  // a symlink to a regular file is written through, not replaced
  writeFile(tmp.path() + "/real.json", "old");
  std::filesystem::create_symlink(tmp.path() + "/real.json", tmp.path() + "/link.json");
  CHECK(runIrc({sourceDir() + "/examples/ffn.yaml", "--report", tmp.path() + "/link.json", "-q"}).exitCode == 0);
  CHECK(std::filesystem::is_symlink(tmp.path() + "/link.json"));
  CHECK(readFile(tmp.path() + "/real.json").rfind("{\"schema_version\":1,", 0) == 0);
}

}  // namespace irc::test

namespace irc::test {

// The report is written as soon as the global passes are done, staged under a temporary name
// beside its file, and put in place only when the whole compile succeeded.
TEST_CASE("the report is staged and put in place at the end: the same bytes as on stdout, no temporary left") {
  TempDir tmp;
  std::string ffn = sourceDir() + "/examples/ffn.yaml";
  RunResult toFile = runIrc({ffn, "--report", tmp.path() + "/out/r.json", "--dump-all", "--dump-dir", tmp.path() + "/d", "-q"});
  REQUIRE(toFile.exitCode == 0);
  RunResult toStdout = runIrc({ffn, "--report", "-", "-q"});
  REQUIRE(toStdout.exitCode == 0);
  CHECK(readFile(tmp.path() + "/out/r.json") == toStdout.out);
  CHECK(listFiles(tmp.path() + "/out") == std::vector<std::string>{"r.json"});
  // A rejected model: no report, no temporary.
  writeFile(tmp.path() + "/bad.yaml",
            "parallel: {device_num: 4}\ninputs:\n  - {name: x, shape: [8, 8], dtype: float32}\n"
            "ops:\n  - {name: r, type: ReLU, inputs: [x], in_strategy: [[3, 1]]}\n");
  RunResult bad = runIrc({tmp.path() + "/bad.yaml", "--report", tmp.path() + "/rejected/r.json", "-q"});
  CHECK(bad.exitCode == 1);
  CHECK(!std::filesystem::exists(tmp.path() + "/rejected/r.json"));
}

TEST_CASE("a compile rejected in a pass keeps the dumps written so far and dumps the failing pass's input") {
  TempDir tmp;
  std::string model = sourceDir() + "/tests/failing_pass/softmax_axis_split.yaml";
  RunResult r = runIrc({model, "--dump-all", "--dump-dir", tmp.path()});
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("error: Softmax 'sm' cannot split dim 1 of 'relu'") != std::string::npos);
  // Strategy propagation (position 1) rejected the model: parse's dump stays, and the graph it
  // was given is dumped as step_parallel_begin_0001.failed.ir and named in the error output.
  CHECK(listFiles(tmp.path()) == std::vector<std::string>{"rank_0/parse_0000.ir", "rank_0/step_parallel_begin_0001.failed.ir"});
  CHECK(r.err.find("the failing pass's input is dumped to " + tmp.path() + "/rank_0/step_parallel_begin_0001.failed.ir") !=
        std::string::npos);
  std::string failed = readFile(tmp.path() + "/rank_0/step_parallel_begin_0001.failed.ir");
  CHECK(failed.find("Softmax(") != std::string::npos);
  // Without a dump option nothing is written.
  TempDir quiet;
  CHECK(runIrc({model, "--dump-dir", quiet.path()}).exitCode == 1);
  CHECK(listFiles(quiet.path()).empty());
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc verify: random integers that index a table through a CumSum fall back to constant inputs, and say so") {
  // ids in [0, 4) summed along the sequence pass the table's 4 rows (before: "the reference run
  // failed", exit 1); with ids 0 everywhere the program runs, and the note says which input.
  TempDir tmp;
  writeFile(tmp.path() + "/idx.yaml",
            "parallel: {device_num: 2}\n"
            "inputs:\n  - {name: ids, shape: [2, 8], dtype: int32}\n"
            "parameters:\n  - {name: table, shape: [4, 4], dtype: float32}\n"
            "ops:\n  - {name: pos, type: CumSum, inputs: [ids, 1]}\n  - {name: emb, type: Gather, inputs: [table, pos, 0]}\n");
  RunResult r = runIrc({"verify", tmp.path() + "/idx.yaml"});
  CHECK(r.exitCode == 0);
  CHECK(r.err.find("every integer input (ids) is 0 instead: give other values with --inputs") != std::string::npos);
  CHECK(r.out.find("all 2 ranks agree with the single-device program on 2 values (max abs error 0, max rel error 0; seed 0, "
                   "integer inputs 0)") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("--mindspore-out and the dumps say the compile's device count, not the file's (an ONNX graph on --device-num 8)") {
  // The shard file's header read the graph's own parallel block, which an ONNX graph does not
  // have (1 device), while the compile ran on --device-num's 8.
  TempDir dir;
  std::string model = std::string(IRC_SOURCE_DIR) + "/examples/gpt2.onnx";
  RunResult r = runIrc({model, "--device-num", "8", "--dim", "batch=8", "--dim", "sequence=8", "--mindspore-out",
                        dir.path() + "/shard.py", "--dump-after", "validate", "--dump-dir", dir.path() + "/ir", "-q"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(readFile(dir.path() + "/shard.py").rfind("# irc's plan for gpt2 on 8 devices as MindSpore shard() calls", 0) == 0);
  CHECK(readFile(dir.path() + "/ir/rank_0/validate_0004.ir").find("device_num: 8\n") != std::string::npos);
  // The graph is named after its file (the exporter named it torch_jit, as it names every graph).
  CHECK(readFile(dir.path() + "/ir/rank_0/validate_0004.ir").rfind("# IR entry: @gpt2\n", 0) == 0);
  // Dumping one rank after all of them leaves the folder with that rank's dumps alone.
  REQUIRE(runIrc({model, "--device-num", "8", "--dim", "batch=8", "--dim", "sequence=8", "--all-ranks", "--dump-after",
                  "validate", "--dump-dir", dir.path() + "/ir", "-q"})
              .exitCode == 0);
  CHECK(std::filesystem::exists(dir.path() + "/ir/rank_7"));
  REQUIRE(runIrc({model, "--device-num", "8", "--dim", "batch=8", "--dim", "sequence=8", "--dump-after", "validate", "--dump-dir",
                  dir.path() + "/ir", "-q"})
              .exitCode == 0);
  CHECK(std::filesystem::exists(dir.path() + "/ir/rank_0/validate_0004.ir"));
  CHECK(!std::filesystem::exists(dir.path() + "/ir/rank_7"));
  // On a cluster, a small model's TFLOP/s and MFU keep their figures (they printed 0.0): the
  // FFN's two 64x64x64 products and three [64, 64] elementwise ops, 2 x 2 x 64^3 + 3 x 64^2 =
  // 1,060,864 FLOPs over 8 devices in the estimated 4.66e-05 s: 2.846e9 FLOP/s a device, 0.0146 %
  // of the A100's 19.5 TFLOP/s fp32 peak.
  RunResult cluster =
      runIrc({std::string(IRC_SOURCE_DIR) + "/examples/ffn.yaml", "--cluster", "dgx-a100-80gb", "--dump-dir", dir.path() + "/c"});
  REQUIRE(cluster.exitCode == 0);
  CHECK(cluster.err.find("0.002846 TFLOP/s per device, MFU 0.0146%") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

// --mindspore-out wrote the shards alone: nothing of the pipeline, micro-batches, recompute or
// optimizer parallel the figures assume. Now each, or a `# not expressible:` line and a warning.
TEST_CASE("--mindspore-out: the plan's pipeline, micro-batches, recompute and optimizer parallel, or what it cannot say") {
  TempDir dir;
  const std::string model = readFile(sourceDir() + "/examples/gpt_pipeline.yaml");
  auto write = [&](const std::string& from, const std::string& to) {
    std::string text = model;
    text.replace(text.find(from), from.size(), to);
    writeFile(dir.path() + "/m.yaml", text);
    RunResult r = runIrc({"m.yaml", "--mindspore-out", "ms.py", "-q"}, dir.path());
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    return std::make_pair(readFile(dir.path() + "/ms.py"), r.err);
  };
  const std::string parallel = "micro_batches: 4, training: true}";
  auto [plain, plainErr] =
      write(parallel, "micro_batches: 4, training: true, enable_parallel_optimizer: true}\nrecompute: [\"l0.*\"]");
  CHECK(plain.find("PIPELINE_STAGES = 2\nMICRO_BATCHES = 4\nINTERLEAVE = False\nSCHEDULER = \"1f1b\"\n") != std::string::npos);
  CHECK(plain.find("OPTIMIZER_LEVEL = \"level1\"") != std::string::npos);
  CHECK(plain.find("net = Pipeline(net, micro_size=MICRO_BATCHES, stage_config=STAGE_CONFIG)") != std::string::npos);
  CHECK(plain.find("parallel.pipeline(stages=PIPELINE_STAGES, interleave=INTERLEAVE, scheduler=SCHEDULER)") != std::string::npos);
  CHECK(plain.find("RECOMPUTE = [\n") != std::string::npos);
  CHECK(plain.find("# not expressible") == std::string::npos);
  CHECK(plainErr.empty());
  // GPipe has MindSpore's name; zero-bubble ZB-H1 and ZeRO have none: said in the file and on stderr.
  CHECK(write(parallel, "micro_batches: 4, training: true, pipeline_schedule: gpipe}").first.find("SCHEDULER = \"gpipe\"") !=
        std::string::npos);
  auto [zb, zbErr] = write(parallel, "micro_batches: 4, training: true, pipeline_schedule: zero_bubble, zero_stage: 1}");
  CHECK(zb.find("# not expressible: pipeline_schedule zero_bubble: MindSpore's schedulers are gpipe, 1f1b") != std::string::npos);
  CHECK(zb.find("# not expressible: zero_stage 1 (Megatron's distributed optimizer") != std::string::npos);
  CHECK(zbErr.find("irc: warning: --mindspore-out: pipeline_schedule zero_bubble") != std::string::npos);
}

TEST_CASE("--trace and --schedule-plot: written only when the step can be timed, put in place at the end") {
  TempDir dir;
  const std::string model = sourceDir() + "/examples/gpt_pipeline.yaml";
  // No cluster, no timeline: said, exit 1, nothing written.
  RunResult none = runIrc({model, "--trace", "t.json", "-q"}, dir.path());
  CHECK(none.exitCode == 1);
  CHECK(none.err.find("irc: error: --trace lays out the step the cluster model estimates: the model has no cluster") == 0);
  RunResult plotOnly = runIrc({"memory", model, "--schedule-plot", "s.svg"}, dir.path());
  CHECK(plotOnly.exitCode == 1);
  CHECK(plotOnly.err.find("--schedule-plot lays out the step") != std::string::npos);
  CHECK(listFiles(dir.path()).empty());
  // With one: a Chrome trace (two stages, 4 micro-batches, each pass forward and backward) and
  // the picture.
  writeFile(dir.path() + "/gpt.yaml", readFile(model) + "cluster: {preset: dgx-h100}\n");
  RunResult r = runIrc({"gpt.yaml", "--trace", "t.json", "--schedule-plot", "s.svg", "-q"}, dir.path());
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  const std::string trace = readFile(dir.path() + "/t.json");
  CHECK(trace.rfind("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"model\":\"gpt_pipeline\"", 0) == 0);
  CHECK(trace.find("\"name\":\"backward 3\"") != std::string::npos);
  CHECK(trace.find("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"stage 1 (rank 4 of ranks 4-7)\"}") !=
        std::string::npos);
  const std::string svg = readFile(dir.path() + "/s.svg");
  size_t blocks = 0;
  for (size_t at = svg.find("<rect class=\"backward\""); at != std::string::npos;
       at = svg.find("<rect class=\"backward\"", at + 1))
    ++blocks;
  CHECK(blocks == 8);  // 2 stages x 4 micro-batches
  // irc memory writes the same trace.
  CHECK(runIrc({"memory", "gpt.yaml", "--trace", "m.json"}, dir.path()).exitCode == 0);
  CHECK(readFile(dir.path() + "/m.json") == trace);
  // The trace is an output like the others: not written over the model.
  CHECK(runIrc({"gpt.yaml", "--trace", "gpt.yaml", "-q"}, dir.path()).exitCode == 2);
}

}  // namespace irc::test

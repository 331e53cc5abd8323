// Help and names on the command line (issue 19): every subcommand has --help with examples
// first, `irc help SUBCOMMAND`, a short usage for `irc` alone; every option a parser accepts is
// in its help, and so is every option cli.md names; `%N` names in explain; "did you mean" for a
// type in the wrong case; `-` takes its dump folder from the model's name.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "tests/test_util.h"
#include "cli/command_specs.h"

namespace irc::test {

TEST_CASE("every subcommand has --help, examples first; irc help SUBCOMMAND; irc alone is a short usage") {
  for (const char* sub : {"layout", "explain", "verify", "diff"}) {
    CAPTURE(sub);
    RunResult h = runIrc({sub, "--help"});
    CHECK(h.exitCode == 0);
    CHECK(h.out.find("Examples:") < h.out.find("Usage:"));
    CHECK(h.out.find(std::string("irc ") + sub) == 0);
    CHECK(runIrc({"help", sub}).out == h.out);
    CHECK(runIrc({sub, "-h"}).out == h.out);
  }
  RunResult bare = runIrc({});
  CHECK(bare.exitCode == 2);
  CHECK(bare.err.find("'irc --help'") != std::string::npos);
  CHECK(bare.err.size() < 300);  // short, not the whole help
  CHECK(runIrc({"help"}).out == runIrc({"--help"}).out);
  CHECK(runIrc({"help", "verfy"}).err.find("did you mean 'verify'?") != std::string::npos);
}

TEST_CASE("each option a parser accepts appears in its command's help, and cli.md's options in irc --help") {
  for (const auto& spec : cli::commandSpecs()) {
    std::string help = cli::commandHelp(spec);
    for (const auto& flags : {cli::flagsWithValue(spec), cli::switchFlags(spec)})
      for (const std::string& flag : flags) {
        CAPTURE(spec.name);
        CAPTURE(flag);
        CHECK(help.find(flag) != std::string::npos);
      }
  }
  std::string help = runIrc({"--help"}).out;
  for (const char* flag : {"--dump-all", "--dump-after", "--dump-dir", "--rank", "--all-ranks", "--search-mode",
                           "--redistribution", "--report", "--passes", "--stop-after", "--time-passes", "--list-passes",
                           "--list-ops", "--help", "--version", "--alpha", "--beta", "--gamma", "--color"}) {
    CAPTURE(flag);
    CHECK(help.find(flag) != std::string::npos);
  }
  // An option the parser does not know is a usage error in every subcommand.
  for (const char* sub : {"layout", "explain", "verify", "diff"}) CHECK(runIrc({sub, "--bogus"}).exitCode == 2);
}

TEST_CASE("explain takes %N as a dump prints it (--pass, default step_parallel_end)") {
  std::string ffn = sourceDir() + "/examples/ffn.yaml";
  // step_parallel_end prints matmul2's AllReduce as %4; validate prints matmul as %0.
  RunResult r = runIrc({"explain", ffn, "%4"});
  CHECK(r.exitCode == 0);
  CHECK(r.out.rfind("matmul2.forward_op.0 = AllReduce (inserted)", 0) == 0);
  CHECK(runIrc({"explain", ffn, "%0", "--pass", "validate"}).out.rfind("matmul (MatMul)", 0) == 0);
  RunResult missing = runIrc({"explain", ffn, "%99"});
  CHECK(missing.exitCode == 2);
  CHECK(missing.err.find("has no node %99") != std::string::npos);
  CHECK(runIrc({"explain", ffn, "%1", "--pass", "nope"}).exitCode == 2);
}

TEST_CASE("did you mean: an op type in the wrong case; '-' names its dump folder after the model") {
  TempDir tmp;
  writeFile(tmp.path() + "/m.yaml",
            "name: mine\nparallel: {device_num: 1}\ninputs:\n  - {name: x, shape: [4], dtype: float32}\n"
            "ops:\n  - {name: r, type: Relu, inputs: [x]}\n");
  RunResult r = runIrc({"m.yaml"}, tmp.path());
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("unknown op type 'Relu'; did you mean 'ReLU'?") != std::string::npos);
  writeFile(tmp.path() + "/ok.yaml",
            "name: mine\nparallel: {device_num: 1}\ninputs:\n  - {name: x, shape: [4], dtype: float32}\n"
            "ops:\n  - {name: r, type: ReLU, inputs: [x]}\n");
  RunResult piped = runShell("\"$IRC\" - --dump-after parse -q < ok.yaml", tmp.path());
  CHECK(piped.exitCode == 0);
  CHECK(listFiles(tmp.path() + "/mine_ir") == std::vector<std::string>{"rank_0/parse_0000.ir"});
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("--dump-dot writes <pass>_XXXX.dot beside each dump, which Graphviz renders") {
  TempDir tmp;
  std::string out = tmp.path() + "/d";
  REQUIRE(runIrc({sourceDir() + "/examples/ffn.yaml", "--dump-all", "--dump-dot", "--dump-dir", out, "-q"}).exitCode == 0);
  std::vector<std::string> files = listFiles(out);
  CHECK(std::count(files.begin(), files.end(), "rank_0/validate_0004.dot") == 1);
  CHECK(std::count(files.begin(), files.end(), "rank_0/parse_0000.dot") == 1);
  std::string dot = readFile(out + "/rank_0/validate_0004.dot");
  // matmul2's AllReduce: filled as a collective, with rank 0's group; its input edge carries the
  // bytes each rank sends, 2 (n - 1) / n of the 32 x 64 float32 slice = 12288.
  CHECK(dot.find("[label=\"matmul2.forward_op.0\\nAllReduce\\ngroup 0-1-2-3\\n(32, 64)\", shape=box, style=filled, "
                 "fillcolor=\"#f4a6a6\"]") != std::string::npos);
  CHECK(dot.find("[label=\"12288 B/rank\"]") != std::string::npos);
  CHECK(dot.find("[label=\"matmul\\nMatMul\\n((2, 1), (1, 4))\\n(32, 16)\", shape=box]") != std::string::npos);
  RunResult render = runShell("command -v dot >/dev/null || { echo no-graphviz; exit 0; }; dot -Tsvg " + out +
                              "/rank_0/step_parallel_end_0003.dot -o " + tmp.path() + "/g.svg");
  REQUIRE(render.exitCode == 0);
  if (render.out.find("no-graphviz") != std::string::npos) {
    MESSAGE("graphviz is not installed: the DOT file was not rendered (tools/setup installs it)");
    return;
  }
  std::string svg = readFile(tmp.path() + "/g.svg");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("matmul2.forward_op.0") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("no progress line when stderr is not a terminal") {
  RunResult r = runIrc({sourceDir() + "/examples/ffn.yaml"});
  CHECK(r.exitCode == 0);
  CHECK(r.err.find('\r') == std::string::npos);
  CHECK(r.err.find('\033') == std::string::npos);
  CHECK(runIrc({sourceDir() + "/examples/ffn.yaml", "-q"}).err.empty());
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("--time-passes covers every stage and the wall time; --stop-after parse stops; the report is compact by default") {
  TempDir tmp;
  std::string ffn = sourceDir() + "/examples/ffn.yaml";
  RunResult t =
      runIrc({ffn, "--time-passes", "--dump-all", "--dump-dir", tmp.path() + "/d", "--report", tmp.path() + "/r.json", "-q"});
  REQUIRE(t.exitCode == 0);
  for (const char* stage : {"\nload ", "\nsharding_propagation ", "\nlayout_inference ", "\nredistribution ", "\nshape_slicing ",
                            "\nwrite dumps ", "\nreport ", "\nteardown ", "\nother ", "\ntotal (wall) "}) {
    CAPTURE(stage);
    CHECK(t.err.find(stage) != std::string::npos);
  }
  // Each row: the stage, its milliseconds and the process's peak MiB when it ended; no stage's
  // peak is above the run's (the total row's), and the run's is a plausible RSS.
  REQUIRE(t.err.rfind("stage ", 0) == 0);
  CHECK(t.err.substr(0, t.err.find('\n')).find("peak MiB") != std::string::npos);
  std::istringstream rows(t.err.substr(t.err.find('\n') + 1));
  std::vector<double> peaks;
  for (std::string line; std::getline(rows, line);) {
    CAPTURE(line);
    std::istringstream fields(line.substr(24));
    double ms = -1, peak = -1;
    fields >> ms >> peak;
    CHECK(ms >= 0);
    CHECK(peak > 1);
    peaks.push_back(peak);
  }
  REQUIRE(peaks.size() >= 10);
  CHECK(*std::max_element(peaks.begin(), peaks.end()) == peaks.back());
  CHECK(peaks.back() < 4096);
  // --stop-after parse runs no pass: only the parsed model is dumped.
  RunResult p = runIrc({ffn, "--stop-after", "parse", "--dump-all", "--dump-dir", tmp.path() + "/p", "--time-passes", "-q"});
  REQUIRE(p.exitCode == 0);
  CHECK(listFiles(tmp.path() + "/p") == std::vector<std::string>{"rank_0/parse_0000.ir"});
  CHECK(p.err.find("sharding_propagation") == std::string::npos);
  // Compact by default (one line), indented on request; the same JSON either way.
  std::string compact = runIrc({ffn, "--report", "-", "-q"}).out;
  std::string indented = runIrc({ffn, "--report", "-", "-q", "--report-indent", "2"}).out;
  CHECK(std::count(compact.begin(), compact.end(), '\n') == 1);
  CHECK(indented.find("{\n  \"schema_version\": 1,\n  \"model\": \"ffn\",") == 0);
  std::string squeezed;
  bool inString = false;
  for (size_t i = 0; i < indented.size(); ++i) {
    char c = indented[i];
    if (c == '"' && (i == 0 || indented[i - 1] != '\\')) inString = !inString;
    if (!inString && (c == ' ' || c == '\n')) continue;
    squeezed += c;
  }
  CHECK(squeezed + "\n" == compact);
  CHECK(runIrc({ffn, "--report", "-", "--report-indent", "99"}).exitCode == 2);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("did you mean: of equally close value names the first in name order is suggested") {
  // The loader hashes names; the suggestion must not depend on the hash table's order.
  TempDir tmp;
  std::string inputs;
  for (std::string n : {"xq", "xa", "xz", "xm", "xb"}) inputs += "  - {name: " + n + ", shape: [4], dtype: float32}\n";
  writeFile(tmp.path() + "/m.yaml",
            "parallel: {device_num: 1}\ninputs:\n" + inputs + "ops:\n  - {name: r, type: ReLU, inputs: [xx]}\noutputs: [xy]\n");
  RunResult r = runIrc({"m.yaml"}, tmp.path());
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("unknown value 'xx' in the inputs of op 'r'; did you mean 'xa'?") != std::string::npos);
  CHECK(r.err.find("unknown value 'xy' in outputs; did you mean 'xa'?") != std::string::npos);
}

}  // namespace irc::test

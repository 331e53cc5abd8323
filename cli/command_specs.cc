#include "cli/command_specs.h"

#include "cli/commands.h"

#include <stdexcept>

#include <fmt/format.h>

#include "ir/suggest.h"

namespace irc::cli {
namespace {

// The option and command tables, one entry a line as --help prints them.
// clang-format off
const std::vector<OptionSpec> kModeOptions = {
    {"--search-mode", "MODE", "override parallel.search_mode: sharding_propagation, factor_propagation, data_parallel, semi_auto, auto"},
    {"--redistribution", "PLANNER", "mindspore (MindSpore's operator sequences, the default) or optimal (the cost-optimal planner)"},
    {"--dim", "NAME=VALUE", "an ONNX graph's symbolic input dim (repeatable; wins over a plan's dims)"},
    {"--device-num", "N", "an ONNX graph compiled without a plan: its device count (default 1)"},
    {"--onnx-shape-check", "", "an ONNX graph: also run ONNX's shape inference and report every shape irc computes differently"},
    {"--opaque-unsupported", "", "an ONNX graph: keep a node irc does not map as an opaque op (operands whole, verify: not checked)"},
};
const OptionSpec kColor = {"--color", "WHEN", "auto, always or never: colour on stderr (auto: only on a terminal; NO_COLOR is honoured)"};
const OptionSpec kQuiet = {"-q|--quiet", "", "no summary or progress on stderr"};
const OptionSpec kHelp = {"-h|--help", "", "this help"};

std::vector<OptionSpec> join(std::vector<std::vector<OptionSpec>> parts) {
  std::vector<OptionSpec> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<CommandSpec> build() {
  std::vector<CommandSpec> specs;
  specs.push_back({"", "compile: run the pipeline, write dumps and a report", "irc MODEL.yaml [options]   (MODEL '-' reads stdin)",
                   {"irc examples/ffn.yaml --dump-all               every pass's dump in ffn_ir/rank_0/",
                    "irc model.onnx --device-num 8 --dim batch=4     an ONNX graph, data parallel (docs/onnx.md)",
                    "irc examples/gpt2_plan.yaml --dump-all          a plan: an ONNX graph with strategies by node-name glob",
                    "irc examples/ffn.yaml --dump-after validate --rank 5",
                    "irc examples/ffn.yaml --all-ranks --dump-all   one rank_<r>/ folder per rank",
                    "irc examples/ffn.yaml --report -               the JSON report on stdout",
                    "irc examples/ffn.yaml --redistribution optimal --time-passes",
                    "cat model.yaml | irc - --dump-all              the folder is named after the model's name"},
                   join({{{"--dump-all", "", "write a dump after every pass"},
                          {"--dump-after", "PASS[,PASS]", "write dumps after these passes only (pass or dump names)"},
                          {"--dump-dir", "DIR", "where dumps go (default <model stem>_ir/); one rank_<r>/ folder per rank, replaced whole, and an earlier run's other rank folders removed"},
                          {"--dump-locations", "", "add '# In file MODEL:LINE:COL' lines under model ops"},
                          {"--dump-scopes", "", "add '# scope: MODULE' lines: the torch module path of an ONNX export's ops"},
                          {"--dump-dot", "", "also write <pass>_XXXX.dot (Graphviz) beside each dump: ops, strategies, shapes, bytes"},
                          {"--rank", "R", "the rank whose dumps and report are written (default parallel.global_rank)"},
                          {"--all-ranks", "", "write one folder per rank"},
                          {"--max-ranks", "N", "the most rank folders --all-ranks may write (default 4096)"}},
                         kModeOptions,
                         {{"--report", "FILE", "write the JSON report (report.md) to FILE, '-' for stdout"},
                          {"--report-indent", "N", "indent the report N spaces a level for reading (default: compact, one line)"},
                          {"--strategy-ckpt-out", "FILE", "write MindSpore's strategy checkpoint JSON: every op's strategy, every parameter's layout"},
                          {"--strategy-ckpt-in", "FILE", "configure ops from a MindSpore strategy checkpoint (as parallel.strategy_ckpt_load)"},
                          {"--plan-out", "FILE", "write the compiled plan as a model to edit and compile again: strategies, stages, micro-batches, recompute, optimizer sharding and the cluster (docs/search.md)"},
                          {"--trace", "FILE", "write the estimated step as a Chrome trace for Perfetto or chrome://tracing: a process per pipeline stage (per rank with --all-ranks), its compute and communication streams, every pass, op and collective, the allocated bytes (needs a cluster; docs/cluster.md)"},
                          {"--schedule-plot", "FILE.svg", "draw the estimated step's pipeline schedule: stages over time, each micro-batch's forward and backward, the bubble blank (needs a cluster)"},
                          {"--torch-out", "FILE", "write the plan as PyTorch code: parallelize(model, mesh) with DTensor's parallel styles and irc's prediction (docs/plan-code.md)"},
                          {"--mindspore-out", "FILE", "write the plan as MindSpore shard() calls, with the strategy checkpoint beside it (docs/plan-code.md)"},
                          {"--passes", "A,B", "run only these passes of the pipeline"},
                          {"--stop-after", "PASS", "run the pipeline up to PASS"},
                          {"--time-passes", "", "a table of every stage's time and the peak memory when it ended, on stderr"},
                          {"--alpha", "SECONDS", "cost per message of a collective (default 1e-05; as parallel.cost_model.alpha)"},
                          {"--beta", "SECONDS", "cost per byte sent (default 1e-10; as parallel.cost_model.beta)"},
                          {"--gamma", "SECONDS", "cost per byte copied (default 1e-11; as parallel.cost_model.gamma)"},
                          {"--memory-budget", "SIZE", "warn when a rank's peak memory is over SIZE (16GiB, 80GB; as parallel.memory_budget); search_mode auto keeps every rank within it"},
                          {"--search-time-limit", "SECONDS", "search_mode auto: return the best plan found after SECONDS, with its gap (default 60)"},
                          {"--cluster", "PRESET", "time the step on a cluster: dgx-a100-80gb, dgx-h100, h200-sxm, ascend-910b (as cluster.preset; docs/cluster.md)"},
                          {"--precision", "P", "fp32, bf16_mixed, fp16_mixed, fp8_delayed, fp8_tensorwise, fp8_blockwise, mxfp8, nvfp4, or auto: the structural search chooses (as parallel.precision)"},
                          kQuiet, kColor, kHelp,
                          {"--list-passes", "", "the pipeline, one line per pass"},
                          {"--list-ops", "", "every op with its sharding rule"},
                          {"--version", "", "irc's version"}}}),
                   "Subcommands: SUBCOMMANDS (irc help SUBCOMMAND).\n"
                   "Exit status: 0 ok, 1 model rejected or output not written, 2 usage error, 3 verify mismatch,\n"
                   "4 internal error (a bug in irc)."});
  specs.back().handler = runCompile;
  specs.push_back({"layout", "one tensor layout: every notation, every rank's slice, a picture of the mesh",
                   "irc layout --device-matrix D0,D1 [--alias A,B] NOTATION [--shape S0,S1] [--json]",
                   {"irc layout --device-matrix 2,4 --alias dp,mp --tensor-map dp,None --shape 8,8",
                    "irc layout --device-matrix 4,3 --alias a,b --tensor-map '(b,a)' --shape 24   one dim on two axes",
                    "irc layout --strategy 2,1 --device-num 8      MindSpore's shard() derivation, repeats included",
                    "irc layout --device-matrix 2,2 --sbp 'S(0),B' --json"},
                   {{"--device-matrix", "D0,D1,...", "the mesh (rank-major, last axis fastest)"},
                    {"--alias", "A,B,...", "names of the mesh axes (default axis_0, axis_1, ...)"},
                    {"--tensor-map", "MAP", "Layout form: an alias or None per dim; '(a,b)' is one dim on several axes"},
                    {"--tensor-map-index", "MAP", "MindSpore's integer form, axes counted from the right, -1 not split"},
                    {"--sbp", "LIST", "OneFlow nd-SBP, one entry per mesh axis: S(i), B, P"},
                    {"--placements", "LIST", "DTensor placements: Shard(i), Replicate(), Partial()"},
                    {"--dims-mapping", "MAP", "Paddle form: mesh axis (from the left) per dim, -1 not split"},
                    {"--partial", "AXES", "with --dims-mapping: mesh axes holding partial sums"},
                    {"--strategy", "S0,S1,...", "a shard strategy; the device matrix is derived (with --device-num)"},
                    {"--device-num", "N", "with --strategy: the device count (default: the strategy's product)"},
                    {"--shape", "S0,S1,...", "the tensor shape (default: each dim its number of slices)"},
                    {"--max-ranks", "N", "the most ranks the per-rank table may list (default 4096)"},
                    {"--json", "", "machine-readable output"},
                    kColor, kHelp},
                   ""});
  specs.back().handler = runLayout;
  specs.push_back({"explain", "why an op got its strategy, or why an inserted op is there", "irc explain MODEL.yaml NAME [options]",
                   {"irc explain examples/ffn.yaml add2                 the strategy and where it came from",
                    "irc explain examples/ffn.yaml add2.in0.redistribution_op.0 --rank 5",
                    "irc explain examples/ffn.yaml %4                   the node the step_parallel_end dump prints as %4",
                    "irc explain examples/ffn.yaml %4 --pass validate",
                    "irc explain model.yaml --search                    search_mode auto's choice and the runners-up",
                    "irc explain plan.yaml --time                       where the predicted step goes: by category, module, op"},
                   join({{{"--rank", "R", "the rank whose groups and slice bounds are shown (default parallel.global_rank)"},
                          {"--search", "", "instead of an op: the plan search_mode auto chose, its alternatives and why each lost"},
                          {"--time", "", "instead of an op: the predicted step by category, then the slowest stage's modules and ops by time (needs a cluster)"},
                          {"--pass", "PASS", "with a %N name: the dump %N refers to (default step_parallel_end)"}},
                         kModeOptions, {kColor, kHelp}}),
                   "NAME is an op or value name as in the model or the dumps, or %N as a dump prints it."});
  specs.back().handler = runExplain;
  specs.push_back({"verify", "run every rank's program and compare it with the single-device program",
                   "irc verify MODEL.yaml [options]",
                   {"irc verify examples/ffn.yaml", "irc verify examples/ffn.yaml --search-mode factor_propagation --redistribution optimal",
                    "irc verify model.yaml --seed 7 --rtol 1e-6",
                    "irc verify gpt2.onnx --device-num 2 --inputs gpt2.inputs.npz --expect gpt2.expected.npz"},
                   join({{{"--seed", "N", "the seed of the random inputs (default 0)"},
                          {"--inputs", "IN.npz", "the inputs (arrays named after the graph's inputs; parameters too, else an ONNX file's own)"},
                          {"--expect", "OUT.npz", "compare the single-device outputs with these arrays (named after the graph's outputs)"},
                          {"--rtol", "X", "relative tolerance (default 1e-09; 1e-4 against --expect), of the larger of the element and the value's largest magnitude"},
                          {"--atol", "X", "absolute tolerance (default 1e-12; 1e-5 against --expect)"},
                          {"--max-ranks", "N", "the most ranks verify simulates (default 4096)"}},
                         kModeOptions, {kQuiet, kColor, kHelp}}),
                   "Exit status: 0 every rank agrees (and the outputs match --expect), 1 model or arrays rejected, 3 a mismatch (the first is named)."});
  specs.back().handler = runVerify;
  specs.push_back({"diff", "sharding-aware diff of two dumps, dump directories or models", "irc diff A B [options]",
                   {"irc diff a.yaml b.yaml                 what changed in cost first, then per stage",
                    "irc diff a.yaml b.yaml --stat          only the summary",
                    "irc diff ffn_ir other_ir --json        the summary for CI bots",
                    "irc diff a.ir b.ir",
                    "irc diff --parallel rank_0/validate_0004.ir mindspore/rank_0/validate_0123.ir"},
                   {{"--rank", "R", "the rank folder (and, for models, the rank) compared (default 0)"},
                    {"--stat", "", "print only the summary"},
                    {"--json", "", "print the summary as JSON"},
                    {"--all-stages", "", "show a difference at every stage it appears in, not only the first"},
                    {"--parallel", "", "compare only what parallelism decides (strategies, collectives, slices, local shapes); "
                                       "reads MindSpore's own dumps too"},
                    kColor,
                    kHelp},
                   "Exit status as diff(1): 0 identical, 1 different (a rejected model is 1 too), 2 usage."});
  specs.back().handler = runDiff;
  specs.push_back({"import", "a MindSpore (or irc) parse / step_parallel_begin dump, an ONNX file or a Hugging Face config.json, as irc's YAML model",
                   "irc import DUMP.ir|MODEL.onnx|config.json [-o MODEL.yaml] [options]",
                   {"irc import rank_0/step_parallel_begin_0010.ir -o net.yaml",
                    "irc import examples/gpt2.onnx --dim batch=2 -o gpt2.yaml",
                    "irc import begin_excerpt.ir --device-num 8            an excerpt without the header's device_num",
                    "irc import mixtral.config.json --dim sequence=4096   a decoder from its config (docs/config-json.md)"},
                   {{"-o|--output", "FILE", "write the model to FILE (default: stdout)"},
                    {"--device-num", "N", "device_num of the model (default: the dump's, else its largest configured strategy)"},
                    {"--name", "NAME", "the model's name (default: the dump file's stem)"},
                    {"--dim", "NAME=VALUE", "an ONNX file's symbolic input dim, or a config's batch or sequence (repeatable)"},
                    kColor,
                    kHelp},
                   "Side nodes (Load, UpdateState, Depend, MakeTuple, TupleGetItem) are followed, not imported; an op irc\n"
                   "lacks is a located error naming it."});
  specs.back().handler = runImport;
  specs.push_back({"memory", "will it fit: a rank's peak memory for inference and a training step, as a table",
                   "irc memory MODEL.yaml [options]",
                   {"irc memory examples/ffn.yaml                      the forward pass's peak and what is live there",
                    "irc memory examples/ffn.yaml --training --optimizer adamw --plot ffn.svg",
                    "irc memory plan.yaml --memory-budget 80GB         says whether each rank fits"},
                   join({{{"--rank", "R", "the rank (default parallel.global_rank; the ranks of a pipeline stage hold the same shapes)"},
                          {"--all-ranks", "", "every rank's peaks, a line each (a pipeline's stages differ)"},
                          {"--training", "", "also a training step (as parallel.training)"},
                          {"--optimizer", "NAME", "the training step's optimizer: adamw, adam, sgd, momentum (implies --training)"},
                          {"--memory-budget", "SIZE", "compare the peak with SIZE (16GiB, 80GB; as parallel.memory_budget)"},
                          {"--plot", "FILE.svg", "draw live bytes over the op sequence, the peaks marked"},
                          {"--trace", "FILE", "write the estimated step as a Chrome trace, each stage's allocated bytes a counter (needs a cluster; as irc --trace)"},
                          {"--schedule-plot", "FILE.svg", "draw the estimated step's pipeline schedule (needs a cluster; as irc --schedule-plot)"}},
                         kModeOptions, {kColor, kHelp}}),
                   "docs/memory.md says what is counted and what is not."});
  specs.back().handler = runMemory;
  return specs;
}
// clang-format on

}  // namespace

// The subcommands' names, in the table's order: "layout, explain, ...".
std::string subcommandList(const std::vector<CommandSpec>& specs, const char* separator) {
  std::string out;
  for (const CommandSpec& s : specs)
    if (!s.name.empty()) out += (out.empty() ? "" : separator) + s.name;
  return out;
}

// The compile command's help names the subcommands the table holds.
std::vector<CommandSpec> withSubcommandList(std::vector<CommandSpec> specs) {
  for (CommandSpec& s : specs)
    if (size_t at = s.details.find("SUBCOMMANDS"); at != std::string::npos)
      s.details.replace(at, 11, subcommandList(specs, ", "));
  return specs;
}

const std::vector<CommandSpec>& commandSpecs() {
  static const std::vector<CommandSpec> specs = withSubcommandList(build());
  return specs;
}

const CommandSpec& commandSpec(const std::string& name) {
  for (const auto& s : commandSpecs())
    if (s.name == name) return s;
  throw std::logic_error("no command spec named " + name);
}

std::vector<std::string> flagsWithValue(const CommandSpec& spec) {
  std::vector<std::string> out;
  for (const auto& o : spec.options)
    if (!o.value.empty())
      for (const auto& f : splitNames(o.flag, '|')) out.push_back(f);
  return out;
}

std::vector<std::string> switchFlags(const CommandSpec& spec) {
  std::vector<std::string> out;
  for (const auto& o : spec.options)
    if (o.value.empty())
      for (const auto& f : splitNames(o.flag, '|')) out.push_back(f);
  return out;
}

std::string commandHelp(const CommandSpec& spec) {
  std::string out = fmt::format("irc{} - {}\n\nExamples:\n", spec.name.empty() ? "" : " " + spec.name, spec.summary);
  for (const auto& e : spec.examples) out += "  " + e + "\n";
  out += fmt::format("\nUsage:\n  {}\n\nOptions:\n", spec.usage);
  for (const auto& o : spec.options) {
    std::string head = o.flag;
    for (size_t p = head.find('|'); p != std::string::npos; p = head.find('|')) head.replace(p, 1, ", ");
    if (!o.value.empty()) head += " " + o.value;
    out += fmt::format("  {:<28} {}\n", head, o.help);
  }
  if (!spec.details.empty()) out += "\n" + spec.details + "\n";
  return out;
}

std::string shortUsage() {
  return "usage: irc MODEL.yaml [options]\n"
         "       irc " +
         subcommandList(commandSpecs(), " | ") +
         " ...\n"
         "'irc --help' shows examples and every option; 'irc help SUBCOMMAND' a subcommand's.\n";
}

}  // namespace irc::cli

// numpy .npz arrays (frontends/npz_reader.h) and `irc verify --inputs / --expect` on them. The
// archives are written with tests/npz_util.h.
#include <doctest/doctest.h>

#include "frontends/npz_reader.h"
#include "tests/npz_util.h"
#include "tests/test_util.h"

namespace irc::test {

TEST_CASE("npy: float32 and int64 arrays; bad headers, big-endian, Fortran order and short data are errors") {
  std::string error;
  auto a = parseNpy(npy("<f4", {2, 3}, {1, 2, 3, 4, 5, 6.5}), error);
  REQUIRE(a);
  CHECK(a->dtype == DType::Float32);
  CHECK(a->value.shape == Shape{2, 3});
  CHECK(a->value.data == std::vector<double>{1, 2, 3, 4, 5, 6.5});
  auto scalar = parseNpy(npy("<i8", {}, {-7}), error);
  REQUIRE(scalar);
  CHECK(scalar->value.shape.empty());
  CHECK(scalar->value.data == std::vector<double>{-7});
  CHECK(!parseNpy("PK\x03\x04 not npy", error));
  CHECK(error.find("no \\x93NUMPY magic") != std::string::npos);
  CHECK(!parseNpy(npy(">f4", {1}, {1}), error));
  CHECK(error.find("has dtype '>f4'") != std::string::npos);
  CHECK(!parseNpy(npy("<f4", {2}, {1, 2}, "True"), error));
  CHECK(error.find("Fortran order") != std::string::npos);
  std::string shortData = npy("<f4", {4}, {1, 2, 3, 4});
  shortData.resize(shortData.size() - 3);
  CHECK(!parseNpy(shortData, error));
  CHECK(error.find("holds 13 bytes of data; shape (4) of <f4 needs 16") != std::string::npos);
}

TEST_CASE("npz: arrays by name; a truncated archive is an error, not a crash") {
  TempDir dir;
  std::string path = dir.path() + "/a.npz";
  writeNpz(path, {{"x", npy("<f4", {2}, {1, 2})}, {"ids", npy("<i8", {1, 2}, {3, 4})}});
  std::string error;
  auto arrays = readNpz(path, error);
  REQUIRE(arrays);
  CHECK(arrays->size() == 2);
  CHECK(arrays->at("x").value.data == std::vector<double>{1, 2});
  CHECK(arrays->at("ids").dtype == DType::Int64);
  std::string bytes = readFile(path);
  writeFile(dir.path() + "/cut.npz", bytes.substr(0, bytes.size() / 2));
  CHECK(!readNpz(dir.path() + "/cut.npz", error));
  CHECK(error.find("cut.npz: cannot read it as an .npz (a zip of .npy arrays)") != std::string::npos);
  CHECK(!readNpz(dir.path() + "/missing.npz", error));
}

TEST_CASE("irc verify --inputs/--expect: the reference on given arrays, compared with expected outputs; exit 3 on a mismatch") {
  TempDir dir;
  std::string model = dir.path() + "/m.yaml";
  writeFile(model,
            "parallel: {device_num: 2}\ninputs:\n  - {name: x, shape: [2, 2], dtype: float32}\n"
            "parameters:\n  - {name: w, shape: [2, 2], dtype: float32}\n"
            "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: [[2, 1], [1, 1]]}\noutputs: [mm]\n");
  // x @ w = [[1, 2], [3, 4]] @ [[1, 0], [1, 1]] = [[3, 2], [7, 4]]
  writeNpz(dir.path() + "/in.npz", {{"x", npy("<f4", {2, 2}, {1, 2, 3, 4})}, {"w", npy("<f4", {2, 2}, {1, 0, 1, 1})}});
  writeNpz(dir.path() + "/out.npz", {{"mm", npy("<f4", {2, 2}, {3, 2, 7, 4})}});
  writeNpz(dir.path() + "/wrong.npz", {{"mm", npy("<f4", {2, 2}, {3, 2, 7, 5})}});
  RunResult ok = runIrc({"verify", model, "--inputs", dir.path() + "/in.npz", "--expect", dir.path() + "/out.npz"});
  CHECK(ok.exitCode == 0);
  CHECK(ok.out.find("output 'mm' against " + dir.path() + "/out.npz: max abs error 0, max rel error 0") != std::string::npos);
  RunResult bad = runIrc({"verify", model, "--inputs", dir.path() + "/in.npz", "--expect", dir.path() + "/wrong.npz"});
  CHECK(bad.exitCode == 3);
  CHECK(bad.out.find("MISMATCH: 1 of 4 elements outside the tolerance, first at flat index 3 (got 4, expected 5)") !=
        std::string::npos);
  // Arrays that do not fit the graph are located errors, exit 1.
  writeNpz(dir.path() + "/shape.npz", {{"x", npy("<f4", {2, 3}, {1, 2, 3, 4, 5, 6})}});
  RunResult shape = runIrc({"verify", model, "--inputs", dir.path() + "/shape.npz"});
  CHECK(shape.exitCode == 1);
  CHECK(shape.err.find("shape.npz: array 'x' has shape (2, 3); the graph's 'x' is (2, 2)") != std::string::npos);
  writeNpz(dir.path() + "/dtype.npz", {{"x", npy("<i8", {2, 2}, {1, 2, 3, 4})}});
  RunResult dtype = runIrc({"verify", model, "--inputs", dir.path() + "/dtype.npz"});
  CHECK(dtype.exitCode == 1);
  CHECK(dtype.err.find("dtype.npz: array 'x' is int64; the graph's 'x' is float32") != std::string::npos);
  writeNpz(dir.path() + "/none.npz", {{"w", npy("<f4", {2, 2}, {1, 0, 1, 1})}});
  RunResult missing = runIrc({"verify", model, "--inputs", dir.path() + "/none.npz"});
  CHECK(missing.exitCode == 1);
  CHECK(missing.err.find("none.npz: no array for the graph input 'x'") != std::string::npos);
  writeFile(dir.path() + "/trunc.npz", readFile(dir.path() + "/in.npz").substr(0, 40));
  RunResult truncated = runIrc({"verify", model, "--inputs", dir.path() + "/trunc.npz"});
  CHECK(truncated.exitCode == 1);
  CHECK(truncated.err.find("cannot read it as an .npz") != std::string::npos);
  CHECK(runIrc({"verify", model, "--expect", dir.path() + "/out.npz"}).exitCode == 2);
}

}  // namespace irc::test

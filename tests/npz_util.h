#pragma once
// numpy arrays for tests: .npy bytes written by hand, .npz archives with libzip.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace irc::test {

// A version-1 .npy of float32 ("<f4") or int64 ("<i8") values.
std::string npy(const std::string& descr, const std::vector<int64_t>& shape, const std::vector<double>& values,
                const std::string& fortran = "False");
// An .npz of (array name, .npy bytes) pairs.
void writeNpz(const std::string& path, const std::vector<std::pair<std::string, std::string>>& arrays);

}  // namespace irc::test

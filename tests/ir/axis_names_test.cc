// AxisNames: a shared, immutable list of mesh axis names that reads like a vector of strings.
#include <doctest/doctest.h>

#include "ir/axis_names.h"
#include "ir/device_matrix.h"

namespace irc::test {

TEST_CASE("unnamed axis lists are axis_0.. and one shared list per length") {
  AxisNames three = AxisNames::unnamed(3);
  CHECK(three == std::vector<std::string>{"axis_0", "axis_1", "axis_2"});
  CHECK(&AxisNames::unnamed(3).list() == &three.list());
  CHECK(AxisNames::unnamed(0).empty());
  AxisNames many = AxisNames::unnamed(20);  // past the shared lengths: made on the spot
  CHECK(many.size() == 20);
  CHECK(many[19] == "axis_19");
  CHECK(DeviceMatrix::unnamed({2, 4}).names == std::vector<std::string>{"axis_0", "axis_1"});
}

TEST_CASE("a copy shares the list; appending copies it first") {
  AxisNames dp{"dp", "mp"};
  AxisNames copy = dp;
  CHECK(&copy.list() == &dp.list());
  copy.push_back("pp");
  CHECK(copy == std::vector<std::string>{"dp", "mp", "pp"});
  CHECK(dp == std::vector<std::string>{"dp", "mp"});  // the first holder still sees its list
  CHECK_FALSE(copy == dp);
  CHECK(AxisNames(std::vector<std::string>{"dp", "mp"}) == dp);  // equal lists, separate objects
  CHECK(AxisNames() == AxisNames(std::vector<std::string>{}));
  CHECK_THROWS_AS(dp.at(2), std::out_of_range);
}

}  // namespace irc::test

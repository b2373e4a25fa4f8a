#include "common/error.hpp"

#include <doctest/doctest.h>

namespace {
bitnet::result<int> parse_positive(int v) {
    if (v <= 0)
        return bitnet::error(bitnet::errc::invalid_argument, "value must be positive");
    return v;
}

bitnet::result<int> doubled(int v) {
    BITNET_TRY(parse_positive(v));
    return 2 * v;
}
} // namespace

TEST_CASE("errc values render with the bitnet category name and the message") {
    bitnet::error e(bitnet::errc::bad_format, "bad magic at offset 0");
    CHECK(e.value() == bitnet::errc::bad_format);
    CHECK(e.code.category().name() == std::string("bitnet"));
    CHECK(e.to_string() == "bad_format: bad magic at offset 0");
}

TEST_CASE("BITNET_TRY propagates the first error and passes values through") {
    CHECK(doubled(4).value() == 8);
    auto r = doubled(-1);
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == bitnet::errc::invalid_argument);
    CHECK_THROWS(r.value());
}

// What the config loader's tests ask of a refused configuration: its error message, and whether
// a text names something.
#pragma once

#include "conf/server_config.hpp"

#include <doctest/doctest.h>

#include <string>

namespace bitnet::test {

/// The message of the error `load_config(src)` must return.
inline std::string error_of(const bitnet::conf::config_sources& src) {
    auto r = bitnet::conf::load_config(src);
    REQUIRE_FALSE(r.has_value());
    return r.error().message;
}

inline bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace bitnet::test

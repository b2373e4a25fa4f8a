// An environment for the config loader's tests: the given variables and nothing else, so a test
// never reads or changes the process environment.
#pragma once

#include "conf/server_config.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace bitnet::test {

inline bitnet::conf::env_lookup fake_env(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
        if (auto it = vars.find(std::string(name)); it != vars.end())
            return it->second;
        return std::nullopt;
    };
}

} // namespace bitnet::test

// The table of configuration keys: each key's JSON name, where it lives in server_config, its
// range and its one-line description (`--help`). Internal to conf/ (server_config.cpp reads it).
#pragma once

#include "conf/server_config.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bitnet::conf::detail {

using u32_field = std::uint32_t server_config::*;
using u64_field = std::uint64_t server_config::*;
using str_field = std::string server_config::*;
using list_field = std::vector<std::string> server_config::*;
using dbl_field = double server_config::*; ///< a finite number (range checked by validate)
struct models_field {};

/// Whether a key's value is a secret: `--print-config`, logs and error messages never show it.
enum class secrecy : bool { plain = false, secret = true };

/// One configuration key: its JSON name (env: BITNET_ + upper case; flag: --name-with-dashes),
/// where it lives in the struct, its allowed range, a one-line description for `usage()`, and
/// whether its value is a secret (API keys, credentials, headers that carry them).
struct field {
    std::string_view key;
    std::variant<u32_field, u64_field, str_field, list_field, dbl_field, models_field> target;
    std::uint64_t min = 0;
    std::uint64_t max = UINT64_MAX;
    std::string_view doc;
    secrecy secret = secrecy::plain;
};

inline constexpr std::uint64_t k_u32_max = UINT32_MAX;

/// Every key, in the order `--help` and `--print-config` list them.
[[nodiscard]] std::span<const field> fields();
/// The key named `key`, or null.
[[nodiscard]] const field* find_field(std::string_view key);
/// A key a config file may hold: find_field's, and in a build without the test hooks their keys
/// too (read, used by nothing, listed nowhere), so a file written for a test build still loads.
[[nodiscard]] const field* find_file_key(std::string_view key);

} // namespace bitnet::conf::detail

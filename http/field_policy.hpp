// Which request fields each API family takes, and what it does with each: served, accepted and
// ignored because it changes nothing here, or refused with a 400 naming it (always, or unless it
// has the one value that asks for nothing this server lacks). One table for all five families;
// README.md's "Request fields" is the same table (tests/http/field_policy_test.cpp compares
// them), so nothing that changes an answer is ever dropped without a word. A field the table does
// not list for a family is refused as unknown, as OpenAI's and Anthropic's own APIs do.
#pragma once

#include "http/errors.hpp"

#include <boost/json/object.hpp>

#include <array>
#include <optional>
#include <span>
#include <string_view>

namespace bitnet::http {

/// The request shapes, in the README table's column order.
enum class api_family { native, completions, chat, responses, messages };
inline constexpr std::size_t n_api_families = 5;

/// One field: its cell per family, as the README writes it:
///   "yes"           served (README's sections say how)
///   "ignored"       accepted; it changes nothing on this server (the note says why)
///   "400"           refused whenever it is sent with a value other than null
///   "400 unless V"  refused unless its value is the JSON V (a number compares by value, an
///                   object member by member)
///   "–"             not a field of that family: refused as unknown
struct field_rule {
    std::string_view name;
    std::array<std::string_view, n_api_families> cells;
    std::string_view note; ///< what it is here, or why it is refused
};

/// The table, sorted by name.
[[nodiscard]] std::span<const field_rule> field_rules();

/// The 400 for the first field of `body` that `family` refuses or does not know (param: the
/// field), or nothing. Null values count as absent.
[[nodiscard]] std::optional<api_error> check_request_fields(api_family family,
                                                            const boost::json::object& body);

} // namespace bitnet::http

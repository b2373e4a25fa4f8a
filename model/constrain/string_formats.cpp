#include "model/constrain/string_formats.hpp"

#include <array>
#include <utility>

namespace bitnet::model::constrain {

namespace {

// RFC 3339 full-date, partial-time with its offset (JSON Schema's "time" needs one), and both
// joined by T; fractions of a second to 6 digits (microseconds), which keeps date-time within the
// pattern's state limit.
#define BITNET_DATE "\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])"
#define BITNET_TIME                                                                                \
    "([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d{1,6})?([Zz]|[+-]([01]\\d|2[0-3]):[0-5]\\d)"
#define BITNET_OCTET "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)"
#define BITNET_LABEL "[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"

constexpr std::array<std::pair<std::string_view, string_format>, 9> formats{{
    {"date", {"^" BITNET_DATE "$", 0}},
    {"time", {"^" BITNET_TIME "$", 0}},
    {"date-time", {"^" BITNET_DATE "[Tt]" BITNET_TIME "$", 0}},
    {"email", {"^[A-Za-z0-9._%+-]+@" BITNET_LABEL "(\\." BITNET_LABEL ")+$", 254}},
    {"uuid", {"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", 0}},
    {"ipv4", {"^(" BITNET_OCTET "\\.){3}" BITNET_OCTET "$", 0}},
    {"ipv6", {"^([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$", 0}},
    {"uri", {"^[A-Za-z][A-Za-z0-9+.-]*:[^\\s\"<>\\\\^`{|}]+$", 0}},
    {"hostname", {"^" BITNET_LABEL "(\\." BITNET_LABEL ")*$", 253}},
}};

#undef BITNET_DATE
#undef BITNET_TIME
#undef BITNET_OCTET
#undef BITNET_LABEL

} // namespace

std::optional<string_format> format_grammar(std::string_view name) {
    for (const auto& [n, f] : formats)
        if (n == name)
            return f;
    return std::nullopt;
}

} // namespace bitnet::model::constrain

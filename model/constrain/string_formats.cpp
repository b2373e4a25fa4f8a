#include "model/constrain/string_formats.hpp"

#include <array>
#include <mutex>
#include <utility>

namespace bitnet::model::constrain {

namespace {

// RFC 3339 full-date: the day fits its month, February 29 only in leap years (divisible by 4,
// not by 100 unless by 400: over the year's four digits that is a regular language). Year 0000
// is left out (common validators refuse it).
#define BITNET_YEAR "([0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
#define BITNET_LEAP_YEAR                                                                           \
    "([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][48]|[13579][26]|[2468]0)00)"
#define BITNET_MONTH_DAY                                                                           \
    "((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)"
#define BITNET_DATE "(" BITNET_YEAR "-" BITNET_MONTH_DAY "|" BITNET_LEAP_YEAR "-02-29)"
// RFC 3339 full-time with its offset (JSON Schema's "time" needs one); fractions of a second to 6
// digits; second 60 is never written (a leap second is valid only at the end of a UTC day that
// had one, which no grammar can know).
#define BITNET_HOUR_MINUTE "([01][0-9]|2[0-3]):[0-5][0-9]"
#define BITNET_TIME                                                                                \
    BITNET_HOUR_MINUTE ":[0-5][0-9](\\.[0-9]{1,6})?([Zz]|[+-]" BITNET_HOUR_MINUTE ")"
#define BITNET_OCTET "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
// RFC 1123 label: letters, digits and hyphens, no hyphen first or last, 63 bytes at most.
#define BITNET_LABEL "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
// RFC 5321 Dot-string: atoms of atext joined by single dots.
#define BITNET_ATEXT "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
// RFC 3986 URI with a scheme: an authority of reg-name characters and a path, or a path that
// does not start with "//"; then a query and a fragment; characters outside the unreserved and
// sub-delims sets only as %XX.
#define BITNET_PCT "%[0-9A-Fa-f][0-9A-Fa-f]"
#define BITNET_PCHAR "([A-Za-z0-9._~!$&'()*+,;=:@-]|" BITNET_PCT ")"
#define BITNET_REGNAME "([A-Za-z0-9._~!$&'()*+,;=-]|" BITNET_PCT ")"
#define BITNET_QCHAR "([A-Za-z0-9._~!$&'()*+,;=:@/?-]|" BITNET_PCT ")"

struct format_def {
    std::string_view name;
    std::string_view pattern;
    std::string_view also; ///< a second condition (empty: none)
    std::uint32_t max_length;
};

constexpr std::array<format_def, 9> formats{{
    {"date", "^" BITNET_DATE "$", "", 0},
    {"time", "^" BITNET_TIME "$", "", 0},
    {"date-time", "^" BITNET_DATE "[Tt]" BITNET_TIME "$", "", 0},
    // A mailbox is at most 254 bytes (RFC 5321's 256-byte path less its angle brackets).
    {"email", "^" BITNET_ATEXT "+(\\." BITNET_ATEXT "+)*@" BITNET_LABEL "(\\." BITNET_LABEL ")+$",
     "^[^@]{1,64}@.*$", 254},
    {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", "",
     0},
    {"ipv4", "^(" BITNET_OCTET "\\.){3}" BITNET_OCTET "$", "", 0},
    {"ipv6", "^([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$", "", 0},
    {"uri",
     "^[A-Za-z][A-Za-z0-9+.-]*:(//" BITNET_REGNAME "*(/" BITNET_PCHAR "*)*|/?(" BITNET_PCHAR
     "+(/" BITNET_PCHAR "*)*)?)(\\?" BITNET_QCHAR "*)?(#" BITNET_QCHAR "*)?$",
     "", 0},
    {"hostname", "^" BITNET_LABEL "(\\." BITNET_LABEL ")*$", "", 253},
}};

#undef BITNET_YEAR
#undef BITNET_LEAP_YEAR
#undef BITNET_MONTH_DAY
#undef BITNET_DATE
#undef BITNET_TIME
#undef BITNET_HOUR_MINUTE
#undef BITNET_OCTET
#undef BITNET_LABEL
#undef BITNET_ATEXT
#undef BITNET_PCT
#undef BITNET_PCHAR
#undef BITNET_REGNAME
#undef BITNET_QCHAR

/// Each format's automaton, built at its first use and kept for the process.
struct built_format {
    std::once_flag once;
    std::optional<result<pattern_regex>> language;
};

} // namespace

std::optional<result<string_format>> format_grammar(std::string_view name) {
    static std::array<built_format, formats.size()> built;
    for (std::size_t i = 0; i < formats.size(); ++i) {
        const auto& f = formats[i];
        if (f.name != name)
            continue;
        auto& b = built[i];
        std::call_once(b.once, [&] {
            b.language = f.also.empty() ? pattern_regex::determinized(f.pattern)
                                        : pattern_regex::determinized(f.pattern, {f.also});
        });
        if (!*b.language)
            return result<string_format>(b.language->error());
        return result<string_format>(string_format{&**b.language, f.max_length});
    }
    return std::nullopt;
}

} // namespace bitnet::model::constrain

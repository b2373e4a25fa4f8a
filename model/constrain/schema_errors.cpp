#include "model/constrain/schema_errors.hpp"

#include <cstdint>

namespace bitnet::model::constrain {

error limit_error(const char* name, std::size_t value, const std::string& what) {
    return error{errc::invalid_argument,
                 "the schema is over the limit " + std::string(name) + " (" +
                     std::to_string(value) + "): " + what,
                 name};
}

std::string cut_utf8(std::string_view s, std::size_t n) {
    if (s.size() <= n)
        return std::string(s);
    while (n > 0 && (static_cast<std::uint8_t>(s[n]) & 0xC0) == 0x80)
        --n;
    return std::string(s.substr(0, n)) + "...";
}

} // namespace bitnet::model::constrain

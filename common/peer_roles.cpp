#include "common/peer_roles.hpp"

namespace bitnet {

namespace {

constexpr struct {
    peer_roles bit;
    std::string_view name;
} k_roles[] = {{role_replica, "replica"}, {role_router, "router"}, {role_admin, "admin"}};

} // namespace

std::string roles_text(peer_roles roles) {
    std::string out;
    for (const auto& r : k_roles)
        if (roles & r.bit) {
            if (!out.empty())
                out += ',';
            out += r.name;
        }
    return out.empty() ? "none" : out;
}

result<peer_roles> parse_roles(std::string_view text) {
    peer_roles out = 0;
    while (true) {
        const auto comma = text.find(',');
        const auto item = text.substr(0, comma);
        bool known = false;
        for (const auto& r : k_roles)
            if (item == r.name) {
                out |= r.bit;
                known = true;
            }
        if (!known)
            return error{errc::invalid_argument,
                         "'" + std::string(item) +
                             "' is not a cluster role (replica, router or admin)"};
        if (comma == std::string_view::npos)
            return out;
        text.remove_prefix(comma + 1);
    }
}

} // namespace bitnet

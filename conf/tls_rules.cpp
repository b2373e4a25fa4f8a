#include "conf/tls_rules.hpp"

#include "conf/cluster_rules.hpp"

namespace bitnet::conf::detail {

result<void> validate_tls(const server_config& cfg) {
    if (cfg.tls_cert.empty() && cfg.tls_key.empty())
        return {};
    // One without the other would serve plain HTTP where HTTPS was meant, or nothing: refuse.
    if (cfg.tls_cert.empty())
        return fail("tls_cert", "is missing: HTTPS needs tls_cert and tls_key together (or "
                                "neither, for plain HTTP)");
    if (cfg.tls_key.empty())
        return fail("tls_key", "is missing: HTTPS needs tls_cert and tls_key together (or "
                               "neither, for plain HTTP)");
    if (auto why = unreadable(cfg.tls_cert); !why.empty())
        return fail("tls_cert", why);
    if (auto why = unreadable(cfg.tls_key); !why.empty())
        return fail("tls_key", why);
    return {};
}

} // namespace bitnet::conf::detail

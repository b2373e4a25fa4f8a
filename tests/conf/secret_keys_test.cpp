// Secret configuration keys (conf/config_fields.hpp, `secrecy`): the key table marks every key
// whose value is a credential, and neither `--print-config` (to_json) nor a refusal's message
// ever shows such a value. The test walks the table, so a secret key added later is covered.
#include "conf/config_fields.hpp"
#include "conf/server_config.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace bitnet::conf;
using detail::secrecy;

namespace {

/// A JSON value of the key's type holding `secret` (a list key: a one-entry list).
std::string value_of(const detail::field& f, const std::string& secret) {
    const std::string text = "\"" + secret + "\"";
    return std::holds_alternative<detail::list_field>(f.target) ? "[" + text + "]" : text;
}

} // namespace

TEST_CASE("secret keys: the table marks every credential, and no output shows one") {
    std::set<std::string> secret;
    for (const auto& f : detail::fields())
        if (f.secret == secrecy::secret)
            secret.emplace(f.key);
    // The credentials this server takes. A key that carries one and is not marked fails here.
    const std::set<std::string> expected{"api_keys", "admin_api_keys", "metrics_api_key",
                                         "prefix_cache_share_groups", "otlp_headers"};
    CHECK(secret == expected);
    for (const auto& f : detail::fields()) {
        const std::string key(f.key);
        const bool looks_secret =
            key.find("api_key") != std::string::npos || key.find("headers") != std::string::npos ||
            key.find("password") != std::string::npos || key.find("token") != std::string::npos;
        // "tokens" and "per_token" are counts and rates of the model's tokens, not credentials.
        if (looks_secret && key.find("tokens") == std::string::npos &&
            key.find("per_token") == std::string::npos)
            CHECK_MESSAGE(f.secret == secrecy::secret, key);
    }

    for (const auto& f : detail::fields()) {
        if (f.secret != secrecy::secret)
            continue;
        const std::string key(f.key);
        INFO("key " << key);
        // A value of the right form: printed redacted, never as itself.
        const std::string value = key == "otlp_headers" ? "authorization=Bearer sv-" + key + "-Zq9"
                                  : key == "prefix_cache_share_groups" ? "sv-a-Zq9|sv-b-Zq9"
                                                                       : "sv-" + key + "-Zq9";
        server_config cfg;
        auto ok = apply_json(cfg, "{\"" + key + "\": " + value_of(f, value) + "}", "test");
        REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
        const auto printed = to_json(cfg);
        CHECK(printed.find("Zq9") == std::string::npos);
        CHECK(printed.find("<redacted>") != std::string::npos);
        // A value the key refuses: the message names the key, not the value.
        server_config bad;
        auto no = apply_json(
            bad, "{\"" + key + "\": " + value_of(f, "sv\\u0001" + key + "-Xk7") + "}", "test");
        if (!no.has_value()) {
            CHECK(no.error().message.find(key) != std::string::npos);
            CHECK(no.error().message.find("Xk7") == std::string::npos);
        } else {
            CHECK(to_json(bad).find("Xk7") == std::string::npos);
        }
    }
}

#include "http/routes/routes.hpp"

#include <array>

namespace bitnet::http {

namespace {

constexpr std::array k_routes{
    route{"GET", "/", route_id::web_page, role::open},
    route{"GET", "/ui/{asset}", route_id::web_asset, role::open},
    route{"GET", "/health/live", route_id::health_live, role::open},
    route{"GET", "/health/ready", route_id::health_ready, role::open},
    route{"GET", "/health", route_id::health, role::open},
    route{"GET", "/metrics", route_id::metrics, role::open},
    route{"GET", "/openapi.json", route_id::openapi, role::open},
    route{"POST", "/v1/inference", route_id::inference, role::user},
    route{"POST", "/v1/inference/stream", route_id::inference_stream, role::user},
    route{"POST", "/v1/completions", route_id::completions, role::user, false,
          api_family::completions},
    route{"POST", "/v1/chat/completions", route_id::chat, role::user, false, api_family::chat},
    route{"POST", "/v1/messages", route_id::messages, role::user, false, api_family::messages},
    route{"POST", "/v1/messages/count_tokens", route_id::messages_count_tokens, role::user, false,
          api_family::messages},
    route{"POST", "/v1/responses", route_id::responses, role::user, false, api_family::responses},
    route{"GET", "/v1/responses/{response_id}", route_id::response_get, role::user, false,
          api_family::responses},
    route{"DELETE", "/v1/responses/{response_id}", route_id::response_delete, role::user, false,
          api_family::responses},
    route{"GET", "/v1/responses/{response_id}/input_items", route_id::response_input_items,
          role::user, false, api_family::responses},
    route{"POST", "/v1/tokenize", route_id::tokenize, role::user},
    route{"POST", "/v1/detokenize", route_id::detokenize, role::user},
    route{"POST", "/apply-template", route_id::apply_template, role::user},
    route{"GET", "/v1/stats", route_id::stats, role::user},
    route{"GET", "/v1/cluster", route_id::cluster, role::user},
    route{"GET", "/v1/models", route_id::models, role::user},
    route{"GET", "/v1/models/{alias}", route_id::model, role::user},
    route{"POST", "/v1/models/load", route_id::model_load, role::admin},
    route{"POST", "/v1/models/{alias}/rollback", route_id::model_rollback, role::admin},
    route{"DELETE", "/v1/models/{alias}", route_id::model_unload, role::admin},
#ifdef BITNET_TEST_HOOKS
    route{"POST", "/v1/models/{alias}/crash", route_id::model_crash, role::admin, true},
#endif
};

} // namespace

const route* route_of_label(std::string_view label) {
    for (const auto& r : k_routes)
        if (r.pattern == label)
            return &r;
    return nullptr;
}

namespace {

/// Where a pattern's "{name}" segment starts, and its length (npos when it has none).
std::pair<std::size_t, std::size_t> param_of(std::string_view pattern) {
    const auto at = pattern.find('{');
    if (at == std::string_view::npos)
        return {at, 0};
    return {at, pattern.find('}', at) + 1 - at};
}

/// Whether `path` fits `pattern`; the {name} segment goes to `alias` (one non-empty segment).
bool fits(std::string_view pattern, std::string_view path, std::string& alias) {
    const auto [at, len] = param_of(pattern);
    if (at == std::string_view::npos)
        return pattern == path;
    const auto head = pattern.substr(0, at);
    const auto tail = pattern.substr(at + len);
    if (path.size() <= head.size() + tail.size() || path.substr(0, head.size()) != head ||
        path.substr(path.size() - tail.size()) != tail)
        return false;
    const auto seg = path.substr(head.size(), path.size() - head.size() - tail.size());
    if (seg.find('/') != std::string_view::npos)
        return false;
    alias = seg;
    return true;
}

bool literal(const route& r) {
    return r.pattern.find('{') == std::string_view::npos;
}

} // namespace

std::span<const route> routes() {
    return k_routes;
}

route_match match_route(std::string_view method, std::string_view target, bool test_hooks) {
    route_match m;
    m.need = target.substr(0, 4) == "/v1/" ? role::user : role::open;
    // Two passes: literal patterns first, so a literal path never falls to an {alias} pattern.
    for (const bool want_literal : {true, false}) {
        for (const auto& r : k_routes) {
            std::string alias;
            if (literal(r) != want_literal || (r.test_hook && !test_hooks) ||
                !fits(r.pattern, target, alias))
                continue;
            if (!m.path_known || r.method == method) {
                // The first route of the path sets the role and label of a 405; one that allows
                // the method replaces it.
                m.need = r.need;
                m.label = r.pattern;
                m.alias = std::move(alias);
            }
            m.path_known = true;
            if (r.method == method) {
                m.found = &r;
                return m;
            }
        }
        if (m.path_known)
            return m;
    }
    return m;
}

} // namespace bitnet::http

// The route table: every route of http/openapi.json as (method, path pattern, role), in one place,
// read top to bottom like a menu. Matching is a pure function of the request line, so the session,
// the tests and the request fuzzer share it. The pattern doubles as the metrics `route` label:
// it never carries client text, so no request can add series to /metrics.
#pragma once

#include "http/field_policy.hpp"

#include <span>
#include <string>
#include <string_view>

namespace bitnet::http {

/// What a route does; the session dispatches on it.
enum class route_id {
    web_page,
    web_asset,
    health_live,
    health_ready,
    health,
    metrics,
    openapi,
    stats,
    models,
    model,
    model_load,
    model_rollback,
    model_unload,
    model_crash,
    cluster,
    messages,
    messages_count_tokens,
    responses,
    response_get,
    response_delete,
    response_input_items,
    inference,
    inference_stream,
    completions,
    chat,
    tokenize,
    detokenize,
    apply_template,
    added_family, ///< a POST route a family added at startup (http/routes/families.hpp)
};

/// Who may call a route: anyone (probes, scrapes), an API key holder (when keys are set), or an
/// admin key holder.
enum class role { open, user, admin };

struct route {
    std::string_view method;  ///< "GET", "POST", "DELETE"
    std::string_view pattern; ///< literal segments and at most one "{name}" (alias, response_id)
    route_id id;
    role need;
    bool test_hook = false; ///< served only with test hooks on
    /// The API family whose shapes the route answers in (its errors and headers too).
    api_family family = api_family::native;
};

/// The table, in the order the README lists the routes.
[[nodiscard]] std::span<const route> routes();

/// The route whose pattern is `label` (a metrics label), or null.
[[nodiscard]] const route* route_of_label(std::string_view label);

/// The outcome of matching a request line.
struct route_match {
    /// The route to run; null when no pattern matched the path (404) or none of those that
    /// matched allows the method (405).
    const route* found = nullptr;
    bool path_known = false; ///< some pattern matched the path (so a miss is a 405, not a 404)
    role need = role::open;  ///< what the caller must hold before hearing 404/405 or the route
    std::string alias; ///< the {…} segment ({alias}, {response_id}), when the pattern has one
    /// The metrics label: the pattern, or "unmatched".
    std::string_view label = "unmatched";
};

/// Matches `target` (the query string already removed) and `method`. Literal patterns win over
/// ones with a "{name}" segment ("/v1/models/load" is never the model "load"). Paths under /v1/
/// that match nothing still need the user role, so a 404 tells an unauthenticated caller nothing.
[[nodiscard]] route_match match_route(std::string_view method, std::string_view target,
                                      bool test_hooks);

} // namespace bitnet::http

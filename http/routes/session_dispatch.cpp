// The session's route block: a parsed request is matched against the route table (routes.hpp),
// its caller's key checked against the route's role, its media type checked, and the route's
// handler called. Every answer the layer gives by itself (401, 403, 404, 405, 415) starts here.
#include "http/routes/families.hpp"
#include "http/routes/openapi.hpp"
#include "http/routes/session.hpp"
#include "http/transport/request_errors.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>

namespace bitnet::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace json = boost::json;

namespace {

/// The key in `Authorization: Bearer <key>`, else in `x-api-key` (what Anthropic's clients
/// send); empty when none.
std::string bearer(const session::request& req) {
    const auto auth = std::string(req[bhttp::field::authorization]);
    if (auth.rfind("Bearer ", 0) == 0)
        return auth.substr(7);
    return std::string(req["x-api-key"]);
}

bool listed(const std::vector<std::string>& keys, const std::string& k) {
    return !k.empty() && std::find(keys.begin(), keys.end(), k) != keys.end();
}

/// No Content-Type, or a media type of application/json (case-insensitive, parameters such
/// as charset allowed).
bool json_type(const session::request& req) {
    std::string_view ctype = req[bhttp::field::content_type];
    ctype = ctype.substr(0, ctype.find(';'));
    while (!ctype.empty() && (ctype.back() == ' ' || ctype.back() == '\t'))
        ctype.remove_suffix(1);
    while (!ctype.empty() && (ctype.front() == ' ' || ctype.front() == '\t'))
        ctype.remove_prefix(1);
    return ctype.empty() || beast::iequals(ctype, "application/json");
}

/// The value of `name` in the target's query string (`?a=1&model=x`), or "" (no decoding: the
/// values read here are aliases, plain names).
std::string query_value(std::string_view target, std::string_view name) {
    const auto q = target.find('?');
    if (q == std::string_view::npos)
        return {};
    auto rest = target.substr(q + 1);
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const auto part = rest.substr(0, amp);
        if (part.size() > name.size() && part.substr(0, name.size()) == name &&
            part[name.size()] == '=')
            return std::string(part.substr(name.size() + 1));
        if (amp == std::string_view::npos)
            break;
        rest.remove_prefix(amp + 1);
    }
    return {};
}

} // namespace

void session::handle(request req) {
    keep_alive_ = req.keep_alive();
    std::string target(req.target());
    if (auto q = target.find('?'); q != std::string::npos)
        target.resize(q);
    // HEAD is answered wherever GET is, with GET's headers and no body (RFC 9110 section 9.3.2).
    head_ = req.method() == bhttp::verb::head;
    const std::string_view method =
        head_ ? std::string_view("GET") : std::string_view(req.method_string());
    const auto m = match_route(method, target, srv_.opt.test_hooks);
    note_origin(req);
    if (answer_preflight(req, std::string(m.label), m.path_known || m.found))
        return;
    begin_trace(req, m);
    const log_scope scope(json_logs() ? log_context() : log_fields{}); // the trace id is known
    const std::string route(m.label);
    if (m.need != role::open) {
        const auto key = bearer(req);
        client_key_ = key;
        // Fair shares and quotas count a client by its key; with no keys configured, by its
        // address (a trusted proxy's X-Forwarded-For), never by a header it could vary.
        tenant_ =
            srv_.opt.api_keys.empty()
                ? address_key(client_address(peer_address_, req["X-Forwarded-For"], net_.proxies))
                : key;
        if (auto refusal = authorize(m.need, key))
            return send_error(route, *refusal, "-");
    }
    if (!m.found && method == "POST" && serves_added_family(target)) {
        // A family added at startup: its path is its label (registered, never client text).
        const http::route added{"POST", target, route_id::added_family, role::user};
        return dispatch(added, {}, target, req);
    }
    if (!m.found) {
        if (m.path_known)
            return send_error(route,
                              status_error(405, std::string(req.method_string()) +
                                                    " is not allowed on " + target),
                              "-");
        return send_error(route, status_error(404, "no route " + target), "-");
    }
    dispatch(*m.found, m.alias, route, req);
}

std::optional<api_error> session::authorize(role need, const std::string& key) const {
    const auto& keys = srv_.opt.api_keys;
    const auto& admins = srv_.opt.admin_keys;
    if (need == role::admin) {
        if (admins.empty()) {
            if (srv_.opt.admin_open)
                return std::nullopt;
            // Model management is a role of its own: no inference key ever grants it.
            // A 403 is about what the credential may do, not whether it is valid.
            auto e = status_error(403, "model management is disabled: this server has no "
                                       "admin key configured");
            e.type = "permission_error";
            e.code = "forbidden";
            e.suggestion = "start the server with admin_api_keys (--admin-key), or "
                           "admin_open 1 for local use";
            return e;
        }
        if (key.empty())
            return status_error(401, "missing API key");
        if (!listed(admins, key)) {
            auto e = status_error(403, "this route needs the admin key");
            e.type = "permission_error";
            e.code = "forbidden";
            e.suggestion = "send an admin key (admin_api_keys) in Authorization: Bearer";
            return e;
        }
        return std::nullopt;
    }
    if (!keys.empty() && !listed(keys, key) && !listed(admins, key))
        return status_error(401, key.empty() ? "missing API key" : "wrong API key");
    return std::nullopt;
}

bool session::sees_all() const {
    const auto& o = srv_.opt;
    return o.api_keys.empty() || listed(o.admin_keys, client_key_) ||
           (o.admin_keys.empty() && o.admin_open) ||
           (!o.metrics_key.empty() && client_key_ == o.metrics_key);
}

void session::dispatch(const route& r, const std::string& alias, const std::string& label,
                       const request& req) {
    const bool json_body =
        r.method == "POST" && r.id != route_id::model_rollback && r.id != route_id::model_crash;
    if (json_body && r.id != route_id::model_load && !json_type(req))
        return send_error(label, status_error(415, "send Content-Type: application/json"), "-");
    switch (r.id) {
    case route_id::web_page:
        return do_web_page(label, req);
    case route_id::web_asset:
        return do_web_asset(label, alias);
    case route_id::health_live:
        return send_json(label, 200, R"({"status":"ok"})");
    case route_id::health_ready:
        return do_health(label, query_value(req.target(), "model"));
    case route_id::health:
        return do_health(label);
    case route_id::metrics:
        if (!srv_.opt.metrics_key.empty()) {
            // Prometheus's bearer credential (bearer_token_file / authorization.credentials):
            // the metrics key, or an admin key.
            const auto key = bearer(req);
            if (key != srv_.opt.metrics_key && !listed(srv_.opt.admin_keys, key)) {
                auto e = status_error(401, key.empty() ? "missing metrics key"
                                                       : "this route needs the metrics key");
                e.type = "authentication_error";
                e.code = "invalid_api_key";
                e.suggestion = "send metrics_api_key (or an admin key) in Authorization: Bearer";
                return send_error(label, e, "-");
            }
        }
        return do_metrics();
    case route_id::openapi:
        return send_json(label, 200, std::string(openapi_document()));
    case route_id::stats:
        return do_stats();
    case route_id::models:
        return do_models({});
    case route_id::model:
        return do_models(alias);
    case route_id::model_load:
        return do_load(req.body());
    case route_id::model_rollback:
        return do_model_op("rollback", alias, req.body());
    case route_id::model_crash:
        return do_model_op("crash", alias, req.body());
    case route_id::model_unload:
        return do_model_op("unload", alias, req.body());
    case route_id::cluster:
        return do_cluster();
    case route_id::tokenize:
        return do_tokenize(req.body());
    case route_id::detokenize:
        return do_detokenize(req.body());
    case route_id::apply_template:
        return do_apply_template(req.body());
    case route_id::inference:
    case route_id::inference_stream:
    case route_id::completions:
    case route_id::chat:
    case route_id::messages:
    case route_id::responses:
    case route_id::added_family:
        return start_inference(label, req.body());
    case route_id::messages_count_tokens:
        return do_count_tokens(req.body());
    case route_id::response_get:
        return do_response_get(label, alias);
    case route_id::response_delete:
        return do_response_delete(label, alias);
    case route_id::response_input_items:
        return do_response_input_items(label, alias, query_value(req.target(), "order"),
                                       query_value(req.target(), "limit"),
                                       query_value(req.target(), "after"));
    }
}

std::optional<json::object> session::body_object(const std::string& route,
                                                 const std::string& body) {
    auto parsed = parse_request_json(body);
    if (auto* e = std::get_if<api_error>(&parsed)) {
        send_error(route, *e, "-");
        return std::nullopt;
    }
    auto& v = std::get<json::value>(parsed);
    if (!v.is_object()) {
        send_error(route, invalid_value("", "the body must be a JSON object"), "-");
        return std::nullopt;
    }
    return std::move(v.get_object());
}

std::optional<bool> session::bool_field(const std::string& route, const json::object& o,
                                        const char* name, bool fallback) {
    const auto* b = o.if_contains(name);
    if (!b || b->is_null())
        return fallback;
    if (!b->is_bool()) {
        send_error(route, invalid_value(name, std::string(name) + " must be true or false"), "-");
        return std::nullopt;
    }
    return b->get_bool();
}

} // namespace bitnet::http

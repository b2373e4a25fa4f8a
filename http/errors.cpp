#include "http/errors.hpp"

#include <boost/json.hpp>

namespace bitnet::http {

namespace {

/// The errors that are the caller's (4xx): what it sent, which model it named, what its key may
/// do. False when `e` is none of them.
bool caller_error(const bitnet::error& e, std::uint32_t retry_after_s, api_error& out) {
    switch (e.value()) {
    case errc::invalid_argument:
    case errc::tokenizer_error:
        out = {400,
               "invalid_request_error",
               "invalid_value",
               out.message,
               out.param,
               "check the field against the API reference",
               0};
        break;
    case errc::prompt_too_long:
        // Never a Retry-After: the same prompt can never fit, however long the client waits.
        out = {400,
               "invalid_request_error",
               "context_length_exceeded",
               out.message,
               out.param.empty() ? "prompt" : out.param,
               "shorten the prompt: it must leave room in the context for the generated tokens",
               0};
        break;
    case errc::not_found:
        // Every not_found here is a model lookup: the field is the model, whatever the route.
        out = {404,
               "not_found_error",
               "model_not_found",
               out.message,
               "model",
               "list the served models with GET /v1/models",
               0};
        break;
    case errc::forbidden:
        // A peer's placed request that the replica's node does not take from it: the node the
        // client reached lacks the router role there (README, "Scaling out").
        out = {403,
               "permission_error",
               "forbidden",
               out.message,
               out.param,
               "this node may not place requests on that replica: check the cluster roles",
               0};
        break;
    case errc::quota_exceeded:
        out = {429,
               "rate_limit_error",
               "rate_limit_exceeded",
               out.message,
               out.param,
               "this API key's request quota is used up; retry after the Retry-After delay",
               retry_after_s == 0 ? 1 : retry_after_s};
        break;
    default:
        return false;
    }
    return true;
}

/// The errors of capacity and of the server itself (503, 504, 500), each with what to do next.
api_error server_side_error(const bitnet::error& e, std::uint32_t retry_after_s, api_error out) {
    switch (e.value()) {
    case errc::queue_full:
        out = {503,
               "overloaded",
               "queue_full",
               out.message,
               out.param,
               "retry after the Retry-After delay",
               retry_after_s == 0 ? 1 : retry_after_s};
        break;
    case errc::draining:
        out = {503,
               "overloaded",
               "draining",
               out.message,
               out.param,
               "retry against another replica",
               retry_after_s == 0 ? 1 : retry_after_s};
        break;
    case errc::replica_lost:
        // A cluster lost every replica that could carry the request on: another may join soon.
        out = {503,
               "overloaded",
               "replica_lost",
               out.message,
               out.param,
               "no replica of this model is up in the cluster; retry after the Retry-After delay",
               retry_after_s == 0 ? 5 : retry_after_s};
        break;
    case errc::unavailable:
        if (retry_after_s > 0) {
            // Its new version is loading and nothing serves it yet: a retry soon will likely find
            // it served.
            out = {503,
                   "overloaded",
                   "model_loading",
                   out.message,
                   "model",
                   "the model is loading: retry after the Retry-After delay",
                   retry_after_s};
            break;
        }
        // The model is listed, but its load failed (or it ran out of restarts): retrying does not
        // help until an operator loads a version that works.
        out = {503,
               "server_error",
               "model_unavailable",
               out.message,
               "model",
               "GET /v1/models/{alias} shows why (with the admin key); an operator loads a version "
               "that works, rolls back, or unloads it",
               0};
        break;
    case errc::kv_exhausted:
        out = {503,
               "overloaded",
               "queue_full",
               out.message,
               out.param,
               "retry after the Retry-After delay",
               retry_after_s == 0 ? 1 : retry_after_s};
        break;
    case errc::cancelled:
        // The actor that was to answer stopped first (messages/errors.cpp: a receiver that is
        // gone): a crashed pair restarting, a version unloaded, a node lost. Supervised parts come
        // back, so a retry will likely be served; it is never the client's fault nor a 500.
        out = {503,
               "overloaded",
               "worker_stopped",
               "the part of the server that was to serve this request stopped before it answered "
               "(a restart, an unload or a lost node); retry in a moment",
               out.param,
               "retry after the Retry-After delay",
               retry_after_s == 0 ? 1 : retry_after_s};
        break;
    case errc::timeout:
        out = {504,
               "timeout",
               "deadline_exceeded",
               out.message,
               out.param,
               "raise timeout_ms or retry when the server is less busy",
               0};
        break;
    default:
        out = {500,
               "server_error",
               "internal_error",
               out.message,
               out.param,
               "retry; if it persists, report it with the request_id",
               0};
        break;
    }
    return out;
}

} // namespace

api_error to_api_error(const bitnet::error& e, std::uint32_t retry_after_s, std::string param) {
    api_error out;
    out.message = e.message.empty() ? e.to_string() : e.message;
    // The field the caller names wins; else the one the error itself carries (admission's).
    out.param = param.empty() ? e.param : std::move(param);
    if (caller_error(e, retry_after_s, out))
        return out;
    return server_side_error(e, retry_after_s, std::move(out));
}

bitnet::error without_operator_detail(bitnet::error e) {
    if (e.value() != errc::unavailable)
        return e;
    if (const auto at = e.message.find(unserved_phrase); at != std::string::npos)
        e.message = e.message.substr(0, at + unserved_phrase.size()) + " (the admin key sees why)";
    return e;
}

api_error invalid_value(std::string param, std::string message) {
    return {400,
            "invalid_request_error",
            "invalid_value",
            std::move(message),
            std::move(param),
            "check the field against the API reference",
            0};
}

std::string excerpt(std::string_view s, std::size_t max_bytes) {
    if (s.size() <= max_bytes)
        return std::string(s);
    std::size_t n = max_bytes;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
        --n; // not inside a character
    return std::string(s.substr(0, n)) + "...";
}

std::string error_body(const api_error& e, std::string_view request_id) {
    boost::json::object err;
    err["message"] = excerpt(e.message, max_error_message_bytes);
    err["type"] = e.type;
    err["code"] = e.code;
    if (e.param.empty())
        err["param"] = nullptr;
    else
        err["param"] = excerpt(e.param, max_error_param_bytes);
    err["request_id"] = request_id;
    err["suggestion"] = e.suggestion;
    boost::json::object root;
    root["error"] = std::move(err);
    return boost::json::serialize(root);
}

api_error drain_error() {
    return {503,
            "overloaded",
            "draining",
            "the server is shutting down and its drain timeout passed before this request "
            "finished; generation was cancelled",
            "",
            "retry against another replica",
            1};
}

} // namespace bitnet::http

// The inference API families, registered in one place (families.cpp): for each inference route,
// how its requests start (the family's own parser, after what the reply store fills in) and the
// family turn that renders them; each route's error shape and headers; the routes only one family
// has (Anthropic's count_tokens, the Responses store's). families.cpp is the one source file of
// the routes room that includes the families' folders; server_impl.hpp, which owns the reply store
// two of them share, is the other.
#pragma once

#include "http/api_json.hpp"
#include "http/errors.hpp"
#include "http/family_turn.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace bitnet::http {

class response_store;

/// What a family's start is given beside the body.
struct family_context {
    response_store& store; ///< stored replies and message threads, per key
    std::string key;       ///< the caller's API key: the store's scope
    std::string req_id;
    std::size_t max_body_bytes = 0; ///< what a request filled in from the store may grow to
};

/// A request a family has parsed, and what renders its turn.
struct started_turn {
    inference_input in;
    std::unique_ptr<family_turn> turn;
    bool chat_prompt = false;    ///< the prompt goes as chat messages, rendered by the template
    bool token_pieces = false;   ///< tokens carry their pieces (OpenAI's logprobs objects)
    bool report_logprob = false; ///< the sampler reports each chosen token's logprob
};

/// How a family starts a request from its body: its parse (its errors name the family's own
/// fields) and its turn, or the 400 that says why not.
using family_start =
    std::function<std::variant<api_error, started_turn>(std::string_view, const family_context&)>;

/// Starts a request of the inference route `pattern` (a POST route of the table, or one a
/// family added): nothing when no family serves it.
[[nodiscard]] std::optional<std::variant<api_error, started_turn>>
start_family_turn(std::string_view pattern, std::string_view body, const family_context& ctx);

/// Registers a family's POST route beyond the built-in ones (a family written outside
/// http/, such as the test tree's): `pattern` is a literal path under /v1/ that no route of the
/// table has, answered for API key holders. Call before any server starts.
void add_family(std::string pattern, family_start start);
/// Whether an added family serves POST `path`.
[[nodiscard]] bool serves_added_family(std::string_view path);

/// The error body of route `label`'s family (the metrics label: a route pattern).
[[nodiscard]] std::string family_error_body(std::string_view label, const api_error& e,
                                            const std::string& id);
/// The headers route `label`'s family adds to every answer (Anthropic's request-id).
[[nodiscard]] std::vector<std::pair<std::string, std::string>>
family_headers(std::string_view label, const std::string& req_id);

/// POST /v1/messages/count_tokens: the Messages request it counts (max_tokens need not be
/// there; a thread is refused: it counts the messages it is sent).
[[nodiscard]] parse_result parse_count_tokens(std::string_view body);

/// The Responses store's routes for `key`: GET /v1/responses/{id} (the response object),
/// DELETE (its deletion object), GET .../input_items (a page of its input items); or the error.
[[nodiscard]] std::variant<api_error, std::string>
stored_response(response_store& store, const std::string& key, const std::string& id);
[[nodiscard]] std::variant<api_error, std::string>
delete_stored_response(response_store& store, const std::string& key, const std::string& id);
[[nodiscard]] std::variant<api_error, std::string>
stored_response_items(response_store& store, const std::string& key, const std::string& id,
                      const std::string& order, const std::string& limit, const std::string& after);

} // namespace bitnet::http

// OpenAI's Responses store on a session: GET and DELETE /v1/responses/{id} and GET
// .../input_items, each answering only the key that made the reply. The family's stream and
// replies are http/responses/responses_turn.hpp.
#include "http/api_render.hpp"
#include "http/responses/api_responses.hpp"
#include "http/responses/response_store.hpp"
#include "http/routes/session.hpp"
#include "http/transport/request_errors.hpp"

#include <string>

namespace bitnet::http {

namespace {

api_error no_stored_response(const std::string& id) {
    auto e = status_error(404, "no stored response '" + id + "' for this key");
    e.param = "response_id";
    e.suggestion = "replies are kept for the API key that made them, bounded "
                   "(responses_store_max, responses_store_ttl_s, responses_store_bytes), and "
                   "only when the request did not say \"store\": false";
    return e;
}

} // namespace

void session::do_response_get(const std::string& route, const std::string& id) {
    const auto object = srv_.responses.response(client_key_, id);
    if (!object)
        return send_error(route, no_stored_response(id), "-");
    send_json(route, 200, *object);
}

void session::do_response_delete(const std::string& route, const std::string& id) {
    if (!srv_.responses.erase(client_key_, id))
        return send_error(route, no_stored_response(id), "-");
    send_json(route, 200, R"({"id":)" + quoted(id) + R"(,"object":"response","deleted":true})");
}

void session::do_response_input_items(const std::string& route, const std::string& id,
                                      const std::string& order, const std::string& limit,
                                      const std::string& after) {
    const auto items = srv_.responses.input_items(client_key_, id);
    if (!items)
        return send_error(route, no_stored_response(id), "-");
    auto page = input_items_page(*items, order, limit, after);
    if (auto* e = std::get_if<api_error>(&page))
        return send_error(route, *e, "-");
    send_json(route, 200, std::move(std::get<std::string>(page)));
}

} // namespace bitnet::http

// OpenAI's Responses store on a session: GET and DELETE /v1/responses/{id} and GET
// .../input_items, each answering only the key that made the reply (families.hpp answers them;
// the family's stream and replies are http/responses/responses_turn.hpp).
#include "http/routes/families.hpp"
#include "http/routes/session.hpp"

#include <string>
#include <utility>

namespace bitnet::http {

void session::do_response_get(const std::string& route, const std::string& id) {
    auto a = stored_response(srv_.responses, client_key_, id);
    if (auto* e = std::get_if<api_error>(&a))
        return send_error(route, *e, "-");
    send_json(route, 200, std::move(std::get<std::string>(a)));
}

void session::do_response_delete(const std::string& route, const std::string& id) {
    auto a = delete_stored_response(srv_.responses, client_key_, id);
    if (auto* e = std::get_if<api_error>(&a))
        return send_error(route, *e, "-");
    send_json(route, 200, std::move(std::get<std::string>(a)));
}

void session::do_response_input_items(const std::string& route, const std::string& id,
                                      const std::string& order, const std::string& limit,
                                      const std::string& after) {
    auto a = stored_response_items(srv_.responses, client_key_, id, order, limit, after);
    if (auto* e = std::get_if<api_error>(&a))
        return send_error(route, *e, "-");
    send_json(route, 200, std::move(std::get<std::string>(a)));
}

} // namespace bitnet::http

// Anthropic's message threads on a session: a threaded Messages request (`thread`,
// http/anthropic/message_thread.hpp) is made whole from the reply store before it is parsed, and
// its family turn (http/anthropic/messages_turn.hpp) is given what stores its reply for the next
// continue. Threads live in the Responses store (http/responses/response_store.hpp): the routes
// room joins the two families.
#include "http/anthropic/api_anthropic.hpp"
#include "http/anthropic/message_thread.hpp"
#include "http/responses/response_store.hpp"
#include "http/routes/session.hpp"

#include <boost/json.hpp>

#include <memory>

namespace bitnet::http {

namespace json = boost::json;

std::optional<api_error> session::expand_thread(const std::string& body, const std::string& req_id,
                                                std::string& expanded,
                                                std::function<void(const std::string&)>& keep) {
    auto parsed = parse_request_json(body);
    auto* root = std::get_if<json::value>(&parsed);
    auto* o = root ? root->if_object() : nullptr;
    if (!o)
        return std::nullopt; // the parser names what is wrong with it
    auto thread = read_message_thread(*o);
    if (auto* e = std::get_if<api_error>(&thread))
        return *e;
    const auto& t = std::get<message_thread>(thread);
    if (t.type == message_thread::kind::none)
        return std::nullopt;
    if (!srv_.responses.enabled())
        return thread_error(thread_refusal::unsupported, t.previous_message_id);
    std::string record;
    std::string previous; // a continue: the stored reply it continues
    // A continue's hold on that reply (response_store::claim_thread): going with the request's
    // family turn, it lets another continue have it, unless this one stored its reply first.
    std::shared_ptr<const std::string> hold;
    if (t.type == message_thread::kind::resume) {
        auto claim = srv_.responses.claim_thread(client_key_, t.previous_message_id);
        using state = response_store::thread_state;
        if (claim.state != state::claimed)
            return thread_error(claim.state == state::not_found ? thread_refusal::not_found
                                : claim.state == state::in_flight
                                    ? thread_refusal::in_flight
                                    : thread_refusal::already_continued,
                                t.previous_message_id);
        record = std::move(claim.record);
        hold = std::move(claim.hold);
        previous = t.previous_message_id;
    }
    auto x = expand_message_thread(std::move(*o), record,
                                   static_cast<std::size_t>(srv_.opt.max_body_bytes));
    if (auto* e = std::get_if<api_error>(&x))
        return *e;
    auto& ex = std::get<thread_expansion>(x);
    expanded = std::move(ex.body);
    keep = [&store = srv_.responses, key = client_key_, id = anthropic_message_id(req_id),
            head = std::move(ex.head), previous = std::move(previous),
            hold = std::move(hold)](const std::string& content) {
        (void)hold; // held for as long as the turn that may continue the thread
        store.put_thread(key, id, thread_record(head, content), previous);
    };
    return std::nullopt;
}

} // namespace bitnet::http

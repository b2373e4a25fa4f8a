#include "http/anthropic/message_thread.hpp"

#include "http/api_json.hpp"

#include <boost/json.hpp>

namespace bitnet::http {

namespace json = boost::json;

namespace {

constexpr const char* thread_shape = R"(thread must be {"type": "create"} or {"type": "continue", )"
                                     R"("previous_message_id": ID})";

api_error bad(std::string param, std::string message) {
    return invalid_value(std::move(param), std::move(message));
}

/// The record's start: {"system", "tools", "messages": [... (open, for thread_record).
std::string head_of(const json::object& request) {
    json::object head;
    const auto* sys = request.if_contains("system");
    const auto* tools = request.if_contains("tools");
    const auto* msgs = request.if_contains("messages");
    head["system"] = sys ? *sys : json::value(nullptr);
    head["tools"] = tools ? *tools : json::value(nullptr);
    head["messages"] = msgs && msgs->is_array() ? *msgs : json::array{};
    auto text = json::serialize(head); // ..."messages":[...]}
    text.resize(text.size() - 2);      // without its "]}"
    return text;
}

} // namespace

std::variant<message_thread, api_error> read_message_thread(const json::object& body) {
    message_thread out;
    const auto* t = body.if_contains("thread");
    if (!t || t->is_null())
        return out;
    const auto* o = t->if_object();
    const auto* type = o ? o->if_contains("type") : nullptr;
    if (!type || !type->is_string())
        return bad("thread", thread_shape);
    for (const auto& m : *o)
        if (m.key() != "type" && m.key() != "previous_message_id")
            return bad("thread." + excerpt(m.key()),
                       "thread." + excerpt(m.key()) + " is not a field of thread: " + thread_shape);
    const auto* prev = o->if_contains("previous_message_id");
    if (type->get_string() == "create") {
        if (prev && !prev->is_null())
            return bad("thread.previous_message_id",
                       "a create starts a thread: thread.previous_message_id is for a continue");
        out.type = message_thread::kind::create;
        return out;
    }
    if (type->get_string() != "continue")
        return bad("thread.type", thread_shape);
    if (!prev || !prev->is_string() || prev->get_string().empty() ||
        prev->get_string().size() > max_thread_id_bytes)
        return bad("thread.previous_message_id",
                   "a continue needs thread.previous_message_id, the id of a stored reply (at "
                   "most " +
                       std::to_string(max_thread_id_bytes) + " bytes)");
    for (const char* kept : {"system", "tools"})
        if (const auto* v = body.if_contains(kept); v && !v->is_null()) {
            auto e = bad(kept, std::string(kept) +
                                   " is kept from the thread's create: a continue may not send it");
            e.suggestion = "send a create with the whole conversation to change it";
            return e;
        }
    out.type = message_thread::kind::resume;
    out.previous_message_id = std::string(prev->get_string());
    return out;
}

std::variant<thread_expansion, api_error>
expand_message_thread(json::object request, std::string_view record, std::size_t max_bytes) {
    const auto too_big = [max_bytes] {
        auto e = bad("thread.previous_message_id",
                     "the thread with this request's messages comes to more than " +
                         std::to_string(max_bytes) + " bytes, past the " +
                         std::to_string(max_bytes) + "-byte body limit (max_body_bytes)");
        e.suggestion = "start a new thread with a shorter conversation";
        return e;
    };
    thread_expansion out;
    request.erase("thread");
    if (record.empty()) { // a create: the request is the whole thread
        out.head = head_of(request);
        out.body = json::serialize(request);
        return out;
    }
    const auto* own = request.if_contains("messages");
    if (!own || !own->is_array() || own->get_array().empty())
        return bad("messages", "a continue needs the new messages as a non-empty array: the "
                               "thread holds the ones before");
    // Counted before it is parsed and copied in: the rebuilt request holds all of it.
    if (record.size() > max_bytes)
        return too_big();
    auto stored = json::parse(record).as_object(); // our own record: its shape is known
    auto& msgs = stored.at("messages").as_array();
    for (const auto& m : own->get_array())
        msgs.push_back(m);
    request["messages"] = std::move(msgs);
    for (const char* kept : {"system", "tools"})
        if (const auto& v = stored.at(kept); !v.is_null())
            request[kept] = v;
    out.head = head_of(request);
    out.body = json::serialize(request);
    if (out.body.size() > max_bytes)
        return too_big();
    return out;
}

std::string thread_record(const std::string& head, const std::string& content) {
    const bool first = !head.empty() && head.back() == '[';
    return head + (first ? "" : ",") + R"({"role":"assistant","content":)" + content + "}]}";
}

api_error thread_error(thread_refusal why, const std::string& id) {
    api_error e;
    e.final_answer = true;
    e.param = "thread.previous_message_id";
    const auto name = "'" + excerpt(id) + "'";
    std::string code;
    switch (why) {
    case thread_refusal::not_found:
        e.status = 404;
        e.type = "not_found_error";
        code = "thread_not_found";
        e.message = "no stored message " + name + " of this API key to continue";
        e.suggestion = "replies are kept for the API key that made them, bounded "
                       "(responses_store_max, responses_store_ttl_s, responses_store_bytes): "
                       "send a create with the whole conversation";
        break;
    case thread_refusal::already_continued:
        e.status = 409;
        e.type = "invalid_request_error";
        code = "thread_already_continued";
        e.message = "message " + name + " was continued already: a stored reply is continued once";
        e.suggestion = "continue from the thread's last reply, or send a create with the whole "
                       "conversation";
        break;
    case thread_refusal::in_flight:
        e.status = 409;
        e.type = "invalid_request_error";
        code = "thread_continue_in_flight";
        e.message = "another request is continuing message " + name + " now";
        e.suggestion = "wait for its reply and continue from that";
        break;
    case thread_refusal::unsupported:
        e.status = 400;
        e.type = "invalid_request_error";
        code = "thread_unsupported_request";
        e.param = "thread";
        e.message = "this server stores no replies (responses_store_max 0), so it keeps no thread";
        e.suggestion = "send the whole conversation without thread";
        e.code = code;
        e.details = R"({"error_code":"thread_unsupported_request","unsupported":["thread"]})";
        return e;
    }
    e.code = code;
    e.details = R"({"error_code":")" + code + R"("})";
    return e;
}

} // namespace bitnet::http

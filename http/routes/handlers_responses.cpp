// OpenAI's Responses API on a session (http/responses/api_responses.hpp for the shapes): the
// stream's event sequence, each event numbered, the plain reply, and the stored reply's routes
// (GET and DELETE /v1/responses/{id}, GET .../input_items). A forced call to one function streams
// its arguments as response.function_call_arguments.delta, and when max_output_tokens cuts it, it
// is closed like a whole one (arguments done, item done) with status incomplete and kept in the
// output; a call among several (or several parallel calls) comes whole at the end, an item each,
// and one cut short opens no item.
#include "http/api_render.hpp"
#include "http/api_structured.hpp"
#include "http/responses/api_responses.hpp"
#include "http/responses/response_store.hpp"
#include "http/routes/session.hpp"
#include "http/transport/request_errors.hpp"

#include <utility>
#include <vector>

namespace bitnet::http {

namespace {

/// completed, or incomplete when max_output_tokens (or the deadline) cut the output.
const char* status_of(const turn_reply& r) {
    return r.incomplete() ? "incomplete" : "completed";
}

/// A reply's output items, each with its id (what item_reference names).
using output_items = std::vector<std::pair<std::string, std::string>>;

/// The JSON array of `items`' texts.
std::string array_of(const output_items& items) {
    std::string out = "[";
    for (const auto& [id, item] : items)
        out += (out.size() > 1 ? "," : "") + item;
    return out + "]";
}

} // namespace

void session::responses_event(const char* type, const std::string& fields) {
    sse_event(type, R"({"type":")" + std::string(type) + R"(","sequence_number":)" +
                        std::to_string(call_->events++) + fields + "}");
}

void session::responses_stream_head() {
    const auto pending = response_object(call_->req_id, call_->created, call_->model, "in_progress",
                                         "[]", nullptr, "null", call_->store, call_->response_echo);
    responses_event("response.created", ",\"response\":" + pending);
    responses_event("response.in_progress", ",\"response\":" + pending);
    if (!call_->tool_call && !call_->auto_tools) {
        responses_open_message();
    } else if (call_->tool_call && !call_->tool_name.empty()) {
        responses_event("response.output_item.added",
                        ",\"output_index\":0,\"item\":" +
                            response_call_item(call_->req_id, call_->tool_name, "", false));
    }
    // A call among several functions: its item opens once the name is known (at the end).
}

void session::responses_open_message() {
    if (call_->message_opened)
        return;
    call_->message_opened = true;
    responses_event("response.output_item.added",
                    ",\"output_index\":0,\"item\":" +
                        response_message_item(call_->req_id, "", false));
    responses_event(
        "response.content_part.added",
        ",\"item_id\":" + quoted(response_message_id(call_->req_id)) +
            R"(,"output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]})");
}

void session::stream_responses_token(const msg::token_event& ev) {
    if (ev.text.empty())
        return;
    if (!call_->tool_call)
        responses_open_message(); // an auto turn's message item opens with its first text
    if (!call_->tool_call)
        responses_event("response.output_text.delta",
                        ",\"item_id\":" + quoted(response_message_id(call_->req_id)) +
                            R"(,"output_index":0,"content_index":0,"delta":)" + quoted(ev.text));
    else if (!call_->tool_name.empty())
        responses_event("response.function_call_arguments.delta",
                        ",\"item_id\":" + quoted(response_call_item_id(call_->req_id)) +
                            R"(,"output_index":0,"delta":)" + quoted(ev.text));
}

void session::responses_done_events(const msg::completion& c) {
    const auto& r = *call_->reply;
    const auto& id = call_->req_id;
    const bool incomplete = r.incomplete();
    output_items items;
    // An auto turn has a message item only when it wrote text (as its plain reply); calls the
    // model opened itself follow it.
    const bool message = !call_->tool_call && (!call_->auto_called() || call_->message_opened);
    const std::size_t first = message ? 1 : 0;
    if (message) {
        responses_open_message(); // a turn with no text at all still answers with its item
        const auto& text = r.text;
        const auto item_id = quoted(response_message_id(id));
        responses_event("response.output_text.done",
                        ",\"item_id\":" + item_id +
                            R"(,"output_index":0,"content_index":0,"text":)" + quoted(text));
        responses_event(
            "response.content_part.done",
            ",\"item_id\":" + item_id +
                R"(,"output_index":0,"content_index":0,"part":{"type":"output_text","text":)" +
                quoted(text) + R"(,"annotations":[]})");
        const auto item = response_message_item(id, text, true, incomplete);
        responses_event("response.output_item.done", ",\"output_index\":0,\"item\":" + item);
        items.emplace_back(response_message_id(id), item);
    }
    if (r.called) {
        const auto& calls = r.calls;
        for (std::size_t i = 0; i < calls.size(); ++i) {
            const auto& [name, args] = calls[i];
            const auto item_id = quoted(response_call_item_id(id, i));
            const auto index = ",\"output_index\":" + std::to_string(first + i);
            if (call_->whole_calls_at_end()) {
                // Among several functions (or parallel calls): each whole call now.
                responses_event("response.output_item.added",
                                index + ",\"item\":" + response_call_item(id, name, "", false, i));
                responses_event("response.function_call_arguments.delta",
                                ",\"item_id\":" + item_id + index + ",\"delta\":" + quoted(args));
            }
            responses_event("response.function_call_arguments.done",
                            ",\"item_id\":" + item_id + index + ",\"arguments\":" + quoted(args));
            const auto item = response_call_item(id, name, args, true, i);
            responses_event("response.output_item.done", index + ",\"item\":" + item);
            items.emplace_back(response_call_item_id(id, i), item);
        }
    } else if (call_->tool_call && !call_->tool_name.empty()) {
        // The one function's call, opened by the stream's head and cut short (max_output_tokens,
        // the deadline, a drain): closed with the arguments so far, status incomplete.
        const auto item_id = quoted(response_call_item_id(id));
        responses_event("response.function_call_arguments.done",
                        ",\"item_id\":" + item_id +
                            ",\"output_index\":0,\"arguments\":" + quoted(r.call_text));
        const auto item = response_call_item(id, call_->tool_name, r.call_text, true, 0, true);
        responses_event("response.output_item.done", ",\"output_index\":0,\"item\":" + item);
        items.emplace_back(response_call_item_id(id), item);
    }
    const auto output = array_of(items);
    if (call_->cut) {
        const auto e = drain_error();
        responses_event("error", ",\"code\":" + quoted(e.code) +
                                     ",\"message\":" + quoted(e.message) + ",\"param\":null");
        responses_event(
            "response.failed",
            ",\"response\":" +
                response_object(id, call_->created, call_->model, "failed", output, &c,
                                R"({"code":"draining","message":)" + quoted(e.message) + "}", false,
                                call_->response_echo));
        return;
    }
    const std::string status = status_of(r);
    const auto object =
        response_object(id, call_->created, c.model.empty() ? call_->model : c.model, status,
                        output, &c, "null", call_->store, call_->response_echo);
    remember_response(items, object);
    responses_event(status == "completed" ? "response.completed" : "response.incomplete",
                    ",\"response\":" + object);
}

std::string session::responses_body(const msg::completion& c) const {
    const auto& r = *call_->reply;
    const auto& id = call_->req_id;
    const bool incomplete = r.incomplete();
    output_items items;
    if (!call_->tool_call && !r.called) {
        items.emplace_back(response_message_id(id),
                           response_message_item(id, r.text, true, incomplete));
    } else if (r.called) {
        if (!r.text.empty()) // an auto turn's text before its calls
            items.emplace_back(response_message_id(id),
                               response_message_item(id, r.text, true, incomplete));
        const auto& calls = r.calls;
        for (std::size_t i = 0; i < calls.size(); ++i)
            items.emplace_back(response_call_item_id(id, i),
                               response_call_item(id, calls[i].name, calls[i].arguments, true, i));
    } else if (!call_->tool_name.empty()) {
        // The one function's call cut short: its arguments so far, status incomplete.
        items.emplace_back(response_call_item_id(id),
                           response_call_item(id, call_->tool_name, r.call_text, true, 0, true));
    }
    const auto object =
        response_object(id, call_->created, c.model.empty() ? call_->model : c.model, status_of(r),
                        array_of(items), &c, "null", call_->store, call_->response_echo);
    remember_response(items, object);
    return object;
}

void session::remember_response(const std::vector<std::pair<std::string, std::string>>& outputs,
                                const std::string& object) const {
    if (!call_->store)
        return;
    // The conversation so far: what came in (a JSON array), then what went out.
    const std::string& in = call_->input_items;
    std::string conversation = in.size() > 2 ? in.substr(0, in.size() - 1) : "[";
    for (const auto& [item_id, item] : outputs)
        conversation += (conversation.size() > 1 ? "," : "") + item;
    conversation += "]";
    const auto rid = response_id(call_->req_id);
    srv_.responses.put(client_key_, rid, std::move(conversation), outputs, object,
                       stored_input_items(call_->own_input, rid), call_->continues);
}

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

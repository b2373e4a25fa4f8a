#include "http/responses/responses_turn.hpp"

#include "http/api_render.hpp"
#include "http/api_structured.hpp"
#include "http/responses/api_responses.hpp"

namespace bitnet::http {

namespace {

/// The JSON array of `items`' texts.
std::string array_of(const std::vector<std::pair<std::string, std::string>>& items) {
    std::string out = "[";
    for (const auto& [id, item] : items)
        out += (out.size() > 1 ? "," : "") + item;
    return out + "]";
}

/// The model opened calls itself and they were whole: they follow the message item.
bool auto_called(const turn_facts& t, const turn_reply& r) {
    return t.mode == turn_mode::auto_calls && r.called;
}

} // namespace

responses_turn::responses_turn(response_store& store, std::string key, responses_expansion stored,
                               std::string echo)
    : store_(store)
    , key_(std::move(key))
    , stored_(std::move(stored))
    , echo_(std::move(echo)) {}

void responses_turn::event(frame_writer& out, const char* type, const std::string& fields) {
    out.frame(type, R"({"type":")" + std::string(type) + R"(","sequence_number":)" +
                        std::to_string(events_++) + fields + "}");
}

void responses_turn::open(frame_writer& out, const turn_facts& t) {
    const auto pending = response_object(t.req_id, t.created, t.model, "in_progress", "[]", nullptr,
                                         "null", stored_.store, echo_);
    event(out, "response.created", ",\"response\":" + pending);
    event(out, "response.in_progress", ",\"response\":" + pending);
    if (t.mode == turn_mode::text) {
        open_message(out, t);
    } else if (t.mode == turn_mode::forced_call && !t.tool_name.empty()) {
        event(out, "response.output_item.added",
              ",\"output_index\":0,\"item\":" +
                  response_call_item(t.req_id, t.tool_name, "", false));
    }
    // A call among several functions: its item opens once the name is known (at the end).
}

void responses_turn::open_message(frame_writer& out, const turn_facts& t) {
    if (message_opened_)
        return;
    message_opened_ = true;
    event(out, "response.output_item.added",
          ",\"output_index\":0,\"item\":" + response_message_item(t.req_id, "", false));
    event(
        out, "response.content_part.added",
        ",\"item_id\":" + quoted(response_message_id(t.req_id)) +
            R"(,"output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]})");
}

void responses_turn::token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) {
    if (ev.text.empty())
        return;
    if (t.mode != turn_mode::forced_call) {
        open_message(out, t); // an auto turn's message item opens with its first text
        event(out, "response.output_text.delta",
              ",\"item_id\":" + quoted(response_message_id(t.req_id)) +
                  R"(,"output_index":0,"content_index":0,"delta":)" + quoted(ev.text));
    } else if (!t.tool_name.empty()) {
        event(out, "response.function_call_arguments.delta",
              ",\"item_id\":" + quoted(response_call_item_id(t.req_id)) +
                  R"(,"output_index":0,"delta":)" + quoted(ev.text));
    }
}

void responses_turn::end(frame_writer& out, const turn_facts& t, const turn_reply& r,
                         const msg::completion& c) {
    const auto& id = t.req_id;
    const bool incomplete = r.incomplete();
    output_items items;
    // An auto turn has a message item only when it wrote text (as its plain reply); calls the
    // model opened itself follow it.
    const bool message =
        t.mode != turn_mode::forced_call && (!auto_called(t, r) || message_opened_);
    const std::size_t first = message ? 1 : 0;
    if (message) {
        open_message(out, t); // a turn with no text at all still answers with its item
        const auto item_id = quoted(response_message_id(id));
        event(out, "response.output_text.done",
              ",\"item_id\":" + item_id + R"(,"output_index":0,"content_index":0,"text":)" +
                  quoted(r.text));
        event(out, "response.content_part.done",
              ",\"item_id\":" + item_id +
                  R"(,"output_index":0,"content_index":0,"part":{"type":"output_text","text":)" +
                  quoted(r.text) + R"(,"annotations":[]})");
        const auto item = response_message_item(id, r.text, true, incomplete);
        event(out, "response.output_item.done", ",\"output_index\":0,\"item\":" + item);
        items.emplace_back(response_message_id(id), item);
    }
    if (r.called) {
        for (std::size_t i = 0; i < r.calls.size(); ++i) {
            const auto& [name, args] = r.calls[i];
            const auto item_id = quoted(response_call_item_id(id, i));
            const auto index = ",\"output_index\":" + std::to_string(first + i);
            if (t.tool_name.empty()) {
                // Among several functions (or parallel calls): each whole call now.
                event(out, "response.output_item.added",
                      index + ",\"item\":" + response_call_item(id, name, "", false, i));
                event(out, "response.function_call_arguments.delta",
                      ",\"item_id\":" + item_id + index + ",\"delta\":" + quoted(args));
            }
            event(out, "response.function_call_arguments.done",
                  ",\"item_id\":" + item_id + index + ",\"arguments\":" + quoted(args));
            const auto item = response_call_item(id, name, args, true, i);
            event(out, "response.output_item.done", index + ",\"item\":" + item);
            items.emplace_back(response_call_item_id(id, i), item);
        }
    } else if (t.mode == turn_mode::forced_call && !t.tool_name.empty()) {
        // The one function's call, opened by the stream's head and cut short (max_output_tokens,
        // the deadline, a drain): closed with the arguments so far, status incomplete.
        const auto item_id = quoted(response_call_item_id(id));
        event(out, "response.function_call_arguments.done",
              ",\"item_id\":" + item_id +
                  ",\"output_index\":0,\"arguments\":" + quoted(r.call_text));
        const auto item = response_call_item(id, t.tool_name, r.call_text, true, 0, true);
        event(out, "response.output_item.done", ",\"output_index\":0,\"item\":" + item);
        items.emplace_back(response_call_item_id(id), item);
    }
    const auto output = array_of(items);
    const auto model = c.model.empty() ? t.model : c.model;
    if (t.drain_cut) {
        const auto e = drain_error();
        event(out, "error",
              ",\"code\":" + quoted(e.code) + ",\"message\":" + quoted(e.message) +
                  ",\"param\":null");
        event(out, "response.failed",
              ",\"response\":" +
                  response_object(id, t.created, t.model, "failed", output, &c,
                                  R"({"code":"draining","message":)" + quoted(e.message) + "}",
                                  false, echo_));
        return;
    }
    const std::string status = incomplete ? "incomplete" : "completed";
    const auto object =
        response_object(id, t.created, model, status, output, &c, "null", stored_.store, echo_);
    remember(t, items, object);
    event(out, incomplete ? "response.incomplete" : "response.completed",
          ",\"response\":" + object);
}

void responses_turn::fail(frame_writer& out, const turn_facts&, const api_error& e) {
    event(out, "error",
          ",\"code\":" + quoted(e.code) + ",\"message\":" + quoted(e.message) +
              ",\"param\":" + (e.param.empty() ? "null" : quoted(e.param)));
}

std::string responses_turn::body(const turn_facts& t, const turn_reply& r,
                                 const msg::completion& c) {
    const auto& id = t.req_id;
    const bool incomplete = r.incomplete();
    output_items items;
    if (t.mode != turn_mode::forced_call && !r.called) {
        items.emplace_back(response_message_id(id),
                           response_message_item(id, r.text, true, incomplete));
    } else if (r.called) {
        if (!r.text.empty()) // an auto turn's text before its calls
            items.emplace_back(response_message_id(id),
                               response_message_item(id, r.text, true, incomplete));
        for (std::size_t i = 0; i < r.calls.size(); ++i)
            items.emplace_back(
                response_call_item_id(id, i),
                response_call_item(id, r.calls[i].name, r.calls[i].arguments, true, i));
    } else if (!t.tool_name.empty()) {
        // The one function's call cut short: its arguments so far, status incomplete.
        items.emplace_back(response_call_item_id(id),
                           response_call_item(id, t.tool_name, r.call_text, true, 0, true));
    }
    const auto object = response_object(id, t.created, c.model.empty() ? t.model : c.model,
                                        incomplete ? "incomplete" : "completed", array_of(items),
                                        &c, "null", stored_.store, echo_);
    remember(t, items, object);
    return object;
}

void responses_turn::remember(const turn_facts& t, const output_items& outputs,
                              const std::string& object) {
    if (!stored_.store)
        return;
    // The conversation so far: what came in (a JSON array), then what went out.
    const std::string& in = stored_.input_items;
    std::string conversation = in.size() > 2 ? in.substr(0, in.size() - 1) : "[";
    for (const auto& [item_id, item] : outputs)
        conversation += (conversation.size() > 1 ? "," : "") + item;
    conversation += "]";
    const auto rid = response_id(t.req_id);
    store_.put(key_, rid, std::move(conversation), outputs, object,
               stored_input_items(stored_.own_input, rid), stored_.continues);
}

} // namespace bitnet::http

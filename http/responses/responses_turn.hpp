// OpenAI's Responses API as a family_turn (http/responses/api_responses.hpp for the shapes): the
// stream's event sequence, each event numbered, the plain reply, and the reply stored when the
// request asked for it. A forced call to one function streams its arguments as
// response.function_call_arguments.delta, and when max_output_tokens cuts it, it is closed like a
// whole one (arguments done, item done) with status incomplete and kept in the output; a call
// among several (or several parallel calls) comes whole at the end, an item each, and one cut
// short opens no item.
#pragma once

#include "http/family_turn.hpp"
#include "http/responses/response_store.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::http {

class responses_turn final : public family_turn {
public:
    /// `stored`: what the store gave the request (expand_responses_request); `key`: the store's
    /// scope (the caller's API key); `echo`: the request's settings as a reply echoes them.
    responses_turn(response_store& store, std::string key, responses_expansion stored,
                   std::string echo);

    void open(frame_writer& out, const turn_facts& t) override;
    void token(frame_writer& out, const turn_facts& t, const msg::token_event& ev) override;
    void end(frame_writer& out, const turn_facts& t, const turn_reply& r,
             const msg::completion& c) override;
    void fail(frame_writer& out, const turn_facts& t, const api_error& e) override;
    [[nodiscard]] std::string body(const turn_facts& t, const turn_reply& r,
                                   const msg::completion& c) override;

private:
    /// A reply's output items, each with its id (what item_reference names).
    using output_items = std::vector<std::pair<std::string, std::string>>;

    /// One stream event: `fields` (JSON members, "" or starting with ',') after its type and
    /// sequence number.
    void event(frame_writer& out, const char* type, const std::string& fields);
    /// The message item's output_item.added and content_part.added (once): at the head, or for
    /// an auto turn at its first text (a turn that only calls has no message item).
    void open_message(frame_writer& out, const turn_facts& t);
    /// Keeps a finished reply (its output items and the response object) when asked to.
    void remember(const turn_facts& t, const output_items& outputs, const std::string& object);

    response_store& store_;
    std::string key_;
    responses_expansion stored_;
    std::string echo_;
    std::uint32_t events_ = 0; ///< stream events sent (their sequence_number)
    bool message_opened_ = false;
};

} // namespace bitnet::http
